"""Small-init gradient-flow predictions, to hold against what training does (re-exported here:
``ctxlab.theory.plateau_levels``): :mod:`~ctxlab.theory.first_stair` (the leading-order embedding
velocity E1; ``plateau_levels`` comes from :mod:`ctxlab.signatures`), :mod:`~ctxlab.theory.modes` (linear-network modes),
:mod:`~ctxlab.theory.next_stair` (the residual pair statistic), :mod:`~ctxlab.theory.predict` (the next-stair
drive and the whole staircase predicted before training) and :mod:`~ctxlab.theory.attention`."""

from ctxlab.theory.attention import (
    attention_embedding_velocity,
    bag_of_context,
    departure_step,
    key_attention_map,
    qk_force,
    qk_velocity,
    target_attention,
)
from ctxlab.theory.first_stair import (
    E1Agreement,
    SLOPE_AT_ZERO,
    cosine_per_model,
    e1_agreement,
    embedding_velocity,
    mlp_embedding_velocity,
)
from ctxlab.signatures import plateau_levels  # defined with the entropy ladder, used as theory's prediction
from ctxlab.theory.modes import (
    ModeGrowth,
    Modes,
    correlation_modes,
    fit_growth_rate,
    growing_amplitude,
    input_output_correlation,
    mode_growth,
    mode_strengths,
    predicted_growth_rates,
    predicted_switch_on,
    product_map,
)
from ctxlab.theory.predict import (
    PredictedRung,
    StaircasePrediction,
    anchor_share,
    next_stair_velocity,
    predict_staircase,
    stair_drive,
)
from ctxlab.theory.next_stair import (
    ResidualIncrement,
    model_pair_residual,
    pair_residual,
    residual_vs_increment,
)

__all__ = [
    "anchor_share",
    "E1Agreement",
    "ModeGrowth",
    "PredictedRung",
    "StaircasePrediction",
    "Modes",
    "ResidualIncrement",
    "SLOPE_AT_ZERO",
    "attention_embedding_velocity",
    "bag_of_context",
    "correlation_modes",
    "cosine_per_model",
    "departure_step",
    "e1_agreement",
    "embedding_velocity",
    "fit_growth_rate",
    "growing_amplitude",
    "input_output_correlation",
    "key_attention_map",
    "mlp_embedding_velocity",
    "mode_growth",
    "mode_strengths",
    "next_stair_velocity",
    "predict_staircase",
    "model_pair_residual",
    "pair_residual",
    "plateau_levels",
    "predicted_growth_rates",
    "predicted_switch_on",
    "product_map",
    "qk_force",
    "qk_velocity",
    "residual_vs_increment",
    "stair_drive",
    "target_attention",
]

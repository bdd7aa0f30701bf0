"""Small-init gradient-flow predictions, to hold against what training does (re-exported here:
``ctxlab.theory.plateau_levels``): :mod:`~ctxlab.theory.first_stair` (the leading-order embedding
velocity E1; ``plateau_levels`` comes from :mod:`ctxlab.signatures`), :mod:`~ctxlab.theory.modes` (linear-network modes),
:mod:`~ctxlab.theory.next_stair` (the residual pair statistic) and :mod:`~ctxlab.theory.attention`."""

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
from ctxlab.theory.next_stair import (
    ResidualIncrement,
    model_pair_residual,
    pair_residual,
    residual_vs_increment,
)

__all__ = [
    "E1Agreement",
    "ModeGrowth",
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
    "model_pair_residual",
    "pair_residual",
    "plateau_levels",
    "predicted_growth_rates",
    "predicted_switch_on",
    "product_map",
    "qk_force",
    "qk_velocity",
    "residual_vs_increment",
    "target_attention",
]

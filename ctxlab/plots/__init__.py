"""Figure functions: each takes results and returns a matplotlib Figure; no global state.

One module per topic; everything is re-exported here, so ``from ctxlab.plots import staircase_figure``
works whatever module a figure lives in."""

from ctxlab.plots.attention import attention_by_position_figure, attention_figure
from ctxlab.plots.fixed_codes import (
    CONDITION_COLORS,
    LABEL_COLORS,
    curves_by_label,
    first_layer_shares,
    fixed_codes_curves,
    gpt_codes_figure,
    r2_band_figure,
)
from ctxlab.plots.learning_times import (
    learning_time_figure,
    order_color,
    order_levels,
    reconstruction_figure,
    spectra_figure,
    token_curves_figure,
)
from ctxlab.plots.lm import NGRAM_COLORS, lm_figure, lm_panels, lm_regimes_figure
from ctxlab.plots.pretrained import frequency_alignment_figure, probe_figure
from ctxlab.plots.signatures import (
    METRIC_TITLES,
    chance_vs_vocab_figure,
    cosine_matrices,
    cosine_similarity,
    entropy_ladder_figure,
    noise_sweep_figure,
    permutation_histograms,
    signature_heatmaps,
)
from ctxlab.plots.staircase import (
    ROLE_COLORS,
    embedding_pca_grid,
    draw_ladder,
    onset_ticks,
    phase_map_figure,
    prediction_figure,
    rung_curves,
    staircase_figure,
)
from ctxlab.plots.structure import (
    anchor_embedding_figure,
    class_cosine_figure,
    composition_curves_figure,
    embedding_split_figure,
    neighbour_overlap_figure,
    plateau_race_figure,
    residual_increment_figure,
)
from ctxlab.plots.style import (
    ATTRIBUTE_MARKERS,
    GAMMA_COLORS,
    ORDER_COLORS,
    SEED_COLORS,
    SEED_STYLES,
    gamma_colors,
    label_levels,
    seed_style,
    token_ticks,
)
from ctxlab.plots.theory import e1_agreement_figure, mode_growth_figure
from ctxlab.plots.token_identity import TABLE_COLORS, bin_loss_figure, rung_step_figure, update_size_figure

__all__ = [
    "ATTRIBUTE_MARKERS",
    "CONDITION_COLORS",
    "GAMMA_COLORS",
    "LABEL_COLORS",
    "METRIC_TITLES",
    "NGRAM_COLORS",
    "ORDER_COLORS",
    "ROLE_COLORS",
    "SEED_COLORS",
    "SEED_STYLES",
    "TABLE_COLORS",
    "anchor_embedding_figure",
    "attention_by_position_figure",
    "attention_figure",
    "bin_loss_figure",
    "chance_vs_vocab_figure",
    "class_cosine_figure",
    "composition_curves_figure",
    "cosine_matrices",
    "cosine_similarity",
    "curves_by_label",
    "e1_agreement_figure",
    "embedding_pca_grid",
    "embedding_split_figure",
    "entropy_ladder_figure",
    "first_layer_shares",
    "fixed_codes_curves",
    "frequency_alignment_figure",
    "probe_figure",
    "gamma_colors",
    "gpt_codes_figure",
    "label_levels",
    "learning_time_figure",
    "lm_figure",
    "lm_panels",
    "lm_regimes_figure",
    "mode_growth_figure",
    "neighbour_overlap_figure",
    "noise_sweep_figure",
    "order_color",
    "order_levels",
    "permutation_histograms",
    "draw_ladder",
    "onset_ticks",
    "phase_map_figure",
    "prediction_figure",
    "plateau_race_figure",
    "r2_band_figure",
    "reconstruction_figure",
    "residual_increment_figure",
    "rung_curves",
    "rung_step_figure",
    "seed_style",
    "signature_heatmaps",
    "spectra_figure",
    "staircase_figure",
    "token_curves_figure",
    "token_ticks",
    "update_size_figure",
]

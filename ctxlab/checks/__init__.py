"""Exercise checks, one module per lesson; every check is importable from here.

Adding a check for a new exercise is a few lines in ``ctxlab/checks/lessonNN.py``: build a list of
:class:`Case`, pick a comparison (:func:`tensor_close`, :func:`number_close`,
:func:`integer_equal`) and a few :class:`Diagnosis` entries for the mistakes learners make, call
:func:`run_check`, and import the check here.
"""

from ctxlab.checks.core import (
    Case,
    Diagnosis,
    all_close,
    as_float,
    as_tensor,
    integer_equal,
    number_close,
    reweighted,
    run_check,
    tensor_close,
)
from ctxlab.checks.lesson01 import (
    check_01_conditional_entropy,
    check_01_distinct_rows,
    check_01_order1_signature,
    check_01_pair_interaction,
    count_distinct_rows,
)
from ctxlab.checks.lesson01_build import check_01_increment_on_rows, check_01_ladder_budget, check_01_order_gram
from ctxlab.checks.lesson02 import check_02_linear_cka, check_02_permutation_baseline, check_02_random_rotation
from ctxlab.checks.lesson02_build import check_02_alignment_test, check_02_detection_limit, check_02_noise_limits
from ctxlab.checks.lesson03 import (
    check_03_dwell,
    check_03_longest_wait,
    check_03_rise_and_end,
    check_03_stair_onsets,
)
from ctxlab.checks.lesson03_build import check_03_build_staircase
from ctxlab.checks.lesson04 import check_04_e1_velocity, check_04_update_ratio
from ctxlab.checks.lesson04_build import check_04_e1_law
from ctxlab.checks.lesson05 import check_05_growth_rate, check_05_singular_values, check_05_switch_on_order
from ctxlab.checks.lesson05_build import (
    check_05_measure_switch_on,
    check_05_predict_switch_on,
    check_05_switch_on_prediction,
)
from ctxlab.checks.lesson06 import check_06_next_pairs, check_06_pair_residual
from ctxlab.checks.lesson06_build import check_06_stair_velocity, check_06_velocity_cosines
from ctxlab.checks.lesson07 import check_07_leaves_uniform, check_07_uniform_output
from ctxlab.checks.lesson07_build import check_07_force_before_attention, check_07_qk_force
from ctxlab.checks.lesson08 import check_08_layernorm_norms, check_08_no_plateau_corner
from ctxlab.checks.lesson08_build import check_08_classify_cells, check_08_decay_threshold, check_08_phase_map_labels
from ctxlab.checks.lesson09 import check_09_bigram_table, check_09_closest_step, check_09_kl_to_bigram
from ctxlab.checks.lesson09_build import check_09_alignment_order, check_09_band_margins, check_09_leading_signature
from ctxlab.checks.lesson10 import check_10_bigram_signature, check_10_bin_alignment
from ctxlab.checks.lesson11 import check_11_finishing_order, check_11_signature_table
from ctxlab.checks.lesson11_build import check_11_rank_matched_control, check_11_signature_vs_control
from ctxlab.checks.lesson12 import check_12_held_out_accuracy, check_12_line_up
from ctxlab.checks.lesson12_build import check_12_composition_report, check_12_composition_timeline
from ctxlab.checks.lesson13 import check_13_knn_overlap, check_13_signature_classes
from ctxlab.checks.lesson13_build import check_13_first_step_at_or_below, check_13_matched_loss_gap
from ctxlab.checks.lesson15 import check_15_fit_sigmoid, check_15_reconstruction_r2, check_15_token_orders
from ctxlab.checks.lesson16 import check_16_bin_loss, check_16_loglog_slope, check_16_rung_step
from ctxlab.checks.lesson16_build import check_16_bin_gain, check_16_table_gain, check_16_token_update_sizes
from ctxlab.checks.lesson14 import check_14_code_table, check_14_first_layer_rows, check_14_r2_in_span
from ctxlab.checks.lesson14_build import check_14_scale_codes, check_14_scaled_codes_run

__all__ = [
    "Case", "Diagnosis", "all_close", "as_float", "as_tensor", "integer_equal", "number_close", "reweighted", "run_check", "tensor_close",
    "count_distinct_rows",
    "check_01_conditional_entropy", "check_01_distinct_rows", "check_01_order1_signature", "check_01_pair_interaction",
    "check_01_increment_on_rows", "check_01_ladder_budget", "check_01_order_gram",
    "check_02_linear_cka", "check_02_permutation_baseline", "check_02_random_rotation",
    "check_02_alignment_test", "check_02_detection_limit", "check_02_noise_limits",
    "check_03_build_staircase", "check_03_dwell", "check_03_longest_wait", "check_03_rise_and_end",
    "check_03_stair_onsets",
    "check_04_e1_law", "check_04_e1_velocity", "check_04_update_ratio",
    "check_05_growth_rate", "check_05_singular_values", "check_05_switch_on_order",
    "check_05_measure_switch_on", "check_05_predict_switch_on", "check_05_switch_on_prediction",
    "check_06_next_pairs", "check_06_pair_residual",
    "check_06_stair_velocity", "check_06_velocity_cosines",
    "check_07_leaves_uniform", "check_07_uniform_output",
    "check_07_force_before_attention", "check_07_qk_force",
    "check_08_layernorm_norms", "check_08_no_plateau_corner",
    "check_08_classify_cells", "check_08_decay_threshold", "check_08_phase_map_labels",
    "check_09_bigram_table", "check_09_closest_step", "check_09_kl_to_bigram",
    "check_09_alignment_order", "check_09_band_margins", "check_09_leading_signature",
    "check_10_bigram_signature", "check_10_bin_alignment",
    "check_11_finishing_order", "check_11_signature_table",
    "check_11_rank_matched_control", "check_11_signature_vs_control",
    "check_12_held_out_accuracy", "check_12_line_up", "check_12_composition_timeline", "check_12_composition_report",
    "check_13_knn_overlap", "check_13_signature_classes",
    "check_13_first_step_at_or_below", "check_13_matched_loss_gap",
    "check_15_fit_sigmoid", "check_15_reconstruction_r2", "check_15_token_orders",
    "check_16_bin_loss", "check_16_loglog_slope", "check_16_rung_step",
    "check_16_bin_gain", "check_16_table_gain", "check_16_token_update_sizes",
    "check_14_code_table", "check_14_first_layer_rows", "check_14_r2_in_span",
    "check_14_scale_codes", "check_14_scaled_codes_run",
]

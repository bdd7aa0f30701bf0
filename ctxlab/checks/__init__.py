"""Exercise checks, one module per lesson; every check is importable from here.

Adding a check for a new exercise is a few lines in ``ctxlab/checks/lessonNN.py``: build a list of
:class:`Case`, pick a comparison (:func:`tensor_close`, :func:`number_close`,
:func:`integer_equal`) and a few :class:`Diagnosis` entries for the mistakes learners make, call
:func:`run_check`, and name the check in ``_EXPORTS`` here.

Each module is imported when one of its names is first asked for, so that ``import ctxlab.checks`` (which
``ctxlab grade`` repeats before every check cell, after dropping the ctxlab modules a notebook could
have patched) costs one small module, not all of them. A check given the shipped stub says "not done
yet" before it builds its cases (:func:`ctxlab.checks.core.stub_first`).
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "core": (
        "Case", "Diagnosis", "all_close", "as_float", "as_tensor", "integer_equal", "number_close", "reweighted",
        "run_check", "tensor_close",
    ),
    "lesson01": (
        "check_01_conditional_entropy", "check_01_distinct_rows", "check_01_order1_signature",
        "check_01_pair_interaction", "count_distinct_rows",
    ),
    "lesson01_build": ("check_01_increment_on_rows", "check_01_ladder_budget", "check_01_order_gram"),
    "lesson02": ("check_02_linear_cka", "check_02_permutation_baseline", "check_02_random_rotation"),
    "lesson02_build": ("check_02_alignment_test", "check_02_detection_limit", "check_02_noise_limits"),
    "lesson03": ("check_03_dwell", "check_03_longest_wait", "check_03_rise_and_end", "check_03_stair_onsets"),
    "lesson03_build": ("check_03_build_staircase",),
    "lesson04": ("check_04_e1_velocity", "check_04_update_ratio"),
    "lesson04_build": ("check_04_e1_law",),
    "lesson05": ("check_05_growth_rate", "check_05_singular_values", "check_05_switch_on_order"),
    "lesson05_build": ("check_05_measure_switch_on", "check_05_predict_switch_on", "check_05_switch_on_prediction"),
    "lesson06": ("check_06_next_pairs", "check_06_pair_residual"),
    "lesson06_build": ("check_06_stair_velocity", "check_06_velocity_cosines"),
    "lesson07": ("check_07_leaves_uniform", "check_07_uniform_output"),
    "lesson07_build": ("check_07_force_before_attention", "check_07_qk_force"),
    "lesson08": ("check_08_layernorm_norms", "check_08_no_plateau_corner"),
    "lesson08_build": ("check_08_classify_cells", "check_08_decay_threshold", "check_08_phase_map_labels"),
    "lesson09": ("check_09_bigram_table", "check_09_closest_step", "check_09_kl_to_bigram"),
    "lesson09_build": ("check_09_alignment_order", "check_09_band_margins", "check_09_leading_signature"),
    "lesson09_together": ("check_09_kl_over_training",),
    "lesson10": ("check_10_bigram_signature", "check_10_bin_alignment"),
    "lesson10_build": ("check_10_frequency_report",),
    "lesson10_reading": ("check_10_read_report",),
    "lesson11": ("check_11_finishing_order", "check_11_signature_table"),
    "lesson11_build": ("check_11_rank_matched_control", "check_11_signature_vs_control"),
    "lesson12": ("check_12_held_out_accuracy", "check_12_line_up"),
    "lesson12_build": ("check_12_composition_report", "check_12_composition_timeline"),
    "lesson13": ("check_13_knn_overlap", "check_13_signature_classes"),
    "lesson13_build": ("check_13_first_step_at_or_below", "check_13_matched_loss_gap"),
    "lesson15": ("check_15_fit_sigmoid", "check_15_reconstruction_r2", "check_15_token_orders"),
    "lesson16": ("check_16_bin_loss", "check_16_loglog_slope", "check_16_rung_step"),
    "lesson16_build": ("check_16_bin_gain", "check_16_table_gain", "check_16_token_update_sizes"),
    "lesson14": ("check_14_code_table", "check_14_first_layer_rows", "check_14_r2_in_span"),
    "lesson14_build": ("check_14_scale_codes", "check_14_scaled_codes_run"),
    "lesson17": ("check_17_first_stair_onsets", "check_17_first_stair_path"),
}
_WHERE = {name: module for module, names in _EXPORTS.items() for name in names}
__all__ = sorted(_WHERE)


def __getattr__(name: str):
    """Import the module that defines ``name`` on first use, then keep the name here."""
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    if name.startswith("check_"):
        value = importlib.import_module(f"{__name__}.core").stub_first(value)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_WHERE))

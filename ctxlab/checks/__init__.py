"""Exercise checks, one module per lesson; every check is importable from here.

Adding a check for a new exercise is a few lines in ``ctxlab/checks/lessonNN.py``: build a list of
:class:`Case`, pick a comparison (:func:`tensor_close`, :func:`number_close`,
:func:`integer_equal`) and a few :class:`Diagnosis` entries for the mistakes learners make, call
:func:`run_check`, and import the check here.
"""

from ctxlab.checks.core import Case, Diagnosis, integer_equal, number_close, reweighted, run_check, tensor_close
from ctxlab.checks.lesson01 import (
    check_01_conditional_entropy,
    check_01_distinct_rows,
    check_01_order1_signature,
    check_01_pair_interaction,
    count_distinct_rows,
)

__all__ = [
    "Case", "Diagnosis", "integer_equal", "number_close", "reweighted", "run_check", "tensor_close",
    "check_01_conditional_entropy", "check_01_distinct_rows", "check_01_order1_signature",
    "check_01_pair_interaction", "count_distinct_rows",
]

from ctxlab.checks.lesson04 import check_04_e1_velocity, check_04_update_ratio  # noqa: E402
from ctxlab.checks.lesson05 import check_05_growth_rate, check_05_singular_values, check_05_switch_on_order  # noqa: E402

__all__ += [
    "check_04_e1_velocity", "check_04_update_ratio",
    "check_05_growth_rate", "check_05_singular_values", "check_05_switch_on_order",
]

from ctxlab.checks.lesson02 import check_02_linear_cka, check_02_permutation_baseline, check_02_random_rotation  # noqa: E402
from ctxlab.checks.lesson03 import check_03_longest_first_plateau, check_03_plateau_levels, check_03_stair_onsets  # noqa: E402

__all__ += [
    "check_02_linear_cka", "check_02_permutation_baseline", "check_02_random_rotation",
    "check_03_longest_first_plateau", "check_03_plateau_levels", "check_03_stair_onsets",
]

from ctxlab.checks.lesson08 import check_08_layernorm_norms, check_08_no_plateau_corner  # noqa: E402

__all__ += ["check_08_layernorm_norms", "check_08_no_plateau_corner"]

from ctxlab.checks.lesson09 import check_09_bigram_table, check_09_closest_step, check_09_kl_to_bigram  # noqa: E402
from ctxlab.checks.lesson10 import check_10_bigram_signature, check_10_bin_alignment  # noqa: E402

__all__ += [
    "check_09_bigram_table", "check_09_closest_step", "check_09_kl_to_bigram",
    "check_10_bigram_signature", "check_10_bin_alignment",
]

from ctxlab.checks.lesson06 import check_06_next_pairs, check_06_pair_residual  # noqa: E402

__all__ += ["check_06_next_pairs", "check_06_pair_residual"]

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

"""The course pipeline: build notebooks from their sources (:mod:`.notebooks`), grade an exercise
notebook (:mod:`.grading`), and the pytest plugins the notebook tests load (:mod:`.grading_plugin`,
:mod:`.budget`). Nothing here imports torch."""

from ctxlab.course.notebooks import build, check_sync, execute, kernel_env, read, render, targets, write
from ctxlab.course.grading import CellResult, check_name, grade, grade_cells

__all__ = ["build", "check_sync", "execute", "kernel_env", "read", "render", "targets", "write",
           "CellResult", "check_name", "grade", "grade_cells"]

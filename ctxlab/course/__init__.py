"""The course pipeline: build notebooks from their sources (:mod:`.notebooks`), grade an exercise
notebook with the course's own check cells (:mod:`.grading`; the manifest of those cells,
:mod:`.manifest`, is written into ``check_cells.json`` at build time), run a notebook
within time limits (:mod:`.runner`), and the pytest plugin that reports notebook budgets
(:mod:`.budget`). Nothing here imports torch."""

from ctxlab.course.notebooks import build, check_sync, execute, kernel_env, read, render, targets, write
from ctxlab.course.grading import CellResult, Grade, NotGradable, grade, grade_cells
from ctxlab.course.manifest import check_name, load_manifest

__all__ = ["build", "check_sync", "execute", "kernel_env", "read", "render", "targets", "write",
           "CellResult", "Grade", "NotGradable", "check_name", "grade", "grade_cells", "load_manifest"]

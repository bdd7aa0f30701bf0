"""The committed exercise and solution notebooks, and a tiny throw-away course project for the
pipeline and grading tests."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from ctxlab.course import Grade, build, load_manifest, read
from ctxlab.course.grading import assemble, identify
from ctxlab.course.runner import run

ROOT = Path(__file__).resolve().parents[1]
EXERCISE_NOTEBOOKS = sorted((ROOT / "exercises").glob("*.ipynb"))
SOLUTION_NOTEBOOKS = sorted((ROOT / "solutions").glob("*.ipynb"))


TINY_LESSON = '''# %% [markdown]
# # Lesson 01 — Tiny lesson
#
# A lesson with one computation.

# %%
print(6 * 7)
'''

TINY_EXERCISE = '''# %% [markdown]
# # Exercises 01 — Tiny

# %%
import torch

import ctxlab.checks


# %% [markdown]
# Count the distinct rows.

# %%
def n_distinct_rows(matrix, atol=1e-6):
    ### BEGIN SOLUTION
    kept = []
    for row in matrix.double():
        if all(float((row - k).abs().max()) > atol for k in kept):
            kept.append(row)
    return len(kept)
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_01_distinct_rows(n_distinct_rows)

# %% tags=["solution"]
print("only in the solution")
'''

TINY_PYPROJECT = '''[project]
name = "tiny"

[tool.ctxlab]
repository = "someone/tiny"
branch = "trunk"
colab_ref = "v9.9"
'''


def tiny_course(root: Path, exercise: str = TINY_EXERCISE, lesson: str | None = TINY_LESSON) -> Path:
    """Write and build a one-exercise course under ``root`` (the lesson, when given, is executed)."""
    (root / "lessons").mkdir(parents=True)
    (root / "exercises" / "src").mkdir(parents=True)
    (root / "pyproject.toml").write_text(TINY_PYPROJECT)
    (root / "README.md").write_text("# Tiny\n\n<!-- lessons:start -->\n<!-- lessons:end -->\n")
    if lesson is not None:
        (root / "lessons" / "01_tiny.py").write_text(lesson)
    (root / "exercises" / "src" / "01_tiny.py").write_text(exercise)
    assert build(root=root) == 0
    return root


def record_budget(record_property, path: Path, grade: Grade) -> None:
    """Put a graded notebook in the budget table (memory over the limit fails its test)."""
    from ctxlab.course.budget import record

    record(record_property, path.relative_to(ROOT).as_posix(), grade.wall_s, grade.peak_mb, grade.cells_run)


def record_budget_of_many(record_property, name: str, sets: dict, peak_mb: float) -> None:
    """Put the notebooks of one :func:`run_in_one_kernel` in the budget table as one row."""
    from ctxlab.course.budget import record

    record(record_property, name, sum(s.wall_s for s in sets.values()), peak_mb,
           sum(s.cells for s in sets.values()))


@dataclass
class SetRun:
    """What one exercise-set notebook did inside :func:`run_in_one_kernel`."""

    checks: dict[str, tuple[str, str]] = field(default_factory=dict)  # check name -> (error, stdout)
    errors: list[str] = field(default_factory=list)  # errors of the cells that are not checks
    wall_s: float = 0.0
    cells: int = 0  # code cells run, the grader's own included


def run_in_one_kernel(paths: list[Path], timeout: float = 900) -> tuple[dict[str, SetRun], str, float]:
    """Each notebook as ``ctxlab grade`` assembles it (the course's check cells, each after the grader's
    reset cell), one after another in ONE kernel with the namespace reset between them: one kernel
    start and one torch import for all of them instead of one each. Returns each notebook's cells'
    verdicts, why the run stopped ("" if it did not) and the kernel's peak memory."""
    manifest = load_manifest()
    clock = "%reset -f\nimport time, matplotlib.pyplot\nmatplotlib.pyplot.close('all')\nprint(time.perf_counter())"
    cells, owners = [], []
    for path in paths:
        nb = read(path)
        name, variant = identify(nb, path, manifest)
        cells.append(nbformat.v4.new_code_cell(clock))
        owners.append((path.name, "start"))
        for slot in assemble(nb, manifest[name]["variants"][variant], "one-kernel"):
            cells.append(slot.cell)
            owners.append((path.name, slot.check))
    cells.append(nbformat.v4.new_code_cell(clock))
    owners.append(("", "start"))
    result = run(nbformat.v4.new_notebook(cells=cells), paths[0].parent, cell_timeout=300, timeout=timeout)
    sets = {path.name: SetRun() for path in paths}
    clocks: list[tuple[str, float]] = []  # (notebook, kernel time) at each notebook's start, and at the end
    for index, (notebook, check) in enumerate(owners):
        cell = result.cells.get(index)
        if cell is None:
            continue
        done = sets.get(notebook, SetRun())  # the end clock belongs to no notebook
        done.cells += 1
        if cell.error and check in (None, "start"):
            done.errors.append(cell.error)
        elif check == "start":
            clocks.append((notebook, float(cell.stdout.split()[-1])))
        elif check:
            done.checks[check] = (cell.error, cell.stdout)
    for (notebook, start), (_, end) in zip(clocks, clocks[1:]):
        sets[notebook].wall_s = end - start
    return sets, result.stopped, result.peak_mb

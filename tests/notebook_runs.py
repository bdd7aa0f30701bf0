"""The committed exercise and solution notebooks, and a tiny throw-away course project for the
pipeline and grading tests."""

from __future__ import annotations

from pathlib import Path

from ctxlab.course import Grade, build

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

"""Shared, cached nbval runs of the committed exercise and solution notebooks (each runs once)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from ctxlab.course import CellResult, grade_cells

ROOT = Path(__file__).resolve().parents[1]
EXERCISE_NOTEBOOKS = sorted((ROOT / "exercises").glob("*.ipynb"))
SOLUTION_NOTEBOOKS = sorted((ROOT / "solutions").glob("*.ipynb"))


@cache
def graded(path: Path) -> tuple[int, tuple[CellResult, ...]]:
    rc, results = grade_cells(path)
    return rc, tuple(results)

"""Grade an exercise notebook: run it under nbval on a fresh kernel and report each check cell."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ctxlab.course.notebooks import CHECK_TAG, kernel_env, read

@dataclass(frozen=True)
class CellResult:
    """One code cell's verdict from the nbval run."""

    index: int
    check: str | None  # the check it calls, or None for an ordinary cell
    passed: bool
    hint: str


CHECK_CALL = re.compile(r"\b(check_\w+)\s*\(")


def check_name(cell) -> str | None:
    """The check a code cell runs (``check_01_x``), or None."""
    m = CHECK_CALL.search(cell.source)
    if m and (CHECK_TAG in cell.metadata.get("tags", []) or "ctxlab.checks" in cell.source):
        return m[1]
    return None


def run_nbval(path: Path, report: Path) -> int:
    """``pytest --nbval-lax --nbval-current-env path`` in a subprocess; per-cell results to ``report``."""
    cmd = [
        sys.executable, "-m", "pytest", "--nbval-lax", "--nbval-current-env", "-p", "no:cacheprovider",
        "-p", "ctxlab.course.grading_plugin", "-q", "--no-header", "-rN", "--color=no",
        "--rootdir", str(path.parent), str(path),
    ]  # fmt: skip
    env = dict(kernel_env(), CTXLAB_GRADE_REPORT=str(report))
    return subprocess.run(cmd, env=env, cwd=path.parent, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE).returncode


def grade_cells(path: Path) -> tuple[int, list[CellResult]]:
    """Run the notebook under nbval; return pytest's exit code and every code cell's verdict."""
    path = Path(path).resolve()
    if not path.is_file():
        raise FileNotFoundError(f"no notebook at {path}")
    code_cells = [c for c in read(path).cells if c.cell_type == "code"]
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "cells.json"
        rc = run_nbval(path, report)
        outcomes = json.loads(report.read_text()) if report.is_file() else {}
    if rc not in (0, 1) or len(outcomes) != len(code_cells):
        raise RuntimeError(f"nbval could not run {path} (pytest exit code {rc}); try `pytest --nbval-lax {path}`")
    results = [
        CellResult(i, check_name(c), outcomes[str(i)]["passed"], outcomes[str(i)]["hint"])
        for i, c in enumerate(code_cells)
    ]
    return rc, results


def grade(path: str | Path) -> int:
    """Print a score table for an exercise notebook; 0 iff ``pytest --nbval-lax`` passes on it."""
    rc, results = grade_cells(Path(path))
    checks = [r for r in results if r.check]
    broken = [r for r in results if not r.check and not r.passed]
    width = max([len(r.check) for r in checks] + [len("check")])
    print(f"{'check':<{width}}  result  hint")
    for r in checks:
        hint = r.hint.removeprefix(f"{r.check}: ").removeprefix(f"{r.check}, ")
        print(f"{r.check:<{width}}  {'PASS' if r.passed else 'FAIL':<6}  {hint}")
    for r in broken:
        print(f"{'cell ' + str(r.index):<{width}}  {'ERROR':<6}  {r.hint}")
    passed = sum(r.passed for r in checks)
    print(f"{passed}/{len(checks)} checks passed" + (f"; {len(broken)} other cell(s) raised" if broken else ""))
    return 0 if rc == 0 else 1

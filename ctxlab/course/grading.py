"""Grade an exercise notebook with the course's own check cells, on a fresh kernel, within a time limit.

What the learner's notebook holds in its check cells does not count: ``ctxlab build`` records every
exercise set's check cells (source and sha256) in ``ctxlab/course/check_cells.json``, shipped with the
package, and the grader runs those. It keeps the learner's code cells in order and puts each canonical
check cell where the learner's copy is (found by cell id, else by its exact text); a check cell that
was deleted goes back before the next cell of the course that the learner still has. It reports the
check cells that were missing or changed, and ignores nbval markers and cell tags.

Before each check cell a hidden cell removes what a learner cell could have put in the check's way
(IPython event callbacks and exception handlers defined in the notebook, a redefined
``ctxlab.checks``) and imports ``ctxlab`` afresh. A check passes only when its cell ran without error
and printed both the check's ``PASS`` line and a random token that appears nowhere but in that cell.

Cells are numbered as Jupyter numbers them after *Restart Kernel and Run All Cells*: ``In [k]`` is
the k-th code cell of the learner's notebook. Exit code 0: every check passed and no cell raised;
1: not so (or the run was stopped); :class:`NotGradable` (the command exits 2): not an exercise set.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass, field
from pathlib import Path

from ctxlab.course.manifest import CHECK_TAG, load_manifest, sha256
from ctxlab.course.notebooks import read

CELL_TIMEOUT_S = 300  # per cell: the slowest solution cell takes a few seconds on an idle machine
TIMEOUT_S = 1200  # the whole run, kernel start included
SET_NAME = re.compile(r"\d\d_[a-z0-9_]+")
NBVAL_MARKER = re.compile(r"^[ \t]*#[ \t]*NBVAL_\w+[ \t]*\n?", re.M)


class NotGradable(ValueError):
    """The notebook is not an exercise set of this course (a lesson, or unknown)."""


@dataclass(frozen=True)
class CellResult:
    """One graded cell: a check (``check`` set) or a learner cell that raised."""

    number: int | None  # Jupyter's In [number] in the learner's notebook; None for a re-inserted check
    check: str | None
    passed: bool
    hint: str
    note: str = ""  # "missing ..." or "changed ..." for a check cell the learner's notebook did not hold as shipped


@dataclass
class Grade:
    """The verdict on one notebook."""

    path: Path
    exercise_set: str
    variant: str
    results: list[CellResult] = field(default_factory=list)
    stopped: str = ""
    wall_s: float = 0.0
    peak_mb: float = 0.0
    cells_run: int = 0  # code cells executed, the grader's own included

    @property
    def checks(self) -> list[CellResult]:
        return [r for r in self.results if r.check]

    @property
    def passed(self) -> bool:
        return bool(self.checks) and all(r.passed for r in self.results) and not self.stopped

    @property
    def rc(self) -> int:
        return 0 if self.passed else 1


# --- which exercise set, and the notebook to run ----------------------------------------------


def identify(nb, path: Path, manifest: dict) -> tuple[str, str]:
    """(exercise set, variant) of a notebook, from ``metadata.ctxlab`` or else its file name."""
    meta = nb.metadata.get("ctxlab", {})
    source = str(meta.get("source", ""))
    sets = ", ".join(sorted(manifest))
    if meta.get("variant") == "lesson" or source.startswith("lessons/"):
        stem = Path(source).stem or path.stem
        which = f"its exercises: `ctxlab grade exercises/{stem}.ipynb`" if stem in manifest else f"an exercise set ({sets})"
        raise NotGradable(f"{path} is a lesson ({source or 'variant lesson'}), not an exercise set; "
                          f"lessons have no checks. Grade {which}")  # fmt: skip
    name = Path(source).stem if Path(source).stem in manifest else None
    if name is None:  # metadata stripped: "Copy of 01_signatures (2).ipynb" still names its set
        found = [m for m in SET_NAME.findall(path.stem) if m in manifest]
        name = found[0] if found else None
    if name is None:
        raise NotGradable(f"{path} is not one of the course's exercise sets ({sets}); its metadata names "
                          f"{source or 'no source'} and its file name none of them")  # fmt: skip
    variants = manifest[name]["variants"]
    variant = meta.get("variant")
    if variant not in variants:  # the variant whose cells it shares most of
        variant = max(variants, key=lambda v: len(_shared(nb, variants[v])))
    known = {e["sha256"] for e in variants[variant] if "check" not in e}
    if not any(c.cell_type == "markdown" and sha256(c.source) in known for c in nb.cells):
        raise NotGradable(f"{path} has none of the text cells of exercise set {name}; it is not that exercise set")
    return name, variant


def _shared(nb, cells: list[dict]) -> set[str]:
    ids = {(e["id"], e["sha256"]) for e in cells}
    return {c.get("id") for c in nb.cells if (c.get("id"), sha256(c.source)) in ids}


@dataclass
class _Slot:
    """A cell of the notebook the grader runs, and where it came from."""

    cell: object
    number: int | None = None  # In [k] of the learner cell it is (or replaces)
    check: str | None = None
    note: str = ""


def _what_changed(cell, entry: dict) -> str:
    if cell.cell_type != "code":
        return f"changed: it is a {cell.cell_type} cell"
    parts = []
    if cell.source != entry["source"]:
        parts.append("its source was edited")
    tags = list(cell.metadata.get("tags", []))
    if tags != [CHECK_TAG]:
        parts.append(f"its tags are {tags}")
    return "changed: " + " and ".join(parts) if parts else ""


def assemble(nb, cells: list[dict], token: str) -> list[_Slot]:
    """The learner's code cells in order, with the canonical check cells at their canonical places."""
    import nbformat

    checks = [(k, e) for k, e in enumerate(cells) if "check" in e]
    by_id = {e["id"]: k for k, e in enumerate(cells)}
    by_sha: dict[str, list[int]] = {}
    for k, e in enumerate(cells):
        by_sha.setdefault(e["sha256"], []).append(k)
    # which canonical cell each learner cell is: by id, else by exact text (ids lost in a conversion)
    canon: list[int | None] = []
    taken: set[int] = set()
    for cell in nb.cells:
        k = by_id.get(cell.get("id"))
        if k is None or k in taken:
            k = next((j for j in by_sha.get(sha256(cell.source), []) if j not in taken), None)
        if k is not None:
            taken.add(k)
        canon.append(k)
    numbers, n = [], 0
    for cell in nb.cells:
        n += cell.cell_type == "code"
        numbers.append(n if cell.cell_type == "code" else None)

    def check_slot(entry: dict, number: int | None, note: str) -> list[_Slot]:
        reset = nbformat.v4.new_code_cell(RESET_CELL)
        check = nbformat.v4.new_code_cell(f"{entry['source']}\nprint({token!r})", metadata={"tags": [CHECK_TAG]})
        return [_Slot(reset), _Slot(check, number, entry["check"], note)]

    placed = {k for k in canon if k is not None}
    missing = [(k, e) for k, e in checks if k not in placed]
    slots: list[_Slot] = []
    for cell, k, number in zip(nb.cells, canon, numbers):
        for k_missing, e in [m for m in missing if k is not None and m[0] < k]:
            after = f"after In [{slots[-1].number}]" if slots and slots[-1].number else "at the top"
            slots += check_slot(e, None, f"missing: the course's check cell was run {after}")
            missing.remove((k_missing, e))
        if k is not None and "check" in cells[k]:
            slots += check_slot(cells[k], number, _what_changed(cell, cells[k]))
        elif cell.cell_type == "code":
            learner = nbformat.v4.new_code_cell(NBVAL_MARKER.sub("", cell.source))  # no tags: nothing skipped
            slots.append(_Slot(learner, number))
    for _, e in missing:
        slots += check_slot(e, None, "missing: the course's check cell was run at the end")
    return slots


RESET_CELL = "import ctxlab.course.grading_runtime as _ctxlab_grade\n_ctxlab_grade.reset(get_ipython())\ndel _ctxlab_grade"


# --- grading --------------------------------------------------------------------------------


def _hint(error: str, check: str | None) -> str:
    """The exception's whole message, without the check's name the message starts with."""
    name, _, message = error.partition(": ")
    if name.endswith("NotImplementedError"):
        return "not done yet: " + (message or "replace `raise NotImplementedError` with your code")
    if check and name == "AssertionError":
        return message.removeprefix(f"{check}: ").removeprefix(f"{check}, ") or name
    return error


def grade_cells(path: str | Path, manifest: dict | None = None, cell_timeout: float = CELL_TIMEOUT_S,
                timeout: float = TIMEOUT_S) -> Grade:  # fmt: skip
    """Run the notebook with the canonical check cells; raise :class:`NotGradable` for anything else."""
    import nbformat

    from ctxlab.course.runner import run

    path = Path(path).resolve()
    if not path.is_file():
        raise NotGradable(f"no notebook at {path}")
    try:
        nb = read(path)
    except Exception as err:  # nbformat's errors for JSON that is not a notebook
        raise NotGradable(f"{path} is not a readable notebook ({type(err).__name__}: {err})") from err
    manifest = manifest if manifest is not None else load_manifest()
    name, variant = identify(nb, path, manifest)
    token = f"ctxlab-grade {secrets.token_hex(16)}"
    slots = assemble(nb, manifest[name]["variants"][variant], token)
    graded = nbformat.v4.new_notebook(cells=[s.cell for s in slots], metadata=dict(nb.metadata))
    result = run(graded, path.parent, cell_timeout=cell_timeout, timeout=timeout)
    grade = Grade(path, name, variant, stopped=result.stopped, wall_s=result.wall_s, peak_mb=result.peak_mb,
                  cells_run=len(result.cells))  # fmt: skip
    for index, slot in enumerate(slots):
        cell = result.cells.get(index)
        if slot.number is None and slot.check is None:
            if cell is not None and cell.error:  # a grader's own cell failed: nothing after it counts
                grade.stopped = grade.stopped or f"the grader's reset cell failed ({cell.error})"
            continue
        if index == result.stopped_at and slot.number:
            grade.stopped += f" (at In [{slot.number}])"
        if cell is None:
            if slot.check:
                why = result.stopped or "an earlier cell stopped the run"
                grade.results.append(CellResult(slot.number, slot.check, False, f"not run: {why}", slot.note))
            continue
        if slot.check:
            printed = cell.stdout.splitlines()
            passed = not cell.error and f"PASS {slot.check}" in printed and token in printed
            hint = _hint(cell.error, slot.check) if cell.error else "" if passed else (
                "the check printed no PASS line (did a cell above replace print or sys.stdout?)")
            grade.results.append(CellResult(slot.number, slot.check, passed, hint, slot.note))
        elif cell.error:
            grade.results.append(CellResult(slot.number, None, False, _hint(cell.error, None)))
    return grade


def report(grade: Grade) -> str:
    """The score table: one line per check, then the whole hint, notes and the verdict."""
    width = max([len(r.check) for r in grade.checks] + [len("check")])
    lines = [
        f"ctxlab grade: {grade.path.name}, exercise set {grade.exercise_set} ({grade.variant} notebook)",
        "cells are numbered as Jupyter shows them after Restart Kernel and Run All Cells: In [k] is the k-th code cell",
        "",
        f"{'cell':<9} {'check':<{width}}  result",
    ]
    for r in grade.results:
        where = f"In [{r.number}]" if r.number else "(added)"
        lines.append(f"{where:<9} {r.check or '':<{width}}  {'PASS' if r.passed else 'FAIL' if r.check else 'ERROR'}")
        for note in (r.note, r.hint):
            lines += [f"{'':<9}   {line}" for line in note.splitlines()]
    broken = [r for r in grade.results if not r.check]
    passed = sum(r.passed for r in grade.checks)
    lines.append("")
    if grade.stopped:
        lines.append(f"stopped: {grade.stopped}")
    lines.append(f"{passed}/{len(grade.checks)} checks passed" + (f"; {len(broken)} other cell(s) raised" if broken else ""))
    lines.append(f"verdict: {'PASS' if grade.passed else 'FAIL'}")
    return "\n".join(lines)


def grade(path: str | Path, manifest: dict | None = None, cell_timeout: float = CELL_TIMEOUT_S,
          timeout: float = TIMEOUT_S) -> int:  # fmt: skip
    """Print the score table of an exercise notebook; 0 iff every check passed and no cell raised."""
    result = grade_cells(path, manifest, cell_timeout, timeout)
    print(report(result), flush=True)
    return result.rc

"""`ctxlab grade` is a grade a teacher can trust: it runs the course's own check cells, whatever the
notebook holds, and every tampering below leaves an unsolved notebook failing.

Cell-local tamperings (a check cell deleted, emptied, commented out, marked, tagged, turned off,
wrapped) are applied one per check cell of a many-check tiny exercise set and graded in one run;
tamperings that reach beyond their cell (a patched check, ``run_check`` or reference, hooks, exits)
each sit before a check cell of their own, also in one run. A hidden reset cell runs before every
check, so each tampering is undone before the check after it.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import nbformat
import pytest
from notebook_runs import ROOT, tiny_course

from ctxlab import course
from ctxlab.course.grading import assemble, grade_cells, report

NAME = "check_01_distinct_rows"
CHECK = f"ctxlab.checks.{NAME}(n_distinct_rows)"
LOCAL = {  # name -> how the check cell is tampered with (None: deleted)
    "as shipped": lambda c: c,
    "deleted": lambda c: None,
    "emptied": lambda c: c.update(source="") or c,
    "commented out": lambda c: c.update(source="# " + c.source) or c,
    "NBVAL_SKIP": lambda c: c.update(source="# NBVAL_SKIP\n" + c.source) or c,
    "NBVAL_RAISES_EXCEPTION": lambda c: c.update(source="# NBVAL_RAISES_EXCEPTION\n" + c.source) or c,
    "tag raises-exception": lambda c: c.metadata.update(tags=["check", "raises-exception"]) or c,
    "tag skip-execution": lambda c: c.metadata.update(tags=["skip-execution"]) or c,
    "%%script false": lambda c: c.update(source="%%script false\n" + c.source) or c,
    "try/except": lambda c: c.update(source=f"try:\n    {c.source}\nexcept BaseException:\n    pass") or c,
    "prints PASS": lambda c: c.update(source='print("PASS check_01_distinct_rows")') or c,
    "markdown cell": lambda c: nbformat.v4.new_markdown_cell(c.source, id=c.id),
    "new id, wrapped": lambda c: nbformat.v4.new_code_cell(f"try:\n    {c.source}\nexcept Exception:\n    pass"),
    "saved PASS output": lambda c: c.update(outputs=[nbformat.v4.new_output("stream", text=f"PASS {NAME}\n")]) or c,
}
AS_SHIPPED = ("as shipped", "saved PASS output")  # the cell's source and tags are the course's
WRONG = "def n_distinct_rows(matrix, atol=1e-6):\n    return matrix.shape[0]\n"
FAKE_PASS = 'lambda *args, **kwargs: print("PASS check_01_distinct_rows")'
GLOBAL = {  # name -> a learner cell run just before a check cell (with a wrong or unfinished answer)
    "redefines the check": f"{WRONG}ctxlab.checks.check_01_distinct_rows = {FAKE_PASS}",
    "patches run_check": f"{WRONG}import ctxlab.checks.core, ctxlab.checks.lesson01\n"
    "fake = lambda name, *args, **kwargs: print(f'PASS {name}')\n"
    "ctxlab.checks.core.run_check = ctxlab.checks.lesson01.run_check = ctxlab.checks.run_check = fake",
    "patches the reference": f"{WRONG}import ctxlab.checks.lesson01\n"
    "ctxlab.checks.lesson01.count_distinct_rows = lambda matrix, atol=1e-6: matrix.shape[0]",
    "rebinds ctxlab": f"{WRONG}import types\n"
    f"ctxlab = types.SimpleNamespace(checks=types.SimpleNamespace(check_01_distinct_rows={FAKE_PASS}))",
    "fakes sys.modules": f"{WRONG}import sys, types\n"
    f"sys.modules['ctxlab.checks'] = types.SimpleNamespace(check_01_distinct_rows={FAKE_PASS})\n"
    "import ctxlab\nctxlab.checks = sys.modules['ctxlab.checks']",
    "hides errors and echoes the cell": f"{WRONG}ip = get_ipython()\n"
    "ip.set_custom_exc((BaseException,), lambda *args, **kwargs: None)\n"
    "def echo(result):\n    print('PASS check_01_distinct_rows')\n"
    "    for line in result.info.raw_cell.splitlines():\n        print(line.removeprefix('print(').strip(\"')\"))\n"
    "ip.events.register('post_run_cell', echo)",
    "answer calls sys.exit": "def n_distinct_rows(matrix, atol=1e-6):\n    raise SystemExit(0)",
    "answer raises KeyboardInterrupt": "def n_distinct_rows(matrix, atol=1e-6):\n    raise KeyboardInterrupt",
    "cell calls sys.exit()": "import sys\nsys.exit()",
    "cell raises KeyboardInterrupt": "raise KeyboardInterrupt",
}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    return tiny_course(tmp_path_factory.mktemp("grading"), lesson=None)


@pytest.fixture(scope="module")
def manifest(tiny) -> dict:
    return course.load_manifest(tiny / "ctxlab" / "course" / "check_cells.json")


def many_checks(tiny: Path, variant: str, n: int) -> tuple[nbformat.NotebookNode, dict]:
    """The tiny set rebuilt with ``n`` check cells, each after a markdown cell of its own: the
    ``variant`` notebook and the set's manifest."""
    folder = tiny.parent / f"{tiny.name}-{n}"
    if not folder.exists():
        text = (tiny / "exercises" / "src" / "01_tiny.py").read_text()
        text = text.replace(f'# %% tags=["check"]\n{CHECK}\n', "".join(
            f'# %% [markdown]\n# Check {k}.\n\n# %% tags=["check"]\n{CHECK}\n\n' for k in range(n)))  # fmt: skip
        tiny_course(folder, exercise=text, lesson=None)
    manifest = course.load_manifest(folder / "ctxlab" / "course" / "check_cells.json")
    return course.read(folder / f"{variant}s" / "01_tiny.ipynb"), manifest


def save(nb, folder: Path, name: str = "01_tiny.ipynb") -> Path:
    path = folder / name
    nbformat.write(nb, path)
    return path


def check_cells(nb) -> list[int]:
    return [i for i, c in enumerate(nb.cells) if "check" in c.metadata.get("tags", [])]


@pytest.mark.parametrize("variant", ["exercise", "solution"])
def test_check_cell_tampering_is_undone(tiny, tmp_path, variant):
    """Exercise: every check fails, each tampering is named. Solution: the course's checks all pass."""
    nb, manifest = many_checks(tiny, variant, len(LOCAL))
    cells = list(nb.cells)
    for i, tamper in zip(check_cells(nb), LOCAL.values()):
        cells[i] = tamper(cells[i])
    nb.cells = [c for c in cells if c is not None]
    result = grade_cells(save(nb, tmp_path), manifest)
    print(report(result))
    assert len(result.checks) == len(LOCAL) and not result.stopped
    notes = dict(zip(LOCAL, [r.note for r in result.checks]))
    assert all(notes[k] == "" for k in AS_SHIPPED) and all(notes[k] for k in LOCAL if k not in AS_SHIPPED), notes
    assert notes["deleted"].startswith("missing") and notes["new id, wrapped"].startswith("missing")
    assert "markdown" in notes["markdown cell"] and "tags" in notes["tag skip-execution"]
    if variant == "exercise":
        assert result.rc == 1 and not any(r.passed for r in result.checks)
        assert all("not done yet" in r.hint for r in result.checks)
    else:
        assert result.rc == 0 and all(r.passed for r in result.checks)


def test_tampering_beyond_the_check_cell_is_undone(tiny, tmp_path):
    nb, manifest = many_checks(tiny, "exercise", len(GLOBAL))
    cells = list(nb.cells)
    for i, source in reversed(list(zip(check_cells(nb), GLOBAL.values()))):
        cells.insert(i, nbformat.v4.new_code_cell(source))
    nb.cells = cells
    result = grade_cells(save(nb, tmp_path), manifest)
    text = report(result)
    print(text)
    assert result.rc == 1 and not result.stopped
    verdicts = dict(zip(GLOBAL, result.checks))
    assert not any(r.passed for r in result.checks), {k: r.hint for k, r in verdicts.items() if r.passed}
    for name in ("redefines the check", "patches run_check", "patches the reference", "rebinds ctxlab"):
        assert "you returned the number of rows" in verdicts[name].hint, (name, verdicts[name].hint)
    assert "inputs:" in text, "the whole hint is printed, not only its first line"
    assert verdicts["answer calls sys.exit"].hint.startswith("SystemExit")
    assert verdicts["answer raises KeyboardInterrupt"].hint.startswith("KeyboardInterrupt")
    errors = [r.hint for r in result.results if not r.check]
    assert any(h.startswith("SystemExit") for h in errors) and "KeyboardInterrupt" in errors


@pytest.mark.parametrize(
    ("name", "source", "limits", "stopped"),
    [
        ("os._exit", "import os\nos._exit(0)", {}, "the kernel died or exited (os._exit, a crash, or out of memory) (at In [4])"),
        ("endless loop", "import time\nwhile True:\n    try:\n        time.sleep(1)\n    except BaseException:\n        pass",
         {"cell_timeout": 4}, "a cell ran past the 4 s cell limit"),  # (on a loaded machine maybe an earlier one)
        ("slow cells", "import time\ntime.sleep(1)\n" * 2, {"timeout": 5}, "limit of the whole run"),
    ],
    ids=["os._exit", "endless loop", "slow cells"],
)  # fmt: skip
def test_every_run_ends_with_a_verdict(tiny, manifest, tmp_path, name, source, limits, stopped):
    nb = course.read(tiny / "solutions" / "01_tiny.ipynb")
    i = check_cells(nb)[0]
    nb.cells[i:i] = [nbformat.v4.new_code_cell(source) for _ in range(3 if name == "slow cells" else 1)]
    result = grade_cells(save(nb, tmp_path), manifest, **limits)
    assert result.rc == 1 and stopped in result.stopped
    assert [r.passed for r in result.checks] == [False] and "not run" in result.checks[0].hint
    assert result.wall_s < 60


def test_ids_lost_and_helper_cells_added(tiny, manifest, tmp_path):
    """A solution whose cell ids were regenerated, with a learner cell between the answer and its check."""
    nb = course.read(tiny / "solutions" / "01_tiny.ipynb")
    for cell in nb.cells:
        cell.id = uuid.uuid4().hex[:8]
    nb.cells.insert(check_cells(nb)[0], nbformat.v4.new_code_cell("HELPER = 1"))
    nb.cells[check_cells(nb)[0] - 2].source += "\n    assert HELPER == 1"
    del nb.metadata["ctxlab"]
    result = grade_cells(save(nb, tmp_path, "Copy of 01_tiny (2).ipynb"), manifest)
    assert result.rc == 0 and [(r.number, r.note) for r in result.checks] == [(5, "")]


def test_assemble_puts_a_deleted_check_back_where_it_was():
    nb = course.read(ROOT / "exercises" / "01_signatures.ipynb")
    cells = course.load_manifest()["01_signatures"]["variants"]["exercise"]
    first = check_cells(nb)[0]
    before = nb.cells[first - 1].source
    del nb.cells[first]
    slots = assemble(nb, cells, "token")
    sources = [s.cell.source for s in slots]
    k = sources.index(cells[first]["source"] + "\nprint('token')")
    assert sources[k - 2] == before and slots[k].number is None and "missing" in slots[k].note
    assert [s.check for s in slots if s.check] == [e["check"] for e in cells if "check" in e]


def test_refuses_lessons_and_strangers(tiny, manifest, tmp_path):
    with pytest.raises(course.NotGradable, match="is a lesson"):
        grade_cells(ROOT / "lessons" / "01_signatures.ipynb")
    with pytest.raises(course.NotGradable, match=r"Grade an exercise set \(01_signatures, 02_alignment"):
        grade_cells(ROOT / "lessons" / "00_welcome.ipynb")
    stranger = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# Mine"), nbformat.v4.new_code_cell("1")])
    with pytest.raises(course.NotGradable, match="not one of the course's exercise sets"):
        grade_cells(save(stranger, tmp_path, "mine.ipynb"), manifest)
    with pytest.raises(course.NotGradable, match="none of the text cells"):  # a lesson that lost its metadata
        grade_cells(save(stranger, tmp_path, "01_tiny.ipynb"), manifest)
    (tmp_path / "broken.ipynb").write_text("{not json")
    with pytest.raises(course.NotGradable, match="not a readable notebook"):
        grade_cells(tmp_path / "broken.ipynb", manifest)


def test_command_exits_2_on_a_lesson_with_a_clear_message(capsys):
    from ctxlab.cli import main

    assert main(["grade", str(ROOT / "lessons" / "01_signatures.ipynb")]) == 2
    err = capsys.readouterr().err
    assert "is a lesson" in err and "ctxlab grade exercises/01_signatures.ipynb" in err
    assert main(["grade", "--timeout", "0", str(ROOT / "exercises" / "01_signatures.ipynb")]) == 2
    assert "--timeout must be a positive" in capsys.readouterr().err
    assert main(["grade", str(ROOT / "no_such.ipynb")]) == 2
    assert "no notebook at" in capsys.readouterr().err

"""The course pipeline on a tiny throw-away project, plus grading of the real lesson-01 notebooks."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from notebook_runs import ROOT, tiny_course

from ctxlab import course

@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    return tiny_course(tmp_path_factory.mktemp("course"))


def sources(nb) -> str:
    return "\n".join(c.source for c in nb.cells)


def test_build_writes_all_three_variants(project):
    lesson = course.read(project / "lessons" / "01_tiny.ipynb")
    outputs = [o for c in lesson.cells if c.cell_type == "code" for o in c.outputs]
    assert any("42" in o.get("text", "") for o in outputs), "the lesson is executed"
    exercise = sources(course.read(project / "exercises" / "01_tiny.ipynb"))
    solution = sources(course.read(project / "solutions" / "01_tiny.ipynb"))
    assert "# YOUR CODE HERE\n    raise NotImplementedError" in exercise
    assert "kept.append(row)" not in exercise and "only in the solution" not in exercise
    assert "kept.append(row)" in solution and "### BEGIN SOLUTION" not in solution
    for nb in (exercise, solution):
        assert "ctxlab.checks.check_01_distinct_rows" in nb


def test_notebooks_start_with_title_then_setup_cell(project):
    for folder in ("lessons", "exercises", "solutions"):
        nb = course.read(project / folder / "01_tiny.ipynb")
        assert nb.cells[0].cell_type == "markdown" and nb.cells[0].source.startswith("# ")
        setup = nb.cells[1].source
        assert '"google.colab" in sys.modules' in setup
        assert "git+https://github.com/someone/tiny@v9.9" in setup and "--upgrade" not in setup
        assert "enable_custom_widget_manager" in setup and "ctxlab.env.doctor()" in setup
        assert not any(line.startswith("%") for line in setup.splitlines()), "plain Python, runs under nbval"


def test_readme_table_is_generated_from_config(project):
    readme = (project / "README.md").read_text()
    assert "| 01 | [Tiny lesson](lessons/01_tiny.ipynb) |" in readme
    assert "https://colab.research.google.com/github/someone/tiny/blob/trunk/lessons/01_tiny.ipynb" in readme
    assert "https://mybinder.org/v2/gh/someone/tiny/trunk?labpath=lessons/01_tiny.ipynb" in readme


def test_rebuild_does_not_churn_or_reexecute(project, capsys):
    before = {p: p.read_bytes() for p in project.rglob("*.ipynb")}
    assert course.build(root=project) == 0
    assert "unchanged source, kept" in capsys.readouterr().out
    assert {p: p.read_bytes() for p in project.rglob("*.ipynb")} == before
    text = (project / "lessons" / "01_tiny.ipynb").read_text()
    assert '"execution"' not in text and "iopub" not in text, "no timing metadata"


def test_check_passes_in_sync_and_fails_when_anything_drifts(project, tmp_path, capsys):
    copy = tmp_path / "copy"
    shutil.copytree(project, copy)
    assert course.build(check=True, root=copy) == 0
    src = copy / "exercises" / "src" / "01_tiny.py"
    src.write_text(src.read_text().replace("kept = []", "kept = list()"))
    assert course.build(check=True, root=copy) == 1
    assert "solutions/01_tiny.ipynb: cells differ" in capsys.readouterr().out
    assert course.build(root=copy) == 0 and course.build(check=True, root=copy) == 0
    nb_path = copy / "lessons" / "01_tiny.ipynb"
    nb = course.read(nb_path)
    nb.cells[2].source = "print(6 * 9)"
    nbformat.write(nb, nb_path)
    assert course.build(check=True, root=copy) == 1
    nb_path.unlink()
    assert course.build(check=True, root=copy) == 1
    assert "lessons/01_tiny.ipynb: missing" in capsys.readouterr().out


def nbval_rc(path: Path) -> int:
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbval-lax", "--nbval-current-env",
           "--rootdir", str(path.parent), str(path)]  # fmt: skip
    return subprocess.run(cmd, cwd=path.parent, capture_output=True, env=course.kernel_env()).returncode


def test_nbval_passes_on_the_solution(project):
    """The exercise header's other way to grade, `pytest --nbval-lax`, runs a solved notebook through
    (`ctxlab grade` itself is tested in test_grading.py)."""
    assert nbval_rc(project / "solutions" / "01_tiny.ipynb") == 0


def test_build_writes_and_checks_the_check_cell_manifest(project, tmp_path, capsys):
    manifest = course.load_manifest(project / "ctxlab" / "course" / "check_cells.json")
    [check] = [e for e in manifest["01_tiny"]["variants"]["exercise"] if "check" in e]
    assert check["check"] == "check_01_distinct_rows" and check["source"].startswith("ctxlab.checks.check_01")
    copy = tmp_path / "copy"
    shutil.copytree(project, copy)
    src = copy / "exercises" / "src" / "01_tiny.py"
    src.write_text(src.read_text().replace("check_01_distinct_rows(n_distinct_rows)", "check_01_distinct_rows(f)"))
    assert course.build(check=True, root=copy) == 1
    assert "check_cells.json: the check cells" in capsys.readouterr().out


def test_build_refuses_an_exercise_set_without_checks(tmp_path):
    with pytest.raises(ValueError, match="at least one code cell tagged 'check'"):
        tiny_course(tmp_path, exercise="# %% [markdown]\n# # Exercises 01 — none\n\n# %%\nx = 1\n", lesson=None)


def test_build_check_passes_on_the_repository():
    assert course.build(check=True, root=ROOT) == 0

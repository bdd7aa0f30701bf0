"""The course pipeline on a tiny throw-away project, plus grading of the real lesson-01 notebooks."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from notebook_runs import EXERCISE_NOTEBOOKS, ROOT, SOLUTION_NOTEBOOKS, graded

from ctxlab import course

LESSON = '''# %% [markdown]
# # Lesson 01 — Tiny lesson
#
# A lesson with one computation.

# %%
print(6 * 7)
'''

EXERCISE = '''# %% [markdown]
# # Exercises 01 — Tiny

# %%
import torch

import ctxlab.checks


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

PYPROJECT = '''[project]
name = "tiny"

[tool.ctxlab]
repository = "someone/tiny"
branch = "trunk"
colab_ref = "v9.9"
'''


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("course")
    (root / "lessons").mkdir()
    (root / "exercises" / "src").mkdir(parents=True)
    (root / "pyproject.toml").write_text(PYPROJECT)
    (root / "README.md").write_text("# Tiny\n\n<!-- lessons:start -->\n<!-- lessons:end -->\n")
    (root / "lessons" / "01_tiny.py").write_text(LESSON)
    (root / "exercises" / "src" / "01_tiny.py").write_text(EXERCISE)
    assert course.build(root=root) == 0
    return root


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


def test_grade_gives_the_same_verdict_as_nbval(project, capsys):
    solution, exercise = project / "solutions" / "01_tiny.ipynb", project / "exercises" / "01_tiny.ipynb"
    assert course.grade(solution) == 0 == nbval_rc(solution)
    assert course.grade(exercise) == 1 == nbval_rc(exercise)
    out = capsys.readouterr().out
    assert "check_01_distinct_rows  FAIL    not done yet" in out and "0/1 checks passed" in out


@pytest.mark.parametrize("path", SOLUTION_NOTEBOOKS, ids=lambda p: p.name)
def test_grade_passes_on_the_solution(path):
    rc, results = graded(path)
    assert rc == 0 and all(r.passed for r in results)


@pytest.mark.parametrize("path", EXERCISE_NOTEBOOKS, ids=lambda p: p.name)
def test_grade_fails_on_a_notebook_saved_after_a_failing_run(path, tmp_path, capsys):
    """Outputs saved from a failing run (even faked PASS lines) do not fool the grader: it re-runs."""
    from nbclient import NotebookClient

    nb = course.read(path)
    NotebookClient(nb, kernel_name="python3", allow_errors=True).execute(cwd=str(path.parent), env=course.kernel_env())
    for cell in nb.cells:
        if cell.cell_type == "code" and course.check_name(cell):
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=f"PASS {course.check_name(cell)}\n")]
    saved = tmp_path / path.name
    nbformat.write(nb, saved)
    assert course.grade(saved) == 1
    assert "0/" in capsys.readouterr().out


def test_build_check_passes_on_the_repository():
    assert course.build(check=True, root=ROOT) == 0

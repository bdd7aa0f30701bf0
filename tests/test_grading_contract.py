"""The grading contract: solutions pass, unsolved exercises fail at every check, and every check
accepts the reference answer and rejects plausible wrong ones.

A new lesson's checks join by adding ``tests/contracts/contract_NN.py`` with a ``CONTRACT`` list:
each check, a correct learner-style function, and at least three wrong ones named after the
mistake they make.
"""

from __future__ import annotations

import nbformat
import pytest
from contracts import all_contracts
from notebook_runs import EXERCISE_NOTEBOOKS, SOLUTION_NOTEBOOKS, record_budget

from ctxlab import checks
from ctxlab.course import check_name, grade_cells, load_manifest, read
from ctxlab.course.grading import assemble, identify
from ctxlab.course.runner import run

CONTRACT = all_contracts()
WRONG = [(c.check, name, fn) for c in CONTRACT for name, fn in c.wrong.items()]


@pytest.mark.parametrize("contract", CONTRACT, ids=lambda c: c.check.__name__)
def test_reference_passes(contract, capsys):
    contract.check(contract.reference)
    assert capsys.readouterr().out.strip() == f"PASS {contract.check.__name__}"


@pytest.mark.parametrize("contract", CONTRACT, ids=lambda c: c.check.__name__)
def test_at_least_three_wrong_answers(contract):
    assert len(contract.wrong) >= 3


@pytest.mark.parametrize(("check", "mistake", "fn"), WRONG, ids=[f"{c.__name__}-{m}" for c, m, _ in WRONG])
def test_wrong_answer_is_rejected_with_a_hint(check, mistake, fn, capsys):
    with pytest.raises(AssertionError) as err:
        check(fn)
    first = str(err.value).splitlines()[0]
    assert first.startswith(check.__name__) and "case" in first
    assert "PASS" not in capsys.readouterr().out


@pytest.mark.parametrize("contract", CONTRACT[:1], ids=lambda c: c.check.__name__)
def test_stub_gets_not_done_yet(contract):
    def stub(*args):
        raise NotImplementedError

    with pytest.raises(AssertionError, match="not done yet"):
        contract.check(stub)


def test_every_check_has_a_contract():
    names = {name for name in dir(checks) if name.startswith("check_")}
    assert names == {c.check.__name__ for c in CONTRACT}


@pytest.mark.parametrize("path", SOLUTION_NOTEBOOKS, ids=lambda p: p.name)
def test_solution_notebook_passes(path, record_property):
    """The only run of each solution notebook in `make test`: it also reports the notebook's budget."""
    grade = grade_cells(path)
    failed = [r for r in grade.results if not r.passed]
    assert grade.rc == 0 and not failed and not grade.stopped, (failed, grade.stopped)
    assert [r.note for r in grade.checks] == [""] * len(grade.checks), "the solution holds the check cells as shipped"
    record_budget(record_property, path, grade)


@pytest.mark.slow
def test_unsolved_exercises_fail_only_at_their_checks():
    """Every exercise set as shipped, each as the grader assembles it (the course's check cells, its
    reset cells), run one after another in one kernel with the namespace reset between sets: one
    torch import for all of them instead of one per set. Each check fails with "not done yet" and no
    other cell raises. (The grader's own verdicts on whole notebooks are tested in test_grading.py and
    by the solution runs above.)"""
    manifest = load_manifest()
    cells, owners = [], []
    for path in EXERCISE_NOTEBOOKS:
        nb = read(path)
        name, variant = identify(nb, path, manifest)
        cells.append(nbformat.v4.new_code_cell("%reset -f\nimport matplotlib.pyplot\nmatplotlib.pyplot.close('all')"))
        owners.append((path.name, None))
        for slot in assemble(nb, manifest[name]["variants"][variant], "unsolved"):
            cells.append(slot.cell)
            owners.append((path.name, slot))
    result = run(nbformat.v4.new_notebook(cells=cells), EXERCISE_NOTEBOOKS[0].parent, cell_timeout=300, timeout=900)
    assert not result.stopped, result.stopped
    checks: dict[str, list[str]] = {p.name: [] for p in EXERCISE_NOTEBOOKS}
    for index, (notebook, slot) in enumerate(owners):
        error = result.cells[index].error
        if slot is not None and slot.check:
            checks[notebook].append(error)
        else:
            assert not error, f"{notebook}: a cell that is not a check raised {error}"
    for notebook, errors in checks.items():
        expected = sum(1 for c in read(EXERCISE_NOTEBOOKS[0].parent / notebook).cells if c.cell_type == "code" and check_name(c))
        assert len(errors) == expected >= 2, notebook
        assert all(e.startswith("AssertionError") and "not done yet" in e for e in errors), (notebook, errors)

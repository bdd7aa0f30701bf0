"""The grading contract: solutions pass, unsolved exercises fail at every check, and every check
accepts the reference answer and rejects plausible wrong ones.

A new lesson's checks join by adding ``tests/contracts/contract_NN.py`` with a ``CONTRACT`` list:
each check, a correct learner-style function, and at least three wrong ones named after the
mistake they make.
"""

from __future__ import annotations

import pytest
from contracts import all_contracts
from notebook_runs import EXERCISE_NOTEBOOKS, SOLUTION_NOTEBOOKS, record_budget

from ctxlab import checks
from ctxlab.course import check_name, grade_cells, read

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


@pytest.mark.parametrize("path", EXERCISE_NOTEBOOKS, ids=lambda p: p.name)
def test_exercise_notebook_fails_at_every_check(path):
    n_checks = sum(1 for c in read(path).cells if c.cell_type == "code" and check_name(c))
    grade = grade_cells(path)
    assert n_checks >= 2 and len(grade.checks) == n_checks
    assert grade.rc == 1 and not grade.stopped
    assert [r for r in grade.results if not r.check] == [], "only the checks fail"
    assert not any(r.passed for r in grade.checks)
    assert all("not done yet" in r.hint for r in grade.checks)

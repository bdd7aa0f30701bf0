"""The grading contract: solutions pass, unsolved exercises fail at every check, and every check
accepts the reference answer and rejects plausible wrong ones.

A new lesson's checks join by adding ``tests/contracts/contract_NN.py`` with a ``CONTRACT`` list:
each check, a correct learner-style function, and at least three wrong ones named after the
mistake they make.
"""

from __future__ import annotations

import time

import pytest
import torch
from contracts import all_contracts
from notebook_runs import EXERCISE_NOTEBOOKS, SOLUTION_NOTEBOOKS, record_budget, record_budget_of_many, run_in_one_kernel

from ctxlab import checks
from ctxlab.checks.core import is_stub
from ctxlab.course import check_name, grade_cells, read

CONTRACT = all_contracts()
WRONG = [(c.check, name, fn, c.hints.get(name)) for c in CONTRACT for name, fn in c.wrong.items()]


@pytest.mark.parametrize("contract", CONTRACT, ids=lambda c: c.check.__name__)
def test_reference_passes(contract, capsys):
    contract.check(contract.reference)
    assert capsys.readouterr().out.strip() == f"PASS {contract.check.__name__}"


@pytest.mark.parametrize("contract", CONTRACT, ids=lambda c: c.check.__name__)
def test_at_least_three_wrong_answers(contract):
    assert len(contract.wrong) >= 3


@pytest.mark.parametrize(("check", "mistake", "fn", "hint"), WRONG, ids=[f"{c.__name__}-{m}" for c, m, _, _ in WRONG])
def test_wrong_answer_is_rejected_with_a_hint(check, mistake, fn, hint, capsys):
    with pytest.raises(AssertionError) as err:
        check(fn)
    first = str(err.value).splitlines()[0]
    assert first.startswith(check.__name__) and "case" in first
    assert hint is None or hint in first, f"the hint for '{mistake}' should name it ('{hint}'): {first}"
    assert "PASS" not in capsys.readouterr().out


def test_every_named_hint_belongs_to_a_wrong_answer():
    assert all(set(c.hints) <= set(c.wrong) for c in CONTRACT)


@pytest.mark.parametrize("contract", CONTRACT, ids=lambda c: c.check.__name__)
def test_stub_gets_not_done_yet_at_once(contract):
    """Every check says "not done yet" to the shipped stub before it builds a case (some train models)."""

    def stub(*args):
        """As shipped."""
        raise NotImplementedError

    start = time.perf_counter()
    with pytest.raises(AssertionError, match=f"^{contract.check.__name__}: not done yet: stub still raises"):
        contract.check(stub)
    assert time.perf_counter() - start < 0.5


def test_only_the_bare_stub_is_told_not_done_yet_before_the_cases():
    def stub(tokens, V):
        pass
        raise NotImplementedError()

    def started(tokens, V):
        counts = torch.bincount(tokens, minlength=V)
        raise NotImplementedError(counts)

    def written(tokens, V):
        return torch.zeros(V, 2 * V)
        raise NotImplementedError  # left behind below the answer

    assert is_stub(stub) and not is_stub(started) and not is_stub(written)
    assert not is_stub(lambda tokens, V: None) and not is_stub(torch.zeros) and not is_stub(print)
    with pytest.raises(AssertionError, match="not done yet: started still raises"):  # found when the case calls it
        checks.check_10_bigram_signature(started)
    with pytest.raises(AssertionError, match="values differ") as err:
        checks.check_10_bigram_signature(written)
    assert "not done yet" not in str(err.value)


def test_every_check_has_a_contract():
    names = {name for name in dir(checks) if name.startswith("check_")}
    assert names == {c.check.__name__ for c in CONTRACT}


def test_the_grader_passes_a_solution_notebook(record_property):
    """One solution through `ctxlab grade` itself, start to end (the others run in one kernel below)."""
    path = SOLUTION_NOTEBOOKS[0]
    grade = grade_cells(path)
    failed = [r for r in grade.results if not r.passed]
    assert grade.rc == 0 and not failed and not grade.stopped, (failed, grade.stopped)
    assert [r.note for r in grade.checks] == [""] * len(grade.checks), "the solution holds the check cells as shipped"
    record_budget(record_property, path, grade)


def check_verdicts(paths) -> tuple[list[tuple[str, str, str, str]], dict, float]:
    """Run ``paths`` in one kernel (``run_in_one_kernel``) and check what is common to both uses: the
    run ends, every notebook ran exactly its own check cells and no other cell raised. Returns
    (notebook, check, error, stdout) per check cell, the per-notebook runs and the kernel's peak memory."""
    sets, stopped, peak_mb = run_in_one_kernel(paths)
    assert not stopped, stopped
    verdicts = []
    for path in paths:
        done = sets[path.name]
        expected = [check_name(c) for c in read(path).cells if c.cell_type == "code" and check_name(c)]
        assert list(done.checks) == expected and len(expected) >= 2, path.name
        assert done.errors == [], (path.name, done.errors)
        verdicts += [(path.name, check, error, stdout) for check, (error, stdout) in done.checks.items()]
    return verdicts, sets, peak_mb


@pytest.mark.slow
def test_every_solution_passes_every_check(record_property):
    """Every solution notebook, as the grader assembles it, in one kernel: each check prints its PASS
    line and no cell raises. The only run of the solutions in `make test`; the budget table shows them
    as one row (``benchmarks/notebook_budget.py`` times each on its own)."""
    verdicts, sets, peak_mb = check_verdicts(SOLUTION_NOTEBOOKS)
    for notebook, check, error, stdout in verdicts:
        assert not error and f"PASS {check}" in stdout.splitlines(), (notebook, check, error)
    record_budget_of_many(record_property, "solutions/*.ipynb (one kernel)", sets, peak_mb)


@pytest.mark.slow
def test_unsolved_exercises_fail_only_at_their_checks():
    """Every exercise set as shipped, in one kernel: each check fails with "not done yet" and no other
    cell raises. (The grader's verdicts on whole notebooks are tested in test_grading.py and above.)"""
    verdicts, _, _ = check_verdicts(EXERCISE_NOTEBOOKS)
    for notebook, check, error, _ in verdicts:
        assert error.startswith("AssertionError") and "not done yet" in error, (notebook, check, error)

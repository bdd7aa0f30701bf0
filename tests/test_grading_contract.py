"""The grading contract: solutions pass, unsolved exercises fail at every check, and every check
accepts the reference answer and rejects plausible wrong ones.

A new lesson's checks join by adding rows to ``CONTRACT``: the check, a correct learner-style
function, and at least three wrong ones named after the mistake they make.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import pytest
import torch
from notebook_runs import EXERCISE_NOTEBOOKS, SOLUTION_NOTEBOOKS, graded

from ctxlab import checks
from ctxlab.course import check_name, read
from ctxlab.signatures import conditional_entropy, interaction, joint, label_signature


@dataclass(frozen=True)
class Contract:
    check: Callable[[Callable], None]
    reference: Callable
    wrong: dict[str, Callable]


# --- lesson 01: references and typical mistakes ------------------------------------------------


def order1(data):
    return label_signature(data, 1, form="raw").matrix


def order1_blocks(data):
    return order1(data).reshape(data.vocab_size, data.seq_len, data.n_labels)


def joint_counts(data):
    """P(x_i = s) repeated over labels: [V, L*C]."""
    cols = [joint(data, (i,)).sum(-1, keepdim=True).expand(-1, data.n_labels) for i in range(data.seq_len)]
    return torch.cat(cols, dim=1)


def unweighted(data):
    from ctxlab.tasks import Dataset

    return Dataset(data.x, data.y, data.vocab_size, data.n_labels, torch.full((data.n,), 1.0 / data.n))


def entropy(data, positions):
    return conditional_entropy(data, tuple(positions))


def pair(data, i, j):
    return interaction(data, (i, j))


def pair_raw(data, i, j):
    p = joint(data, (i, j))
    return p / p.sum(-1, keepdim=True).clamp_min(1e-300)


def pair_without_p_y(data, i, j):
    occurs = joint(data, (i, j)).sum(-1, keepdim=True) > 0
    return pair(data, i, j) - joint(data, ()).reshape(1, 1, -1) * occurs


def pair_unmasked(data, i, j):
    V = data.vocab_size
    p_s = label_signature(data, 1, form="raw").matrix.double().reshape(V, data.seq_len, -1)
    p_st = pair_raw(data, i, j)
    return p_st - p_s[:, None, i] - p_s[None, :, j] + joint(data, ()).reshape(1, 1, -1)


CONTRACT = [
    Contract(
        checks.check_01_order1_signature,
        reference=order1,
        wrong={
            "transposed": lambda d: order1(d).T,
            "label-major columns": lambda d: order1_blocks(d).transpose(1, 2).reshape(d.vocab_size, -1),
            "joint instead of conditional": lambda d: order1(d) * joint_counts(d),
            "zeros where the token is absent": lambda d: order1(d) * (joint_counts(d) > 0),
            "ignores weights": lambda d: order1(unweighted(d)),
            "off by one order (order 0 only)": lambda d: label_signature(d, 0, form="raw").matrix.repeat(1, d.seq_len),
        },
    ),
    Contract(
        checks.check_01_conditional_entropy,
        reference=entropy,
        wrong={
            "base-2 log": lambda d, S: entropy(d, S) / math.log(2),
            "wrong sign": lambda d, S: -entropy(d, S),
            "joint entropy": lambda d, S: float(-(joint(d, S)[joint(d, S) > 0] * joint(d, S)[joint(d, S) > 0].log()).sum()),
            "ignores the positions": lambda d, S: entropy(d, ()),
            "ignores weights": lambda d, S: entropy(unweighted(d), S),
            "off by one order": lambda d, S: entropy(d, tuple(S)[:-1]),
        },
    ),
    Contract(
        checks.check_01_pair_interaction,
        reference=pair,
        wrong={
            "axes swapped": lambda d, i, j: pair(d, i, j).transpose(0, 1),
            "raw P(y | s, t)": pair_raw,
            "forgot + P(y)": pair_without_p_y,
            "not masked": pair_unmasked,
            "positions swapped": lambda d, i, j: pair(d, j, i),
        },
    ),
    Contract(
        checks.check_01_distinct_rows,
        reference=checks.count_distinct_rows,
        wrong={
            "distinct columns": lambda m, atol: checks.count_distinct_rows(m.T, atol),
            "exact unique": lambda m, atol: len(torch.unique(m, dim=0)),
            "number of rows": lambda m, atol: m.shape[0],
            "rounded to 2 decimals": lambda m, atol: len(torch.unique(torch.round(m, decimals=2), dim=0)),
        },
    ),
]

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
def test_solution_notebook_passes_nbval(path):
    rc, results = graded(path)
    failed = [r for r in results if not r.passed]
    assert rc == 0 and not failed, failed


@pytest.mark.parametrize("path", EXERCISE_NOTEBOOKS, ids=lambda p: p.name)
def test_exercise_notebook_fails_at_every_check(path):
    n_checks = sum(1 for c in read(path).cells if c.cell_type == "code" and check_name(c))
    rc, results = graded(path)
    assert n_checks >= 4
    assert rc == 1
    assert [r.check for r in results if not r.passed] == [r.check for r in results if r.check]
    assert len([r for r in results if r.check and not r.passed]) == n_checks
    assert all("not done yet" in r.hint for r in results if r.check)

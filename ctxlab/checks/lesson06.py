"""Checks for the exercises of lesson 06 (the next stair: the residual pair statistic)."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from ctxlab.checks.core import (
    HARD_LABELS_HINT,
    Case,
    Diagnosis,
    all_close,
    as_tensor,
    hard_labels,
    reweighted,
    run_check,
    tensor_close,
)
from ctxlab.signatures import conditional_entropy, interaction, joint
from ctxlab.dataset import Dataset
from ctxlab.tasks import hierarchy_task, xor_task
from ctxlab.theory import pair_residual


def _probs(data: Dataset, seed: int, order1: bool = False) -> Tensor:
    """Predictions to take residuals of: random softmax rows, or the order-1 optimum P(y | x_0)."""
    if order1:
        table = joint(data, (0,))
        cond = table / table.sum(-1, keepdim=True).clamp_min(1e-300)
        return cond[data.x[:, 0]].float()
    g = torch.Generator().manual_seed(seed)
    return torch.softmax(torch.randn(data.n, data.n_labels, generator=g), dim=-1)


# --- exercise 1: the residual pair statistic ---------------------------------------------------


def _residual_cases() -> list[Case]:
    h = hierarchy_task().population
    x = xor_task(vocab=8, groups=2).population
    specs = [
        ("hierarchy, order-1 optimum, positions (0, 1)", h, 1, True, 0, 1, False),
        ("hierarchy, random predictions, positions (1, 2)", h, 2, False, 1, 2, True),
        ("hierarchy with random weights, positions (2, 0)", reweighted(h, 3), 3, False, 2, 0, True),
        ("xor task, sampled data (integer labels), positions (0, 1)", xor_task().sample(500, seed=4), 4, False, 0, 1, True),
        ("small xor task, order-1 optimum, positions (0, 2)", x, 5, True, 0, 2, True),
    ]  # fmt: skip
    cases = []
    for label, data, seed, order1, i, j, hidden in specs:
        p = _probs(data, seed, order1)
        cases.append(Case(label, (data, p, i, j), pair_residual(data, p, i, j), hidden))
    return cases


def check_06_pair_residual(fn: Callable[[Dataset, Tensor, int, int], Tensor]) -> None:
    """fn(data, probs, i, j) -> [V, V, C]: E[e_y - p | x_i = s, x_j = t], 0 where (s, t) never occurs."""

    def joint_not_conditional(g: Any, e: Tensor, c: Case) -> bool:
        data = c.args[0]
        mass = joint(data, (min(c.args[2:]), max(c.args[2:]))).sum(-1)
        mass = mass if c.args[2] < c.args[3] else mass.T
        return all_close(g, e * mass[..., None], 1e-6)

    def ignores_weights(g: Any, e: Tensor, c: Case) -> bool:
        data, p, i, j = c.args
        flat = Dataset(data.x, data.y, data.vocab_size, data.n_labels, torch.full((data.n,), 1.0 / data.n))
        return not all_close(e, pair_residual(flat, p, i, j)) and all_close(g, pair_residual(flat, p, i, j))

    diagnoses = [
        Diagnosis(lambda g, e, c: all_close(g, -e), "sign flipped: the residual is e_y - p (target minus prediction)"),
        Diagnosis(joint_not_conditional, "you summed instead of averaging: divide by P(x_i = s, x_j = t) to get a conditional mean"),
        Diagnosis(ignores_weights, "weight each row by data.weights (the population probability), not 1/N"),
        Diagnosis(lambda g, e, c: all_close(g, pair_residual(hard_labels(c.args[0]), *c.args[1:])), HARD_LABELS_HINT),
        Diagnosis(lambda g, e, c: all_close(as_tensor(g).transpose(0, 1), e) and not all_close(g, e),
                  "axes swapped: the first axis is the token at position i, the second the token at position j"),
    ]  # fmt: skip
    run_check("check_06_pair_residual", fn, _residual_cases(), tensor_close(1e-4), diagnoses)


# --- exercise 2: which position pairs separate next --------------------------------------------


def splitting_pairs(data: Dataset, tol: float = 1e-6) -> list[tuple[int, int]]:
    """Position pairs (i < j) whose incremental pair signature Delta S^2 is not zero (reference)."""
    pairs = itertools.combinations(range(data.seq_len), 2)
    return [(i, j) for i, j in pairs if float(interaction(data, (i, j)).abs().max()) > tol]


def raw_pairs(data: Dataset) -> list[tuple[int, int]]:
    """Pairs whose raw table P(y | x_i, x_j) differs from P(y): what testing the raw table instead of the increment finds."""
    out = []
    for i, j in itertools.combinations(range(data.seq_len), 2):
        table = joint(data, (i, j))
        cond = table / table.sum(-1, keepdim=True).clamp_min(1e-300)
        py = table.sum((0, 1)) / table.sum()
        if float(((cond - py) * (table.sum(-1, keepdim=True) > 0)).abs().max()) > 1e-6:
            out.append((i, j))
    return out


def pair_term_population(L: int, V: int, terms: list[tuple[tuple[int, ...], float]],
                         position_weights: list[Tensor] | None = None) -> Dataset:
    """The full population of L positions over V tokens with two labels: each term (positions, weight) puts
    ``weight`` on the label A(x_i) + ... mod 2 (A = token mod 2), the constant label 0 takes the rest.
    Positions stay independent (uniform weights, or a product of per-position weights), so exactly the
    pairs of the pair terms carry information beyond order 1."""
    x = torch.cartesian_prod(*[torch.arange(V)] * L).reshape(-1, L)
    y = torch.zeros(len(x), 2, dtype=torch.float64)
    y[:, 0] = 1.0
    for positions, weight in terms:
        y[:, 0] -= weight
        y[torch.arange(len(x)), (x[:, list(positions)] % 2).sum(1) % 2] += weight
    if bool((y < 0).any()):
        raise ValueError("the terms' weights must sum to at most 1")
    w = torch.ones(len(x), dtype=torch.float64)
    for i, per_token in enumerate(position_weights or []):
        w = w * torch.as_tensor(per_token, dtype=torch.float64)[x[:, i]]
    return Dataset(x, y.float(), V, 2, (w / w.sum()).float())


def _permuted(data: Dataset, order: list[int]) -> Dataset:
    return Dataset(data.x[:, order], data.y, data.vocab_size, data.n_labels, data.weights)


def _pairs_cases() -> list[Case]:
    specs = [
        ("hierarchy task (defaults)", hierarchy_task().population, False),
        ("hierarchy task, positions shuffled to (2, 0, 1)", _permuted(hierarchy_task().population, [2, 0, 1]), True),
        ("hierarchy task with 4 positions", hierarchy_task(mix=(0.25, 0.25, 0.25, 0.25)).population, True),
        ("xor task", xor_task().population, True),
        ("hierarchy task with no order-2 term", hierarchy_task(mix=(0.5, 0.0, 0.5)).population, True),
        ("positions 0 and 3 informative alone, one pair term on (1, 2)",
         pair_term_population(4, 2, [((0,), 0.3), ((3,), 0.3), ((1, 2), 0.2)]), True),
        ("a strong pair term on (0, 1) and a weak one (weight 0.001) on (1, 3)",
         pair_term_population(4, 2, [((0, 1), 0.5), ((1, 3), 0.001)], [[1.0, 3.0]] * 4), True),
    ]  # fmt: skip
    return [Case(label, (data,), splitting_pairs(data), hidden) for label, data, hidden in specs]


def _as_pairs(value: Any) -> list[tuple[int, int]] | None:
    try:
        return sorted(tuple(sorted(int(a) for a in p)) for p in value)
    except Exception:
        return None


def _entropy_drop(data: Dataset, pair: tuple[int, int]) -> bool:
    i, j = pair
    return conditional_entropy(data, (i, j)) < min(conditional_entropy(data, (i,)), conditional_entropy(data, (j,))) - 1e-9


def check_06_next_pairs(fn: Callable[[Dataset], list[tuple[int, int]]]) -> None:
    """fn(data) -> list of position pairs (i, j), i < j, that carry label information beyond order 1."""

    def compare(got: Any, expected: list[tuple[int, int]]) -> str | None:
        pairs = _as_pairs(got)
        if pairs is None:
            return f"expected a list of (i, j) pairs, got {type(got).__name__}"
        if pairs != sorted(expected):
            return f"expected the pairs {sorted(expected)}, got {pairs}"
        return None

    def all_pairs(g: Any, e: Any, c: Case) -> bool:
        return _as_pairs(g) == list(itertools.combinations(range(c.args[0].seq_len), 2))

    def only(pairs: Callable[[int], list[tuple[int, int]]]) -> Callable[[Any, Any, Case], bool]:
        return lambda g, e, c: _as_pairs(g) == pairs(c.args[0].seq_len) and sorted(e) != pairs(c.args[0].seq_len)

    diagnoses = [
        Diagnosis(only(lambda L: [(i, i + 1) for i in range(L - 1)]),
                  "you looked only at neighbouring positions: any two positions i < j can carry a pair term; test every pair"),
        Diagnosis(lambda g, e, c: _as_pairs(g) == _as_pairs(raw_pairs(c.args[0])) and sorted(e) != _as_pairs(raw_pairs(c.args[0])),
                  "a pair whose raw table P(y | x_i, x_j) is informative only through one of its tokens adds nothing "
                  "beyond order 1: test the incremental signature (ctxlab.signatures.interaction), not the raw table"),
        Diagnosis(only(lambda L: [(0, j) for j in range(1, L)]),
                  "you assumed the key sits at position 0: the positions may come in any order; test every pair i < j"),
        Diagnosis(lambda g, e, c: set(_as_pairs(g) or []) < set(e)
                  and all(float(interaction(c.args[0], p).abs().max()) < 1e-2 for p in set(e) - set(_as_pairs(g))),
                  "a weak pair term is still a pair term: keep every pair whose largest |Delta S^2| entry is above a "
                  "tolerance of about 1e-6 (rounding noise), not only the clearly large ones"),
        Diagnosis(lambda g, e, c: set(_as_pairs(g) or []) > set(e) and all(_entropy_drop(c.args[0], p) for p in _as_pairs(g)),
                  "H(Y | x_i, x_j) also drops below both single positions when each position is informative on its own: "
                  "test the incremental signature Delta S^2, which is zero unless the pair itself adds a term"),
        Diagnosis(all_pairs, "not every pair carries new information: keep only pairs whose *incremental* signature "
                             "Delta S^2 = P(y|s,t) - P(y|s) - P(y|t) + P(y) is non-zero"),
        Diagnosis(lambda g, e, c: set(e) < set(_as_pairs(g) or []),
                  "too many pairs: a pair whose joint table P(y | x_i, x_j) is informative only through one of its "
                  "tokens adds nothing beyond order 1; use the Moebius increment (ctxlab.signatures.interaction)"),
    ]  # fmt: skip
    run_check("check_06_next_pairs", fn, _pairs_cases(), compare, diagnoses)

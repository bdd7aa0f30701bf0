"""Checks for the exercises of lesson 01 (probability signatures)."""

from __future__ import annotations

import math
from typing import Any, Callable

import torch
from torch import Tensor

from ctxlab.checks.core import (
    HARD_LABELS_HINT,
    Case,
    Diagnosis,
    all_close,
    as_tensor,
    hard_labels,
    integer_equal,
    number_close,
    reweighted,
    run_check,
    tensor_close,
)
from ctxlab.signatures import conditional_entropy, interaction, joint, label_signature
from ctxlab.dataset import Dataset
from ctxlab.tasks import hierarchy_task, xor_task


def _hierarchy() -> Dataset:
    return hierarchy_task().population


def _datasets() -> list[tuple[str, Dataset, bool]]:
    """(label, dataset, hidden) triples shared by the lesson-01 checks."""
    return [
        ("hierarchy task, exact population", _hierarchy(), False),
        ("xor task, exact population", xor_task().population, True),
        ("hierarchy task, 3000 samples (integer labels)", hierarchy_task().sample(3000, seed=1), True),
        ("hierarchy task with random weights", reweighted(_hierarchy(), seed=2), True),
        ("binary hierarchy, block 4, two orders", hierarchy_task(block=4, n_values=2, mix=(0.7, 0.3)).population, True),
        ("xor task, V=8, L=4, 600 samples", xor_task(vocab=8, groups=2, seq_len=4).sample(600, seed=3), True),
    ]


# --- lesson 01 ---------------------------------------------------------------------------------


def _order1_reference(data: Dataset) -> Tensor:
    return label_signature(data, order=1, form="raw").matrix


def check_01_order1_signature(fn: Callable[[Dataset], Tensor]) -> None:
    """fn(data) -> [V, L*C]: P(y | x_i = s) in column i*C + y; P(y) where s never sits at i."""
    cases = [Case(label, (data,), _order1_reference(data), hidden) for label, data, hidden in _datasets()]

    def position_blocks(t: Tensor, data: Dataset) -> Tensor:
        return as_tensor(t).double().reshape(data.vocab_size, data.seq_len, data.n_labels)

    def label_major(got, exp, case) -> bool:
        d = case.args[0]
        swapped = exp.reshape(d.vocab_size, d.seq_len, d.n_labels).transpose(1, 2).reshape(d.vocab_size, -1)
        return all_close(got, swapped)

    def joint_not_conditional(got, exp, case) -> bool:
        sums = position_blocks(got, case.args[0]).sum(-1)
        return not torch.allclose(sums, torch.ones_like(sums), atol=1e-3)

    def zeros_for_absent(got, exp, case) -> bool:
        d = case.args[0]
        g, e = position_blocks(got, d), position_blocks(exp, d)
        empty = g.sum(-1) < 1e-6
        return bool(empty.any()) and torch.allclose(g[~empty], e[~empty], atol=1e-4)

    diagnoses = [
        Diagnosis(lambda g, e, c: all_close(as_tensor(g).T, e), "looks transposed: rows are tokens [V], columns (position, label) [L*C]"),
        Diagnosis(label_major, "columns in the wrong order: put position i's labels together, column i*C + y"),
        Diagnosis(zeros_for_absent, "where token s never sits at position i, fill in P(y) (the order-0 signature), not 0"),
        Diagnosis(joint_not_conditional, "each (token, position) block must sum to 1 over labels: divide the weighted counts by P(x_i = s)"),
        Diagnosis(lambda g, e, c: all_close(g, _order1_reference(hard_labels(c.args[0]))), HARD_LABELS_HINT),
        Diagnosis(lambda g, e, c: all_close(g, _order1_reference(_uniform(c.args[0]))), "you ignored data.weights: weight each row's label distribution by its weight"),
    ]  # fmt: skip
    run_check("check_01_order1_signature", fn, cases, tensor_close(atol=1e-5), diagnoses)


def _uniform(data: Dataset) -> Dataset:
    return Dataset(data.x, data.y, data.vocab_size, data.n_labels, torch.full((data.n,), 1.0 / data.n))


def _joint_entropy(data: Dataset, positions: tuple[int, ...]) -> float:
    p = joint(data, positions).flatten()
    return float(-(p[p > 0] * p[p > 0].log()).sum())


def check_01_conditional_entropy(fn: Callable[[Dataset, tuple[int, ...]], float]) -> None:
    """fn(data, positions) -> H(Y | X_positions) in nats, a Python float or 0-d tensor."""
    visible = [((), False), ((0,), False), ((0, 1), False), ((0, 1, 2), False), ((1,), True), ((2, 0), True)]
    cases = [
        Case(f"hierarchy task, positions {S}", (_hierarchy(), S), conditional_entropy(_hierarchy(), S), hidden)
        for S, hidden in visible
    ]
    for label, data, hidden in _datasets()[1:]:
        for S in ((0,), (1, 0)):
            cases.append(Case(f"{label}, positions {S}", (data, S), conditional_entropy(data, S), True))

    def is_(value: Callable[[Case], float]) -> Callable[[Any, Any, Case], bool]:
        return lambda g, e, c: abs(float(g) - value(c)) < 1e-3 and abs(float(g) - e) > 1e-3

    diagnoses = [
        Diagnosis(is_(lambda c: c.expected / math.log(2)), "that is in bits: use the natural logarithm (nats), as the cross-entropy loss does"),
        Diagnosis(is_(lambda c: -c.expected), "wrong sign: entropy is -sum p log p, a non-negative number"),
        Diagnosis(is_(lambda c: _joint_entropy(c.args[0], tuple(c.args[1]))), "that is the joint entropy H(Y, X_S): use P(y | x_S), not P(x_S, y), inside the log"),
        Diagnosis(is_(lambda c: conditional_entropy(c.args[0], ())), "that is H(Y): condition on the tokens at the given positions"),
        Diagnosis(is_(lambda c: conditional_entropy(hard_labels(c.args[0]), tuple(c.args[1]))), HARD_LABELS_HINT),
        Diagnosis(is_(lambda c: conditional_entropy(_uniform(c.args[0]), tuple(c.args[1]))), "you ignored data.weights: each row counts with its weight"),
    ]  # fmt: skip
    run_check("check_01_conditional_entropy", fn, cases, number_close(atol=1e-4), diagnoses)


def check_01_pair_interaction(fn: Callable[[Dataset, int, int], Tensor]) -> None:
    """fn(data, i, j) -> [V, V, C]: P(y|s,t) - P(y|x_i=s) - P(y|x_j=t) + P(y); 0 where (s, t) never occurs."""
    h, x = _hierarchy(), xor_task().population
    specs = [
        ("hierarchy task", h, 0, 1, False),
        ("hierarchy task", h, 1, 0, True),
        ("hierarchy task", h, 0, 2, True),
        ("xor task", x, 0, 1, True),
        ("xor task", x, 1, 2, True),
        ("hierarchy task with random weights", reweighted(h, seed=4), 0, 1, True),
        ("hierarchy task, 3000 samples", hierarchy_task().sample(3000, seed=5), 1, 2, True),
        ("hierarchy task, 150 samples (tokens that occur alone but never together)", hierarchy_task().sample(150, seed=5), 1, 2, True),
    ]
    cases = [Case(f"{label}, (i, j) = ({i}, {j})", (d, i, j), interaction(d, (i, j)), hidden) for label, d, i, j, hidden in specs]

    def raw(c: Case) -> Tensor:
        d, i, j = c.args
        p = joint(d, (i, j))
        return p / p.sum(-1, keepdim=True).clamp_min(1e-300)

    def p_y(c: Case) -> Tensor:
        return joint(c.args[0], ()).reshape(1, 1, -1)

    def occurs(c: Case) -> Tensor:
        d, i, j = c.args
        return joint(d, (i, j)).sum(-1, keepdim=True) > 0

    def marginal_mask(g, e, c) -> bool:
        d, i, j = c.args
        alone = (joint(d, (i,)).sum(-1) > 0)[:, None] & (joint(d, (j,)).sum(-1) > 0)[None, :]
        unmasked = raw(c) - _order1_reference(d).double().reshape(d.vocab_size, d.seq_len, -1)[:, None, i] \
            - _order1_reference(d).double().reshape(d.vocab_size, d.seq_len, -1)[None, :, j] + p_y(c)
        return not all_close(e, unmasked * alone[..., None]) and all_close(g, unmasked * alone[..., None])

    diagnoses = [
        Diagnosis(marginal_mask, "your mask says (s, t) occurs when s occurs at i and t occurs at j, each on its own; on sampled "
                                 "data a pair can be missing although both tokens occur: mask with the joint count P(x_i = s, x_j = t) > 0"),
        Diagnosis(lambda g, e, c: all_close(as_tensor(g).transpose(0, 1), e), "axes swapped: axis 0 is the token at position i, axis 1 the token at position j"),
        Diagnosis(lambda g, e, c: all_close(g, raw(c)), "that is P(y | x_i = s, x_j = t) itself: subtract both order-1 terms and add back P(y)"),
        Diagnosis(lambda g, e, c: all_close(g, e - p_y(c) * occurs(c)), "forgot to add back P(y): inclusion-exclusion has four terms"),
        Diagnosis(lambda g, e, c: all_close(as_tensor(g) * occurs(c), e) and not all_close(g, e), "set the term to 0 where the pair (s, t) never occurs at positions (i, j)"),
    ]  # fmt: skip
    run_check("check_01_pair_interaction", fn, cases, tensor_close(atol=1e-5), diagnoses)


def count_distinct_rows(matrix: Tensor, atol: float) -> int:
    """Reference: rows closer than ``atol`` in every entry count as one (greedy over rows)."""
    return _greedy_count(matrix, atol, lambda row, kept, tol: float((row - kept).abs().max()) <= tol)


def _rows_with_duplicates(seed: int, n_distinct: int, n_rows: int, n_cols: int, jitter: float) -> Tensor:
    g = torch.Generator().manual_seed(seed)
    base = torch.rand(n_distinct, n_cols, generator=g, dtype=torch.float64)
    pick = torch.cat([torch.arange(n_distinct), torch.randint(n_distinct, (n_rows - n_distinct,), generator=g)])
    return base[pick] + jitter * torch.randn(n_rows, n_cols, generator=g, dtype=torch.float64)


def _adjacent_groups(matrix: Tensor, atol: float) -> int:
    m = matrix.double()
    return 1 + sum(int((m[k] - m[k - 1]).abs().max() > atol) for k in range(1, m.shape[0]))


def _greedy_count(matrix: Tensor, atol: float, same: Callable[[Tensor, Tensor, float], bool]) -> int:
    """count_distinct_rows with another relation ``same(row, kept, atol)``: what a diagnosis compares with."""
    kept: list[Tensor] = []
    for row in matrix.double():
        if not any(same(row, k, atol) for k in kept):
            kept.append(row)
    return len(kept)


def check_01_distinct_rows(fn: Callable[[Tensor, float], int]) -> None:
    """fn(matrix, atol) -> how many different rows, two rows being equal when within ``atol`` entrywise."""
    h = _hierarchy()
    sig1 = label_signature(h, 1, form="raw").matrix
    sig2 = label_signature(h, 2, form="incremental").matrix
    close_but_distinct = torch.tensor([[0.0, 0.5], [0.001, 0.5], [0.0, 0.5]], dtype=torch.float64)
    # pairs 2e-10 apart on either side of a grid line of 1e-6 (at 0.25 + 0.5e-6 and at 0.25): one group each
    straddling = torch.tensor([[0.25 + 0.5e-6 - 1e-10, 0.7], [0.1, 0.25 - 1e-10], [0.25 + 0.5e-6 + 1e-10, 0.7],
                               [0.1, 0.25 + 1e-10]], dtype=torch.float64)
    apart_3e4 = torch.tensor([[0.1, 0.2], [0.1003, 0.2], [0.1, 0.2002], [0.1, 0.2]], dtype=torch.float64)
    loose = torch.tensor([[0.3, 0.3], [0.304, 0.3], [0.6, 0.1], [0.6, 0.097], [0.9, 0.0]], dtype=torch.float64)
    # 3 atol apart at scale 0.5, which a relative tolerance of 1e-5 (5 atol there) would merge
    apart_at_scale = torch.tensor([[0.5, 0.2], [0.500003, 0.2]], dtype=torch.float64)
    # 0.8 atol apart in every entry: equal entrywise, 1.39 atol apart in Euclidean distance
    near_in_every_entry = torch.tensor([[0.1, 0.2, 0.3], [0.1 + 8e-7, 0.2 + 8e-7, 0.3 - 8e-7]], dtype=torch.float64)
    inputs = [
        ("order-1 signature of the key tokens", sig1[:9], 1e-6, False),
        ("order-1 signature of all 27 tokens", sig1, 1e-6, True),
        ("order-2 incremental signature of the anchor-1 tokens", sig2[9:18], 1e-6, True),
        ("5 x 40 matrix, 3 distinct rows, jitter 1e-9", _rows_with_duplicates(0, 3, 5, 40, 1e-9), 1e-6, True),
        ("12 x 4 matrix, 7 distinct rows", _rows_with_duplicates(1, 7, 12, 4, 0.0), 1e-6, True),
        ("rows 0.001 apart, atol 1e-6", close_but_distinct, 1e-6, True),
        ("rows 2e-10 apart on either side of a multiple of 1e-6 (or of one half of it)", straddling, 1e-6, True),
        ("rows 2e-4 and 3e-4 apart, atol 1e-6", apart_3e4, 1e-6, True),
        ("rows 0.004 apart, atol 0.01", loose, 0.01, True),
        ("rows 3e-6 apart near 0.5, atol 1e-6", apart_at_scale, 1e-6, True),
        ("rows 8e-7 apart in each of 3 entries, atol 1e-6", near_in_every_entry, 1e-6, True),
    ]
    cases = [Case(label, (m, atol), count_distinct_rows(m, atol), hidden) for label, m, atol, hidden in inputs]

    def on_a_grid(g, e, c) -> bool:
        m, atol = c.args[0].double(), c.args[1]
        grids = [torch.round(m / (atol * scale)) for scale in (1, 2, 10, 100, 1000, 1e4)]
        grids += [torch.floor(m / (atol * scale)) for scale in (1, 10, 100, 1000)]
        grids += [torch.round(m, decimals=k) for k in range(1, 10)]
        return any(int(g) == len(torch.unique(q, dim=0)) for q in grids)

    def greedy(same: Callable[[Tensor, Tensor, float], bool]) -> Callable[[Any, Any, Case], bool]:
        return lambda g, e, c: int(g) == _greedy_count(c.args[0], c.args[1], same) != e

    diagnoses = [
        Diagnosis(lambda g, e, c: c.args[1] != 1e-6 and int(g) == count_distinct_rows(c.args[0], 1e-6), "use the atol you are given, not a fixed 1e-6"),
        Diagnosis(greedy(lambda a, b, atol: bool(torch.isclose(a, b, atol=atol).all())),
                  "torch.isclose's default relative tolerance (rtol 1e-5) merges rows that differ by more than atol at this scale: "
                  "compare with the absolute tolerance alone"),
        Diagnosis(greedy(lambda a, b, atol: float((a - b).norm()) <= atol),
                  "that is the Euclidean distance between rows: rows are equal when EVERY entry differs by at most atol "
                  "(the largest entrywise difference), however many entries differ"),
        Diagnosis(lambda g, e, c: int(g) == count_distinct_rows(c.args[0].T, c.args[1]), "you counted distinct columns: count rows (one per token)"),
        Diagnosis(lambda g, e, c: int(g) == len(torch.unique(c.args[0], dim=0)), "exact comparison: floating-point rows that agree within atol count as one"),
        Diagnosis(lambda g, e, c: int(g) == c.args[0].shape[0], "you returned the number of rows: merge rows that are equal within atol (compare each row with every "
                                                                  "group kept so far, not only with its neighbour)"),
        Diagnosis(lambda g, e, c: int(g) == _adjacent_groups(*c.args), "you compared each row only with the row just before it: "
                                                                       "equal rows need not be neighbours; compare each row with every group kept so far"),
        Diagnosis(on_a_grid, "rounding to a grid is not 'equal within atol': two rows 1e-10 apart can sit on either side of a grid line, "
                             "and a coarse grid merges rows that differ by more than atol; compare rows pairwise, max |a - b| <= atol"),
    ]  # fmt: skip
    run_check("check_01_distinct_rows", fn, cases, integer_equal(), diagnoses)

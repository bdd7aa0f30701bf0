"""Lesson 01: reference answers and typical mistakes for each check."""

from __future__ import annotations

import itertools
import math

import torch

from contracts import Contract
from ctxlab import checks
from ctxlab.checks.core import hard_labels
from ctxlab.checks.lesson01 import _adjacent_groups
from ctxlab.signatures import conditional_entropy, interaction, joint, label_signature


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


def pair_marginal_mask(data, i, j):
    """Masks with P(x_i = s) > 0 and P(x_j = t) > 0 instead of the joint P(x_i = s, x_j = t) > 0."""
    alone = (joint(data, (i,)).sum(-1) > 0)[:, None] & (joint(data, (j,)).sum(-1) > 0)[None, :]
    return pair_unmasked(data, i, j) * alone[..., None]


def grid_groups(m, atol, scale=1.0, rounding=torch.round):
    return len(torch.unique(rounding(m.double() / (atol * scale)), dim=0))


def greedy_groups(m, atol, same):
    """Rows kept one representative per group, as the reference does, under another relation ``same``."""
    kept = []
    for row in m.double():
        if not any(same(row, k, atol) for k in kept):
            kept.append(row)
    return len(kept)


def isclose_default_rtol(m, atol):
    return greedy_groups(m, atol, lambda a, b, tol: bool(torch.isclose(a, b, atol=tol).all()))


def euclidean_within_atol(m, atol):
    return greedy_groups(m, atol, lambda a, b, tol: float((a - b).norm()) <= tol)


# --- the build exercise: every order's increment, their Gram matrix, the ladder's budget --------------


def _rows_key(data, T):
    """Each row's context at positions T as one integer (base V): what a learner indexes a table by."""
    key = torch.zeros(data.n, dtype=torch.long)
    for p in T:
        key = key * data.vocab_size + data.x[:, p]
    return key


def learner_conditional(data, T, weighted=True, hard=False, nan=False):
    """P(y | x_T) at every row [N, C] as a learner counts it, and whether x_T carries mass [N, 1]."""
    labels = torch.nn.functional.one_hot(data.targets().argmax(-1), data.n_labels).double() if hard else data.targets().double()
    w = data.weights.double() if weighted else torch.full((data.n,), 1.0 / data.n, dtype=torch.float64)
    key = _rows_key(data, T)
    table = torch.zeros(data.vocab_size ** len(T), data.n_labels, dtype=torch.float64).index_add_(0, key, w[:, None] * labels)
    total = table.sum(1, keepdim=True)
    cond = table / total if nan else table / total.clamp_min(1e-300)
    return cond[key], (total > 0)[key]


def learner_increment(data, positions, sign=lambda k, r: (-1) ** (k - r), keep=lambda k, r: True, mask=True, **counting):
    S = tuple(positions)
    delta = torch.zeros(data.n, data.n_labels, dtype=torch.float64)
    for r in range(len(S) + 1):
        for T in itertools.combinations(S, r):
            if keep(len(S), r):
                delta = delta + sign(len(S), r) * learner_conditional(data, T, **counting)[0]
    return delta * learner_conditional(data, S, **counting)[1] if mask else delta


def learner_sets(L):
    return [S for k in range(1, L + 1) for S in itertools.combinations(range(L), k)]


def learner_gram(data, term=learner_increment, sets=learner_sets, weighted=True, labels="sum"):
    terms = torch.stack([term(data, S) for S in sets(data.seq_len)])
    w = data.weights.double() if weighted else torch.full((data.n,), 1.0 / data.n, dtype=torch.float64)
    gram = torch.einsum("anc,bnc,n->ab", terms, terms, w)
    return gram / data.n_labels if labels == "mean" else gram


def centred_raw(data, S):
    return learner_conditional(data, tuple(S))[0] - learner_conditional(data, ())[0]


def cosine_gram(data):
    gram = learner_gram(data)
    norm = torch.diag(gram).clamp_min(1e-300).sqrt()
    return gram / norm[:, None] / norm[None, :]


def learner_budget(data, rungs, entropy_scale=1.0, level=False, signal="block", pieces="inside", weighted=True, centre=True,
                   count_weighted=True):
    """The three columns as a learner reads them off the Gram matrix, with one reading changed."""
    gram = learner_gram(data)
    sets = learner_sets(data.seq_len)
    top = conditional_entropy(data, ())
    rows = []
    for S in rungs:
        inside = [a for a, T in enumerate(sets) if set(T) <= set(S)]
        block = gram[inside][:, inside]
        drop = conditional_entropy(data, tuple(S)) if level else top - conditional_entropy(data, tuple(S))
        counted = [learner_conditional(data, T, weighted=count_weighted)[0] for T in (tuple(S), ())]
        centred = counted[0] - (counted[1] if centre else 0.0)
        w = data.weights.double() if weighted else torch.full((data.n,), 1.0 / data.n, dtype=torch.float64)
        direct = float(torch.einsum("nc,nc,n->", centred, centred, w))
        chosen = {"own": [a for a, T in enumerate(sets) if set(T) == set(S)],
                  "up to |S|": [a for a, T in enumerate(sets) if len(T) <= len(S)]}.get(pieces, inside)
        size_sum = float(gram.diagonal()[chosen].sum())
        column1 = {"block": float(block.sum()), "direct": direct, "pieces": size_sum, "mean": float(block.sum()) / data.n_labels}[signal]
        column2 = float(block.sum()) if pieces == "block" else size_sum
        rows.append([drop / entropy_scale, column1, column2])
    return torch.tensor(rows, dtype=torch.float64).reshape(len(rungs), 3)


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
            "one label per row (argmax), not the distribution": lambda d: order1(hard_labels(d)),
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
            "one label per row (argmax), not the distribution": lambda d, S: entropy(hard_labels(d), S),
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
            "pair mask from the two marginals": pair_marginal_mask,
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
            "rounded to a grid of atol": grid_groups,
            "floored to a grid of atol": lambda m, atol: grid_groups(m, atol, rounding=torch.floor),
            "rounded to a grid 1000 x atol": lambda m, atol: grid_groups(m, atol, 1000.0),
            "adjacent rows only": _adjacent_groups,
            "fixed atol 1e-6": lambda m, atol: checks.count_distinct_rows(m, 1e-6),
            "torch.isclose with its default rtol": isclose_default_rtol,
            "Euclidean distance <= atol": euclidean_within_atol,
        },
        hints={
            "torch.isclose with its default rtol": "default relative tolerance",
            "Euclidean distance <= atol": "Euclidean distance",
        },
    ),
    Contract(
        checks.check_01_increment_on_rows,
        reference=learner_increment,
        wrong={
            "no alternating signs": lambda d, S: learner_increment(d, S, sign=lambda k, r: 1),
            "(-1)^|T| signs": lambda d, S: learner_increment(d, S, sign=lambda k, r: (-1) ** r),
            "the pair's four terms at every order": lambda d, S: learner_increment(d, S, keep=lambda k, r: r in (0, 1, k)),
            "only the subsets one smaller": lambda d, S: learner_increment(d, S, keep=lambda k, r: r >= k - 1),
            "raw P(y | x_S) - P(y)": centred_raw,
            "the empty set gives 0": lambda d, S: learner_increment(d, S) if S else torch.zeros(d.n, d.n_labels),
            "ignores weights": lambda d, S: learner_increment(d, S, weighted=False),
            "one label per row (argmax), not the distribution": lambda d, S: learner_increment(d, S, hard=True),
            "not masked where x_S has no mass": lambda d, S: learner_increment(d, S, mask=False),
            "0 / 0 = NaN where x_S has no mass": lambda d, S: learner_increment(d, S, mask=False, nan=True),
            "zeroes every row of weight 0": lambda d, S: learner_increment(d, S) * (d.weights > 0)[:, None],
            "P(y) as one row for the empty set": lambda d, S: learner_increment(d, S) if S else learner_conditional(d, ())[0][0],
        },
        hints={
            "no alternating signs": "sign", "(-1)^|T| signs": "S itself enters with +",
            "the pair's four terms at every order": "ALL subsets", "only the subsets one smaller": "2^|S| subsets",
            "raw P(y | x_S) - P(y)": "whole signal", "the empty set gives 0": "P(y) itself", "ignores weights": "data.weights",
            "one label per row (argmax), not the distribution": "DISTRIBUTIONS",
            "not masked where x_S has no mass": "carries no mass", "0 / 0 = NaN where x_S has no mass": "NaN",
            "zeroes every row of weight 0": "carries no mass", "P(y) as one row for the empty set": "[N, C]",
        },
    ),
    Contract(
        checks.check_01_order_gram,
        reference=learner_gram,
        wrong={
            "unweighted inner product": lambda d: learner_gram(d, weighted=False),
            "ignores weights everywhere": lambda d: learner_gram(d, term=lambda e, S: learner_increment(e, S, weighted=False), weighted=False),
            "Gram matrix of the raw terms": lambda d: learner_gram(d, term=centred_raw),
            "mean over labels": lambda d: learner_gram(d, labels="mean"),
            "cosine similarities": cosine_gram,
            "sets in sorted (lexicographic) order": lambda d: learner_gram(d, sets=lambda L: sorted(learner_sets(L))),
            "sets in bit-mask order": lambda d: learner_gram(d, sets=lambda L: sorted(learner_sets(L), key=lambda S: sum(2 ** p for p in S))),
            "the empty set included": lambda d: learner_gram(d, sets=lambda L: [()] + learner_sets(L)),
            "sizes 1 to L - 1 only": lambda d: learner_gram(d, sets=lambda L: learner_sets(L)[:-1]),
            "off-diagonal forced to 0": lambda d: torch.diag(torch.diag(learner_gram(d))),
        },
        hints={
            "unweighted inner product": "data.weights", "ignores weights everywhere": "data.weights",
            "Gram matrix of the raw terms": "raw terms", "mean over labels": "sum over the labels",
            "cosine similarities": "cosine", "sets in sorted (lexicographic) order": "wrong order",
            "sets in bit-mask order": "wrong order", "the empty set included": "non-empty", "sizes 1 to L - 1 only": "every size from 1 to L",
            "off-diagonal forced to 0": "overlap",
        },
    ),
    Contract(
        checks.check_01_ladder_budget,
        reference=learner_budget,
        wrong={
            "entropy drop in bits": lambda d, R: learner_budget(d, R, entropy_scale=math.log(2)),
            "entropy level, not the drop": lambda d, R: learner_budget(d, R, level=True),
            "squared signal taken from the pieces": lambda d, R: learner_budget(d, R, signal="pieces"),
            "column 2 with every inner product": lambda d, R: learner_budget(d, R, pieces="block"),
            "column 2 with S's own increment only": lambda d, R: learner_budget(d, R, pieces="own"),
            "column 2 with every set up to |S|": lambda d, R: learner_budget(d, R, pieces="up to |S|"),
            "squared signal unweighted": lambda d, R: learner_budget(d, R, signal="direct", weighted=False),
            "squared signal of an unweighted count": lambda d, R: learner_budget(d, R, signal="direct", weighted=False, count_weighted=False),
            "squared signal averaged over labels": lambda d, R: learner_budget(d, R, signal="mean"),
            "squared signal not centred": lambda d, R: learner_budget(d, R, signal="direct", centre=False),
            "transposed [3, R]": lambda d, R: learner_budget(d, R).T,
        },
        hints={
            "entropy drop in bits": "nats", "entropy level, not the drop": "DROP",
            "squared signal taken from the pieces": "only when the positions are independent", "column 2 with every inner product": "diagonal",
            "column 2 with S's own increment only": "ALL non-empty sets", "column 2 with every set up to |S|": "its own positions",
            "squared signal unweighted": "data.weights", "squared signal of an unweighted count": "data.weights", "squared signal averaged over labels": "do not average",
            "squared signal not centred": "subtract P(y)", "transposed [3, R]": "[R, 3]",
        },
    ),
]

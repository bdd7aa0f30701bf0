"""Lesson 01: reference answers and typical mistakes for each check."""

from __future__ import annotations

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
        },
    ),
]


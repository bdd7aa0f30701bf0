"""Lesson 06: reference answers and typical mistakes for each check."""

from __future__ import annotations

import itertools

import torch

from contracts import Contract
from ctxlab import checks
from ctxlab.checks.core import hard_labels
from ctxlab.checks.lesson06 import raw_pairs, splitting_pairs
from ctxlab.signatures import joint
from ctxlab.tasks import Dataset
from ctxlab.theory import pair_residual


def unweighted(data, p, i, j):
    flat = Dataset(data.x, data.y, data.vocab_size, data.n_labels, torch.full((data.n,), 1.0 / data.n))
    return pair_residual(flat, p, i, j)


def summed(data, p, i, j):
    mass = joint(data, (min(i, j), max(i, j))).sum(-1)
    return pair_residual(data, p, i, j) * (mass if i < j else mass.T)[..., None]


CONTRACT = [
    Contract(
        checks.check_06_pair_residual,
        reference=pair_residual,
        wrong={
            "p - e_y (sign)": lambda d, p, i, j: -pair_residual(d, p, i, j),
            "joint sum, not conditional mean": summed,
            "ignores data.weights": unweighted,
            "axes swapped": lambda d, p, i, j: pair_residual(d, p, i, j).transpose(0, 1),
            "one label per row (argmax), not the distribution": lambda d, p, i, j: pair_residual(hard_labels(d), p, i, j),
        },
    ),
    Contract(
        checks.check_06_next_pairs,
        reference=splitting_pairs,
        wrong={
            "every pair": lambda d: list(itertools.combinations(range(d.seq_len), 2)),
            "raw pair table instead of the increment": raw_pairs,
            "pairs with the first position": lambda d: [(0, j) for j in range(1, d.seq_len)],
            "adjacent pairs": lambda d: [(i, i + 1) for i in range(d.seq_len - 1)],
        },
    ),
]

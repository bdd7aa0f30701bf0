"""Lesson 08: reference answers and typical mistakes for each check."""

from __future__ import annotations

import math

import torch

from contracts import Contract
from ctxlab import checks
from ctxlab.checks.lesson08 import layernorm_norms_reference, no_plateau_corner_reference


def longest_corner(gammas, lrs, plateau):
    return no_plateau_corner_reference(gammas, lrs, -torch.as_tensor(plateau))


def nan_ignored(gammas, lrs, plateau):
    """Averages the finite cells of each edge but keeps the unstable column."""
    def mean(t):
        return float(t[~t.isnan()].mean())
    g = gammas[0] if mean(plateau[0]) < mean(plateau[-1]) else gammas[-1]
    r = lrs[0] if mean(plateau[:, 0]) < mean(plateau[:, -1]) else lrs[-1]
    return float(g), float(r)


def smallest_corner_cell(gammas, lrs, plateau):
    """The corner cell with the smallest finite rest (ties: the first one)."""
    corners = [(0, 0), (0, len(lrs) - 1), (len(gammas) - 1, 0), (len(gammas) - 1, len(lrs) - 1)]
    finite = [(float(plateau[i, j]), i, j) for i, j in corners if not math.isnan(float(plateau[i, j]))]
    _, i, j = min(finite, key=lambda t: t[0])
    return float(gammas[i]), float(lrs[j])


def rms_norms(E):
    return (E / (E.pow(2).mean(-1, keepdim=True) + 1e-5).sqrt()).norm(dim=-1)


def unbiased_norms(E):
    c = E - E.mean(-1, keepdim=True)
    return (c / (c.var(-1, keepdim=True) + 1e-5).sqrt()).norm(dim=-1)


CONTRACT = [
    Contract(
        checks.check_08_no_plateau_corner,
        reference=no_plateau_corner_reference,
        wrong={
            "corner with the longest rest": longest_corner,
            "(lr, gamma) swapped": lambda gammas, lrs, plateau: no_plateau_corner_reference(gammas, lrs, plateau)[::-1],
            "unstable column kept": nan_ignored,
            "always (smallest gamma, largest lr)": lambda gammas, lrs, plateau: (float(min(gammas)), float(max(lrs))),
            "smallest corner cell": smallest_corner_cell,
        },
    ),
    Contract(
        checks.check_08_layernorm_norms,
        reference=layernorm_norms_reference,
        wrong={
            "sqrt(d), epsilon ignored": lambda E: torch.full((E.shape[0],), math.sqrt(E.shape[1]), dtype=torch.float64),
            "unbiased variance": unbiased_norms,
            "RMSNorm (no centring)": rms_norms,
            "norm before normalisation": lambda E: E.norm(dim=-1),
            "epsilon added to the standard deviation": lambda E: ((E - E.mean(-1, keepdim=True)) / (
                (E - E.mean(-1, keepdim=True)).pow(2).mean(-1, keepdim=True).sqrt() + 1e-5)).norm(dim=-1),
            "torch layer_norm in float32 with eps 1e-6": lambda E: torch.nn.functional.layer_norm(E.float(), (E.shape[1],), eps=1e-6).norm(dim=-1),
        },
    ),
]

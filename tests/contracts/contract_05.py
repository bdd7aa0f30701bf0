"""Lesson 05: reference answers and typical mistakes for each check."""

from __future__ import annotations

import math

import torch

from contracts import Contract
from ctxlab import checks
from ctxlab.checks.core import hard_labels
from ctxlab.checks.lesson05 import _blocks, singular_values_reference
from ctxlab.theory import fit_growth_rate


def first_steps(steps, a, level):
    reached = a >= level
    first = reached.float().argmax(0)
    return torch.where(reached.any(0), steps.double()[first], torch.full(first.shape, math.inf, dtype=torch.float64))


def order(steps, a, level):
    return torch.argsort(first_steps(steps, a.abs(), level), stable=True).tolist()


def order_never_as_index_0(steps, a, level):
    """argmax over an all-False column is 0: modes that never reach the level get the first step."""
    return torch.argsort(steps.double()[(a.abs() >= level).float().argmax(0)], stable=True).tolist()


def order_ties_reversed(steps, a, level):
    first = first_steps(steps, a.abs(), level)
    return sorted(range(len(first)), key=lambda k: (float(first[k]), -k))


def order_for_good(steps, a, level):
    """The step after which |a| stays at or above the level."""
    stays = (a.abs() >= level).flip(0).int().cumprod(0).flip(0)
    return torch.argsort(first_steps(steps, stays.double(), 1.0), stable=True).tolist()


def order_strict(steps, a, level):
    return torch.argsort(first_steps(steps, a.abs(), level + 1e-12), stable=True).tolist()


def rate(t, a, lo, hi):
    return float(fit_growth_rate(t, a, lo, hi))


CONTRACT = [
    Contract(
        checks.check_05_singular_values,
        reference=singular_values_reference,
        wrong={
            "no frequency weighting": lambda d: torch.linalg.svdvals(_blocks(d, "u", False)),
            "not centred": lambda d: torch.linalg.svdvals(_blocks(d, "none", True)),
            "centred by P(y)": lambda d: torch.linalg.svdvals(_blocks(d, "p_y", True)),
            "ascending": lambda d: singular_values_reference(d).flip(0),
            "one label per row (argmax), not the distribution": lambda d: singular_values_reference(hard_labels(d)),
        },
    ),
    Contract(
        checks.check_05_switch_on_order,
        reference=order,
        wrong={
            "reversed": lambda s, a, lvl: order(s, a, lvl)[::-1],
            "by final strength": lambda s, a, lvl: torch.argsort(a.abs()[-1], descending=True, stable=True).tolist(),
            "by peak time": lambda s, a, lvl: torch.argsort(a.abs().argmax(0), stable=True).tolist(),
            "no absolute value": lambda s, a, lvl: torch.argsort(first_steps(s, a, lvl), stable=True).tolist(),
            "never reached encoded as index 0": order_never_as_index_0,
            "never reached encoded as -1": lambda s, a, lvl: torch.argsort(first_steps(s, a.abs(), lvl).nan_to_num(posinf=-1.0), stable=True).tolist(),
            "ties in reverse index order": order_ties_reversed,
            "when it stays above for good": order_for_good,
            "strictly above the level": order_strict,
        },
    ),
    Contract(
        checks.check_05_growth_rate,
        reference=rate,
        wrong={
            "log10": lambda t, a, lo, hi: rate(t, a, lo, hi) / math.log(10),
            "half (per factor)": lambda t, a, lo, hi: rate(t, a, lo, hi) / 2,
            "whole curve": lambda t, a, lo, hi: rate(t, a, float(t[0]), float(t[-1])),
            "both ends of the window left out": lambda t, a, lo, hi: rate(t[(t > lo) & (t < hi)], a[(t > lo) & (t < hi)], lo, hi),
            "slope per record, not per step": lambda t, a, lo, hi: rate(torch.arange(len(t)).double(), a, int((t < lo).sum()), int((t <= hi).sum()) - 1),
            "two end points": lambda t, a, lo, hi: float(
                (a[(t >= lo) & (t <= hi)].abs().log()[-1] - a[(t >= lo) & (t <= hi)].abs().log()[0])
                / (t[(t >= lo) & (t <= hi)][-1] - t[(t >= lo) & (t <= hi)][0])
            ),
        },
    ),
]

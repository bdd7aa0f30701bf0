"""Lesson 16 (token identity, rare tokens): reference answers and typical mistakes for each check."""

from __future__ import annotations

import math

import torch

from contracts import Contract
from ctxlab import checks
from ctxlab.token_identity import bin_losses, loglog_slope, rung_steps


def _centred_fit(x, y):
    x, y = x.double() - x.double().mean(), y.double() - y.double().mean()
    return float((x * y).sum() / (x * x).sum())


def _per_row(logits, data):
    return -(torch.log_softmax(logits.double(), -1) * data.targets().double()).sum(-1)


def not_renormalised(logits, data, ids):
    return _per_row(logits, data) @ (data.weights.double() * torch.isin(data.x[:, 0], ids).double())


def unweighted(logits, data, ids):
    m = torch.isin(data.x[:, 0], ids).double()
    return _per_row(logits, data) @ m / m.sum()


def all_rows(logits, data, ids):
    return _per_row(logits, data) @ data.weights.double()


def first_step_or(never):
    def fn(steps, curve, level):
        below = curve < level
        return float(steps[below.nonzero()[0, 0]]) if bool(below.any()) else never
    return fn


def index_not_step(steps, curve, level):
    below = curve < level
    return float(below.nonzero()[0, 0]) if bool(below.any()) else math.inf


def last_entry(steps, curve, level):
    above = (curve >= level).nonzero()
    if not bool((curve < level).any()):
        return math.inf
    return float(steps[int(above[-1, 0]) + 1]) if len(above) else float(steps[0])


def at_or_below(steps, curve, level):
    hit = curve <= level
    return float(steps[hit.nonzero()[0, 0]]) if bool(hit.any()) else math.inf


CONTRACT = [
    Contract(
        checks.check_16_loglog_slope,
        reference=lambda frequency, size: float(loglog_slope(frequency, size)),
        wrong={
            "no logs": lambda frequency, size: _centred_fit(frequency, size),
            "log frequency regressed on log size": lambda frequency, size: _centred_fit(size.log(), frequency.log()),
            "semi-log fit": lambda frequency, size: _centred_fit(frequency, size.log()),
        },
    ),
    Contract(
        checks.check_16_bin_loss,
        reference=lambda logits, data, ids: bin_losses(logits, data, [ids])[:, 0],
        wrong={
            "weights not renormalised inside the bin": not_renormalised,
            "unweighted mean over the bin's rows": unweighted,
            "loss of all rows": all_rows,
            "one number for the whole ensemble": lambda logits, data, ids: bin_losses(logits, data, [ids])[:, 0].mean(),
        },
    ),
    Contract(
        checks.check_16_rung_step,
        reference=lambda steps, curve, level: float(rung_steps(steps, curve, level)),
        wrong={
            "-1 for never": first_step_or(-1.0),
            "0 for never": first_step_or(0.0),
            "the last recorded step for never": lambda steps, curve, level: first_step_or(float(steps[-1]))(steps, curve, level),
            "index instead of step": index_not_step,
            "last entry below instead of the first crossing": last_entry,
            "at or below instead of strictly below": at_or_below,
        },
    ),
]

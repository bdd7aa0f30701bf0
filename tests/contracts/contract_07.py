"""Lesson 07: reference answers and typical mistakes for each check."""

from __future__ import annotations

import torch

from contracts import Contract
from ctxlab import checks
from ctxlab.checks.lesson07 import leaves_uniform
from ctxlab.theory import bag_of_context


def summed(model, x):
    return bag_of_context(model, x) * x.shape[1]


def no_positions(model, x):
    return model.embedding.detach()[:, x].mean(2) @ model.w_v.detach()


def no_values(model, x):
    return (model.embedding.detach()[:, x] + model.position.detach()[:, None]).mean(2)


def w_v_transposed(model, x):
    h = model.embedding.detach()[:, x] + model.position.detach()[:, None]
    return h.mean(2) @ model.w_v.detach().transpose(-1, -2)


def as_index(steps, weights, L, tol=0.01):
    off = (weights.double() - 1.0 / L).abs() > tol
    first = off.int().argmax(-1)
    return torch.where(off.any(-1), first, torch.full_like(first, -1))


def one_sided(steps, weights, L, tol=0.01):
    off = (weights.double() - 1.0 / L) > tol
    first = off.int().argmax(-1)
    return torch.where(off.any(-1), steps[first], torch.full_like(first, -1))


def from_start(steps, weights, L, tol=0.01):
    w = weights.double()
    return leaves_uniform(steps, w - w[:, :1] + 1.0 / L, L, tol)


def leaves_for_good(steps, weights, L, tol=0.01):
    """The first record after which the weight stays outside the band."""
    off = (weights.double() - 1.0 / L).abs() > tol
    stays = off.flip(-1).int().cumprod(-1).flip(-1)
    first = stays.argmax(-1)
    return torch.where(stays.any(-1), steps[first], torch.full_like(first, -1))


def never_as_first_step(steps, weights, L, tol=0.01):
    """argmax of an all-False row is 0: a model that never leaves gets steps[0]."""
    off = (weights.double() - 1.0 / L).abs() > tol
    return steps[off.int().argmax(-1)]


def ignores_tol(steps, weights, L, tol=0.01):
    return leaves_uniform(steps, weights, L, 0.01)


CONTRACT = [
    Contract(
        checks.check_07_uniform_output,
        reference=bag_of_context,
        wrong={
            "sum instead of mean": summed,
            "forgot the positions": no_positions,
            "forgot W_V": no_values,
            "W_V transposed": w_v_transposed,
        },
    ),
    Contract(
        checks.check_07_leaves_uniform,
        reference=leaves_uniform,
        wrong={
            "index, not step": as_index,
            "only upward moves": one_sided,
            "distance from the first value": from_start,
            "fixed tolerance": ignores_tol,
            "the time it leaves for good": leaves_for_good,
            "never leaving encoded as steps[0]": never_as_first_step,
            "record index times the first spacing": lambda s, w, L, tol=0.01: torch.where(
                leaves_uniform(s, w, L, tol) >= 0, s[0] + ((w.double() - 1.0 / L).abs() > tol).int().argmax(-1) * (s[1] - s[0]), -1),
        },
    ),
]

"""Lesson 03: reference answers and typical mistakes for each check."""

from __future__ import annotations

import math

import torch

from contracts import Contract
from ctxlab import checks
from ctxlab.checks.lesson03 import (
    _dwell_variant,
    _onset_variant,
    _rise_variant,
    dwell_reference,
    longest_wait_reference,
    rise_and_end_reference,
    stair_onsets_reference,
)
from ctxlab.checks.lesson03_build import build_task
from ctxlab.rungs import stair_onsets
from ctxlab.synthetic import staircase_curve

# --- exercise 4 -------------------------------------------------------------------------------------


def _means(steps, losses, gammas, levels, never=None, reverse=False):
    waits = stair_onsets(steps, losses, list(levels))[:, 0].double()
    never = float(steps[-1]) + 1 if never is None else never
    waits = torch.where(waits < 0, torch.tensor(never, dtype=torch.float64), waits)
    return {g: float(waits[[k for k, x in enumerate(gammas) if x == g]].mean()) for g in sorted(set(gammas), reverse=reverse)}


def longest(never=None, reverse=False):
    def answer(steps, losses, gammas, levels):
        means = _means(steps, losses, gammas, levels, never, reverse)
        return max(means, key=means.get)
    return answer


def summed_over_seeds(steps, losses, gammas, levels):
    waits = stair_onsets(steps, losses, list(levels))[:, 0].double()
    waits = torch.where(waits < 0, float(steps[-1]) + 1, waits)
    sums = {g: float(waits[[k for k, x in enumerate(gammas) if x == g]].sum()) for g in sorted(set(gammas))}
    return max(sums, key=sums.get)


def shortest_wait(steps, losses, gammas, levels):
    means = _means(steps, losses, gammas, levels)
    return min(means, key=means.get)


def first_seed_only(steps, losses, gammas, levels):
    keep = [gammas.index(g) for g in dict.fromkeys(gammas)]
    return longest_wait_reference(steps, losses[keep], [gammas[k] for k in keep], levels)


def index_not_value(steps, losses, gammas, levels):
    return sorted(set(gammas)).index(longest_wait_reference(steps, losses, gammas, levels))


# --- exercise 5: the headline model, written as a learner would, with one mistake switched on --------


def train_staircase(gamma, seed, steps, *, bias=None, scale="gamma", activation="gelu", optimizer="gd",
                    batch=None, record="before"):
    """Plain-PyTorch Emb-MLP on hierarchy_task(block=8, n_values=2) trained by full-batch GD at lr 1."""
    task, _ = build_task()
    data = task.population
    x, y, w = data.x, data.y, data.weights
    d, hidden = 32, 128
    g = torch.Generator().manual_seed(seed)
    exponent = {"gamma": gamma, "unit": 0.0, "variance": 2 * gamma, "gamma-squared": gamma**2}[scale]
    shapes = [(data.vocab_size, d, d), (3 * d, hidden, 3 * d), (hidden, data.n_labels, hidden)]
    params = [(torch.randn(r, c, generator=g) * f ** -exponent).requires_grad_() for r, c, f in shapes]
    if bias == "zero":
        params += [torch.zeros(hidden, requires_grad=True), torch.zeros(data.n_labels, requires_grad=True)]
    elif bias == "default":  # torch.nn.Linear's default bias init
        params += [((torch.rand(n, generator=g) * 2 - 1) / math.sqrt(f)).requires_grad_()
                   for n, f in ((hidden, 3 * d), (data.n_labels, hidden))]
    act = torch.relu if activation == "relu" else torch.nn.functional.gelu

    def loss_of(rows):
        E, W1, W2 = params[:3]
        h = E[x[rows]].reshape(len(rows), -1) @ W1
        h = h + params[3] if bias else h
        z = act(h) @ W2
        z = z + params[4] if bias else z
        weights = w[rows] / w[rows].sum()
        return -(weights * (y[rows] * torch.log_softmax(z, -1)).sum(-1)).sum()

    everything = torch.arange(len(x))
    adam = torch.optim.Adam(params, lr=1e-2) if optimizer == "adam" else None
    batches = torch.Generator().manual_seed(seed + 1)
    losses = []
    for t in range(steps + 1):
        loss = loss_of(everything)
        if record in ("before", "missing-last"):
            losses.append(loss.item())
        if t == steps and record != "after":
            break
        if record == "missing-last" and t == steps - 1:
            break
        if batch:
            loss = loss_of(torch.randint(0, len(x), (batch,), generator=batches))
        grads = torch.autograd.grad(loss, params)
        if adam:
            for p, grad in zip(params, grads):
                p.grad = grad
            adam.step()
        else:
            with torch.no_grad():
                for p, grad in zip(params, grads):
                    p -= 1.0 * grad
        if record == "after":
            losses.append(loss_of(everything).item())
            if t == steps:
                break
    losses = losses[:steps + 1]
    return torch.arange(len(losses)), torch.tensor(losses, dtype=torch.float64)


def wrong(**mistake):
    return lambda gamma, seed, steps: train_staircase(gamma, seed, steps, **mistake)


def synthetic_staircase(gamma, seed, steps):
    """A made-up curve shaped like the lesson's figure, not a training run."""
    _, levels = build_task()
    at = 180 if gamma >= 1 else 5
    s = torch.arange(steps + 1)
    treads = [(levels[0],), (levels[1], at), (levels[2], 2.5 * at + 30), (levels[3], 5 * at + 60)]
    return s, staircase_curve(s, treads, seed=seed)


CONTRACT = [
    Contract(
        checks.check_03_dwell,
        reference=dwell_reference,
        wrong={
            "no flatness condition (a slide is credited)": lambda s, l, h: _dwell_variant(s, l, h, flat=False),
            "slope per recorded interval, not per step": lambda s, l, h: _dwell_variant(s, l, h, per_step=False),
            "counts recorded points, not steps": lambda s, l, h: _dwell_variant(s, l, h, widths=False),
            "longest flat stretch only": lambda s, l, h: _dwell_variant(s, l, h, longest=True),
            "one end of the interval in the band is enough": lambda s, l, h: _dwell_variant(s, l, h, both_ends=False),
            "skips H_0": lambda s, l, h: dwell_reference(s, l, h)[1:],
        },
    ),
    Contract(
        checks.check_03_stair_onsets,
        reference=stair_onsets_reference,
        wrong={
            "index instead of step": lambda s, l, h: _onset_variant(s, l, h, index=True),
            "never reached encoded as 0": lambda s, l, h: _onset_variant(s, l, h, never=0),
            "crossing the level itself": lambda s, l, h: _onset_variant(s, l, h, at_level=True),
            "the time it goes below for good, not the first": lambda s, l, h: _onset_variant(s, l, h, last=True),
            "a loss on the midpoint counted as below (<=)": lambda s, l, h: _onset_variant(s, l, h, inclusive=True),
        },
    ),
    Contract(
        checks.check_03_rise_and_end,
        reference=rise_and_end_reference,
        wrong={
            "rise measured from step 0": lambda s, l, h: _rise_variant(s, l, h, start="zero"),
            "leaves H_0 when it leaves for good, not the first time": lambda s, l, h: _rise_variant(s, l, h, start="good"),
            "largest one-step increase": lambda s, l, h: _rise_variant(s, l, h, how="one-step"),
            "max minus min instead of a running minimum": lambda s, l, h: _rise_variant(s, l, h, how="span"),
            "no rung encoded as -1": lambda s, l, h: _rise_variant(s, l, h, end="minus-one"),
            "nearest level without the tolerance": lambda s, l, h: _rise_variant(s, l, h, end="nearest"),
            "the leaving point itself left out": lambda s, l, h: _rise_variant(s, l, h, start="after"),
        },
        hints={"the leaving point itself left out": "include the point where the loss leaves H_0"},
    ),
    Contract(
        checks.check_03_longest_wait,
        reference=longest_wait_reference,
        wrong={
            "always the largest γ": lambda s, l, g, h: max(g),
            "shortest wait": shortest_wait,
            "first seed only": first_seed_only,
            "never reached counted as a wait of 0": longest(never=0.0),
            "onset -1 taken as the wait": longest(never=-1.0),
            "ties broken towards the larger γ": longest(reverse=True),
            "index instead of γ": index_not_value,
            "sum over seeds instead of the mean": summed_over_seeds,
            "never counted as steps[-1], not steps[-1] + 1": lambda s, l, g, h: longest(never=float(s[-1]))(s, l, g, h),
        },
        hints={
            "sum over seeds instead of the mean": "you added up the waits",
            "never counted as steps[-1], not steps[-1] + 1": "not steps[-1]",
        },
    ),
    Contract(
        checks.check_03_build_staircase,
        reference=train_staircase,
        wrong={
            "biases, starting at 0": wrong(bias="zero"),
            "biases with nn.Linear's default init": wrong(bias="default"),
            "N(0, 1) everywhere": wrong(scale="unit"),
            "fan_in^(-2γ) used as the standard deviation": wrong(scale="variance"),
            "γ applied as fan_in^(-γ²)": wrong(scale="gamma-squared"),
            "ReLU instead of GELU": wrong(activation="relu"),
            "Adam instead of gradient descent": wrong(optimizer="adam"),
            "minibatches of 64 rows": wrong(batch=64),
            "records the loss after the update (off by one)": wrong(record="after"),
            "misses the loss after the last update (off by one)": wrong(record="missing-last"),
            "a synthetic staircase, not a training run": synthetic_staircase,
        },
    ),
]

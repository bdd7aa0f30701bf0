"""Lesson 05: reference answers and typical mistakes for each check."""

from __future__ import annotations

import math

import torch

from contracts import Contract, train_once
from ctxlab import checks
from ctxlab.checks.core import hard_labels
from ctxlab.checks.lesson05 import _blocks, singular_values_reference
from ctxlab.theory import correlation_modes, fit_growth_rate, mode_strengths, product_map
from ctxlab.train import recorded_steps


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


# --- exercises 4, 5 and putting it together: the prediction, the measurement, the two side by side -------


def predict(model, data, level, lr, *, rate="gd", quarter=True, start="growing", clamp=True, layout="position"):
    """The switch-on step ln(level / a_0) / rate_k of every model and mode, written as a learner would."""
    modes = correlation_modes(data)
    E = model.embedding.detach().double()
    K, V, d = E.shape
    L = data.seq_len
    if layout == "position":
        W = model.w.detach().double().reshape(K, L, d, -1)
    else:  # feature-major: row j * L + i read as feature j of position i
        W = model.w.detach().double().reshape(K, d, L, -1).transpose(1, 2)
    v = modes.v.reshape(L, V, -1)
    where = v.norm(dim=1).argmax(0).tolist() if start != "key at 0" else [0] * len(modes.s)
    a0 = []
    for k, i in enumerate(where):
        alpha, beta = W[:, i] @ modes.u[:, k], E.transpose(1, 2) @ v[i, :, k]
        a0.append((alpha * beta).sum(-1) if start == "product" else ((alpha + beta) ** 2).sum(-1) / (4 if quarter else 1))
    per_step = {"gd": 2 * torch.log1p(lr * modes.s), "flow": 2 * lr * modes.s, "factor": torch.log1p(lr * modes.s),
                "lr 1": 2 * torch.log1p(modes.s)}[rate]
    steps = torch.log(level / torch.stack(a0, 1)) / per_step
    return steps.clamp_min(0) if clamp else steps


def measure(model, data, steps, level, lr, every, *, after=False, every_step=False, index=False, never=-1,
            signed=True, at_lr=None):
    """Train by full-batch GD and return the first recorded step with a_k >= level, one mistake switched on."""
    run = train_once(model, data, steps, lr=lr if at_lr is None else at_lr, record_every=1 if every_step or after else every,
                probes={"map": product_map}, progress=False)
    a = mode_strengths(run.extras["map"], correlation_modes(data))
    t = run.steps
    if after:  # the strength after each update, labelled with the step before it
        keep = torch.tensor([s for s in t.tolist() if s in recorded_steps(steps, every, None)])
        a, t = a[:, (keep + 1).clamp_max(steps)], keep
    on = (a if signed else a.abs()) >= level
    first = on.float().argmax(1)
    found = first if index else t[first]
    never_as = {"-1": -1, "0": 0, "last": steps}[str(never) if never in (-1, 0) else never]
    return torch.where(on.any(1), found, torch.tensor(never_as))


def together(model, data, steps, level, lr, *, measure_first=False, measured_as_predicted=False, lr_measured=None):
    if measure_first:  # trains the model in place, then predicts from the trained weights
        measured = measure(model, data, steps, level, lr, 1)
        return predict(model, data, level, lr), measured
    predicted = predict(model, data, level, lr)
    measured = measure(model, data, steps, level, lr if lr_measured is None else lr_measured, 1)
    return (measured.double() if measured_as_predicted else predicted), measured


CONTRACT += [
    Contract(
        checks.check_05_predict_switch_on,
        reference=predict,
        wrong={
            "gradient flow's rate 2 lr s_k": lambda *a: predict(*a, rate="flow"),
            "one factor's rate ln(1 + lr s_k)": lambda *a: predict(*a, rate="factor"),
            "learning rate left at 1": lambda *a: predict(*a, rate="lr 1"),
            "starts from the strength at init α·β": lambda *a: predict(*a, start="product"),
            "|α + β|² without the 1/4": lambda *a: predict(*a, quarter=False),
            "every mode read at position 0": lambda *a: predict(*a, start="key at 0"),
            "negative steps kept for modes already on": lambda *a: predict(*a, clamp=False),
            "read-out rows read feature-major": lambda *a: predict(*a, layout="feature"),
        },
        hints={
            "gradient flow's rate 2 lr s_k": "gradient flow", "one factor's rate ln(1 + lr s_k)": "one factor",
            "learning rate left at 1": "learning rate you are given", "starts from the strength at init α·β": "α·β",
            "|α + β|² without the 1/4": "1/4", "every mode read at position 0": "not always position 0",
            "negative steps kept for modes already on": "not a negative step", "read-out rows read feature-major": "position-major",
        },
    ),
    Contract(
        checks.check_05_measure_switch_on,
        reference=measure,
        wrong={
            "strength after the update (off by one)": lambda *a: measure(*a, after=True),
            "read at every step, not the recorded ones": lambda *a: measure(*a, every_step=True),
            "positions in the list of records, not steps": lambda *a: measure(*a, index=True),
            "never switched on as 0": lambda *a: measure(*a, never=0),
            "never switched on as the last step": lambda *a: measure(*a, never="last"),
            "|a_k| instead of a_k": lambda *a: measure(*a, signed=False),
            "trained at learning rate 1": lambda *a: measure(*a, at_lr=1.0),
        },
        hints={
            "strength after the update (off by one)": "off by one", "read at every step, not the recorded ones": "every step",
            "positions in the list of records, not steps": "positions", "never switched on as 0": "not 0",
            "never switched on as the last step": "not the last step", "|a_k| instead of a_k": "signed",
            "trained at learning rate 1": "learning rate you are given",
        },
    ),
    Contract(
        checks.check_05_switch_on_prediction,
        reference=together,
        wrong={
            "predicts after measuring, from the trained weights": lambda *a: together(*a, measure_first=True),
            "the measurement handed in as the prediction": lambda *a: together(*a, measured_as_predicted=True),
            "measured at twice the learning rate": lambda *a: together(*a, lr_measured=2 * a[-1]),
        },
        hints={"the measurement handed in as the prediction": "not a prediction"},
    ),
]

"""Checks for the exercises of lesson 16 (token identity, rare tokens): the log-log slope of update
size against frequency, the loss of one frequency bin, and the step at which a curve is halfway down to its rung."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor

from ctxlab.checks.core import (
    Case,
    Diagnosis,
    all_close,
    as_float,
    number_close,
    reweighted,
    run_check,
    tensor_close,
)
from ctxlab.dataset import Dataset
from ctxlab.tasks import hierarchy_task, xor_task, zipf
from ctxlab.token_identity import bin_losses, loglog_slope, rung_steps, zipf_hierarchy

# --- exercise: the log-log slope -------------------------------------------------------------------


def _slope_cases() -> list[Case]:
    g = torch.Generator().manual_seed(16)
    specs = [
        ("8 Zipf keys, size ∝ π (noisy)", zipf(8, 8, 1.5).float(), 1.0, 0.1, 1e-3, False),
        ("8 Zipf keys, size ∝ π^0.6", zipf(8, 8, 1.0).float(), 0.6, 0.2, 1e-3, False),
        ("12 shuffled frequencies, size ∝ π^1.8", zipf(12, 12, 0.8)[torch.randperm(12, generator=g)].float(), 1.8, 0.3,
         0.05, True),
        ("5 tokens, size ∝ π^-0.5, large sizes", torch.tensor([0.05, 0.4, 0.1, 0.3, 0.15]), -0.5, 0.15, 300.0, True),
    ]  # fmt: skip
    cases = []
    for label, freq, power, noise, scale, hidden in specs:
        size = scale * freq.double() ** power * torch.exp(noise * torch.randn(freq.numel(), generator=g, dtype=torch.float64))
        cases.append(Case(label, (freq, size.float()), float(loglog_slope(freq, size.float())), hidden))
    return cases


def _fit(x: Tensor, y: Tensor) -> float:
    x, y = x.double() - x.double().mean(), y.double() - y.double().mean()
    return float((x * y).sum() / (x * x).sum())


def check_16_loglog_slope(fn: Callable[[Tensor, Tensor], float]) -> None:
    """fn(frequency [n], size [n]) -> least-squares slope of log size against log frequency."""
    diagnoses = [
        Diagnosis(lambda g, e, c: all_close(g, _fit(*c.args), 1e-4),
                  "take logs first: the slope of a power law is the slope of log size against log frequency"),
        Diagnosis(lambda g, e, c: all_close(g, _fit(c.args[1].log(), c.args[0].log()), 1e-4),
                  "you regressed log frequency on log size: regress log size (y) on log frequency (x)"),
        Diagnosis(lambda g, e, c: all_close(g, _fit(c.args[0], c.args[1].log()), 1e-4),
                  "take the log of the frequency too (a log-log fit, not a semi-log one)"),
        Diagnosis(lambda g, e, c: all_close(g, 1.0 / e, 1e-4),
                  "that is 1/slope: size goes on the y axis, frequency on the x axis"),
    ]  # fmt: skip
    run_check("check_16_loglog_slope", fn, _slope_cases(), number_close(1e-4), diagnoses)


# --- exercise: the loss of one frequency bin ---------------------------------------------------------


def _bin_cases() -> list[Case]:
    g = torch.Generator().manual_seed(161)
    zipf_data = zipf_hierarchy(8, 1.5).population
    other = zipf_hierarchy(6, 1.0).population
    plain = hierarchy_task(block=8, n_values=2).population
    specs = [
        ("Zipf task, head bin (keys 0, 1), 3 models", zipf_data, torch.tensor([0, 1]), 3, False),
        ("Zipf task, tail bin (keys 6, 7), 2 models", zipf_data, torch.tensor([6, 7]), 2, False),
        ("block 6, exponent 1, keys (4, 1, 2), reweighted rows", reweighted(other, 3), torch.tensor([4, 1, 2]), 2, True),
        ("uniform keys, one key, 4 models", plain, torch.tensor([5]), 4, True),
        ("xor task, tokens (0, 3), which also occur at positions 1 and 2", xor_task().population, torch.tensor([0, 3]), 2, True),
    ]  # fmt: skip
    cases = []
    for label, data, ids, K, hidden in specs:
        logits = 1.5 * torch.randn(K, data.n, data.n_labels, generator=g)
        cases.append(Case(label, (logits, data, ids), bin_losses(logits, data, [ids])[:, 0], hidden))
    return cases


def _per_row(logits: Tensor, data: Dataset) -> Tensor:
    return -(torch.log_softmax(logits.double(), -1) * data.targets().double()).sum(-1)


def _mask(data: Dataset, ids: Tensor) -> Tensor:
    return torch.isin(data.x[:, 0], ids).double()


def check_16_bin_loss(fn: Callable[[Tensor, Dataset, Tensor], Tensor]) -> None:
    """fn(logits [K, N, C], data, ids) -> [K]: weighted cross-entropy over the rows whose first token is in ids,
    weights renormalised inside the bin."""

    def not_renormalised(g, e, c: Case) -> bool:
        logits, data, ids = c.args
        return all_close(g, _per_row(logits, data) @ (data.weights.double() * _mask(data, ids)))

    def unweighted(g, e, c: Case) -> bool:
        logits, data, ids = c.args
        m = _mask(data, ids)
        return all_close(g, _per_row(logits, data) @ m / m.sum())

    def whole_data(g, e, c: Case) -> bool:
        logits, data, _ = c.args
        return all_close(g, _per_row(logits, data) @ data.weights.double())

    def hard_labels(g, e, c: Case) -> bool:
        logits, data, ids = c.args
        hard = Dataset(data.x, data.targets().argmax(-1), data.vocab_size, data.n_labels, data.weights)
        w = data.weights.double() * _mask(data, ids)
        return all_close(g, _per_row(logits, hard) @ w / w.sum())

    def any_position(g, e, c: Case) -> bool:
        logits, data, ids = c.args
        w = data.weights.double() * torch.isin(data.x, ids).any(1).double()
        return all_close(g, _per_row(logits, data) @ w / w.sum()) and not all_close(e, _per_row(logits, data) @ w / w.sum())

    diagnoses = [
        Diagnosis(any_position, "you kept the rows that hold one of the ids at ANY position: a row's bin is set by its FIRST token "
                                "alone (position 0)"),
        Diagnosis(not_renormalised, "divide by the bin's total weight: the weights must sum to 1 inside the bin"),
        Diagnosis(unweighted, "weight each row by data.weights (rows of a Zipf population are not equally likely)"),
        Diagnosis(whole_data, "that is the loss of all rows: keep only the rows whose first token is in ids"),
        Diagnosis(hard_labels, "rows carry label DISTRIBUTIONS: use data.targets() [N, C], not one label per row"),
        Diagnosis(lambda g, e, c: all_close(g, e.mean()) or all_close(g, e.mean().expand_as(e)),
                  "one number per model: keep the model axis of the logits"),
    ]  # fmt: skip
    run_check("check_16_bin_loss", fn, _bin_cases(), tensor_close(1e-4), diagnoses)


# --- exercise: the step at which a curve is halfway down to its rung ---------------------------------------------


def _rung_cases() -> list[Case]:
    steps = torch.arange(0, 305, 5)
    falling = 0.69 - 0.2 / (1 + torch.exp(-(steps.double() - 120) / 15))
    dip = falling.clone()
    dip[8:11] -= 0.1  # a dip below 0.6 at steps 40-50 that comes back up
    uneven = torch.tensor([0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512])
    uneven_curve = torch.tensor([0.75, 0.75, 0.7, 0.7, 0.625, 0.625, 0.5, 0.5, 0.375, 0.25, 0.25])  # exact in float32
    specs = [
        ("a falling curve, level 0.6", steps, falling, 0.6, False),
        ("a curve that never gets there, level 0.45", steps, falling, 0.45, False),
        ("an early dip that comes back, level 0.6", steps, dip, 0.6, True),
        ("doubling steps, level 0.5 touched before it is crossed", uneven, uneven_curve, 0.5, True),
        ("doubling steps, never below 0.2", uneven, uneven_curve, 0.2, True),
    ]  # fmt: skip
    return [Case(label, (s, c.float(), lv), float(rung_steps(s, c.float(), lv)), hidden)
            for label, s, c, lv, hidden in specs]


def _same_step(got, expected: float) -> str | None:
    """Equal steps, or both ``inf`` (never)."""
    value = as_float(got)
    if value is None:
        return f"expected a number (a step, or math.inf for never), got {type(got).__name__}"
    if math.isinf(expected) and math.isinf(value) and value > 0:
        return None
    return number_close(1e-9)(value, expected)


def check_16_rung_step(fn: Callable[[Tensor, Tensor, float], float]) -> None:
    """fn(steps [T], curve [T], level) -> first recorded step with curve < level, math.inf if never."""

    def index_not_step(g, e, c: Case) -> bool:
        _, curve, level = c.args
        below = (curve < level).nonzero()
        return len(below) > 0 and as_float(g) == float(below[0, 0]) != e

    def last_entry(g, e, c: Case) -> bool:
        steps, curve, level = c.args
        above = (curve >= level).nonzero()
        return len(above) > 0 and int(above[-1, 0]) + 1 < len(steps) and as_float(g) == float(steps[int(above[-1, 0]) + 1]) != e

    def at_or_below(g, e, c: Case) -> bool:
        steps, curve, level = c.args
        hit = (curve <= level).nonzero()
        return len(hit) > 0 and as_float(g) == float(steps[hit[0, 0]]) != e

    diagnoses = [
        Diagnosis(lambda g, e, c: math.isinf(e) and as_float(g) == -1,
                  "-1 for 'never' reads as 'very early' in a comparison: return math.inf"),
        Diagnosis(lambda g, e, c: math.isinf(e) and as_float(g) == 0,
                  "0 for 'never' reads as 'at once': return math.inf"),
        Diagnosis(lambda g, e, c: math.isinf(e) and as_float(g) is not None and math.isfinite(as_float(g)),
                  "the curve never gets below the level: return math.inf"),
        Diagnosis(index_not_step, "return the recorded step (a value of steps), not its index"),
        Diagnosis(last_entry, "the first crossing counts, even if the curve comes back up after it"),
        Diagnosis(at_or_below, "strictly below: a curve that only touches the level has not crossed it"),
    ]  # fmt: skip
    run_check("check_16_rung_step", fn, _rung_cases(), _same_step, diagnoses)

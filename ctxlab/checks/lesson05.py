"""Checks for the exercises of lesson 05 (linear-network modes: which order-1 feature switches on first)."""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any, Callable

import torch
from torch import Tensor

from ctxlab.checks.core import (
    HARD_LABELS_HINT,
    Case,
    Diagnosis,
    all_close,
    as_tensor,
    hard_labels,
    reweighted,
    run_check,
    tensor_close,
)
from ctxlab.models import LinearEmb
from ctxlab.dataset import Dataset
from ctxlab.tasks import hierarchy_task, modes_task, xor_task
from ctxlab.theory import correlation_modes, fit_growth_rate, input_output_correlation, mode_strengths, product_map
from ctxlab.train import train

# --- exercise 1: the singular values that set the order ------------------------------------------


def singular_values_reference(data: Dataset) -> Tensor:
    """All C singular values of Sigma_yx = E[(e_y - u) onehot(x)^T], descending."""
    return torch.linalg.svdvals(input_output_correlation(data))


def _datasets() -> list[tuple[str, Dataset, bool]]:
    return [
        ("modes task", modes_task().population, False),
        ("modes task, strengths (0.2, 0.5, 0.1)", modes_task((0.2, 0.5, 0.1)).population, True),
        ("hierarchy task", hierarchy_task().population, True),
        ("hierarchy task with random weights", reweighted(hierarchy_task().population, 7), True),
        ("xor task, 2000 samples", xor_task().sample(2000, seed=8), True),
    ]


def _svals(matrix: Tensor) -> Tensor:
    return torch.linalg.svdvals(matrix.double())


def _blocks(data: Dataset, centre: str, weight: bool) -> Tensor:
    """Sigma_yx variants: centre by 'u', 'none' or 'p_y'; weight by frequency or not."""
    from ctxlab.signatures import joint

    p_y = joint(data, ())
    cols = []
    for i in range(data.seq_len):
        table = joint(data, (i,))
        pi = table.sum(-1, keepdim=True)
        q = torch.where(pi > 0, table / pi.clamp_min(1e-300), torch.zeros_like(table))
        base = {"u": torch.full_like(p_y, 1.0 / data.n_labels), "none": torch.zeros_like(p_y), "p_y": p_y}[centre]
        cols.append(((q - base) * (pi > 0)) * (pi if weight else 1.0))
    return torch.cat(cols, dim=0).T


def check_05_singular_values(fn: Callable[[Dataset], Tensor]) -> None:
    """fn(data) -> [C]: the singular values of Sigma_yx[:, i*V + s] = pi_i(s) (P(y | x_i = s) - u), descending."""
    cases = [Case(label, (d,), singular_values_reference(d), hidden) for label, d, hidden in _datasets()]
    diagnoses = [
        Diagnosis(lambda g, e, c: all_close(g, _svals(_blocks(c.args[0], "u", False))), "each column needs the token's frequency pi_i(s): the drive is P(x_i = s, y) - pi_i(s)/C"),
        Diagnosis(lambda g, e, c: all_close(g, _svals(_blocks(c.args[0], "none", True))), "subtract the uniform distribution u = 1/C: at small init the model already predicts u"),
        Diagnosis(lambda g, e, c: all_close(g, _svals(_blocks(c.args[0], "p_y", True))), "centre with u = 1/C (what the model predicts at init), not with the label marginal P(y)"),
        Diagnosis(lambda g, e, c: all_close(as_tensor(g).flip(0), e), "sort the singular values in descending order"),
        Diagnosis(lambda g, e, c: all_close(g, singular_values_reference(hard_labels(c.args[0]))), HARD_LABELS_HINT),
    ]  # fmt: skip
    run_check("check_05_singular_values", fn, cases, tensor_close(atol=1e-6), diagnoses)


# --- exercise 2: the order in which modes switch on ----------------------------------------------


def first_steps(steps: Tensor, reached: Tensor) -> Tensor:
    """First recorded step where each mode of ``reached`` [..., T, r] is True; +inf where never (the reading
    exercise 2 and the build of exercise 5 share)."""
    first = reached.float().argmax(-2)
    return torch.where(reached.any(-2), steps.double()[first], torch.full(first.shape, math.inf, dtype=torch.float64))


def switch_on_order_reference(steps: Tensor, strengths: Tensor, level: float) -> list[int]:
    """Mode indices sorted by the first recorded step where |a_k| >= level (strengths [T, r])."""
    return [int(k) for k in torch.argsort(first_steps(steps, strengths.abs() >= level), stable=True)]


def _synthetic(seed: int, rates: list[float], finals: list[float], T: int = 200) -> tuple[Tensor, Tensor]:
    """Sigmoid-like mode curves a_k(t) = final_k / (1 + e^{-rate_k (t - t_k)}) with t_k ~ 1/rate_k."""
    g = torch.Generator().manual_seed(seed)
    t = torch.arange(T, dtype=torch.float64)
    curves = []
    for r, f in zip(rates, finals):
        shift = 4.0 / r + float(torch.rand(1, generator=g)) * 3
        curves.append(f / (1 + torch.exp(-r * (t - shift))))
    return t, torch.stack(curves, dim=1)


def _tied() -> tuple[Tensor, Tensor]:
    """Recorded every 20 steps; modes 2, 0 and 3 cross the level between steps 40 and 60, mode 1 earlier."""
    steps = torch.arange(0, 400, 20)
    t = steps.double()[:, None]
    return steps, torch.sigmoid((t - torch.tensor([50.0, 25.0, 45.0, 55.0])) / 8.0) * torch.tensor([1.0, 1.0, -1.0, 1.0])


def _overshoot() -> tuple[Tensor, Tensor]:
    """Mode 0 passes the level at step 20, falls back below it, and stays above only from step 150."""
    steps = torch.arange(0, 300, 10)
    t = steps.double()
    bump = 0.8 * torch.exp(-(((t - 25.0) / 10.0) ** 2))
    mode0 = bump + torch.sigmoid((t - 150.0) / 10.0)
    mode1 = torch.sigmoid((t - 80.0) / 10.0)
    return steps, torch.stack([mode0, mode1], dim=1)


def _at_the_ends() -> tuple[Tensor, Tensor]:
    """Mode 2 is above the level from the first record, mode 1 reaches it at record 1, mode 3 only at the last
    and mode 0 never: an answer that skips the first or the last record puts them in another order."""
    a = torch.tensor([[0.0, 0.2, 0.9, 0.1], [0.1, 0.6, 0.9, 0.2], [0.2, 0.7, 0.8, 0.3], [0.3, 0.7, 0.8, 0.6]],
                     dtype=torch.float64)
    return torch.tensor([0, 40, 90, 150]), a


def _exactly_at() -> tuple[Tensor, Tensor]:
    """Mode 0 equals the level (exactly) at step 2 and passes it at step 4; mode 1 passes it at step 3."""
    a = torch.tensor([[0.0, 0.0], [0.25, 0.3], [0.5, 0.45], [0.5, 0.7], [1.0, 0.8]], dtype=torch.float64)
    return torch.arange(5), a


@lru_cache(maxsize=1)
def _run_curves() -> tuple[Tensor, Tensor]:
    task = modes_task((0.2, 0.6, 0.1))
    model = LinearEmb(task.vocab_size, task.seq_len, task.n_labels, gamma=1.25, seed=3)
    traj = train(model, task.population, 250, lr=1.0, record_every=2, probes={"map": product_map}, progress=False)
    return traj.steps, mode_strengths(traj.extras["map"], correlation_modes(task.population))[0]


def _order_cases() -> list[Case]:
    specs = [
        ("three synthetic modes", _synthetic(0, [0.3, 0.15, 0.08], [1.0, 3.0, 2.0]), 0.5, False),
        ("four synthetic modes, a slow one ends highest", _synthetic(1, [0.05, 0.2, 0.1, 0.4], [6.0, 1.0, 2.0, 0.8]), 0.4, True),
        ("negative-going mode", (lambda t, a: (t, a * torch.tensor([1.0, -1.0])))(*_synthetic(2, [0.1, 0.3], [2.0, 2.0])), 0.5, True),
        ("a LinearEmb run on the modes task with strengths (0.2, 0.6, 0.1)", _run_curves(), 0.5, True),
        ("two of four modes never reach the level", _synthetic(3, [0.2, 0.1, 0.15, 0.3], [0.3, 2.0, 0.45, 1.5]), 0.5, True),
        ("three modes reach the level between the same two records", _tied(), 0.5, True),
        ("a mode overshoots early, dips below the level, then rises for good", _overshoot(), 0.5, True),
        ("a mode sits exactly at the level", _exactly_at(), 0.5, True),
        ("modes reaching the level at the first record and at the last", _at_the_ends(), 0.5, True),
    ]  # fmt: skip
    return [Case(label, (steps, a, level), switch_on_order_reference(steps, a, level), hidden) for label, (steps, a), level, hidden in specs]


def _list_equal(got: Any, expected: list[int]) -> str | None:
    try:
        values = [int(v) for v in (got.tolist() if hasattr(got, "tolist") else got)]
    except Exception:
        return f"expected a list of mode indices like {expected}, got {got!r}"
    if values != expected:
        return f"expected the order {expected}, got {values}"
    return None


def _order_by(key: Callable[[Tensor], Tensor], descending: bool) -> Callable[[Any, Any, Case], bool]:
    def matches(g, e, c) -> bool:
        k = key(c.args[1])
        return [int(v) for v in g] == [int(i) for i in torch.argsort(k, descending=descending, stable=True)]

    return matches


def _order_of_first(c: Case, *, never: float = math.inf, strict: bool = False, for_good: bool = False,
                    ties_descending: bool = False) -> list[int]:
    """The answer under one changed convention: what a typical mistake returns."""
    steps, a, level = c.args
    reached = a.abs() > level if strict else a.abs() >= level
    if for_good:  # the first record after the last one below the level
        stays = reached.flip(0).int().cumprod(0).flip(0).bool()
        first = first_steps(steps, stays)
    else:
        first = first_steps(steps, reached)
    first = torch.where(first.isinf(), torch.full_like(first, never), first)
    return sorted(range(len(first)), key=lambda k: (float(first[k]), -k if ties_descending else k))


def _gives(**change) -> Callable[[Any, Any, Case], bool]:
    def matches(g, e, c) -> bool:
        alt = _order_of_first(c, **change)
        return alt != e and [int(v) for v in g] == alt

    return matches


def _skipping(first: bool) -> Callable[[Any, Any, Case], bool]:
    """The order read without the first (or the last) record."""
    def matches(g, e, c) -> bool:
        steps, a, level = c.args
        if len(steps) < 2:
            return False
        keep = slice(1, None) if first else slice(None, -1)
        alt = switch_on_order_reference(steps[keep], a[keep], level)
        return alt != e and [int(v) for v in g] == alt

    return matches


def check_05_switch_on_order(fn: Callable[[Tensor, Tensor, float], list[int]]) -> None:
    """fn(steps [T], strengths [T, r], level) -> mode indices, earliest first step with |a_k| >= level first.

    Ties (the same first step) keep index order; modes that never reach the level come last, in index order.
    """
    diagnoses = [
        Diagnosis(_gives(never=-math.inf), "a mode that never reaches the level sorts FIRST in your answer: it must come last "
                                           "(treat its step as +inf; argmax of an all-False column is 0, and -1 sorts first too)"),
        Diagnosis(_gives(ties_descending=True), "modes with the same first step (or that both never reach the level) keep their "
                                                "index order, lower index first: use a stable sort"),
        Diagnosis(_gives(for_good=True), "that is the step after which |a_k| stays above the level; the question asks for the FIRST "
                                         "recorded step at which |a_k| >= level, even if it dips below again later"),
        Diagnosis(_gives(strict=True), "reaching means |a_k| >= level (a mode exactly at the level has reached it), not >"),
        Diagnosis(lambda g, e, c: [int(v) for v in g] == [int(k) for k in torch.argsort(first_steps(c.args[0], c.args[1] >= c.args[2]), stable=True)],
                  "take the absolute value: a mode can grow with a negative sign"),
        Diagnosis(lambda g, e, c: [int(v) for v in g] == e[::-1], "reversed: the mode that reaches the level first comes first"),
        Diagnosis(_skipping(first=True), "look at every record, the first one too: a mode already at the level at the first "
                                         "recorded step reaches it there"),
        Diagnosis(_skipping(first=False), "look at every record, the last one too: a mode that reaches the level only at the "
                                          "final record does reach it (it is not a mode that never does)"),
        Diagnosis(_order_by(lambda a: a.abs()[-1], True), "that sorts by the final strength; sort by the first step at which |a_k| reaches the level"),
        Diagnosis(_order_by(lambda a: a.abs().argmax(0).double(), False), "that sorts by the step of the peak; use the first step at which |a_k| reaches the level"),
    ]  # fmt: skip
    run_check("check_05_switch_on_order", fn, _order_cases(), _list_equal, diagnoses)


# --- exercise 3: fit the growth rate -------------------------------------------------------------


def _growth_curve(seed: int, rate: float, a0: float, minus: float, cap: float, T: int = 300) -> tuple[Tensor, Tensor]:
    """a(t) = a0 e^{rate t} - minus, saturating at ``cap`` (a logistic roll-off), with 1% noise."""
    g = torch.Generator().manual_seed(seed)
    t = torch.arange(0, T, 3, dtype=torch.float64)
    grow = a0 * torch.exp(rate * t)
    a = grow / (1 + grow / cap) - minus
    return t, a * (1 + 0.01 * torch.randn(len(t), generator=g, dtype=torch.float64))


def _rate_cases() -> list[Case]:
    specs = [
        ("a mode growing at 0.1 per step", _growth_curve(0, 0.1, 1e-4, 0.0, 3.0), 10, 60, False),
        ("slow mode with a transient", _growth_curve(1, 0.04, 1e-3, 5e-4, 2.0), 45, 150, True),
        ("fast mode, window ends before saturation", _growth_curve(2, 0.25, 1e-6, 0.0, 5.0), 9, 45, True),
        ("mode with a negative sign", (lambda t, a: (t, -a))(*_growth_curve(3, 0.07, 1e-4, 0.0, 1.0)), 15, 90, True),
    ]  # fmt: skip
    cases = [Case(label, (t, a, lo, hi), float(fit_growth_rate(t, a, lo, hi)), hidden) for label, (t, a), lo, hi, hidden in specs]
    steps, a = _run_curves()
    cases.append(Case("mode 1 of a LinearEmb run, steps 10-40", (steps, a[:, 1], 10, 40), float(fit_growth_rate(steps, a[:, 1], 10, 40)), True))
    return cases


RATE_RTOL = 1e-4  # the fit is exact arithmetic on the given points: only the rounding of another formula is allowed


def _rate_compare(got: Any, expected: float) -> str | None:
    try:
        value = float(got)
    except Exception:
        return f"expected a number, got {type(got).__name__}"
    if not math.isfinite(value) or abs(value - expected) > RATE_RTOL * abs(expected):
        return f"expected a growth rate of {expected:.6f} per step, got {value:.6f} (tolerance {RATE_RTOL:.0e} relative)"
    return None


def _fit_inside(steps: Tensor, a: Tensor, start: float, stop: float) -> float:
    """The fit over start < step < stop, both ends left out."""
    inside = (steps > start) & (steps < stop)
    return float(fit_growth_rate(steps[inside], a[inside], float(steps[inside][0]), float(steps[inside][-1])))


def _end_to_end(steps: Tensor, a: Tensor, start: float, stop: float) -> float:
    inside = (steps >= start) & (steps <= stop)
    t, y = steps[inside].double(), a[inside].double().abs().log()
    return float((y[-1] - y[0]) / (t[-1] - t[0]))


def check_05_growth_rate(fn: Callable[[Tensor, Tensor, float, float], float]) -> None:
    """fn(steps, a, start, stop) -> least-squares slope of ln|a| against the step, over start <= step <= stop."""

    def ratio(r: float) -> Callable[[Any, Any, Case], bool]:
        return lambda g, e, c: abs(float(g) - r * e) < 0.02 * abs(r * e)

    diagnoses = [
        Diagnosis(ratio(1 / math.log(10)), "that is the slope of log10: use the natural log, so the rate compares with 2 ln(1 + lr s)"),
        Diagnosis(ratio(0.5), "half the rate: fit ln|a| itself (a is the product of two factors, each growing at half the rate)"),
        Diagnosis(lambda g, e, c: abs(float(g) - float(fit_growth_rate(c.args[0], c.args[1], float(c.args[0][0]), float(c.args[0][-1])))) < 1e-6,
                  "you fitted the whole curve: keep only the steps inside [start, stop], where the growth is exponential"),
        Diagnosis(lambda g, e, c: abs(float(g) - _fit_inside(*c.args)) < 1e-6 * abs(e) and abs(_fit_inside(*c.args) - e) > RATE_RTOL * abs(e),
                  "the window includes both ends: keep the steps with start <= step <= stop (a step equal to stop counts)"),
        Diagnosis(lambda g, e, c: abs(float(g) - e * float(c.args[0][1] - c.args[0][0])) < 1e-3 * abs(e),
                  "that is the slope per record, not per step: fit against the recorded steps themselves"),
        Diagnosis(lambda g, e, c: abs(float(g) - _end_to_end(*c.args)) < 1e-9 * abs(e),
                  "that is the slope between the window's two end points: fit a least-squares line through every point inside"),
    ]  # fmt: skip
    run_check("check_05_growth_rate", fn, _rate_cases(), _rate_compare, diagnoses)

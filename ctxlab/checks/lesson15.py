"""Checks for the exercises of lesson 15 (token learning times): one sigmoid fit, the order of every
sequence, the R² of a sum-of-sigmoids reconstruction."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor

from ctxlab.checks.core import (
    Case,
    Diagnosis,
    all_close,
    as_tensor,
    number_close,
    reweighted,
    run_check,
    tensor_close,
)
from ctxlab.dataset import Dataset
from ctxlab.learning_times import (
    log_spaced_steps,
    order_losses,
    r_squared,
    sigmoid_curve,
    token_orders,
)
from ctxlab.tasks import hierarchy_task

# --- exercise: fit one sigmoid ---------------------------------------------------------------------


def _sigmoid_cases() -> list[Case]:
    """Exact sigmoids (floor, drop, tau, width) on log-spaced grids; expected [floor, drop, ln tau, width]."""
    specs = [
        ("a fall at step 150", 2000, (0.30, 0.40, 150.0, 0.25), 0.0, False),
        ("a rise (negative drop) at step 700", 3000, (0.60, -0.20, 700.0, 0.15), 0.0, True),
        ("a broad fall at step 40", 1000, (0.05, 0.60, 40.0, 0.60), 0.0, True),
        ("a late sharp fall with noise 0.001", 5000, (0.47, 0.08, 1800.0, 0.10), 1e-3, True),
        ("a fall at step 1375, still 18% above its floor at the last step", 2000, (0.30, 0.40, 1375.0, 0.25), 0.0, True),
    ]  # fmt: skip
    cases = []
    for i, (label, last, (floor, drop, tau, width), noise, hidden) in enumerate(specs):
        steps = torch.tensor(log_spaced_steps(last, 70), dtype=torch.float64)
        curve = sigmoid_curve(steps, torch.tensor(floor), torch.tensor(drop), torch.tensor(tau), torch.tensor(width))
        curve = curve + noise * torch.randn(steps.numel(), generator=torch.Generator().manual_seed(i), dtype=torch.float64)
        cases.append(Case(label, (steps, curve), torch.tensor([floor, drop, math.log(tau), width], dtype=torch.float64), hidden))
    return cases


def _as_parameters(out):
    """(floor, drop, tau, width) -> [floor, drop, ln tau, width]; anything else passes through."""
    t = as_tensor(out)
    if t is None or t.numel() != 4:
        return out
    t = t.double().flatten()
    return torch.stack([t[0], t[1], t[2].log() if bool(t[2] > 0) else torch.tensor(float("nan"), dtype=torch.float64), t[3]])


def check_15_fit_sigmoid(fn: Callable[[Tensor, Tensor], tuple]) -> None:
    """fn(steps [T], curve [T]) -> (floor, drop, tau, width) of the least-squares sigmoid in log-step."""

    def wrapped(steps, curve):
        out = fn(steps, curve)
        return None if out is None else _as_parameters(out)

    wrapped.__name__ = getattr(fn, "__name__", "your function")

    def log_tau_returned(g, e, c: Case) -> bool:
        return abs(math.exp(float(g[2])) - float(e[2])) < 0.05  # tau given as ln tau

    def floor_at_last_value(g, e, c: Case) -> bool:
        last = float(c.args[1][-1])
        return abs(float(g[0]) - last) < 0.005 and abs(float(e[0]) - last) > 0.03

    diagnoses = [
        Diagnosis(log_tau_returned, "return tau in steps, not ln tau (the third number)"),
        Diagnosis(floor_at_last_value, "your floor is the curve's last value: this curve has not finished falling by its last step; "
                                       "fit the floor with the other three parameters (the last value is only a starting guess)"),
        Diagnosis(lambda g, e, c: abs(float(g[1]) + float(e[1])) < 0.02 and abs(float(e[1])) > 0.05,
                  "the drop has the wrong sign: drop = loss before - loss after (positive when the loss falls)"),
        Diagnosis(lambda g, e, c: abs(float(g[3]) * math.log(10) - float(e[3])) < 0.03,
                  "the width is in units of log10 t: use the natural log of the step"),
        Diagnosis(lambda g, e, c: abs(float(g[3]) - float(e[3])) > 0.03 and all_close(g[:3], e[:3], 0.03),
                  "floor, drop and tau are right but not the width: w divides ln t - ln tau inside the exponential"),
    ]  # fmt: skip
    run_check("check_15_fit_sigmoid", wrapped if callable(fn) else fn, _sigmoid_cases(), tensor_close(0.03), diagnoses)


# --- exercise: the order of every sequence -----------------------------------------------------------


def _order_cases() -> list[Case]:
    """Final losses between the order-k losses of each row, so each row has a definite order."""
    cases = []
    specs = [
        ("binary hierarchy, final = the best loss", hierarchy_task(block=8, n_values=2).population, "best", 0.01, False),
        ("binary hierarchy, half the rows stopped at order 1, tol 0.05", hierarchy_task(block=8, n_values=2).population,
         "mixed", 0.05, True),
        ("three-valued hierarchy, reweighted rows", reweighted(hierarchy_task(block=3, n_values=3).population, 3),
         "mixed", 0.01, True),
        ("four positions, mix (0.25, 0.25, 0.25, 0.25)",
         hierarchy_task(block=2, n_values=2, mix=(0.25, 0.25, 0.25, 0.25)).population, "mixed", 0.005, True),
        ("binary hierarchy, final = 0 on every 7th row (no order qualifies there)",
         hierarchy_task(block=8, n_values=2).population, "none on every 7th", 0.01, True),
    ]  # fmt: skip
    for i, (label, data, how, tol, hidden) in enumerate(specs):
        table = order_losses(data)
        final = table[-1] + 0.001
        if how == "none on every 7th":  # no order, not even k = L, gets these rows to 0 + tol: k = L by the rule
            final[::7] = 0.0
        if how == "mixed":
            g = torch.Generator().manual_seed(i)
            stop = torch.randint(1, data.seq_len + 1, (data.n,), generator=g)
            final = table.gather(0, stop[None]).squeeze(0) + 0.001
        cases.append(Case(label, (data, final, tol), token_orders(data, final, tol).double(), hidden))
    return cases


def _last_positions_orders(data: Dataset, final: Tensor, tol: float) -> Tensor:
    flipped = Dataset(data.x.flip(1), data.y, data.vocab_size, data.n_labels, data.weights)
    return token_orders(flipped, final, tol)


def _uniform(data: Dataset) -> Dataset:
    return Dataset(data.x, data.y, data.vocab_size, data.n_labels, torch.full((data.n,), 1.0 / data.n))


def _first_qualifying_or(data: Dataset, final: Tensor, tol: float, fallback: int) -> Tensor:
    """The first order whose loss is within ``tol`` of the row's final loss, ``fallback`` where none is."""
    good = order_losses(data) <= final.double() + tol
    return torch.where(good.any(0), good.int().argmax(0), fallback)


def check_15_token_orders(fn: Callable[[Dataset, Tensor, float], Tensor]) -> None:
    """fn(data, final_loss [N], tol) -> [N]: the smallest k whose p(y | x_1..x_k) gives each row its final loss."""

    def no_fallback(g, e, c: Case) -> bool:
        return any(all_close(g, _first_qualifying_or(*c.args, fallback)) and not all_close(e, _first_qualifying_or(*c.args, fallback))
                   for fallback in (-1, 0))

    diagnoses = [
        Diagnosis(no_fallback, "where no order qualifies, the order is k = L (the text's rule: k = L always qualifies), "
                               "not -1 or 0: start every row at L and replace it by the first k that qualifies"),
        Diagnosis(lambda g, e, c: all_close(g, e + 1), "orders start at 0: k = 0 is the label marginal p(y), "
                                                       "k = 1 conditions on x_1 alone"),
        Diagnosis(lambda g, e, c: all_close(g, _last_positions_orders(*c.args)),
                  "condition on the FIRST k positions x_1..x_k, not the last k"),
        Diagnosis(lambda g, e, c: all_close(g, token_orders(_uniform(c.args[0]), *c.args[1:])),
                  "count p(y | x_1..x_k) with the rows' weights data.weights, not one count per row"),
        Diagnosis(lambda g, e, c: all_close(g, token_orders(c.args[0], c.args[1], 0.0)) and c.args[2] > 0,
                  "allow the tolerance: a row qualifies when its loss is at most final_loss + tol"),
    ]  # fmt: skip
    run_check("check_15_token_orders", fn, _order_cases(), tensor_close(1e-9), diagnoses)


# --- exercise: R² of the reconstruction --------------------------------------------------------------


def _reconstruction_cases() -> list[Case]:
    cases = []
    for i, (label, n, offset, hidden) in enumerate([("6 sigmoids, equal weights", 6, 0.0, False),
                                                    ("40 sigmoids, random weights", 40, 0.0, True),
                                                    ("a rebuild that is 0.02 too high", 25, 0.02, True)]):
        g = torch.Generator().manual_seed(10 + i)
        steps = torch.tensor(log_spaced_steps(2000, 50), dtype=torch.float64)
        params = torch.rand(4, n, generator=g, dtype=torch.float64)
        fitted = sigmoid_curve(steps, 0.2 + 0.3 * params[0], 0.5 * params[1], 10 ** (1 + 2 * params[2]), 0.1 + 0.5 * params[3])
        weights = torch.full((n,), 1.0 / n, dtype=torch.float64) if i == 0 else params[0] / params[0].sum()
        noise = 0.01 * torch.randn(steps.numel(), generator=g, dtype=torch.float64)
        mean = weights @ fitted + noise - offset
        cases.append(Case(label, (mean, fitted, weights), float(r_squared(mean, weights @ fitted)), hidden))
    return cases


def check_15_reconstruction_r2(fn: Callable[[Tensor, Tensor, Tensor], float]) -> None:
    """fn(mean_curve [T], fitted [N, T], weights [N]) -> R² of weights @ fitted against mean_curve."""

    def unweighted(g, e, c: Case) -> bool:
        mean, fitted, _ = c.args
        return all_close(g, float(r_squared(mean, fitted.mean(0))), 1e-6)

    def correlation(g, e, c: Case) -> bool:
        mean, fitted, w = c.args
        return all_close(g, float(torch.corrcoef(torch.stack([mean, w @ fitted]))[0, 1] ** 2), 1e-6)

    def uncentred(g, e, c: Case) -> bool:
        mean, fitted, w = c.args
        return all_close(g, float(1 - (mean - w @ fitted).pow(2).sum() / mean.pow(2).sum()), 1e-6)

    diagnoses = [
        Diagnosis(unweighted, "weight each sequence's sigmoid by its probability: rebuilt = weights @ fitted"),
        Diagnosis(correlation, "that is the squared correlation, which ignores an offset: use 1 - SSE / SST"),
        Diagnosis(uncentred, "SST is the spread of mean_curve about its own mean over time, not its sum of squares"),
    ]  # fmt: skip
    run_check("check_15_reconstruction_r2", fn, _reconstruction_cases(), number_close(1e-6), diagnoses)

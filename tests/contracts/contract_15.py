"""Lesson 15 (token learning times): reference answers and typical mistakes for each check."""

from __future__ import annotations

import math

import torch

from contracts import Contract
from ctxlab import checks
from ctxlab.dataset import Dataset
from ctxlab.learning_times import fit_sigmoids, order_losses, r_squared, token_orders


def fitted(steps, curve):
    fit = fit_sigmoids(steps, curve[None], min_change=0.0, iterations=600)
    return float(fit.floor[0]), float(fit.drop[0]), float(fit.tau[0]), float(fit.width[0])


def log_tau(steps, curve):
    floor, drop, tau, width = fitted(steps, curve)
    return floor, drop, math.log(tau), width


def drop_after_minus_before(steps, curve):
    floor, drop, tau, width = fitted(steps, curve)
    return floor, -drop, tau, width


def width_in_log10(steps, curve):
    floor, drop, tau, width = fitted(steps, curve)
    return floor, drop, tau, width / math.log(10)


def floor_at_last_value(steps, curve):
    """The least-squares fit with the floor held at the curve's last value instead of fitted."""
    log_t, c = steps.double().log(), curve.double()
    floor = float(c[-1])
    halfway = ((c - c[0]).abs() >= 0.5 * (c[-1] - c[0]).abs()).double().argmax()
    p = torch.tensor([float(c[0]) - floor, float(log_t[halfway]), math.log(0.3)], dtype=torch.float64,
                     requires_grad=True)  # drop, ln tau, ln w
    opt = torch.optim.LBFGS([p], lr=1, max_iter=200, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = (floor + p[0] * torch.sigmoid(-(log_t - p[1]) / p[2].exp()) - c).pow(2).mean()
        loss.backward()
        return loss

    opt.step(closure)
    drop, ln_tau, ln_w = p.detach().tolist()
    return floor, drop, math.exp(ln_tau), math.exp(ln_w)


def first_qualifying_or(fallback):
    """The first order within tol of the final loss; ``fallback`` (-1, or argmax's 0) where none is, not k = L."""
    def orders(data, final, tol):
        good = order_losses(data) <= final.double() + tol
        return torch.where(good.any(0), good.int().argmax(0), fallback)
    return orders


def orders_from_one(data, final, tol):
    return token_orders(data, final, tol) + 1


def last_positions(data, final, tol):
    return token_orders(Dataset(data.x.flip(1), data.y, data.vocab_size, data.n_labels, data.weights), final, tol)


def unweighted_counts(data, final, tol):
    uniform = Dataset(data.x, data.y, data.vocab_size, data.n_labels, torch.full((data.n,), 1.0 / data.n))
    return token_orders(uniform, final, tol)


def unweighted_rebuild(mean, fitted_curves, weights):
    return float(r_squared(mean, fitted_curves.mean(0)))


def squared_correlation(mean, fitted_curves, weights):
    return float(torch.corrcoef(torch.stack([mean, weights @ fitted_curves]))[0, 1] ** 2)


def uncentred_sst(mean, fitted_curves, weights):
    return float(1 - (mean - weights @ fitted_curves).pow(2).sum() / mean.pow(2).sum())


CONTRACT = [
    Contract(
        checks.check_15_fit_sigmoid,
        reference=fitted,
        wrong={
            "returns ln tau instead of tau": log_tau,
            "drop = after - before": drop_after_minus_before,
            "width measured in log10 t": width_in_log10,
            "floor fixed at the curve's last value": floor_at_last_value,
        },
        hints={"floor fixed at the curve's last value": "your floor is the curve's last value"},
    ),
    Contract(
        checks.check_15_token_orders,
        reference=lambda data, final, tol: token_orders(data, final, tol),
        wrong={
            "orders counted from 1": orders_from_one,
            "the last k positions instead of the first k": last_positions,
            "counts ignore the rows' weights": unweighted_counts,
            "ignores the tolerance": lambda data, final, tol: token_orders(data, final, 0.0),
            "-1 where no order qualifies, not k = L": first_qualifying_or(-1),
            "0 where no order qualifies (argmax without the fallback)": first_qualifying_or(0),
        },
        hints={
            "-1 where no order qualifies, not k = L": "the order is k = L",
            "0 where no order qualifies (argmax without the fallback)": "the order is k = L",
        },
    ),
    Contract(
        checks.check_15_reconstruction_r2,
        reference=lambda mean, fitted_curves, weights: float(r_squared(mean, weights @ fitted_curves)),
        wrong={
            "unweighted sum of the sigmoids": unweighted_rebuild,
            "squared correlation instead of R²": squared_correlation,
            "SST not centred": uncentred_sst,
        },
    ),
]

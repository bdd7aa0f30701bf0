"""Lesson 15 (token learning times): reference answers and typical mistakes for each check."""

from __future__ import annotations

import math

import torch

from contracts import Contract
from ctxlab import checks
from ctxlab.dataset import Dataset
from ctxlab.learning_times import fit_sigmoids, r_squared, token_orders


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
        },
    ),
    Contract(
        checks.check_15_token_orders,
        reference=lambda data, final, tol: token_orders(data, final, tol),
        wrong={
            "orders counted from 1": orders_from_one,
            "the last k positions instead of the first k": last_positions,
            "counts ignore the rows' weights": unweighted_counts,
            "ignores the tolerance": lambda data, final, tol: token_orders(data, final, 0.0),
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

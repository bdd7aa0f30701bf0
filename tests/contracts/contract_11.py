"""Lesson 11: reference answers and typical mistakes for each check (parts 1-3)."""


from __future__ import annotations

import torch

from contracts import Contract
from ctxlab import checks
from ctxlab.rungs import crossing_step, stair_onsets
from ctxlab.checks.lesson11 import (
    _neighbours,
    _runs_of_equal_rows,
    _shared,
    _variant,
    check_11_held_out_accuracy,
    check_11_line_up,
    classes_of,
    finishing_order,
    knn_overlap,
)
from ctxlab.composition import accuracy, held_out_accuracy, held_out_outcomes, line_up
from ctxlab.transplant import signature_embedding


def _last(run, levels, at_level: bool = False):
    steps, loss = run
    if at_level:
        return crossing_step(steps, loss, levels[-1])
    return stair_onsets(steps, loss, list(levels))[:, -1]


def at_the_level(runs, levels):
    """Reaching = going below H_L itself."""
    done = {n: float(_last(r, levels, True).double().mean()) for n, r in runs.items() if bool((_last(r, levels, True) >= 0).all())}
    return sorted(done, key=done.get)


def never_as_minus_one(runs, levels):
    """Averages the -1 of seeds that never finish with the real steps."""
    done = {n: float(_last(r, levels).double().mean()) for n, r in runs.items() if bool((_last(r, levels) >= 0).any())}
    return sorted(done, key=done.get)


def by_final_loss(runs, levels):
    done = finishing_order(runs, levels)
    return sorted(done, key=lambda n: float(runs[n][1][:, -1].mean()))


def by_best_seed(runs, levels):
    done = finishing_order(runs, levels)
    return sorted(done, key=lambda n: float(_last(runs[n], levels).min()))


def ties_by_name(runs, levels):
    done = finishing_order(runs, levels)
    mean = {n: float(_last(runs[n], levels).double().mean()) for n in done}
    return sorted(done, key=lambda n: (mean[n], n))


def by_median_step(runs, levels):
    done = finishing_order(runs, levels)
    return sorted(done, key=lambda n: float(_last(runs[n], levels).double().median()))


def on_training_pairs(model, task):
    return accuracy(model(task.population.x), task.population)


def argmax_wrong_axis(model, task):
    test = task.info["held_out"]
    return (model(test.x).argmax(1) == test.y).float().mean(-1)


def counts_copied_answer(model, task):
    out = held_out_outcomes(model(task.info["held_out"].x), task)
    return out["composed"] + out["symmetric"]


def reverse_pair_rows(model, task):
    test = task.info["held_out"]
    return (model(test.x[:, [0, 2, 1]]).argmax(-1) == test.y).float().mean(-1)


def pc1_share(E, tokens, values):
    sv = torch.linalg.svdvals((E[tokens] - E[tokens].mean(0)).double())
    return float(sv[0] ** 2 / (sv**2).sum())


def uncentred(E, tokens, values):
    X, v = E[tokens].double(), values.double()
    return float((v @ X).pow(2).sum() / (v @ v) / X.pow(2).sum())


def values_on_embeddings(E, tokens, values):
    X = torch.cat([E[tokens].double(), torch.ones(len(tokens), 1, dtype=torch.float64)], 1)
    v = values.double()
    fit = X @ torch.linalg.lstsq(X, v[:, None]).solution[:, 0]
    return float(1 - (v - fit).pow(2).sum() / (v - v.mean()).pow(2).sum())


def top_k(M, k, how="cosine", keep_self=False):
    return _neighbours(M, k, "with itself" if keep_self else how)


def classes_by(key):
    return lambda S: torch.unique(key(S), dim=0, return_inverse=True)[1]


CONTRACT = [
    Contract(
        checks.check_11_signature_table,
        reference=signature_embedding,
        wrong={
            "no centring": lambda data, d, orders, norm: _variant(data, d, orders, norm, centre=False).float(),
            "bare singular vectors U (no S)": lambda data, d, orders, norm: _variant(data, d, orders, norm, scale_by_sv=False).float(),
            "raw signatures": lambda data, d, orders, norm: _variant(data, d, orders, norm, form="raw").float(),
            "not rescaled": lambda data, d, orders, norm: signature_embedding(data, d, orders),
            "transposed": lambda data, d, orders, norm: signature_embedding(data, d, orders, norm).T,
            "highest order only": lambda data, d, orders, norm: signature_embedding(data, d, orders[-1:], norm),
        },
    ),
    Contract(
        checks.check_11_finishing_order,
        reference=finishing_order,
        wrong={
            "crossing H_L instead of the midpoint": at_the_level,
            "never-reached seeds averaged as -1": never_as_minus_one,
            "ordered by final loss": by_final_loss,
            "ordered by the best seed": by_best_seed,
            "ties broken by name": ties_by_name,
            "median step instead of mean": by_median_step,
        },
    ),
    Contract(
        check_11_held_out_accuracy,
        reference=lambda model, task: held_out_accuracy(model(task.info["held_out"].x), task),
        wrong={
            "accuracy over the training pairs": on_training_pairs,
            "argmax over the wrong axis": argmax_wrong_axis,
            "counts the copied reverse answer as right": counts_copied_answer,
            "evaluates the reverse pair": reverse_pair_rows,
            "one number for the whole ensemble": lambda model, task: held_out_accuracy(
                model(task.info["held_out"].x), task).mean(),
        },
    ),
    Contract(
        check_11_line_up,
        reference=lambda E, tokens, values: float(line_up(E, tokens, values)),
        wrong={
            "variance share of the first principal axis": pc1_share,
            "no centring": uncentred,
            "R² of values regressed on embeddings": values_on_embeddings,
        },
    ),
    Contract(
        checks.check_11_knn_overlap,
        reference=knn_overlap,
        wrong={
            "token counted as its own neighbour": lambda A, B, k: _shared(top_k(A, k, keep_self=True), top_k(B, k, keep_self=True)) / k,
            "Euclidean instead of cosine": lambda A, B, k: _shared(top_k(A, k, "euclidean"), top_k(B, k, "euclidean")) / k,
            "dot product without normalising": lambda A, B, k: _shared(top_k(A, k, "dot"), top_k(B, k, "dot")) / k,
            "matches counted position by position": lambda A, B, k: (top_k(A, k) == top_k(B, k)).double().mean(1),
            "divided by V instead of k": lambda A, B, k: _shared(top_k(A, k), top_k(B, k)) / A.shape[0],
            "mean over tokens instead of per token": lambda A, B, k: (_shared(top_k(A, k), top_k(B, k)) / k).mean(),
        },
    ),
    Contract(
        checks.check_11_signature_classes,
        reference=classes_of,
        wrong={
            "exact equality, no tolerance": classes_by(lambda S: S),
            "rows rounded to 2 decimals": classes_by(lambda S: S.round(decimals=2)),
            "grouped by row sum": classes_by(lambda S: S.sum(1, keepdim=True).round(decimals=6)),
            "grouped by most likely label": classes_by(lambda S: S.argmax(1, keepdim=True)),
            "rounded to a grid of 1e-6": classes_by(lambda S: torch.round(S.double() / 1e-6)),
            "floored to a grid of 1e-6": classes_by(lambda S: torch.floor(S.double() / 1e-6)),
            "rounded to 3 decimals (grid 1000 x too coarse)": classes_by(lambda S: S.double().round(decimals=3)),
            "compared with the previous row only": _runs_of_equal_rows,
        },
    ),
]

"""Lesson 12 (composition): reference answers and typical mistakes for each check."""


from __future__ import annotations

import torch

from contracts import Contract
from ctxlab import checks
from ctxlab.composition import accuracy, held_out_accuracy, held_out_outcomes, line_up


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


CONTRACT = [
    Contract(
        checks.check_12_held_out_accuracy,
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
        checks.check_12_line_up,
        reference=lambda E, tokens, values: float(line_up(E, tokens, values)),
        wrong={
            "variance share of the first principal axis": pc1_share,
            "no centring": uncentred,
            "R² of values regressed on embeddings": values_on_embeddings,
        },
    ),
]

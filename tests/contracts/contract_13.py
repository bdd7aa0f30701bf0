"""Lesson 13 (semantic structure): reference answers and typical mistakes for each check."""


from __future__ import annotations

import math

import torch

from contracts import Contract
from ctxlab import checks
from ctxlab.align import overlap_trajectory
from ctxlab.rungs import crossing_step
from ctxlab.checks.lesson13 import classes_of, knn_overlap, neighbours_by, runs_of_equal_rows, shared_count


def top_k(M, k, how="cosine", keep_self=False):
    return neighbours_by(M, k, "with itself" if keep_self else how)


def classes_by(key):
    return lambda S: torch.unique(key(S), dim=0, return_inverse=True)[1]


def self_dropped_as_first_column(A, B, k):
    def top(M):
        unit = M.double() / M.double().norm(dim=1, keepdim=True)
        return (unit @ unit.T).topk(k + 1, dim=1).indices[:, 1:]
    return shared_count(top(A), top(B)) / k


def isclose_default_rtol(S):
    """Greedy classes with torch.isclose's defaults (rtol 1e-5) instead of the absolute 1e-6."""
    labels = torch.full((S.shape[0],), -1, dtype=torch.long)
    for i in range(S.shape[0]):
        if labels[i] < 0:
            labels[(labels < 0) & torch.isclose(S.double(), S.double()[i], atol=1e-6).all(1)] = i
    return labels


CONTRACT = [
    Contract(
        checks.check_13_knn_overlap,
        reference=knn_overlap,
        wrong={
            "token counted as its own neighbour": lambda A, B, k: shared_count(top_k(A, k, keep_self=True), top_k(B, k, keep_self=True)) / k,
            "Euclidean instead of cosine": lambda A, B, k: shared_count(top_k(A, k, "euclidean"), top_k(B, k, "euclidean")) / k,
            "dot product without normalising": lambda A, B, k: shared_count(top_k(A, k, "dot"), top_k(B, k, "dot")) / k,
            "matches counted position by position": lambda A, B, k: (top_k(A, k) == top_k(B, k)).double().mean(1),
            "divided by V instead of k": lambda A, B, k: shared_count(top_k(A, k), top_k(B, k)) / A.shape[0],
            "mean over tokens instead of per token": lambda A, B, k: (shared_count(top_k(A, k), top_k(B, k)) / k).mean(),
            "self dropped as column 0 of a top-(k+1)": self_dropped_as_first_column,
        },
        hints={"self dropped as column 0 of a top-(k+1)": "exclude the token itself by its index"},
    ),
    Contract(
        checks.check_13_signature_classes,
        reference=classes_of,
        wrong={
            "exact equality, no tolerance": classes_by(lambda S: S),
            "rows rounded to 2 decimals": classes_by(lambda S: S.round(decimals=2)),
            "grouped by row sum": classes_by(lambda S: S.sum(1, keepdim=True).round(decimals=6)),
            "grouped by most likely label": classes_by(lambda S: S.argmax(1, keepdim=True)),
            "rounded to a grid of 1e-6": classes_by(lambda S: torch.round(S.double() / 1e-6)),
            "floored to a grid of 1e-6": classes_by(lambda S: torch.floor(S.double() / 1e-6)),
            "rounded to 3 decimals (grid 1000 x too coarse)": classes_by(lambda S: S.double().round(decimals=3)),
            "compared with the previous row only": runs_of_equal_rows,
            "torch.isclose with its default rtol": isclose_default_rtol,
        },
        hints={"torch.isclose with its default rtol": "relative tolerance"},
    ),
]


# --- exercise 3 (build it): the inits compared at matched loss -------------------------------------


def first_steps(steps, loss, target, *, strict=False, last=False, index=False, never=math.nan, shared_grid=False,
                common=False, nan_counts=False):
    """Each model's first recorded step with loss <= target, written as a learner would, one mistake switched on."""
    there = ~(loss > target) if nan_counts else (loss < target if strict else loss <= target)
    T = there.shape[1]
    position = T - 1 - there.flip(1).int().argmax(1) if last else there.int().argmax(1)
    grid = steps[0].expand_as(steps) if shared_grid else steps
    found = position.double() if index else grid.double().gather(1, position[:, None])[:, 0]
    if never == "first":
        fill = steps[:, 0].double()
    elif never == "last":
        fill = steps[:, -1].double()
    else:
        fill = torch.full_like(found, never)
    found = torch.where(there.any(1), found, fill)
    return found.max().expand_as(found).clone() if common else found


def by_crossing_step(steps, loss, target):
    """The lesson's crossing_step, row by row: strictly below, and -1 when never."""
    return torch.stack([crossing_step(s, c, target) for s, c in zip(steps, loss)]).double()


def matched_gap(run, S, tokens, small, target, k, *, read="own", mean="nan", sign=1, displacement=True,
                among_tokens=True, as_index=False):
    """The small-init minus standard-init overlap at matched loss on E and E - E0, one mistake switched on."""
    matched = first_steps(run.steps.expand_as(run.loss), run.loss, target)
    T = len(run.steps)
    gaps = []
    for moved in (False, True):
        curve = overlap_trajectory(run, S, k, tokens=tokens if among_tokens else None, relative_to_init=moved and displacement)
        at = torch.full((len(matched),), math.nan, dtype=torch.float64)
        for model, step in enumerate(matched.tolist()):
            if math.isnan(step) and read != "never at last":
                continue
            record = int((run.steps == step).nonzero()[0]) if not math.isnan(step) else T - 1
            if read == "last":
                record = T - 1
            elif read == "common":
                record = int((run.steps == matched.nan_to_num(-1).max()).nonzero()[0])
            elif as_index:
                record = int(step)
            at[model] = curve[model, record]
        average = torch.nanmean if mean == "nan" else torch.mean
        gaps.append(sign * (average(at[small]) - average(at[~small])))
    return torch.stack(gaps)


CONTRACT += [
    Contract(
        checks.check_13_first_step_at_or_below,
        reference=first_steps,
        wrong={
            "the crossing index instead of the step": lambda *a: first_steps(*a, index=True),
            "the last step at or below instead of the first": lambda *a: first_steps(*a, last=True),
            "strictly below (<) instead of at or below": lambda *a: first_steps(*a, strict=True),
            "never as step 0": lambda *a: first_steps(*a, never=0.0),
            "never as -1": lambda *a: first_steps(*a, never=-1.0),
            "never as the first recorded step (argmax of an all-false row)": lambda *a: first_steps(*a, never="first"),
            "never as the last recorded step": lambda *a: first_steps(*a, never="last"),
            "one shared step grid (the first row for every model)": lambda *a: first_steps(*a, shared_grid=True),
            "every model at one common step (matching at equal steps)": lambda *a: first_steps(*a, common=True),
            "a NaN loss counted as reached (not above the target)": lambda *a: first_steps(*a, nan_counts=True),
            "the lesson's crossing_step row by row (strict, -1 for never)": by_crossing_step,
        },
        hints={
            "the crossing index instead of the step": "crossing index",
            "the last step at or below instead of the first": "the first one",
            "strictly below (<) instead of at or below": "at or below (<=)",
            "never as step 0": "NaN", "never as -1": "NaN", "never as the last recorded step": "NaN",
            "never as the first recorded step (argmax of an all-false row)": "NaN",
            "one shared step grid (the first row for every model)": "own row",
            "every model at one common step (matching at equal steps)": "equal steps",
            "a NaN loss counted as reached (not above the target)": "NaN loss",
            "the lesson's crossing_step row by row (strict, -1 for never)": "NaN",
        },
    ),
    Contract(
        checks.check_13_matched_loss_gap,
        reference=matched_gap,
        wrong={
            "every model read at the last record (equal steps)": lambda *a: matched_gap(*a, read="last"),
            "every model read at the latest matched step": lambda *a: matched_gap(*a, read="common"),
            "standard minus small": lambda *a: matched_gap(*a, sign=-1),
            "E used twice, no E - E0": lambda *a: matched_gap(*a, displacement=False),
            "plain mean over models that never got there": lambda *a: matched_gap(*a, mean="plain"),
            "models that never got there read at their last record": lambda *a: matched_gap(*a, read="never at last"),
            "neighbours among all tokens": lambda *a: matched_gap(*a, among_tokens=False),
            "the matched step used as a record index": lambda *a: matched_gap(*a, as_index=True),
        },
        hints={
            "every model read at the last record (equal steps)": "equal steps",
            "every model read at the latest matched step": "one common step",
            "standard minus small": "small-init mean minus",
            "E used twice, no E - E0": "displacement",
            "plain mean over models that never got there": "left out",
            "models that never got there read at their last record": "not read at its last record",
            "neighbours among all tokens": "given tokens",
        },
    ),
]

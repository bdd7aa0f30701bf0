"""Lesson 13 (semantic structure): reference answers and typical mistakes for each check."""


from __future__ import annotations

import torch

from contracts import Contract
from ctxlab import checks
from ctxlab.checks.lesson13 import classes_of, knn_overlap, neighbours_by, runs_of_equal_rows, shared_count


def top_k(M, k, how="cosine", keep_self=False):
    return neighbours_by(M, k, "with itself" if keep_self else how)


def classes_by(key):
    return lambda S: torch.unique(key(S), dim=0, return_inverse=True)[1]


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
        },
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
        },
    ),
]

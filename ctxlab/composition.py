"""Measuring composition vs memorisation on the anchor-composition task (lesson 12).

A model that *reasons* applies the two anchors' shifts to the key, so it also answers the
held-out anchor pair correctly; a model that *memorises* fits every trained pair as a separate
look-up and has nothing to say about the held-out one (or copies the reverse pair's answer).
This module turns logits and embeddings into those two readings:

* :func:`held_out_outcomes` -- on the held-out pair, the share of keys answered by composition,
  by copying the reverse pair (the "symmetric" answer), or otherwise.
* :func:`line_up` -- how much of a set of token embeddings lies along a line indexed by the tokens'
  numbers (the anchors' shifts, the keys' values): the structure that lets shifts add up.
* :func:`composition_probes` -- both accuracies as ``train(probes=...)`` functions, recorded at
  every checkpoint of one batched ensemble run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from ctxlab.models import ensemble_grid, make_model
from ctxlab.tasks import Dataset, Task
from ctxlab.train import train
from ctxlab.validate import finite, token_ids


def _check_logits(logits: Tensor, n_rows: int) -> Tensor:
    logits = finite(logits, "logits")
    if logits.ndim != 3 or logits.shape[1] != n_rows:
        raise ValueError(f"logits must be [K, N, C] with N = {n_rows} rows, got {tuple(logits.shape)}")
    return logits


def accuracy(logits: Tensor, data: Dataset) -> Tensor:
    """Share of rows whose argmax class is the label, per model: [K] (data must have integer labels)."""
    if data.y.ndim != 1:
        raise ValueError("accuracy needs integer labels, not soft label distributions")
    logits = _check_logits(logits, data.n)
    return (logits.argmax(-1) == data.y.to(logits.device)).float().mean(-1)


def majority_share(data: Dataset) -> float:
    """The accuracy of always answering the most common label: where a model that has learned only the
    label counts rests (lesson 12's small init, before it fits the pairs)."""
    if data.y.ndim != 1:
        raise ValueError("majority_share needs integer labels, not soft label distributions")
    return float(torch.bincount(data.y.long()).max()) / data.n


def held_out_outcomes(logits: Tensor, task: Task) -> dict[str, Tensor]:
    """What each model answers on the held-out pair: shares of keys [K] per outcome.

    ``logits`` [K, n_keys, C] are the model's outputs on ``task.info["held_out"].x``.
    "composed": the label the two shifts give; "symmetric": the reverse pair's trained label
    (only distinct from "composed" when ``reverse_offset != 0``); "other": anything else.
    """
    if "held_out" not in task.info:
        raise ValueError(f"task {task.name!r} has no held-out pair (use anchor_composition_task)")
    test: Dataset = task.info["held_out"]
    pred = _check_logits(logits, test.n).argmax(-1)
    composed = (pred == test.y.to(pred.device)).float().mean(-1)
    symmetric = (pred == task.info["symmetric_labels"].to(pred.device)).float().mean(-1)
    if task.info.get("reverse_offset", 0) == 0:
        symmetric = torch.zeros_like(composed)
    return {"composed": composed, "symmetric": symmetric, "other": 1.0 - composed - symmetric}


def held_out_accuracy(logits: Tensor, task: Task) -> Tensor:
    """Accuracy on the held-out pair [K]: the share of keys answered by composing the shifts."""
    return held_out_outcomes(logits, task)["composed"]


def line_up(E: Tensor, tokens, values) -> Tensor:
    """Share of the tokens' embedding variance explained by a straight line indexed by ``values``.

    E [..., V, d]; tokens: the n token ids to use; values: their n numbers. Each embedding
    coordinate is regressed on the value (intercept + slope, least squares, pooled over the d
    coordinates): 1 means the centred embeddings are exactly ``(value - mean) * b`` for one
    direction b, so shift differences are embedding differences along b. Why this direction and
    not value-from-embedding: with n = 4 anchors in d >= 3 dimensions a linear read-out fits any
    values perfectly, whereas a line through embedding space is a real constraint.
    Chance level for random embeddings is 1/(n-1). Returns [...].
    """
    E = finite(E, "E (embeddings)").to(torch.float64)
    tokens = token_ids(tokens, "tokens").long()
    v = finite(values, "values", dtype=torch.float64)
    if E.ndim < 2:
        raise ValueError(f"E must be [..., V, d], got shape {tuple(E.shape)}")
    if tokens.ndim != 1 or v.shape != tokens.shape or tokens.numel() < 3:
        raise ValueError("tokens and values must be 1-d, the same length, and hold at least 3 tokens")
    v = v - v.mean()
    if float(v.norm()) == 0:
        raise ValueError("values are all equal: a line indexed by them is undefined")
    X = E[..., tokens, :]
    X = X - X.mean(-2, keepdim=True)
    along = torch.einsum("n,...nd->...d", v, X) / v.norm()  # projection of the data onto the value axis
    return along.pow(2).sum(-1) / X.pow(2).sum((-2, -1)).clamp_min(1e-300)


def anchor_line_up(E: Tensor, task: Task) -> Tensor:
    """:func:`line_up` of the anchor embeddings against their shifts: [...]."""
    anchors = task.role_tokens("anchor")
    return line_up(E, anchors, task.info["values"][anchors])


def key_line_up(E: Tensor, task: Task) -> Tensor:
    """:func:`line_up` of the key embeddings against the key values: [...]."""
    keys = task.role_tokens("key")
    return line_up(E, keys, task.info["values"][keys])


def composition_probes(task: Task) -> dict[str, Callable]:
    """Probes for :func:`ctxlab.train.train`: training accuracy and the held-out outcomes, each [K]."""
    train_data: Dataset = task.population
    test: Dataset = task.info["held_out"]

    def train_acc(model) -> Tensor:
        return accuracy(model(train_data.x.to(model.embedding.device)), train_data)

    def outcome(name: str) -> Callable:
        return lambda model: held_out_outcomes(model(test.x.to(model.embedding.device)), task)[name]

    return {"train_acc": train_acc, "composed": outcome("composed"), "symmetric": outcome("symmetric")}


@dataclass(frozen=True)
class CompositionRun:
    """One ensemble trained on an anchor-composition task (lesson 12's headline), gamma-major.

    gammas, seeds: per model; steps [T]; train_acc, composed, symmetric [K, T]: the training
    accuracy and the shares of held-out keys answered with the composed label or with the reverse
    pair's label (:func:`composition_probes`); embeddings [K, V, d]: the final embedding tables.
    """

    gammas: list[float]
    seeds: list[int]
    steps: Tensor
    train_acc: Tensor
    composed: Tensor
    symmetric: Tensor
    embeddings: Tensor


def composition_run(task: Task, gammas: Sequence[float] = (0.3, 0.5, 1.0), seeds: Sequence[int] = (0, 1, 2),
                    steps: int = 1000, lr: float = 1.0, d: int = 16, hidden: int = 64,
                    record_every: int = 20, device=None) -> CompositionRun:
    """Train an Emb-MLP per (γ, seed) with full-batch GD and record whether the held-out pair is composed."""
    g, s = ensemble_grid(gammas, seeds)
    model = make_model("mlp", task, gamma=g, seed=s, d=d, hidden=hidden)
    run = train(model, task.population, steps, lr=lr, record_every=record_every, probes=composition_probes(task),
                progress=False, device=device)
    return CompositionRun(g, s, run.steps, run.extras["train_acc"], run.extras["composed"], run.extras["symmetric"],
                          run.embeddings[:, -1])

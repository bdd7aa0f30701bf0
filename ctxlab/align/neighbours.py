"""The semantic structure of an embedding (lessons 13 and beyond): nearest neighbours, their overlap
with a signature's (read over training, or at matched loss), and how tokens of one signature class
gather while other classes part."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from ctxlab.align.metrics import as_matrix, row_cosines, token_index
from ctxlab.models import ensemble_grid, make_model
from ctxlab.rungs import stair_onsets
from ctxlab.signatures import label_signature
from ctxlab.theory import plateau_levels
from ctxlab.train import train
from ctxlab.validate import finite, integer, number, token_ids


def _unit_cosines(M: Tensor) -> Tensor:
    """Cosine similarities between the rows of M [..., V, m], float64, with the diagonal at -inf."""
    M = torch.as_tensor(M).to(torch.float64)
    sims = row_cosines(M)
    eye = torch.eye(M.shape[-2], dtype=torch.bool, device=M.device)
    return sims.masked_fill(eye, -float("inf"))


def nearest(M: Tensor, row: int, k: int = 5) -> list[int]:
    """The ``k`` rows of M [V, m] with the highest cosine similarity to row ``row`` (itself excluded)."""
    if not 0 <= integer(row, "row") < M.shape[0] or integer(k, "k") < 1:
        raise ValueError(f"row must lie in [0, {M.shape[0]}) and k >= 1")
    return _unit_cosines(M)[row].topk(min(k, M.shape[0] - 1)).indices.tolist()


def neighbour_overlap(A: Tensor, B: Tensor, k: int = 10) -> Tensor:
    """For each row, the fraction of its ``k`` cosine nearest neighbours under A that are also among
    its ``k`` nearest under B: [..., V] for A [..., V, m] and B [..., V, m'] (leading axes broadcast).

    A token never counts as its own neighbour, and the order within the top k does not matter.
    Chance level: :func:`overlap_chance`.
    """
    if A.ndim < 2 or B.ndim < 2 or A.shape[-2] != B.shape[-2] or not 1 <= integer(k, "k") < A.shape[-2]:
        raise ValueError(f"A and B need the same number of rows (> k), got {tuple(A.shape)}, {tuple(B.shape)}, k={k}")
    a, b = _unit_cosines(A).topk(k, dim=-1).indices, _unit_cosines(B).topk(k, dim=-1).indices
    return (a[..., :, None] == b[..., None, :]).any(-1).to(torch.float64).mean(-1)


def overlap_chance(n_tokens: int, k: int) -> float:
    """Expected :func:`neighbour_overlap` of two unrelated geometries: k random picks of n_tokens - 1."""
    if not 1 <= integer(k, "k") < integer(n_tokens, "n_tokens"):
        raise ValueError(f"need 1 <= k < n_tokens, got k={k}, n_tokens={n_tokens}")
    return k / (n_tokens - 1)


def overlap_trajectory(traj, S, k: int = 5, tokens=None, relative_to_init: bool = False) -> Tensor:
    """Mean neighbour overlap of every recorded embedding with the signature S [V, m]: [K, T].

    Neighbours are searched among ``tokens`` only (e.g. the most frequent ones), in E and in S.
    ``relative_to_init`` uses E(t) - E(0): what training added, without the random start; it is
    NaN at step 0, where the displacement is zero and has no neighbours.
    """
    E = torch.as_tensor(traj.embeddings if hasattr(traj, "embeddings") else traj).to(torch.float64)
    S = as_matrix(S).to(torch.float64)
    if E.ndim != 4 or E.shape[-2] != S.shape[0]:
        raise ValueError(f"expected embeddings [K, T, V, d] and S [V, m], got {tuple(E.shape)} and {tuple(S.shape)}")
    if relative_to_init:
        E = E - E[:, :1]
    if tokens is not None:
        idx = token_index(tokens, S.shape[0])
        E, S = E[..., idx, :], S[idx]
    out = neighbour_overlap(E, S, k).mean(-1)
    if relative_to_init:
        out[:, 0] = float("nan")
    return out


def at_matched_loss(loss: Tensor, values: Tensor, levels) -> Tensor:
    """``values`` [K, T] read at each model's first recorded step with ``loss`` [K, T] at or below
    each of ``levels`` [n]: [K, n], NaN where a model never got that low.

    Runs compared after the same number of steps may differ only in how far training has got
    (one init may simply be further along). Compared at the same loss, they are at the same point
    of progress, whatever number of steps it took each of them.
    """
    loss, values = torch.as_tensor(loss), torch.as_tensor(values).to(torch.float64)
    levels = torch.as_tensor(finite(levels, "levels"), dtype=loss.dtype).reshape(-1)
    if loss.ndim != 2 or values.shape != loss.shape:
        raise ValueError(f"need loss [K, T] and values of the same shape, got {tuple(loss.shape)} and {tuple(values.shape)}")
    hit = loss[:, None, :] <= levels[None, :, None]  # [K, n, T]
    first = hit.to(torch.int8).argmax(-1)  # [K, n]: the first True (0 where there is none)
    read = values.gather(1, first)
    return read.masked_fill(~hit.any(-1), float("nan"))


def signature_classes(*signatures, tol: float = 1e-6) -> Tensor:
    """Class id of every token [V]: tokens share a class iff their rows agree (within ``tol``) in
    every given signature. Classes are numbered in order of their first token.

    Passing order-1 only groups the hierarchy task's keys by attribute but lumps all anchors
    together; adding order 2 splits the first anchors by attribute, and so on.
    """
    if not signatures:
        raise ValueError("give at least one signature")
    number(tol, "tol", minimum=0)
    mats = [as_matrix(S).to(torch.float64) for S in signatures]
    if any(m.ndim != 2 or m.shape[0] != mats[0].shape[0] for m in mats):
        raise ValueError("signatures must be [V, m] matrices over the same tokens")
    rows = torch.cat(mats, dim=1)
    V = rows.shape[0]
    close = (rows[:, None, :] - rows[None, :, :]).abs().amax(-1) <= tol  # [V, V]
    ids = torch.full((V,), -1, dtype=torch.long)
    n = 0
    for s in range(V):
        if ids[s] < 0:
            ids[close[s] & (ids < 0)] = n
            n += 1
    return ids


def class_cosines(E, classes, tokens=None) -> tuple[Tensor, Tensor]:
    """Mean cosine between distinct tokens of the same class and between tokens of different
    classes: (within [...], between [...]) for E [..., V, d] and class ids [V].

    ``tokens`` restricts both to a subset (e.g. one role), so "between" compares like with like.
    """
    E = finite(E, "E (embeddings)").to(torch.float64)
    classes = token_ids(classes, "classes").long()
    if E.ndim < 2 or classes.shape != (E.shape[-2],):
        raise ValueError(f"expected E [..., V, d] and classes [V], got {tuple(E.shape)} and {tuple(classes.shape)}")
    if tokens is not None:
        idx = token_index(tokens, len(classes))
        E, classes = E[..., idx, :], classes[idx]
    same = classes[:, None] == classes[None, :]
    within_pairs = same & ~torch.eye(len(classes), dtype=torch.bool)
    if not within_pairs.any() or same.all():
        raise ValueError("need at least one class with two tokens and at least two classes")
    sims = row_cosines(E)
    return sims[..., within_pairs].mean(-1), sims[..., ~same].mean(-1)


def hierarchy_class_groups(task) -> dict[str, tuple[Tensor, Tensor]]:
    """The hierarchy task's two groups with the signature classes that separate them:
    name -> (class ids [V], token ids): the keys by their order-1 classes, the first anchors by
    their order-1-and-2 classes (their order-1 rows are all uniform)."""
    data = task.population
    sig1, sig2 = label_signature(data, 1, "raw"), label_signature(data, 2, "raw")
    return {"keys (order-1 classes)": (signature_classes(sig1), task.role_tokens("key")),
            "first anchors (order-2 classes)": (signature_classes(sig1, sig2), task.role_tokens("anchor1"))}


@dataclass(frozen=True)
class ClassCollapse:
    """Within- and between-class cosines of an Emb-MLP ensemble over training (lesson 13's headline).

    gammas, seeds: per model; steps [T]; cosines: group name -> (within [K, T], between [K, T]);
    onsets [K, n]: stair onsets (-1: never halfway down); mean_onsets: γ -> the mean onset of every stair
    that all of that γ's seeds got halfway down; start, end [K, V, d]: the first and last embedding tables.
    """

    gammas: list[float]
    seeds: list[int]
    steps: Tensor
    cosines: dict
    onsets: Tensor
    mean_onsets: dict
    start: Tensor
    end: Tensor


def class_collapse(task, groups: dict, gammas: Sequence[float] = (1.0, 0.5), seeds: Sequence[int] = (0, 1, 2),
                   steps: int = 1200, lr: float = 1.0, d: int = 32, hidden: int = 128,
                   record_every: int = 10, device=None) -> ClassCollapse:
    """Train Emb-MLP (GELU, full-batch GD) per (γ, seed) and follow how close same-class tokens come,
    for every group name -> (class ids [V], token ids), e.g. :func:`hierarchy_class_groups`."""
    g, s = ensemble_grid(gammas, seeds)
    data = task.population
    model = make_model("mlp", task, d=d, hidden=hidden, activation="gelu", gamma=g, seed=s)
    run = train(model, data, steps, optimizer="gd", lr=lr, record_every=record_every, progress=False,
                device=device)
    cosines = {name: class_cosines(run.embeddings, cls, tokens=idx) for name, (cls, idx) in groups.items()}
    onsets = stair_onsets(run.steps, run.loss, plateau_levels(data))  # [K, n]
    mean_onsets = {}
    for gamma in dict.fromkeys(g):
        rows = onsets[torch.tensor(g) == gamma]
        mean_onsets[gamma] = [int(col[col >= 0].float().mean()) for col in rows.T if bool((col >= 0).all())]
    return ClassCollapse(g, s, run.steps, cosines, onsets, mean_onsets, run.embeddings[:, 0], run.embeddings[:, -1])

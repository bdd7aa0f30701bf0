"""Anchor composition (lesson 12): does a model compose shifts it has only seen separately?"""

from __future__ import annotations


import torch
from torch import Tensor

from ctxlab.dataset import Dataset
from ctxlab.validate import integer

from ctxlab.tasks.core import Task


def anchor_composition_task(n_keys: int = 20, shifts: tuple[int, ...] = (5, 1, -2, -8),
                            held_out: tuple[int, int] = (4, 3), reverse_offset: int = 4) -> Task:
    """Sequences (key, anchor1, anchor2); each anchor a in 1..len(shifts) adds ``shifts[a-1]`` to the key.

    The label is ``key + shift(anchor1) + shift(anchor2)``, stored as a class index offset so the
    smallest possible label is 0. The key comes first, then the two anchors in the order they are
    applied, as in the group's anchor-function data (x, a1, a2 side by side); with a position-wise
    model (Emb-MLP) the order only fixes which weight slice reads which token.

    The pair ``held_out`` is never trained. Its reverse pair is trained with a label that is NOT the
    composition: it gets an extra ``reverse_offset`` (the group's design: (3, 4) -> x - 6, while
    composing gives x - 10 for (4, 3)). So on the held-out pair a model that *composes* the two
    shifts answers ``key + s4 + s3`` while one that treats the pair as the (memorised) reverse pair
    answers ``key + s4 + s3 + reverse_offset``. ``reverse_offset=0`` makes the reverse pair plain
    composition (then the two answers coincide).

    The population (uniform over keys and trained pairs) is the training set;
    ``info["held_out"]`` is the held-out pair's Dataset (compositional labels) and
    ``info["symmetric_labels"]`` the labels a model copying the reverse pair would give.
    Tokens: keys ``k0..``, then anchors ``a1..``; ``info["values"]`` holds each token's number
    (key value, or anchor shift).
    """
    n_anchors = len(shifts)
    if integer(n_keys, "n_keys") < 2 or n_anchors < 2:
        raise ValueError("need at least 2 keys and 2 anchors")
    for s in shifts:
        integer(s, "each of shifts")
    if len(held_out) != 2:
        raise ValueError(f"held_out must be a pair of anchors, got {held_out}")
    a, b = (integer(h, "held_out") for h in held_out)
    if not (1 <= a <= n_anchors and 1 <= b <= n_anchors) or a == b:
        raise ValueError(f"held_out must be two different anchors in 1..{n_anchors}, got {held_out}")
    sh = torch.tensor(shifts, dtype=torch.long)
    pairs = [(p, q) for p in range(1, n_anchors + 1) for q in range(1, n_anchors + 1)]
    keys = torch.arange(n_keys)

    def raw(p: int, q: int) -> Tensor:
        return keys + sh[p - 1] + sh[q - 1] + (reverse_offset if (p, q) == (b, a) else 0)

    low = min(int(raw(p, q).min()) for p, q in pairs)
    high = max(int(raw(p, q).max()) for p, q in pairs)

    def rows(p: int, q: int) -> Tensor:
        return torch.stack([keys, torch.full_like(keys, n_keys + p - 1), torch.full_like(keys, n_keys + q - 1)], 1)

    trained = [pq for pq in pairs if pq != (a, b)]
    x = torch.cat([rows(p, q) for p, q in trained])
    y = torch.cat([raw(p, q) for p, q in trained]) - low
    V, C = n_keys + n_anchors, high - low + 1
    pop = Dataset(x, y, V, C, torch.full((x.shape[0],), 1.0 / x.shape[0]))
    composed = keys + sh[a - 1] + sh[b - 1] - low
    test = Dataset(rows(a, b), composed, V, C, torch.full((n_keys,), 1.0 / n_keys))
    return Task(
        name="anchor_composition",
        population=pop,
        token_names=tuple(f"k{j}" for j in range(n_keys)) + tuple(f"a{p}" for p in range(1, n_anchors + 1)),
        roles=("key",) * n_keys + ("anchor",) * n_anchors,
        description=(f"label = key + shift(a1) + shift(a2), shifts {tuple(shifts)}; pair {held_out} held out, "
                     f"its reverse trained with +{reverse_offset}"),
        info={"shifts": tuple(shifts), "held_out": test, "held_out_pair": (a, b),
              "symmetric_labels": composed + reverse_offset, "reverse_offset": reverse_offset,
              "label_offset": -low, "label_range": (low, high), "n_keys": n_keys,
              "values": torch.cat([keys, sh]).to(torch.float64)},
    )

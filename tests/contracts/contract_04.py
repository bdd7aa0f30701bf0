"""Lesson 04: reference answers and typical mistakes for each check."""

from __future__ import annotations

import torch

from contracts import Contract
from ctxlab import checks
from ctxlab.checks.core import hard_labels
from ctxlab.signatures import joint
from ctxlab.theory import mlp_embedding_velocity


def e1(model, data, slope=None, conditional=False, centre=True, positions=None, transpose=False):
    """E1 with switchable mistakes."""
    K, V, d = model.embedding.shape
    L, C = model.seq_len, model.n_labels
    w1 = model.w1.detach().double().reshape(K, L, d, -1)
    w2 = model.w2.detach().double()
    out = torch.zeros(K, V, d, dtype=torch.float64)
    for i in positions if positions is not None else range(L):
        table = joint(data, (i,))
        pi = table.sum(-1, keepdim=True)
        if conditional:
            table = torch.where(pi > 0, table / pi.clamp_min(1e-300), torch.zeros_like(table))
            pi = (pi > 0).double()
        drive = table - pi / C if centre else table
        M = w1[:, i] @ w2  # [K, d, C]
        out += drive[None] @ (M if transpose else M.transpose(-1, -2))
    s = slope if slope is not None else {"gelu": 0.5, "tanh": 1.0}[model.activation]
    return s * out


def ratio(pa, pb, qa, qb):
    return pa * float((qa - 1 / len(qa)).norm()) / (pb * float((qb - 1 / len(qb)).norm()))


CONTRACT = [
    Contract(
        checks.check_04_e1_velocity,
        reference=mlp_embedding_velocity,
        wrong={
            "forgot sigma'(0) = 1/2": lambda m, d: e1(m, d, slope=1.0),
            "P(y | x_i = s) without the frequency": lambda m, d: e1(m, d, conditional=True),
            "forgot to subtract u": lambda m, d: e1(m, d, centre=False),
            "transposed M": lambda m, d: e1(m, d, transpose=True),
            "only the first position": lambda m, d: e1(m, d, positions=[0]),
            "one label per row (argmax), not the distribution": lambda m, d: mlp_embedding_velocity(m, hard_labels(d)),
        },
    ),
    Contract(
        checks.check_04_update_ratio,
        reference=ratio,
        wrong={
            "frequencies only": lambda pa, pb, qa, qb: pa / pb,
            "inverted": lambda pa, pb, qa, qb: 1 / ratio(pa, pb, qa, qb),
            "forgot to subtract u": lambda pa, pb, qa, qb: pa * float(qa.norm()) / (pb * float(qb.norm())),
            "squared frequencies": lambda pa, pb, qa, qb: ratio(pa, pb, qa, qb) * pa / pb,
        },
    ),
]

"""Lesson 04: reference answers and typical mistakes for each check."""

from __future__ import annotations

import math

import torch

from contracts import Contract
from ctxlab import checks
from ctxlab.checks.core import hard_labels
from ctxlab.signatures import joint
from ctxlab.models import make_model
from ctxlab.theory import mlp_embedding_velocity
from ctxlab.train import train


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


# --- exercise 3, build it: the ε⁴ law of E1 -------------------------------------------------------------


def e1_law(data, gammas, d=32, hidden=128, seed=0, *, sign=1.0, per_token=False, every_parameter=False, stepped=False,
           unweighted=False, cosine_dtype=torch.float64, seed_step=0, x_axis="ln eps", y_log=torch.log):
    """The learner's measurement, written out with autograd, one mistake switchable at a time."""
    model = make_model("mlp", data, gamma=list(gammas), seed=[seed + seed_step * k for k in range(len(gammas))], d=d, hidden=hidden)
    predicted = e1(model, data)
    if stepped:  # an SGD step at lr 1 before the exact velocity is read
        train(model, data, 1, lr=1.0, progress=False)
    weights = torch.full((data.n,), 1.0 / data.n) if unweighted else data.weights
    loss = (-(torch.log_softmax(model(data.x), -1) * data.targets()).sum(-1) @ weights).sum()
    wrt = list(model.parameters()) if every_parameter else [model.embedding]
    grads = torch.autograd.grad(loss, wrt)
    exact = -sign * grads[0].flatten(1).to(cosine_dtype)
    a = predicted.to(cosine_dtype)
    if per_token:
        cos = torch.nn.functional.cosine_similarity(a, exact.reshape(a.shape), dim=-1).mean(-1)
    else:
        a = a.flatten(1)
        norm = torch.cat([g.flatten(1) for g in grads], 1).to(cosine_dtype).norm(dim=1)
        cos = (a * exact).sum(1) / (a.norm(dim=1) * norm)
    gaps = (1 - cos).double()
    g = torch.tensor(list(gammas), dtype=torch.float64)
    x = {"ln eps": -g / 2 * math.log(data.seq_len * d * d), "gamma": g, "eps = d^-gamma": -g * math.log(d)}[x_axis]
    y = y_log(gaps)
    xc = x - x.mean()
    return gaps, float((xc * (y - y.mean())).sum() / (xc * xc).sum())


CONTRACT.append(
    Contract(
        checks.check_04_e1_law,
        reference=e1_law,
        wrong={
            "gradient instead of velocity (wrong sign)": lambda *a: e1_law(*a, sign=-1.0),
            "cosine per token, averaged": lambda *a: e1_law(*a, per_token=True),
            "velocity of every parameter": lambda *a: e1_law(*a, every_parameter=True),
            "exact velocity after a step": lambda *a: e1_law(*a, stepped=True),
            "row weights ignored": lambda *a: e1_law(*a, unweighted=True),
            "cosine in float32": lambda *a: e1_law(*a, cosine_dtype=torch.float32),
            "a seed per gamma": lambda *a: e1_law(*a, seed_step=1),
            "slope against gamma": lambda *a: e1_law(*a, x_axis="gamma"),
            "log10 of the gap against ln eps": lambda *a: e1_law(*a, y_log=torch.log10),
            "eps = d^-gamma": lambda *a: e1_law(*a, x_axis="eps = d^-gamma"),
            "one label per row (argmax)": lambda d, *a: e1_law(hard_labels(d), *a),
        },
        hints={
            "gradient instead of velocity (wrong sign)": "wrong sign", "cosine per token, averaged": "per token",
            "velocity of every parameter": "embeddings alone", "exact velocity after a step": "after an update",
            "row weights ignored": "row weights", "cosine in float32": "float32", "a seed per gamma": "same seed",
            "slope against gamma": "against γ", "log10 of the gap against ln eps": "mixed logarithms",
            "eps = d^-gamma": "d^(−γ)", "one label per row (argmax)": "one label per row",
        },
    )
)

"""Lesson 06: reference answers and typical mistakes for each check."""

from __future__ import annotations

import itertools
import math

import torch

from contracts import Contract
from ctxlab import checks
from ctxlab.checks.core import hard_labels
from ctxlab.checks.lesson06 import raw_pairs, splitting_pairs
from ctxlab.signatures import joint
from ctxlab.tasks import Dataset
from ctxlab.theory import conditional_rows, pair_residual


def unweighted(data, p, i, j):
    flat = Dataset(data.x, data.y, data.vocab_size, data.n_labels, torch.full((data.n,), 1.0 / data.n))
    return pair_residual(flat, p, i, j)


def summed(data, p, i, j):
    mass = joint(data, (min(i, j), max(i, j))).sum(-1)
    return pair_residual(data, p, i, j) * (mass if i < j else mass.T)[..., None]


CONTRACT = [
    Contract(
        checks.check_06_pair_residual,
        reference=pair_residual,
        wrong={
            "p - e_y (sign)": lambda d, p, i, j: -pair_residual(d, p, i, j),
            "joint sum, not conditional mean": summed,
            "ignores data.weights": unweighted,
            "axes swapped": lambda d, p, i, j: pair_residual(d, p, i, j).transpose(0, 1),
            "one label per row (argmax), not the distribution": lambda d, p, i, j: pair_residual(hard_labels(d), p, i, j),
        },
    ),
    Contract(
        checks.check_06_next_pairs,
        reference=splitting_pairs,
        wrong={
            "every pair": lambda d: list(itertools.combinations(range(d.seq_len), 2)),
            "raw pair table instead of the increment": raw_pairs,
            "pairs with the first position": lambda d: [(0, j) for j in range(1, d.seq_len)],
            "adjacent pairs": lambda d: [(i, i + 1) for i in range(d.seq_len - 1)],
        },
    ),
]


# --- exercise 3: the next-stair velocity from the model's own residual, and against autograd ----------------


def learner_velocity(model, data, position, *, slope="exact", residual="model", weights="population", block=None,
                     context=None, sign=1.0, transpose_w2=True, hard=False, drive_only=False):
    """M(t) W1_position^T as a learner writes it, one mistake switched on by a keyword."""
    K, V, d = model.embedding.shape
    E = model.embedding.detach().double()
    W1 = model.w1.detach().double().reshape(K, data.seq_len, d, -1)
    W2 = model.w2.detach().double()
    targets = (hard_labels(data) if hard else data).targets().double()
    if residual == "model":
        with torch.no_grad():
            r = targets - torch.softmax(model(data.x), dim=-1).double()
    else:  # the label's residual P(y | c, t) - P(y): the data's tables, not the model
        joint_rows = conditional_rows(data, range(position + 1))
        r = (joint_rows - conditional_rows(data, []))[None].expand(K, -1, -1)
    u = torch.zeros(K, data.n, W1.shape[-1], dtype=torch.float64)
    for i in range(position if context is None else context):
        u += (E @ W1[:, i])[:, data.x[:, i]]
    if slope == "tanh":  # the slope of GELU's tanh approximation, by autograd
        v = u.clone().requires_grad_(True)
        (gate,) = torch.autograd.grad(torch.nn.functional.gelu(v, approximate="tanh").sum(), v)
    else:
        gate = {"exact": torch.special.ndtr(u) + u * torch.exp(-u * u / 2) / math.sqrt(2 * math.pi),
                "half": torch.full_like(u, 0.5), "leading": math.sqrt(2 / math.pi) * u}[slope]
    w = {"population": data.weights.double(), "none": torch.ones(data.n, dtype=torch.float64)}[weights]
    hidden = r @ (W2.transpose(1, 2) if transpose_w2 else W2)
    M = torch.zeros(K, V, W2.shape[1], dtype=torch.float64).index_add_(1, data.x[:, position], gate * hidden * w[None, :, None])
    return sign * (M if drive_only else M @ W1[:, position if block is None else block].transpose(1, 2))


def learner_cosines(model, data, position, tokens, *, sign=1.0, weighted=True, hard=False, one_number=False,
                    sort=False):
    """cosine(predicted, autograd) per model and token as a learner writes it, one mistake switched on."""
    tokens = sorted(tokens) if sort else list(tokens)
    labels = hard_labels(data) if hard else data
    logp = torch.log_softmax(model(data.x), dim=-1)
    w = data.weights.to(logp.dtype) if weighted else torch.full((data.n,), 1.0 / data.n, dtype=logp.dtype)
    loss = -(logp * labels.targets().to(logp.dtype)).sum(-1) @ w
    (grad,) = torch.autograd.grad(loss.sum(), model.embedding)
    exact = -sign * grad.double()[:, tokens]
    predicted = learner_velocity(model, data, position)[:, tokens]
    if one_number:
        return (predicted * exact).sum((1, 2)) / (predicted.flatten(1).norm(dim=1) * exact.flatten(1).norm(dim=1))
    return (predicted * exact).sum(-1) / (predicted.norm(dim=-1) * exact.norm(dim=-1))


CONTRACT += [
    Contract(
        checks.check_06_stair_velocity,
        reference=learner_velocity,
        wrong={
            "σ'(0) = 1/2 instead of σ'(u_c)": lambda *a: learner_velocity(*a, slope="half"),
            "leading order σ''(0) u_c instead of σ'(u_c)": lambda *a: learner_velocity(*a, slope="leading"),
            "tanh-approximate GELU slope": lambda *a: learner_velocity(*a, slope="tanh"),
            "label residual P(y | c, t) - P(y)": lambda *a: learner_velocity(*a, residual="marginal"),
            "population weights dropped": lambda *a: learner_velocity(*a, weights="none"),
            "W1 of position 0 (the key's block)": lambda *a: learner_velocity(*a, block=0),
            "W2 not transposed": lambda *a: learner_velocity(*a, transpose_w2=False),
            "sign flipped (p - e_y)": lambda *a: learner_velocity(*a, sign=-1.0),
            "σ' at the whole hidden state u(x)": lambda m, d, p: learner_velocity(m, d, p, context=d.seq_len),
            "one label per row (argmax)": lambda *a: learner_velocity(*a, hard=True),
            "M(t) returned, not M(t) W1^T": lambda *a: learner_velocity(*a, drive_only=True),
        },
        hints={
            "σ'(0) = 1/2 instead of σ'(u_c)": "σ'(0) = 1/2", "leading order σ''(0) u_c instead of σ'(u_c)": "leading-order",
            "tanh-approximate GELU slope": "tanh", "label residual P(y | c, t) - P(y)": "model's own residual",
            "population weights dropped": "data.weights", "W1 of position 0 (the key's block)": "another position",
            "W2 not transposed": "W2 transposed", "sign flipped (p - e_y)": "sign flipped",
            "σ' at the whole hidden state u(x)": "positions before", "one label per row (argmax)": "DISTRIBUTIONS",
            "M(t) returned, not M(t) W1^T": "that is M(t)",
        },
    ),
    Contract(
        checks.check_06_velocity_cosines,
        reference=learner_cosines,
        wrong={
            "autograd's sign flipped (dLoss/dE)": lambda *a: learner_cosines(*a, sign=-1.0),
            "loss not weighted by data.weights": lambda *a: learner_cosines(*a, weighted=False),
            "one label per row (argmax) in the loss": lambda *a: learner_cosines(*a, hard=True),
            "one cosine over all tokens": lambda *a: learner_cosines(*a, one_number=True),
            "tokens sorted, not in the order given": lambda *a: learner_cosines(*a, sort=True),
        },
        hints={
            "autograd's sign flipped (dLoss/dE)": "sign flipped", "loss not weighted by data.weights": "data.weights",
            "one label per row (argmax) in the loss": "DISTRIBUTIONS", "one cosine over all tokens": "per model AND token",
            "tokens sorted, not in the order given": "in the order of `tokens`",
        },
    ),
]

"""Small-init gradient-flow predictions, to hold against what training does.

At small init every logit is tiny, so the softmax is uniform and the network's Jacobian is a
product of (small) weights. For Emb-MLP with z = sigma(h W1) W2 and sigma(0) = 0 this gives
the leading-order embedding velocity (E1, course reconstruction of the paper's equation):

    dE_s/dt = sigma'(0) * sum_i  M_i (P(x_i = s, y) - P(x_i = s) u),   M_i = W1^(i) W2   [d, C]

i.e. token frequency x (its label distribution - uniform), mapped through the weights.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from ctxlab.models import EmbMLP
from ctxlab.signatures import entropy_ladder, joint
from ctxlab.tasks import Dataset
from ctxlab.train import cross_entropy

# sigma'(0) of each activation: gelu(u) = u * Phi(u) ~ u / 2 near 0.
SLOPE_AT_ZERO = {"gelu": 0.5, "tanh": 1.0, "linear": 1.0}


def mlp_embedding_velocity(model: EmbMLP, data: Dataset) -> Tensor:
    """Leading-order dE/dt of an Emb-MLP ensemble from the order-1 signature (E1): [K, V, d]."""
    if model.activation not in SLOPE_AT_ZERO:
        raise ValueError(
            f"E1 needs an activation that is smooth at 0 with sigma(0) = 0 ({sorted(SLOPE_AT_ZERO)}), "
            f"got {model.activation!r}: ReLU has no linear regime at small init"
        )
    if model.layernorm:
        raise ValueError("E1 assumes no LayerNorm: normalisation removes the small-init scaling")
    K, V, d = model.embedding.shape
    C, L = model.n_labels, model.seq_len
    velocity = torch.zeros(K, V, d, dtype=torch.float64)
    w1 = model.w1.detach().double().cpu().reshape(K, L, d, -1)
    w2 = model.w2.detach().double().cpu()
    for i in range(L):
        table = joint(data.to("cpu"), (i,))  # P(x_i = s, y): [V, C]
        drive = table - table.sum(-1, keepdim=True) / C  # pi_i(s) (q_{i,s} - u)
        M = w1[:, i] @ w2  # [K, d, C]
        velocity += drive[None] @ M.transpose(-1, -2)
    return (SLOPE_AT_ZERO[model.activation] * velocity).float()


def embedding_velocity(model, data: Dataset) -> Tensor:
    """The exact -dLoss/dE by autograd: [K, V, d]."""
    model.zero_grad(set_to_none=True)
    cross_entropy(model(data.x), data).sum().backward()
    grad = -model.embedding.grad.detach().clone()
    model.zero_grad(set_to_none=True)
    return grad


def cosine_per_model(a: Tensor, b: Tensor) -> Tensor:
    """Cosine similarity of two [K, ...] tensors, model by model: [K]."""
    a, b = a.reshape(a.shape[0], -1).double(), b.reshape(b.shape[0], -1).double()
    return (a * b).sum(-1) / (a.norm(dim=-1) * b.norm(dim=-1)).clamp_min(1e-300)


def plateau_levels(data: Dataset, max_order: int | None = None) -> list[float]:
    """Predicted plateau losses H_0 >= H_1 >= ...: the best entropy with order-k statistics."""
    return [stair.entropy for stair in entropy_ladder(data, max_order)]


def uniform_loss(n_labels: int) -> float:
    """The loss at exact small init (uniform prediction): ln C."""
    return math.log(n_labels)

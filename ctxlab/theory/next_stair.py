"""The next stair (lesson 06): on a plateau, the residual pair statistic that drives the next order."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from ctxlab.dataset import Dataset
from ctxlab.signatures import conditional_entropy, interaction
from ctxlab.theory.first_stair import cosine_per_model
from ctxlab.validate import finite, integer

# sigma'(0) of each activation: gelu(u) = u * Phi(u) ~ u / 2 near 0.


def pair_residual(data: Dataset, probs: Tensor, i: int, j: int) -> Tensor:
    """R_ij(s, t) = E[e_y - p | x_i = s, x_j = t]: what order-1 predictions still get wrong, per pair.

    probs: model predictions [N, C] or [K, N, C]. Returns [V, V, C] or [K, V, V, C] in float64,
    0 where the pair (s, t) never occurs. At the order-1 optimum the linear path's gradient
    vanishes, so this table is the only signal left for the next stair.
    """
    if integer(i, "i") == integer(j, "j") or not (0 <= i < data.seq_len and 0 <= j < data.seq_len):
        raise ValueError(f"need two distinct positions in [0, {data.seq_len}), got {i} and {j}")
    p = finite(probs, "probs", nonnegative=True).double()
    squeeze = p.ndim == 2
    p = p[None] if squeeze else p
    if p.ndim != 3 or p.shape[1:] != (data.n, data.n_labels):
        raise ValueError(f"probs must be [N, C] or [K, N, C] with N={data.n}, C={data.n_labels}; got {tuple(probs.shape)}")
    V, C = data.vocab_size, data.n_labels
    w = data.weights.double().to(p.device)
    cell = (data.x[:, i] * V + data.x[:, j]).to(p.device)
    mass = torch.zeros(V * V, dtype=torch.float64, device=p.device).index_add_(0, cell, w)
    err = w[None, :, None] * (data.targets().double().to(p.device)[None] - p)  # [K, N, C]
    total = torch.zeros(p.shape[0], V * V, C, dtype=torch.float64, device=p.device).index_add_(1, cell, err)
    out = (total / mass.clamp_min(1e-300)[None, :, None]).reshape(-1, V, V, C)
    return out[0] if squeeze else out


def model_pair_residual(model, data: Dataset, i: int, j: int) -> Tensor:
    """:func:`pair_residual` of an ensemble's current predictions: [K, V, V, C]."""
    with torch.no_grad():
        probs = torch.softmax(model(data.x), dim=-1)
    return pair_residual(data, probs, i, j)


@dataclass(frozen=True)
class ResidualIncrement:
    """An ensemble's residual pair table next to the data's Möbius increment (lesson 06's headline).

    residual [K, V, V, C]: R_ij of each model; increment [V, V, C]: ΔS²_ij from the data;
    cosine [K] and relative [K] = ‖R − ΔS²‖ / ‖ΔS²‖ say how equal they are, model by model.
    """

    positions: tuple[int, int]
    residual: Tensor
    increment: Tensor
    cosine: Tensor
    relative: Tensor


def residual_vs_increment(model, data: Dataset, i: int = 0, j: int = 1) -> ResidualIncrement:
    """R_ij of the models' current predictions against ΔS²_ij: equal at the order-1 optimum,
    where the pair increment is all the gradient has left to follow."""
    R = model_pair_residual(model, data, i, j)
    delta2 = interaction(data, (i, j))
    cos = cosine_per_model(R, delta2.expand_as(R))
    rel = (R - delta2).flatten(1).norm(dim=1) / delta2.norm()
    return ResidualIncrement((i, j), R, delta2, cos, rel)


def whether_levels(task) -> list[tuple[str, float]]:
    """The sub-levels of a hierarchy task over Z_n, n >= 3: for stair k, H(Y | x1..x_{k-1}, [A(x_k) = 0]).

    The best loss when of the k-th token only *whether* its attribute is 0 is known: the network learns
    that before *which* attribute it is (lesson 06), so the loss can rest just above this level on its way
    from H_{k-1} to H_k. Empty for binary attributes, where whether is which. Names as the figures print them.
    """
    data, attr = task.population, task.info["attribute"]
    if task.n_labels < 3:
        return []
    levels = []
    for k in range(1, data.seq_len + 1):
        coarse = data.x.clone()
        tokens = data.x[:, k - 1]
        zero = attr[tokens] == 0
        coarse[:, k - 1] = torch.where(zero, tokens[zero].min(), tokens[~zero].min())
        known = ", ".join([f"x{i}" for i in range(1, k)] + [f"[A(x{k})=0]"])
        entropy = conditional_entropy(Dataset(coarse, data.y, data.vocab_size, data.n_labels, data.weights), range(k))
        levels.append((f"H(Y | {known})", entropy))
    return levels

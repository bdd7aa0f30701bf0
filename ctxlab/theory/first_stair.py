"""Small-init gradient-flow predictions, to hold against what training does.

At small init every logit is tiny, so the softmax is uniform and the network's Jacobian is a
product of (small) weights. For Emb-MLP with z = sigma(h W1) W2 and sigma(0) = 0 this gives
the leading-order embedding velocity (E1, course reconstruction of the paper's equation):

    dE_s/dt = sigma'(0) * sum_i  M_i (P(x_i = s, y) - P(x_i = s) u),   M_i = W1^(i) W2   [d, C]

i.e. token frequency x (its label distribution - uniform), mapped through the weights.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from ctxlab.dataset import Dataset
from ctxlab.models import EmbMLP, ensemble_grid, make_model
from ctxlab.signatures import joint
from ctxlab.train import cross_entropy
from ctxlab.validate import integer, number

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


@dataclass(frozen=True)
class E1Agreement:
    """How well E1 matches autograd at init, per width, γ and seed (lesson 04's headline).

    cosines [W, G, S]: cosine(E1, autograd) for widths[w], gammas[g], seeds[s]; fitted_slope [W]:
    least-squares slope of log10(1 - mean cosine) against γ over γ >= fit_from; predicted_slope [W]:
    -2 log10(L d^2), the ε⁴ law (E1's relative error is O(ε²) and 1 - cosine is its square).
    """

    gammas: list[float]
    widths: list[int]
    seeds: list[int]
    fit_from: float
    cosines: Tensor
    fitted_slope: Tensor
    predicted_slope: Tensor

    def gap(self) -> Tensor:
        """1 - cosine [W, G, S], floored at 1e-15 so that its logarithm exists."""
        return (1 - self.cosines).clamp_min(1e-15)


def e1_agreement(task, gammas=(0.5, 0.75, 1.0, 1.25, 1.5), widths=(16, 32, 128), seeds=(0, 1, 2),
                 fit_from: float = 0.75) -> E1Agreement:
    """cosine(E1, autograd) for Emb-MLP ensembles at init (one per width): the γ and width law of E1.

    γ below ``fit_from`` is left out of the slope fit: there the init is not small and E1 is only a
    rough guide. No training: every model is evaluated at its initial weights.
    """
    gammas, widths, seeds = [float(g) for g in gammas], [integer(d, "widths") for d in widths], list(seeds)
    fit = torch.tensor(gammas, dtype=torch.float64) >= number(fit_from, "fit_from")
    if int(fit.sum()) < 2:
        raise ValueError(f"fit_from: need at least two gammas >= {fit_from} to fit a slope, got gammas {gammas}")
    data = task.population
    cosines = []
    for d in widths:
        g, s = ensemble_grid(gammas, seeds)
        ensemble = make_model("mlp", task, gamma=g, seed=s, d=d)
        cosines.append(cosine_per_model(mlp_embedding_velocity(ensemble, data), embedding_velocity(ensemble, data))
                       .reshape(len(gammas), len(seeds)))
    cosines = torch.stack(cosines)
    log_gap = (1 - cosines).clamp_min(1e-15).mean(-1).log10()  # [W, G]
    g_fit = torch.tensor(gammas, dtype=torch.float64)[fit]
    design = torch.stack([g_fit, torch.ones_like(g_fit)], 1)
    fitted = torch.stack([torch.linalg.lstsq(design, row[fit, None]).solution[0, 0] for row in log_gap])
    predicted = -2 * torch.log10(torch.tensor([data.seq_len * d * d for d in widths], dtype=torch.float64))
    return E1Agreement(gammas, widths, seeds, float(fit_from), cosines, fitted, predicted)

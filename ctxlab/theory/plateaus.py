"""Plateau states and sub-levels for the staircase forecast (:mod:`ctxlab.theory.predict`): the population
a restricted network sees, that network run by the one training loop until it rests on a level (the
first stair from the small-init expansion, the later plateaus with the GELU network itself), and the
best loss once one mode of an order is in."""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import Tensor, nn

from ctxlab.dataset import Dataset
from ctxlab.models import EmbMLP, first_layer
from ctxlab.signatures import conditional_entropy
from ctxlab.theory.first_stair import SLOPE_AT_ZERO
from ctxlab.optimizer import Optimizer
from ctxlab.train import cross_entropy, descend, progress_bar

CURVATURE_AT_ZERO = math.sqrt(2 / math.pi)  # σ''(0) of GELU: u Φ(u) = u/2 + u²/√(2π) + O(u⁴)
MAX_STEPS = 30_000  # a restricted network gives up after this many steps (the longest flow of the benchmark takes 22,461)
SETTLE_STEPS = 200  # steps a restricted network runs on once within 1e-3 of its level: its drive has stopped changing


def label_cells(data: Dataset, positions: Sequence[int]) -> tuple[Tensor, Tensor, Tensor]:
    """Group the rows by their tokens at ``positions``: each row's cell [N], each cell's mass [n] and its mean
    label distribution P(y | x_positions) [n, C] (float64)."""
    key = torch.zeros(data.n, dtype=torch.long)
    for i in positions:
        key = key * data.vocab_size + data.x[:, i]
    _, cell = torch.unique(key, return_inverse=True)
    w = data.weights.double()
    mass = torch.zeros(int(cell.max()) + 1, dtype=torch.float64).index_add_(0, cell, w)
    total = torch.zeros(len(mass), data.n_labels, dtype=torch.float64).index_add_(0, cell, w[:, None] * data.targets().double())
    return cell, mass, total / mass.clamp_min(1e-300)[:, None]


def conditional_rows(data: Dataset, positions: Sequence[int]) -> Tensor:
    """P(y | x_positions) for every row of ``data``: [N, C] in float64 (the label marginal at no positions)."""
    cell, _, mean = label_cells(data, positions)
    return mean[cell]


def prefix_data(data: Dataset, k: int) -> Dataset:
    """The population seen by a network that reads only x_0 .. x_{k-1}: one row per prefix, its weight
    summed and its label distribution averaged (the later positions keep the first row's tokens, unread).
    Exact for every restricted loss and drive, and far fewer rows."""
    cell, mass, mean = label_cells(data, range(k))
    first = torch.full((len(mass),), data.n, dtype=torch.long).scatter_reduce_(0, cell, torch.arange(data.n), "amin")
    return Dataset(data.x[first], mean.float(), data.vocab_size, data.n_labels, (mass / mass.sum()).float())


def model_weights(model: EmbMLP) -> tuple[Tensor, Tensor, Tensor]:
    """(E [K, V, d], W1 [K, L, d, h], W2 [K, h, C]) in float64."""
    K, L, d = model.n_models, model.seq_len, model.d
    return (model.embedding.detach().double(), model.w1.detach().double().reshape(K, L, d, -1),
            model.w2.detach().double())


def hidden_state(E: Tensor, W1: Tensor, x: Tensor, positions: Sequence[int]) -> Tensor:
    """u_c = Σ_{i in positions} E[x_i] W1_i for every row: [K, N, h] (the other positions left out),
    computed as the model computes its first layer (one matmul over the stacked per-position tables)."""
    K, L, d, h = W1.shape
    keep = torch.zeros(L, dtype=E.dtype)
    keep[list(positions)] = 1
    return first_layer(x, E, (W1 * keep[None, :, None, None]).reshape(K, L * d, h))


class RestrictedNet(nn.Module):
    """Emb-MLP weights E [K, V, d], W1 [K, L, d, h], W2 [K, h, C] with only ``positions`` feeding the hidden
    layer; ``second_order`` replaces GELU by its small-init expansion σ'(0) u + σ''(0) u² / 2."""

    def __init__(self, E: Tensor, W1: Tensor, W2: Tensor, positions: Sequence[int], second_order: bool = False):
        super().__init__()
        self.E, self.W1, self.W2 = (nn.Parameter(t.detach().clone().float()) for t in (E, W1, W2))
        self.positions, self.second_order = list(positions), second_order

    def forward(self, x: Tensor) -> Tensor:
        u = hidden_state(self.E, self.W1, x, self.positions)
        h = SLOPE_AT_ZERO["gelu"] * u + CURVATURE_AT_ZERO * u * u / 2 if self.second_order else nn.functional.gelu(u)
        return h @ self.W2

    def weights(self) -> tuple[Tensor, Tensor, Tensor]:
        return tuple(p.detach().double() for p in (self.E, self.W1, self.W2))


def restricted_loss(E: Tensor, W1: Tensor, W2: Tensor, data: Dataset, positions: Sequence[int]) -> Tensor:
    """The GELU network's loss [K] with only ``positions`` contributing to the hidden layer."""
    with torch.no_grad():
        return cross_entropy(RestrictedNet(E, W1, W2, positions)(data.x), data).double()


def rest_on(net: RestrictedNet, data: Dataset, level: float, lr: float, settle: int = SETTLE_STEPS,
            max_steps: int = MAX_STEPS, progress: bool | None = False, desc: str = "plateau") -> Tensor:
    """Plain GD on ``net`` (the one training loop, :func:`ctxlab.train.descend`); each model stops ``settle``
    steps after it has come within 1e-3 of ``level`` and the run ends when all have, or after ``max_steps``.
    Returns the loss [K, T]. A model that stopped does not run on to the next level while the others catch up."""
    K = net.E.shape[0]
    optimizer = Optimizer("gd", list(net.parameters()), torch.full((K,), float(lr)), 0.0, 0.0)
    remaining, losses = torch.full((K,), -1), []

    def observe(step: int, loss: Tensor | None) -> bool:
        nonlocal remaining
        if loss is None:
            return True
        losses.append(loss.detach().tolist())  # plain numbers: a kept tensor would hold on to its step's memory
        remaining = torch.where((remaining < 0) & (loss.detach() - level < 1e-3), settle, remaining)
        optimizer.frozen = remaining == 0
        done = bool((remaining == 0).all())
        remaining = torch.where(remaining > 0, remaining - 1, remaining)
        return done

    descend(net, optimizer, max_steps, lambda step: cross_entropy(net(data.x), data), observe,
            progress_bar(max_steps, desc, progress))
    return torch.tensor(losses, dtype=torch.float64).T


def relax(E: Tensor, W1: Tensor, W2: Tensor, data: Dataset, positions, level: float, lr: float,
          progress: bool | None = False, desc: str = "plateau") -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """The plateau state on ``level`` reached by the GELU network restricted to ``positions`` (the later
    positions, still at init size, left out), from the given weights, and the loss on the way there [K, T]."""
    net = RestrictedNet(E, W1, W2, positions)
    path = rest_on(net, data, level, lr, max_steps=MAX_STEPS, progress=progress, desc=desc)
    return (*net.weights(), path)


def small_init_path(model: EmbMLP, data: Dataset, lr: float, level: float,
                    progress: bool | None = None) -> tuple[Tensor, tuple[Tensor, Tensor, Tensor]]:
    """The first stair: plain GD from the model's init on the key-only network with GELU expanded to second
    order at small init, z = (σ'(0) u + σ''(0) u² / 2) W2 with u = E[x_0] W1_0, until it rests on ``level``
    (H1). Returns the loss curve [K, T] and the weights.

    The σ'(0) term alone is the three-factor linear path of lesson 05; σ''(0) couples the n - 1 modes of an
    order-1 signature over Z_n, which are degenerate, so that the second follows the first sooner.
    """
    net = RestrictedNet(*model_weights(model), [0], second_order=True)
    path = rest_on(net, prefix_data(data, 1), level, lr, progress=progress, desc="first stair")
    return path, net.weights()


def rank_one_level(data: Dataset, position: int = 0, restarts: int = 8, steps: int = 400) -> float:
    """The best loss of an order-1 model of ``position`` whose logit map has rank 1 (a b^T, a over tokens,
    b over labels): where the first of n - 1 degenerate order-1 modes leaves the loss."""
    V, C = data.vocab_size, data.n_labels
    gen = torch.Generator().manual_seed(0)
    a = torch.randn(restarts, V, 1, generator=gen, dtype=torch.float64).requires_grad_(True)
    b = torch.randn(restarts, 1, C, generator=gen, dtype=torch.float64).requires_grad_(True)
    one_hot = torch.nn.functional.one_hot(data.x[:, position], V).double()
    opt = torch.optim.LBFGS([a, b], max_iter=steps, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = cross_entropy(one_hot @ (a @ b), data).sum()
        loss.backward()
        return loss

    opt.step(closure)
    with torch.no_grad():
        return float(cross_entropy(one_hot @ (a @ b), data).min())


def tied_pattern(pattern: Tensor, tokens: Tensor, tie: float = 0.1) -> Tensor:
    """``pattern`` [V] with the values of ``tokens`` that lie within ``tie`` of their range of each other merged
    into their mean: a mode's token pattern is two- or three-valued by the task's symmetry, and the run's
    last digits should not let a rank-1 model tell apart tokens that the mode does not."""
    values, order = pattern[tokens].sort()
    gap = tie * float(values[-1] - values[0])
    group = torch.cat([torch.zeros(1, dtype=torch.long), (values.diff() > gap).long().cumsum(0)])
    means = torch.zeros(int(group.max()) + 1, dtype=pattern.dtype).index_add_(0, group, values)
    means /= torch.bincount(group).to(pattern.dtype)
    out = pattern.clone()
    out[tokens[order]] = means[group]
    return out


def mode_level(data: Dataset, position: int, pattern: Tensor, steps: int = 200) -> tuple[float, Tensor]:
    """The best loss once one mode of order ``position + 1`` is learned: logits z_0(c) + a(t) b(c) for every
    context c = x_0 .. x_{position-1} and token t at ``position``, with a = ``pattern`` [V] fixed and z_0, b
    free (convex, solved by L-BFGS). A two-valued pattern gives the coarse level H(Y | c, [side of t]).
    Returns the level and that model's predictions on ``prefix_data(data, position + 1)``, rows [N, C]."""
    seen = prefix_data(data, position + 1)
    context, mass, _ = label_cells(seen, range(position))
    n = len(mass)
    a = pattern.double()[seen.x[:, position]]  # [N]
    z0 = torch.zeros(n, data.n_labels, dtype=torch.float64, requires_grad=True)
    b = torch.zeros(n, data.n_labels, dtype=torch.float64, requires_grad=True)
    y, w = seen.targets().double(), seen.weights.double()
    opt = torch.optim.LBFGS([z0, b], max_iter=steps, tolerance_grad=1e-12, tolerance_change=1e-14,
                            line_search_fn="strong_wolfe")

    def loss():
        return -((torch.log_softmax(z0[context] + a[:, None] * b[context], -1) * y).sum(-1) * w).sum()

    def closure():
        opt.zero_grad()
        value = loss()
        value.backward()
        return value

    opt.step(closure)
    with torch.no_grad():
        return float(loss()), torch.softmax(z0[context] + a[:, None] * b[context], -1)



"""The staircase predicted from the data and the init, before any training (lesson 17, ``ctxlab predict``).

A hierarchy task's order k enters through position k - 1 (the key is order 1, anchor j order j + 1).
The prediction follows the small-init gradient flow stair by stair:

* **First stair** (derived in lessons 04-05): at small init the network is its linear path
  z = σ'(0) E W1 W2, a three-factor linear network driven by the order-1 signature. Its escape from
  the origin is a finite-time blow-up whose timing depends on every factor's starting size, so it
  is *integrated* (plain GD on the linear path, same init, same lr): no closed form is used.
* **Later stairs** (derived in lesson 06): on the plateau of order k - 1 the tokens of position k - 1
  and their first-layer block W1_k form a two-factor linear network driven by
  M_k(t) = Σ_c P(c, t) σ'(u_c) ⊙ W2 R(c, t), the residual R = P(y | c, t) - P(y | c) read out through
  W2 and the hidden state u_c of the context c already learned. Each singular mode of M_k grows as
  (1 + lr s_i)^(2 n) from its amplitude at init, so its stair is halfway down after
  ln(m_mid / m_0) / (2 ln(1 + lr s_i)) steps, counted from the previous stair's onset.
* **Approximated**: the plateau state. It is the end of the linear path relaxed by the GELU network
  restricted to the positions already learned; each later plateau adds the modes just learned and
  relaxes again. m_mid, the mode size at which the loss is halfway down, comes from the loss along
  the mode (a line search on that plateau state). Nothing is fitted to training runs.

Over Z_n with n >= 3 an order has n - 1 modes. The strongest comes first and leaves the loss on a
sub-level: for order 1 the best rank-1 order-1 model (the modes are degenerate; init picks one),
for later orders the coarse level where the new token says only which side of the top mode it is on
(for the hierarchy task *whether* its attribute is 0). The remaining modes come down together.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from ctxlab.dataset import Dataset
from ctxlab.models import EmbMLP, _first_layer, ensemble_grid, make_model
from ctxlab.rungs import measure_rungs
from ctxlab.signatures import conditional_entropy, plateau_levels
from ctxlab.theory.first_stair import SLOPE_AT_ZERO
from ctxlab.train import cross_entropy, progress_bar
from ctxlab.validate import integer, number

CURVATURE_AT_ZERO = math.sqrt(2 / math.pi)  # σ''(0) of GELU: u Φ(u) = u/2 + u²/√(2π) + O(u⁴)
HALFWAY = 1 - 1 / math.sqrt(2)  # a quadratic loss is halfway down when its mode is at this share of its end size
MAX_STEPS = 100_000  # a reduced flow gives up after this many steps (no stair within reach)
SETTLE_STEPS = 200  # steps a restricted flow runs on once within 1e-3 of its level: its drive has stopped changing


def gelu_slope(u: Tensor) -> Tensor:
    """σ'(u) of the exact (erf) GELU, Φ(u) + u φ(u): what the hidden layer passes back at u."""
    return torch.special.ndtr(u) + u * torch.exp(-u * u / 2) / math.sqrt(2 * math.pi)


def conditional_rows(data: Dataset, positions: Sequence[int]) -> Tensor:
    """P(y | x_positions) for every row of ``data``: [N, C] in float64 (the uniform label at no positions)."""
    w, Y = data.weights.double(), data.targets().double()
    key = torch.zeros(data.n, dtype=torch.long)
    for i in positions:
        key = key * data.vocab_size + data.x[:, i]
    _, cell = torch.unique(key, return_inverse=True)
    mass = torch.zeros(int(cell.max()) + 1, dtype=torch.float64).index_add_(0, cell, w)
    total = torch.zeros(len(mass), data.n_labels, dtype=torch.float64).index_add_(0, cell, w[:, None] * Y)
    return (total / mass.clamp_min(1e-300)[:, None])[cell]


def prefix_data(data: Dataset, k: int) -> Dataset:
    """The population seen by a network that reads only x_0 .. x_{k-1}: one row per prefix, its weight
    summed and its label distribution averaged (the later positions keep the first row's tokens, unread).
    Exact for every restricted loss and drive, and far fewer rows."""
    key = torch.zeros(data.n, dtype=torch.long)
    for i in range(k):
        key = key * data.vocab_size + data.x[:, i]
    _, cell = torch.unique(key, return_inverse=True)
    n = int(cell.max()) + 1
    w = data.weights.double()
    mass = torch.zeros(n, dtype=torch.float64).index_add_(0, cell, w)
    y = torch.zeros(n, data.n_labels, dtype=torch.float64).index_add_(0, cell, w[:, None] * data.targets().double())
    first = torch.full((n,), data.n, dtype=torch.long).scatter_reduce_(0, cell, torch.arange(data.n), "amin")
    return Dataset(data.x[first], (y / mass[:, None]).float(), data.vocab_size, data.n_labels, (mass / mass.sum()).float())


def _weights(model: EmbMLP) -> tuple[Tensor, Tensor, Tensor]:
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
    return _first_layer(x, E, (W1 * keep[None, :, None, None]).reshape(K, L * d, h))


def stair_drive(model: EmbMLP, data: Dataset, position: int, residual: Tensor | None = None) -> Tensor:
    """M(t) = Σ_c P(c, t) σ'(u_c) ⊙ W2 R(c, t) for every token t: [K, V, h].

    c runs over the contexts x_0 .. x_{position-1}, whose hidden state u_c the network has learned;
    R(c, t) is ``residual`` [N, C] or [K, N, C] (default: the data's P(y | c, t) - P(y | c), the
    residual on the plateau of order ``position``). Rows of tokens that never occur at ``position``
    are 0. The velocity of E_t is M(t) W1_position^T (:func:`next_stair_velocity`).
    """
    if model.activation != "gelu" or model.layernorm:
        raise ValueError("the next-stair drive is derived for GELU without LayerNorm")
    return drive(*_weights(model), data, position, residual)


def drive(E: Tensor, W1: Tensor, W2: Tensor, data: Dataset, position: int, residual: Tensor | None = None) -> Tensor:
    """:func:`stair_drive` from the weights E [K, V, d], W1 [K, L, d, h], W2 [K, h, C]."""
    if not 1 <= integer(position, "position") < data.seq_len:
        raise ValueError(f"position must lie in [1, {data.seq_len}): the next stair needs a learned context before it")
    if residual is None:
        residual = conditional_rows(data, range(position + 1)) - conditional_rows(data, range(position))
    R = residual.double()
    R = R[None].expand(E.shape[0], -1, -1) if R.ndim == 2 else R
    u = hidden_state(E, W1, data.x, range(position))
    per_row = gelu_slope(u) * (R @ W2.transpose(1, 2)) * data.weights.double()[None, :, None]  # [K, N, h]
    out = torch.zeros(E.shape[0], data.vocab_size, W2.shape[1], dtype=torch.float64)
    return out.index_add_(1, data.x[:, position], per_row)


def next_stair_velocity(model: EmbMLP, data: Dataset, position: int) -> Tensor:
    """The predicted -dLoss/dE of position ``position``'s tokens on a plateau: M(t) W1_position^T, [K, V, d].

    R is the model's own residual e_y - p(x), so the only approximation is σ'(u(x)) ≈ σ'(u_c): the hidden
    state with the tokens at ``position`` and after left out (they are still at init size)."""
    with torch.no_grad():
        probs = torch.softmax(model(data.x), dim=-1).double()
    M = stair_drive(model, data, position, data.targets().double()[None] - probs)
    return M @ _weights(model)[1][:, position].transpose(1, 2)


def anchor_share(model: EmbMLP, data: Dataset, position: int) -> Tensor:
    """‖δ‖ / ‖u_c‖ per model [K]: the hidden contribution of the tokens at ``position`` and after, relative to
    that of the context before it (row norms averaged): how far :func:`next_stair_velocity`'s u(x) ≈ u_c is
    stretched."""
    E, W1, _ = _weights(model)
    late = hidden_state(E, W1, data.x, range(position, data.seq_len)).norm(dim=-1).mean(-1)
    return late / hidden_state(E, W1, data.x, range(position)).norm(dim=-1).mean(-1)


@dataclass(frozen=True)
class Mode:
    """One singular mode of a stair's drive: token pattern ``tokens`` [K, V] over the position's tokens,
    hidden direction ``hidden`` [K, h] and strength ``strength`` [K] (the per-factor growth rate)."""

    tokens: Tensor
    hidden: Tensor
    strength: Tensor


def drive_modes(M: Tensor, tokens: Tensor, n_modes: int) -> list[Mode]:
    """The ``n_modes`` strongest singular modes of M [K, V, h] restricted to the rows ``tokens``."""
    U, S, Vh = torch.linalg.svd(M[:, tokens], full_matrices=False)
    modes = []
    for i in range(n_modes):
        pattern = torch.zeros(M.shape[0], M.shape[1], dtype=torch.float64)
        pattern[:, tokens] = U[:, :, i]
        modes.append(Mode(pattern, Vh[:, i], S[:, i]))
    return modes


def growing_size(E0: Tensor, W1_0: Tensor, mode: Mode) -> Tensor:
    """At init, the mode's growing amplitude |α + β|² / 4 [K].

    α = E0^T a (the embeddings along the token pattern), β = W1_0 b (the first-layer block along the
    hidden direction); a GD step multiplies α + β by (1 + lr s), so the product grows as its square.
    """
    alpha = torch.einsum("kvd,kv->kd", E0, mode.tokens)
    beta = torch.einsum("kdh,kh->kd", W1_0, mode.hidden)
    return ((alpha + beta) ** 2).sum(-1) / 4


def restricted_loss(E: Tensor, W1: Tensor, W2: Tensor, data: Dataset, positions: Sequence[int]) -> Tensor:
    """The GELU network's loss [K] with only ``positions`` contributing to the hidden layer."""
    u = hidden_state(E, W1, data.x, positions)
    return cross_entropy(torch.nn.functional.gelu(u) @ W2, data)


def mode_size(E: Tensor, W1: Tensor, position: int, mode: Mode) -> Tensor:
    """a^T E W1_position b [K]: how far the product of the two factors has grown along the mode."""
    return torch.einsum("kv,kvd,kdh,kh->k", mode.tokens, E, W1[:, position], mode.hidden)


def relax(E: Tensor, W1: Tensor, W2: Tensor, data: Dataset, positions, level: float, lr: float,
          settle: int = SETTLE_STEPS, max_steps: int = MAX_STEPS) -> tuple[Tensor, Tensor, Tensor]:
    """Plain GD on the network restricted to ``positions``; each model stops ``settle`` steps after it has come
    within 1e-3 of ``level``: the plateau state the flow rests in (the later positions, still at init size,
    are left out; a model that stopped does not run on to the next level while the others catch up)."""
    E, W1, W2 = (t.clone().float().requires_grad_(True) for t in (E, W1, W2))
    remaining = torch.full((E.shape[0],), -1)
    for _ in range(max_steps):
        loss = restricted_loss(E, W1, W2, data, positions)
        remaining = torch.where((remaining < 0) & (loss.detach() - level < 1e-3), settle, remaining)
        if bool((remaining == 0).all()):
            break
        moving = (remaining != 0).float()
        remaining = torch.where(remaining > 0, remaining - 1, remaining)
        grads = torch.autograd.grad(loss.sum(), (E, W1, W2))
        with torch.no_grad():
            for p, g in zip((E, W1, W2), grads):
                p -= lr * moving.reshape(-1, *[1] * (p.ndim - 1)) * g
    return tuple(t.detach().double() for t in (E, W1, W2))


def small_init_path(model: EmbMLP, data: Dataset, lr: float, level: float, max_steps: int = MAX_STEPS,
                    progress: bool | None = None) -> tuple[Tensor, tuple[Tensor, Tensor, Tensor]]:
    """The first stair: plain GD from the model's init on the key-only network with GELU expanded to second
    order at small init, z = (σ'(0) u + σ''(0) u² / 2) W2 with u = E[x_0] W1_0, until every model has come
    within 1e-3 of ``level`` (H1) and run on for ``SETTLE_STEPS``. Returns the loss curve [K, T] and the weights.

    The σ'(0) term alone is the three-factor linear path of lesson 05; σ''(0) couples the n - 1 modes of an
    order-1 signature over Z_n, which are degenerate, so that the second follows the first sooner.
    """
    data = prefix_data(data, 1)
    E, W1, W2 = (p.detach().double() for p in (model.embedding, model.w1, model.w2))
    K, L, d = model.n_models, model.seq_len, model.d
    W1 = W1.reshape(K, L, d, -1)
    params = [E.clone().requires_grad_(True), W1[:, 0].clone().requires_grad_(True), W2.clone().requires_grad_(True)]
    losses, remaining = [], None
    bar = progress_bar(max_steps, "first stair", progress)
    for _ in range(max_steps):
        u = hidden_state(params[0], params[1][:, None], data.x[:, :1], [0])
        loss = cross_entropy((SLOPE_AT_ZERO["gelu"] * u + CURVATURE_AT_ZERO * u * u / 2) @ params[2], data)
        losses.append(loss.detach())
        if remaining is None and bool((loss - level < 1e-3).all()):
            remaining = SETTLE_STEPS
        if remaining is not None:
            if remaining == 0:
                break
            remaining -= 1
        grads = torch.autograd.grad(loss.sum(), params)
        with torch.no_grad():
            for p, g in zip(params, grads):
                p -= lr * g
        bar.update(1)
    bar.close()
    W1 = W1.clone()
    W1[:, 0] = params[1].detach()
    return torch.stack(losses, 1), (params[0].detach(), W1, params[2].detach())


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
    key = torch.zeros(seen.n, dtype=torch.long)
    for i in range(position):
        key = key * data.vocab_size + seen.x[:, i]
    _, context = torch.unique(key, return_inverse=True)
    n = int(context.max()) + 1
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


def quadratic_drop(t: Tensor, onset: float, rate: float, depth: float) -> Tensor:
    """The loss drop of one mode at steps t: depth · (2u - u²), u the logistic share of its end size that
    grows as (1 + lr s)^(2n) (``rate`` = 2 ln(1 + lr s)) and passes the halfway share at ``onset``."""
    start = HALFWAY / (1 - HALFWAY)
    u = 1 / (1 + torch.exp(-(rate * (t - onset) + math.log(start))))
    return depth * (2 * u - u * u)


@dataclass(frozen=True)
class PredictedRung:
    """One level the loss is predicted to rest on: its name, loss, the order that brings it, whether it is a
    sub-level, and per model the predicted onset (step halfway down to it; 0 for H0) and dwell."""

    name: str
    level: float
    order: int
    sub: bool
    onset: Tensor  # [K]
    dwell: Tensor  # [K]


@dataclass
class StaircasePrediction:
    """The ladder predicted for each (γ, seed), the predicted loss curves and the growth of every mode.

    rungs: levels in the order the loss reaches them; steps [T] and curves [K, T]: the predicted loss
    (the linear path for the first stair, then one quadratic drop per mode); stairs: per later stair and
    mode, the growth rate 2 ln(1 + lr s) [K], the size at init m_0 [K] and the size halfway down m_mid [K].
    """

    task: object
    gammas: list[float]
    seeds: list[int]
    lr: float
    d: int
    hidden: int
    rungs: list[PredictedRung]
    steps: Tensor
    curves: Tensor
    stairs: list[dict]

    @property
    def levels(self) -> list[float]:
        return [r.level for r in self.rungs]

    def onsets(self) -> Tensor:
        """[K, R] predicted onsets, rung by rung."""
        return torch.stack([r.onset for r in self.rungs], 1)

    def table(self) -> str:
        """The predicted ladder: one row per rung, the onset and dwell of every (γ, seed)."""
        head = f"{'level':<28} {'loss':>7} " + " ".join(f"{f'γ={g:g} s{s}':>12}" for g, s in zip(self.gammas, self.seeds))
        rows = [head, f"{'':<28} {'':>7} " + " ".join(f"{'onset dwell':>12}" for _ in self.gammas)]
        for r in self.rungs:
            cells = " ".join(f"{int(o):>6d} {int(w):>5d}" for o, w in zip(r.onset.tolist(), r.dwell.tolist()))
            rows.append(f"{r.name:<28} {r.level:>7.4f} {cells}")
        return "\n".join(rows)


def _order_name(k: int) -> str:
    return "H(Y)" if k == 0 else f"H(Y | {', '.join(f'x{i}' for i in range(1, k + 1))})"


def predict_staircase(task, gammas=(1.0,), seeds=(0,), lr: float = 1.0, d: int = 32, hidden: int = 128,
                      steps: int | None = None, progress: bool | None = None) -> StaircasePrediction:
    """Predict, without training the network, every level the loss of Emb-MLP (GELU, no biases, full-batch
    plain GD at ``lr``) will rest on for a hierarchy task, with each level's onset and dwell per (γ, seed).

    ``steps``: length of the predicted curves (default: the last predicted onset and a third more, in hundreds).
    The models are initialised exactly as ``make_model("mlp", task, gamma, seed, d, hidden)`` would.
    """
    if getattr(task, "name", None) not in ("hierarchy", "transfer"):
        raise ValueError(f"predict_staircase needs a hierarchy-family task (order k enters at position k), "
                         f"got {getattr(task, 'name', task)!r}")
    number(lr, "lr", positive=True)
    data = task.population
    levels = plateau_levels(data)
    if any(not (a > b + 1e-6) for a, b in zip(levels, levels[1:])):
        raise ValueError(f"every order must lower the loss (a mix with no zero entries); the ladder is {levels}")
    g, s = ensemble_grid(gammas, seeds)
    model = make_model("mlp", task, gamma=g, seed=s, d=integer(d, "d"), hidden=integer(hidden, "hidden"))
    K, L, C = len(g), data.seq_len, data.n_labels
    E0, W1_0, _ = _weights(model)
    two_modes = C > 2  # over Z_n, n >= 3: the strongest mode first (a sub-level), the others together
    block = task.info["block"]

    # First stair: the small-init expansion, integrated.
    path, (E, W1, W2) = small_init_path(model, data, lr, levels[1], progress=progress)
    rungs: list[tuple[str, float, int, bool]] = [(_order_name(0), levels[0], 0, False)]
    if two_modes:
        rungs.append(("H(Y | x1) at rank 1", rank_one_level(data, 0), 1, True))
    rungs.append((_order_name(1), levels[1], 1, False))
    first = [r[1] for r in rungs]
    onsets = [torch.zeros(K, dtype=torch.float64)]
    for a, b in zip(first, first[1:]):
        below = path < (a + b) / 2
        onsets.append(torch.where(below.any(1), below.double().argmax(1).double(), torch.tensor(float("nan"))))
    drops, stairs = [], []  # drops: (onset [K], rate [K], depth) of every later mode
    E, W1, W2 = relax(E, W1, W2, prefix_data(data, 1), [0], levels[1], lr)

    for k in range(2, L + 1):  # order k enters at position k - 1
        position, seen = k - 1, prefix_data(data, k)
        tokens = torch.arange(position * block, (position + 1) * block)
        clock = onsets[-1]  # the modes of order k grow once the stair before them is halfway down
        mode = drive_modes(drive(E, W1, W2, seen, position), tokens, 1)[0]
        plan = []  # (mode, level it leads to, state it grows from)
        if two_modes:
            sub, on_sub = mode_level(data, position, tied_pattern(mode.tokens[0], tokens))
            rungs.append((f"{_order_name(k)} at rank 1", sub, k, True))
            plan.append((mode, levels[k - 1] - sub))
            E, W1, W2 = relax(E, W1, W2, seen, range(k), sub, lr)  # the sub-level, by the restricted flow
            left = seen.targets().double() - on_sub  # what the sub-level leaves for the weaker mode
            which = drive_modes(drive(E, W1, W2, seen, position, left), tokens, 1)[0]
            plan.append((which, sub - levels[k]))
        else:
            plan.append((mode, levels[k - 1] - levels[k]))
        rungs.append((_order_name(k), levels[k], k, False))
        E, W1, W2 = relax(E, W1, W2, seen, range(k), levels[k], lr)  # the next plateau, by the restricted flow
        for i, (mode, depth) in enumerate(plan):
            start = growing_size(E0, W1_0[:, position], mode)
            rate = 2 * torch.log1p(lr * mode.strength)
            halfway = HALFWAY * mode_size(E, W1, position, mode).abs()  # halfway down, from the size it ends at
            onset = clock + torch.log(halfway / start).clamp_min(0) / rate
            onsets.append(onset)
            drops.append((onset, rate, depth))
            stairs.append({"order": k, "mode": i + 1, "rate": rate, "start": start, "halfway_size": halfway})
            clock = onset  # the weaker mode grows once the stronger one is in

    last = float(torch.stack(onsets).nan_to_num(0).max())
    T = int(steps) if steps is not None else max(1000, -(-int(1.33 * last + 300) // 100) * 100)
    t = torch.arange(T + 1, dtype=torch.float64)
    curves = path[:, -1:].expand(K, T + 1).clone()
    curves[:, : min(path.shape[1], T + 1)] = path[:, : T + 1]
    for onset, rate, depth in drops:
        for m in range(K):
            curves[m] -= quadratic_drop(t, float(onset[m]), float(rate[m]), depth)
    ladder = [r[1] for r in rungs]
    reads = [measure_rungs(t, curves[m], ladder) for m in range(K)]
    out = []
    for j, (name, level, order, sub) in enumerate(rungs):
        dwell = torch.tensor([reads[m].rungs[j].dwell for m in range(K)])
        onset = torch.where(onsets[j].isnan(), torch.tensor(-1.0, dtype=torch.float64), onsets[j].round())
        out.append(PredictedRung(name, level, order, sub, onset.long(), dwell))
    return StaircasePrediction(task, g, s, float(lr), d, hidden, out, t.long(), curves, stairs)

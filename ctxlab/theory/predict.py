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
  the mode (a line search on that plateau state). Nothing is fitted to training runs. A restricted flow
  that has not come within 1e-3 of its level after ``plateaus.MAX_STEPS`` steps (one creeping in at the
  edge of stability, as on a five-valued task) stops there, and ``StaircasePrediction.stalls`` says so.

Over Z_n with n >= 3 an order has n - 1 modes. The strongest comes first and leaves the loss on a
sub-level: for order 1 the best rank-1 order-1 model (the modes are degenerate; init picks one),
for later orders the coarse level where the new token says only which side of the top mode it is on
(for the hierarchy task *whether* its attribute is 0). The remaining modes come down together.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor

from ctxlab.dataset import Dataset
from ctxlab.models import EmbMLP, ensemble_grid, make_model
from ctxlab.rungs import measure_rungs
from ctxlab.signatures import plateau_levels
from ctxlab.theory.plateaus import (conditional_rows, hidden_state, mode_level, model_weights, prefix_data,
                                    rank_one_level, relax, small_init_path, tied_pattern)
from ctxlab.validate import integer, number

HALFWAY = 1 - 1 / math.sqrt(2)  # a quadratic loss is halfway down when its mode is at this share of its end size


def gelu_slope(u: Tensor) -> Tensor:
    """σ'(u) of the exact (erf) GELU, Φ(u) + u φ(u): what the hidden layer passes back at u."""
    return torch.special.ndtr(u) + u * torch.exp(-u * u / 2) / math.sqrt(2 * math.pi)


def stair_drive(model: EmbMLP, data: Dataset, position: int, residual: Tensor | None = None) -> Tensor:
    """M(t) = Σ_c P(c, t) σ'(u_c) ⊙ W2 R(c, t) for every token t: [K, V, h].

    c runs over the contexts x_0 .. x_{position-1}, whose hidden state u_c the network has learned;
    R(c, t) is ``residual`` [N, C] or [K, N, C] (default: the data's P(y | c, t) - P(y | c), the
    residual on the plateau of order ``position``). Rows of tokens that never occur at ``position``
    are 0. The velocity of E_t is M(t) W1_position^T (:func:`next_stair_velocity`).
    """
    if model.activation != "gelu" or model.layernorm:
        raise ValueError("the next-stair drive is derived for GELU without LayerNorm")
    return drive(*model_weights(model), data, position, residual)


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
    return M @ model_weights(model)[1][:, position].transpose(1, 2)


def anchor_share(model: EmbMLP, data: Dataset, position: int) -> Tensor:
    """‖δ‖ / ‖u_c‖ per model [K]: the hidden contribution of the tokens at ``position`` and after, relative to
    that of the context before it (row norms averaged): how far :func:`next_stair_velocity`'s u(x) ≈ u_c is
    stretched."""
    E, W1, _ = model_weights(model)
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


def mode_size(E: Tensor, W1: Tensor, position: int, mode: Mode) -> Tensor:
    """a^T E W1_position b [K]: how far the product of the two factors has grown along the mode."""
    return torch.einsum("kv,kvd,kdh,kh->k", mode.tokens, E, W1[:, position], mode.hidden)


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
    stalls: list[str]  # each plateau whose restricted flow gave up short of its level, and by how much

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


def _predicted_curves(path: Tensor, drops: list, onsets: list[Tensor], rungs: list[tuple], steps: int | None):
    """The predicted loss [K, T] (the first stair's path, then one quadratic drop per later mode) and the
    predicted rungs, each with its onset and the dwell read from that curve as a run's would be."""
    K = path.shape[0]
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
    return t, curves, out


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
    E0, W1_0, _ = model_weights(model)
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
    stalls: list[str] = []

    def plateau(E, W1, W2, seen, positions, name, level):
        """The restricted flow's plateau state on ``level``; a flow that gave up short of it is noted."""
        E, W1, W2, path = relax(E, W1, W2, seen, positions, level, lr, progress=progress, desc=f"plateau {name}")
        short = [f"γ={gam:g} seed {sd}: {float(low - level):.4f} above" for gam, sd, low in zip(g, s, path.min(1).values)
                 if low - level >= 1e-3]
        if short:
            stalls.append(f"the restricted flow did not come within 1e-3 of {name} = {level:.4f} in {path.shape[1]} "
                          f"steps ({'; '.join(short)}); what follows starts from where it stopped")
        return E, W1, W2

    E, W1, W2 = plateau(E, W1, W2, prefix_data(data, 1), [0], _order_name(1), levels[1])

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
            E, W1, W2 = plateau(E, W1, W2, seen, range(k), rungs[-1][0], sub)  # the sub-level, by the restricted flow
            left = seen.targets().double() - on_sub  # what the sub-level leaves for the weaker mode
            which = drive_modes(drive(E, W1, W2, seen, position, left), tokens, 1)[0]
            plan.append((which, sub - levels[k]))
        else:
            plan.append((mode, levels[k - 1] - levels[k]))
        rungs.append((_order_name(k), levels[k], k, False))
        E, W1, W2 = plateau(E, W1, W2, seen, range(k), _order_name(k), levels[k])  # the next plateau, by the restricted flow
        for i, (mode, depth) in enumerate(plan):
            start = growing_size(E0, W1_0[:, position], mode)
            rate = 2 * torch.log1p(lr * mode.strength)
            halfway = HALFWAY * mode_size(E, W1, position, mode).abs()  # halfway down, from the size it ends at
            onset = clock + torch.log(halfway / start).clamp_min(0) / rate
            onsets.append(onset)
            drops.append((onset, rate, depth))
            stairs.append({"order": k, "mode": i + 1, "rate": rate, "start": start, "halfway_size": halfway})
            clock = onset  # the weaker mode grows once the stronger one is in

    t, curves, out = _predicted_curves(path, drops, onsets, rungs, steps)
    return StaircasePrediction(task, g, s, float(lr), d, hidden, out, t.long(), curves, stairs, stalls)

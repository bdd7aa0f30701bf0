"""Small-init gradient-flow predictions, to hold against what training does.

At small init every logit is tiny, so the softmax is uniform and the network's Jacobian is a
product of (small) weights. For Emb-MLP with z = sigma(h W1) W2 and sigma(0) = 0 this gives
the leading-order embedding velocity (E1, course reconstruction of the paper's equation):

    dE_s/dt = sigma'(0) * sum_i  M_i (P(x_i = s, y) - P(x_i = s) u),   M_i = W1^(i) W2   [d, C]

i.e. token frequency x (its label distribution - uniform), mapped through the weights.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

from ctxlab.models import EmbMLP, LinearEmb, ensemble_grid, make_model
from ctxlab.rungs import crossing_step
from ctxlab.signatures import entropy_ladder, interaction, joint
from ctxlab.dataset import Dataset
from ctxlab.train import cross_entropy, train
from ctxlab.validate import finite, integer, number

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


# --- linear-network modes ---
#
# Stage 1 of small-init training is a deep *linear* network: the logits are a product of weight
# matrices applied to one-hot tokens, the softmax sits at uniform, and gradient descent sees only
# the input-output correlation Sigma_yx[:, (i, s)] = pi_i(s) (q_{i,s} - u). Each singular mode of
# Sigma_yx grows on its own (Saxe et al. 2014): with two factors as (1 + lr s_k)^(2 t).


@dataclass(frozen=True)
class Modes:
    """The SVD of Sigma_yx: u [C, r] label directions, s [r] singular values (descending),
    v [L*V, r] token-position directions (column i*V + s is token s at position i)."""

    u: Tensor
    s: Tensor
    v: Tensor


def input_output_correlation(data: Dataset) -> Tensor:
    """Sigma_yx = E[(e_y - u) onehot(x)^T]: [C, L*V], column i*V + s = pi_i(s) (q_{i,s} - u)."""
    blocks = []
    for i in range(data.seq_len):
        table = joint(data.to("cpu"), (i,))  # P(x_i = s, y): [V, C]
        blocks.append(table - table.sum(-1, keepdim=True) / data.n_labels)
    return torch.cat(blocks, dim=0).T.contiguous()


def correlation_modes(data: Dataset, tol: float = 1e-9) -> Modes:
    """The non-zero singular modes of Sigma_yx, strongest first: what stage 1 learns, in order."""
    u, s, vh = torch.linalg.svd(input_output_correlation(data), full_matrices=False)
    keep = s > tol * max(float(s[0]), 1e-300)
    return Modes(u[:, keep], s[keep], vh[keep].T)


def product_map(model) -> Tensor:
    """The logit map of the linear path, [K, C, L*V]: column i*V + s = what token s at i adds to z.

    LinearEmb: W^(i)^T E_s (exact). EmbMLP: sigma'(0) (E_s W1^(i) W2)^T, its small-init
    linearisation (three factors).
    """
    E = model.embedding.detach().double().cpu()  # [K, V, d]
    K, V, d = E.shape
    L = model.seq_len
    if isinstance(model, LinearEmb):
        w = model.w.detach().double().cpu().reshape(K, L, d, -1)
        scale = 1.0
    elif isinstance(model, EmbMLP):
        w = (model.w1.detach().double().cpu().reshape(K, L, d, -1) @ model.w2.detach().double().cpu()[:, None])
        scale = SLOPE_AT_ZERO[model.activation] if model.activation in SLOPE_AT_ZERO else 1.0
    else:
        raise ValueError(f"product_map needs a LinearEmb or EmbMLP ensemble, got {type(model).__name__}")
    blocks = torch.einsum("kvd,kldc->kclv", E, w)  # [K, C, L, V]
    return scale * blocks.reshape(K, -1, L * V)


def mode_strengths(maps: Tensor, modes: Modes) -> Tensor:
    """a_k = u_k^T A v_k for maps [..., C, L*V] (e.g. a probe's [K, T, C, L*V]): [..., r]."""
    return torch.einsum("cr,...cn,nr->...r", modes.u, maps.double(), modes.v)


def predicted_growth_rates(singular_values: Tensor, lr: float = 1.0) -> Tensor:
    """Growth rate of log a_k per GD step for two factors: 2 ln(1 + lr s_k) (~ 2 lr s_k).

    Gradient flow gives e^{2 s_k t}; a GD step multiplies each factor's mode by (1 + lr s_k).
    """
    number(lr, "lr", positive=True)
    return 2 * torch.log1p(lr * torch.as_tensor(singular_values, dtype=torch.float64))


def growing_amplitude(model, modes: Modes) -> Tensor:
    """|alpha_k + beta_k|^2 / 4 at the current weights of a LinearEmb: [K, r].

    With alpha_k = W^(i) u_k and beta_k = E^T v_k^(i) (i: the position where v_k lives), the
    linearised dynamics give a_k(t) = |alpha+beta|^2/4 (1 + lr s_k)^(2t) - |alpha-beta|^2/4:
    this is the a_0 that sets how long mode k takes to switch on.
    """
    if not isinstance(model, LinearEmb):
        raise ValueError("growing_amplitude is exact for the two-factor LinearEmb only")
    E = model.embedding.detach().double().cpu()
    K, V, d = E.shape
    w = model.w.detach().double().cpu().reshape(K, model.seq_len, d, -1)
    v = modes.v.reshape(model.seq_len, V, -1)  # [L, V, r]
    where = v.norm(dim=1).argmax(0)  # [r]: position of each mode
    out = torch.zeros(K, len(modes.s), dtype=torch.float64)
    for k, i in enumerate(where.tolist()):
        alpha = w[:, i] @ modes.u[:, k]  # [K, d]
        beta = E.transpose(1, 2) @ v[i, :, k]  # [K, d]
        out[:, k] = ((alpha + beta) ** 2).sum(-1) / 4
    return out


def predicted_switch_on(singular_values: Tensor, amplitude: Tensor, level: float, lr: float = 1.0) -> Tensor:
    """Steps until a_k reaches ``level`` from growing amplitude a_0: ln(level / a_0) / rate_k."""
    number(level, "level", positive=True)
    if bool((finite(amplitude, "amplitude", dtype=torch.float64) <= 0).any()):
        raise ValueError("amplitude must be positive: a mode with no growing part never switches on")
    rates = predicted_growth_rates(singular_values, lr)
    return torch.log(level / torch.as_tensor(amplitude, dtype=torch.float64)) / rates


def fit_growth_rate(steps: Tensor, strengths: Tensor, start: float, stop: float) -> Tensor:
    """Least-squares slope of ln|a(t)| over recorded steps in [start, stop]: strengths [..., T] -> [...]."""
    t = torch.as_tensor(steps, dtype=torch.float64)
    number(start, "start")
    number(stop, "stop")
    inside = (t >= start) & (t <= stop)
    if int(inside.sum()) < 2:
        raise ValueError(f"need at least two recorded steps in [{start}, {stop}]")
    x = t[inside] - t[inside].mean()
    y = torch.as_tensor(strengths, dtype=torch.float64)[..., inside].abs().clamp_min(1e-300).log()
    return ((y - y.mean(-1, keepdim=True)) * x).sum(-1) / (x * x).sum()


@dataclass(frozen=True)
class ModeGrowth:
    """The modes of Sigma_yx in a LinearEmb run, measured against the linear prediction (lesson 05).

    One model per γ. steps [T], loss [G, T]; strengths [G, T, r]: a_k(t) = u_k^T A(t) v_k;
    amplitude [G, r]: the growing amplitude a_0 at init; predicted_rate [r]: 2 ln(1 + lr s_k);
    measured_rate [G, r]: the fitted slope of ln a_k on its exponential stretch (above 3 a_0 and
    below 0.1), NaN where that stretch has fewer than two recorded steps (large init);
    windows [G, r, 2]: that stretch's first and last step (-1 if none); switch_on [G, r]: first step
    with a_k > level (-1 if never); expected_switch_on [G, r]: ln(level / a_0) / rate_k.
    """

    gammas: list[float]
    lr: float
    level: float
    singular_values: Tensor
    steps: Tensor
    loss: Tensor
    strengths: Tensor
    amplitude: Tensor
    predicted_rate: Tensor
    measured_rate: Tensor
    windows: Tensor
    switch_on: Tensor
    expected_switch_on: Tensor


def mode_growth(task, gammas=(0.75, 1.0, 1.25, 1.5, 1.75), steps: int = 300, lr: float = 1.0, d: int = 32,
                seed: int = 0, level: float = 0.5, device=None) -> ModeGrowth:
    """Train one LinearEmb per γ with plain GD, recording the product map every step, and read
    each mode's growth rate and switch-on step next to the predictions of the linear theory."""
    data = task.population
    modes = correlation_modes(data)
    gammas = [float(g) for g in gammas]
    model = make_model("linear", task, gamma=gammas, seed=integer(seed, "seed"), d=d)
    amplitude = growing_amplitude(model, modes)
    run = train(model, data, steps, lr=lr, record_every=1, probes={"map": product_map}, progress=False, device=device)
    a = mode_strengths(run.extras["map"], modes)  # [G, T, r]
    r = len(modes.s)
    measured = torch.full((len(gammas), r), float("nan"), dtype=torch.float64)
    windows = torch.full((len(gammas), r, 2), -1, dtype=torch.long)
    for k in range(len(gammas)):
        for m in range(r):
            inside = run.steps[(a[k, :, m] > 3 * amplitude[k, m]) & (a[k, :, m] < 0.1)]
            if inside.numel() >= 2:
                windows[k, m] = torch.stack([inside[0], inside[-1]])
                measured[k, m] = fit_growth_rate(run.steps, a[k, :, m], int(inside[0]), int(inside[-1]))
    switch_on = torch.stack([crossing_step(run.steps, a[:, :, m], level, below=False) for m in range(r)], dim=1)
    return ModeGrowth(gammas, float(lr), float(level), modes.s, run.steps, run.loss, a, amplitude,
                      predicted_growth_rates(modes.s, lr), measured, windows, switch_on,
                      predicted_switch_on(modes.s, amplitude, level, lr))


# --- lesson 06: the residual pair statistic that drives the next stair ---


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


# --- lesson 07: attention at small init ---


def target_attention(task) -> Callable[[object], Tensor]:
    """A ``train`` probe: mean over sequences of attn[query = the key (last position), key = the
    position it names] for a pointer task (``info["target_position"]``); returns [K], 1/L while uniform."""
    where = task.info.get("target_position")
    if where is None:
        raise ValueError("target_attention needs a task with info['target_position'] (see pointer_task)")
    x = task.population.x
    rows = torch.arange(x.shape[0])

    def probe(model) -> Tensor:
        attn = model.attention(x.to(model.embedding.device))[:, :, -1, :]  # [K, N, L]
        return attn[:, rows, where.to(attn.device)].mean(1)

    return probe


def bag_of_context(model, x: Tensor) -> Tensor:
    """Attention output when every score is equal: mean_j (E[x_j] + P_j) W_V, [K, N, d].

    At small init the scores are O(eps^4), so this is what one attention layer computes at first.
    """
    h = model.embedding.detach()[:, x] + model.position.detach()[:, None]  # [K, N, L, d]
    return h.mean(2) @ model.w_v.detach()


def _uniform_attention_parts(model, data: Dataset):
    """What E2 and E3 share at uniform attention: h [K, N, L, d] and the bag-level error g [K, N, d]
    (dLoss/d o_i for every query i, leading order: p = u, through M = W1 W2)."""
    if not getattr(model, "mlp", False) or model.residual or model.layernorm or model.activation not in SLOPE_AT_ZERO:
        raise ValueError("E2/E3 are written for the default attention block: GELU/tanh/linear head, no residual, "
                         "no LayerNorm")
    x = data.x.cpu()
    h = (model.embedding.detach().double().cpu()[:, x] + model.position.detach().double().cpu()[:, None])
    M = model.w1.detach().double().cpu() @ model.w2.detach().double().cpu()
    u = torch.full((model.n_labels,), 1.0 / model.n_labels, dtype=torch.float64)
    error = (u - data.targets().double().cpu()) * data.weights.double().cpu()[:, None]  # w_n (p - y), p = u
    g = SLOPE_AT_ZERO[model.activation] / model.seq_len * error @ M.transpose(-1, -2)  # [K, N, d]
    return h, g


def attention_embedding_velocity(model, data: Dataset) -> Tensor:
    """E2, the leading-order -dLoss/dE of the attention model at uniform attention: [K, V, d].

    dE_s/dt = sigma'(0)/L * sum_j pi_j(s) (P(y | x_j = s) - u) (W_V W1 W2)^T: E1 with the bag in
    place of the positions."""
    _, g = _uniform_attention_parts(model, data)
    one_hot = torch.nn.functional.one_hot(data.x.cpu(), model.vocab_size).double()  # [N, L, V]
    # o_i = (1/L) sum_j h_j W_V for each of the L queries, so dLoss/dh_j = sum_i g (1/L) W_V^T = g W_V^T
    back = g @ model.w_v.detach().double().cpu().transpose(-1, -2)  # [K, N, d]
    return -torch.einsum("nlv,knd->kvd", one_hot, back).float()


def qk_force(model, data: Dataset) -> Tensor:
    """E3: -dLoss/dA for A = W_Q W_K^T at uniform attention, leading order: [K, d, d].

    -dR/dA = -1/(L sqrt(d_head)) E[sum_ij <g_i, (h_j - h_bar) W_V> h_i^T h_j], and since g_i = g for
    every query at uniform attention this is -1/sqrt(d_head) E[h_bar^T sum_j c_j h_j]: six weight
    factors (h_bar, h_j, h_j - h_bar, W_V, W1, W2), so O(eps^6)."""
    h, g = _uniform_attention_parts(model, data)
    v = (h - h.mean(2, keepdim=True)) @ model.w_v.detach().double().cpu()[:, None]  # (h_j - h_bar) W_V
    c = torch.einsum("knd,knld->knl", g, v)
    return -torch.einsum("knd,knl,knle->kde", h.mean(2), c, h).float() / model.d_head ** 0.5


def qk_velocity(model, data: Dataset) -> tuple[Tensor, Tensor]:
    """dA/dt under gradient flow on W_Q and W_K: (E3's prediction G W_K W_K^T + W_Q W_Q^T G with
    G = :func:`qk_force`, the exact value -grad_Q W_K^T - W_Q grad_K^T by autograd), each [K, d, d]."""
    G = qk_force(model, data).double()
    wq, wk = model.w_q.detach().double().cpu(), model.w_k.detach().double().cpu()
    predicted = G @ wk @ wk.transpose(-1, -2) + wq @ wq.transpose(-1, -2) @ G
    model.zero_grad(set_to_none=True)
    cross_entropy(model(data.x), data).sum().backward()
    gq, gk = model.w_q.grad.detach().double().cpu(), model.w_k.grad.detach().double().cpu()
    model.zero_grad(set_to_none=True)
    actual = -gq @ wk.transpose(-1, -2) - wq @ gk.transpose(-1, -2)
    return predicted.float(), actual.float()


def departure_step(steps: Tensor, curve: Tensor, tol: float, relative: bool = False) -> Tensor:
    """First recorded step where ``curve`` [..., T] leaves its starting value by more than ``tol``.

    With ``relative=True`` the tolerance is ``tol * |curve[..., 0]|`` (for norms that start > 0).
    Returns [...] steps, -1 where the curve never leaves.
    """
    c = torch.as_tensor(curve, dtype=torch.float64)
    s = torch.as_tensor(steps)
    if c.shape[-1] != s.numel() or number(tol, "tol") <= 0:
        raise ValueError(f"need one curve value per recorded step ({s.numel()}) and tol > 0")
    start = c[..., :1]
    bound = tol * start.abs() if relative else torch.full_like(start, tol)
    out = (c - start).abs() > bound
    first = out.double().argmax(-1)
    return torch.where(out.any(-1), s[first], torch.full_like(first, -1, dtype=s.dtype))

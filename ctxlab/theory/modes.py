"""Stage 1 of small-init training as a deep linear network (lesson 05): each singular mode of the
input-output correlation grows on its own (Saxe et al. 2014), with two factors as (1 + lr s_k)^(2t)."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from ctxlab.dataset import Dataset
from ctxlab.models import EmbMLP, LinearEmb, make_model
from ctxlab.rungs import crossing_step
from ctxlab.signatures import joint
from ctxlab.theory.first_stair import SLOPE_AT_ZERO
from ctxlab.train import train
from ctxlab.validate import finite, integer, number

# sigma'(0) of each activation: gelu(u) = u * Phi(u) ~ u / 2 near 0.


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
    # dispatch on the class's name: `ctxlab grade` re-imports ctxlab before each check, so a model a check
    # builds can come from a newer copy of ctxlab.models than the one the learner's notebook imported
    kinds = {cls.__name__ for cls in type(model).__mro__}
    E = model.embedding.detach().double().cpu()  # [K, V, d]
    K, V, d = E.shape
    L = model.seq_len
    if LinearEmb.__name__ in kinds:
        w = model.w.detach().double().cpu().reshape(K, L, d, -1)
        scale = 1.0
    elif EmbMLP.__name__ in kinds:
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


def mode_projections(model, modes: Modes, positions: list[int] | None = None) -> tuple[Tensor, Tensor]:
    """alpha_k = W^(i) u_k and beta_k = E^T v_k^(i) of a LinearEmb, [K, r, d] each: both factors seen from mode k.

    i is the position where v_k lives (its block of largest norm) unless ``positions`` gives one per mode.
    """
    if not isinstance(model, LinearEmb):
        raise ValueError("mode projections are exact for the two-factor LinearEmb only")
    E = model.embedding.detach().double().cpu()
    K, V, d = E.shape
    w = model.w.detach().double().cpu().reshape(K, model.seq_len, d, -1)
    v = modes.v.reshape(model.seq_len, V, -1)  # [L, V, r]
    where = v.norm(dim=1).argmax(0).tolist() if positions is None else positions
    alpha = torch.stack([w[:, i] @ modes.u[:, k] for k, i in enumerate(where)], 1)
    beta = torch.stack([E.transpose(1, 2) @ v[i, :, k] for k, i in enumerate(where)], 1)
    return alpha, beta


def growing_amplitude(model, modes: Modes) -> Tensor:
    """|alpha_k + beta_k|^2 / 4 at the current weights of a LinearEmb: [K, r].

    The linearised dynamics give a_k(t) = |alpha+beta|^2/4 (1 + lr s_k)^(2t) - |alpha-beta|^2/4:
    this is the a_0 that sets how long mode k takes to switch on.
    """
    alpha, beta = mode_projections(model, modes)
    return ((alpha + beta) ** 2).sum(-1) / 4


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

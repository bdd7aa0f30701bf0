"""Token-level learning times: one sigmoid per contextualised token's loss curve (lesson 15).

Wang, Hu, Yang, Guo & Zhang (arXiv 2606.29858) fit every contextualised token's validation loss
with a sigmoid in log-step and read the aggregate loss as a sum of localised learning events.
On a synthetic task with an exact population every distinct input sequence is such a token, so
the whole population of curves can be fitted and compared with the staircase:

* :func:`token_loss_probe` -- a ``train(probes=...)`` function recording every sequence's loss;
* :func:`fit_sigmoids` -- fits ``l(t) = floor + drop / (1 + exp((log t - log tau) / width))`` to
  all curves at once (Adam on every curve together), with each curve's R²; curves that never
  move are flagged instead of being fitted to noise;
* :func:`order_losses` and :func:`token_orders` -- the per-sequence loss of the order-k
  statistic p(y | x_1..x_k), and the smallest order that already gives a token its final loss;
* :func:`reconstruction` -- how well the weighted sum of the fitted sigmoids reproduces the mean
  loss curve and its derivative (R² of each);
* :func:`log_tau_iqr` and :func:`learns_before` -- how spread the learning times of each order
  are, and how far one order comes before another (the same measures on text:
  :mod:`ctxlab.learning_times_text`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

from ctxlab.dataset import Dataset
from ctxlab.signatures import joint
from ctxlab.optimizer import Optimizer
from ctxlab.validate import finite, integer, number


def token_loss_probe(data: Dataset) -> Callable:
    """A probe for :func:`ctxlab.train.train`: every row's cross-entropy, [K, N] per recorded step.

    The training loop already records the weighted mean; this keeps the per-row terms, so the
    mean loss is ``probe @ data.weights`` at every recorded step.
    """

    def row_loss(model) -> Tensor:
        x = data.x.to(model.embedding.device)
        logp = torch.log_softmax(model(x), dim=-1)
        targets = data.targets().to(logp)
        return -(logp * targets).sum(-1)

    return row_loss


def sigmoid_curve(steps: Tensor, floor: Tensor, drop: Tensor, tau: Tensor, width: Tensor) -> Tensor:
    """l(t) = floor + drop / (1 + exp((log t - log tau) / width)) at ``steps`` [T] (all > 0): [..., T].

    Before tau the loss sits near floor + drop, after it near floor; width is in units of log-step
    (the transition spans about tau * exp(+-2 width)). A negative drop is a rise.
    """
    log_t = torch.as_tensor(steps, dtype=torch.float64).log()
    z = (log_t - torch.as_tensor(tau, dtype=torch.float64)[..., None].log()) / torch.as_tensor(width, dtype=torch.float64)[..., None]
    return torch.as_tensor(floor, dtype=torch.float64)[..., None] + torch.as_tensor(drop, dtype=torch.float64)[..., None] * torch.sigmoid(-z)


def r_squared(target: Tensor, fitted: Tensor) -> Tensor:
    """1 - SSE / SST along the last axis (NaN where the target does not vary)."""
    target, fitted = torch.as_tensor(target, dtype=torch.float64), torch.as_tensor(fitted, dtype=torch.float64)
    sst = (target - target.mean(-1, keepdim=True)).pow(2).sum(-1)
    sse = (target - fitted).pow(2).sum(-1)
    return torch.where(sst > 0, 1 - sse / sst.clamp_min(1e-300), torch.full_like(sst, float("nan")))


@dataclass(frozen=True)
class SigmoidFit:
    """Fitted parameters of every curve, each [...] (the curves' leading shape).

    moved: the curve's range exceeded ``min_change``; an unmoved curve is not fitted: its floor
    is its mean, its drop 0, its tau and r2 NaN, so it adds a constant to a reconstruction.
    r2: the fit's R² on its own curve.
    """

    floor: Tensor
    drop: Tensor
    tau: Tensor
    width: Tensor
    r2: Tensor
    moved: Tensor

    def curves(self, steps: Tensor) -> Tensor:
        """The fitted curves at ``steps``: [..., T] (constants for unmoved curves)."""
        tau = torch.where(self.moved, self.tau, torch.ones_like(self.tau))
        width = torch.where(self.moved, self.width, torch.ones_like(self.width))
        return sigmoid_curve(steps, self.floor, torch.where(self.moved, self.drop, 0.0), tau, width)


def _check_steps_curves(steps, curves) -> tuple[Tensor, Tensor]:
    steps = finite(steps, "steps", dtype=torch.float64)
    curves = finite(curves, "curves", dtype=torch.float64)
    if steps.ndim != 1 or steps.numel() < 4:
        raise ValueError(f"steps must be 1-d with at least 4 recorded steps, got shape {tuple(steps.shape)}")
    if bool((steps <= 0).any()) or bool((steps.diff() <= 0).any()):
        raise ValueError("steps must be positive and strictly increasing (log t needs t > 0: leave out step 0)")
    if curves.shape[-1] != steps.numel():
        raise ValueError(f"curves have {curves.shape[-1]} values each but there are {steps.numel()} steps")
    return steps, curves


def _initial_guess(log_t: Tensor, curves: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """floor, drop, log tau from the curve's largest excursion from its start.

    A curve that goes down and comes part of the way back is started on its main move, not on
    its small net change.
    """
    start = curves[:, :1]
    away = curves - start
    far = away.abs().argmax(-1)
    extreme = curves.gather(-1, far[:, None]).squeeze(-1)
    half = away.abs() >= 0.5 * away.abs().max(-1, keepdim=True).values
    return extreme, start.squeeze(-1) - extreme, log_t[half.float().argmax(-1)]


def fit_sigmoids(steps, curves, *, min_change: float = 0.02, iterations: int = 300, lr: float = 0.05) -> SigmoidFit:
    """Fit one sigmoid in log-step to every curve [..., T] at once; see :func:`sigmoid_curve`.

    All curves are fitted together by Adam on the sum of their mean squared errors, each divided
    by the curve's own variance so that small curves count as much as large ones (the gradient is
    written out: autograd would cost most of the time). Curves whose range is below
    ``min_change`` nats are flagged unmoved and left unfitted.
    """
    steps, curves = _check_steps_curves(steps, curves)
    number(min_change, "min_change", minimum=0)
    integer(iterations, "iterations", minimum=1)
    number(lr, "lr", positive=True)
    shape = curves.shape[:-1]
    flat = curves.reshape(-1, steps.numel())
    moved = (flat.max(-1).values - flat.min(-1).values) > min_change
    log_t = steps.log()
    floor0, drop0, log_tau0 = _initial_guess(log_t, flat)
    params = [p.clone() for p in (floor0, drop0, log_tau0, torch.full_like(floor0, -1.0))]
    weight = 2.0 * moved / (steps.numel() * flat.var(-1).clamp_min(1e-12))  # each curve scaled by its variance
    # the training loop's own Adam (one learning rate per curve) on the closed-form gradient of the squared error
    opt = Optimizer("adam", params, torch.full_like(floor0, lr), momentum=0.0, weight_decay=0.0)
    for _ in range(iterations):
        floor, drop, log_tau, log_w = params
        width = log_w.exp()[:, None]
        z = (log_t - log_tau[:, None]) / width
        s = torch.sigmoid(-z)
        r = (floor[:, None] + drop[:, None] * s - flat) * weight[:, None]
        slope = r * drop[:, None] * s * (1 - s)  # d loss / d(-z), per point
        grads = (r.sum(-1), (r * s).sum(-1), (slope / width).sum(-1), (slope * z).sum(-1))
        for p, g in zip(params, grads):
            p.grad = g
        opt.step()
    floor, drop, log_tau, log_w = params
    tau, width = log_tau.exp(), log_w.exp()
    nan = torch.full_like(floor, float("nan"))
    fit = SigmoidFit(floor, drop, tau, width, nan, moved)
    r2 = torch.where(moved, r_squared(flat, fit.curves(steps)), nan)
    out = SigmoidFit(
        torch.where(moved, floor, flat.mean(-1)), torch.where(moved, drop, 0.0), torch.where(moved, tau, nan),
        torch.where(moved, width, nan), r2, moved,
    )
    return SigmoidFit(*(getattr(out, f).reshape(shape) for f in ("floor", "drop", "tau", "width", "r2", "moved")))


def order_losses(data: Dataset, max_order: int | None = None) -> Tensor:
    """Per-row loss of the order-k statistic p(y | x_1..x_k), k = 0..max_order: [max_order + 1, N].

    Row n of order k is the cross-entropy of its label distribution under the conditional label
    distribution of its first k tokens, counted over ``data`` with :func:`ctxlab.signatures.joint`.
    Weighted by ``data.weights`` each row of this table averages to H(Y | x_1..x_k).
    """
    max_order = data.seq_len if max_order is None else integer(max_order, "max_order", minimum=0)
    if max_order > data.seq_len:
        raise ValueError(f"max_order must be at most the sequence length {data.seq_len}, got {max_order}")
    targets = data.targets().to(torch.float64)
    rows = []
    for k in range(max_order + 1):
        table = joint(data, tuple(range(k))).reshape(-1, data.n_labels)
        cond = table / table.sum(-1, keepdim=True).clamp_min(1e-300)
        flat = torch.zeros(data.n, dtype=torch.long)
        for p in range(k):
            flat = flat * data.vocab_size + data.x[:, p].long()
        p_row = cond[flat]
        rows.append(-(targets * torch.where(targets > 0, p_row.clamp_min(1e-300).log(), 0.0)).sum(-1))
    return torch.stack(rows)


def token_orders(data: Dataset, final_loss, tol: float = 0.01) -> Tensor:
    """The smallest k whose statistic p(y | x_1..x_k) gives each row its final loss within ``tol``.

    final_loss: [..., N] per-row losses at the end of training (``[-1]`` of the probe). Returns
    [..., N] orders; the full context always qualifies (its loss is the row's own entropy, the
    least any model can reach), so every row gets an order.
    """
    final = finite(final_loss, "final_loss", dtype=torch.float64)
    if final.shape[-1] != data.n:
        raise ValueError(f"final_loss must hold one loss per row of data ({data.n}), got shape {tuple(final.shape)}")
    number(tol, "tol", minimum=0)
    losses = order_losses(data)  # [L + 1, N]
    good = losses <= final[..., None, :] + tol  # [..., L + 1, N]
    good[..., -1, :] = True
    return good.to(torch.int64).argmax(-2)


@dataclass(frozen=True)
class Reconstruction:
    """The mean loss and its sum-of-sigmoids reconstruction, with R² of each and of d/d log t."""

    mean: Tensor
    fitted: Tensor
    slope: Tensor
    fitted_slope: Tensor
    r2_curve: Tensor
    r2_slope: Tensor


def reconstruction(steps, curves, fit: SigmoidFit, weights) -> Reconstruction:
    """Weighted sum of the fitted sigmoids against the weighted mean of the curves [..., N, T].

    Derivatives are taken with respect to log t by central differences on the recorded grid (the
    same operator for both), which is what a log-step learning-time spectrum predicts.
    """
    steps, curves = _check_steps_curves(steps, curves)
    w = finite(weights, "weights", nonnegative=True, dtype=torch.float64)
    if curves.ndim < 2 or w.shape != curves.shape[-2:-1]:
        raise ValueError(f"weights must be [N] for curves [..., N, T]; got {tuple(w.shape)} and {tuple(curves.shape)}")
    w = w / w.sum()
    mean = torch.einsum("n,...nt->...t", w, curves)
    fitted = torch.einsum("n,...nt->...t", w, fit.curves(steps))
    log_t = steps.log()
    slope, fitted_slope = (torch.gradient(c, spacing=(log_t,), dim=-1)[0] for c in (mean, fitted))
    return Reconstruction(mean, fitted, slope, fitted_slope, r_squared(mean, fitted), r_squared(slope, fitted_slope))


def log_spaced_steps(steps: int, n: int = 100) -> list[int]:
    """About ``n`` distinct recorded steps from 1 to ``steps``, evenly spaced in log t."""
    integer(steps, "steps", minimum=2)
    integer(n, "n", minimum=2)
    grid = torch.logspace(0, float(torch.tensor(float(steps)).log10()), n, dtype=torch.float64).round().long()
    return sorted(set(grid.tolist()) | {steps})


# Sizes per profile: quick is what lesson 15 runs (seconds on one CPU core); full runs longer, with more seeds.
PROFILES = {"quick": {"steps": 1500, "seeds": (0, 1, 2), "records": 100},
            "full": {"steps": 4000, "seeds": (0, 1, 2, 3, 4), "records": 200}}


@dataclass(frozen=True)
class LearningTimes:
    """One run of :func:`learning_time_experiment`: per-sequence curves [K, N, T], their fits, each
    sequence's order [K, N], the mean-loss reconstruction, the task's levels and the rung onsets [K, L]."""

    steps: Tensor
    curves: Tensor
    fit: SigmoidFit
    orders: Tensor
    rec: Reconstruction
    levels: list[float]
    onsets: Tensor
    seeds: list[int]

    def to_json(self) -> dict:
        """The numbers behind the headline figure (no per-step curves)."""
        return {"seeds": self.seeds, "levels": self.levels, "onsets": self.onsets.tolist(),
                "tau": self.fit.tau.tolist(), "r2": self.fit.r2.tolist(), "orders": self.orders.tolist(),
                "r2_curve": self.rec.r2_curve.tolist(), "r2_slope": self.rec.r2_slope.tolist()}


def learning_time_experiment(gamma: float = 1.0, profile: str | None = None, device=None,
                             progress: bool | None = None, tol: float = 0.01) -> LearningTimes:
    """Lesson 15's run: Emb-MLPs on the binary hierarchy task (full-batch GD, lr 1), every
    sequence's loss recorded at log-spaced steps, one sigmoid fitted per sequence."""
    from ctxlab.env import profile as current_profile
    from ctxlab.models import make_model
    from ctxlab.rungs import stair_onsets
    from ctxlab.tasks import hierarchy_task
    from ctxlab.train import train

    name = profile or current_profile()
    if name not in PROFILES:
        raise ValueError(f"unknown profile {name!r}; choose one of {sorted(PROFILES)}")
    cfg = PROFILES[name]
    task = hierarchy_task(block=8, n_values=2)
    data, seeds = task.population, list(cfg["seeds"])
    model = make_model("mlp", task, gamma=[gamma] * len(seeds), seed=seeds, d=32, hidden=128)
    run = train(model, data, cfg["steps"], lr=1.0, record_steps=log_spaced_steps(cfg["steps"], cfg["records"]),
                probes={"row_loss": token_loss_probe(data)}, device=device, progress=progress,
                desc="token loss curves")
    curves = run.extras["row_loss"].transpose(1, 2).double()  # [K, N, T]
    fit = fit_sigmoids(run.steps, curves)
    levels = task.plateau_levels()
    return LearningTimes(run.steps, curves, fit, token_orders(data, curves[..., -1], tol),
                         reconstruction(run.steps, curves, fit, data.weights), levels,
                         stair_onsets(run.steps, run.loss, levels), seeds)


# --- how spread and how ordered a spectrum is ------------------------------------------------------


def _tau_and_orders(tau, orders) -> tuple[Tensor, Tensor]:
    """τ as float64 and the orders broadcast to its shape (one order per token serves every seed)."""
    tau, orders = torch.as_tensor(tau, dtype=torch.float64), torch.as_tensor(orders)
    try:
        return tau, orders.expand_as(tau)
    except RuntimeError:
        raise ValueError(f"orders must have the shape of tau or broadcast to it, got {tuple(orders.shape)} "
                         f"and {tuple(tau.shape)}") from None


def log_tau_iqr(tau, orders, min_count: int = 10) -> dict[int, float]:
    """Interquartile range of ln τ among the tokens of each order (pooled over seeds; unfitted curves, NaN τ, left out):
    how far a population of learning times is spread, in log-steps. Orders with fewer than
    ``min_count`` fitted tokens get no entry (a quartile of a handful means little)."""
    tau, orders = _tau_and_orders(tau, orders)
    integer(min_count, "min_count", minimum=2)
    log_tau = tau.log()
    out = {}
    for order in sorted(set(orders[~tau.isnan()].tolist())):
        values = log_tau[(orders == order) & ~tau.isnan()]
        if values.numel() >= min_count:
            q = torch.quantile(values, torch.tensor([0.25, 0.75], dtype=torch.float64))
            out[int(order)] = float(q[1] - q[0])
    return out


def learns_before(tau, orders, first: int, second: int) -> float:
    """The chance that a token of order ``first`` has a smaller τ than a token of order ``second``,
    over all pairs (ties count half; NaN τ left out): 1 when the two orders' learning times come in
    that order without overlap, 1/2 when they are mixed as if at random."""
    tau, orders = _tau_and_orders(tau, orders)
    a, b = (tau[(orders == o) & ~tau.isnan()] for o in (first, second))
    if a.numel() == 0 or b.numel() == 0:
        raise ValueError(f"need fitted tokens of both orders {first} and {second}, got {a.numel()} and {b.numel()}")
    return float(((a[:, None] < b[None]).double() + 0.5 * (a[:, None] == b[None]).double()).mean())

"""Figures of lesson 15: token loss curves with their sigmoids, the learning-time spectrum by order,
and the mean loss rebuilt from the fitted sigmoids."""

from __future__ import annotations

import matplotlib.pyplot as plt
import torch
from matplotlib.figure import Figure

from ctxlab.plots.style import ORDER_COLORS, SEED_COLORS, label_levels, seed_style


def order_color(order: int) -> str:
    """Order 0 grey, order k >= 1 the k-th order colour (as the levels of every staircase figure)."""
    return "grey" if order == 0 else ORDER_COLORS[(order - 1) % len(ORDER_COLORS)]


def token_curves_figure(steps, curves, fitted, groups: list, titles: list[str], orders: list[int], levels: list) -> Figure:
    """One panel per kind of token: its curves (thin, one style per seed), the mean of their fitted
    sigmoids (black) and the loss each order-k statistic gives it (dashed, labelled).

    curves, fitted: [K, N, T]; groups: one boolean mask [N] per panel; orders: each group's order;
    levels: each group's order-k losses (k = 0..L).
    """
    steps = torch.as_tensor(steps)
    fig, axes = plt.subplots(1, len(groups), figsize=(3.4 * len(groups), 3.0), sharey=True)
    for ax, mask, title, order, lv in zip(axes, groups, titles, orders, levels):
        for k in range(curves.shape[0]):
            ls = seed_style(k)
            ax.plot(steps, curves[k, mask].T, color=order_color(order), alpha=0.08, lw=0.8, ls=ls)
            ax.plot(steps, fitted[k, mask].mean(0), color="k", lw=1.2, ls=ls, label=f"sigmoid fit, seed {k}")
        label_levels(ax, [float(v) for v in lv], names=[f"order {j}" for j in range(len(lv))])
        ax.set(xscale="log", xlabel="step", title=f"{title}\norder {order}")
    axes[0].set_ylabel("loss of each sequence (nats)")
    axes[0].legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    return fig


def learning_time_figure(tau, orders, r2, onsets, min_r2: float = 0.9) -> Figure:
    """Left: every fitted learning time, one row per seed, coloured by the token's order (hollow: fit
    R² below ``min_r2``), with that seed's rung onsets as vertical ticks. Right: the pooled
    histogram of log tau, stacked by order.

    tau, r2: [K, N] (NaN for unmoved curves); orders: [K, N]; onsets: [K, n_rungs] steps.
    """
    tau, orders, r2, onsets = (torch.as_tensor(a) for a in (tau, orders, r2, onsets))
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.2), gridspec_kw={"width_ratios": [1.4, 1]})
    jitter = torch.Generator().manual_seed(0)
    present = sorted(set(orders[~tau.isnan()].tolist()))
    for k in range(tau.shape[0]):
        y = k + 0.25 * (torch.rand(tau.shape[1], generator=jitter) - 0.5)
        for order in present:
            for good in (True, False):
                m = (orders[k] == order) & ~tau[k].isnan() & ((r2[k] >= min_r2) == good)
                if bool(m.any()):
                    c = order_color(order)
                    left.scatter(tau[k, m], y[m], s=9, facecolors=c if good else "none", edgecolors=c, lw=0.7,
                                 label=f"order {order}, R² {'≥' if good else '<'} {min_r2:g}" if k == 0 else None)
        for j, step in enumerate(onsets[k].tolist()):
            if step > 0:
                left.plot([step, step], [k - 0.4, k + 0.4], color=order_color(j + 1), lw=2.2, alpha=0.6,
                          label=f"rung {j + 1} onset" if k == 0 else None)
    left.set(xscale="log", xlabel="learning time τ (step)", ylabel="seed", yticks=range(tau.shape[0]),
             title="τ of every sequence, by its order")
    left.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    logs = tau.log10()
    valid = ~logs.isnan()
    bins = torch.linspace(float(logs[valid].min()) - 0.05, float(logs[valid].max()) + 0.05, 30)
    right.hist([logs[valid & (orders == o)].numpy() for o in present], bins=bins.numpy(), stacked=True,
               color=[order_color(o) for o in present], label=[f"order {o}" for o in present])
    right.set(xlabel="log10 τ", ylabel="sequences (all seeds)", title="learning-time spectrum")
    right.legend(fontsize=7)
    fig.tight_layout()
    return fig


def reconstruction_figure(steps, rec) -> Figure:
    """The mean loss and d loss / d log t of each seed (solid) against the weighted sum of the fitted
    sigmoids (dashed), with each seed's R² in the legend."""
    steps = torch.as_tensor(steps)
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.2))
    pairs = ((rec.mean, rec.fitted, rec.r2_curve, "mean loss (nats)"),
             (rec.slope, rec.fitted_slope, rec.r2_slope, "d loss / d log t"))
    for ax, (actual, fitted, r2, ylabel) in zip(axes, pairs):
        for k in range(actual.shape[0]):
            c = SEED_COLORS[k % len(SEED_COLORS)]
            ax.plot(steps, actual[k], color=c, lw=1.4, label=f"seed {k}: measured")
            ax.plot(steps, fitted[k], color=c, lw=1.2, ls="--", label=f"seed {k}: sum of sigmoids (R² {float(r2[k]):.2f})")
        ax.set(xscale="log", xlabel="step", ylabel=ylabel)
        ax.legend(fontsize=7)
    axes[0].set_title("the loss")
    axes[1].set_title("its derivative in log t")
    fig.tight_layout()
    return fig

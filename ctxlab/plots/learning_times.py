"""Figures of lesson 15: token loss curves with their sigmoids, the learning-time spectrum by order,
and the mean loss rebuilt from the fitted sigmoids."""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import torch
from matplotlib.figure import Figure

from ctxlab.plots.style import ORDER_COLORS, SEED_COLORS, seed_style


def order_color(order: int) -> str:
    """Order 0 grey, order k >= 1 the k-th order colour (as the levels of every staircase figure)."""
    return "grey" if order == 0 else ORDER_COLORS[(order - 1) % len(ORDER_COLORS)]


def order_levels(ax, levels, min_gap: float = 0.06) -> None:
    """Dashed order-k losses, labelled at the right edge; equal levels share one label ("orders 1, 3").

    Labels closer than ``min_gap`` (a fraction of the axis height) are pushed apart upwards, so that
    two nearby levels stay readable; each line stays at its value. Call it after the curves are drawn.
    """
    groups: list[list[int]] = []
    for k, value in sorted(enumerate(levels), key=lambda kv: kv[1]):
        if groups and abs(levels[groups[-1][0]] - value) < 0.004:
            groups[-1].append(k)
        else:
            groups.append([k])
    for ks in groups:
        ax.axhline(levels[ks[0]], ls="--", lw=0.9, color=order_color(ks[0]), zorder=0)
    low, high = ax.get_ylim()  # after the lines, which may widen it
    placed = -1.0
    for ks in groups:
        value, color = levels[ks[0]], order_color(ks[0])
        name = f"order {ks[0]}" if len(ks) == 1 else "orders " + ", ".join(map(str, ks))
        placed = max((value - low) / (high - low), placed + min_gap)
        ax.annotate(f"{name} = {value:.3f}", (1.0, placed), xycoords="axes fraction", xytext=(3, 0),
                    textcoords="offset points", ha="left", va="center", fontsize=7, color=color)


def token_curves_figure(steps, curves, fitted, groups: list, titles: list[str], orders: list[int], levels: list) -> Figure:
    """One panel per kind of token: its curves (thin, one style per seed), the mean of their fitted
    sigmoids (black) and the loss each order-k statistic gives it (dashed, labelled).

    curves, fitted: [K, N, T]; groups: one boolean mask [N] per panel; orders: each group's order;
    levels: each group's order-k losses (k = 0..L).
    """
    steps = torch.as_tensor(steps)
    cols = 2
    rows = (len(groups) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(10, 3.0 * rows), squeeze=False)
    for ax, mask, title, order, lv in zip(axes.flat, groups, titles, orders, levels):
        for k in range(curves.shape[0]):
            ls = seed_style(k)
            ax.plot(steps, curves[k, mask].T, color=order_color(order), alpha=0.08, lw=0.8, ls=ls)
            ax.plot(steps, fitted[k, mask].mean(0), color="k", lw=1.2, ls=ls, label=f"mean sigmoid fit, seed {k}")
        order_levels(ax, [float(v) for v in lv])
        ax.set(xscale="log", xlabel="step", ylabel="loss of each sequence (nats)", title=f"{title}: order {order}")
    for ax in axes.flat[len(groups):]:
        ax.set_visible(False)
    axes[0, 0].legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    return fig


def learning_time_figure(tau, orders, r2, onsets, min_r2: float = 0.9) -> Figure:
    """Left: every fitted learning time, one row per seed and, within it, one lane per order and fit
    quality (filled dots: fit R² at least ``min_r2``; crosses, in a lane of their own: below it),
    with that seed's rung onsets as vertical ticks. Right: the pooled histogram of log τ, stacked by
    order, with every seed's rung onsets as vertical lines, so a τ can be read against the rungs.

    tau, r2: [K, N] (NaN for unmoved curves); orders: [K, N]; onsets: [K, n_rungs] steps.
    """
    tau, orders, r2, onsets = (torch.as_tensor(a) for a in (tau, orders, r2, onsets))
    fig, (left, right) = plt.subplots(1, 2, figsize=(11.5, 3.4), gridspec_kw={"width_ratios": [1.4, 1]})
    jitter = torch.Generator().manual_seed(0)
    fitted = ~tau.isnan()
    lanes = sorted({(o, g) for o, g in zip(orders[fitted].tolist(), (r2[fitted] >= min_r2).tolist())},
                   key=lambda lane: (lane[0], not lane[1]))
    offset = {lane: (i - (len(lanes) - 1) / 2) * 0.7 / max(len(lanes), 1) for i, lane in enumerate(lanes)}
    for k in range(tau.shape[0]):
        noise = 0.08 * (torch.rand(tau.shape[1], generator=jitter) - 0.5)
        for order, good in lanes:
            m = (orders[k] == order) & fitted[k] & ((r2[k] >= min_r2) == good)
            if bool(m.any()):
                label = f"order {order}, R² {'≥' if good else '<'} {min_r2:g}" if k == 0 else None
                left.scatter(tau[k, m], (k + offset[order, good] + noise)[m], s=9 if good else 12, lw=0.8,
                             marker="o" if good else "x", color=order_color(order), label=label)
        for j, step in enumerate(onsets[k].tolist()):
            if step > 0:
                left.plot([step, step], [k - 0.42, k + 0.42], color=order_color(j + 1), lw=2.2, alpha=0.6,
                          label=f"rung {j + 1} onset" if k == 0 else None)
    left.set(xscale="log", xlabel="learning time τ (step)", ylabel="seed", yticks=range(tau.shape[0]),
             title="τ of every sequence, by its order")
    left.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    _spectrum(right, tau, orders, onsets)
    fig.tight_layout()
    return fig


def _spectrum(ax, tau, orders, onsets) -> None:
    """The pooled histogram of log10 τ, stacked by order, with every seed's rung onsets (dotted)."""
    logs = tau.log10()
    valid = ~logs.isnan()
    present = sorted(set(orders[valid].tolist()))
    bins = torch.linspace(float(logs[valid].min()) - 0.05, float(logs[valid].max()) + 0.05, 30)
    ax.hist([logs[valid & (orders == o)].numpy() for o in present], bins=bins.numpy(), stacked=True,
            color=[order_color(o) for o in present], label=[f"order {o}" for o in present])
    for j in range(onsets.shape[1]):
        for k, step in enumerate(onsets[:, j].tolist()):
            if step > 0:
                ax.axvline(math.log10(step), color=order_color(j + 1), ls=":", lw=1.3,
                           label=f"rung {j + 1} onsets" if k == 0 else None)
    ax.set(xlabel="log10 τ", ylabel="sequences (all seeds)", title="learning-time spectrum and rung onsets")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))  # outside: the onsets span the height


def reconstruction_figure(steps, rec) -> Figure:
    """The mean loss and its speed of descent, - d loss / d log t, of each seed (solid) against the
    weighted sum of the fitted sigmoids (dashed), with each seed's R² in the legend."""
    steps = torch.as_tensor(steps)
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.2))
    pairs = ((rec.mean, rec.fitted, rec.r2_curve, "mean loss (nats)"),
             (-rec.slope, -rec.fitted_slope, rec.r2_slope, "− d loss / d ln t (nats)"))
    for ax, (actual, fitted, r2, ylabel) in zip(axes, pairs):
        for k in range(actual.shape[0]):
            c = SEED_COLORS[k % len(SEED_COLORS)]
            ax.plot(steps, actual[k], color=c, lw=1.4, label=f"seed {k}: measured")
            ax.plot(steps, fitted[k], color=c, lw=1.2, ls="--", label=f"seed {k}: sum of sigmoids (R² {float(r2[k]):.2f})")
        ax.set(xscale="log", xlabel="step", ylabel=ylabel)
        ax.legend(fontsize=7)
    axes[0].set_title("the loss")
    axes[1].set_title("how fast it falls, per log-step")
    fig.tight_layout()
    return fig


def spectra_figure(panels: dict, last_steps: dict | None = None, bins: int = 36) -> Figure:
    """Learning-time spectra side by side on one log-step axis: per panel (title -> (tau, orders,
    names)), the share of each order's tokens per bin of τ (one colour per order) and, above them,
    each order's interquartile range of τ as a bar with its median as a dot.

    tau: [..., N] (NaN τ left out); orders: its shape, or [N] for every seed; names: order -> its legend name; last_steps: title ->
    the run's last step, drawn dotted (a τ beyond it is an extrapolation of the fit).
    """
    fig, axes = plt.subplots(1, len(panels), figsize=(5.0 * len(panels), 3.4), sharex=True, squeeze=False)
    every = torch.cat([torch.as_tensor(tau, dtype=torch.float64).flatten() for tau, _, _ in panels.values()])
    every = every[~every.isnan()]
    edges = torch.logspace(float(every.min().log10()) - 0.05, float(every.max().log10()) + 0.05, bins + 1, dtype=torch.float64)
    for ax, (title, (tau, orders, names)) in zip(axes[0], panels.items()):
        tau = torch.as_tensor(tau, dtype=torch.float64)
        keep = ~tau.isnan()
        tau, orders = tau[keep], torch.as_tensor(orders).expand_as(keep)[keep]  # one order per token serves every seed
        top = 0.0
        for order, name in names.items():
            values = tau[orders == order]
            if values.numel() == 0:
                continue
            share = torch.histogram(values, edges).hist / values.numel()
            ax.stairs(share.numpy(), edges.numpy(), color=order_color(order), lw=1.6, label=f"{name} ({values.numel()} curves)")
            top = max(top, float(share.max()))
        for i, (order, name) in enumerate(names.items()):
            values = tau[orders == order]
            if values.numel() == 0:
                continue
            q1, median, q3 = torch.quantile(values, torch.tensor([0.25, 0.5, 0.75], dtype=torch.float64)).tolist()
            y = top * (1.12 + 0.09 * i)
            ax.plot([q1, q3], [y, y], color=order_color(order), lw=3, solid_capstyle="butt")
            ax.plot(median, y, "o", color="white", mec=order_color(order), ms=5)
        if last_steps and title in last_steps:
            ax.axvline(last_steps[title], color="grey", ls=":", lw=1, label=f"last step ({last_steps[title]})")
        ax.set(xscale="log", xlabel="learning time τ (step, log)", ylabel="share of the order's tokens", title=title,
               ylim=(0, top * (1.25 + 0.09 * len(names))))
        ax.legend(fontsize=7, loc="best")
    fig.text(0.5, 0.005, "bars: interquartile range of τ per order, dot: median", ha="center", fontsize=7, color="grey")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    return fig

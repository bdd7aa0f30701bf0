"""Lesson 14: a learned input table against fixed binary codes, rung by rung and order by order, and in
the small GPT on text."""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import torch
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FormatStrFormatter, LogLocator, NullFormatter

from ctxlab.plots.style import ORDER_COLORS, SEED_COLORS, label_levels, label_measured_rests, seed_style

LABEL_COLORS = (SEED_COLORS[1], "#c51b7d", "#6a3d9a")  # id codes' blue first, then colours no level line or condition uses
CONDITION_COLORS = {"learned": SEED_COLORS[0], "id codes": SEED_COLORS[1], "shuffled codes": SEED_COLORS[2],
                    "fixed codes": SEED_COLORS[1],  # the GPT's codes are codes of the ids
                    # the controls, alike in both models: magenta, a table started at the ±1 codes that trains;
                    # purple, fixed codes at the learned table's init size
                    "shuffled codes, trainable": LABEL_COLORS[1], "learned, from codes": LABEL_COLORS[1],
                    "shuffled codes × d^(−γ)": LABEL_COLORS[2], "fixed codes × d^(−γ)": LABEL_COLORS[2]}


def _groups(names) -> dict[str, list[int]]:
    return {name: [k for k, n in enumerate(names) if n == name] for name in dict.fromkeys(names)}


def fixed_codes_curves(result) -> Figure:
    """One panel per condition: every seed's loss curve (log step axis) against the labelled levels,
    and any level its seeds rest on that is none of them, dotted as measured."""
    groups = _groups(result.names)
    fig, axes = plt.subplots(1, len(groups), figsize=(4.6 * len(groups), 3.4), sharey=True)
    steps = result.trajectory.steps.numpy()
    for ax, (name, models) in zip(axes, groups.items()):
        for j, k in enumerate(models):
            ax.plot(steps[1:], result.trajectory.loss[k, 1:].numpy(), ls=seed_style(j), lw=1.2,
                    color=CONDITION_COLORS.get(name, "black"), label=f"seed {result.trajectory.seeds[k]}")
        label_levels(ax, result.levels)
        label_measured_rests(ax, result.trajectory.steps, result.trajectory.loss[models], result.levels, log=True)
        ax.set_xscale("log")
        ax.set_title(name, fontsize=10)
        ax.set_xlabel("gradient-descent step (log)")
        ax.legend(loc="lower left", fontsize=7)
    axes[0].set_ylabel("loss (nats)")
    fig.tight_layout()
    return fig


def first_layer_shares(result) -> Figure:
    """One panel per condition: the share of ||R - R0||² (first-layer token representation) in the
    directions each order adds, every seed, with each order's chance level dotted."""
    groups = _groups(result.names)
    fig, axes = plt.subplots(1, len(groups), figsize=(4.6 * len(groups), 3.2), sharey=True)
    steps = result.trajectory.steps.numpy()
    for ax, (name, models) in zip(axes, groups.items()):
        for order in range(result.shares.shape[-1]):
            color = ORDER_COLORS[order % len(ORDER_COLORS)]  # the colour of the level H_{order+1} in the loss figure
            for j, k in enumerate(models):
                ax.plot(steps[1:], result.shares[k, 1:, order].numpy(), ls=seed_style(j), lw=1.1, color=color,
                        label=f"order {order + 1}" if j == 0 else None)
            ax.axhline(result.chance[order], color=color, ls=":", lw=0.9,
                       label=f"chance ({result.chance[order]:.3f})" if order == result.shares.shape[-1] - 1 else None)
        ax.set_xscale("log")
        ax.set_ylim(-0.02, 1.02)
        ax.set_title(f"{name}: share of ‖R − R₀‖² per order", fontsize=10)
        ax.set_xlabel("gradient-descent step (log)")
    axes[0].set_ylabel("share of ‖R − R₀‖²")
    axes[-1].legend(loc="upper right", fontsize=7)  # in the lesson, the panel whose top stays empty
    fig.tight_layout()
    return fig


def r2_band_figure(names, scores, bands, order: int = 1) -> Figure:
    """R² of R - R0 in span(ΔS^order) per model (dots), next to its 95 % permutation level (bars)."""
    groups = _groups(names)
    fig, ax = plt.subplots(figsize=(5.4, 3.2))
    for i, (name, models) in enumerate(groups.items()):
        color = CONDITION_COLORS.get(name, "black")
        for j, k in enumerate(models):
            x = i + 0.12 * (j - (len(models) - 1) / 2)
            ax.plot([x - 0.05, x + 0.05], [float(bands[k])] * 2, color="grey", lw=2.5,
                    label="95 % of shuffled signatures" if i == j == 0 else None)
            ax.plot(x, float(scores[k]), "o", color=color, ms=6)
    ax.set_xticks(range(len(groups)), list(groups))
    ax.set_ylabel(f"R² of R − R₀ in span(ΔS{order})".replace("S1", "S¹").replace("S2", "S²").replace("S3", "S³"))
    ax.set_ylim(0, max(1e-3, float(scores.max()), float(bands.max())) * 1.15)
    ax.legend(loc="upper right", fontsize=7)
    fig.tight_layout()
    return fig


def _draw_by_label(ax, x, curves: dict, levels, color) -> None:
    """Loss curves grouped by label (``color(i, label)``, one line style per seed), labelled levels and any
    other level a label's curves rest on (dotted, measured), log steps."""
    for i, (label, group) in enumerate(curves.items()):
        for j, curve in enumerate(group):
            ax.plot(x[1:], curve[1:].numpy(), ls=seed_style(j), lw=1.2, color=color(i, label),
                    label=label if j == 0 else None)
    label_measured_rests(ax, x, torch.cat([torch.as_tensor(g).double() for g in curves.values()]), levels, log=True)
    label_levels(ax, levels)
    ax.set_xscale("log")
    ax.set_xlabel("gradient-descent step (log)")
    ax.legend(loc="lower left", fontsize=7)


def curves_by_label(steps, curves: dict, levels, title: str = "") -> Figure:
    """Loss curves grouped by label (one colour per label, one line style per seed: ``curves[label]``
    is [seeds, T] over ``steps``), against the labelled levels, on a log step axis."""
    fig, ax = plt.subplots(figsize=(6.4, 3.4))
    x = steps.numpy() if hasattr(steps, "numpy") else steps
    _draw_by_label(ax, x, curves, levels, lambda i, label: LABEL_COLORS[i % len(LABEL_COLORS)])
    ax.set_ylabel("loss (nats)")
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig


def curves_by_panel(steps, panels: dict, levels) -> Figure:
    """One panel per title, ``panels[title]`` as :func:`curves_by_label`'s ``curves``, on one loss axis.

    Each condition keeps its colour of :data:`CONDITION_COLORS` in every panel, so a control can sit
    beside the run it controls (lesson 14: fixed against trainable codes, one input size a panel).
    """
    fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 3.4), sharey=True, squeeze=False)
    x = steps.numpy() if hasattr(steps, "numpy") else steps
    for ax, (title, curves) in zip(axes[0], panels.items()):
        _draw_by_label(ax, x, curves, levels, lambda i, label: CONDITION_COLORS.get(label, "black"))
        ax.set_title(title, fontsize=10)
    axes[0, 0].set_ylabel("loss (nats)")
    fig.tight_layout()
    return fig


def gpt_codes_figure(result) -> Figure:
    """The small GPT on text, learned table against fixed codes and their controls (colour), seeds by line style, log
    step axis: held-out loss against ln V and the n-gram entropies, then KL(GPT ‖ n-gram) for each
    n-gram model (log scale), each curve's minimum marked."""
    groups = _groups(result.names)
    traj = result.trajectory
    steps = traj.steps.numpy()[1:]  # step 0 has no place on a log axis
    fig, axes = plt.subplots(2, 2, figsize=(10, 6.4))
    panels = [("held-out loss (nats)", traj.loss, "held-out loss")]
    panels += [(f"KL(GPT ‖ {name}) (nats)", traj.extras[f"kl_{name}"], f"distance to the {name} model")
               for name in result.entropies]
    for ax, (ylabel, curves, title) in zip(axes.flat, panels):
        for name, models in groups.items():
            for j, k in enumerate(models):
                curve = curves[k, 1:].numpy()
                ax.plot(steps, curve, ls=seed_style(j), lw=1.2, color=CONDITION_COLORS.get(name, "black"),
                        label=name if j == 0 else None)
                if curves is not traj.loss:
                    ax.plot(steps[curve.argmin()], curve.min(), "o", ms=4, color=CONDITION_COLORS.get(name, "black"))
        ax.set(xscale="log", xlabel="Adam step (log)", ylabel=ylabel, title=title)
        if curves is not traj.loss:
            ax.set_yscale("log")
            ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))  # 0.1, 0.2, 0.5, 1, 2, 5, ...
            ax.yaxis.set_major_formatter(FormatStrFormatter("%g"))
            ax.yaxis.set_minor_formatter(NullFormatter())
    names, levels = ["ln V", *result.entropies], [math.log(result.config["vocab"]), *result.entropies.values()]
    label_levels(axes[0, 0], levels, names)
    label_measured_rests(axes[0, 0], traj.steps, traj.loss, levels, log=True)
    seeds = [traj.seeds[k] for k in next(iter(groups.values()))]  # one entry per line style, not per curve
    styles = [Line2D([], [], color="grey", ls=seed_style(j), lw=1.2, label=f"seed {s}") for j, s in enumerate(seeds)]
    axes[0, 0].legend(handles=axes[0, 0].get_legend_handles_labels()[0] + styles, loc="lower left", fontsize=7)
    fig.tight_layout()
    return fig

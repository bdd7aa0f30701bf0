"""Figures of the small-init theory held against measurement: E1's agreement (lesson 04), the modes' growth (lesson 05)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import torch
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from ctxlab.plots.style import SEED_COLORS, label_levels, label_sub_levels


def e1_agreement_figure(result, offset: float = 0.3) -> Figure:
    """1 − cosine(E1, autograd) against γ, one line per width (mean ± sd over seeds, log scale), with
    the predicted slope −2 log₁₀(L d²) drawn (dotted) over each width's fitted points.

    A line through the data would hide under it exactly where the prediction is right, so each
    predicted line is drawn ``offset`` times the fitted data (below it, by the same factor at every
    γ) and labelled with its slope at its lower end.
    """
    fig, ax = plt.subplots(figsize=(6.2, 4.0))
    g = torch.tensor(result.gammas, dtype=torch.float64)
    fit = g >= result.fit_from
    gap = result.gap()
    for j, d in enumerate(result.widths):
        ax.errorbar(result.gammas, gap[j].mean(-1), yerr=gap[j].std(-1), marker="o", capsize=3, color=f"C{j}",
                    label=f"d = {d}")
        log_gap = gap[j].mean(-1).log10()
        centre_g, centre = g[fit].mean(), log_gap[fit].mean()
        line = 10 ** (centre + result.predicted_slope[j] * (g[fit] - centre_g)) * offset
        ax.plot(g[fit], line, color=f"C{j}", ls=":", lw=1.6)
        slope = f"{float(result.predicted_slope[j]):.1f}".replace("-", "−")
        ax.annotate(slope, (float(g[fit][-1]), float(line[-1])), xytext=(4, -2), textcoords="offset points",
                    fontsize=8, color=f"C{j}", va="top")
    ax.plot([], [], color="grey", ls=":", lw=1.6,
            label=f"predicted slope −2 log₁₀(L d²) per unit γ\n(drawn ×{offset:g} below the data)")
    ax.set_yscale("log")
    ax.set_xlim(None, float(g[-1]) + 0.15)
    ax.set_xlabel("init exponent γ")
    ax.set_ylabel(f"1 − cosine(E1, autograd)  (mean ± sd, {len(result.seeds)} seeds)")
    ax.set_title("E1 becomes exact as init shrinks and width grows", fontsize=10)
    ax.legend(fontsize=8, loc="lower left")
    return fig


def mode_growth_figure(result, gamma: float, levels=None, names=None) -> Figure:
    """The loss and the mode strengths ``|a_k(t)|`` (log scale) of the γ = ``gamma`` run, each mode's
    fitted exponential drawn in grey over the stretch it was fitted on.

    ``levels`` (with their ``names``) are drawn on the loss and labelled, so that each rest of the
    curve can be read against the level it rests on.
    """
    if gamma not in result.gammas:
        raise ValueError(f"gamma: choose one of the run's gammas {result.gammas}, got {gamma}")
    k = result.gammas.index(gamma)
    steps = result.steps
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    axes[0].plot(steps, result.loss[k], color="black")
    axes[0].set_xlabel("GD step")
    axes[0].set_ylabel("loss (nats)")
    axes[0].set_title(f"LinearEmb, γ = {gamma:g}", fontsize=10)
    if levels is not None:
        label_levels(axes[0], levels, names)
    for m, s in enumerate(result.singular_values):
        axes[1].semilogy(steps, result.strengths[k, :, m].abs(), color=f"C{m}", label=f"mode {m + 1} (s = {float(s):.3f})")
        lo, hi = result.windows[k, m].tolist()
        if lo >= 0:
            t = torch.arange(lo, hi + 1, dtype=torch.float64)
            at_lo = result.strengths[k, int((steps == lo).nonzero()[0, 0]), m]
            axes[1].semilogy(t, at_lo * torch.exp(result.measured_rate[k, m] * (t - lo)), color="black", lw=2.5, alpha=0.4)
    axes[1].set_xlabel("GD step")
    axes[1].set_ylabel("|a_k(t)|")
    axes[1].set_title("mode strengths; grey: fitted exponentials", fontsize=10)
    axes[1].legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    return fig


def sub_level_growth_figure(growth, levels) -> Figure:
    """Lesson 17's miss, two panels over the steps around the sub-level, seeds as colours. Left: the loss with
    the order's two levels (dashed, named) and the whether sub-level (dotted, named). Right: the *which*
    mode's size on a log axis (solid), the rest on the sub-level shaded, and dashed from the middle of each rest
    the growth at the rate the drive gives there, held to the rest's end (what a constant-rate forecast assumes).

    ``growth``: a :class:`ctxlab.experiments.sub_level_growth.SubLevelGrowth`; ``levels``: (name, loss) of the
    level the stair leaves and the level it leads to."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(11.8, 4.0))
    rested = [r for r in growth.rests if r is not None]
    first = min(r[0] for r in rested) - 300 if rested else 0
    last = max(r[1] for r in rested) + 250 if rested else int(growth.steps[-1])
    steps = growth.steps.numpy()
    for k, seed in enumerate(growth.seeds):
        color = SEED_COLORS[k % len(SEED_COLORS)]
        label = f"seed {seed}" + (f", γ = {growth.gammas[k]:g}" if len(set(growth.gammas)) > 1 else "")
        left.plot(steps, growth.loss[k].numpy(), color=color, lw=1.3, label=label)
        right.semilogy(steps, growth.size[k].abs().numpy(), color=color, lw=1.4, label=f"{label}, trained")
        right.semilogy(steps, growth.held_rate(k).abs().numpy(), color=color, lw=1.2, ls="--",
                       label=f"{label}, at the rate read mid-rest, held")
        if growth.rests[k] is not None:
            right.axvspan(*growth.rests[k], color=color, alpha=0.07, lw=0)
    (upper_name, upper), (lower_name, lower) = levels
    for name, level in ((upper_name, upper), (lower_name, lower)):
        left.axhline(level, ls="--", lw=0.9, color="grey", zorder=0)
        left.annotate(f"{name} = {level:.3f}", (1.0, level), xycoords=("axes fraction", "data"), xytext=(3, 0),
                      textcoords="offset points", va="center", fontsize=7)
    label_sub_levels(left, [(growth.name, growth.level)])
    left.set_xlim(first, last)
    left.set_ylim(lower - 0.02, upper + 0.02)
    left.set_xlabel("gradient-descent step")
    left.set_ylabel("loss (nats)")
    left.set_title("the loss rests on the whether sub-level", fontsize=10)
    left.legend(loc="lower left", fontsize=7)
    right.set_xlim(first, last)
    right.set_xlabel("gradient-descent step")
    right.set_ylabel("size of the which mode |aᵀ E W₁ b|\n(a: its tokens, b: its hidden direction)")
    right.set_title("which grows faster than the rate read mid-rest, held", fontsize=10)
    handles, labels = right.get_legend_handles_labels()
    handles.append(Patch(color="grey", alpha=0.2, lw=0))
    labels.append("the rest on the sub-level (one band per seed)")
    right.legend(handles, labels, loc="upper left", fontsize=7)
    fig.tight_layout()
    return fig

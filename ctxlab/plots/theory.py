"""Figures of the small-init theory held against measurement: E1's agreement (lesson 04), the modes' growth (lesson 05)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import torch
from matplotlib.figure import Figure

from ctxlab.plots.style import label_levels


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

"""Figures of a pretrained model's embedding against text signatures (lesson 10)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure


def frequency_alignment_figure(result) -> Figure:
    """Per frequency bin, from a :class:`~ctxlab.pretrained.FrequencyAlignment`: CKA(E, S) beside its
    shuffled baseline (± 2 spreads of the shuffles) and the signature's split-half CKA (left); the
    excess of CKA over the shuffled mean against the ± 2-spread band chance allows (middle), the
    number to read, since the baseline differs from bin to bin; and RSA (right)."""
    by_bin = result.by_bin
    labels = [f"{b.ranks[0]}–{b.ranks[1]}" for b in by_bin]
    x = np.arange(len(by_bin))
    spread = np.array([2 * b.shuffled_spread for b in by_bin])
    fig, (ax_cka, ax_excess, ax_rsa) = plt.subplots(1, 3, figsize=(14, 3.6))
    ax_cka.bar(x - 0.2, [b.cka for b in by_bin], 0.4, label="CKA(E, S)")
    ax_cka.bar(x + 0.2, [b.shuffled_cka for b in by_bin], 0.4, color="lightgray", yerr=spread, capsize=3,
               label="shuffled S (± 2 spreads)")
    ax_cka.plot(x, result.reliability, "k^-", label="split-half CKA of S")
    ax_cka.set(xticks=x, xticklabels=labels, xlabel="frequency rank", title="CKA by frequency bin", ylim=(0, 1))
    ax_cka.legend(fontsize=8)
    ax_excess.bar(x, 2 * spread, 0.7, bottom=-spread, color="lightgray", label="± 2 spreads of the shuffles")
    ax_excess.bar(x, [b.excess for b in by_bin], 0.5, color="#1f77b4", alpha=0.85, label="CKA − shuffled mean")
    ax_excess.axhline(0, color="k", lw=0.6)
    ax_excess.set(xticks=x, xticklabels=labels, xlabel="frequency rank", title="CKA excess over the shuffles")
    ax_excess.legend(fontsize=8)
    ax_rsa.bar(x, [b.rsa for b in by_bin], 0.5, color="#7570b3")
    ax_rsa.set(xticks=x, xticklabels=labels, xlabel="frequency rank", title="RSA (Spearman) by frequency bin")
    fig.tight_layout()
    return fig


def probe_figure(result) -> Figure:
    """``ctxlab probe``'s picture, one panel per signature order. One checkpoint: per frequency bin,
    CKA beside the shuffled mean with ± 2 spreads. A series: the excess over shuffles against the
    training step, one line per bin, over the band the shuffles' spread allows (± 2 spreads)."""
    checkpoints = result.checkpoints
    orders = list(checkpoints[0].orders)
    fig, axes = plt.subplots(1, len(orders), figsize=(5 * len(orders), 3.6), squeeze=False)
    for ax, order in zip(axes[0], orders):
        by_bin = checkpoints[0].orders[order]
        labels = [f"{b.ranks[0]}–{b.ranks[1]}" for b in by_bin]
        if len(checkpoints) == 1:
            x = np.arange(len(by_bin))
            ax.bar(x - 0.2, [b.cka for b in by_bin], 0.4, label="CKA(E, S)")
            ax.bar(x + 0.2, [b.shuffled_cka for b in by_bin], 0.4, color="lightgray",
                   yerr=[2 * b.shuffled_spread for b in by_bin], capsize=3, label="shuffled S (± 2 spreads)")
            ax.set(xticks=x, xticklabels=labels, xlabel="frequency rank", ylim=(0, 1), ylabel="CKA")
        else:
            have_steps = all(c.step is not None for c in checkpoints)
            x = [c.step for c in checkpoints] if have_steps else list(range(len(checkpoints)))
            for j, label in enumerate(labels):
                excess = [c.orders[order][j].excess for c in checkpoints]
                band = [2 * c.orders[order][j].shuffled_spread for c in checkpoints]
                line, = ax.plot(x, excess, "o-", label=f"ranks {label}")
                ax.fill_between(x, [-b for b in band], band, color=line.get_color(), alpha=0.12, lw=0)
            ax.axhline(0, color="k", lw=0.6)
            ax.set(xlabel="training step" if have_steps else "checkpoint", ylabel="CKA − shuffled mean")
        ax.set_title(f"order {order}: " + ("[P(next | s), P(prev | s)]" if order == 1 else "ΔS²(s; previous, next)"))
        ax.legend(fontsize=7)
    fig.suptitle(f"{result.text}: the top {result.top} tokens' signatures vs the input embedding", fontsize=10)
    fig.tight_layout()
    return fig

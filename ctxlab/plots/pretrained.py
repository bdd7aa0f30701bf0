"""Figures of a pretrained model's embedding against text signatures (lesson 10)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure


def frequency_alignment_figure(result) -> Figure:
    """Per frequency bin: CKA(E, S) beside its shuffled baseline and the signature's split-half CKA
    (left), and RSA (right), from a :class:`~ctxlab.pretrained.FrequencyAlignment`."""
    by_bin = result.by_bin
    labels = [f"{b.ranks[0]}–{b.ranks[1]}" for b in by_bin]
    x = np.arange(len(by_bin))
    fig, (ax_cka, ax_rsa) = plt.subplots(1, 2, figsize=(10, 3.6))
    ax_cka.bar(x - 0.2, [b.cka for b in by_bin], 0.4, label="CKA(E, S)")
    ax_cka.bar(x + 0.2, [b.shuffled_cka for b in by_bin], 0.4, color="lightgray", label="shuffled S")
    ax_cka.plot(x, result.reliability, "k^-", label="split-half CKA of S")
    ax_cka.set(xticks=x, xticklabels=labels, xlabel="frequency rank", title="CKA by frequency bin", ylim=(0, 1))
    ax_cka.legend(fontsize=8)
    ax_rsa.bar(x, [b.rsa for b in by_bin], 0.5, color="#7570b3")
    ax_rsa.set(xticks=x, xticklabels=labels, xlabel="frequency rank", title="RSA (Spearman) by frequency bin")
    fig.tight_layout()
    return fig

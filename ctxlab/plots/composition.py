"""Figures of the anchor-composition task (lesson 12): what each model answers over training."""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from ctxlab.plots.style import gamma_colors, label_measured_rests


def composition_figure(run, n_keys: int, majority: float | None = None) -> Figure:
    """Training accuracy, then the held-out pair's composed answers, then its copied (reverse-pair)
    answers, every model a line coloured by γ, one panel each so that the low copied curves are not
    hidden under the composed ones.

    run: a :class:`ctxlab.composition.CompositionRun` (``steps`` [T]; ``train_acc``, ``composed``,
    ``symmetric`` [K, T]; ``gammas``). The dotted line on the held-out panels is one key in
    ``n_keys``: the share a single lucky key gives, about what an untrained model scores; on the training
    panel, ``majority`` (``ctxlab.composition.majority_share``): the accuracy of always answering the
    most common label, and any other level the training accuracy rests on (dotted, measured: the
    loss curves' rule, ``ctxlab.rungs.shelves``; the held-out panels count whole keys, steps of
    1/n_keys, where that rule would flag every count).
    """
    colors = gamma_colors(run.gammas)
    fig, axes = plt.subplots(1, 3, figsize=(13.5, 3.5), sharey=True)
    x = run.steps.numpy()
    panels = (("training pairs", run.train_acc), ("held-out pair: composed answer (x − 10)", run.composed),
              ("held-out pair: copied reverse-pair answer (x − 6)", run.symmetric))
    for ax, (title, values) in zip(axes, panels):
        for k, g in enumerate(run.gammas):
            label = f"γ = {g:g}" if k == list(run.gammas).index(g) else None
            ax.plot(x, values[k].numpy(), color=colors[g], lw=1.2, alpha=0.8, label=label)
        ax.set(title=title, xlabel="step", ylim=(-0.03, 1.03))
    for ax in axes[1:]:
        ax.axhline(1 / n_keys, color="black", ls=":", lw=1, label=f"one key in {n_keys} ({1 / n_keys:g})")
    if majority is not None:
        axes[0].axhline(majority, color="grey", ls=":", lw=1, label=f"most common label ({majority:.3f})")
    label_measured_rests(axes[0], run.steps, run.train_acc, [] if majority is None else [majority])
    axes[0].set_ylabel("accuracy (share of sequences or keys)")
    axes[0].legend(fontsize=7, loc="center right", bbox_to_anchor=(1, 0.5))  # right of the curves, above the dotted lines
    axes[1].legend(handles=axes[1].get_legend_handles_labels()[0][-1:], fontsize=8, loc="upper left")
    fig.tight_layout()
    return fig

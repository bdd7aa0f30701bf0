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
    1/n_keys, where that rule would flag every count). Instead the composed panel draws the count a γ's
    seeds all end on, and the copied panel the most keys any model ends on.
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
    _label_shared_ends(axes[1], run.gammas, run.composed, n_keys, colors)
    _label_highest_end(axes[2], run.symmetric, n_keys)
    if majority is not None:
        axes[0].axhline(majority, color="grey", ls=":", lw=1, label=f"most common label ({majority:.3f})")
    label_measured_rests(axes[0], run.steps, run.train_acc, [] if majority is None else [majority])
    axes[0].set_ylabel("accuracy (share of sequences or keys)")
    axes[0].legend(fontsize=7, loc="center right", bbox_to_anchor=(1, 0.5))  # right of the curves, above the dotted lines
    axes[1].legend(handles=axes[1].get_legend_handles_labels()[0][-1:], fontsize=8, loc="upper left")
    fig.tight_layout()
    return fig


def _keys(share: float, n_keys: int) -> str:
    count = round(share * n_keys)
    return f"{count} key{'s' if count != 1 else ''} ({share:.2f})"


def _label_shared_ends(ax, gammas, shares, n_keys: int, colors) -> None:
    """A γ whose seeds (two or more) all end on one count of keys, other than the single lucky key, has
    that count dotted in its colour and named, so that the level its curves sit on is drawn."""
    for g in dict.fromkeys(gammas):
        ends = [round(float(shares[k, -1]) * n_keys) for k, gk in enumerate(gammas) if gk == g]
        if len(ends) > 1 and len(set(ends)) == 1 and ends[0] != 1:
            share = ends[0] / n_keys
            ax.axhline(share, color=colors[g], ls=":", lw=1, zorder=0)
            ax.annotate(f"γ = {g:g} ends on {_keys(share, n_keys)}", (1.0, share), xycoords=("axes fraction", "data"),
                        xytext=(-3, -4), textcoords="offset points", ha="right", va="top", fontsize=7, color=colors[g])


def _label_highest_end(ax, shares, n_keys: int) -> None:
    """The most keys any model ends on, dotted and named: the bound the lesson reads off this panel."""
    share = round(float(shares[:, -1].max()) * n_keys) / n_keys
    ax.axhline(share, color="grey", ls=":", lw=1, zorder=0)
    ax.annotate(f"most at the end: {_keys(share, n_keys)}", (1.0, share), xycoords=("axes fraction", "data"),
                xytext=(-3, 4), textcoords="offset points", ha="right", va="bottom", fontsize=7, color="grey")

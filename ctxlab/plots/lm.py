"""Figures of the small GPT on real text (lesson 09, ``ctxlab lm``)."""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from ctxlab.plots.style import label_levels, label_measured_rests, seed_style


NGRAM_COLORS = {"unigram": "#1b9e77", "bigram": "#d95f02", "trigram": "#7570b3"}
MODEL_COLORS = ("#222222", "#1f78b4", "#8c510a", "#c51b7d")  # no n-gram level's colour: a curve is never read as one
# what each recorded alignment is measured against: the trigram entry is the increment of the
# previous character, not a second signature of the same kind (lesson 09)
_SIGNATURE_NAMES = {"bigram": "bigram signature", "trigram": "trigram increment"}


def _model_label(gamma: float, seed: int) -> str:
    return f"γ={gamma:g}, seed {seed}"


def lm_panels(result, axes, title: str | None = None) -> None:
    """Draw one GPT run into a row of axes: held-out loss against ln V and the n-gram entropies
    (labelled at the right edge) and any other level a model rests on (dotted grey, measured), KL to
    each n-gram (minima marked), and, when ``axes`` has a third panel, CKA(ΔE, text signature) with its shuffled band (the range of CKA against
    row-shuffled signatures, lesson 02). Models are told apart by colour (loss) and line style.
    """
    import math

    from matplotlib.lines import Line2D

    traj = result.trajectory
    steps = traj.steps.numpy()
    ax_loss, ax_kl = axes[0], axes[1]
    models = list(zip(traj.gammas, traj.seeds))
    for k, (g, s) in enumerate(models):
        style = {"ls": seed_style(k), "lw": 1.2, "alpha": 0.9}
        ax_loss.plot(steps, traj.loss[k].numpy(), color=MODEL_COLORS[k % len(MODEL_COLORS)], label=_model_label(g, s), **style)
        for name, color in NGRAM_COLORS.items():
            kl = traj.extras[f"kl_{name}"][k]
            ax_kl.plot(steps, kl.numpy(), color=color, **style)
            i = int(kl.nan_to_num(nan=float("inf")).argmin())
            ax_kl.plot(steps[i], float(kl[i]), "o", color=color, ms=4)
    levels = [math.log(result.config["vocab"]), *result.entropies.values()]
    label_levels(ax_loss, levels, names=["ln V", *result.entropies])
    label_measured_rests(ax_loss, traj.steps, traj.loss, levels)
    prefix = f"{title}: " if title else ""
    ax_loss.set(title=f"{prefix}held-out loss", xlabel="step", ylabel="nats")
    ax_kl.set(title=f"{prefix}KL(model ‖ n-gram), minima marked", xlabel="step", yscale="log")
    ax_loss.legend(fontsize=7, loc="upper right", bbox_to_anchor=(1, 0.93))  # below the ln V line
    styles = [Line2D([], [], color="grey", ls=seed_style(k), label=_model_label(g, s)) for k, (g, s) in enumerate(models)]
    colours = [Line2D([], [], color=c, label=n) for n, c in NGRAM_COLORS.items()]
    low, high = ax_kl.get_ylim()
    ax_kl.set_ylim(low, high * 6)  # headroom: the legend sits above the curves
    ax_kl.legend(handles=colours + styles, fontsize=7, ncol=2, loc="upper right")
    if len(axes) < 3:
        return
    ax_align = axes[2]
    band = result.alignment_band
    handles, top = [], 0.0
    for name, hatch in zip(result.alignment, ("////", "\\\\\\\\", "||||")):
        color, curves = NGRAM_COLORS[name], result.alignment[name]
        for k in range(len(models)):
            ax_align.plot(steps, curves[k].numpy(), color=color, ls=seed_style(k), lw=1.2)
        top = max(top, float(curves.nan_to_num(nan=0.0).max()))
        handles.append(Line2D([], [], color=color, label=_SIGNATURE_NAMES.get(name, name)))
        if band is not None:  # the band of every model together, hatched: two bands that overlap stay apart
            low, high = band[name][0].amin(0).numpy(), band[name][1].amax(0).numpy()
            ax_align.fill_between(steps, low, high, facecolor="none", edgecolor=color, hatch=hatch, lw=0, alpha=0.55)
            for edge in (low, high):
                ax_align.plot(steps, edge, color=color, lw=0.6, alpha=0.8)
            top = max(top, float(high.max()))
            handles.append(plt.Rectangle((0, 0), 1, 1, facecolor="none", edgecolor=color, hatch=hatch, lw=0.6,
                                         label="its shuffled band"))
    ax_align.legend(handles=handles, fontsize=7, loc="upper left", ncol=2 if band is not None else 1)
    # up to the highest curve or band edge, with room for the legend: the margins read here are small
    ax_align.set(title=f"{prefix}CKA(E − E₀, text signature)", xlabel="step", ylim=(0, min(1.0, 1.4 * top + 0.02)))


def lm_figure(result) -> Figure:
    """One GPT run (:class:`ctxlab.experiments.LMResult`) in three panels (:func:`lm_panels`); two
    for a recording that kept no shuffled band: its CKA could not be read against one."""
    alignment = result.alignment_band is not None
    fig, axes = plt.subplots(1, 3 if alignment else 2, figsize=(15 if alignment else 10.5, 4))
    lm_panels(result, axes)
    fig.tight_layout()
    return fig


def lm_regimes_figure(results: dict) -> Figure:
    """Several GPT runs (name -> LMResult), one row each, every column on one y scale."""
    fig, axes = plt.subplots(len(results), 3, figsize=(15, 3.6 * len(results)), squeeze=False, sharex="col")
    for row, (name, result) in zip(axes, results.items()):
        lm_panels(result, row, title=name)
    for column in axes.T:
        low = min(ax.get_ylim()[0] for ax in column)
        high = max(ax.get_ylim()[1] for ax in column)
        for ax in column:
            ax.set_ylim(low, high)
    fig.tight_layout()
    return fig

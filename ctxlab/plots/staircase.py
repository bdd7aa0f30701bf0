"""Figures of the staircase: loss against its predicted levels, the alignment panels, the phase map."""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from ctxlab.plots.style import (
    ATTRIBUTE_MARKERS,
    ORDER_COLORS,
    SEED_COLORS,
    label_levels,
    label_sub_levels,
    seed_style,
)


def staircase_figure(result, gammas=None, prediction=None) -> Figure:
    """One column per γ, seeds as line styles. Top: the loss with the predicted levels dashed and
    labelled, the sub-levels of a Z_n task (n >= 3) dotted (with ``prediction``, a :class:`ctxlab.theory.predict.StaircasePrediction` of the same runs:
    its whole ladder, sub-levels dotted, and each run's predicted onsets as ticks on the top edge). Middle: the share of ||E − E0||² in the directions each order adds (colour = order,
    dashed = its chance level). Bottom: the mean ||E − E0|| of each token role (keys enter with order 1,
    first anchors with order 2, ...).

    ``result`` is a :class:`ctxlab.experiments.StaircaseResult`; ``gammas`` picks the columns (default all).
    """
    gammas = sorted(set(result.gammas) if gammas is None else {float(g) for g in gammas})
    if not set(gammas) <= set(result.gammas):
        raise ValueError(f"gammas {gammas} must be among the run's {sorted(set(result.gammas))}")
    fig, axes = plt.subplots(3, len(gammas), figsize=(4.3 * len(gammas) + 0.9, 8.4), sharex="col", squeeze=False)
    steps = result.trajectory.steps.numpy()
    roles = list(result.norms)
    for col, g in enumerate(gammas):
        models = result.runs_at(g)
        top, middle, bottom = axes[:, col]
        for j, k in enumerate(models):
            top.plot(steps, result.trajectory.loss[k].numpy(), color="black", lw=1.1, ls=seed_style(j),
                     label=f"seed {result.seeds[k]}")
        if prediction is None:
            label_levels(top, result.levels)
            label_sub_levels(top, result.sub_levels)
        else:
            draw_ladder(top, prediction.rungs, names=col == len(gammas) - 1)
            for j, k in enumerate(models):
                onset_ticks(top, prediction, k, "black")
        top.set_title(f"γ = {g:g}")
        for order in range(1, result.shares.shape[-1] + 1):
            color = ORDER_COLORS[(order - 1) % len(ORDER_COLORS)]
            for j, k in enumerate(models):
                middle.plot(steps, result.shares[k, :, order - 1].numpy(), color=color, lw=1.1, ls=seed_style(j),
                            label=f"order {order}" if j == 0 else None)
            middle.axhline(result.chance[order - 1], color=color, lw=1.0, ls=(0, (1, 2)))
        middle.set_ylim(-0.02, 1.02)
        for r, role in enumerate(roles):
            color = ORDER_COLORS[r % len(ORDER_COLORS)]
            for j, k in enumerate(models):
                bottom.plot(steps, result.norms[role][k].numpy(), color=color, lw=1.1, ls=seed_style(j),
                            label=role if j == 0 else None)
        bottom.set_xlabel("gradient-descent step")
    top_norm = max(ax.get_ylim()[1] for ax in axes[2])
    for ax in axes[2]:  # one scale for the roles' norms, so that columns compare by eye
        ax.set_ylim(0, top_norm)
    axes[0, 0].set_ylabel("loss (nats)")
    axes[1, 0].set_ylabel("share of ‖E − E₀‖²\nin order-k directions")
    axes[2, 0].set_ylabel("mean ‖E − E₀‖ per role")
    if len(result.runs_at(gammas[-1])) > 1:  # one seed needs no key to its line style
        axes[0, -1].legend(loc="upper right", fontsize=7, title="line style", title_fontsize=7)
    axes[1, -1].legend(loc="upper right", fontsize=7, title="dotted: chance", title_fontsize=7)
    axes[2, -1].legend(loc="upper left", fontsize=7)
    fig.tight_layout()
    return fig


def rung_curves(steps, losses, levels, names, run_labels) -> Figure:
    """Loss curves [K, T] (one colour per run) against a ladder of named levels, dashed and labelled."""
    fig, ax = plt.subplots(figsize=(7.6, 3.6))
    steps = steps.numpy() if hasattr(steps, "numpy") else steps
    for k, label in enumerate(run_labels):
        ax.plot(steps, losses[k].numpy(), lw=1.2, color=SEED_COLORS[k % len(SEED_COLORS)], label=label)
    label_levels(ax, levels, names)
    ax.set_xlabel("gradient-descent step")
    ax.set_ylabel("loss (nats)")
    ax.legend(loc="lower left", fontsize=8)
    fig.tight_layout()
    return fig


# --- lesson 03 ---

# A role gets the colour of the order that first moves it: keys order 1, first anchors order 2, ...
ROLE_COLORS = {"key": ORDER_COLORS[0], "anchor1": ORDER_COLORS[1], "anchor2": ORDER_COLORS[2]}


def embedding_pca_grid(coords, roles, attributes, row_titles, col_titles) -> Figure:
    """Small multiples of 2-D embedding projections: coords [rows, cols, V, 2].

    Colour = token role, marker = attribute, so groups that the model has (or has not) separated show at once.
    Both axes share one scale, so a principal axis that carries little variance looks short.
    """
    rows, cols = coords.shape[0], coords.shape[1]
    fig, axes = plt.subplots(rows, cols, figsize=(3.1 * cols, 2.9 * rows), squeeze=False)
    attributes = [int(a) for a in attributes]
    for r in range(rows):
        for c in range(cols):
            ax = axes[r, c]
            xy = coords[r, c].numpy()
            for role in dict.fromkeys(roles):
                for a in sorted(set(attributes)):
                    idx = [i for i in range(len(roles)) if roles[i] == role and attributes[i] == a]
                    ax.scatter(xy[idx, 0], xy[idx, 1], s=22, color=ROLE_COLORS.get(role, "black"),
                               marker=ATTRIBUTE_MARKERS[a % len(ATTRIBUTE_MARKERS)], alpha=0.8,
                               label=f"{role}, attr {a}" if r == 0 and c == 0 else None)
            ax.set_xticks([])
            ax.set_yticks([])
            ax.set_aspect("equal", adjustable="datalim")  # PC2 drawn to PC1's scale: a weak axis looks weak
            if r == 0:
                ax.set_title(col_titles[c], fontsize=9)
            if c == 0:
                ax.set_ylabel(row_titles[r], fontsize=9)
    fig.legend(loc="center right", fontsize=7, frameon=False)
    fig.tight_layout(rect=(0, 0, 0.86, 1))
    return fig


# --- lesson 08 ---


def phase_map_figure(pm) -> Figure:
    """Two heat maps over gamma (rows) x learning rate (columns): first-plateau length and final loss.

    ``pm`` is a :class:`ctxlab.experiments.PhaseMap`. Diverged cells are grey and marked "div";
    dead runs (they left ln C and ended back on it, :attr:`PhaseMap.dead`) are grey and marked
    "dead", so that no colour reads them as a rest; a learning rate at which some γ diverged is an
    unstable column: its other cells are grey too, their numbers kept, and its tick says "unstable" (a
    run at the edge of stability that ends near ln C is no rest either); cells that never left ln C
    are marked with "≥" (the rest lasted the whole run).
    """
    import numpy as np

    never_left = (pm.wait.isnan() & ~pm.diverged).numpy()
    diverged, dead = pm.diverged.numpy(), pm.dead.numpy()
    unstable = np.broadcast_to(diverged.any(0, keepdims=True), diverged.shape)
    rest = np.where(dead | unstable, np.nan, pm.plateau.numpy())
    shown = {"steps": np.where(dead, np.nan, pm.plateau.numpy()), "final": pm.final.numpy()}
    panels = [(f"steps resting on H0 = {pm.levels[0]:.3f} (its dwell)", rest, "viridis", "{:.0f}"),
              ("final loss (nats)", np.where(unstable, np.nan, pm.final.numpy()), "magma_r", "{:.3f}")]
    fig, axes = plt.subplots(1, 2, figsize=(5.2 + 0.9 * len(pm.lrs), 0.6 * len(pm.gammas) + 2.2), squeeze=False)
    for ax, (title, values, cmap_name, fmt) in zip(axes[0], panels):
        cmap = plt.get_cmap(cmap_name).with_extremes(bad="lightgrey")
        image = ax.imshow(np.ma.masked_invalid(values), cmap=cmap, origin="lower", aspect="auto")
        fig.colorbar(image, ax=ax, shrink=0.85)
        for i in range(len(pm.gammas)):
            for j in range(len(pm.lrs)):
                if diverged[i, j]:
                    text = "div"
                elif dead[i, j] and "steps" in title:
                    text = "dead"
                else:
                    value = shown["steps" if "steps" in title else "final"][i, j]
                    text = ("≥" if never_left[i, j] and "steps" in title else "") + fmt.format(value)
                ax.text(j, i, text, ha="center", va="center", fontsize=8, color="dimgrey" if unstable[i, j] else "black",
                        bbox={"boxstyle": "round,pad=0.15", "fc": "white", "alpha": 0.6, "lw": 0})
        ax.set_xticks(range(len(pm.lrs)), [f"{r:g}\nunstable" if unstable[0, j] else f"{r:g}" for j, r in enumerate(pm.lrs)])
        ax.set_yticks(range(len(pm.gammas)), [f"{g:g}" for g in pm.gammas])
        ax.set_xlabel("learning rate")
        ax.set_ylabel("γ (init exponent)")
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig


# --- lesson 17 ---

def draw_ladder(ax, rungs, names: bool = True) -> None:
    """Every predicted level of a staircase prediction: rungs dashed, sub-levels dotted, named at the right edge."""
    for rung in rungs:
        color = ORDER_COLORS[(rung.order - 1) % len(ORDER_COLORS)] if rung.order else "grey"
        ax.axhline(rung.level, ls=":" if rung.sub else "--", lw=0.9, color=color, zorder=0)
        if names:
            ax.annotate(f"{rung.name} = {rung.level:.3f}", (1.0, rung.level), xycoords=("axes fraction", "data"),
                        xytext=(3, 0), textcoords="offset points", va="center", fontsize=7, color=color)


def onset_ticks(ax, prediction, k: int, color: str) -> None:
    """Model k's predicted onsets as triangles on the top edge of ``ax``."""
    for rung in prediction.rungs[1:]:
        onset = int(rung.onset[k])
        if onset >= 0:
            ax.plot([onset], [1.0], marker="v", color=color, ms=5, transform=ax.get_xaxis_transform(), clip_on=False)


def prediction_figure(prediction, result=None, gammas=None) -> Figure:
    """One panel per γ: the predicted loss curves (thick, pale) and, with ``result``, the measured ones (thin),
    seeds as colours; every predicted level drawn and named (sub-levels dotted) and each predicted onset a
    tick on the top edge in its seed's colour.

    ``prediction``: a :class:`ctxlab.theory.predict.StaircasePrediction`; ``result``: the matching
    :class:`ctxlab.experiments.StaircaseResult`, or None (prediction only)."""
    gammas = sorted(set(prediction.gammas) if gammas is None else {float(g) for g in gammas})
    if not set(gammas) <= set(prediction.gammas):
        raise ValueError(f"gammas {gammas} must be among the prediction's {sorted(set(prediction.gammas))}")
    fig, axes = plt.subplots(1, len(gammas), figsize=(5.2 * len(gammas) + 1.6, 3.9), squeeze=False)
    end = int(prediction.steps[-1]) if result is None else int(result.trajectory.steps[-1])
    for col, g in enumerate(gammas):
        ax = axes[0, col]
        models = [k for k, gk in enumerate(prediction.gammas) if gk == g]
        for j, k in enumerate(models):
            color = SEED_COLORS[j % len(SEED_COLORS)]
            ax.plot(prediction.steps.numpy(), prediction.curves[k].numpy(), color=color, lw=3.0, alpha=0.35,
                    label=f"seed {prediction.seeds[k]}, predicted")
            if result is not None:
                ax.plot(result.trajectory.steps.numpy(), result.trajectory.loss[k].numpy(), color=color, lw=1.3,
                        label=f"seed {prediction.seeds[k]}, trained")
            onset_ticks(ax, prediction, k, color)
        draw_ladder(ax, prediction.rungs, names=col == len(gammas) - 1)
        ax.set_xlim(0, end)
        ax.set_title(f"γ = {g:g}  (▼ predicted onsets)", fontsize=10)
        ax.set_xlabel("gradient-descent step")
    axes[0, 0].set_ylabel("loss (nats)")
    axes[0, 0].legend(loc="lower left", fontsize=7)
    fig.tight_layout()
    return fig

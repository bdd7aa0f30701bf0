"""Figures of what the structure is good for: splitting classes, semantic neighbours, composition, task learning (lessons 06, 11–13)."""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from ctxlab.plots.signatures import cosine_similarity
from ctxlab.plots.style import ATTRIBUTE_MARKERS, gamma_colors, label_measured_rests, token_ticks

# --- lesson 06 ---


def embedding_split_figure(before, after, groups, titles=("before", "after"), names=None,
                           group_label: str = "group", middle=()) -> Figure:
    """Cosine matrices and 2-d PCA of the same token rows at two (or more) steps, coloured by ``groups``.

    before, after: [n, d] embedding rows; ``middle``: further [n, d] states drawn between them
    (``titles`` then names every state); groups: [n] integer labels (e.g. token attributes);
    names: optional [n] token names for the matrix ticks. Top row: cosine similarity; bottom row:
    the rows on their two leading principal axes, one colour and marker per group (legend), on equal
    axes: PC 2 is often a small fraction of PC 1, and stretched to the same height it would show
    groups that are not there.
    """
    import torch

    from ctxlab.align import pca_2d

    states = [before, *middle, after]
    if len(titles) != len(states):
        raise ValueError(f"titles: need one title per state ({len(states)}), got {len(titles)}")
    g = torch.as_tensor(groups)
    n = len(states)
    fig, axes = plt.subplots(2, n, figsize=(3.7 * n + 0.4, 7.0), layout="constrained", squeeze=False)
    for col, (E, title) in enumerate(zip(states, titles)):
        E = torch.as_tensor(E).double()
        im = axes[0, col].imshow(cosine_similarity(E).numpy(), vmin=-1, vmax=1, cmap="RdBu_r", interpolation="nearest")
        if names is not None:
            token_ticks(axes[0, col], list(names), "both")
        axes[0, col].set_title(f"cosine, {title}", fontsize=9)
        xy = pca_2d(E).numpy()
        ax = axes[1, col]
        for j, value in enumerate(sorted(set(g.tolist()))):
            rows = (g == value).numpy()
            ax.scatter(xy[rows, 0], xy[rows, 1], s=40, color=f"C{j}", marker=ATTRIBUTE_MARKERS[j % len(ATTRIBUTE_MARKERS)],
                       label=f"{group_label} {value}", alpha=0.8)
        ax.set_aspect("equal", adjustable="datalim")
        ax.set_title(f"PCA, {title}", fontsize=9)
        ax.set_xlabel("PC 1")
        ax.set_ylabel("PC 2")
    handles, labels = axes[1, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=len(labels), fontsize=8)  # hides no point
    fig.colorbar(im, ax=axes[0].tolist(), fraction=0.03, pad=0.02, label="cosine similarity")
    return fig


def residual_increment_figure(result, rows, cols, names, model: int = 0) -> Figure:
    """One model's residual table R_ij beside the data's ΔS²_ij, on the block ``rows`` × ``cols``
    (token ids at positions i and j; one group of C columns per column token), on one colour scale."""
    import torch

    rows, cols = torch.as_tensor(rows), torch.as_tensor(cols)
    C = result.increment.shape[-1]
    i, j = result.positions
    lim = float(result.increment[rows][:, cols].abs().max())
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.4), layout="constrained")
    panels = ((result.residual[model], f"residual R{i + 1}{j + 1} of model {model}"),
              (result.increment, f"ΔS²{i + 1}{j + 1} from the data"))
    for ax, (table, title) in zip(axes, panels):
        block = table[rows][:, cols].reshape(len(rows), -1)
        im = ax.imshow(block.numpy(), cmap="RdBu_r", vmin=-lim, vmax=lim, aspect="auto", interpolation="nearest")
        for x in range(C, block.shape[1], C):
            ax.axvline(x - 0.5, color="white", lw=0.6)
        ax.set_yticks(range(len(rows)), [names[t] for t in rows.tolist()], fontsize=7)
        ax.set_xticks([C * c + (C - 1) / 2 for c in range(len(cols))], [names[t] for t in cols.tolist()], fontsize=7)
        ax.set_title(title, fontsize=9)
        ax.set_xlabel(f"token at position {j + 1} ({C} columns: y = 0 … {C - 1})")
        ax.set_ylabel(f"token at position {i + 1}")
    fig.colorbar(im, ax=axes.tolist(), fraction=0.03, label="probability difference")
    return fig


# --- lesson 13: semantic structure ---


def class_cosine_figure(steps, curves: dict, gammas, onsets: dict | None = None) -> Figure:
    """Within-class (solid) and between-class (dashed) cosine over training, every model a line.

    ``curves``: panel title -> (within [K, T], between [K, T]); ``gammas``: γ of each model;
    ``onsets``: γ -> steps to mark with dotted vertical lines (the mean stair onsets). The legend sits
    below the panels, where no curve runs, and names the onset lines too.
    """
    fig, axes = plt.subplots(1, len(curves), figsize=(4.4 * len(curves), 3.4), sharey=True, squeeze=False)
    x = steps.numpy()
    for ax, (title, (within, between)) in zip(axes[0], curves.items()):
        for k, g in enumerate(gammas):
            color = gamma_colors(gammas)[g]
            first = k == list(gammas).index(g)
            ax.plot(x, within[k].numpy(), color=color, lw=1.2, alpha=0.8, label=f"γ = {g:g}, within" if first else None)
            ax.plot(x, between[k].numpy(), color=color, lw=1.0, ls="--", alpha=0.8, label=f"γ = {g:g}, between" if first else None)
        for g, marks in (onsets or {}).items():
            for step in marks:
                ax.axvline(step, color=gamma_colors(gammas)[g], ls=":", lw=0.9, zorder=0)
        ax.axhline(0, color="lightgrey", lw=0.8, zorder=0)
        ax.set(title=title, xlabel="step")
    axes[0, 0].set_ylabel("mean cosine between tokens")
    handles = axes[0, 0].get_legend_handles_labels()[0] + [
        Line2D([], [], color=gamma_colors(gammas)[g], ls=":", lw=0.9, label=f"γ = {g:g}: loss halfway down a stair (mean onset)")
        for g in (onsets or {})]
    rows = -(-len(handles) // 3)
    fig.tight_layout(rect=(0, 0.03 + 0.055 * rows, 1, 1))  # room for the legend inside the figure (also when saved)
    fig.legend(handles=handles, loc="lower center", ncol=3, fontsize=7, frameon=False)
    return fig


def neighbour_overlap_figure(steps, curves: dict, gammas, chance: float, k: int) -> Figure:
    """k-NN overlap of embedding and signature neighbours over training: panel name -> [K, T]."""
    fig, axes = plt.subplots(1, len(curves), figsize=(4.4 * len(curves), 3.4), sharey=True, squeeze=False)
    x = steps.numpy()
    for ax, (title, overlap) in zip(axes[0], curves.items()):
        for k_model, g in enumerate(gammas):
            first = k_model == list(gammas).index(g)
            ax.plot(x, overlap[k_model].numpy(), color=gamma_colors(gammas)[g], lw=1.2, alpha=0.8,
                    label=f"γ = {g:g}" if first else None)
        ax.axhline(chance, color="black", ls=":", lw=1, label=f"chance = {chance:.2f}")
        ax.set(title=title, xlabel="step")
    axes[0, 0].set_ylabel(f"shared top-{k} neighbours")
    axes[0, 0].legend(fontsize=8)
    fig.tight_layout()
    return fig


# --- lesson 12: composition ---


def composition_curves_figure(steps, train_acc, composed, gammas, symmetric=None) -> Figure:
    """Training accuracy (left) and held-out-pair accuracy (right) over training, every model a line.

    train_acc, composed, symmetric: [K, T]; gammas: γ of each model. ``symmetric`` (dotted, right)
    is the share of held-out keys answered with the reverse pair's label.
    """
    colors = gamma_colors(gammas)
    fig, (left, right) = plt.subplots(1, 2, figsize=(9.6, 3.5), sharey=True)
    x = steps.numpy()
    for k, g in enumerate(gammas):
        label = f"γ = {g:g}" if k == list(gammas).index(g) else None
        left.plot(x, train_acc[k].numpy(), color=colors[g], lw=1.2, alpha=0.8, label=label)
        right.plot(x, composed[k].numpy(), color=colors[g], lw=1.2, alpha=0.8, label=label)
        if symmetric is not None:
            right.plot(x, symmetric[k].numpy(), color=colors[g], lw=0.9, ls=":", alpha=0.8)
    left.set(title="training pairs", xlabel="step", ylabel="accuracy", ylim=(-0.03, 1.03))
    right.set(title="held-out pair: composed (solid), copied reverse (dotted)", xlabel="step")
    left.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    return fig


def anchor_embedding_figure(embeddings: dict, task, line_up_scores: dict, gammas) -> Figure:
    """Key embeddings on their two leading principal axes, consecutive keys joined (one panel per
    run), then the line-up scores per γ.

    embeddings: panel title -> E [V, d] (one model's final embedding); line_up_scores:
    role name ("anchors", "keys") -> [K] scores, drawn as points per γ with chance 1/(n-1) dashed.
    A key path that runs in order (k0 -> k1 -> ...) is a number line the shifts can move along.
    """
    import torch

    from ctxlab.align import pca_2d

    n = len(embeddings)
    fig, axes = plt.subplots(1, n + 1, figsize=(3.5 * (n + 1), 3.4))
    keys = task.role_tokens("key")
    values = task.info["values"][keys].numpy()
    for ax, (title, E) in zip(axes[:-1], embeddings.items()):
        xy = pca_2d(torch.as_tensor(E)[keys]).numpy()
        ax.plot(xy[:, 0], xy[:, 1], color="lightgrey", lw=0.9, zorder=0)
        ax.scatter(xy[:, 0], xy[:, 1], c=values, cmap="viridis", s=18)
        for i in (0, len(keys) - 1):
            ax.annotate(task.token_names[int(keys[i])], xy[i], fontsize=8, xytext=(3, 3), textcoords="offset points")
        ax.set(title=title, xlabel="PC 1", ylabel="PC 2")
    ax = axes[-1]
    colors = gamma_colors(gammas)
    names = list(line_up_scores)
    for j, name in enumerate(names):
        n_tokens = len(task.role_tokens(name.rstrip("s")))
        ax.hlines(1 / (n_tokens - 1), j - 0.35, j + 0.35, color="grey", ls="--", lw=0.9)
        for k, g in enumerate(gammas):
            offset = (sorted(set(gammas)).index(g) - (len(set(gammas)) - 1) / 2) * 0.18
            ax.scatter(j + offset, float(line_up_scores[name][k]), color=colors[g], s=22,
                       label=f"γ = {g:g}" if j == 0 and k == list(gammas).index(g) else None)
    ax.set_xticks(range(len(names)), names)
    ax.set(title="line-up (dashed: chance)", ylabel="variance on the value line", ylim=(0, 1))
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


# --- lesson 11: task learning ---


def plateau_race_figure(runs: dict, levels, at_step: int | None = None, sub_levels=()) -> Figure:
    """Which embedding gets down the staircase first: one colour per condition, one line/point per seed.

    runs: condition -> (steps [T], loss [n_seeds, T]); levels: H_0 .. H_L (dashed); sub_levels: [(name,
    loss)] (dotted black). A level a condition's seeds rest on that is none of these is dotted in its
    colour and named "rest (measured)" on the right panel. Left: loss curves.
    Middle: the step each seed is halfway down to level k (below the midpoint of H_{k-1}, H_k); a seed
    that never got halfway is an open marker at its run's last step. Right: loss at ``at_step`` (default:
    the shortest run's end) per seed, so every condition is compared after the same number of steps.
    """
    import numpy as np
    import torch

    from ctxlab.rungs import stair_onsets

    names = list(runs)
    colors = plt.get_cmap("tab10")
    at_step = min(int(s[-1]) for s, _ in runs.values()) if at_step is None else at_step
    fig, axes = plt.subplots(1, 3, figsize=(13, 4.2), gridspec_kw={"width_ratios": [1.4, 1.2, 0.8]})
    for h in levels:
        axes[0].axhline(h, color="grey", ls="--", lw=0.8)
    named = [*levels, *(h for _, h in sub_levels)]
    n_stairs = len(levels) - 1
    width = 0.8 / max(n_stairs, 1)
    for c, name in enumerate(names):
        steps, loss = runs[name]
        steps, loss = torch.as_tensor(steps), torch.as_tensor(loss)
        for i, curve in enumerate(loss):
            axes[0].plot(steps.numpy(), curve.numpy(), color=colors(c), lw=1.1, label=name if i == 0 else None)
        for level, first, last in label_measured_rests(axes[2], steps, loss, named, color=colors(c), span=False):
            axes[0].hlines(level, first, last, color=colors(c), ls=":", lw=2.0, zorder=0)  # named on the right panel
        onsets = stair_onsets(steps, loss, list(levels))  # [n, L]
        for k in range(n_stairs):
            x = c + (k - (n_stairs - 1) / 2) * width + np.linspace(-0.06, 0.06, loss.shape[0])
            hit = onsets[:, k] >= 0
            y = torch.where(hit, onsets[:, k], steps[-1]).numpy()
            for xi, yi, h in zip(x, y, hit.tolist()):
                axes[1].scatter(xi, yi, s=26, marker="os^D"[k % 4], color=colors(c),
                                facecolors=colors(c) if h else "none")
        idx = int(torch.argmin((steps - at_step).abs()))
        axes[2].scatter(np.full(loss.shape[0], c) + np.linspace(-0.1, 0.1, loss.shape[0]), loss[:, idx].numpy(),
                        color=colors(c), s=26)
    axes[0].set_xlabel("step")
    axes[0].set_ylabel("loss (nats)")
    for ax in (axes[0], axes[2]):
        for _, h in sub_levels:
            ax.axhline(h, ls=":", lw=1.1, color="k", zorder=0)
    for name, h in sub_levels:
        axes[2].annotate(f"{name} = {h:.3f}", (1.0, h), xycoords=("axes fraction", "data"), xytext=(3, 0),
                         textcoords="offset points", va="center", fontsize=7)
    axes[0].set_title("loss; dashed: levels H_k" + (", dotted: sub-levels" if sub_levels else ""), fontsize=10)
    axes[0].legend(fontsize=7.5, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2, frameon=False)  # below: no curve under it
    axes[1].set_title("step halfway down to level k (○ H1, □ H2, △ H3; open = never)", fontsize=9)
    axes[1].set_ylabel("step")
    axes[2].set_title(f"loss at step {at_step}", fontsize=10)
    for k, h in enumerate(levels):
        axes[2].axhline(h, color="grey", ls="--", lw=0.8)
        axes[2].annotate(f"H{k} = {h:.3f}", (1.0, h), xycoords=("axes fraction", "data"), xytext=(3, 0),
                         textcoords="offset points", va="center", fontsize=7, color="grey")
    for ax in axes[1:]:
        ax.set_xticks(range(len(names)), names, rotation=35, ha="right", fontsize=8)
    fig.tight_layout()
    return fig

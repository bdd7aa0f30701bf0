"""Figure functions: each takes results and returns a matplotlib Figure; no global state."""

from __future__ import annotations

from typing import TYPE_CHECKING

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

if TYPE_CHECKING:
    import torch


# --- staircase ---

ORDER_COLORS = ("#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e")


SEED_STYLES = ("-", "--", "-.", (0, (5, 1, 1, 1, 1, 1)))
SEED_COLORS = ("#222222", "#1f78b4", "#e6550d", "#31a354")


def _seed_style(j: int) -> str:
    return SEED_STYLES[j % len(SEED_STYLES)]


def label_levels(ax, levels, names=None, x=None) -> None:
    """Dashed predicted levels, each labelled at the right edge (H_k = value, or its name)."""
    for order, level in enumerate(levels):
        color = ORDER_COLORS[(order - 1) % len(ORDER_COLORS)] if order else "grey"
        ax.axhline(level, ls="--", lw=0.9, color=color, zorder=0)
        text = f"H{order} = {level:.3f}" if names is None else f"{names[order]} = {level:.3f}"
        ax.annotate(text, (1.0, level), xycoords=("axes fraction", "data"), xytext=(3, 0),
                    textcoords="offset points", ha="left", va="center", fontsize=7, color=color)


def staircase_figure(result, gammas=None) -> Figure:
    """One column per γ, seeds as line styles. Top: the loss with the predicted levels dashed and
    labelled. Middle: the share of ||E − E0||² in the directions each order adds (colour = order,
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
            top.plot(steps, result.trajectory.loss[k].numpy(), color="black", lw=1.1, ls=_seed_style(j),
                     label=f"seed {result.seeds[k]}")
        label_levels(top, result.levels)
        top.set_title(f"γ = {g:g}")
        for order in range(1, result.shares.shape[-1] + 1):
            color = ORDER_COLORS[(order - 1) % len(ORDER_COLORS)]
            for j, k in enumerate(models):
                middle.plot(steps, result.shares[k, :, order - 1].numpy(), color=color, lw=1.1, ls=_seed_style(j),
                            label=f"order {order}" if j == 0 else None)
            middle.axhline(result.chance[order - 1], color=color, lw=1.0, ls=(0, (1, 2)))
        middle.set_ylim(-0.02, 1.02)
        for r, role in enumerate(roles):
            color = ORDER_COLORS[r % len(ORDER_COLORS)]
            for j, k in enumerate(models):
                bottom.plot(steps, result.norms[role][k].numpy(), color=color, lw=1.1, ls=_seed_style(j),
                            label=role if j == 0 else None)
        bottom.set_xlabel("gradient-descent step")
    axes[0, 0].set_ylabel("loss (nats)")
    axes[1, 0].set_ylabel("share of ‖E − E₀‖²\nin order-k directions")
    axes[2, 0].set_ylabel("mean ‖E − E₀‖ per role")
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


# --- signatures ---


def cosine_similarity(matrix) -> torch.Tensor:
    """[V, m] -> [V, V] cosine similarity of the rows; a zero row is similar to nothing (0).

    A row counts as zero when its norm is below 1e-6 of the largest row norm: float32 signatures
    leave rounding residue (~1e-8) in rows that are exactly zero, and normalising that residue
    would draw it as a perfectly structured block.
    """
    import torch

    m = torch.as_tensor(matrix, dtype=torch.float64)
    norms = m.norm(dim=1, keepdim=True)
    floor = max(1e-12, 1e-6 * float(norms.max())) if m.numel() else 1e-12
    unit = torch.where(norms > floor, m / norms.clamp_min(floor), torch.zeros_like(m))
    return unit @ unit.T


def _token_ticks(ax, names, axis: str = "y", every: int = 1) -> None:
    ticks = list(range(0, len(names), every))
    labels = [names[i] for i in ticks]
    if axis in ("y", "both"):
        ax.set_yticks(ticks, labels, fontsize=6)
    if axis in ("x", "both"):
        ax.set_xticks(ticks, labels, fontsize=6, rotation=90)


def signature_heatmaps(signatures, titles=None, block_width: int | None = None,
                       drop_zero_columns: bool = False, wide_after: int = 100) -> Figure:
    """One heat map per signature (rows: tokens, columns: the signature's entries).

    ``block_width`` draws a thin line every that many columns (e.g. C, to separate positions).
    ``drop_zero_columns`` leaves out the columns that are zero for every token (whole blocks of
    ``block_width`` columns when it is given), so sparse high-order signatures stay readable.
    Panels with more than ``wide_after`` shown columns get a full-width row of their own below the
    others, so that each column keeps at least a pixel. Rows of a centered or incremental
    signature take both signs, so the colour scale is symmetric.
    """
    shown = []
    for sig in signatures:
        m = sig.matrix.double()
        total = m.shape[1]
        if drop_zero_columns:
            floor = 1e-6 * float(m.abs().max() or 1.0)
            width = block_width if block_width and total % block_width == 0 else 1
            keep = (m.abs() > floor).reshape(m.shape[0], -1, width).any(0).any(-1)
            m = m.reshape(m.shape[0], -1, width)[:, keep].reshape(m.shape[0], -1) if keep.any() else m
        shown.append((m, total))
    narrow = [k for k, (m, _) in enumerate(shown) if m.shape[1] <= wide_after]
    wide = [k for k, (m, _) in enumerate(shown) if m.shape[1] > wide_after]
    cols = max(len(narrow), 1)
    fig = plt.figure(figsize=(3.3 * cols + 0.6, 4.2 + 3.0 * len(wide)), layout="constrained")
    grid = fig.add_gridspec(1 + len(wide), cols, height_ratios=[4.2] + [3.0] * len(wide))
    axes = {k: fig.add_subplot(grid[0, j]) for j, k in enumerate(narrow)}
    axes.update({k: fig.add_subplot(grid[1 + j, :]) for j, k in enumerate(wide)})
    for k, sig in enumerate(signatures):
        ax, (m, total) = axes[k], shown[k]
        signed = bool((m < -1e-9).any())
        lim = float(m.abs().max()) or 1.0
        im = ax.imshow(m.numpy(), aspect="auto", interpolation="nearest",
                       cmap="RdBu_r" if signed else "viridis", vmin=-lim if signed else 0.0, vmax=lim)
        if block_width and m.shape[1] <= 60:
            for x in range(block_width, m.shape[1], block_width):
                ax.axvline(x - 0.5, color="white", lw=0.8)
        _token_ticks(ax, sig.tokens, "y", every=1 if len(sig.tokens) <= 30 else 3)
        dropped = m.shape[1] < total
        ax.set_xlabel(f"{m.shape[1]} of {total} columns (all-zero columns left out)" if dropped else f"{total} columns")
        ax.set_title(titles[k] if titles else sig.name, fontsize=9)
        fig.colorbar(im, ax=ax, fraction=0.05 if k in narrow else 0.015, pad=0.02)
    return fig


def cosine_matrices(signatures, titles=None) -> Figure:
    """Token-by-token cosine similarity of each signature's rows: blocks show tokens that look alike."""
    n = len(signatures)
    fig, axes = plt.subplots(1, n, figsize=(3.4 * n + 0.6, 3.6), squeeze=False)
    for k, (ax, sig) in enumerate(zip(axes[0], signatures)):
        sim = cosine_similarity(sig.matrix)
        im = ax.imshow(sim.numpy(), vmin=-1, vmax=1, cmap="RdBu_r", interpolation="nearest")
        _token_ticks(ax, sig.tokens, "both", every=1 if len(sig.tokens) <= 30 else 3)
        ax.set_title(titles[k] if titles else sig.name, fontsize=9)
    fig.colorbar(im, ax=axes[0].tolist(), fraction=0.03, pad=0.02, label="cosine similarity")
    return fig


def entropy_ladder_figure(ladder, n_labels: int | None = None) -> Figure:
    """The conditional entropies H(Y | best k positions) as a descending staircase, k = 0, 1, ..."""
    import math

    orders = [s.order for s in ladder]
    levels = [s.entropy for s in ladder]
    fig, ax = plt.subplots(figsize=(5.2, 3.4))
    ax.step(orders + [orders[-1] + 1], levels + [levels[-1]], where="post", color="black", lw=1.5)
    for s in ladder:
        label = "none" if not s.positions else ",".join(f"x{p + 1}" for p in s.positions)
        ax.annotate(f"{s.entropy:.4f}\n(given {label})", (s.order + 0.5, s.entropy), xytext=(0, 5),
                    textcoords="offset points", ha="center", fontsize=8)
    if n_labels:
        ax.axhline(math.log(n_labels), color="grey", ls=":", lw=1, label=f"ln {n_labels} (uniform guess)")
        ax.legend(loc="lower left", fontsize=8)
    ax.set_xticks([o + 0.5 for o in orders], [f"order {o}" for o in orders])
    ax.set_ylabel("H(Y | order-k context), nats")
    ax.set_ylim(0, max(levels) * 1.18)
    ax.set_title("Entropy ladder: the best loss with order-k statistics", fontsize=10)
    fig.tight_layout()
    return fig


# --- lesson 02 ---

METRIC_TITLES = {"cka": "linear CKA", "rsa": "RSA (Spearman)", "subspace": "subspace fraction", "ridge": "ridge R² (LOO)"}


def permutation_histograms(baselines: dict, observed: dict) -> Figure:
    """One panel per metric: scores against row-shuffled signatures (histogram) and the real score (line)."""
    fig, axes = plt.subplots(1, len(baselines), figsize=(3.3 * len(baselines), 3.2), squeeze=False,
                             layout="constrained")
    for ax, (name, scores) in zip(axes[0], baselines.items()):
        ax.hist(scores.flatten().numpy(), bins=30, color="grey", alpha=0.8, label="shuffled S")
        ax.axvline(float(observed[name]), color="crimson", lw=2, label="real S")
        ax.set_title(METRIC_TITLES.get(name, name), fontsize=9)
        ax.set_xlabel("score")
    axes[0, 0].set_ylabel("count")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=len(labels), fontsize=8)  # hides no bar
    return fig


def chance_vs_vocab_figure(vocab, random_scores, limit, ylabel: str = "CKA(random E, ΔS¹)") -> Figure:
    """Chance-level CKA against vocabulary size: random embeddings (mean ± sd over seeds) and a limit curve.

    random_scores: [len(vocab), seeds]; limit: [len(vocab)], e.g. the score of one-hot embeddings.
    """
    mean, sd = random_scores.mean(-1).numpy(), random_scores.std(-1).numpy()
    fig, ax = plt.subplots(figsize=(5.2, 3.4))
    ax.errorbar(vocab, mean, yerr=sd, marker="o", capsize=3, color="black", label="random Gaussian E (d = 32)")
    ax.plot(vocab, limit, marker="s", ls="--", color="crimson", label="one-hot E (every token orthogonal)")
    ax.set_xscale("log")
    ax.set_xlabel("vocabulary size V")
    ax.set_ylabel(ylabel)
    ax.set_ylim(0, None)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def noise_sweep_figure(sweep) -> Figure:
    """Each metric's mean ± sd over seeds as noise grows, with its permutation baseline dashed.

    ``sweep`` is a :class:`ctxlab.align.NoiseSweep`.
    """
    names = list(sweep.scores)
    fig, axes = plt.subplots(1, len(names), figsize=(3.3 * len(names), 3.3), sharex=True, squeeze=False,
                             layout="constrained")
    for ax, name in zip(axes[0], names):
        scores, base = sweep.scores[name], sweep.baselines[name]
        mean, sd = scores.mean(-1).numpy(), scores.std(-1).numpy()
        ax.plot(sweep.noise, mean, color="black", marker="o", ms=3, label="score (mean ± sd over seeds)")
        ax.fill_between(sweep.noise, mean - sd, mean + sd, color="black", alpha=0.15)
        ax.plot(sweep.noise, base.mean(-1).numpy(), color="grey", ls="--", label="permutation baseline")
        ax.set_title(METRIC_TITLES.get(name, name), fontsize=9)
        ax.set_xscale("symlog", linthresh=0.1)
        ax.set_xlabel("noise / signal (σ)")
    axes[0, 0].set_ylabel("score against ΔS¹")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=len(labels), fontsize=8)  # hides no curve
    return fig


# --- lesson 03 ---

# A role gets the colour of the order that first moves it: keys order 1, first anchors order 2, ...
ROLE_COLORS = {"key": ORDER_COLORS[1], "anchor1": ORDER_COLORS[2], "anchor2": ORDER_COLORS[3]}
ATTRIBUTE_MARKERS = ("o", "^", "s", "D", "v")


def alignment_panels(steps, cka: dict, subspace, chance: float, norms: dict, onsets=None) -> Figure:
    """Three views of one γ over training: CKA(ΔE, ΔSᵏ) per order, the subspace fraction in span(ΔS¹)
    with its chance level, and the mean embedding norm per token role. Curves: [K, T] (one per seed);
    ``onsets`` [K, L] draws the stair onsets as dotted verticals.
    """
    x = steps.numpy()
    fig, axes = plt.subplots(1, 3, figsize=(13.5, 3.4), sharex=True)
    for name, curves in cka.items():
        order = int(name.split("-")[0][-1])
        for j, curve in enumerate(curves):
            axes[0].plot(x, curve.numpy(), color=ORDER_COLORS[order % len(ORDER_COLORS)], lw=1.1,
                         label=f"order {order}" if j == 0 else None)
    for curve in subspace:
        axes[1].plot(x, curve.numpy(), color=ORDER_COLORS[1], lw=1.1)
    axes[1].axhline(chance, color="grey", ls="--", label=f"chance = {chance:.3f}")
    for role, curves in norms.items():
        for j, curve in enumerate(curves):
            axes[2].plot(x, curve.numpy(), color=ROLE_COLORS.get(role, "black"), lw=1.1, label=role if j == 0 else None)
    titles = ("CKA(E − E₀, ΔSᵏ)", "share of ‖E − E₀‖² in span(ΔS¹)", "mean embedding norm per role")
    for ax, title in zip(axes, titles):
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("gradient-descent step")
        if onsets is not None:
            for step in onsets.flatten().tolist():
                if step >= 0:
                    ax.axvline(step, color="lightgrey", ls=":", lw=0.8, zorder=0)
        ax.legend(fontsize=8)
    axes[0].set_ylim(-0.02, 1.02)
    axes[1].set_ylim(-0.02, 1.02)
    fig.tight_layout()
    return fig


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


# --- language model ---

NGRAM_COLORS = {"unigram": "#1b9e77", "bigram": "#d95f02", "trigram": "#7570b3"}


def _model_label(gamma: float, seed: int) -> str:
    return f"γ={gamma:g}, seed {seed}"


def lm_panels(result, axes, title: str | None = None) -> None:
    """Draw one GPT run into a row of axes: held-out loss against ln V and the n-gram entropies
    (labelled at the right edge), KL to each n-gram (minima marked), and, when ``axes`` has a
    third panel, CKA(ΔE, text signature) with its shuffled band (the range of CKA against
    row-shuffled signatures, lesson 02). Models are told apart by colour (loss) and line style.
    """
    import math

    from matplotlib.lines import Line2D

    traj = result.trajectory
    steps = traj.steps.numpy()
    ax_loss, ax_kl = axes[0], axes[1]
    models = list(zip(traj.gammas, traj.seeds))
    for k, (g, s) in enumerate(models):
        style = {"ls": _seed_style(k), "lw": 1.2, "alpha": 0.9}
        ax_loss.plot(steps, traj.loss[k].numpy(), color=SEED_COLORS[k % len(SEED_COLORS)], label=_model_label(g, s), **style)
        for name, color in NGRAM_COLORS.items():
            kl = traj.extras[f"kl_{name}"][k]
            ax_kl.plot(steps, kl.numpy(), color=color, **style)
            i = int(kl.nan_to_num(nan=float("inf")).argmin())
            ax_kl.plot(steps[i], float(kl[i]), "o", color=color, ms=4)
    levels = [math.log(result.config["vocab"]), *result.entropies.values()]
    label_levels(ax_loss, levels, names=["ln V", *result.entropies])
    prefix = f"{title}: " if title else ""
    ax_loss.set(title=f"{prefix}held-out loss", xlabel="step", ylabel="nats")
    ax_kl.set(title=f"{prefix}KL(model ‖ n-gram), minima marked", xlabel="step", yscale="log")
    ax_loss.legend(fontsize=7, loc="upper right", bbox_to_anchor=(1, 0.93))  # below the ln V line
    styles = [Line2D([], [], color="grey", ls=_seed_style(k), label=_model_label(g, s)) for k, (g, s) in enumerate(models)]
    colours = [Line2D([], [], color=c, label=n) for n, c in NGRAM_COLORS.items()]
    low, high = ax_kl.get_ylim()
    ax_kl.set_ylim(low, high * 6)  # headroom: the legend sits above the curves
    ax_kl.legend(handles=colours + styles, fontsize=7, ncol=2, loc="upper right")
    if len(axes) < 3:
        return
    ax_align = axes[2]
    band = result.alignment_band
    for (name, curves), color in zip(result.alignment.items(), ("#d95f02", "#7570b3")):
        for k in range(len(models)):
            ax_align.plot(steps, curves[k].numpy(), color=color, ls=_seed_style(k), lw=1.2)
        if band is not None:  # the band of every model together: lowest low to highest high
            ax_align.fill_between(steps, band[name][0].amin(0).numpy(), band[name][1].amax(0).numpy(),
                                  color=color, alpha=0.18, lw=0)
    handles = [Line2D([], [], color=c, label=f"{n} signature") for n, c in zip(result.alignment, ("#d95f02", "#7570b3"))]
    if band is not None:
        handles.append(plt.Rectangle((0, 0), 1, 1, color="grey", alpha=0.3, label="shuffled band"))
    ax_align.legend(handles=handles, fontsize=7, loc="upper left")
    ax_align.set(title=f"{prefix}CKA(E − E₀, text signature)", xlabel="step", ylim=(0, 1))


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


# --- lesson 08 ---


def phase_map_figure(pm) -> Figure:
    """Two heat maps over gamma (rows) x learning rate (columns): first-plateau length and final loss.

    ``pm`` is a :class:`ctxlab.experiments.PhaseMap`. Diverged cells are grey and marked "div";
    cells that never left ln C are marked with "≥" (the rest lasted the whole run).
    """
    import numpy as np

    never_left = (pm.wait.isnan() & ~pm.diverged).numpy()
    diverged = pm.diverged.numpy()
    panels = [("rest at ln C before stair 1 (steps)", pm.plateau.numpy(), "viridis", "{:.0f}"),
              ("final loss (nats)", pm.final.numpy(), "magma_r", "{:.3f}")]
    fig, axes = plt.subplots(1, 2, figsize=(5.2 + 0.9 * len(pm.lrs), 0.6 * len(pm.gammas) + 2.2), squeeze=False)
    for ax, (title, values, cmap_name, fmt) in zip(axes[0], panels):
        cmap = plt.get_cmap(cmap_name).with_extremes(bad="lightgrey")
        image = ax.imshow(np.ma.masked_invalid(values), cmap=cmap, origin="lower", aspect="auto")
        fig.colorbar(image, ax=ax, shrink=0.85)
        for i in range(len(pm.gammas)):
            for j in range(len(pm.lrs)):
                if diverged[i, j]:
                    text = "div"
                else:
                    text = ("≥" if never_left[i, j] and "steps" in title else "") + fmt.format(values[i, j])
                ax.text(j, i, text, ha="center", va="center", fontsize=7,
                        bbox={"boxstyle": "round,pad=0.15", "fc": "white", "alpha": 0.6, "lw": 0})
        ax.set_xticks(range(len(pm.lrs)), [f"{r:g}" for r in pm.lrs])
        ax.set_yticks(range(len(pm.gammas)), [f"{g:g}" for g in pm.gammas])
        ax.set_xlabel("learning rate")
        ax.set_ylabel("γ (init exponent)")
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig


# --- lesson 06 ---


def embedding_split_figure(before, after, groups, titles=("before", "after"), names=None,
                           group_label: str = "group", middle=()) -> Figure:
    """Cosine matrices and 2-d PCA of the same token rows at two (or more) steps, coloured by ``groups``.

    before, after: [n, d] embedding rows; ``middle``: further [n, d] states drawn between them
    (``titles`` then names every state); groups: [n] integer labels (e.g. token attributes);
    names: optional [n] token names for the matrix ticks. Top row: cosine similarity; bottom row:
    the rows on their two leading principal axes, one colour and marker per group (legend).
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
            _token_ticks(axes[0, col], list(names), "both")
        axes[0, col].set_title(f"cosine, {title}", fontsize=9)
        xy = pca_2d(E).numpy()
        ax = axes[1, col]
        for j, value in enumerate(sorted(set(g.tolist()))):
            rows = (g == value).numpy()
            ax.scatter(xy[rows, 0], xy[rows, 1], s=40, color=f"C{j}", marker=ATTRIBUTE_MARKERS[j % len(ATTRIBUTE_MARKERS)],
                       label=f"{group_label} {value}", alpha=0.8)
        ax.set_title(f"PCA, {title}", fontsize=9)
        ax.set_xlabel("PC 1")
        ax.set_ylabel("PC 2")
    handles, labels = axes[1, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=len(labels), fontsize=8)  # hides no point
    fig.colorbar(im, ax=axes[0].tolist(), fraction=0.03, pad=0.02, label="cosine similarity")
    return fig


# --- lesson 13: semantic structure ---

GAMMA_COLORS = ("#1f78b4", "#e31a1c", "#33a02c", "#6a3d9a")


def _gamma_color(gammas, g: float) -> str:
    return GAMMA_COLORS[sorted(set(gammas), reverse=True).index(g) % len(GAMMA_COLORS)]


def class_cosine_figure(steps, curves: dict, gammas, onsets: dict | None = None) -> Figure:
    """Within-class (solid) and between-class (dashed) cosine over training, every model a line.

    ``curves``: panel title -> (within [K, T], between [K, T]); ``gammas``: γ of each model;
    ``onsets``: γ -> steps to mark with dotted vertical lines (e.g. mean stair onsets).
    """
    fig, axes = plt.subplots(1, len(curves), figsize=(4.4 * len(curves), 3.4), sharey=True, squeeze=False)
    x = steps.numpy()
    for ax, (title, (within, between)) in zip(axes[0], curves.items()):
        for k, g in enumerate(gammas):
            color = _gamma_color(gammas, g)
            first = k == list(gammas).index(g)
            ax.plot(x, within[k].numpy(), color=color, lw=1.2, alpha=0.8, label=f"γ = {g:g}, within" if first else None)
            ax.plot(x, between[k].numpy(), color=color, lw=1.0, ls="--", alpha=0.8, label=f"γ = {g:g}, between" if first else None)
        for g, marks in (onsets or {}).items():
            for step in marks:
                ax.axvline(step, color=_gamma_color(gammas, g), ls=":", lw=0.9, zorder=0)
        ax.axhline(0, color="lightgrey", lw=0.8, zorder=0)
        ax.set(title=title, xlabel="step")
    axes[0, 0].set_ylabel("mean cosine between tokens")
    axes[0, 0].legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    return fig


def neighbour_overlap_figure(steps, curves: dict, gammas, chance: float, k: int) -> Figure:
    """k-NN overlap of embedding and signature neighbours over training: panel name -> [K, T]."""
    fig, axes = plt.subplots(1, len(curves), figsize=(4.4 * len(curves), 3.4), sharey=True, squeeze=False)
    x = steps.numpy()
    for ax, (title, overlap) in zip(axes[0], curves.items()):
        for k_model, g in enumerate(gammas):
            first = k_model == list(gammas).index(g)
            ax.plot(x, overlap[k_model].numpy(), color=_gamma_color(gammas, g), lw=1.2, alpha=0.8,
                    label=f"γ = {g:g}" if first else None)
        ax.axhline(chance, color="black", ls=":", lw=1, label=f"chance = {chance:.2f}")
        ax.set(title=title, xlabel="step")
    axes[0, 0].set_ylabel(f"shared top-{k} neighbours")
    axes[0, 0].legend(fontsize=8)
    fig.tight_layout()
    return fig


# --- lesson 12: composition ---

_COMPOSITION_COLORS = ("#b2182b", "#ef8a62", "#2166ac", "#67a9cf")


def _by_gamma(gammas) -> dict:
    """γ -> colour, largest init (smallest γ) first in warm colours, small init in blue."""
    order = sorted(set(gammas))
    return {g: _COMPOSITION_COLORS[i % len(_COMPOSITION_COLORS)] for i, g in enumerate(order)}


def composition_curves_figure(steps, train_acc, composed, gammas, symmetric=None) -> Figure:
    """Training accuracy (left) and held-out-pair accuracy (right) over training, every model a line.

    train_acc, composed, symmetric: [K, T]; gammas: γ of each model. ``symmetric`` (dotted, right)
    is the share of held-out keys answered with the reverse pair's label.
    """
    colors = _by_gamma(gammas)
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
    colors = _by_gamma(gammas)
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


def plateau_race_figure(runs: dict, levels, at_step: int | None = None) -> Figure:
    """Which embedding gets down the staircase first: one colour per condition, one line/point per seed.

    runs: condition -> (steps [T], loss [n_seeds, T]); levels: H_0 .. H_L (dashed). Left: loss curves.
    Middle: the step each seed first drops onto plateau k (below the midpoint of H_{k-1}, H_k); a seed
    that never got there is an open marker at its run's last step. Right: loss at ``at_step`` (default:
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
    n_stairs = len(levels) - 1
    width = 0.8 / max(n_stairs, 1)
    for c, name in enumerate(names):
        steps, loss = runs[name]
        steps, loss = torch.as_tensor(steps), torch.as_tensor(loss)
        for i, curve in enumerate(loss):
            axes[0].plot(steps.numpy(), curve.numpy(), color=colors(c), lw=1.1, label=name if i == 0 else None)
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
    axes[0].set_title("loss; dashed: plateau levels H_k", fontsize=10)
    axes[0].legend(fontsize=7)
    axes[1].set_title("step reaching plateau k (○ H1, □ H2, △ H3; open = not reached)", fontsize=9)
    axes[1].set_ylabel("step")
    axes[2].set_title(f"loss at step {at_step}", fontsize=10)
    for h in levels[1:]:
        axes[2].axhline(h, color="grey", ls="--", lw=0.8)
    for ax in axes[1:]:
        ax.set_xticks(range(len(names)), names, rotation=35, ha="right", fontsize=8)
    fig.tight_layout()
    return fig


# --- attention (lesson 07, ``ctxlab attention``) ---


def attention_figure(result, gammas=None) -> Figure:
    """One column per γ, one colour per seed. Top: the loss of the attention model (thin) and of the
    same model with attention frozen uniform (thick and pale, drawn underneath: where the two agree
    the thin line runs inside the pale one), against the labelled levels and the bag's floor (dotted). Middle: the attention from the key to the position it names, with the band 1/L ± tol.
    Bottom: ‖W_Q W_Kᵀ‖ (log scale).

    ``result`` is a :class:`ctxlab.attention_exp.AttentionResult`.
    """
    gammas = sorted(set(result.gammas) if gammas is None else {float(g) for g in gammas})
    if not set(gammas) <= set(result.gammas):
        raise ValueError(f"gammas {gammas} must be among the run's {sorted(set(result.gammas))}")
    fig, axes = plt.subplots(3, len(gammas), figsize=(5.2 * len(gammas) + 1.4, 7.8), sharex="col", squeeze=False)
    steps = result.trained.steps.numpy()
    L, tol = result.task.seq_len, result.reads[0].tol if result.reads[0] is not None else 0.02
    bag = result.task.info["bag_level"]
    for col, g in enumerate(gammas):
        top, middle, bottom = axes[:, col]
        for k in [k for k, gk in enumerate(result.gammas) if gk == g]:
            color = SEED_COLORS[result.seeds[k] % len(SEED_COLORS)]
            top.plot(steps, result.baseline.loss[k].numpy(), color=color, lw=5, alpha=0.25, solid_capstyle="butt")
            top.plot(steps, result.trained.loss[k].numpy(), color=color, lw=1.3, label=f"seed {result.seeds[k]}")
            middle.plot(steps, result.trained.extras["attention_to_target"][k].numpy(), color=color, lw=1.3)
            bottom.semilogy(steps, result.trained.extras["qk_norm"][k].numpy(), color=color, lw=1.3)
        label_levels(top, result.levels, result.level_names)
        top.axhline(bag, color="grey", ls=":", lw=1.0, zorder=0)
        top.annotate(f"{result.bag_name} = {bag:.3f}", (1.0, bag), xycoords=("axes fraction", "data"), xytext=(3, 0),
                     textcoords="offset points", ha="left", va="center", fontsize=7, color="grey")
        top.set_title(f"γ = {g:g}   thin: attention learned; thick, pale: attention frozen at 1/L", fontsize=9)
        middle.axhspan(1 / L - tol, 1 / L + tol, color="grey", alpha=0.2, lw=0, label=f"1/L ± {tol:g}")
        middle.set_ylim(0, 1)
        bottom.set_xlabel("gradient-descent step")
    axes[0, 0].set_ylabel("loss (nats)")
    axes[1, 0].set_ylabel("attention: key → the\nposition it names")
    axes[2, 0].set_ylabel("‖W_Q W_Kᵀ‖")
    axes[0, -1].legend(loc="upper right", fontsize=7)
    axes[1, -1].legend(loc="upper left", fontsize=7)
    fig.tight_layout()
    return fig

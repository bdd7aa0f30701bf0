"""Figures of probability signatures and of the alignment measures that compare them (lessons 01–02)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from ctxlab.plots.style import token_ticks

if TYPE_CHECKING:
    import torch

_TOKEN_FONT = 7  # token names on the heat maps' axes: 27 rows in a 4-inch panel leave room for 7 pt


def cosine_similarity(matrix) -> torch.Tensor:
    """[V, m] -> [V, V] cosine similarity of the rows; a zero row is similar to nothing (0).

    A row counts as zero when its norm is below 1e-6 of the largest row norm: float32 signatures
    leave rounding residue (~1e-8) in rows that are exactly zero, and normalising that residue
    would draw it as a perfectly structured block.
    """
    import torch

    from ctxlab.align import row_cosines

    m = torch.as_tensor(matrix, dtype=torch.float64)
    norms = m.norm(dim=1, keepdim=True)
    floor = max(1e-12, 1e-6 * float(norms.max())) if m.numel() else 1e-12
    return row_cosines(torch.where(norms > floor, m, torch.zeros_like(m)))


def group_equal_columns(m: torch.Tensor) -> torch.Tensor:
    """The columns of ``m`` [V, n] reordered so that equal columns sit side by side.

    A panel of hundreds of columns gets about one pixel per column, and a pattern that changes from
    column to column then aliases into stripes that are not in the data. Columns are first kept in
    the order of the first row they are non-zero in (so each block of tokens keeps its place), then
    sorted by their values within that block.
    """
    import numpy as np
    import torch

    cols = np.round(m.numpy(), 6)  # float32 rounding residue must not split equal columns
    live = np.abs(cols) > 1e-6 * (np.abs(cols).max() or 1.0)
    first_row = np.where(live.any(0), live.argmax(0), cols.shape[0])
    order = np.lexsort((*cols[::-1], first_row))  # the last key is the primary one
    return m[:, torch.as_tensor(order)]


def signature_heatmaps(signatures, titles=None, block_width: int | None = None,
                       drop_zero_columns: bool = False, wide_after: int = 100) -> Figure:
    """One heat map per signature (rows: tokens, columns: the signature's entries).

    ``block_width`` draws a thin line every that many columns (e.g. C, to separate positions).
    ``drop_zero_columns`` leaves out the columns that are zero for every token (whole blocks of
    ``block_width`` columns when it is given), so sparse high-order signatures stay readable.
    Panels with more than ``wide_after`` shown columns get a full-width row of their own below the
    others, so that each column keeps at least a pixel, and their equal columns side by side
    (:func:`group_equal_columns`: otherwise the pattern aliases into stripes). Rows of a centered or
    incremental signature take both signs, so the colour scale is symmetric.
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
        shown.append((group_equal_columns(m) if m.shape[1] > wide_after else m, total))
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
        token_ticks(ax, sig.tokens, "y", every=1 if len(sig.tokens) <= 30 else 3)
        ax.tick_params(axis="y", labelsize=_TOKEN_FONT)
        dropped = m.shape[1] < total
        label = f"{m.shape[1]} of {total} columns (all-zero columns left out)" if dropped else f"{total} columns"
        ax.set_xlabel(label + ("; equal columns side by side" if k in wide else ""))
        ax.set_title(titles[k] if titles else sig.name, fontsize=9)
        fig.colorbar(im, ax=ax, fraction=0.05 if k in narrow else 0.015, pad=0.02)
    return fig


def cosine_matrices(signatures, titles=None) -> Figure:
    """Token-by-token cosine similarity of each signature's rows: blocks show tokens that look alike."""
    n = len(signatures)
    fig, axes = plt.subplots(1, n, figsize=(4.0 * n + 0.7, 4.3), squeeze=False)
    for k, (ax, sig) in enumerate(zip(axes[0], signatures)):
        sim = cosine_similarity(sig.matrix)
        im = ax.imshow(sim.numpy(), vmin=-1, vmax=1, cmap="RdBu_r", interpolation="nearest")
        token_ticks(ax, sig.tokens, "both", every=1 if len(sig.tokens) <= 30 else 3)
        ax.tick_params(labelsize=_TOKEN_FONT)
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
    """One panel per metric: scores against row-shuffled signatures (histogram) and the real score (line).

    The panels share one score axis, so the gap between the real score and the shuffled ones can be
    compared across metrics by eye.
    """
    fig, axes = plt.subplots(1, len(baselines), figsize=(3.3 * len(baselines), 3.2), squeeze=False,
                             sharex=True, layout="constrained")
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
    ax.set_xticks(list(vocab), [str(v) for v in vocab])  # the sizes measured, not powers of ten
    ax.minorticks_off()
    ax.set_xlabel("vocabulary size V")
    ax.set_ylabel(ylabel)
    ax.set_ylim(0, None)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def noise_sweep_figure(sweep) -> Figure:
    """Each metric's mean ± sd over seeds as noise grows, with its permutation baseline dashed.

    ``sweep`` is a :class:`ctxlab.align.NoiseSweep`. The noise axis is symlog, so that σ = 0 has a
    place: linear up to ``linthresh`` (the shaded stretch) and logarithmic above; its ticks are the
    noise levels measured.
    """
    linthresh = 0.1
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
        ax.set_xscale("symlog", linthresh=linthresh)
        ax.axvspan(0, linthresh, color="tab:blue", alpha=0.07, lw=0)
        ax.set_xticks(list(sweep.noise), [f"{v:g}" for v in sweep.noise], fontsize=7, rotation=90)
        ax.minorticks_off()
        ax.set_xlabel(f"noise / signal (σ); shaded: linear scale, σ ≤ {linthresh:g}", fontsize=8)
    axes[0, 0].set_ylabel("score against ΔS¹")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=len(labels), fontsize=8)  # hides no curve
    return fig

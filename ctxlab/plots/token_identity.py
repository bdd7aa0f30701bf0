"""Figures of the rare-token problem and of re-injected token tables (lesson 16, TIDE)."""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import torch
from matplotlib.figure import Figure
from matplotlib.ticker import FormatStrFormatter, LogLocator, NullFormatter

from ctxlab.plots.style import SEED_COLORS, label_levels, label_measured_rests, seed_style

TABLE_COLORS = ("#222222", "#1f78b4", "#e6550d", "#31a354")


def _variant(n_tables: int) -> str:
    return "no extra table" if n_tables == 0 else f"K = {n_tables} re-injected table{'s' if n_tables > 1 else ''}"


def _bin_colors(n_bins: int) -> list:
    return [plt.get_cmap("viridis")(0.05 + 0.8 * b / max(n_bins - 1, 1)) for b in range(n_bins)]


def _frequency_axis(ax) -> None:
    """A log frequency axis labelled at 1, 2 and 5 times powers of ten, as plain numbers."""
    ax.set_xscale("log")
    ax.xaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
    ax.xaxis.set_major_formatter(FormatStrFormatter("%g"))
    ax.xaxis.set_minor_formatter(NullFormatter())


def update_size_figure(frequency, sizes: dict[str, torch.Tensor], slopes: dict[str, torch.Tensor]) -> Figure:
    """‖ΔE_s‖ (and ‖ΔT_s‖) against π(s) on log-log axes, one panel per series.

    frequency: [n] token frequencies; sizes: panel title -> [S, n] update sizes (one row per seed);
    slopes: panel title -> [S] fitted log-log slopes (shown in the title as mean and range).
    A dashed guide of slope 1 through the seeds' geometric mean marks the prediction of E1.
    """
    freq = torch.as_tensor(frequency).double()
    n = len(sizes)
    fig, axes = plt.subplots(1, n, figsize=(3.3 * n, 3.3), layout="constrained", squeeze=False)
    for ax, (title, size) in zip(axes[0], sizes.items()):
        size = torch.as_tensor(size).double()
        for j, row in enumerate(size):
            ax.loglog(freq, row, "o", ms=4, color=SEED_COLORS[j % len(SEED_COLORS)], label=f"seed {j}", alpha=0.8)
        centre = size.log().mean() - freq.log().mean()
        grid = torch.tensor([float(freq.min()) * 0.8, float(freq.max()) * 1.25], dtype=torch.float64)
        ax.loglog(grid, (centre + grid.log()).exp(), "--", color="grey", lw=1, label="slope 1 (E1)")
        s = torch.as_tensor(slopes[title])
        ax.set_title(f"{title}\nslope {float(s.mean()):.3f} (seeds {float(s.min()):.3f}–{float(s.max()):.3f})",
                     fontsize=8)
        _frequency_axis(ax)
        ax.set_xlabel("key frequency π(s)")
    axes[0, 0].set_ylabel("update size after the first steps")
    axes[0, 0].legend(fontsize=7)
    return fig


def bin_loss_figure(run) -> Figure:
    """Loss of every key-frequency bin over training, one panel per table count (a RareTokenRun).

    Bins run from the head of the Zipf curve (dark) to its tail (light); seeds are told apart by
    line style; dashed lines: the task's ladder (H1..H3 hold for every bin). Each bin's own H0
    (dotted, in the bin's colour) differs a little from the task's, and ln 2 (dotted black), the
    loss of a uniform guess, is where every curve starts and rests before its first drop. Any other
    level a curve rests on is dotted grey, named "rest (measured)"."""
    tables = sorted(run.runs)
    colors = _bin_colors(len(run.bins))
    fig, axes = plt.subplots(1, len(tables), figsize=(3.9 * len(tables) + 0.6, 3.5), layout="constrained",
                             sharey=True, squeeze=False)
    for ax, n in zip(axes[0], tables):
        curves = run.runs[n]["bins"]  # [S, n_bins, T]
        for b, ids in enumerate(run.bins):
            share = float(run.frequency[torch.as_tensor(ids)].sum())
            for j in range(curves.shape[0]):
                ax.plot(run.steps, curves[j, b], seed_style(j), color=colors[b], lw=1.1,
                        label=f"bin {b} (keys {', '.join(map(str, ids.tolist()))}; {share:.0%} of rows)" if j == 0 else None)
        label_levels(ax, run.levels)
        for b, h0 in enumerate(run.bin_levels[:, 0].tolist()):
            ax.axhline(h0, color=colors[b], ls=":", lw=1.1, zorder=0)
        ax.axhline(math.log(2), color="black", ls=":", lw=0.9, zorder=0)
        named = [*run.levels, *run.bin_levels[:, 0].tolist(), math.log(2)]
        label_measured_rests(ax, torch.as_tensor(run.steps), torch.as_tensor(curves).flatten(0, 1), named)
        ax.annotate(f"ln 2 = {math.log(2):.3f}", (1.0, math.log(2)), xycoords=("axes fraction", "data"), xytext=(3, 4),
                    textcoords="offset points", ha="left", va="center", fontsize=7)
        ax.set_title(_variant(n), fontsize=9)
        ax.set_xlabel("step")
    axes[0, 0].set_ylabel("loss of the bin's sequences (nats)")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    styles = [plt.Line2D([], [], ls=seed_style(j), color="k", lw=1) for j in range(len(run.seeds))]
    levels = [plt.Line2D([], [], ls=":", color=colors[0], lw=1.1), plt.Line2D([], [], ls=":", color="black", lw=0.9)]
    fig.legend(handles + styles + levels, labels + [f"seed {s}" for s in run.seeds]
               + ["each bin's own H0 (its colour)", "ln 2: a uniform guess"], loc="outside lower center", ncol=4, fontsize=7)
    return fig


def rung_step_figure(run) -> Figure:
    """The step at which each bin first comes down to rung k, against the bin's key frequency.

    One panel per rung; one colour per table count; a dot per seed and a line through the seed mean.
    A bin that never gets there within the run is drawn as an x on the panel's top edge."""
    tables = sorted(run.runs)
    steps = {n: run.rung_steps(n) for n in tables}  # [S, n_bins, n_rungs]
    n_rungs = next(iter(steps.values())).shape[-1]
    share = torch.stack([run.frequency[torch.as_tensor(ids)].mean() for ids in run.bins]).double()
    top = float(run.steps[-1])
    fig, axes = plt.subplots(1, n_rungs, figsize=(3.3 * n_rungs, 3.3), layout="constrained", squeeze=False)
    for k, ax in enumerate(axes[0]):
        for c, n in enumerate(tables):
            color = TABLE_COLORS[c % len(TABLE_COLORS)]
            got = steps[n][..., k]  # [S, n_bins]
            for j in range(got.shape[0]):
                seen = torch.isfinite(got[j])
                ax.scatter(share[seen], got[j][seen], s=14, color=color, alpha=0.7)
                ax.scatter(share[~seen], [top] * int((~seen).sum()), marker="x", s=30, color=color)
            mean = got.mean(0)
            ax.plot(share, torch.where(torch.isfinite(mean), mean, torch.tensor(math.nan, dtype=mean.dtype)), "-",
                    color=color, lw=1.2, label=_variant(n))
        _frequency_axis(ax)
        ax.set_xlabel("mean key frequency of the bin")
        ax.set_title(f"halfway down to rung {k + 1} (below (H{k} + H{k + 1}) / 2)", fontsize=9)
        ax.set_ylim(0, top * 1.05)
    axes[0, 0].set_ylabel("step")
    axes[0, 0].legend(fontsize=7)
    return fig


def table_control_figure(run, n_tables: int = 1) -> Figure:
    """The control of lesson 16: ``n_tables`` tables re-injected at every layer against the same tables
    at the first hidden layer only (``RareTokenRun.first_layer_only``). Left: ‖ΔT_s‖ / ‖ΔE_s‖ per key against
    π(s), one dot per seed and key, log-log. Right: the step at which each bin is halfway down to rung
    1, against the bin's mean key frequency, with no table for reference; a line through the seed mean."""
    if n_tables not in run.runs or n_tables not in run.first_layer_only or 0 not in run.runs:
        raise ValueError(f"needs runs with 0 and {n_tables} tables and a first-layer-only run with {n_tables}")
    variants = [("every layer", run.runs[n_tables], run.rung_steps(n_tables), TABLE_COLORS[1]),
                ("first hidden layer only", run.first_layer_only[n_tables], run.rung_steps(n_tables, first_layer_only=True),
                 TABLE_COLORS[3])]
    share = torch.stack([run.frequency[torch.as_tensor(ids)].mean() for ids in run.bins]).double()
    fig, (left, right) = plt.subplots(1, 2, figsize=(8.4, 3.4), layout="constrained")
    for name, out, _, color in variants:
        ratio = (out["table_updates"] / out["key_updates"]).double()  # [S, n_keys]
        for j, row in enumerate(ratio):
            left.loglog(run.frequency, row, "o", ms=4, color=color, alpha=0.8, label=name if j == 0 else None)
    races = [(f"K = {n_tables}, {name}", steps, color) for name, _, steps, color in variants]
    for label, steps, color in races + [("no extra table", run.rung_steps(0), TABLE_COLORS[0])]:
        first = steps[..., 0]  # [S, n_bins]: halfway down to rung 1
        right.plot(share, first.mean(0), "-o", ms=3, color=color, lw=1.2, label=label)
        for j in range(first.shape[0]):
            right.scatter(share, first[j], s=12, color=color, alpha=0.6)
    _frequency_axis(left)
    left.yaxis.set_major_formatter(FormatStrFormatter("%g"))
    left.yaxis.set_minor_formatter(FormatStrFormatter("%g"))
    left.set(xlabel="key frequency π(s)", ylabel=f"‖ΔT_s‖ / ‖ΔE_s‖ after {run.early_step} steps")
    left.set_title(f"K = {n_tables}: a table row's move against its key's embedding", fontsize=9)
    left.legend(fontsize=7)
    _frequency_axis(right)
    right.set(xlabel="mean key frequency of the bin", ylabel="step", ylim=(0, None))
    right.set_title("halfway down to rung 1 (below (H0 + H1) / 2)", fontsize=9)
    right.legend(fontsize=7)
    return fig

"""Figures of the attention experiment (lesson 07, ``ctxlab attention``)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import torch
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from ctxlab.attention_exp import BAND
from ctxlab.plots.style import SEED_COLORS, label_levels, label_measured_rests, label_side_levels
from ctxlab.rungs import TOL


def attention_figure(result, gammas=None) -> Figure:
    """One column per γ, one colour per seed. Top: the loss of the attention model (solid) and of the
    same model with attention frozen uniform (dashed, in its seed's colour: where the two agree the
    dashes lie on the solid line, and the twins of three seeds stay apart where they run close), against the labelled levels, the bag's floor and the loss
    with all but one position read (dotted), and any other level a curve rests on (dotted, measured).
    Middle: the attention from the key to the position it names, with the band 1/L ± BAND.
    Bottom: ‖W_Q W_Kᵀ‖ (log scale).

    ``result`` is a :class:`ctxlab.attention_exp.AttentionResult`.
    """
    gammas = sorted(set(result.gammas) if gammas is None else {float(g) for g in gammas})
    if not set(gammas) <= set(result.gammas):
        raise ValueError(f"gammas {gammas} must be among the run's {sorted(set(result.gammas))}")
    fig, axes = plt.subplots(3, len(gammas), figsize=(5.2 * len(gammas) + 1.4, 7.8), sharex="col", squeeze=False)
    steps = result.trained.steps.numpy()
    L = result.task.seq_len
    for col, g in enumerate(gammas):
        top, middle, bottom = axes[:, col]
        for k in [k for k, gk in enumerate(result.gammas) if gk == g]:
            color = SEED_COLORS[result.seeds[k] % len(SEED_COLORS)]
            top.plot(steps, result.baseline.loss[k].numpy(), color=color, lw=1.6, ls=(0, (3, 2)), alpha=0.75)
            top.plot(steps, result.trained.loss[k].numpy(), color=color, lw=1.3, label=f"seed {result.seeds[k]}")
            middle.plot(steps, result.trained.extras["attention_to_target"][k].numpy(), color=color, lw=1.3)
            bottom.semilogy(steps, result.trained.extras["qk_norm"][k].numpy(), color=color, lw=1.3)
        label_levels(top, result.levels, result.level_names)
        label_side_levels(top, result.side_levels)
        models = [k for k, gk in enumerate(result.gammas) if gk == g]
        curves = torch.cat([result.trained.loss[models], result.baseline.loss[models]])
        named = [*result.levels, *(h for _, h in result.side_levels)]
        label_measured_rests(top, result.trained.steps, curves, named)
        top.set_title(f"γ = {g:g}   solid: attention learned; dashed: attention frozen at 1/L", fontsize=9)
        middle.axhspan(1 / L - BAND, 1 / L + BAND, color="grey", alpha=0.2, lw=0, label=f"1/L ± {BAND:g}")
        middle.set_ylim(0, 1)
        bottom.set_xlabel("gradient-descent step")
        bottom.xaxis.set_major_locator(MaxNLocator(5))
    axes[0, 0].set_ylabel("loss (nats)")
    axes[1, 0].set_ylabel("attention: key → the\nposition it names")
    axes[2, 0].set_ylabel("‖W_Q W_Kᵀ‖")
    axes[0, -1].legend(loc="upper right", fontsize=7)
    axes[1, -1].legend(loc="upper left", fontsize=7)
    fig.tight_layout()
    return fig


def attention_by_position_figure(result, gamma: float = 1.0) -> Figure:
    """One panel per seed at ``gamma``: the attention from the key to the position it names, split by
    that position (one line each), with the band 1/L ± BAND, and shaded where the loss is within
    the course's TOL (0.01) of the level with all but one position read."""
    runs = [k for k, g in enumerate(result.gammas) if g == float(gamma)]
    if not runs:
        raise ValueError(f"gamma {gamma} is not among the run's {sorted(set(result.gammas))}")
    fig, axes = plt.subplots(1, len(runs), figsize=(4.2 * len(runs), 3.0), sharey=True, squeeze=False)
    steps = result.trained.steps.numpy()
    L = result.task.seq_len
    for ax, k in zip(axes[0], runs):
        by_position = result.trained.extras["attention_by_position"][k].numpy()
        for p, style in zip(range(by_position.shape[1]), ("-", "--", ":", "-.")):
            ax.plot(steps, by_position[:, p], color=SEED_COLORS[result.seeds[k] % len(SEED_COLORS)], ls=style, lw=1.4,
                    label=f"key names position {p}")
        ax.axhspan(1 / L - BAND, 1 / L + BAND, color="grey", alpha=0.2, lw=0)
        on = (result.trained.loss[k] - result.partial_level).abs().numpy() <= TOL
        ax.fill_between(steps, 0, 1, where=on, color="gold", alpha=0.3, lw=0,
                        label=f"loss within {TOL:g} of {result.partial_name}")
        ax.set(title=f"seed {result.seeds[k]}", xlabel="gradient-descent step", ylim=(0, 1))
    axes[0, 0].set_ylabel("attention: key → the\nposition it names")
    axes[0, 0].legend(loc="upper left", fontsize=7)
    fig.tight_layout()
    return fig

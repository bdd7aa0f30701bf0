"""What every figure shares: the colour of each order, the line style of each seed, labelled levels."""

from __future__ import annotations

from ctxlab.rungs import TOL, unnamed_rests

ORDER_COLORS = ("#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e")
SEED_STYLES = ("-", "--", "-.", (0, (5, 1, 1, 1, 1, 1)))
SEED_COLORS = ("#222222", "#1f78b4", "#e6550d", "#31a354")
ATTRIBUTE_MARKERS = ("o", "^", "s", "D", "v")
NEAR = 4 * TOL  # nats: a measured rest this close to a named level has its name lifted clear of that level's
# one colour per init scale: the smallest init (largest γ) blue, then red, green, purple
GAMMA_COLORS = ("#1f78b4", "#e31a1c", "#33a02c", "#6a3d9a")


def gamma_colors(gammas) -> dict[float, str]:
    """γ -> its colour in every figure that compares init scales (largest γ, the smallest init, in blue)."""
    return {g: GAMMA_COLORS[i % len(GAMMA_COLORS)] for i, g in enumerate(sorted(set(gammas), reverse=True))}


def seed_style(j: int) -> str:
    """The line style of the j-th seed of a panel (seeds are told apart by style, orders by colour)."""
    return SEED_STYLES[j % len(SEED_STYLES)]


def label_levels(ax, levels, names=None, x=None) -> None:
    """Dashed predicted levels, each labelled at the right edge (H_k = value, or its name)."""
    for order, level in enumerate(levels):
        color = ORDER_COLORS[(order - 1) % len(ORDER_COLORS)] if order else "grey"
        ax.axhline(level, ls="--", lw=0.9, color=color, zorder=0)
        text = f"H{order} = {level:.3f}" if names is None else f"{names[order]} = {level:.3f}"
        ax.annotate(text, (1.0, level), xycoords=("axes fraction", "data"), xytext=(3, 0),
                    textcoords="offset points", ha="left", va="center", fontsize=7, color=color)


def label_sub_levels(ax, sub_levels) -> None:
    """Dotted sub-levels [(name, loss)] (``ctxlab.theory.whether_levels``), each named at the right edge in the
    colour of the stair it lies on (sub-level k between H_{k-1} and H_k takes order k's colour)."""
    for order, (name, level) in enumerate(sub_levels, 1):
        color = ORDER_COLORS[(order - 1) % len(ORDER_COLORS)]
        ax.axhline(level, ls=":", lw=0.9, color=color, zorder=0)
        ax.annotate(f"{name} = {level:.3f}", (1.0, level), xycoords=("axes fraction", "data"), xytext=(3, 0),
                    textcoords="offset points", ha="left", va="center", fontsize=7, color=color)


def label_side_levels(ax, side_levels, color: str = "grey") -> None:
    """Levels off the ladder [(name, loss)] (``ctxlab.attention_exp.side_levels``: the bag's floor, the
    partial-read level; a level a run ends on), dotted and each named at the right edge like the ladder's own."""
    for name, level in side_levels:
        ax.axhline(level, color=color, ls=":", lw=1.0, zorder=0)
        ax.annotate(f"{name} = {level:.3f}", (1.0, level), xycoords=("axes fraction", "data"), xytext=(3, 0),
                    textcoords="offset points", ha="left", va="center", fontsize=7, color=color)


def measured_rests(steps, losses, named, log: bool = False, tol: float = TOL) -> list[tuple[float, int, int]]:
    """(level, first step, last step) for the rests of the curves [K, T] at none of the ``named`` levels
    (``ctxlab.rungs.unnamed_rests``; ``log``: the figure's step axis), rests of several curves within
    ``tol`` of each other merged into one at their mean level, over the steps any of them rests there."""
    groups = []
    for rest in sorted((r for _, r in unnamed_rests(steps, losses, named, tol, log)), key=lambda r: r.level):
        if groups and rest.level - groups[-1][0].level <= tol:
            groups[-1].append(rest)
        else:
            groups.append([rest])
    return [(sum(r.level for r in g) / len(g), min(r.first for r in g), max(r.last for r in g)) for g in groups]


def label_measured_rests(ax, steps, losses, named, log: bool = False, color: str = "grey",
                         span: bool = True) -> list[tuple[float, int, int]]:
    """Draw :func:`measured_rests` dotted in ``color`` (grey, or the resting curves' own) over the steps of the rest
    (``span``; else across the axes, for a panel whose x axis is not steps), each named "rest (measured)"
    at the right edge, so that every level a figure's curves rest on is drawn and named. A segment is drawn
    on top of the curves, which rest exactly where it lies and would hide it; a line across the axes stays
    behind them. A name is lifted clear of a named level's within ``NEAR`` nats (whose own label sits at its level)."""
    rests = measured_rests(steps, losses, named, log)
    for level, first, last in rests:
        if span:
            ax.hlines(level, first, last, color=color, ls=":", lw=2.0, zorder=3)
        else:
            ax.axhline(level, color=color, ls=":", lw=1.0, zorder=0)
        nearest = min(named, key=lambda h: abs(h - level), default=None)
        lift = 0 if nearest is None or abs(nearest - level) > NEAR else (5 if level > nearest else -5)
        ax.annotate(f"rest (measured) = {level:.3f}", (1.0, level), xycoords=("axes fraction", "data"),
                    xytext=(3, lift), textcoords="offset points", ha="left", va="center", fontsize=7, color=color)
    return rests


def token_ticks(ax, names, axis: str = "y", every: int = 1) -> None:
    """Token names as tick labels, every ``every``-th one, on the y axis, the x axis or both."""
    ticks = list(range(0, len(names), every))
    labels = [names[i] for i in ticks]
    if axis in ("y", "both"):
        ax.set_yticks(ticks, labels, fontsize=6)
    if axis in ("x", "both"):
        ax.set_xticks(ticks, labels, fontsize=6, rotation=90)


"""Attention explorer: the mean attention map at a step, and when ‖W_Q W_Kᵀ‖ wakes up against the loss.

At small init attention is uniform and the query-key product is tiny; it grows only once the
value path has learned what it can. One batched Emb-Attention sweep over γ (plain GD, the pointer
task of lesson 07 by default) records both.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch
from matplotlib.figure import Figure

from ctxlab.attention_exp import (
    ATTENTION_MODEL,
    ATTENTION_PROFILES,
    LEVEL_NAMES,
    LR,
    POINTER_TASK,
    side_levels,
    train_attention,
)
from ctxlab.models import ensemble_grid
from ctxlab.plots import label_levels, label_measured_rests, label_side_levels
from ctxlab.tasks import make_task
from ctxlab.widgets._common import Dashboard, ResultCache


@dataclass(frozen=True)
class AttentionSettings:
    """Everything that determines an attention sweep; hashable, so it is the cache key."""

    task: str = "pointer"
    task_args: tuple[tuple[str, object], ...] = tuple(POINTER_TASK.items())
    gammas: tuple[float, ...] = (0.75, 1.0, 1.25)
    seeds: tuple[int, ...] = (0,)
    lr: float = LR
    steps: int = ATTENTION_PROFILES["quick"]["steps"]
    d: int = ATTENTION_MODEL["d"]
    hidden: int = ATTENTION_MODEL["hidden"]
    record_every: int = 50


@dataclass
class AttentionSweep:
    """loss [G, S, T]; attention [G, S, T, R, L], the recorded map (R = n_ctx rows, the key's attention
    per position it names, for a pointer task; else R = L query positions, the mean over the data);
    qk_norm [G, S, T]. ``levels`` is the task's ladder (named by ``level_names``; none: H0, H1, ...),
    ``side_levels`` the named levels off it that the loss rests on (the bag's floor, the partial read)."""

    settings: AttentionSettings
    steps: torch.Tensor
    loss: torch.Tensor
    attention: torch.Tensor
    qk_norm: torch.Tensor
    levels: list[float]
    seconds: float
    level_names: tuple[str, ...] = ()
    side_levels: tuple[tuple[str, float], ...] = ()

    @property
    def pointer(self) -> bool:
        """True when the map's rows are the positions the key names (a pointer task), not queries."""
        return self.attention.shape[-2] != self.attention.shape[-1]


def compute_attention_sweep(settings: AttentionSettings, progress: bool | None = None) -> AttentionSweep:
    """Train Emb-Attention for every (γ, seed) in one ensemble, recording attention and ‖W_Q W_Kᵀ‖."""
    if not settings.gammas or not settings.seeds:
        raise ValueError("a sweep needs at least one γ and one seed")
    task = make_task(settings.task, **dict(settings.task_args))
    gammas, seeds = ensemble_grid(settings.gammas, settings.seeds)
    start = time.perf_counter()
    traj = train_attention(task, gammas, seeds, settings.steps, settings.lr, uniform_twin=False, d=settings.d,
                           hidden=settings.hidden, record_every=settings.record_every, device="cpu", progress=progress)
    G, S, T = len(settings.gammas), len(settings.seeds), len(traj.steps)
    return AttentionSweep(
        settings=settings,
        steps=traj.steps,
        loss=traj.loss.reshape(G, S, T),
        attention=traj.extras["attention_map"].reshape(G, S, T, *traj.extras["attention_map"].shape[-2:]),
        qk_norm=traj.extras["qk_norm"].reshape(G, S, T),
        levels=task.plateau_levels(),
        seconds=time.perf_counter() - start,
        level_names=LEVEL_NAMES if task.name == "pointer" else (),
        side_levels=tuple(side_levels(task)),
    )


_SWEEPS = ResultCache(maxsize=4, result_type=AttentionSweep)


def attention_sweep(settings: AttentionSettings | None = None, cache_dir=None) -> AttentionSweep:
    """Cached :func:`compute_attention_sweep`."""
    settings = settings or AttentionSettings()
    return _SWEEPS.get(settings, lambda: compute_attention_sweep(settings), cache_dir)


def draw_attention(sweep: AttentionSweep, gamma_index: int, step_index: int, seed_index: int = 0,
                   figsize=(13.0, 3.3), dpi: int = 72) -> Figure:
    """Four panels: the attention map at a step (for a pointer task the key's attention, one row per
    position it names; else every query's, averaged over the data); ‖W_Q W_Kᵀ‖ relative to its init
    over training; the same against the loss; the loss with every level it rests on drawn and named
    (last, so that the names have the right margin). No twin axes, and plain tick labels (no offset,
    linear ratio axes from 0) even when the loss or the norm sits flat."""
    G, S, T = sweep.loss.shape
    for name, value, size in (("gamma_index", gamma_index, G), ("seed_index", seed_index, S),
                              ("step_index", step_index, T)):
        if not 0 <= value < size:
            raise IndexError(f"{name} must lie in [0, {size}), got {value}")
    steps, step = sweep.steps.numpy(), int(sweep.steps[step_index])
    loss, qk = sweep.loss[gamma_index, seed_index].numpy(), sweep.qk_norm[gamma_index, seed_index].numpy()
    fig = Figure(figsize=figsize, dpi=dpi)
    ax_map, ax_time, ax_qk, ax_loss = fig.subplots(1, 4)
    fig.subplots_adjust(left=0.04, right=0.86, bottom=0.16, top=0.88, wspace=0.55)

    attn = sweep.attention[gamma_index, seed_index, step_index].numpy()
    R, L = attn.shape
    ax_map.imshow(attn, vmin=0, vmax=1, cmap="viridis", interpolation="nearest")
    for q in range(R):
        for k in range(L):
            ax_map.text(k, q, f"{attn[q, k]:.2f}", ha="center", va="center", fontsize=8,
                        color="white" if attn[q, k] < 0.6 else "black")
    if sweep.pointer:  # positions counted from 0, as the key tokens name them (k3→0 points at position 0)
        ax_map.set_xticks(range(L), [str(i) for i in range(L - 1)] + ["key"])
        ax_map.set_yticks(range(R), [str(i) for i in range(R)])
        ax_map.set(xlabel="attended position", ylabel="the key names", title=f"the key's attention, step {step}")
    else:
        ax_map.set_xticks(range(L), [f"x{i + 1}" for i in range(L)])
        ax_map.set_yticks(range(R), [f"x{i + 1}" for i in range(R)])
        ax_map.set(xlabel="key position", ylabel="query position", title=f"mean attention, step {step}")

    low, high = min(sweep.levels), max(sweep.levels)
    span = (min(low, float(loss.min())) - 0.03, max(high, float(loss.max())) + 0.03)
    ax_loss.plot(steps, loss, color="black", lw=1.5)
    label_levels(ax_loss, sweep.levels, sweep.level_names or None)
    label_side_levels(ax_loss, sweep.side_levels)
    label_measured_rests(ax_loss, sweep.steps, sweep.loss[gamma_index, seed_index][None],
                         [*sweep.levels, *(h for _, h in sweep.side_levels)])
    ax_loss.axvline(step, color="crimson", lw=1)
    ax_loss.set_ylim(*span)
    ax_loss.set(xlabel="step", ylabel="loss (nats)", title=f"loss, γ = {sweep.settings.gammas[gamma_index]:g}, "
                f"seed {sweep.settings.seeds[seed_index]} (red: step {step})")

    growth = qk / qk[0]
    top = max(2.0, float(growth.max()) * 1.05)
    ax_time.plot(steps, growth, color="tab:blue", lw=1.2)
    ax_time.axvline(step, color="crimson", lw=1)
    ax_time.set_ylim(0, top)
    ax_time.set(xlabel="step", ylabel="‖W_Q W_Kᵀ‖ / at init", title="query-key product")

    ax_qk.plot(loss, growth, color="tab:blue", lw=1.2)
    ax_qk.plot(loss[step_index], growth[step_index], "o", color="crimson")
    ax_qk.set_xlim(span[1], span[0])  # loss falls to the right
    ax_qk.set_ylim(0, top)
    ax_qk.set(xlabel="loss (nats, falling →)", ylabel="‖W_Q W_Kᵀ‖ / at init", title="query-key growth vs loss")
    for ax in (ax_loss, ax_time, ax_qk):
        ax.ticklabel_format(useOffset=False, style="plain")
    return fig


class AttentionExplorer(Dashboard):
    """The attention dashboard; build it with :func:`attention_explorer`."""

    def __init__(self, settings: AttentionSettings | None = None, cache_dir=None,
                 sweep: AttentionSweep | None = None) -> None:
        import ipywidgets as w

        super().__init__()
        self.sweep = attention_sweep(settings, cache_dir) if sweep is None else sweep
        settings = self.sweep.settings
        last, every = int(self.sweep.steps[-1]), settings.record_every
        self.out = w.Output(layout=w.Layout(min_height="250px"))
        self.gamma = w.SelectionSlider(options=[(f"{g:g}", i) for i, g in enumerate(settings.gammas)],
                                       description="γ", continuous_update=False)
        self.step = w.IntSlider(value=last // 2 // every * every, min=0, max=last, step=every,
                                description="step", continuous_update=False)
        self.play = w.Play(value=self.step.value, min=0, max=last, step=every, interval=150, description="play")
        w.jslink((self.play, "value"), (self.step, "value"))
        self.seed = w.Dropdown(options=[(str(s), i) for i, s in enumerate(settings.seeds)], value=0, description="seed")
        for control in (self.gamma, self.step, self.seed):
            control.observe(lambda _: self.redraw(), names="value")
        self.widget = w.VBox([w.HBox([self.gamma, self.seed]), w.HBox([self.play, self.step]), self.out])
        self.redraw()

    def redraw(self) -> None:
        """Index the cached sweep with the current controls and redraw."""
        ti = int(torch.argmin((self.sweep.steps - self.step.value).abs()))
        self._show(draw_attention(self.sweep, self.gamma.value, ti, self.seed.value), self.out)


def sweep_from_experiment(result) -> AttentionSweep:
    """The explorer's view of a :func:`ctxlab.attention_exp.attention_experiment` run (its learned-attention
    half), so a lesson can explore the run it has just made without training again."""
    gammas, seeds = sorted(set(result.gammas)), sorted(set(result.seeds))
    G, S = len(gammas), len(seeds)
    traj = result.trained
    if [(g, s) for g in gammas for s in seeds] != list(zip(result.gammas, result.seeds)):
        raise ValueError("the run is not a gamma-major (gamma, seed) grid")
    T = len(traj.steps)
    cfg = result.settings
    settings = AttentionSettings(task=result.task.name, task_args=tuple(POINTER_TASK.items()),
                                 gammas=tuple(gammas), seeds=tuple(seeds), lr=cfg["lr"], steps=cfg["steps"], d=cfg["d"],
                                 hidden=cfg["hidden"], record_every=cfg["record_every"])
    return AttentionSweep(settings, traj.steps, traj.loss.reshape(G, S, T),
                          traj.extras["attention_map"].reshape(G, S, T, *traj.extras["attention_map"].shape[-2:]),
                          traj.extras["qk_norm"].reshape(G, S, T),
                          list(result.levels), result.seconds, tuple(result.level_names), tuple(result.side_levels))


def attention_explorer_for(result) -> AttentionExplorer:
    """The attention dashboard over an :func:`ctxlab.attention_exp.attention_experiment` run (no training)."""
    return AttentionExplorer(sweep=sweep_from_experiment(result))


def attention_explorer(settings: AttentionSettings | None = None, cache_dir=None) -> AttentionExplorer:
    """Build the attention dashboard (trains or loads its sweep first); display the returned object."""
    return AttentionExplorer(settings or AttentionSettings(), cache_dir)

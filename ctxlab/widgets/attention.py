"""Attention explorer: the mean attention map at a step, and when ‖W_Q W_Kᵀ‖ wakes up against the loss.

At small init attention is uniform and the query-key product is tiny; it grows only once the
value path has learned what it can. One batched Emb-Attention sweep over γ records both.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch
from matplotlib.figure import Figure

from ctxlab.models import ensemble_grid, make_model
from ctxlab.tasks import make_task
from ctxlab.train import train
from ctxlab.widgets._common import Dashboard, ResultCache


@dataclass(frozen=True)
class AttentionSettings:
    """Everything that determines an attention sweep; hashable, so it is the cache key."""

    task: str = "hierarchy"
    task_args: tuple[tuple[str, object], ...] = (("block", 6),)
    gammas: tuple[float, ...] = (0.5, 0.75, 1.0, 1.25)
    seeds: tuple[int, ...] = (0,)
    lr: float = 1.0
    steps: int = 1500
    d: int = 16
    hidden: int = 32
    record_every: int = 25


@dataclass
class AttentionSweep:
    """loss [G, S, T]; attention [G, S, T, L, L] (mean over the data); qk_norm [G, S, T]."""

    settings: AttentionSettings
    steps: torch.Tensor
    loss: torch.Tensor
    attention: torch.Tensor
    qk_norm: torch.Tensor
    levels: list[float]
    seconds: float


def compute_attention_sweep(settings: AttentionSettings, progress: bool | None = None) -> AttentionSweep:
    """Train Emb-Attention for every (γ, seed) in one ensemble, recording attention and ‖W_Q W_Kᵀ‖."""
    if not settings.gammas or not settings.seeds:
        raise ValueError("a sweep needs at least one γ and one seed")
    task = make_task(settings.task, **dict(settings.task_args))
    gammas, seeds = ensemble_grid(settings.gammas, settings.seeds)
    model = make_model("attention", task, d=settings.d, hidden=settings.hidden, gamma=gammas, seed=seeds)
    x = task.population.x
    probes = {"attention": lambda m: m.attention(x).mean(1), "qk_norm": lambda m: m.qk_norm()}
    start = time.perf_counter()
    traj = train(model, task.population, settings.steps, lr=settings.lr, record_every=settings.record_every,
                 probes=probes, device="cpu", progress=progress, desc="attention sweep")
    G, S, T = len(settings.gammas), len(settings.seeds), len(traj.steps)
    L = task.seq_len
    return AttentionSweep(
        settings=settings,
        steps=traj.steps,
        loss=traj.loss.reshape(G, S, T),
        attention=traj.extras["attention"].reshape(G, S, T, L, L),
        qk_norm=traj.extras["qk_norm"].reshape(G, S, T),
        levels=task.plateau_levels(),
        seconds=time.perf_counter() - start,
    )


_SWEEPS = ResultCache(maxsize=4)


def attention_sweep(settings: AttentionSettings | None = None, cache_dir=None) -> AttentionSweep:
    """Cached :func:`compute_attention_sweep`."""
    settings = settings or AttentionSettings()
    return _SWEEPS.get(settings, lambda: compute_attention_sweep(settings), cache_dir)


def draw_attention(sweep: AttentionSweep, gamma_index: int, step_index: int, seed_index: int = 0,
                   figsize=(11.0, 3.3), dpi: int = 72) -> Figure:
    """Mean attention map at a step; loss and ‖W_Q W_Kᵀ‖ over training; ‖W_Q W_Kᵀ‖ against the loss."""
    G, S, T = sweep.loss.shape
    for name, value, size in (("gamma_index", gamma_index, G), ("seed_index", seed_index, S),
                              ("step_index", step_index, T)):
        if not 0 <= value < size:
            raise IndexError(f"{name} must lie in [0, {size}), got {value}")
    steps, step = sweep.steps.numpy(), int(sweep.steps[step_index])
    loss, qk = sweep.loss[gamma_index, seed_index].numpy(), sweep.qk_norm[gamma_index, seed_index].numpy()
    fig = Figure(figsize=figsize, dpi=dpi)
    ax_map, ax_time, ax_qk = fig.subplots(1, 3)
    fig.subplots_adjust(left=0.05, right=0.97, bottom=0.15, top=0.88, wspace=0.4)

    attn = sweep.attention[gamma_index, seed_index, step_index].numpy()
    L = attn.shape[0]
    ax_map.imshow(attn, vmin=0, vmax=1, cmap="viridis", interpolation="nearest")
    for q in range(L):
        for k in range(L):
            ax_map.text(k, q, f"{attn[q, k]:.2f}", ha="center", va="center", fontsize=8,
                        color="white" if attn[q, k] < 0.6 else "black")
    ticks = [f"x{i + 1}" for i in range(L)]
    ax_map.set_xticks(range(L), ticks)
    ax_map.set_yticks(range(L), ticks)
    ax_map.set(xlabel="key", ylabel="query", title=f"mean attention, step {step}")

    ax_time.plot(steps, loss, color="black", lw=1.5)
    for level in sweep.levels:
        ax_time.axhline(level, ls="--", lw=0.8, color="grey")
    ax_time.axvline(step, color="crimson", lw=1)
    ax_time.set(xlabel="step", ylabel="loss (nats)", title=f"γ = {sweep.settings.gammas[gamma_index]:g}")
    twin = ax_time.twinx()
    twin.semilogy(steps, qk, color="tab:blue", lw=1.2)
    twin.set_ylabel("‖W_Q W_Kᵀ‖", color="tab:blue")

    ax_qk.semilogy(loss, qk, color="tab:blue", lw=1.2)
    ax_qk.plot(loss[step_index], qk[step_index], "o", color="crimson")
    ax_qk.invert_xaxis()
    ax_qk.set(xlabel="loss (nats, falling →)", ylabel="‖W_Q W_Kᵀ‖", title="query-key growth vs loss")
    return fig


class AttentionExplorer(Dashboard):
    """The attention dashboard; build it with :func:`attention_explorer`."""

    def __init__(self, settings: AttentionSettings, cache_dir=None) -> None:
        import ipywidgets as w

        super().__init__()
        self.sweep = attention_sweep(settings, cache_dir)
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


def attention_explorer(settings: AttentionSettings | None = None, cache_dir=None) -> AttentionExplorer:
    """Build the attention dashboard (trains or loads its sweep first); display the returned object."""
    return AttentionExplorer(settings or AttentionSettings(), cache_dir)

"""The staircase explorer's data: a (γ × seed) sweep of :func:`ctxlab.experiments.staircase`, its settings
(the cache key) and the per-session cache; nothing here draws."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from ctxlab.env import profile as current_profile
from ctxlab.experiments import HEADLINE_TASK, default_lr
from ctxlab.tasks import make_task
from ctxlab.widgets._common import ResultCache, progress_probe

# The learning rate each optimizer toggle uses on the headline task.
OPTIMIZER_LR = {opt: default_lr(len(HEADLINE_TASK["mix"]), opt) for opt in ("gd", "adam")}

# Both profiles train the headline model and task (a narrower MLP loses the H1 rung); quick: 5 γ x 2
# seeds, under a minute on 2 CPU cores; full: 8 γ x 3 seeds.
HEADLINE_ARGS = (("block", HEADLINE_TASK["block"]), ("n_values", HEADLINE_TASK["n_values"]))
PROFILE_SETTINGS = {
    "quick": {"task_args": HEADLINE_ARGS, "gammas": (0.5, 0.75, 1.0, 1.25, 1.5), "seeds": (0, 1), "steps": 4000,
              "d": 32, "hidden": 128, "record_every": 20},
    "full": {"task_args": HEADLINE_ARGS, "steps": 4000, "d": 32, "hidden": 128, "record_every": 10},
}
GAMMA_GRID = (0.5, 0.625, 0.75, 0.875, 1.0, 1.125, 1.25, 1.5)


@dataclass(frozen=True)
class SweepSettings:
    """Everything that determines a sweep; hashable, so it is the cache key."""

    task: str = "hierarchy"
    task_args: tuple[tuple[str, object], ...] = HEADLINE_ARGS
    gammas: tuple[float, ...] = GAMMA_GRID
    seeds: tuple[int, ...] = (0, 1, 2)
    optimizer: str = "gd"
    lr: float = 1.0
    steps: int = 4000
    d: int = 32
    hidden: int = 128
    record_every: int = 20


def sweep_settings(optimizer: str = "gd", profile: str | None = None, **overrides) -> SweepSettings:
    """Settings for the current scale profile, with the optimizer's default learning rate."""
    if optimizer not in OPTIMIZER_LR:
        raise ValueError(f"the explorer toggles between {sorted(OPTIMIZER_LR)}, got optimizer {optimizer!r}")
    sizes = PROFILE_SETTINGS[profile or current_profile()]
    return SweepSettings(**{**sizes, "optimizer": optimizer, "lr": OPTIMIZER_LR[optimizer], **overrides})


@dataclass
class StaircaseSweep:
    """A trained (γ × seed) grid. loss [G, S, T]; embeddings [G, S, T, V, d]; alignment [G, S, O, T]
    = the share of ||E(t) - E(0)||^2 in the directions order o adds (:func:`ctxlab.align.order_shares`),
    o = 1..O, whose chance levels are ``chance`` [O]."""

    settings: SweepSettings
    steps: torch.Tensor
    loss: torch.Tensor
    embeddings: torch.Tensor
    alignment: torch.Tensor
    levels: list[float]
    chance: list[float]
    token_names: tuple[str, ...]
    roles: tuple[str, ...]
    seconds: float
    sub_levels: list = field(default_factory=list)  # [(name, loss)]: the whether-levels of a Z_n task, n >= 3

    @property
    def gammas(self) -> tuple[float, ...]:
        return self.settings.gammas

    @property
    def seeds(self) -> tuple[int, ...]:
        return self.settings.seeds

    @property
    def orders(self) -> list[int]:
        return list(range(1, self.alignment.shape[2] + 1))


def compute_sweep(settings: SweepSettings, report: Callable[[float], None] | None = None,
                  progress: bool | None = False) -> StaircaseSweep:
    """Train every (γ, seed) of ``settings`` as one ensemble (uncached): :func:`ctxlab.experiments.staircase`
    on the settings' task and sizes, seen as a sweep."""
    from ctxlab.experiments import staircase

    if not settings.gammas or not settings.seeds:
        raise ValueError("a sweep needs at least one γ and one seed")
    if settings.steps < 1 or settings.record_every < 1:
        raise ValueError(f"steps and record_every must be positive, got {settings.steps}, {settings.record_every}")
    task = make_task(settings.task, **dict(settings.task_args))
    n_records = len(range(0, settings.steps + 1, settings.record_every)) + 1
    probes = {"_progress": progress_probe(n_records, report)} if report else None
    result = staircase(settings.gammas, settings.seeds, settings.steps, lr=settings.lr, optimizer=settings.optimizer,
                       device="cpu", progress=progress, task=task, d=settings.d, hidden=settings.hidden,
                       record_every=settings.record_every, probes=probes)
    return sweep_from_result(result, settings)


_SWEEPS = ResultCache(maxsize=6, result_type=StaircaseSweep)


def staircase_sweep(settings: SweepSettings | None = None, cache_dir=None,
                    report: Callable[[float], None] | None = None) -> StaircaseSweep:
    """The sweep for ``settings`` (default: this profile, GD), trained once per session and cached."""
    settings = settings or sweep_settings()
    # no report (a blocking build): show a tqdm bar instead
    return _SWEEPS.get(settings, lambda: compute_sweep(settings, report=report, progress=None if report is None else False),
                       cache_dir)


def sweep_from_result(result, settings: SweepSettings | None = None) -> StaircaseSweep:
    """A finished :func:`ctxlab.experiments.staircase` run as a sweep, so the explorer shows the
    very run a lesson just trained, at no extra training cost (``settings``: those it was trained
    with, when known; else read back from the run)."""
    traj = result.trajectory
    gammas = tuple(dict.fromkeys(float(g) for g in result.gammas))
    seeds = tuple(dict.fromkeys(int(s) for s in result.seeds))
    if list(zip(map(float, result.gammas), map(int, result.seeds))) != [(g, s) for g in gammas for s in seeds]:
        raise ValueError("the explorer needs a full γ-major (γ × seed) grid, as staircase() trains one")
    task = result.task
    G, S, T = len(gammas), len(seeds), len(traj.steps)
    if settings is None:
        lr, config = traj.config.get("lr", 1.0), traj.config
        task_args = (("block", task.info["block"]), ("n_values", task.n_labels), ("mix", tuple(task.info["mix"])))
        settings = SweepSettings(task=task.name, task_args=task_args, gammas=gammas, seeds=seeds,
                                 optimizer=config.get("optimizer", "gd"),
                                 lr=float(lr[0] if isinstance(lr, (list, tuple)) else lr), steps=int(traj.steps[-1]),
                                 d=traj.embeddings.shape[-1], hidden=config["hidden"],
                                 record_every=config["record_every"])
    return StaircaseSweep(
        settings=settings,
        steps=traj.steps,
        loss=traj.loss.reshape(G, S, T),
        embeddings=traj.embeddings.reshape(G, S, T, *traj.embeddings.shape[2:]),
        alignment=result.shares.transpose(1, 2).float().reshape(G, S, result.shares.shape[-1], T),
        levels=list(result.levels),
        chance=list(result.chance),
        token_names=task.token_names,
        roles=task.roles,
        seconds=result.seconds,
        sub_levels=[(name, float(h)) for name, h in result.sub_levels],
    )

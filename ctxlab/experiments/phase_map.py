"""The γ × learning-rate phase map of lesson 08: which cells rest on the stairs, which wait, which diverge."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from ctxlab.env import profile as current_profile
from ctxlab.models import make_model
from ctxlab.rungs import measure_runs, stair_onsets
from ctxlab.tasks import hierarchy_task
from ctxlab.theory import plateau_levels
from ctxlab.train import Trajectory, train

PHASE_MAP_PROFILES = {
    "quick": {"gammas": (0.5, 0.75, 1.0, 1.25, 1.5), "lrs": (0.25, 0.5, 1.0, 2.0, 4.0, 8.0), "steps": 800,
              "record_every": 5, "d": 16, "hidden": 32, "block": 6},
    "full": {"gammas": (0.5, 0.625, 0.75, 0.875, 1.0, 1.125, 1.25, 1.375, 1.5),
             "lrs": (0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 8.0, 16.0), "steps": 4000,
             "record_every": 5, "d": 32, "hidden": 128, "block": 9},
}


@dataclass
class PhaseMap:
    """One batched run over a gamma x learning-rate grid, measured per cell ([G, R] tensors, float64).

    wait: first step below the midpoint of H_0 and H_1 (NaN: never got there or diverged);
    plateau: steps the loss rests on H_0 = ln C (its dwell there, :mod:`ctxlab.rungs`; NaN: diverged);
    final: loss at the last step (NaN where the run diverged); diverged: the loss became NaN,
    infinite or exploded (see :class:`ctxlab.train.DivergenceWatch`); the model was frozen there.
    """

    gammas: list[float]
    lrs: list[float]
    wait: torch.Tensor
    plateau: torch.Tensor
    final: torch.Tensor
    diverged: torch.Tensor
    levels: list[float]
    trajectory: Trajectory
    seconds: float

    @property
    def dead(self) -> torch.Tensor:
        """[G, R] runs that did not diverge and end within 0.01 of H_0 without having rested there the
        whole run: they left it and came back (a dead network at the edge of stability, not a rest)."""
        last = float(self.trajectory.steps[-1])
        return ~self.diverged & ((self.final - self.levels[0]).abs() < 0.01) & (self.plateau < last)

    def cell(self, gamma: float, lr: float) -> int:
        """Model index of grid cell (gamma, lr) in the trajectory (gamma-major)."""
        return self.gammas.index(float(gamma)) * len(self.lrs) + self.lrs.index(float(lr))


def _phase_settings(profile: str | None, overrides: dict) -> dict:
    cfg = dict(PHASE_MAP_PROFILES[profile or current_profile()])
    unknown = set(overrides) - set(cfg)
    if unknown:
        raise ValueError(f"unknown settings {sorted(unknown)}; choose from {sorted(cfg)}")
    cfg.update({k: v for k, v in overrides.items() if v is not None})
    if len(cfg["gammas"]) < 1 or len(cfg["lrs"]) < 1:
        raise ValueError("a phase map needs at least one gamma and one learning rate")
    return cfg


def _phase_run(cfg: dict, gammas: list[float], lrs: list[float], seed: int, device, progress) -> Trajectory:
    task = hierarchy_task(block=cfg["block"])
    model = make_model("mlp", task, d=cfg["d"], hidden=cfg["hidden"], gamma=gammas, seed=[seed] * len(gammas))
    return train(model, task.population, cfg["steps"], lr=lrs, record_every=cfg["record_every"],
                 device=device, progress=progress, desc="phase map", on_divergence="record")


def phase_map(profile: str | None = None, seed: int = 0, device=None, progress: bool | None = None,
              **overrides) -> PhaseMap:
    """Train Emb-MLP (full-batch GD) on every (gamma, lr) cell as ONE ensemble and measure each cell.

    ``overrides`` replace profile settings: gammas, lrs, steps, record_every, d, hidden, block.
    """
    cfg = _phase_settings(profile, overrides)
    gammas, lrs = [float(g) for g in cfg["gammas"]], [float(r) for r in cfg["lrs"]]
    grid_g = [g for g in gammas for _ in lrs]
    grid_r = [r for _ in gammas for r in lrs]
    start = time.perf_counter()
    traj = _phase_run(cfg, grid_g, grid_r, seed, device, progress)
    seconds = time.perf_counter() - start
    levels = plateau_levels(hierarchy_task(block=cfg["block"]).population)
    return _measure_phase_map(gammas, lrs, traj, levels, seconds)


def _measure_phase_map(gammas: list[float], lrs: list[float], traj: Trajectory, levels: list[float],
                       seconds: float) -> PhaseMap:
    shape = (len(gammas), len(lrs))
    loss = traj.loss.to(torch.float64)
    diverged = (traj.diverged_at >= 0) | ~torch.isfinite(loss).all(dim=1)
    onsets = stair_onsets(traj.steps, traj.loss, levels)[:, 0].to(torch.float64)
    wait = torch.where((onsets < 0) | diverged, torch.nan, onsets)
    finite = [k for k in range(traj.n_models) if not bool(diverged[k])]
    rests = dict(zip(finite, measure_runs(traj.steps, traj.loss[finite], levels))) if finite else {}
    plateau = torch.tensor([float(rests[k].rungs[0].dwell) if k in rests else 0.0 for k in range(traj.n_models)],
                           dtype=torch.float64)
    plateau = torch.where(diverged, torch.nan, plateau)
    final = torch.where(diverged, torch.nan, loss[:, -1])
    return PhaseMap(gammas, lrs, wait.reshape(shape), plateau.reshape(shape), final.reshape(shape),
                    diverged.reshape(shape), list(levels), traj, seconds)


def phase_map_one_by_one(cells: Sequence[tuple[float, float]], profile: str | None = None, seed: int = 0,
                         device=None, **overrides) -> list[float]:
    """Seconds to train each (gamma, lr) cell on its own, with the phase map's settings: the baseline
    a batched run is compared with."""
    cfg = _phase_settings(profile, overrides)
    seconds = []
    for g, r in cells:
        start = time.perf_counter()
        _phase_run(cfg, [float(g)], [float(r)], seed, device, False)
        seconds.append(time.perf_counter() - start)
    return seconds

"""Headline experiments, shared by the lessons and the ``ctxlab`` command.

:func:`staircase` trains Emb-MLP on the hierarchy task over a grid of init exponents and seeds
in one batched run, then measures each stair: its onset (first step below the midpoint of two
neighbouring predicted plateaus) and the plateau found nearest to the predicted level.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from ctxlab.align import Plateau, align_trajectory, find_plateaus, match_plateaus, stair_onsets
from ctxlab.env import profile as current_profile
from ctxlab.models import ensemble_grid, make_model
from ctxlab.signatures import label_signature
from ctxlab.tasks import hierarchy_task
from ctxlab.theory import plateau_levels
from ctxlab.train import Trajectory, train

# Sizes per scale profile: quick fits a minute on 2 CPU cores, full is for a GPU.
STAIRCASE_PROFILES = {
    "quick": {"steps": 4000, "record_every": 5, "d": 32, "hidden": 128},
    "full": {"steps": 10000, "record_every": 5, "d": 64, "hidden": 256},
}


@dataclass
class StaircaseResult:
    """A staircase run: the trajectory, the predicted levels and what was measured per model."""

    task: str
    gammas: list[float]
    seeds: list[int]
    trajectory: Trajectory
    levels: list[float]  # predicted plateau losses H_0 .. H_L
    onsets: torch.Tensor  # [K, L]: onset step of stairs 1..L (-1: not reached)
    plateaus: list[list[Plateau]]  # [K]: every plateau found in run k, sub-levels included
    stairs: list[list[Plateau | None]]  # [K][L]: the plateau matched to H_1 .. H_L
    alignment: dict[str, torch.Tensor]  # signature name -> [K, T] CKA(E - E0, Delta S^k)
    seconds: float

    def to_json(self) -> dict:
        runs = []
        for k, (g, s) in enumerate(zip(self.gammas, self.seeds)):
            stairs = [
                {
                    "order": order,
                    "predicted_loss": round(self.levels[order], 6),
                    "measured_plateau_loss": None if stair is None else round(stair.level, 6),
                    "plateau_steps": 0 if stair is None else stair.length,
                    "onset_step": None if int(self.onsets[k, order - 1]) < 0 else int(self.onsets[k, order - 1]),
                }
                for order, stair in enumerate(self.stairs[k], start=1)
            ]
            runs.append({
                "gamma": g, "seed": s, "stairs": stairs,
                "plateaus": [{"start": p.start, "stop": p.stop, "level": round(p.level, 6)} for p in self.plateaus[k]],
                "final_loss": round(float(self.trajectory.loss[k, -1]), 6),
            })
        return {"task": self.task, "gammas": sorted(set(self.gammas)), "runs": runs, "seconds": round(self.seconds, 2)}

    def table(self) -> str:
        """A plain-text table: one row per run, onset step and plateau loss of each stair."""
        orders = range(1, len(self.levels))
        head = f"{'gamma':>5} {'seed':>4} " + " ".join(f"{'onset' + str(o):>7} {'H' + str(o) + ' meas':>8}" for o in orders) + f" {'final':>7}"
        pred = f"{'':>5} {'pred':>4} " + " ".join(f"{'':>7} {self.levels[o]:>8.4f}" for o in orders)
        rows = [head, pred]
        for k, (g, s) in enumerate(zip(self.gammas, self.seeds)):
            cells = []
            for o in orders:
                onset = int(self.onsets[k, o - 1])
                stair = self.stairs[k][o - 1]
                cells.append(f"{onset if onset >= 0 else '-':>7} {'-' if stair is None else f'{stair.level:.4f}':>8}")
            rows.append(f"{g:>5g} {s:>4d} " + " ".join(cells) + f" {float(self.trajectory.loss[k, -1]):>7.4f}")
        return "\n".join(rows)


def measure_plateaus(traj: Trajectory, levels: list[float]) -> tuple[torch.Tensor, list[list[Plateau]], list[list[Plateau | None]]]:
    """Per run: the onset step of stairs 1..L, every plateau found, and the one matched to each H_k."""
    onsets = stair_onsets(traj.steps, traj.loss, levels)
    found = [find_plateaus(traj.steps, traj.loss[k]) for k in range(traj.n_models)]
    matched = [match_plateaus(p, levels)[1:] for p in found]
    return onsets, found, matched


def staircase(
    gammas=(0.5, 1.0, 1.5),
    seeds=(0, 1, 2),
    steps: int | None = None,
    lr: float = 1.0,
    optimizer: str = "gd",
    device=None,
    profile: str | None = None,
    progress: bool | None = None,
) -> StaircaseResult:
    """Train Emb-MLP (GELU, no biases) on the hierarchy task for every (gamma, seed) in one batch."""
    sizes = STAIRCASE_PROFILES[profile or current_profile()]
    steps = sizes["steps"] if steps is None else steps
    task = hierarchy_task()
    g, s = ensemble_grid(gammas, seeds)
    model = make_model("mlp", task, d=sizes["d"], hidden=sizes["hidden"], gamma=g, seed=s)
    start = time.perf_counter()
    traj = train(model, task.population, steps, optimizer=optimizer, lr=lr,
                 record_every=sizes["record_every"], device=device, progress=progress, desc="staircase")
    seconds = time.perf_counter() - start
    levels = plateau_levels(task.population)
    onsets, plateaus, stairs = measure_plateaus(traj, levels)
    signatures = [label_signature(task.population, k, "incremental") for k in range(1, task.seq_len + 1)]
    alignment = align_trajectory(traj, signatures, "cka", relative_to_init=True)
    return StaircaseResult(task.name, g, s, traj, levels, onsets, plateaus, stairs, alignment, seconds)


def run_staircase_command(args) -> int:
    """``ctxlab staircase``: train, print the table, save the figure (and the JSON)."""
    from ctxlab.plots import staircase_figure

    if args.seeds < 1:
        raise ValueError("--seeds must be at least 1")
    if args.steps is not None and args.steps < 1:
        raise ValueError("--steps must be positive")
    result = staircase(
        gammas=args.gammas,
        seeds=list(range(args.seeds)),
        steps=args.steps,
        lr=args.lr,
        optimizer=args.optimizer,
        device=args.device,
        profile=args.profile,
        progress=not args.no_progress,
    )
    print(result.table())
    print(f"trained {len(result.gammas)} models in {result.seconds:.1f} s")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    figure = staircase_figure(result)
    figure.savefig(out / "staircase.png", dpi=120)
    print(f"figure: {out / 'staircase.png'}")
    if args.json:
        path = Path(args.json)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(result.to_json(), indent=2))
        print(f"numbers: {path}")
    return 0

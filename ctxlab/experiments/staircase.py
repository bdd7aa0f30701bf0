"""The headline experiment: :func:`staircase` trains Emb-MLP on a hierarchy task over a grid of init
exponents and seeds in one batched run, then reads every loss curve rung by rung (:mod:`ctxlab.rungs`:
dwell on each predicted level, onset, rises, where it ends) and follows the embeddings order by order
(the share of ||E - E0||^2 in the directions each order's signature adds, with its chance level, and
the norm of each token role).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch

from ctxlab.align import order_shares, role_norms
from ctxlab.env import profile as current_profile
from ctxlab.models import ensemble_grid, make_model
from ctxlab.rungs import Rungs, measure_rungs
from ctxlab.signatures import label_signature
from ctxlab.tasks import Task, hierarchy_task
from ctxlab.theory import plateau_levels, whether_levels
from ctxlab.train import Trajectory, train

# The headline task: binary attributes give one rung per order, and at gamma = 1 every seed rests on
# each of them (SCIENCE.md 9); Z_3 attributes add sub-rungs, which lesson 03 treats as a second topic.
HEADLINE_TASK = {"n_values": 2, "block": 8, "mix": (0.4, 0.3, 0.3)}

# Plain GD's learning rate: 1 for up to three orders. With four, the rungs lie about 0.03 nats apart and
# at lr 1 the loss slides through H3 (70-85 flat steps within 0.01 of it); at 0.5 it rests there for
# 215-245 steps in every seed and still ends on H4 within 6000 steps (benchmarks/staircase_rungs.py).
# Adam's steps are lr-sized whatever the gradient, so it takes a small one.
def default_lr(orders: int, optimizer: str = "gd") -> float:
    """The learning rate ``staircase`` uses when none is given, for a task of ``orders`` orders."""
    if optimizer not in ("gd", "adam"):
        raise ValueError(f"optimizer must be 'gd' or 'adam', got {optimizer!r}")
    return 0.001 if optimizer == "adam" else (1.0 if orders <= 3 else 0.5)


# Sizes per scale profile: quick fits a minute on 2 CPU cores, full is for a GPU.
STAIRCASE_PROFILES = {
    "quick": {"steps": 4000, "record_every": 5, "d": 32, "hidden": 128},
    "full": {"steps": 10000, "record_every": 5, "d": 64, "hidden": 256},
}


def level_names(task: Task) -> list[str]:
    """How the lessons and the JSON name the predicted levels of a hierarchy task: H(Y | x1..xk)."""
    return ["H(Y)"] + [f"H(Y | {', '.join(f'x{i}' for i in range(1, k + 1))})" for k in range(1, task.seq_len + 1)]


@dataclass
class StaircaseResult:
    """A staircase run: the trajectory, the predicted levels, and every curve read rung by rung."""

    task: Task
    gammas: list[float]
    seeds: list[int]
    trajectory: Trajectory
    levels: list[float]  # predicted losses H_0 .. H_L
    rungs: list[Rungs | None]  # [K]: run k read against the levels (None: it diverged)
    shares: torch.Tensor  # [K, T, L]: share of ||E - E0||^2 in the directions order k adds
    chance: list[float]  # [L]: the share a random embedding would have
    norms: dict[str, torch.Tensor]  # role -> [K, T]: mean norm of E - E0 over the role's tokens
    seconds: float
    sub_levels: list[tuple[str, float]] = field(default_factory=list)  # whether-levels of a Z_n task, n >= 3

    def runs_at(self, gamma: float) -> list[int]:
        """Model indices trained at ``gamma``."""
        return [k for k, g in enumerate(self.gammas) if g == gamma]

    def to_json(self) -> dict:
        """Every number of the run, the whole recorded curves included (strict JSON: no NaN)."""
        steps = self.trajectory.steps.tolist()
        names = level_names(self.task)
        runs = []
        for k, (g, s) in enumerate(zip(self.gammas, self.seeds)):
            read, diverged = self.rungs[k], int(self.trajectory.diverged_at[k])
            run = {"gamma": g, "seed": s, "steps": steps, "loss": [round(float(v), 6) for v in self.trajectory.loss[k]],
                   "diverged_at_step": None if diverged < 0 else diverged}
            run.update({"rungs": None, "max_rise": None, "ends_on": None, "final_loss": None} if read is None else {
                "rungs": [{"order": r.order, "predicted_loss": round(r.level, 6), "dwell_steps": r.dwell,
                           "onset_step": None if r.onset < 0 else r.onset,
                           "reached_step": None if r.reached < 0 else r.reached} for r in read.rungs],
                "max_rise": round(read.rise, 6), "ends_on": read.ends_on, "final_loss": round(read.final, 6),
            })
            runs.append(run)
        info, config = self.task.info, self.trajectory.config
        return {
            "task": {"name": self.task.name, "values": self.task.n_labels, "block": info["block"],
                     "mix": list(info["mix"]), "description": self.task.description},
            "training": {"optimizer": config["optimizer"], "lr": float(f"{config['lr'][0]:.6g}"),
                         **{k: config[k] for k in ("steps", "d", "hidden", "record_every")}},
            "levels": [{"order": k, "name": n, "loss": round(h, 6)} for k, (n, h) in enumerate(zip(names, self.levels))],
            "sub_levels": [{"order": k, "name": n, "loss": round(h, 6)} for k, (n, h) in enumerate(self.sub_levels, 1)],
            "tolerance": next((r.tol for r in self.rungs if r is not None), None),
            "runs": runs, "seconds": round(self.seconds, 2),
        }

    def table(self) -> str:
        """A plain-text table: one row per run, the dwell and onset on every rung, the largest rise, the end."""
        orders = range(len(self.levels))
        head = f"{'gamma':>5} {'seed':>4} " + " ".join(f"{'H' + str(o) + ' dwell':>9} {'onset':>5}" for o in orders)
        head += f" {'max rise':>8} {'final':>7} {'ends on':>7}"
        pred = f"{'':>5} {'pred':>4} " + " ".join(f"{self.levels[o]:>9.4f} {'':>5}" for o in orders)
        rows = [head, pred]
        for k, (g, s) in enumerate(zip(self.gammas, self.seeds)):
            read = self.rungs[k]
            if read is None:
                rows.append(f"{g:>5g} {s:>4d} diverged at step {int(self.trajectory.diverged_at[k])}")
                continue
            cells = " ".join(f"{r.dwell:>9d} {r.onset if r.onset >= 0 else '-':>5}" for r in read.rungs)
            end = "-" if read.ends_on is None else f"H{read.ends_on}"
            rows.append(f"{g:>5g} {s:>4d} {cells} {read.rise:>8.4f} {read.final:>7.4f} {end:>7}")
        return "\n".join(rows)


def staircase(
    gammas=(0.5, 1.0, 1.5),
    seeds=(0, 1, 2),
    steps: int | None = None,
    lr: float | None = None,
    optimizer: str = "gd",
    device=None,
    profile: str | None = None,
    progress: bool | None = None,
    values: int = HEADLINE_TASK["n_values"],
    block: int = HEADLINE_TASK["block"],
    mix: Sequence[float] = HEADLINE_TASK["mix"],
    tol: float = 0.01,
    on_divergence: str = "raise",
    task: Task | None = None,
    d: int | None = None,
    hidden: int | None = None,
    record_every: int | None = None,
    probes: dict | None = None,
) -> StaircaseResult:
    """Train Emb-MLP (GELU, no biases) on ``hierarchy_task(block, values, mix)`` for every (gamma, seed)
    in one batch, read every curve rung by rung and follow the embeddings order by order.

    ``on_divergence``: as in :func:`ctxlab.train.train` (``record`` keeps the run going and notes
    the diverged models in ``trajectory.diverged_at``; their curves are not read: ``rungs[k]`` is None).
    ``lr`` defaults to :func:`default_lr` of the task's number of orders.
    ``task`` replaces the hierarchy task (values, block and mix are then unused); ``d``, ``hidden``,
    ``record_every`` override the profile's sizes; ``probes`` are recorded as in ``train`` (the
    explorer's progress)."""
    sizes = dict(STAIRCASE_PROFILES[profile or current_profile()])
    sizes.update({k: v for k, v in (("steps", steps), ("d", d), ("hidden", hidden), ("record_every", record_every))
                  if v is not None})
    task = hierarchy_task(block=block, n_values=values, mix=tuple(mix)) if task is None else task
    lr = default_lr(task.seq_len, optimizer) if lr is None else lr
    g, s = ensemble_grid(gammas, seeds)
    model = make_model("mlp", task, d=sizes["d"], hidden=sizes["hidden"], gamma=g, seed=s)
    start = time.perf_counter()
    traj = train(model, task.population, sizes["steps"], optimizer=optimizer, lr=lr,
                 record_every=sizes["record_every"], probes=probes, device=device, progress=progress,
                 desc="staircase", on_divergence=on_divergence)
    seconds = time.perf_counter() - start
    traj.config.update(d=sizes["d"], hidden=sizes["hidden"], record_every=sizes["record_every"])
    levels = plateau_levels(task.population)
    signatures = [label_signature(task.population, k, "incremental") for k in range(1, task.seq_len + 1)]
    moved = traj.embeddings - traj.embeddings[:, :1]
    shares, chance = order_shares(moved, signatures)
    norms = role_norms(Trajectory(traj.steps, traj.loss, moved), task.roles)
    reads = [None if int(traj.diverged_at[k]) >= 0 else measure_rungs(traj.steps, traj.loss[k], levels, tol)
             for k in range(traj.n_models)]
    subs = whether_levels(task) if "attribute" in task.info else []
    return StaircaseResult(task, g, s, traj, levels, reads, shares, chance, norms, seconds, subs)

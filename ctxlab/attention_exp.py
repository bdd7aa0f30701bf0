"""``ctxlab attention``: a task that needs attention, trained with and without it.

One-layer Emb-Attention (no residual, GELU head, small init, full-batch plain GD) on
:func:`ctxlab.tasks.pointer_task`, for every (gamma, seed) in one batch, next to the *same* model with
attention frozen uniform (a bag of context). Every curve is read rung by rung
(:mod:`ctxlab.rungs`); the probes record the attention from the key to the position it names and
||W_Q W_K^T||.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch

from ctxlab.env import profile as current_profile
from ctxlab.models import ensemble_grid, make_model
from ctxlab.rungs import Rungs, measure_rungs
from ctxlab.tasks import Task, pointer_task
from ctxlab.theory import target_attention
from ctxlab.train import Trajectory, train

# The task, model and learning rate the lesson and the command share, chosen by measuring
# (benchmarks/attention_task.py): with 2 context positions and lr 0.2 every seed rests on H(Y | key)
# with attention at 1/L, reaches the last level and never rises by 0.01; larger lr (0.27, 0.35, 0.5)
# or 3 context positions give rises of 0.01-0.3. Full: the same model, trained longer (a GPU).
POINTER_TASK = {"n_ctx": 2, "n_values": 2, "mix": (0.5, 0.5)}
ATTENTION_MODEL = {"d": 16, "hidden": 32}
ATTENTION_PROFILES = {
    "quick": {"steps": 6000, "record_every": 10, "d": 16, "hidden": 32},
    "full": {"steps": 30000, "record_every": 20, "d": 16, "hidden": 32},
}
LEVEL_NAMES = ("H(Y)", "H(Y | key)", "H(Y | key, x_p)")
BAG_NAME = "H(Y | key, bag)"
TOL = 0.02  # nats: "on a rung" and "ends on it"


def attention_model(task: Task, gamma, seed, uniform: bool = False, d: int = ATTENTION_MODEL["d"],
                    hidden: int = ATTENTION_MODEL["hidden"]):
    """The course's attention model for ``task``; ``uniform=True``: the same model, attention frozen at 1/L."""
    return make_model("attention", task, gamma=gamma, seed=seed, d=d, hidden=hidden, uniform_attention=uniform)


def attention_on_rung(loss: torch.Tensor, attention: torch.Tensor, level: float, seq_len: int,
                      tol: float = TOL) -> float | None:
    """Largest |attention - 1/L| over the recorded steps where the loss [T] is within ``tol`` of ``level``
    (None: the curve never comes that close)."""
    on = (loss - level).abs() <= tol
    return float((attention[on] - 1.0 / seq_len).abs().max()) if bool(on.any()) else None


@dataclass
class AttentionResult:
    """Trained and uniform-baseline trajectories on one pointer task, with every curve read."""

    task: Task
    gammas: list[float]
    seeds: list[int]
    batch: Trajectory  # the one batched run: models 0..K-1 learn attention, K..2K-1 have it frozen uniform
    trained: Trajectory  # its first half; extras: "attention_to_target" [K, T], "qk_norm" [K, T],
    # "attention_map" [K, T, L, L] (the mean over the data, for the explorer)
    baseline: Trajectory  # its second half
    levels: list[float]
    settings: dict  # steps, lr, d, hidden, record_every
    reads: list[Rungs | None]  # trained runs (None: diverged)
    baseline_reads: list[Rungs | None]
    seconds: float

    level_names = LEVEL_NAMES
    bag_name = BAG_NAME

    def flat_on_key_rung(self, k: int) -> float | None:
        """Run k: the largest |attention to the target - 1/L| while the loss is on H(Y | key)."""
        return attention_on_rung(self.trained.loss[k], self.trained.extras["attention_to_target"][k],
                                 self.levels[1], self.task.seq_len)

    def to_json(self) -> dict:
        steps = self.trained.steps.tolist()

        def curve(values) -> list[float]:
            return [round(float(v), 6) for v in values]

        def reading(read: Rungs | None) -> dict:
            if read is None:
                return {"dwell_steps": None, "max_rise": None, "final_loss": None, "ends_on": None}
            return {"dwell_steps": read.dwells(), "max_rise": round(read.rise, 6), "final_loss": round(read.final, 6),
                    "ends_on": read.ends_on}

        runs, base = [], []
        for k, (g, s) in enumerate(zip(self.gammas, self.seeds)):
            flat = self.flat_on_key_rung(k) if self.reads[k] is not None else None
            runs.append({"gamma": g, "seed": s, "steps": steps, "loss": curve(self.trained.loss[k]),
                         "attention_to_target": curve(self.trained.extras["attention_to_target"][k]),
                         "qk_norm": curve(self.trained.extras["qk_norm"][k]),
                         "diverged_at_step": _diverged(self.trained, k), **reading(self.reads[k]),
                         "attention_off_uniform_on_key_rung": None if flat is None else round(flat, 6)})
            base.append({"gamma": g, "seed": s, "steps": steps, "loss": curve(self.baseline.loss[k]),
                         "diverged_at_step": _diverged(self.baseline, k), **reading(self.baseline_reads[k])})
        info = self.task.info
        return {
            "task": {"name": self.task.name, "description": self.task.description, "mix": list(info["mix"]),
                     "n_ctx": self.task.seq_len - 1},
            "seq_len": self.task.seq_len,
            "levels": [{"order": k, "name": n, "loss": round(h, 6)} for k, (n, h) in enumerate(zip(LEVEL_NAMES, self.levels))],
            "bag_level": {"name": BAG_NAME, "loss": round(info["bag_level"], 6)},
            "tolerance": TOL,
            "runs": runs, "baseline_runs": base, "seconds": round(self.seconds, 2),
        }

    def table(self) -> str:
        """One row per (gamma, seed): what the acceptance reads (baseline and trained end above the last
        level, attention off 1/L on the key rung, attention at the end, largest rise)."""
        last = self.levels[-1]
        head = (f"{'gamma':>5} {'seed':>4} {'uniform end-H2':>14} {'trained end-H2':>14} {'|a-1/L| on H1':>13} "
                f"{'a at end':>8} {'max rise':>8}")
        rows = [head]
        for k, (g, s) in enumerate(zip(self.gammas, self.seeds)):
            read, base = self.reads[k], self.baseline_reads[k]
            if read is None or base is None:
                rows.append(f"{g:>5g} {s:>4d} diverged (trained at {_diverged(self.trained, k)}, "
                            f"uniform at {_diverged(self.baseline, k)})")
                continue
            flat = self.flat_on_key_rung(k)
            rows.append(f"{g:>5g} {s:>4d} {base.final - last:>14.4f} {read.final - last:>14.4f} "
                        f"{'never on H1' if flat is None else f'{flat:.4f}':>13} "
                        f"{float(self.trained.extras['attention_to_target'][k, -1]):>8.3f} {read.rise:>8.4f}")
        return "\n".join(rows)


def _diverged(traj: Trajectory, k: int) -> int | None:
    step = int(traj.diverged_at[k])
    return None if step < 0 else step


def _read(traj: Trajectory, levels: list[float]) -> list[Rungs | None]:
    return [None if int(traj.diverged_at[k]) >= 0 else measure_rungs(traj.steps, traj.loss[k], levels, TOL)
            for k in range(traj.n_models)]


LR = 0.2


def train_attention(task: Task, gammas: list[float], seeds: list[int], steps: int, lr: float = LR, *,
                    uniform_twin: bool = True, d: int = ATTENTION_MODEL["d"], hidden: int = ATTENTION_MODEL["hidden"],
                    record_every: int | None = None, device=None, progress: bool | None = None,
                    on_divergence: str = "raise") -> Trajectory:
    """One batched run of the attention model on ``task`` for every (gamma, seed) of the lists; with
    ``uniform_twin`` the batch also holds each model's twin with attention frozen uniform (models
    K..2K-1). Records the attention to the target (pointer tasks), ||W_Q W_K^T|| and the mean attention map."""
    K = len(gammas)
    twins = [False] * K + [True] * K if uniform_twin else [False] * K
    model = attention_model(task, gammas * (1 + uniform_twin), seeds * (1 + uniform_twin), twins, d=d, hidden=hidden)
    x = task.population.x
    probes = {"qk_norm": lambda m: m.qk_norm(), "attention_map": lambda m: m.attention(x.to(m.embedding.device)).mean(1)}
    if "target_position" in task.info:
        probes["attention_to_target"] = target_attention(task)
    return train(model, task.population, steps, lr=lr, record_every=record_every, probes=probes,
                 device=device, progress=progress, on_divergence=on_divergence, desc="attention")


def attention_experiment(gammas=(1.0,), seeds=(0, 1, 2), steps: int | None = None, lr: float = LR,
                         device=None, profile: str | None = None, progress: bool | None = None,
                         on_divergence: str = "raise") -> AttentionResult:
    """Train the attention model and its uniform-attention twin on the pointer task for every (gamma, seed)."""
    sizes = ATTENTION_PROFILES[profile or current_profile()]
    steps = sizes["steps"] if steps is None else steps
    task = pointer_task(**POINTER_TASK)
    g, s = ensemble_grid(gammas, seeds)
    K = len(g)
    start = time.perf_counter()
    # one batch holds both: models 0..K-1 learn attention, models K..2K-1 have it frozen uniform
    both = train_attention(task, g, s, steps, lr, d=sizes["d"], hidden=sizes["hidden"],
                           record_every=sizes["record_every"], device=device, progress=progress,
                           on_divergence=on_divergence)
    seconds = time.perf_counter() - start
    runs = {False: both.select(range(K)), True: both.select(range(K, 2 * K))}
    levels = task.plateau_levels()
    settings = {"steps": steps, "lr": lr, "d": sizes["d"], "hidden": sizes["hidden"], "record_every": sizes["record_every"]}
    return AttentionResult(task, g, s, both, runs[False], runs[True], levels, settings, _read(runs[False], levels),
                           _read(runs[True], levels), seconds)

"""``ctxlab attention``: a task that needs attention, trained with and without it.

One-layer Emb-Attention (a residual, GELU head read at the last position, small init, full-batch plain GD) on
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
from ctxlab.rungs import TOL, Rungs, measure_rungs
from ctxlab.tasks import Task, pointer_task
from ctxlab.theory import key_attention_map, target_attention
from ctxlab.train import Trajectory, train

# The task, model and learning rate the lesson and the command share, chosen by measuring
# (benchmarks/attention_task.py). Three context positions and the order-2 rule at weight 0.7 put
# the bag's floor 0.23 nats above the last level. The key reads itself through a residual
# connection and the prediction is read at the key's position (the last), so attention is free to
# leave the key for the position it names: at lr 0.08 every seed (0-5) rests on H(Y | key) with
# attention at 1/L, ends within 0.001 of the last level with 0.54-0.71 of its attention on the named
# position, and never rises by 0.001. Without the residual and with logits averaged over positions
# (``--plain``) attention from the key stays far lower: the key must keep attending to itself to know
# its own attribute, and other positions can do the looking. Full: the same, longer.
POINTER_TASK = {"n_ctx": 3, "n_values": 2, "mix": (0.3, 0.7)}
ATTENTION_MODEL = {"d": 16, "hidden": 64, "residual": True, "readout": "last"}
ATTENTION_PROFILES = {
    "quick": {"steps": 13000, "record_every": 20},
    "full": {"steps": 60000, "record_every": 50},
}
LEVEL_NAMES = ("H(Y)", "H(Y | key)", "H(Y | key, x_p)")
BAG_NAME = "H(Y | key, bag)"
BAND = 0.02  # attention within 1/L ± BAND counts as uniform (the loss's tolerance is the course's TOL, 0.01 nats)


def partial_name(task: Task) -> str:
    """The name of the level with every context position read but one, as the figures print it."""
    n = task.seq_len - 1
    return f"{n - 1} of {n} positions read"


def side_levels(task: Task) -> list[tuple[str, float]]:
    """(name, loss) of the levels off the ladder that a pointer task's loss rests on: the bag's floor
    (the best loss of uniform attention) and, where there is one, the loss with every position read
    but one (where the last stair pauses). Empty for a task that has neither."""
    info = task.info
    levels = [(BAG_NAME, float(info["bag_level"]))] if "bag_level" in info else []
    if info.get("partial_levels"):
        levels.append((partial_name(task), float(info["partial_levels"][-1])))
    return levels


def attention_model(task: Task, gamma, seed, uniform: bool = False, **overrides):
    """The course's attention model (``ATTENTION_MODEL``, any entry overridable) for ``task``;
    ``uniform=True``: the same model, attention frozen at 1/L."""
    return make_model("attention", task, gamma=gamma, seed=seed, uniform_attention=uniform,
                      **{**ATTENTION_MODEL, **overrides})


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
    trained: Trajectory  # its first half; extras: "attention_to_target" [K, T], "attention_by_position"
    # [K, T, n_ctx] (split by the position the key names), "qk_norm" [K, T], "attention_map" [K, T, n_ctx, L]
    # (the key's attention, averaged over the sequences whose key names each position: the explorer's map)
    baseline: Trajectory  # its second half
    levels: list[float]
    settings: dict  # steps, lr, record_every and ATTENTION_MODEL (sizes, residual, read-out)
    reads: list[Rungs | None]  # trained runs (None: diverged)
    baseline_reads: list[Rungs | None]
    seconds: float

    level_names = LEVEL_NAMES
    bag_name = BAG_NAME

    @property
    def partial_level(self) -> float:
        """The loss with every position read but one (the others: the bag), where the last stair pauses."""
        return self.task.info["partial_levels"][-1]

    @property
    def partial_name(self) -> str:
        return partial_name(self.task)

    @property
    def side_levels(self) -> list[tuple[str, float]]:
        """The bag's floor and the partial-read level, named (:func:`side_levels`)."""
        return side_levels(self.task)

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
            "tolerance": TOL, "attention_band": BAND,
            "training": {"optimizer": "gd", **self.settings},
            "runs": runs, "baseline_runs": base, "seconds": round(self.seconds, 2),
        }

    def table(self) -> str:
        """One row per (gamma, seed): what the acceptance reads (baseline and trained end above the last
        level, attention off 1/L on the key rung, attention at the end, largest rise)."""
        last = self.levels[-1]
        head = (f"{'gamma':>5} {'seed':>4} {'uniform: end - H(Y|key,x_p)':>27} {'learned: end - H(Y|key,x_p)':>27} "
                f"{'|attn - 1/L| on H(Y|key)':>24} {'attn at end':>11} {'max rise':>8}")
        rows = [head]
        for k, (g, s) in enumerate(zip(self.gammas, self.seeds)):
            read, base = self.reads[k], self.baseline_reads[k]
            if read is None or base is None:
                rows.append(f"{g:>5g} {s:>4d} diverged (trained at {_diverged(self.trained, k)}, "
                            f"uniform at {_diverged(self.baseline, k)})")
                continue
            flat = self.flat_on_key_rung(k)
            rows.append(f"{g:>5g} {s:>4d} {base.final - last:>27.4f} {read.final - last:>27.4f} "
                        f"{'never on H(Y|key)' if flat is None else f'{flat:.4f}':>24} "
                        f"{float(self.trained.extras['attention_to_target'][k, -1]):>11.3f} {read.rise:>8.4f}")
        return "\n".join(rows)


def _diverged(traj: Trajectory, k: int) -> int | None:
    step = int(traj.diverged_at[k])
    return None if step < 0 else step


def _read(traj: Trajectory, levels: list[float]) -> list[Rungs | None]:
    return [None if int(traj.diverged_at[k]) >= 0 else measure_rungs(traj.steps, traj.loss[k], levels, TOL)
            for k in range(traj.n_models)]


LR = 0.08  # plain GD; at 0.15 four seeds in six spike by 0.009-0.012 on the last stair (benchmarks/attention_task.py)


def train_attention(task: Task, gammas: list[float], seeds: list[int], steps: int, lr: float = LR, *,
                    uniform_twin: bool = True, d: int = ATTENTION_MODEL["d"], hidden: int = ATTENTION_MODEL["hidden"],
                    record_every: int | None = None, device=None, progress: bool | None = None,
                    on_divergence: str = "raise") -> Trajectory:
    """One batched run of the attention model on ``task`` for every (gamma, seed) of the lists; with
    ``uniform_twin`` the batch also holds each model's twin with attention frozen uniform (models
    K..2K-1). Records ||W_Q W_K^T|| and an attention map: for a pointer task the key's attention per
    position it names [n_ctx, L], with the attention to the target, whole and split by position;
    otherwise the mean over the data of every query's attention [L, L]."""
    K = len(gammas)
    twins = [False] * K + [True] * K if uniform_twin else [False] * K
    model = attention_model(task, gammas * (1 + uniform_twin), seeds * (1 + uniform_twin), twins, d=d, hidden=hidden)
    x = task.population.x
    probes = {"qk_norm": lambda m: m.qk_norm()}
    if "target_position" in task.info:
        probes.update(attention_map=key_attention_map(task), attention_to_target=target_attention(task),
                      attention_by_position=target_attention(task, by_position=True))
    else:
        probes["attention_map"] = lambda m: m.attention(x.to(m.embedding.device)).mean(1)
    return train(model, task.population, steps, lr=lr, record_every=record_every, probes=probes,
                 device=device, progress=progress, on_divergence=on_divergence, desc="attention")


def attention_experiment(gammas=(1.0,), seeds=(0, 1, 2), steps: int | None = None, lr: float | None = None,
                         device=None, profile: str | None = None, progress: bool | None = None,
                         on_divergence: str = "raise") -> AttentionResult:
    """Train the attention model and its uniform-attention twin on the pointer task for every (gamma, seed)
    (``lr`` and ``steps`` default to ``LR`` and the profile's)."""
    sizes = ATTENTION_PROFILES[profile or current_profile()]
    steps = sizes["steps"] if steps is None else steps
    lr = LR if lr is None else lr
    task = pointer_task(**POINTER_TASK)
    g, s = ensemble_grid(gammas, seeds)
    K = len(g)
    start = time.perf_counter()
    # one batch holds both: models 0..K-1 learn attention, models K..2K-1 have it frozen uniform
    both = train_attention(task, g, s, steps, lr, record_every=sizes["record_every"], device=device,
                           progress=progress, on_divergence=on_divergence)
    seconds = time.perf_counter() - start
    runs = {False: both.select(range(K)), True: both.select(range(K, 2 * K))}
    levels = task.plateau_levels()
    settings = {"steps": steps, "lr": lr, **ATTENTION_MODEL, "record_every": sizes["record_every"]}
    return AttentionResult(task, g, s, both, runs[False], runs[True], levels, settings, _read(runs[False], levels),
                           _read(runs[True], levels), seconds)

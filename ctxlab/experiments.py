"""Headline experiments, shared by the lessons and the ``ctxlab`` command.

:func:`staircase` trains Emb-MLP on a hierarchy task over a grid of init exponents and seeds in one
batched run, then reads every loss curve rung by rung (:mod:`ctxlab.rungs`: dwell on each predicted
level, onset, rises, where it ends) and follows the embeddings order by order (the share of
||E - E0||^2 in the directions each order's signature adds, with its chance level, and the norm of
each token role).
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from ctxlab.align import align_trajectory, order_shares, role_norms
from ctxlab.env import profile as current_profile
from ctxlab.lm import PRECISIONS
from ctxlab.models import ensemble_grid, make_model
from ctxlab.rungs import Rungs, measure_rungs, measure_runs, stair_onsets
from ctxlab.signatures import label_signature
from ctxlab.tasks import Task, hierarchy_task
from ctxlab.theory import plateau_levels
from ctxlab.train import Trajectory, train

# The headline task: binary attributes give one rung per order, and at gamma = 1 every seed rests on
# each of them (SCIENCE.md 9); Z_3 attributes add sub-rungs, which lesson 03 treats as a second topic.
HEADLINE_TASK = {"n_values": 2, "block": 8, "mix": (0.4, 0.3, 0.3)}

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
                           "onset_step": None if r.onset < 0 else r.onset} for r in read.rungs],
                "max_rise": round(read.rise, 6), "ends_on": read.ends_on, "final_loss": round(read.final, 6),
            })
            runs.append(run)
        info = self.task.info
        return {
            "task": {"name": self.task.name, "values": self.task.n_labels, "block": info["block"],
                     "mix": list(info["mix"]), "description": self.task.description},
            "levels": [{"order": k, "name": n, "loss": round(h, 6)} for k, (n, h) in enumerate(zip(names, self.levels))],
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
    lr: float = 1.0,
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
    ``task`` replaces the hierarchy task (values, block and mix are then unused); ``d``, ``hidden``,
    ``record_every`` override the profile's sizes; ``probes`` are recorded as in ``train`` (the
    explorer's progress)."""
    sizes = dict(STAIRCASE_PROFILES[profile or current_profile()])
    sizes.update({k: v for k, v in (("steps", steps), ("d", d), ("hidden", hidden), ("record_every", record_every))
                  if v is not None})
    task = hierarchy_task(block=block, n_values=values, mix=tuple(mix)) if task is None else task
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
    return StaircaseResult(task, g, s, traj, levels, reads, shares, chance, norms, seconds)


def run_staircase_command(args) -> int:
    """``ctxlab staircase``: train, print the table, save the figure (and the JSON).

    Bad outputs or devices fail before training; diverged models are reported (and the command
    fails) after the outputs are saved, so the other runs' numbers are kept."""
    from ctxlab.plots import staircase_figure

    figure_path = Path(args.out) / "staircase.png"
    check_before_training(args.device, figure_path, args.json)
    chosen = {"values": args.values, "block": args.block, "mix": args.mix}
    task_args = {"n_values": HEADLINE_TASK["n_values"], "block": HEADLINE_TASK["block"], "mix": HEADLINE_TASK["mix"]}
    task_args.update({("n_values" if k == "values" else k): v for k, v in chosen.items() if v is not None})
    hierarchy_task(**{**task_args, "mix": tuple(task_args["mix"])})  # bad task options fail before training
    result = staircase(
        gammas=args.gammas,
        seeds=list(range(args.seeds)),
        steps=args.steps,
        lr=args.lr,
        optimizer=args.optimizer,
        device=args.device,
        profile=args.profile,
        progress=not args.no_progress,
        values=task_args["n_values"],
        block=task_args["block"],
        mix=task_args["mix"],
        on_divergence="record",
    )
    print(result.table())
    print(f"trained {len(result.gammas)} models in {result.seconds:.1f} s")
    save_outputs(staircase_figure(result), figure_path, result.to_json(), args.json)
    return report_divergence("staircase", result.trajectory, "--lr")


def check_before_training(device, figure_path: Path, json_path: str | None) -> None:
    """What a command checks before a long run: the device exists, and the figure and JSON can be
    written (their folders are created now). Raises ValueError naming the option."""
    from ctxlab.env import device as pick_device

    try:
        pick_device(device)
    except (ValueError, RuntimeError) as err:
        raise ValueError(f"--device: {err}") from None
    _check_writable(figure_path, "--out")
    if json_path is not None:
        if Path(json_path).resolve() == figure_path.resolve():
            raise ValueError(f"--json {json_path} would overwrite the figure; choose another file")
        _check_writable(Path(json_path), "--json")


def _check_writable(path: Path, option: str) -> None:
    if path.is_dir():
        raise ValueError(f"{option}: {path} is a folder; the command writes a file there")
    folder = path.parent
    for above in (folder, *folder.parents):
        if above.exists():
            if not above.is_dir():
                raise ValueError(f"{option}: {above} is a file, not a folder")
            break
    try:
        folder.mkdir(parents=True, exist_ok=True)
        existed = path.exists()
        with open(path, "a"):  # the one test every platform and permission model agrees on
            pass
        if not existed:
            path.unlink(missing_ok=True)  # torchrun: every process runs this check
    except OSError as err:
        raise ValueError(f"{option}: cannot write {path} ({err.strerror or err})") from None


def report_divergence(command: str, traj: Trajectory, knob: str) -> int:
    """Exit status of a training command: 0, or 1 with one line naming every diverged model."""
    from ctxlab.train import describe_divergence

    if not bool((traj.diverged_at >= 0).any()):
        return 0
    n = int((traj.diverged_at >= 0).sum())
    print(f"ctxlab {command}: error: {n} of {traj.n_models} models diverged (NaN, infinite or exploding loss; "
          f"frozen there, later losses NaN, null in the JSON): "
          f"{describe_divergence(traj.gammas, traj.seeds, traj.diverged_at)}; try a smaller {knob}", file=sys.stderr)
    return 1


def strict_json(numbers):
    """``numbers`` with every NaN or infinite float replaced by None (JSON has no NaN), and the
    places where that happened (a list counted once, with how many of its values)."""
    replaced: list[str] = []

    def clean(value, where: str):
        if isinstance(value, float) and not math.isfinite(value):
            replaced.append(where)
            return None
        if isinstance(value, dict):
            return {k: clean(v, f"{where}.{k}" if where else str(k)) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            before = len(replaced)
            out = [clean(v, f"{where}[{i}]") for i, v in enumerate(value)]
            flat = all(not isinstance(v, (dict, list, tuple)) for v in value)
            if flat and len(replaced) > before + 1:
                del replaced[before:]
                replaced.append(f"{where} ({sum(v is None for v in out)} values)")
            return out
        return value

    return clean(numbers, ""), replaced


def save_outputs(figure, figure_path: Path, numbers: dict, json_path: str | None) -> None:
    """Write a command's figure (PNG) and, when asked, its numbers (strict JSON: NaN and infinities
    become null, listed under ``non_finite`` with the reason); say where."""
    figure_path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(figure_path, dpi=120)
    print(f"figure: {figure_path}")
    if json_path:
        path = Path(json_path)
        path.parent.mkdir(parents=True, exist_ok=True)
        numbers, replaced = strict_json(numbers)
        if replaced:
            numbers["non_finite"] = {"reason": "NaN or infinite values (a diverged run) are written as null",
                                     "where": replaced}
        path.write_text(json.dumps(numbers, indent=1, allow_nan=False))
        print(f"numbers: {path}")


# --- a small GPT on real text ------------------------------------------------------------------

# Quick: sized for lesson 09 on one CPU core (a one-block GPT, 800 steps, trained there with Adam and
# with plain SGD at lr 1.5). Its KL to the trigram model is still falling at the end, so lesson 09
# shows the turn from the recorded full-profile run.
# Full: the 512-token BPE text is 486k training tokens, so 3000 steps of 64 x 128 are already ~50
# epochs; on an H200 the held-out loss bottoms out at steps 2500-2950 and then rises (memorising).
LM_PROFILES = {
    "quick": {"context": 16, "d": 32, "n_layers": 1, "n_heads": 2, "steps": 800, "batch_size": 32, "lr": 1e-2,
              "record_every": 10, "tokenizer": "char", "vocab_size": None, "optimizer": "adam",
              "precision": "fp32"},
    "full": {"context": 128, "d": 256, "n_layers": 4, "n_heads": 4, "steps": 3000, "batch_size": 64, "lr": 1e-3,
             "record_every": 50, "tokenizer": "bpe", "vocab_size": 512, "optimizer": "adam",
             "precision": "fp32"},
}
NGRAM_ORDERS = {"unigram": 1, "bigram": 2, "trigram": 3}


@dataclass
class LMResult:
    """A GPT run: the trajectory (held-out loss, embeddings, KL to each n-gram), and the yardsticks."""

    trajectory: Trajectory
    entropies: dict[str, float]  # held-out cross-entropy of each n-gram model
    alignment: dict[str, torch.Tensor]  # CKA(E - E0, bigram signature / trigram increment): [K, T]
    samples: dict[int, list[str]]  # step -> one generated text per model
    config: dict
    seconds: float
    tokens_per_second: float
    # name -> [2, K, T]: lowest and highest CKA(E - E0, row-shuffled S) over the shuffles (lesson 02:
    # a CKA is read against its shuffled band); None for a recording that kept no band
    alignment_band: dict[str, torch.Tensor] | None = None

    def kl_minimum_steps(self) -> dict[str, list[int]]:
        """Per n-gram order, the step where each model is closest to that n-gram predictor."""
        steps = self.trajectory.steps  # NaN (after a divergence) never counts as the closest
        return {name: steps[self.trajectory.extras[f"kl_{name}"].nan_to_num(nan=torch.inf).argmin(-1)].tolist()
                for name in NGRAM_ORDERS}

    def alignment_peak_steps(self) -> dict[str, list[int]]:
        steps = self.trajectory.steps
        return {name: steps[curve.nan_to_num(nan=-torch.inf).argmax(-1)].tolist() for name, curve in self.alignment.items()}

    def to_json(self) -> dict:
        traj = self.trajectory
        return {
            "config": self.config,
            "gammas": traj.gammas,
            "seeds": traj.seeds,
            "processes": traj.config["processes"],
            "steps": traj.steps.tolist(),
            "held_out_loss": traj.loss.round(decimals=5).tolist(),
            "kl": {name: traj.extras[f"kl_{name}"].round(decimals=5).tolist() for name in NGRAM_ORDERS},
            "alignment": {name: curve.round(decimals=5).tolist() for name, curve in self.alignment.items()},
            "alignment_band": None if self.alignment_band is None else
            {name: band.round(decimals=5).tolist() for name, band in self.alignment_band.items()},
            "ngram_entropies": {name: round(h, 5) for name, h in self.entropies.items()},
            "kl_minimum_steps": self.kl_minimum_steps(),
            "alignment_peak_steps": self.alignment_peak_steps(),
            "samples": {str(step): texts for step, texts in self.samples.items()},
            "seconds": round(self.seconds, 2),
            "tokens_per_second": round(self.tokens_per_second, 1),
        }

    @classmethod
    def from_json(cls, numbers: dict, last_step: int | None = None) -> LMResult:
        """The result that ``to_json`` saved (curves only: embeddings are not saved), optionally cut
        at ``last_step``. Lets a lesson plot a run made elsewhere, e.g. the full profile on a GPU."""
        keep = [i for i, step in enumerate(numbers["steps"]) if last_step is None or step <= last_step]
        if not keep:
            raise ValueError(f"no recorded step at or before {last_step}")

        def curves(rows) -> torch.Tensor:
            return torch.tensor(rows, dtype=torch.float32)[:, keep]

        K = len(numbers["gammas"])
        traj = Trajectory(
            steps=torch.tensor(numbers["steps"])[keep],
            loss=curves(numbers["held_out_loss"]),
            embeddings=torch.empty(K, len(keep), 0, 0),
            extras={f"kl_{name}": curves(rows) for name, rows in numbers["kl"].items()},
            gammas=list(numbers["gammas"]),
            seeds=list(numbers["seeds"]),
            config={"processes": numbers["processes"]},
        )
        config = dict(numbers["config"], steps=int(traj.steps[-1]))
        samples = {int(step): texts for step, texts in numbers["samples"].items() if int(step) <= config["steps"]}
        alignment = {name: curves(rows) for name, rows in numbers["alignment"].items()}
        band = numbers.get("alignment_band")
        band = None if band is None else {name: torch.tensor(rows, dtype=torch.float32)[..., keep] for name, rows in band.items()}
        return cls(traj, dict(numbers["ngram_entropies"]), alignment, samples, config, numbers["seconds"],
                   numbers["tokens_per_second"], band)


def shuffled_alignment_band(traj: Trajectory, signatures: dict, n: int = 50, seed: int = 0) -> dict[str, torch.Tensor]:
    """Per signature, the lowest and highest CKA(E - E0, S with its rows shuffled) over ``n`` shuffles at
    every record: [2, K, T], the range of :func:`ctxlab.align.permutation_baseline` (same shuffles for the
    same seed). A CKA curve means alignment only where it stands above this band; NaN where the model
    diverged, as in :func:`ctxlab.align.align_trajectory`."""
    from ctxlab.align import cka_shuffle_range
    from ctxlab.train import blank_after_divergence

    E = traj.embeddings - traj.embeddings[:, :1]
    usable = torch.isfinite(E).flatten(1).all(1)
    band = {}
    for name, S in signatures.items():
        out = torch.full((*E.shape[:2], 2), float("nan"), dtype=torch.float64)
        if bool(usable.any()):
            out[usable] = cka_shuffle_range(E[usable], S, n, seed)
        band[name] = blank_after_divergence(out, traj.steps.tolist(), traj.diverged_at).permute(2, 0, 1)
    return band


def recorded_lm_run(name: str = "lm_full_h200") -> LMResult:
    """A full-profile run shipped with ctxlab (``ctxlab/data/<name>.json``, made by
    ``benchmarks/lm_gpu.sh``): the curves a CPU cannot produce in a lesson's time."""
    path = Path(__file__).parent / "data" / f"{name}.json"
    if not path.exists():
        raise ValueError(f"no recorded run {name!r}; recorded runs: {sorted(p.stem for p in path.parent.glob('lm_*.json'))}")
    return LMResult.from_json(json.loads(path.read_text()))


def lm_settings(profile: str | None, overrides: dict) -> dict:
    """The profile's GPT settings with ``overrides`` (None: keep the profile's), checked."""
    from ctxlab.validate import integer, number

    cfg = dict(LM_PROFILES[profile or current_profile()])
    unknown = set(overrides) - set(cfg)
    if unknown:
        raise ValueError(f"unknown settings {sorted(unknown)}; choose from {sorted(cfg)}")
    if overrides.get("vocab_size") is not None and overrides.get("tokenizer", cfg["tokenizer"]) != "bpe":
        raise ValueError("vocab_size sets the size of a BPE vocabulary; use it with tokenizer 'bpe'")
    cfg.update({k: v for k, v in overrides.items() if v is not None})
    for name in ("context", "d", "n_layers", "n_heads", "steps", "batch_size", "record_every"):
        integer(cfg[name], name, minimum=1)
    number(cfg["lr"], "lr", positive=True)
    if cfg["d"] % cfg["n_heads"]:
        raise ValueError(f"the width d = {cfg['d']} must be divisible by the number of heads ({cfg['n_heads']})")
    if cfg["optimizer"] not in ("sgd", "adam"):
        raise ValueError(f"unknown optimizer {cfg['optimizer']!r} for the GPT; choose 'sgd' (plain minibatch steps) or 'adam'")
    if cfg["precision"] not in PRECISIONS:
        raise ValueError(f"unknown precision {cfg['precision']!r}; choose one of {PRECISIONS}")
    if cfg["tokenizer"] not in ("char", "bpe"):
        raise ValueError(f"unknown tokenizer {cfg['tokenizer']!r}; choose 'char' or 'bpe'")
    if cfg["tokenizer"] == "bpe" and integer(cfg["vocab_size"] or 512, "vocab_size") < 260:
        raise ValueError("a byte-level BPE needs vocab_size >= 260 (256 bytes + merges)")
    return cfg


def language_model(
    gammas=(1.0,),
    seeds=(0,),
    source: str = "shakespeare",
    profile: str | None = None,
    device=None,
    progress: bool | None = None,
    prompt: str = "\n",
    on_divergence: str = "raise",
    **overrides,
) -> LMResult:
    """Train TinyGPT on a shipped text for every (gamma, seed), measuring it against n-gram models."""
    from ctxlab.corpus import load_text, tokenizer, train_val_split
    from ctxlab.lm import NGramPredictor, TinyGPT, train_lm
    from ctxlab.signatures import (
        bigram_signature,
        held_out_cross_entropies,
        ngram_tables,
        trigram_increment,
    )

    cfg = lm_settings(profile, overrides)
    text = load_text(source).text
    tok = tokenizer(cfg["tokenizer"], text, vocab_size=cfg["vocab_size"] or 512)
    V = tok.vocab_size
    train_tokens, held_out = train_val_split(tok.encode(text))
    tables = ngram_tables(train_tokens, V, max(NGRAM_ORDERS.values()))  # counted once for both uses
    yardsticks = {name: NGramPredictor.from_table(tables[n - 1], V) for name, n in NGRAM_ORDERS.items()}
    entropies = dict(zip(NGRAM_ORDERS, held_out_cross_entropies(tables, held_out, V)))
    del tables  # float64 (1 GB for a BPE trigram); the yardsticks hold float32 copies
    g, s = ensemble_grid(gammas, seeds)
    model = TinyGPT(V, cfg["context"], d=cfg["d"], n_layers=cfg["n_layers"], n_heads=cfg["n_heads"], gamma=g, seed=s)
    sample_at = (0, cfg["steps"] // 10, cfg["steps"] // 3, cfg["steps"])
    start = time.perf_counter()
    traj = train_lm(model, train_tokens, cfg["steps"], eval_tokens=held_out, yardsticks=yardsticks,
                    batch_size=cfg["batch_size"], optimizer=cfg["optimizer"], lr=cfg["lr"], record_every=cfg["record_every"], device=device,
                    progress=progress, prompt=tok.encode(prompt), sample_at=sample_at, on_divergence=on_divergence,
                    precision=cfg["precision"])
    seconds = time.perf_counter() - start
    signatures = {"bigram": bigram_signature(train_tokens, V), "trigram": trigram_increment(train_tokens, V)}
    alignment = align_trajectory(traj, signatures, "cka", relative_to_init=True)
    band = shuffled_alignment_band(traj, signatures)
    samples = {step: [tok.decode(row) for row in traj.extras["samples"][:, i]] for i, step in enumerate(traj.config["sample_steps"])}
    tokens = cfg["steps"] * cfg["batch_size"] * cfg["context"] * len(g)
    cfg.update({"vocab": V, "source": source})
    return LMResult(traj, entropies, alignment, samples, cfg, seconds, tokens / seconds, band)


def run_lm_command(args) -> int:
    """``ctxlab lm``: train the GPT (data-parallel under torchrun), save the figure and the JSON."""
    from ctxlab.corpus import SOURCES
    from ctxlab.plots import lm_figure

    settings = dict(steps=args.steps, d=args.width, n_layers=args.layers, n_heads=args.heads, context=args.context,
                    tokenizer=args.tokenizer, vocab_size=args.vocab_size, batch_size=args.batch_size, lr=args.lr,
                    optimizer=args.optimizer, precision=args.precision)
    cfg = lm_settings(args.profile, settings)
    if args.source not in SOURCES:
        raise ValueError(f"unknown --source {args.source!r}; choose one of {SOURCES}")
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if cfg["batch_size"] % world:
        raise ValueError(f"--batch-size {cfg['batch_size']} must be divisible by the number of processes ({world})")
    figure_path = Path(args.out) / "lm.png"
    check_before_training(args.device, figure_path, args.json)
    if world > 1:
        import torch.distributed as dist

        backend = "nccl" if args.device.startswith("cuda") else "gloo"
        dist.init_process_group(backend)
        if backend == "nccl":
            args.device = f"cuda:{int(os.environ.get('LOCAL_RANK', '0'))}"
    try:
        result = language_model(
            gammas=args.gammas, seeds=list(range(args.seeds)), source=args.source, profile=args.profile,
            device=args.device, progress=not args.no_progress and int(os.environ.get("RANK", "0")) == 0,
            on_divergence="record", **settings,
        )
    finally:
        if world > 1:
            torch.distributed.destroy_process_group()
    if int(os.environ.get("RANK", "0")) != 0:
        return 0
    minima = result.kl_minimum_steps()
    print(f"{'gamma':>5} {'seed':>4} " + " ".join(f"{'KL min ' + n:>16}" for n in NGRAM_ORDERS) + f" {'held-out loss':>14}")
    for k, (g, s) in enumerate(zip(result.trajectory.gammas, result.trajectory.seeds)):
        cells = " ".join(f"{'step ' + str(minima[n][k]):>16}" for n in NGRAM_ORDERS)
        print(f"{g:>5g} {s:>4d} {cells} {float(result.trajectory.loss[k, -1]):>14.4f}")
    print("held-out n-gram entropies: " + ", ".join(f"{n} {h:.3f}" for n, h in result.entropies.items()))
    print(f"{result.tokens_per_second:,.0f} tokens/s over {result.seconds:.1f} s")
    numbers = result.to_json()
    numbers["diverged_at_step"] = [None if step < 0 else step for step in result.trajectory.diverged_at.tolist()]
    save_outputs(lm_figure(result), figure_path, numbers, args.json)
    return report_divergence("lm", result.trajectory, "--lr")


# --- lesson 08: a gamma x learning-rate phase map -------------------------------------------------

# Quick: a 5 x 6 grid small enough for one minute on 2 CPU cores; full: a 9 x 9 grid for a GPU.
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

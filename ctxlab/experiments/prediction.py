"""A staircase prediction set beside a training run: the rows ``ctxlab predict`` prints, its JSON, the
training length that covers every predicted rung, and the command itself."""

from __future__ import annotations

import time
from pathlib import Path

from ctxlab.experiments.outputs import check_before_training, report_divergence, save_outputs
from ctxlab.experiments.staircase import HEADLINE_TASK, StaircaseResult, default_lr, staircase
from ctxlab.rungs import Rungs, measure_rungs
from ctxlab.tasks import hierarchy_task
from ctxlab.theory.predict import StaircasePrediction, predict_staircase


def training_steps(prediction: StaircasePrediction) -> int:
    """Steps that cover the predicted ladder: as long as the predicted curves (the last predicted onset and a
    third more, unless the prediction was asked for another length)."""
    return int(prediction.steps[-1])


def measured(prediction: StaircasePrediction, result: StaircaseResult | None) -> list[Rungs | None]:
    """Each run's loss read against the predicted ladder (sub-levels included); None for a diverged run."""
    if result is None:
        return [None] * len(prediction.gammas)
    traj = result.trajectory
    return [None if int(traj.diverged_at[k]) >= 0 else measure_rungs(traj.steps, traj.loss[k], prediction.levels)
            for k in range(traj.n_models)]


def _relative(predicted: int, seen: int | None) -> str:
    if seen is None or seen <= 0 or predicted <= 0:
        return ""
    return f"{100 * (predicted - seen) / seen:+.0f}%"


def compare(prediction: StaircasePrediction, result: StaircaseResult | None = None) -> str:
    """A plain-text table: per run and rung the predicted onset and dwell, and the measured ones beside them."""
    reads = measured(prediction, result)
    rows = [f"{'gamma':>5} {'seed':>4} {'level':<26} {'loss':>7} {'onset':>6} {'dwell':>6}"
            + ("" if result is None else f" {'measured':>8} {'dwell':>6} {'onset off':>9}")]
    for k, (g, s) in enumerate(zip(prediction.gammas, prediction.seeds)):
        if result is not None and reads[k] is None:
            rows.append(f"{g:>5g} {s:>4d} diverged at step {int(result.trajectory.diverged_at[k])}")
            continue
        for j, rung in enumerate(prediction.rungs):
            onset, dwell = int(rung.onset[k]), int(rung.dwell[k])
            row = f"{g:>5g} {s:>4d} {rung.name:<26} {rung.level:>7.4f} {onset if onset >= 0 else '-':>6} {dwell:>6d}"
            if result is not None:
                seen = reads[k].rungs[j]
                seen_onset = seen.onset if seen.onset >= 0 else None
                row += (f" {seen_onset if seen_onset is not None else '-':>8} {seen.dwell:>6d} "
                        f"{_relative(onset, seen_onset) if j else '':>9}")
            rows.append(row)
    return "\n".join(rows)


def prediction_json(prediction: StaircasePrediction, result: StaircaseResult | None = None) -> dict:
    """{"task", "training", "runs": [{"gamma", "seed", "rungs": [{"name", "level", "predicted_onset",
    "measured_onset", "predicted_dwell", "measured_dwell"}]}]}; measured fields null without a run."""
    reads = measured(prediction, result)
    task = prediction.task
    runs = []
    for k, (g, s) in enumerate(zip(prediction.gammas, prediction.seeds)):
        rungs = []
        for j, rung in enumerate(prediction.rungs):
            seen = None if reads[k] is None else reads[k].rungs[j]
            rungs.append({
                "name": rung.name, "level": round(rung.level, 6), "sub_level": rung.sub,
                "predicted_onset": None if int(rung.onset[k]) < 0 else int(rung.onset[k]),
                "measured_onset": None if seen is None or seen.onset < 0 else seen.onset,
                "predicted_dwell": int(rung.dwell[k]),
                "measured_dwell": None if seen is None else seen.dwell,
            })
        runs.append({"gamma": g, "seed": s, "rungs": rungs})
    training = {"optimizer": "gd", "lr": prediction.lr, "d": prediction.d, "hidden": prediction.hidden,
                "steps": None if result is None else result.trajectory.config["steps"]}
    return {"task": {"name": task.name, "values": task.n_labels, "block": task.info["block"],
                     "mix": list(task.info["mix"]), "description": task.description},
            "training": training, "runs": runs, "stalls": prediction.stalls}


# --- the command line's `ctxlab predict` ---

def task_options(args) -> dict:
    """The hierarchy task of ``--values --block --mix`` (the headline task where not given), checked now."""
    chosen = {"n_values": args.values, "block": args.block, "mix": args.mix}
    task_args = {**HEADLINE_TASK, **{k: v for k, v in chosen.items() if v is not None}}
    task_args["mix"] = tuple(task_args["mix"])
    hierarchy_task(**task_args)  # bad task options fail before any work
    return task_args


def predict_command(args) -> int:
    """``ctxlab predict``: the predicted ladder with onsets; with ``--train`` also the run, measured beside it."""
    from ctxlab.plots import prediction_figure

    figure_path = Path(args.out) / "prediction.png"
    check_before_training(args.device, figure_path, args.json)
    task_args = task_options(args)
    task = hierarchy_task(**task_args)
    lr = args.lr if args.lr is not None else default_lr(task.seq_len)
    hidden = args.hidden if args.hidden is not None else 4 * args.width
    start = time.perf_counter()
    prediction = predict_staircase(task, args.gammas, list(range(args.seeds)), lr=lr, d=args.width, hidden=hidden,
                                   progress=not args.no_progress)
    print(f"predicted in {time.perf_counter() - start:.1f} s (no training)")
    for note in prediction.stalls:
        print(f"note: {note}")
    result = None
    if args.train:
        result = staircase(args.gammas, list(range(args.seeds)), steps=args.steps or training_steps(prediction),
                           lr=lr, device=args.device, profile=args.profile, progress=not args.no_progress, task=task,
                           d=args.width, hidden=hidden, on_divergence="record")
        print(f"trained {len(result.gammas)} models in {result.seconds:.1f} s")
    print(compare(prediction, result))
    save_outputs(prediction_figure(prediction, result), figure_path, prediction_json(prediction, result), args.json)
    return 0 if result is None else report_divergence("predict", result.trajectory, "--lr")

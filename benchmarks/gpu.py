"""The course's experiments at full scale on one GPU, in one run (``benchmarks/gpu.sh`` calls it).

1. Ensembles: the staircase and the attention experiment with >= 8 gammas x 4 seeds trained as one
   batch, against the same models trained one after another (same steps): the ensemble's speed-up.
2. The full profiles themselves: ``staircase(profile="full")`` and ``attention_experiment(profile="full")``
   on that grid, read rung by rung (JSON and figures, as ``ctxlab staircase/attention --json`` write them).
3. The GPT at three precisions (fp32 with TF32 off, TF32 matmuls, bf16 autocast with fp32 weights):
   tokens/s, model FLOP utilisation against the matching peak, and whether the dynamics survive: the
   steps of the KL minima and the held-out loss curve, each against the seed spread of fp32.

``--profile tiny`` runs every part end to end on a CPU in seconds (the CI smoke test); it measures
nothing worth reporting. Writes OUT/gpu.json, OUT/*.png and prints a table per part.

    python benchmarks/gpu.py OUT --profile full --device cuda
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lm_throughput import flops_per_token  # noqa: E402  (a sibling benchmark script)

from ctxlab.attention_exp import LR, POINTER_TASK, attention_experiment, attention_model  # noqa: E402
from ctxlab.experiments import (  # noqa: E402
    HEADLINE_TASK,
    LM_PROFILES,
    STAIRCASE_PROFILES,
    language_model,
    staircase,
    strict_json,
)
from ctxlab.models import make_model  # noqa: E402
from ctxlab.tasks import hierarchy_task, pointer_task  # noqa: E402
from ctxlab.train import train  # noqa: E402

# Dense peaks of one H100/H200 SXM in TFLOP/s (NVIDIA's data sheet, without sparsity).
H200_PEAKS = {"fp32": 67.0, "tf32": 494.7, "bf16": 989.4}

PROFILES = {
    # gammas x seeds, steps timed for the speed-up, and what each full run uses
    "full": {"gammas": [0.5 + 0.125 * i for i in range(9)], "seeds": 4, "timed_steps": 500,
             "staircase": {"profile": "full"}, "attention": {"profile": "full"},
             "lm": {"profile": "full", "seeds": 3}},
    "tiny": {"gammas": [0.75, 1.0], "seeds": 2, "timed_steps": 5,
             "staircase": {"profile": "quick", "steps": 40}, "attention": {"profile": "quick", "steps": 40},
             "lm": {"profile": "quick", "seeds": 2, "steps": 10, "record_every": 5, "d": 16, "context": 8}},
}


def synced(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def timed(fn, device: str) -> float:
    synced(device)
    start = time.perf_counter()
    fn()
    synced(device)
    return time.perf_counter() - start


def ensemble_speedup(kind: str, gammas: list[float], seeds: list[int], steps: int, device: str) -> dict:
    """Seconds for all (gamma, seed) models in one batch, and one after another, for ``steps`` updates."""
    if kind == "staircase":
        task, sizes = hierarchy_task(**HEADLINE_TASK), STAIRCASE_PROFILES["full"]
        build = lambda g, s: make_model("mlp", task, d=sizes["d"], hidden=sizes["hidden"], gamma=g, seed=s)  # noqa: E731
        lr = 1.0
    else:
        task = pointer_task(**POINTER_TASK)
        build = lambda g, s: attention_model(task, g, s, [False] * len(g))  # noqa: E731
        lr = LR
    grid = [(g, s) for g in gammas for s in seeds]
    fit = lambda model: train(model, task.population, steps, lr=lr, record_every=steps, device=device, progress=False)  # noqa: E731
    fit(build([1.0], [0]))  # warm-up: kernels, allocator
    together = timed(lambda: fit(build([g for g, _ in grid], [s for _, s in grid])), device)
    apart = timed(lambda: [fit(build([g], [s])) for g, s in grid], device)
    return {"models": len(grid), "steps": steps, "ensemble_s": together, "one_by_one_s": apart,
            "speedup": apart / together}


def precision_runs(settings: dict, device: str, peaks: dict[str, float] | None) -> dict:
    """The GPT at each precision: throughput, MFU and whether the dynamics stay within fp32's seed spread."""
    settings = dict(settings)
    seeds = list(range(settings.pop("seeds")))
    runs = {}
    for precision in ("fp32", "tf32", "bf16"):
        result = language_model(gammas=(1.0,), seeds=seeds, device=device, progress=False, precision=precision,
                                **settings)
        cfg = dict(LM_PROFILES[settings["profile"]], **{k: v for k, v in settings.items() if k != "profile"})
        flops = flops_per_token(cfg, result.config["vocab"]) * result.tokens_per_second
        runs[precision] = {"result": result, "tokens_per_second": result.tokens_per_second, "tflops": flops / 1e12,
                           "mfu": None if peaks is None else flops / (peaks[precision] * 1e12)}
    ref = runs["fp32"]["result"]
    low, high = ref.trajectory.loss.min(0).values, ref.trajectory.loss.max(0).values
    ref_minima = ref.kl_minimum_steps()
    table = {}
    for precision, run in runs.items():
        result = run.pop("result")
        mean = result.trajectory.loss.mean(0)
        inside = ((mean >= low - 1e-6) & (mean <= high + 1e-6)).float().mean()
        minima = result.kl_minimum_steps()
        kl_ok = {name: min(ref_minima[name]) <= sorted(steps)[len(steps) // 2] <= max(ref_minima[name])
                 for name, steps in minima.items()}
        table[precision] = {**run, "kl_minimum_steps": minima,
                            "loss_mean_inside_fp32_seed_range": float(inside),
                            "kl_minima_inside_fp32_seed_range": kl_ok,
                            "final_loss": result.trajectory.loss[:, -1].tolist(),
                            "steps": result.trajectory.steps.tolist(), "loss": result.trajectory.loss.tolist()}
    return table


def precision_figure(table: dict):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3.6))
    for (precision, row), color in zip(table.items(), ("black", "#1f78b4", "#e6550d")):
        for j, curve in enumerate(row["loss"]):
            ax.plot(row["steps"], curve, color=color, lw=1, alpha=0.8, label=precision if j == 0 else None)
    ax.set_xlabel("step")
    ax.set_ylabel("held-out loss (nats)")
    ax.set_title("the GPT at three precisions (every seed a line)")
    ax.legend()
    fig.tight_layout()
    return fig


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--profile", choices=sorted(PROFILES), default="full")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args()
    from ctxlab.plots import attention_figure, staircase_figure

    p = PROFILES[args.profile]
    args.out.mkdir(parents=True, exist_ok=True)
    cuda = args.device.startswith("cuda")
    report = {"profile": args.profile, "device": torch.cuda.get_device_name(0) if cuda else platform.processor() or "cpu",
              "torch": torch.__version__, "cuda": torch.version.cuda, "python": platform.python_version()}
    seeds = list(range(p["seeds"]))
    start = time.perf_counter()

    print(f"== 1. ensembles: {len(p['gammas'])} gammas x {len(seeds)} seeds, {p['timed_steps']} steps")
    print(f"{'experiment':<10} {'models':>6} {'ensemble s':>10} {'one by one s':>12} {'speed-up':>8}")
    report["ensemble"] = {}
    for kind in ("staircase", "attention"):
        row = ensemble_speedup(kind, p["gammas"], seeds, p["timed_steps"], args.device)
        report["ensemble"][kind] = row
        print(f"{kind:<10} {row['models']:>6} {row['ensemble_s']:>10.2f} {row['one_by_one_s']:>12.2f} {row['speedup']:>7.1f}x")

    print("== 2. the full profiles")
    result = staircase(gammas=p["gammas"], seeds=seeds, device=args.device, progress=False, **p["staircase"])
    print(result.table())
    report["staircase"] = result.to_json()
    staircase_figure(result, gammas=[0.5, 1.0, 1.5] if args.profile == "full" else None).savefig(args.out / "staircase.png", dpi=110)
    result = attention_experiment(gammas=p["gammas"], seeds=seeds, device=args.device, progress=False, **p["attention"])
    print(result.table())
    report["attention"] = result.to_json()
    attention_figure(result, gammas=[1.0]).savefig(args.out / "attention.png", dpi=110)

    print("== 3. the GPT at three precisions")
    table = precision_runs(p["lm"], args.device, H200_PEAKS if cuda else None)
    print(f"{'precision':<9} {'tokens/s':>11} {'TFLOP/s':>8} {'MFU':>6} {'loss in fp32 range':>18}  KL minima in fp32 range")
    for precision, row in table.items():
        mfu = "-" if row["mfu"] is None else f"{100 * row['mfu']:.1f}%"
        print(f"{precision:<9} {row['tokens_per_second']:>11.0f} {row['tflops']:>8.2f} {mfu:>6} "
              f"{row['loss_mean_inside_fp32_seed_range']:>17.0%}  {row['kl_minima_inside_fp32_seed_range']}")
    report["gpt_precision"] = {"peaks_tflops": H200_PEAKS if cuda else None, "runs": table}
    precision_figure(table).savefig(args.out / "gpt_precision.png", dpi=110)

    report["seconds"] = time.perf_counter() - start
    numbers, replaced = strict_json(report)
    (args.out / "gpu.json").write_text(json.dumps(numbers, indent=1, allow_nan=False) + "\n")
    print(f"wrote {args.out / 'gpu.json'} and the figures in {report['seconds']:.0f} s"
          + (f" ({len(replaced)} non-finite values written as null)" if replaced else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

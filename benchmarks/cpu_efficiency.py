"""How close the CPU path runs to this machine's own matmul peak, batched and under a competing load.

    python benchmarks/cpu_efficiency.py [--steps 1000] [--json OUT.json]

Four measurements, each printed as a table row:

1. **peak**: fp32 matmul FLOP/s of this machine (2048 x 2048 products) with 1 and 2 threads;
2. **achieved**: the model FLOP/s of `ctxlab staircase`'s training (quick profile, 9 models) and of the
   GPT's quick profile, counted by torch's FlopCounterMode for one step and divided by the measured
   time per step; the ratio to the peak at the same thread count;
3. **ensemble**: the 9 staircase models in one batched ensemble against the same 9 trained one after another;
4. **threads under load**: `ctxlab staircase --steps N --gammas 1.0 --seeds 3` as a fresh process with
   2 threads, 1 thread and 2 threads with OMP_WAIT_POLICY=PASSIVE, on an idle machine and with one core
   kept busy by a spinning process (Binder and Colab share their CPUs). The course's default (set in
   `ctxlab/__init__.py` for processes that import ctxlab before torch) is chosen from this table.

Run it on an otherwise idle machine; the numbers are this machine's, not a target.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import torch
from torch.utils.flop_counter import FlopCounterMode

from ctxlab.experiments import HEADLINE_TASK, LM_PROFILES, STAIRCASE_PROFILES
from ctxlab.models import ensemble_grid, make_model
from ctxlab.tasks import hierarchy_task
from ctxlab.train import cross_entropy, train

GAMMAS, SEEDS = (0.5, 1.0, 1.5), (0, 1, 2)


def matmul_peak(threads: int, n: int = 2048, repeats: int = 10) -> float:
    """Best-of-``repeats`` fp32 FLOP/s of an n x n matmul."""
    torch.set_num_threads(threads)
    a, b = torch.randn(n, n), torch.randn(n, n)
    a @ b  # warm-up
    best = min(_seconds(lambda: a @ b) for _ in range(repeats))
    return 2 * n**3 / best


def _seconds(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def staircase_models(gammas=GAMMAS, seeds=SEEDS):
    sizes = STAIRCASE_PROFILES["quick"]
    task = hierarchy_task(block=HEADLINE_TASK["block"], n_values=HEADLINE_TASK["n_values"], mix=HEADLINE_TASK["mix"])
    g, s = ensemble_grid(gammas, seeds)
    return task, make_model("mlp", task, d=sizes["d"], hidden=sizes["hidden"], gamma=g, seed=s)


def step_flops(loss_fn) -> int:
    """Model FLOPs of one forward + backward, as torch counts them (matmuls and convolutions)."""
    counter = FlopCounterMode(display=False)
    with counter:
        loss_fn().sum().backward()
    return counter.get_total_flops()


def staircase_achieved(threads: int, steps: int) -> dict:
    torch.set_num_threads(threads)
    task, model = staircase_models()
    flops = step_flops(lambda: cross_entropy(model(task.population.x), task.population))
    seconds = _seconds(lambda: train(model, task.population, steps, record_every=5, progress=False))
    return {"flops_per_step": flops, "seconds_per_step": seconds / steps, "flops_per_second": flops * steps / seconds}


def gpt_achieved(threads: int, steps: int) -> dict:
    """The GPT's quick-profile step on random character-sized tokens (the data do not change the FLOPs)."""
    from ctxlab.lm import TinyGPT, train_lm

    torch.set_num_threads(threads)
    cfg = LM_PROFILES["quick"]
    vocab = 65  # the shipped text's character vocabulary is about this size
    tokens = torch.randint(0, vocab, (200_000,), generator=torch.Generator().manual_seed(0))
    model = TinyGPT(vocab, cfg["context"], d=cfg["d"], n_layers=cfg["n_layers"], n_heads=cfg["n_heads"])
    batch = tokens[: cfg["batch_size"] * (cfg["context"] + 1)].reshape(cfg["batch_size"], -1)
    flops = step_flops(lambda: torch.nn.functional.cross_entropy(
        model(batch[:, :-1]).reshape(-1, vocab), batch[:, 1:].reshape(-1)))
    seconds = _seconds(lambda: train_lm(model, tokens, steps, eval_tokens=tokens[:20_000], batch_size=cfg["batch_size"],
                                        lr=cfg["lr"], record_every=steps, progress=False))
    return {"flops_per_step": flops, "seconds_per_step": seconds / steps, "flops_per_second": flops * steps / seconds}


def ensemble_speedup(threads: int, steps: int) -> dict:
    torch.set_num_threads(threads)
    task, model = staircase_models()
    batched = _seconds(lambda: train(model, task.population, steps, record_every=5, progress=False))
    start = time.perf_counter()
    for g, s in zip(*ensemble_grid(GAMMAS, SEEDS)):
        _, alone = staircase_models([g], [s])
        train(alone, task.population, steps, record_every=5, progress=False)
    one_by_one = time.perf_counter() - start
    return {"batched_seconds": batched, "one_by_one_seconds": one_by_one, "speedup": one_by_one / batched}


THREAD_SETTINGS = {
    "2 threads": {"OMP_NUM_THREADS": "2", "OMP_WAIT_POLICY": "ACTIVE"},
    "1 thread": {"OMP_NUM_THREADS": "1", "OMP_WAIT_POLICY": "ACTIVE"},
    "2 threads, PASSIVE": {"OMP_NUM_THREADS": "2", "OMP_WAIT_POLICY": "PASSIVE"},
}


def command_seconds(env_overrides: dict, steps: int) -> float:
    with tempfile.TemporaryDirectory() as out:
        env = {**os.environ, **env_overrides}
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "ctxlab.cli", "staircase", "--steps", str(steps), "--gammas", "1.0",
                        "--seeds", "3", "--no-progress", "--out", out], env=env, check=True, stdout=subprocess.DEVNULL)
        return time.perf_counter() - start


def threads_under_load(steps: int) -> dict:
    table = {}
    for load in ("idle", "one core busy"):
        spinner = None
        if load != "idle":
            spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        try:
            table[load] = {name: command_seconds(env, steps) for name, env in THREAD_SETTINGS.items()}
        finally:
            if spinner is not None:
                spinner.kill()
                spinner.wait()
    return table


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1000, help="training steps per timed run (default 1000)")
    parser.add_argument("--json", help="also write the numbers to this JSON file")
    args = parser.parse_args()
    report: dict = {"torch": torch.__version__, "cpus": os.cpu_count()}
    report["peak"] = {t: matmul_peak(t) for t in (1, 2)}
    for t, flops in report["peak"].items():
        print(f"peak fp32 matmul, {t} thread(s): {flops / 1e9:7.1f} GFLOP/s")
    for name, measure in (("staircase", staircase_achieved), ("gpt", gpt_achieved)):
        report[name] = {t: measure(t, args.steps if name == "staircase" else max(20, args.steps // 10)) for t in (1, 2)}
        for t, row in report[name].items():
            print(f"{name:>9}, {t} thread(s): {row['flops_per_step'] / 1e6:8.1f} MFLOP/step, "
                  f"{row['seconds_per_step'] * 1e3:6.1f} ms/step, {row['flops_per_second'] / 1e9:6.2f} GFLOP/s = "
                  f"{100 * row['flops_per_second'] / report['peak'][t]:4.1f} % of peak")
    report["ensemble"] = ensemble_speedup(2, max(100, args.steps // 4))
    e = report["ensemble"]
    print(f"9 staircase models, 2 threads: batched {e['batched_seconds']:.1f} s, one after another "
          f"{e['one_by_one_seconds']:.1f} s: {e['speedup']:.1f}x")
    report["threads"] = threads_under_load(args.steps)
    print(f"`ctxlab staircase --steps {args.steps} --gammas 1.0 --seeds 3`, seconds:")
    print(f"{'':>15}" + "".join(f"{name:>20}" for name in THREAD_SETTINGS))
    for load, row in report["threads"].items():
        print(f"{load:>15}" + "".join(f"{row[name]:>20.1f}" for name in THREAD_SETTINGS))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Lesson 07's training run through autograd's generic path and through the written-out step.

    python benchmarks/attention_step.py [--steps 4000] [--repeats 3] [--threads 1]

Trains lesson 07's batch (``ctxlab.attention_exp.train_attention``: three seeds at gamma 1 and their
uniform-attention twins, the pointer task, lr 0.08, its probes every 20 steps) for ``--steps`` steps,
each path in a fresh process, the two paths taking turns ``--repeats`` times (this machine's speed
drifts; the best of each is printed). Prints ms per step for each path, the speed-up, and the largest
|loss difference| between the two runs' recorded loss curves.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

CHILD = """
import json, sys, time
import ctxlab, torch
from ctxlab.attention_exp import POINTER_TASK, train_attention
from ctxlab.models import EmbAttention
from ctxlab.tasks import pointer_task
EmbAttention.written_out = sys.argv[1] == "written-out"
task = pointer_task(**POINTER_TASK)
start = time.perf_counter()
run = train_attention(task, [1.0] * 3, [0, 1, 2], int(sys.argv[2]), record_every=20, progress=False)
seconds = time.perf_counter() - start
json.dump({"seconds": seconds, "threads": torch.get_num_threads(), "loss": run.loss.tolist()}, open(sys.argv[3], "w"))
"""
PATHS = ("generic", "written-out")


def one_run(path: str, steps: int, threads: int) -> dict:
    """One training run of lesson 07's batch through ``path``, in a fresh process with ``threads`` threads."""
    env = {**os.environ, "CTXLAB_THREADS": str(threads)}
    with tempfile.TemporaryDirectory() as out:
        result = os.path.join(out, "run.json")
        subprocess.run([sys.executable, "-c", CHILD, path, str(steps), result], env=env, check=True)
        with open(result) as f:
            return json.load(f)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=4000, help="training steps per run (default 4000)")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each path, taking turns (default 3)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1, the course's on 2 cores)")
    parser.add_argument("--json", help="also write the numbers to this JSON file")
    args = parser.parse_args()
    runs: dict[str, list[dict]] = {path: [] for path in PATHS}
    started = time.perf_counter()
    for _ in range(args.repeats):
        for path in PATHS:
            runs[path].append(one_run(path, args.steps, args.threads))
    best = {path: min(r["seconds"] for r in rows) / args.steps for path, rows in runs.items()}
    losses = [runs[path][0]["loss"] for path in PATHS]
    gap = max(abs(a - b) for ca, cb in zip(*losses) for a, b in zip(ca, cb))
    print(f"lesson 07's batch (6 models), {args.steps} steps, {args.threads} thread(s), best of {args.repeats}:")
    for path in PATHS:
        every = ", ".join(f"{r['seconds']:.1f}" for r in runs[path])
        print(f"  {path:<12} {best[path] * 1e3:6.2f} ms/step   (runs: {every} s)")
    print(f"  speed-up {best['generic'] / best['written-out']:.2f}x; largest |loss difference| over the run {gap:.1e}")
    print(f"  ({time.perf_counter() - started:.0f} s in all)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"steps": args.steps, "threads": args.threads, "ms_per_step": {p: 1e3 * best[p] for p in PATHS},
                       "speedup": best["generic"] / best["written-out"], "max_loss_difference": gap}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Choose the pointer task, block and learning rate of ``ctxlab attention`` by measuring them.

For each n_ctx asked for, trains lesson 07's attention model (``ATTENTION_MODEL``: d 16, hidden 64,
GELU head, a residual, the prediction read at the key's position; gamma 1, full-batch plain GD) at
several learning rates and seeds in one batch, and prints, per run, what the acceptance of issue 14
reads: the dwell on each level (the course's tolerance, 0.01), the largest rise after leaving ln C and where it
happens, the end minus H(Y | key, x_p), the largest |attention - 1/L| while the loss is on H(Y | key),
and the attention to the named position at the end. ``--plain`` trains the plain block instead
(no residual, logits averaged over positions), to see what the residual and the read-out change.

    OMP_NUM_THREADS=1 PYTHONPATH=$PWD python benchmarks/attention_task.py                  # the chosen setting
    OMP_NUM_THREADS=1 PYTHONPATH=$PWD python benchmarks/attention_task.py --lrs 0.1 0.15 0.2 --seeds 3
    OMP_NUM_THREADS=1 PYTHONPATH=$PWD python benchmarks/attention_task.py --plain --n-ctx 2 3 --lrs 0.2
"""

from __future__ import annotations

import argparse
import time

import torch

from ctxlab.attention_exp import ATTENTION_PROFILES, LR, POINTER_TASK, attention_model, attention_on_rung
from ctxlab.rungs import TOL, measure_rungs
from ctxlab.tasks import pointer_task
from ctxlab.theory import target_attention
from ctxlab.train import train


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n-ctx", type=int, nargs="+", default=[POINTER_TASK["n_ctx"]])
    p.add_argument("--mix", type=float, default=POINTER_TASK["mix"][0], help="probability of the order-1 rule")
    p.add_argument("--values", type=int, default=POINTER_TASK["n_values"], help="attribute values C (labels in Z_C)")
    p.add_argument("--lrs", type=float, nargs="+", default=[LR])
    p.add_argument("--seeds", type=int, default=6)
    p.add_argument("--steps", type=int, default=ATTENTION_PROFILES["quick"]["steps"])
    p.add_argument("--gamma", type=float, default=1.0)
    p.add_argument("--plain", action="store_true", help="no residual, logits averaged over positions")
    args = p.parse_args()
    block = {"residual": False, "readout": "mean"} if args.plain else {}
    for n_ctx in args.n_ctx:
        task = pointer_task(n_ctx=n_ctx, n_values=args.values, mix=(args.mix, 1 - args.mix))
        levels, L = task.plateau_levels(), task.seq_len
        print(f"n_ctx {n_ctx}: levels {[round(h, 4) for h in levels]}, bag floor {task.info['bag_level']:.4f}")
        lrs = [lr for lr in args.lrs for _ in range(args.seeds)]
        seeds = list(range(args.seeds)) * len(args.lrs)
        model = attention_model(task, args.gamma, seeds, **block)
        start = time.perf_counter()
        traj = train(model, task.population, args.steps, lr=lrs, record_every=10, progress=False,
                     on_divergence="record", probes={"att": target_attention(task), "qk": lambda m: m.qk_norm()})
        print(f"  {len(lrs)} models x {args.steps} steps: {time.perf_counter() - start:.0f} s")
        for k, (lr, seed) in enumerate(zip(lrs, seeds)):
            if int(traj.diverged_at[k]) >= 0:
                print(f"  lr {lr} seed {seed}: diverged at step {int(traj.diverged_at[k])}")
                continue
            loss, att = traj.loss[k], traj.extras["att"][k]
            read = measure_rungs(traj.steps, loss, levels, TOL)
            flat = attention_on_rung(loss, att, levels[1], L)
            left = (loss < levels[0] - TOL).nonzero()
            at = -1
            if len(left):
                after = loss[int(left[0]):]
                at = int(traj.steps[int(left[0]) + int((after - torch.cummin(after, 0).values).argmax())])
            print(f"  lr {lr} seed {seed}: dwell {read.dwells()} rise {read.rise:.4f} (step {at}) "
                  f"end-H2 {read.final - levels[-1]:+.4f} |a-1/L| on H1 {flat if flat is None else round(flat, 4)} "
                  f"a end {float(att[-1]):.3f} qk {float(traj.extras['qk'][k, 0]):.3g} -> {float(traj.extras['qk'][k, -1]):.3g}")


if __name__ == "__main__":
    main()

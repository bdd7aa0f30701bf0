"""How long `ctxlab staircase` takes in the quick profile, batched vs one model after another.

    python benchmarks/staircase_speed.py [--threads 2] [--sequential]

Prints seconds per run. Target (issue 2): the quick profile (3 gammas x 3 seeds, 4000 GD steps)
in <= 60 s on 2 CPU cores. Run it on an otherwise idle machine: a shared CPU makes torch's
OpenMP threads spin and can slow it down many times over.
"""

from __future__ import annotations

import argparse
import time

import torch

from ctxlab.experiments import HEADLINE_TASK, STAIRCASE_PROFILES, staircase
from ctxlab.models import ensemble_grid, make_model
from ctxlab.tasks import hierarchy_task
from ctxlab.train import train


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--sequential", action="store_true", help="also time the 9 runs one after another")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    start = time.perf_counter()
    result = staircase(profile="quick", progress=False)
    batched = time.perf_counter() - start
    print(f"threads {args.threads}: staircase (9 models, batched, incl. measuring): {batched:.1f} s "
          f"(training alone {result.seconds:.1f} s)")
    if args.sequential:
        sizes = STAIRCASE_PROFILES["quick"]
        task = hierarchy_task(block=HEADLINE_TASK["block"], n_values=HEADLINE_TASK["n_values"], mix=HEADLINE_TASK["mix"])
        start = time.perf_counter()
        for g, s in zip(*ensemble_grid((0.5, 1.0, 1.5), (0, 1, 2))):
            model = make_model("mlp", task, d=sizes["d"], hidden=sizes["hidden"], gamma=g, seed=s)
            train(model, task.population, sizes["steps"], record_every=sizes["record_every"], progress=False)
        print(f"threads {args.threads}: the same 9 models one after another: {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()

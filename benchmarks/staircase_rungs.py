"""Issue 13's acceptance run: the headline staircase and a 4-order task, read rung by rung.

    python benchmarks/staircase_rungs.py            # both tasks, 3 seeds, quick profile (a few minutes)

For each task it runs ``ctxlab staircase --json`` (the command users run), reads the JSON back and
checks, at gamma = 1 in every seed: a dwell of >= 100 steps within 0.01 nats of every intermediate
level (flat there, as ctxlab.rungs reads it; the steps within 0.01 at any slope are printed beside
it, and so is every tread of 50 steps or more at no predicted level), no rise of more than 0.01 after leaving H0, an end within 0.01 of the last level; for the
headline task also that the gamma = 0.5 dwell on H1 is at most a fifth of gamma = 1's. It prints
the dwells, the wall time of each command, and exits non-zero when a criterion fails.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from ctxlab.rungs import measure_rungs, treads

RUNS = {
    "headline": [],
    "4 orders": ["--values", "2", "--block", "6", "--mix", "0.25", "0.25", "0.25", "0.25", "--steps", "6000",
                 "--gammas", "1.0"],
}


def check(name: str, data: dict) -> list[str]:
    failures = []
    runs = {(r["gamma"], r["seed"]): r for r in data["runs"]}
    small = [r for (g, _), r in sorted(runs.items()) if g == 1.0]
    levels = [level["loss"] for level in data["levels"]]
    for r in small:
        dwells = [rung["dwell_steps"] for rung in r["rungs"]]
        near = measure_rungs(torch.tensor(r["steps"]), torch.tensor(r["loss"]), levels, flat=math.inf).dwells()
        last = levels[-1]
        print(f"{name}: gamma 1 seed {r['seed']}: dwell per rung {dwells} (steps within 0.01 at any slope: {near}), "
              f"max rise {r['max_rise']:.4f}, final - last level {r['final_loss'] - last:+.4f}")
        unpredicted = [t for t in treads(torch.tensor(r["steps"]), torch.tensor(r["loss"]))
                       if min(abs(t.level - h) for h in levels) > data["tolerance"]]
        for t in unpredicted:
            k = min(range(len(levels)), key=lambda j: abs(t.level - levels[j]))
            print(f"  a tread at no predicted level: {t.level:.4f} for {t.steps} steps ({t.first}-{t.last}), "
                  f"{t.level - levels[k]:+.4f} from the nearest level H{k}")
        if min(dwells[1:-1]) < 100:
            failures.append(f"{name} seed {r['seed']}: an intermediate dwell below 100 steps ({dwells})")
        if r["max_rise"] > 0.01:
            failures.append(f"{name} seed {r['seed']}: the loss rose by {r['max_rise']:.4f}")
        if abs(r["final_loss"] - last) > 0.01:
            failures.append(f"{name} seed {r['seed']}: ends {r['final_loss'] - last:+.4f} from the last level")
    standard = [r for (g, _), r in sorted(runs.items()) if g == 0.5]
    if standard:
        shortest = min(r["rungs"][1]["dwell_steps"] for r in small)
        worst = max(r["rungs"][1]["dwell_steps"] for r in standard)
        print(f"{name}: gamma 0.5 H1 dwell at most {worst} steps; gamma 1 at least {shortest}")
        if 5 * worst > shortest:
            failures.append(f"{name}: gamma 0.5 H1 dwell {worst} is more than a fifth of {shortest}")
    return failures


def main() -> int:
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, extra in RUNS.items():
            out = Path(tmp) / name.replace(" ", "_")
            start = time.perf_counter()
            subprocess.run([sys.executable, "-m", "ctxlab.cli", "staircase", "--profile", "quick", "--no-progress",
                            "--out", str(out), "--json", str(out / "staircase.json"), *extra], check=True,
                           stdout=subprocess.DEVNULL)
            print(f"{name}: `ctxlab staircase {' '.join(extra)}` took {time.perf_counter() - start:.1f} s")
            failures += check(name, json.loads((out / "staircase.json").read_text()))
    for line in failures:
        print("FAIL", line)
    print("all criteria hold" if not failures else f"{len(failures)} criteria fail")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

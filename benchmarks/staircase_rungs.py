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

from ctxlab.dataset import Dataset
from ctxlab.rungs import measure_rungs, treads
from ctxlab.signatures import conditional_entropy
from ctxlab.tasks import hierarchy_task

RUNS = {
    "headline": [],
    "4 orders": ["--values", "2", "--block", "6", "--mix", "0.25", "0.25", "0.25", "0.25", "--steps", "6000",
                 "--gammas", "1.0"],
}


def one_cell_short(values: int, block: int, mix) -> dict[str, float]:
    """Candidate sub-levels below H2: the model knows x1, x2 and the third attribute everywhere except in
    one cell (A(x1), A(x2)), where x3 is still a blur: H(Y | x1, x2, x3 outside that cell)."""
    task = hierarchy_task(block=block, n_values=values, mix=tuple(mix))
    pop, attr = task.population, task.info["attribute"]
    found = {}
    for a1 in range(values):
        for a2 in range(values):
            x = pop.x.clone()
            blur = (attr[x[:, 0]] == a1) & (attr[x[:, 1]] == a2)
            x[blur, 2] = 2 * block  # every third token of that cell merged into one
            data = Dataset(x, pop.y, pop.vocab_size, pop.n_labels, pop.weights)
            found[f"x3 unknown where (A(x1), A(x2)) = ({a1}, {a2})"] = conditional_entropy(data, (0, 1, 2))
    return found


def check(name: str, data: dict, candidates: dict[str, float] | None = None) -> list[str]:
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
            if candidates:
                label, value = min(candidates.items(), key=lambda kv: abs(kv[1] - t.level))
                print(f"    nearest one-cell-short sub-level: {value:.4f} ({label}), {t.level - value:+.4f} from it")
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
            candidates = one_cell_short(2, 6, (0.25,) * 4) if name == "4 orders" else None
            if candidates:
                print("4 orders: sub-levels one cell short of H3:",
                      ", ".join(f"{v:.4f}" for v in sorted(set(round(v, 4) for v in candidates.values()))))
            failures += check(name, json.loads((out / "staircase.json").read_text()), candidates)
    for line in failures:
        print("FAIL", line)
    print("all criteria hold" if not failures else f"{len(failures)} criteria fail")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

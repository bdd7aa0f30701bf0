"""Enforce the notebook time budget on an idle machine: run each notebook on a fresh kernel, one at a
time, and exit 1 if any runs longer than its time limit, grows beyond its memory limit, or fails.

`make test` only reports notebook times (a busy machine is not a broken course); run this on an
idle machine before a release, and after making a lesson heavier. Limits default to those of the
test run (``CTXLAB_NOTEBOOK_TIME_LIMIT``, default 120 s; ``CTXLAB_NOTEBOOK_MEMORY_LIMIT``, 800 MiB).

    python benchmarks/notebook_budget.py [NOTEBOOK ...] [--time-limit S] [--memory-limit MIB]

With no notebook given it runs every lesson and solution notebook. Kernels run with ``CI=true``
(the quick profile), as under `make test`, and the machine's default thread count.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ctxlab.course.budget import MEMORY_LIMIT_MB, TIME_LIMIT_S
from ctxlab.course.notebooks import find_root, read
from ctxlab.course.runner import run

ROOT = find_root(Path(__file__).parent)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: lessons/*.ipynb solutions/*.ipynb")
    parser.add_argument("--time-limit", type=float, default=TIME_LIMIT_S, metavar="S", help="seconds per notebook")
    parser.add_argument("--memory-limit", type=float, default=MEMORY_LIMIT_MB, metavar="MIB", help="peak kernel RSS")
    args = parser.parse_args()
    paths = args.notebooks or sorted((ROOT / "lessons").glob("*.ipynb")) + sorted((ROOT / "solutions").glob("*.ipynb"))
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        parser.error(f"no notebook at {', '.join(missing)}")
    limits = f"limits {args.time_limit:.0f} s / {args.memory_limit:.0f} MiB"
    print(f"{'notebook':<42} {'wall s':>7} {'peak MiB':>9}  {limits}", flush=True)
    failures = []
    for path in paths:
        path = path.resolve()
        name = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)
        # a cell may run until the notebook's limit is used up, plus a margin to report by how much
        result = run(read(path), path.parent, cell_timeout=2 * args.time_limit, timeout=2 * args.time_limit)
        errors = [f"cell {i}: {c.error.splitlines()[0]}" for i, c in sorted(result.cells.items()) if c.error]
        problems = [f"over {args.time_limit:.0f} s"] * (result.wall_s > args.time_limit)
        problems += [f"over {args.memory_limit:.0f} MiB"] * (result.peak_mb > args.memory_limit)
        problems += [result.stopped] * bool(result.stopped) + errors
        print(f"{name:<42} {result.wall_s:>7.1f} {result.peak_mb:>9.0f}  {'; '.join(problems) or 'ok'}", flush=True)
        if problems:
            failures.append(name)
    if failures:
        print(f"notebook budget: {len(failures)} of {len(paths)} notebook(s) over budget or failing: {', '.join(failures)}")
        return 1
    print(f"notebook budget: all {len(paths)} notebook(s) within {args.time_limit:.0f} s and {args.memory_limit:.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())

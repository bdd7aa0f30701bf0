"""Which checked notebook outputs flip on another arithmetic path? Runs every lesson and solution
under each portability mode (ctxlab.course.portability.MODES: MKL's COMPATIBLE branch with ATen's
default kernels on one thread, MKL's and ATen's AVX2 kernels on two threads, and three seeds of a
1e-6 jitter of every initial weight) and prints, per notebook and mode, the cells that flipped: a
checked cell that printed otherwise than the stored notebook, or any cell that raised.

    python benchmarks/portability.py [NOTEBOOK ...] [--modes compatible,jitter-1] [--jobs 2] [--json FILE]

Exit 1 if any cell flipped. On 2 cores, every notebook in all five modes takes about 25 minutes.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ctxlab.course.notebooks import find_root, kernel_env, read
from ctxlab.course.portability import MODES, Sanitizer, checked_outputs, flips
from ctxlab.course.runner import run

ROOT = find_root(Path(__file__).parent)
SANITIZE = Sanitizer(ROOT / "tests" / "nbval_sanitize.cfg")
# the longest first, so that the last job does not run alone (lesson 07 and 03 train the longest)
FIRST = ("07_", "03_", "08_", "09_", "11_", "16_", "14_", "06_")


def check(path: Path, mode: str) -> dict:
    stored = read(path)
    expected = checked_outputs(stored, SANITIZE)
    nb = read(path)
    result = run(nb, path.parent, cell_timeout=600, timeout=900, env={**kernel_env(), **MODES[mode]})
    errors = {i: c.error for i, c in result.cells.items() if c.error}
    found = flips(expected, nb, errors, SANITIZE)
    return {"notebook": path.relative_to(ROOT).as_posix(), "mode": mode, "checked": len(expected),
            "wall_s": round(result.wall_s, 1), "flipped": [f.describe() for f in found]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: lessons/*.ipynb solutions/*.ipynb")
    parser.add_argument("--modes", default=",".join(MODES), help=f"comma-separated, of {', '.join(MODES)}")
    parser.add_argument("--jobs", type=int, default=2, help="notebooks run at once (default 2)")
    parser.add_argument("--json", type=Path, help="also write the report here")
    args = parser.parse_args()
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = [m for m in modes if m not in MODES]
    if unknown or not modes:
        parser.error(f"unknown mode(s) {unknown}; choose from {', '.join(MODES)}")
    if args.jobs < 1:
        parser.error("--jobs must be at least 1")
    paths = [p.resolve() for p in args.notebooks] or sorted((ROOT / "lessons").glob("*.ipynb")) + sorted(
        (ROOT / "solutions").glob("*.ipynb"))
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        parser.error(f"no notebook at {', '.join(missing)}")
    rank = lambda p: next((i for i, f in enumerate(FIRST) if p.name.startswith(f)), len(FIRST))  # noqa: E731
    jobs = [(p, m) for p in sorted(paths, key=rank) for m in modes]
    start = time.perf_counter()
    print(f"{len(paths)} notebook(s) x {len(modes)} mode(s), {args.jobs} at a time", flush=True)
    with ThreadPoolExecutor(args.jobs) as pool:
        reports = []
        for report in pool.map(lambda job: check(*job), jobs):
            reports.append(report)
            verdict = "; ".join(report["flipped"]) or "0 flipped"
            print(f"{report['notebook']:<40} {report['mode']:<11} {report['checked']:>3} checked "
                  f"{report['wall_s']:>6.1f} s  {verdict}", flush=True)
    flipped = [r for r in reports if r["flipped"]]
    total = sum(len(r["flipped"]) for r in reports)
    print(f"portability: {total} flipped cell(s) in {len(flipped)} of {len(reports)} run(s) "
          f"({time.perf_counter() - start:.0f} s)")
    if args.json:
        args.json.write_text(json.dumps({"modes": {m: MODES[m] for m in modes}, "runs": reports}, indent=1) + "\n")
    return 1 if flipped else 0


if __name__ == "__main__":
    sys.exit(main())

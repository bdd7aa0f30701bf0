"""Does the JupyterLab slider test hold on a loaded machine? Keeps one core busy (a spinning
process) and runs ``tests/test_e2e_browser.py::test_sliders_redraw_the_plot_in_jupyterlab`` N times
in a row with its reruns turned off, then prints how many passed.

    python benchmarks/e2e_under_load.py [--runs 20] [--busy 1]

Exit 1 unless every run passed. Needs chromium and the e2e extra, as the test does.
"""

from __future__ import annotations

import argparse
import multiprocessing
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEST = "tests/test_e2e_browser.py::test_sliders_redraw_the_plot_in_jupyterlab"


def spin() -> None:
    while True:
        pass


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--busy", type=int, default=1, help="spinning processes (cores kept busy)")
    args = parser.parse_args()
    spinners = [multiprocessing.Process(target=spin, daemon=True) for _ in range(args.busy)]
    for s in spinners:
        s.start()
    passed = 0
    try:
        for run in range(1, args.runs + 1):
            start = time.perf_counter()
            done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:rerunfailures",
                                   "-q", TEST], cwd=ROOT, capture_output=True, text=True)
            last = (done.stdout.strip().splitlines() or ["(no output)"])[-1]
            passed += done.returncode == 0
            print(f"run {run:>2}: {'pass' if done.returncode == 0 else 'FAIL'} in {time.perf_counter() - start:5.1f} s  "
                  f"{last}", flush=True)
            if "skipped" in last and done.returncode == 0:
                print("the test skipped (no chromium or playwright): nothing measured")
                return 1
    finally:
        for s in spinners:
            s.terminate()
    print(f"e2e under load: {passed} of {args.runs} passed with {args.busy} core(s) kept busy")
    return 0 if passed == args.runs else 1


if __name__ == "__main__":
    sys.exit(main())

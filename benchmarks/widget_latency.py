"""How fast the dashboards answer: sweep build time, and slider change -> finished redraw.

A "redraw" is what a user waits for: the observer runs, the Figure is drawn and rendered to the
PNG the Output shows. Targets (issue 6): redraw median <= 100 ms on a cached sweep; the quick
profile's 8 γ x 3 seeds sweep builds in <= 15 s on 2 CPU cores.

    python benchmarks/widget_latency.py [--moves 60] [--threads 2]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import matplotlib

matplotlib.use("Agg")


def _summary(name: str, seconds: list[float]) -> str:
    ms = sorted(s * 1000 for s in seconds)
    p95 = ms[min(len(ms) - 1, round(0.95 * (len(ms) - 1)))]
    return f"{name:<28} {len(ms):>5} {statistics.median(ms):>9.1f} {p95:>9.1f}"


def _time_moves(control, values: list, n: int) -> list[float]:
    """Set ``control.value`` n times, cycling through values (each differs from the last)."""
    times = []
    for i in range(n):
        start = time.perf_counter()
        control.value = values[i % len(values)]
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--moves", type=int, default=60, help="slider moves per control (>= 50 for the targets)")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's choice)")
    args = parser.parse_args()

    import torch

    from ctxlab.widgets import signature_explorer, staircase_explorer
    from ctxlab.widgets.staircase_sweep import staircase_sweep, sweep_settings

    if args.threads:
        torch.set_num_threads(args.threads)
    settings = sweep_settings("gd", profile="quick")
    load = os.getloadavg()[0]
    start = time.perf_counter()
    sweep = staircase_sweep(settings, report=lambda fraction: None)  # first call: trains (no tqdm)
    build = time.perf_counter() - start
    dash = staircase_explorer(settings)  # finds the sweep in the cache
    gammas = [v for _, v in dash.gamma.options]
    steps = list(range(0, int(sweep.steps[-1]) + 1, settings.record_every * 7))
    rows = [
        _summary("staircase: γ slider", _time_moves(dash.gamma, gammas[1:] + gammas[:1], args.moves)),
        _summary("staircase: step scrubber", _time_moves(dash.step, steps, args.moves)),
        _summary("staircase: seed selector", _time_moves(dash.seed, list(settings.seeds[1:] + settings.seeds[:1]),
                                                         args.moves)),
    ]
    orders = [(1, 2), tuple(sweep.orders), (1,)]
    rows.append(_summary("staircase: orders (legend)", _time_moves(dash.orders, orders, args.moves)))
    sig = signature_explorer()
    tokens = [v for _, v in sig.token.options][1:]
    rows.append(_summary("signatures: token", _time_moves(sig.token, tokens, args.moves)))
    rows.append(_summary("signatures: order k", _time_moves(sig.order, [2, 3, 1], args.moves)))
    rows.append(_summary("signatures: form", _time_moves(sig.form, ["raw", "centered", "incremental"], args.moves)))

    print(f"torch threads {torch.get_num_threads()}, load average at start {load:.1f} "
          f"(other jobs on the box slow everything down)")
    print(f"sweep build (quick: {len(settings.gammas)} γ x {len(settings.seeds)} seeds, block "
          f"{dict(settings.task_args)['block']}, d {settings.d}, hidden {settings.hidden}, {settings.steps} GD steps,"
          f" record every {settings.record_every}): {build:.1f} s  (target <= 15 s)")
    print(f"{'redraw (slider -> PNG)':<28} {'moves':>5} {'median ms':>9} {'p95 ms':>9}   (target median <= 100 ms)")
    print("\n".join(rows))


if __name__ == "__main__":
    main()

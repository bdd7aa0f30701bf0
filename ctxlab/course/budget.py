"""A pytest plugin for notebook budgets, loaded by the repository's root conftest.py: it reports each
notebook's wall time and kernel peak memory under nbval, and fails a notebook that runs longer than
its time limit or grows beyond its memory limit.

Limits: ``CTXLAB_NOTEBOOK_TIME_LIMIT`` seconds (default 120) and ``CTXLAB_NOTEBOOK_MEMORY_LIMIT``
MiB of peak kernel RSS (default 800, Binder's comfortable share). The kernel's peak is its
``VmHWM`` (resident-set high-water mark) from /proc, read after every cell, so short spikes count.
Kernels inherit ``CI=true`` so progress bars stay silent and the quick profile is used.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

import pytest

TIME_LIMIT_S = float(os.environ.get("CTXLAB_NOTEBOOK_TIME_LIMIT", "120"))
MEMORY_LIMIT_MB = float(os.environ.get("CTXLAB_NOTEBOOK_MEMORY_LIMIT", "800"))


@dataclass
class Budget:
    cells: int = 0
    wall_s: float = 0.0
    peak_mb: float = 0.0
    over: str = ""


_budgets: dict[str, Budget] = {}
_started: dict[str, float] = {}


def pytest_configure(config):
    if getattr(config.option, "nbval_lax", False) or getattr(config.option, "nbval", False):
        os.environ.setdefault("CI", "true")  # kernels inherit it: tqdm silent, quick profile


def _notebook(item) -> str | None:
    return item.nodeid.split("::")[0] if hasattr(item, "cell_num") else None


def _kernel_peak_mb(item) -> float:
    """Peak RSS of the notebook's kernel process in MiB (0 when it cannot be read)."""
    kernel = getattr(item.parent, "kernel", None)
    process = getattr(getattr(getattr(kernel, "km", None), "provisioner", None), "process", None)
    pid = getattr(process, "pid", None)
    if pid is None:
        return 0.0
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    try:
        import psutil

        return psutil.Process(pid).memory_info().rss / 2**20
    except Exception:
        return 0.0


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    nb = _notebook(item)
    if nb is not None:
        _started.setdefault(nb, time.perf_counter())  # the first cell's setup starts the kernel


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    nb = _notebook(item)
    if nb is None or report.when != "call":
        return
    wall = time.perf_counter() - _started[nb]
    peak = _kernel_peak_mb(item)
    report.user_properties += [("notebook", nb), ("notebook_wall_s", wall), ("kernel_peak_mb", peak)]
    budget = _budgets.setdefault(nb, Budget())
    problem = ""
    if wall > TIME_LIMIT_S and not budget.over:
        problem = f"{nb} has run {wall:.0f} s, over its {TIME_LIMIT_S:.0f} s limit (CTXLAB_NOTEBOOK_TIME_LIMIT)"
    elif peak > MEMORY_LIMIT_MB and not budget.over:
        problem = f"{nb}'s kernel peaked at {peak:.0f} MiB, over its {MEMORY_LIMIT_MB:.0f} MiB limit (CTXLAB_NOTEBOOK_MEMORY_LIMIT)"
    if problem and report.passed:
        report.outcome = "failed"
        report.longrepr = f"notebook budget exceeded: {problem}; make the quick profile smaller"
    budget.over = budget.over or problem


def pytest_runtest_logreport(report):
    props = dict(report.user_properties)
    if report.when == "call" and "notebook" in props:  # also runs on the xdist controller
        budget = _budgets.setdefault(props["notebook"], Budget())
        budget.cells += 1
        budget.wall_s = max(budget.wall_s, props["notebook_wall_s"])
        budget.peak_mb = max(budget.peak_mb, props["kernel_peak_mb"])


def pytest_terminal_summary(terminalreporter):
    if not _budgets:
        return
    tr = terminalreporter
    tr.section("notebook budgets")
    tr.write_line(f"{'notebook':<42} {'cells':>5} {'wall s':>7} {'peak MiB':>9}  limits {TIME_LIMIT_S:.0f} s / {MEMORY_LIMIT_MB:.0f} MiB")
    for nb, b in sorted(_budgets.items()):
        flag = "  OVER" if b.wall_s > TIME_LIMIT_S or b.peak_mb > MEMORY_LIMIT_MB else ""
        tr.write_line(f"{nb:<42} {b.cells:>5} {b.wall_s:>7.1f} {b.peak_mb:>9.0f}{flag}")

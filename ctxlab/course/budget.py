"""A pytest plugin for notebook budgets, loaded by the repository's root conftest.py: it reports each
notebook's wall time and kernel peak memory, and fails a notebook whose kernel grows beyond its
memory limit. Time is reported, never failed: a busy machine is not a broken course (the time budget
is enforced on an idle machine by ``benchmarks/notebook_budget.py``).

Notebooks under nbval are measured here; tests that run a notebook another way (the grading
contract) report theirs with :func:`record` and are held to the same memory limit.

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

from ctxlab.course.runner import kernel_pid, process_peak_mb

TIME_LIMIT_S = float(os.environ.get("CTXLAB_NOTEBOOK_TIME_LIMIT", "120"))
MEMORY_LIMIT_MB = float(os.environ.get("CTXLAB_NOTEBOOK_MEMORY_LIMIT", "800"))


@dataclass
class Budget:
    cells: int = 0
    wall_s: float = 0.0
    peak_mb: float = 0.0


_budgets: dict[str, Budget] = {}
_started: dict[str, float] = {}
_over: set[str] = set()


def record(record_property, notebook: str, wall_s: float, peak_mb: float, cells: int) -> None:
    """Report a notebook a test ran itself (``record_property`` is pytest's fixture)."""
    record_property("notebook", notebook)
    record_property("notebook_wall_s", wall_s)
    record_property("kernel_peak_mb", peak_mb)
    record_property("notebook_cells", cells)


def pytest_configure(config):
    if getattr(config.option, "nbval_lax", False) or getattr(config.option, "nbval", False):
        os.environ.setdefault("CI", "true")  # kernels inherit it: tqdm silent, quick profile


def notebook_of(item) -> str | None:
    """The notebook an nbval cell item belongs to (its path as pytest names it); None for other tests."""
    return item.nodeid.split("::")[0] if hasattr(item, "cell_num") else None


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    nb = notebook_of(item)
    if nb is not None:
        _started.setdefault(nb, time.perf_counter())  # the first cell's setup starts the kernel


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when != "call":
        return
    nb = notebook_of(item)
    if nb is not None:  # an nbval cell: measure its notebook so far
        peak = process_peak_mb(kernel_pid(getattr(getattr(item.parent, "kernel", None), "km", None)))
        report.user_properties += [("notebook", nb), ("notebook_wall_s", time.perf_counter() - _started[nb]),
                                   ("kernel_peak_mb", peak), ("notebook_cells", 1)]  # fmt: skip
    props = dict(report.user_properties)
    if "notebook" in props and props["kernel_peak_mb"] > MEMORY_LIMIT_MB and props["notebook"] not in _over:
        _over.add(props["notebook"])
        if report.passed:
            report.outcome = "failed"
            report.longrepr = (
                f"notebook budget exceeded: {props['notebook']}'s kernel peaked at {props['kernel_peak_mb']:.0f} MiB, "
                f"over its {MEMORY_LIMIT_MB:.0f} MiB limit (CTXLAB_NOTEBOOK_MEMORY_LIMIT); make the quick profile smaller"
            )


def pytest_runtest_logreport(report):
    props = dict(report.user_properties)
    if report.when == "call" and "notebook" in props:  # also runs on the xdist controller
        budget = _budgets.setdefault(props["notebook"], Budget())
        budget.cells += props.get("notebook_cells", 1)
        budget.wall_s = max(budget.wall_s, props["notebook_wall_s"])
        budget.peak_mb = max(budget.peak_mb, props["kernel_peak_mb"])


def pytest_terminal_summary(terminalreporter):
    if not _budgets:
        return
    tr = terminalreporter
    tr.section("notebook budgets")
    limits = f"limits {TIME_LIMIT_S:.0f} s / {MEMORY_LIMIT_MB:.0f} MiB"
    tr.write_line(f"{'notebook':<42} {'cells':>5} {'wall s':>7} {'peak MiB':>9}  {limits}")
    for nb, b in sorted(_budgets.items()):
        flag = "  OVER MEMORY" if b.peak_mb > MEMORY_LIMIT_MB else "  slow here" if b.wall_s > TIME_LIMIT_S else ""
        tr.write_line(f"{nb:<42} {b.cells:>5} {b.wall_s:>7.1f} {b.peak_mb:>9.0f}{flag}")
    if any(b.wall_s > TIME_LIMIT_S for b in _budgets.values()):
        tr.write_line("slow here: over the time budget on this run, which does not fail tests (the machine may be "
                      "busy); `python benchmarks/notebook_budget.py` enforces it on an idle machine")  # fmt: skip

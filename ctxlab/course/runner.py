"""Run a notebook's code cells on a fresh kernel with time limits, and say what each cell did.

The grader (:mod:`.grading`) and the time-budget benchmark (``benchmarks/notebook_budget.py``)
share this runner. Every run ends: each cell has a time limit and the whole run has one (the cell
limit shrinks to what is left of it), a cell that overruns ends the run, and a kernel that dies or
exits (``os._exit``, a crash, out of memory) ends it too. A cell counts as failed when the kernel
replies that it raised (even if a handler hid the traceback); nbval markers and cell tags play no part.
"""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass, field

from ctxlab.course.notebooks import kernel_env


@dataclass
class CellRun:
    """What one code cell that ran left: its stdout, and the error it raised (if any)."""

    index: int  # position in the executed notebook
    error: str = ""  # "Name: message" of the exception it raised, "" if none
    stdout: str = ""


@dataclass
class NotebookRun:
    cells: dict[int, CellRun] = field(default_factory=dict)  # the cells that ran, by index
    wall_s: float = 0.0
    peak_mb: float = 0.0
    stopped: str = ""  # why the run ended early, "" when every cell ran
    stopped_at: int | None = None  # the index of the cell it ended in


def process_peak_mb(pid: int | None) -> float:
    """A process's peak resident memory (``VmHWM`` from /proc) in MiB; 0 when it cannot be read."""
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


def kernel_pid(km) -> int | None:
    """The process id of a jupyter_client kernel manager's kernel, or None."""
    process = getattr(getattr(km, "provisioner", None), "process", None)
    return getattr(process, "pid", None)


def _stdout_of(cell) -> str:
    streams = [o for o in cell.get("outputs", []) if o.get("output_type") == "stream" and o.get("name") == "stdout"]
    return "".join(o.get("text", "") for o in streams)


def run(nb, cwd, cell_timeout: float, timeout: float, env: dict[str, str] | None = None) -> NotebookRun:
    """Execute ``nb``'s code cells in order (in place) and report each; never raises for a cell."""
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

    client = NotebookClient(
        nb, kernel_name="python3", timeout=cell_timeout, allow_errors=False, record_timing=False,
        store_widget_state=False, skip_cells_with_tag="", shutdown_kernel="immediate",
    )  # fmt: skip
    result = NotebookRun()
    start = time.perf_counter()
    deadline = start + timeout
    # the kernel's own stderr (its start-up warnings) would interleave with the report
    with client.setup_kernel(cwd=str(cwd), env=env or kernel_env(), stderr=subprocess.DEVNULL):
        pid = kernel_pid(client.km)
        for index, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            left = deadline - time.perf_counter()
            if left <= 0:
                result.stopped, result.stopped_at = f"the whole run went over its {timeout:.0f} s limit", index
                break
            client.timeout = max(1, int(min(cell_timeout, left)))
            record = result.cells[index] = CellRun(index)
            try:
                client.execute_cell(cell, index)
            except CellExecutionError as err:  # the kernel's reply says it raised; carry on with the next cell
                record.error = f"{err.ename}: {err.evalue}".rstrip(": ")
            except CellTimeoutError:
                cell_limit = client.timeout >= cell_timeout
                what = f"{cell_timeout:.0f} s cell limit" if cell_limit else f"{timeout:.0f} s limit of the whole run"
                result.stopped, result.stopped_at = f"a cell ran past the {what}", index
                record.error = f"TimeoutError: stopped after {client.timeout} s (the {what})"
                break
            except DeadKernelError:
                result.stopped, result.stopped_at = "the kernel died or exited (os._exit, a crash, or out of memory)", index
                record.error = "DeadKernelError: " + result.stopped
                break
            finally:
                result.peak_mb = max(result.peak_mb, process_peak_mb(pid))
                record.stdout = _stdout_of(cell)
    result.wall_s = time.perf_counter() - start
    return result

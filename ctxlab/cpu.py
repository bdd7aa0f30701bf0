"""How the course's small models use a CPU: how many threads, and keeping freed memory for reuse.

Two measured habits (``benchmarks/cpu_efficiency.py`` prints the tables behind them):

* **threads**: on a machine with at most two CPUs to spare (Binder, Colab, the CI runner) one thread
  trains the course's batched models as fast as two when the machine is idle and much faster when the
  other core is busy; above that, torch's own count, but never more than the CPUs this process may
  use (a Binder pod sees the host's cores but is given a quota of one or two);
* **memory**: every training step allocates and frees the same few MB of activations; glibc hands
  blocks that large back to the system and faults them in again next step (hundreds of page faults
  a step), so the course raises its thresholds once and the blocks are reused.

``CTXLAB_KEEP_FREED_MEMORY=0`` leaves the allocator alone. A user's choice of threads wins: ``CTXLAB_THREADS=N``, ``OMP_NUM_THREADS`` / ``MKL_NUM_THREADS``, or a
``torch.set_num_threads(n)`` made before or after the course first trains, with n other than torch's
own default.
"""

from __future__ import annotations

import ctypes
import math
import os
import sys
from pathlib import Path

THREADS_VARIABLE = "CTXLAB_THREADS"
MEMORY_VARIABLE = "CTXLAB_KEEP_FREED_MEMORY"  # 0: leave glibc's thresholds as they are
USER_THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")
SMALL_MACHINE_CPUS = 2  # up to this many usable CPUs the course trains on one thread (measured)
# glibc mallopt parameters: blocks up to 16 MB come from the heap, and up to 256 MB of freed heap is kept
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
KEEP_BLOCKS_BYTES, KEEP_FREED_BYTES = 16 * 2**20, 256 * 2**20

_state = {"set_to": None, "memory_kept": False}


def usable_cpus() -> int:
    """CPUs this process may use: its affinity, lowered by a cgroup CPU quota where there is one."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    quota = _cgroup_quota()
    return max(1, min(cpus, math.ceil(quota))) if quota else cpus


def _cgroup_quota() -> float | None:
    """The CPU quota (CPUs' worth of time) of cgroup v2 or v1, None where unlimited or unknown."""
    try:
        v2 = Path("/sys/fs/cgroup/cpu.max")
        if v2.is_file():
            quota, period = v2.read_text().split()[:2]
            return None if quota == "max" else int(quota) / int(period)
        v1 = Path("/sys/fs/cgroup/cpu/cpu.cfs_quota_us")
        if v1.is_file():
            quota = int(v1.read_text())
            return None if quota <= 0 else quota / int(Path("/sys/fs/cgroup/cpu/cpu.cfs_period_us").read_text())
    except (OSError, ValueError):
        return None
    return None


def physical_cores() -> int:
    """Physical cores among the usable CPUs (torch's own default thread count), from /proc/cpuinfo."""
    try:
        cores, current = set(), {}
        for line in Path("/proc/cpuinfo").read_text().splitlines() + [""]:
            key, _, value = line.partition(":")
            key = key.strip()
            if key in ("processor", "physical id", "core id"):
                current[key] = value.strip()
            elif not line.strip() and current:
                if int(current.get("processor", -1)) in os.sched_getaffinity(0):
                    cores.add((current.get("physical id"), current.get("core id")))
                current = {}
        return max(1, len(cores)) if cores else usable_cpus()
    except (OSError, ValueError, AttributeError):
        return usable_cpus()


def course_threads(cpus: int, torch_default: int) -> int:
    """The thread count the course trains with on ``cpus`` usable CPUs where torch would take ``torch_default``."""
    return 1 if cpus <= SMALL_MACHINE_CPUS else max(1, min(cpus, torch_default))


def chosen_threads() -> int | None:
    """``CTXLAB_THREADS`` as a thread count, None when unset."""
    value = os.environ.get(THREADS_VARIABLE, "").strip()
    if not value:
        return None
    if not value.isdigit() or int(value) < 1:
        raise ValueError(f"{THREADS_VARIABLE}={value!r}: expected a positive whole number of threads, or unset it")
    return int(value)


def settle_threads() -> int:
    """Set torch's thread count to the course's choice unless the user has made one; return the count used."""
    import torch

    current, wanted = torch.get_num_threads(), chosen_threads()
    if wanted is None:
        if any(os.environ.get(v, "").strip() for v in USER_THREAD_VARIABLES):
            return current
        ours = _state["set_to"]
        untouched = current == ours if ours is not None else current == physical_cores()
        if not untouched:
            return current
        wanted = course_threads(usable_cpus(), physical_cores())
    if wanted != current:
        torch.set_num_threads(wanted)
    _state["set_to"] = wanted
    return wanted


def keep_freed_memory() -> bool:
    """Ask glibc to keep and reuse freed blocks of a training step's size (once; False where not glibc)."""
    if _state["memory_kept"]:
        return True
    if os.environ.get(MEMORY_VARIABLE, "").strip() == "0" or not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL("libc.so.6")
        kept = bool(libc.mallopt(M_MMAP_THRESHOLD, KEEP_BLOCKS_BYTES)) and bool(libc.mallopt(M_TRIM_THRESHOLD, KEEP_FREED_BYTES))
    except (OSError, AttributeError):
        return False
    _state["memory_kept"] = kept
    return kept


def prepare() -> None:
    """What every training loop does before it starts: the course's threads and memory habits."""
    settle_threads()
    keep_freed_memory()

"""Runs inside the kernel ``ctxlab grade`` starts, in a hidden cell before each check cell.

A learner cell could have put something between a check and its verdict: a redefined
``ctxlab.checks.check_…`` or ``run_check``, a patched reference function in ``ctxlab``, an IPython
callback or exception handler that hides an error. :func:`reset` removes those the notebook defined
and imports ``ctxlab`` afresh, so the check cell that follows runs the package's own code. (Code in
the same process can always do more; this closes the easy ways. Torch itself is not re-imported.)
"""

from __future__ import annotations

import importlib
import sys


def _from_notebook(fn) -> bool:
    """Whether a callable was defined in the notebook (module ``__main__``) rather than a library."""
    target = getattr(fn, "__func__", fn)
    return getattr(target, "__module__", None) == "__main__" or getattr(type(target), "__module__", None) == "__main__"


def reset(ip) -> None:
    """Drop notebook-defined IPython hooks, then re-import ``ctxlab`` and bind the fresh package."""
    for callbacks in ip.events.callbacks.values():
        callbacks[:] = [cb for cb in callbacks if not _from_notebook(cb)]
    ip.set_custom_exc((), None)
    sys.excepthook = sys.__excepthook__
    for name in [m for m in sys.modules if m == "ctxlab" or m.startswith("ctxlab.")]:
        del sys.modules[name]
    ip.user_ns["ctxlab"] = importlib.import_module("ctxlab")
    importlib.import_module("ctxlab.checks")

"""A pytest plugin that ``ctxlab grade`` loads next to nbval: it records each cell's verdict.

It writes ``{cell_number: {"passed": bool, "hint": str}}`` as JSON to the file named by
``CTXLAB_GRADE_REPORT``; the hint is the first line of the exception a failing cell raised.
"""

from __future__ import annotations

import json
import os
import re

import pytest

ANSI = re.compile(r"\x1b\[[0-9;]*m")
ERROR_LINE = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Interrupt))(?::\s*(.*))?$")

_results: dict[int, dict] = {}


def first_error_line(traceback: str) -> str:
    """'AssertionError: what went wrong' -> 'what went wrong' (the last exception in the traceback)."""
    lines = ANSI.sub("", traceback).splitlines()
    for line in reversed(lines):
        m = ERROR_LINE.match(line.strip())
        if m:
            name, message = m[1], (m[2] or "").strip()
            if name.endswith("NotImplementedError"):
                return "not done yet: " + (message or "replace `raise NotImplementedError` with your code")
            return message or name
    return lines[-1].strip() if lines else "failed"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    cell_num = getattr(item, "cell_num", None)
    if cell_num is None or (report.when != "call" and not report.failed):
        return
    entry = _results.setdefault(cell_num, {"passed": True, "hint": ""})
    if report.failed:
        exc = call.excinfo.value if call.excinfo else None
        text = getattr(exc, "inner_traceback", None) or str(exc or report.longreprtext)
        entry.update(passed=False, hint=entry["hint"] or first_error_line(text))


def pytest_sessionfinish(session):
    target = os.environ.get("CTXLAB_GRADE_REPORT")
    if target:
        with open(target, "w") as f:
            json.dump({str(k): v for k, v in sorted(_results.items())}, f)

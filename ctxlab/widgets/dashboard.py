"""``ctxlab dashboard``: the staircase explorer as a stand-alone web page, served by Voila.

Voila renders a notebook's outputs without its code, so the dashboard is a two-cell notebook
written into a temporary folder for each run; the server listens on 127.0.0.1 only.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import tempfile
from pathlib import Path

INSTALL_HINT = "pip install 'ctxlab[dash]'"
NOTEBOOK_NAME = "ctxlab_dashboard.ipynb"


def dashboard_notebook():
    """The notebook Voila serves: a title and the explorer (built with the current profile)."""
    import nbformat
    from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

    from ctxlab.repo import KERNELSPEC

    nb = new_notebook(cells=[
        new_markdown_cell("# ctxlab: the Context Staircase explorer\n\n"
                          "Training the sweep takes a few seconds; then every control only looks results up."),
        new_code_cell("from ctxlab.widgets import staircase_explorer\n\nstaircase_explorer()"),
    ])
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    nbformat.validate(nb)
    return nb


def write_dashboard(directory: str | Path) -> Path:
    """Write the dashboard notebook into ``directory``; returns its path."""
    import nbformat

    path = Path(directory) / NOTEBOOK_NAME
    nbformat.write(dashboard_notebook(), path)
    return path


def voila_command(notebook: Path, port: int, open_browser: bool = False) -> list[str]:
    """The Voila command line for ``notebook`` on 127.0.0.1:``port``."""
    if not 0 < port < 65536:
        raise ValueError(f"port must lie in 1..65535, got {port}")
    command = [sys.executable, "-m", "voila", str(notebook), f"--port={port}", "--Voila.ip=127.0.0.1"]
    return command if open_browser else [*command, "--no-browser"]


def serve_dashboard(port: int = 8866, open_browser: bool = False) -> int:
    """Serve the dashboard until interrupted; Voila's exit status."""
    if importlib.util.find_spec("voila") is None:
        raise RuntimeError(f"the dashboard is served with Voila, which is not installed: {INSTALL_HINT}")
    with tempfile.TemporaryDirectory(prefix="ctxlab-dashboard-") as tmp:
        command = voila_command(write_dashboard(tmp), port, open_browser)
        print(f"ctxlab dashboard: serving on http://127.0.0.1:{port}/ (Ctrl-C stops it)", flush=True)
        try:
            return subprocess.call(command, cwd=tmp)
        except KeyboardInterrupt:
            return 0

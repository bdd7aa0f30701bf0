"""Fixtures shared by the unit tests."""

import socket

import pytest


@pytest.fixture
def no_network(monkeypatch):
    """Any attempt to open a socket fails the test: everything the course ships must work offline."""

    def refuse(*args, **kwargs):
        raise AssertionError("network access attempted")

    monkeypatch.setattr(socket, "socket", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


@pytest.fixture(scope="session")
def built_site(tmp_path_factory):
    """The course website, built once per session with the network cut where ``unshare -n`` works
    (``site/build.py``); or the folder ``CTXLAB_SITE_DIR`` names. Yields (folder, seconds, offline)."""
    import os
    import subprocess
    import sys
    import time
    from pathlib import Path

    given = os.environ.get("CTXLAB_SITE_DIR")
    if given:
        if not (Path(given) / "index.html").is_file():
            pytest.fail(f"CTXLAB_SITE_DIR={given} has no index.html; run `make site` or unset it")
        return Path(given), None, None
    for module in ("sphinx", "myst_nb", "sphinx_book_theme", "altair", "vl_convert"):
        pytest.importorskip(module, reason=f"site: {module} is missing (pip install 'ctxlab[site]')")
    root = Path(__file__).resolve().parents[1]
    out = tmp_path_factory.mktemp("site") / "html"
    command = [sys.executable, str(root / "site" / "build.py"), "--out", str(out)]
    offline = subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode == 0 if _has("unshare") else False
    if offline:
        command = ["unshare", "-n", *command]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")])),
               OMP_NUM_THREADS="1")
    start = time.perf_counter()
    done = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, timeout=600)
    seconds = time.perf_counter() - start
    if done.returncode:
        pytest.fail(f"site/build.py failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return out, seconds, offline


def _has(program: str) -> bool:
    import shutil

    return shutil.which(program) is not None

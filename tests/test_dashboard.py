"""``ctxlab dashboard`` without a server: the notebook it serves, its command line, the missing-Voila error."""

from __future__ import annotations

import importlib.util

import nbformat
import pytest

from ctxlab import cli
from ctxlab.widgets import dashboard


def test_dashboard_notebook_is_valid_and_shows_the_explorer(tmp_path):
    path = dashboard.write_dashboard(tmp_path)
    assert path.name == dashboard.NOTEBOOK_NAME and path.exists()
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    code = [c.source for c in nb.cells if c.cell_type == "code"]
    assert code == ["from ctxlab.widgets import staircase_explorer\n\nstaircase_explorer()"]
    assert nb.metadata["kernelspec"]["name"] == "python3"


def test_voila_command_listens_on_localhost_only(tmp_path):
    command = dashboard.voila_command(tmp_path / "nb.ipynb", 9001)
    assert command[1:3] == ["-m", "voila"]
    assert "--port=9001" in command and "--Voila.ip=127.0.0.1" in command and "--no-browser" in command
    assert "--no-browser" not in dashboard.voila_command(tmp_path / "nb.ipynb", 9001, open_browser=True)
    with pytest.raises(ValueError, match="port"):
        dashboard.voila_command(tmp_path / "nb.ipynb", 0)


def test_missing_voila_names_the_extra(monkeypatch, capsys):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "voila" else real(name, *a))
    assert cli.main(["dashboard", "--port", "9002"]) == 2
    err = capsys.readouterr().err
    assert "ctxlab dashboard: error" in err and "pip install 'ctxlab[dash]'" in err


def test_dashboard_runs_voila_on_the_generated_notebook(monkeypatch, capsys):
    if importlib.util.find_spec("voila") is None:
        monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object())
    calls = []

    def fake_call(command, cwd):
        calls.append((command, cwd))
        assert (dashboard.Path(cwd) / dashboard.NOTEBOOK_NAME).exists()  # written before Voila starts
        return 0

    monkeypatch.setattr(dashboard.subprocess, "call", fake_call)
    assert cli.main(["dashboard", "--port", "9003"]) == 0
    ((command, cwd),) = calls
    assert command[3].endswith(dashboard.NOTEBOOK_NAME) and "--port=9003" in command
    assert "http://127.0.0.1:9003/" in capsys.readouterr().out
    assert not dashboard.Path(cwd).exists()  # the temporary folder is gone afterwards

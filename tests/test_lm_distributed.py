"""Data parallelism: two CPU processes under torchrun (gloo) follow the same path as one process."""

import json
import os
import subprocess
import sys

import pytest

ARGS = ["lm", "--steps", "12", "--context", "16", "--width", "32", "--layers", "1", "--heads", "2", "--batch-size", "8",
        "--lr", "0.003", "--source", "pydoc", "--profile", "quick", "--device", "cpu", "--no-progress"]


DIST_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")  # none may leak in from outside
TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", "-m", "ctxlab.cli"]


def _args(out) -> list[str]:
    return ARGS + ["--out", str(out), "--json", str(out / "lm.json")]


def _run_here(out, monkeypatch) -> dict:
    """The one-process run, in this process (torch is imported already: one start-up less)."""
    from ctxlab.cli import main

    for key in DIST_VARS:
        monkeypatch.delenv(key, raising=False)
    assert main(_args(out)) == 0
    return json.loads((out / "lm.json").read_text())


def _run_torchrun(out) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in DIST_VARS} | {"OMP_NUM_THREADS": "1"}
    done = subprocess.run(TORCHRUN + _args(out), capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return json.loads((out / "lm.json").read_text())


@pytest.mark.slow
def test_two_processes_match_one(tmp_path, monkeypatch):
    single = _run_here(tmp_path / "one", monkeypatch)
    double = _run_torchrun(tmp_path / "two")
    assert (single["processes"], double["processes"]) == (1, 2)
    assert single["steps"] == double["steps"]
    for a, b in zip(single["held_out_loss"][0], double["held_out_loss"][0]):
        assert a == pytest.approx(b, abs=2e-4)
    assert single["held_out_loss"][0][-1] < single["held_out_loss"][0][0]

"""Data parallelism: two CPU processes under torchrun (gloo) follow the same path as one process."""

import json
import subprocess
import sys

import pytest

ARGS = ["lm", "--steps", "12", "--context", "16", "--width", "32", "--layers", "1", "--heads", "2", "--batch-size", "8",
        "--lr", "0.003", "--source", "pydoc", "--profile", "quick", "--device", "cpu", "--no-progress"]


def _run(prefix: list[str], tmp_path, name: str) -> dict:
    out = tmp_path / name
    cmd = prefix + ARGS + ["--out", str(out), "--json", str(out / "lm.json")]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env={"OMP_NUM_THREADS": "1", **_env()})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return json.loads((out / "lm.json").read_text())


def _env() -> dict:
    import os

    return {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")}


def _run_here(tmp_path, name: str, monkeypatch) -> dict:
    """The one-process run in this process (torch is imported already: one start-up less)."""
    from ctxlab.cli import main

    for key in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(key, raising=False)
    out = tmp_path / name
    assert main(ARGS + ["--out", str(out), "--json", str(out / "lm.json")]) == 0
    return json.loads((out / "lm.json").read_text())


@pytest.mark.slow
def test_two_processes_match_one(tmp_path, monkeypatch):
    single = _run_here(tmp_path, "one", monkeypatch)
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", "-m", "ctxlab.cli"]
    double = _run(torchrun, tmp_path, "two")
    assert (single["processes"], double["processes"]) == (1, 2)
    assert single["steps"] == double["steps"]
    for a, b in zip(single["held_out_loss"][0], double["held_out_loss"][0]):
        assert a == pytest.approx(b, abs=2e-4)
    assert single["held_out_loss"][0][-1] < single["held_out_loss"][0][0]

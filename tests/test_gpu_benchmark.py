"""benchmarks/gpu.sh runs end to end on a CPU with its tiny profile and writes strict JSON and figures."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _no_nan(text: str):
    raise ValueError(f"not strict JSON: {text}")


def test_gpu_benchmark_runs_end_to_end_on_a_cpu(tmp_path):
    out = tmp_path / "gpu"
    done = subprocess.run(["bash", str(ROOT / "benchmarks" / "gpu.sh"), str(out), "--profile", "tiny", "--device", "cpu"],
                          env={"PATH": "/usr/bin:/bin", "PYTHON": sys.executable, "OMP_NUM_THREADS": "1",
                               "MPLBACKEND": "Agg", "HOME": str(tmp_path)},
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    report = json.loads((out / "gpu.json").read_text(), parse_constant=_no_nan)
    assert set(report["ensemble"]) == {"staircase", "attention"}
    for row in report["ensemble"].values():
        assert row["models"] == 4 and row["speedup"] > 0
    assert {run["gamma"] for run in report["staircase"]["runs"]} == {0.75, 1.0}
    assert set(report["gpt_precision"]["runs"]) == {"fp32", "tf32", "bf16"}
    fp32 = report["gpt_precision"]["runs"]["fp32"]
    assert fp32["loss_mean_inside_fp32_seed_range"] == 1.0  # the reference lies inside its own spread
    for name in ("staircase.png", "attention.png", "gpt_precision.png", "gpu.txt", "device.txt"):
        assert (out / name).stat().st_size > 0, name
    assert "the GPT at three precisions" in (out / "gpu.txt").read_text()

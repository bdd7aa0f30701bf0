"""Bad command lines for ``ctxlab staircase`` and ``ctxlab lm``: each fails at once (before any
training: the runs asked for are far too long to finish within the time limit) with exit status 2
and one line ``ctxlab CMD: error: ...``, never a traceback. A run that diverges says so and fails."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest

from ctxlab.cli import main

LONG = ["--steps", "20000", "--no-progress"]  # many minutes of training (yet small buffers) if anything trained


class Hang(BaseException):
    """Not an Exception (nor an OSError, as TimeoutError is): nothing in ctxlab can swallow it."""


@contextmanager
def time_limit(seconds: int):
    def stop(*_):
        raise Hang(f"no answer within {seconds} s")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def run(argv: list[str], capsys) -> tuple[int, str, str]:
    with time_limit(60):
        try:
            code = main(argv)
        except SystemExit as exit_:
            code = exit_.code
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def places(tmp_path: Path) -> dict[str, str]:
    a_file = tmp_path / "a_file.txt"
    a_file.write_text("x")
    a_folder = tmp_path / "a_folder"
    a_folder.mkdir()
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    return {"FILE": str(a_file), "DIR": str(a_folder), "LOCKED": str(locked), "TMP": str(tmp_path)}


BAD = {
    # staircase: numbers
    "steps zero": "staircase --steps 0",
    "steps negative": "staircase --steps -5",
    "steps float": "staircase --steps 1.5",
    "steps word": "staircase --steps many",
    "seeds zero": "staircase --seeds 0",
    "seeds negative": "staircase --seeds -2",
    "lr zero": "staircase --lr 0",
    "lr negative": "staircase --lr -1",
    "lr nan": "staircase --lr nan",
    "lr inf": "staircase --lr inf",
    "gamma zero": "staircase --gammas 0 1",
    "gamma nan": "staircase --gammas nan",
    "gamma negative": "staircase --gammas -1",
    "no gammas": "staircase --gammas",
    # staircase: choices and devices
    "optimizer sgd (needs a batch size)": "staircase --optimizer sgd",
    "optimizer unknown": "staircase --optimizer lbfgs",
    "profile unknown": "staircase --profile huge",
    "device unknown": "staircase --device tpu",
    "device malformed": "staircase --device cuda:abc",
    "option unknown": "staircase --colour red",
    # staircase: where the outputs go
    "out is a file": "staircase --out {FILE}",
    "out below a file": "staircase --out {FILE}/sub",
    "out not writable": "staircase --out {LOCKED}",
    "out empty": "staircase --out ''",
    "json is a folder": "staircase --json {DIR}",
    "json below a file": "staircase --json {FILE}/numbers.json",
    "json not writable": "staircase --json {LOCKED}/numbers.json",
    "out in a read-only place": "staircase --out /proc/ctxlab-figures",
    "json in a read-only place": "staircase --json /proc/ctxlab.json",
    "json empty": "staircase --json ''",
    "json is the figure": "staircase --out {DIR} --json {DIR}/staircase.png",
    # lm
    "lm width not divisible by heads": "lm --width 10 --heads 3",
    "lm vocab size with char tokenizer": "lm --tokenizer char --vocab-size 300",
    "lm vocab size too small for BPE": "lm --tokenizer bpe --vocab-size 100",
    "lm unknown tokenizer": "lm --tokenizer word",
    "lm unknown source": "lm --source wikipedia",
    "lm context zero": "lm --context 0",
    "lm batch size zero": "lm --batch-size 0",
    "lm layers negative": "lm --layers -1",
    "lm lr negative": "lm --lr -0.001",
    "lm seeds zero": "lm --seeds 0",
    "lm device unknown": "lm --device gpu",
    "lm out is a file": "lm --out {FILE}",
    "lm json is a folder": "lm --json {DIR}",
    "lm json below a file": "lm --json {FILE}/x.json",
    # the command itself
    "no command": "",
    "unknown command": "train",
}


@pytest.mark.parametrize("line", BAD.values(), ids=BAD.keys())
def test_bad_command_line_fails_at_once_in_one_line(line, places, capsys, monkeypatch):
    if "LOCKED" in line and os.geteuid() == 0:
        pytest.skip("root may write anywhere")
    if "/proc/" in line and not Path("/proc/self").is_dir():
        pytest.skip("no /proc file system here")
    monkeypatch.chdir(places["TMP"])
    argv = shlex.split(line.format(**places))
    if argv and argv[0] in ("staircase", "lm"):
        argv += LONG
    code, out, err = run(argv, capsys)
    command = f"ctxlab {argv[0]}" if argv and argv[0] in ("staircase", "lm") else "ctxlab"
    lines = err.strip().splitlines()
    assert code == 2, (code, out, err)
    assert len(lines) == 1 and lines[0].startswith(f"{command}: error: "), err
    assert "Traceback" not in out + err and out == ""


def test_messages_name_what_is_wrong(places, capsys):
    cases = {
        ("staircase", "--json", places["DIR"]): "--json",
        ("staircase", "--out", places["FILE"]): "--out",
        ("staircase", "--device", "tpu"): "--device",
        ("staircase", "--optimizer", "sgd"): "--optimizer",
        ("lm", "--width", "10", "--heads", "3"): "divisible",
    }
    for argv, named in cases.items():
        _, _, err = run([*argv, *LONG], capsys)
        assert named in err, err


def test_a_diverging_run_says_so_keeps_its_numbers_and_fails(tmp_path, capsys):
    numbers = tmp_path / "out" / "numbers.json"
    code, out, err = run(["staircase", "--lr", "1e6", "--steps", "20", "--seeds", "1", "--gammas", "1", "2",
                          "--profile", "quick", "--no-progress", "--out", str(tmp_path / "figs"),
                          "--json", str(numbers)], capsys)
    assert code == 1
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ctxlab staircase: error: 2 of 2 models diverged")
    assert "gamma 1, seed 0) at step" in lines[0] and "gamma 2, seed 0) at step" in lines[0]

    def no_nan(text):
        raise AssertionError(f"{text} in the JSON")

    saved = json.loads(numbers.read_text(), parse_constant=no_nan)  # strict JSON
    assert all(isinstance(run_["diverged_at_step"], int) and 1 <= run_["diverged_at_step"] <= 20 for run_ in saved["runs"])
    assert [run_["final_loss"] for run_ in saved["runs"]] == [None, None]  # a diverged curve is not read
    assert any(where.startswith("runs[0].loss") for where in saved["non_finite"]["where"])
    assert (tmp_path / "figs" / "staircase.png").exists()


@pytest.mark.parametrize("argv", [["staircase", "--json", "{tmp}", *LONG], ["lm", "--device", "tpu", *LONG]],
                         ids=["json is a folder", "unknown device"])  # two processes: one per worker
def test_a_real_process_ends_with_one_line_and_no_traceback(tmp_path, argv):
    argv = [a.format(tmp=tmp_path) for a in argv]
    done = subprocess.run([sys.executable, "-m", "ctxlab.cli", *argv], capture_output=True, text=True,
                          timeout=120, env=dict(os.environ, OMP_NUM_THREADS="1"))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and done.stdout == ""


def test_a_bad_text_file_ends_in_one_line_before_any_work(tmp_path, capsys):
    files = {"missing": None, "empty": b"", "binary": b"abc\x00def" * 50, "latin-1": "café crème".encode("latin-1"),
             "too short": "a short text.".encode()}
    expected = {"missing": "no file at", "empty": "is empty", "binary": "looks binary", "latin-1": "is not UTF-8",
                "too short": "too few for context"}
    for name, content in files.items():
        path = tmp_path / f"{name.replace(' ', '_')}.txt"
        if content is not None:
            path.write_bytes(content)
        for command in (["lm", "--steps", "1"], ["probe", "minilm"]):
            if command[0] == "probe" and name == "too short":
                continue  # the probe's own short-text errors: tests/test_checkpoints.py
            code, out, err = run([*command, "--text", str(path), "--out", str(tmp_path / "figs"), "--no-progress"], capsys)
            assert code == 2 and len(err.strip().splitlines()) == 1, (name, command, err)
            assert expected[name] in err and out == "", (name, command, err)

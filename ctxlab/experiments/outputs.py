"""What every experiment command shares: checks before training, strict JSON, saving the figure and
the numbers, and the exit status of a run that diverged."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

from ctxlab.train import Trajectory


def check_before_training(device, figure_path: Path, json_path: str | None) -> None:
    """What a command checks before a long run: the device exists, and the figure and JSON can be
    written (their folders are created now). Raises ValueError naming the option."""
    from ctxlab.env import device as pick_device

    try:
        pick_device(device)
    except (ValueError, RuntimeError) as err:
        raise ValueError(f"--device: {err}") from None
    _check_writable(figure_path, "--out")
    if json_path is not None:
        if Path(json_path).resolve() == figure_path.resolve():
            raise ValueError(f"--json {json_path} would overwrite the figure; choose another file")
        _check_writable(Path(json_path), "--json")


def _check_writable(path: Path, option: str) -> None:
    if path.is_dir():
        raise ValueError(f"{option}: {path} is a folder; the command writes a file there")
    folder = path.parent
    for above in (folder, *folder.parents):
        if above.exists():
            if not above.is_dir():
                raise ValueError(f"{option}: {above} is a file, not a folder")
            break
    try:
        folder.mkdir(parents=True, exist_ok=True)
        existed = path.exists()
        with open(path, "a"):  # the one test every platform and permission model agrees on
            pass
        if not existed:
            path.unlink(missing_ok=True)  # torchrun: every process runs this check
    except OSError as err:
        raise ValueError(f"{option}: cannot write {path} ({err.strerror or err})") from None


def report_divergence(command: str, traj: Trajectory, knob: str) -> int:
    """Exit status of a training command: 0, or 1 with one line naming every diverged model."""
    from ctxlab.train import describe_divergence

    if not bool((traj.diverged_at >= 0).any()):
        return 0
    n = int((traj.diverged_at >= 0).sum())
    print(f"ctxlab {command}: error: {n} of {traj.n_models} models diverged (NaN, infinite or exploding loss; "
          f"frozen there, later losses NaN, null in the JSON): "
          f"{describe_divergence(traj.gammas, traj.seeds, traj.diverged_at)}; try a smaller {knob}", file=sys.stderr)
    return 1


def strict_json(numbers):
    """``numbers`` with every NaN or infinite float replaced by None (JSON has no NaN), and the
    places where that happened (a list counted once, with how many of its values)."""
    replaced: list[str] = []

    def clean(value, where: str):
        if isinstance(value, float) and not math.isfinite(value):
            replaced.append(where)
            return None
        if isinstance(value, dict):
            return {k: clean(v, f"{where}.{k}" if where else str(k)) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            before = len(replaced)
            out = [clean(v, f"{where}[{i}]") for i, v in enumerate(value)]
            flat = all(not isinstance(v, (dict, list, tuple)) for v in value)
            if flat and len(replaced) > before + 1:
                del replaced[before:]
                replaced.append(f"{where} ({sum(v is None for v in out)} values)")
            return out
        return value

    return clean(numbers, ""), replaced


def save_outputs(figure, figure_path: Path, numbers: dict, json_path: str | None) -> None:
    """Write a command's figure (PNG) and, when asked, its numbers (strict JSON: NaN and infinities
    become null, listed under ``non_finite`` with the reason); say where."""
    figure_path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(figure_path, dpi=120)
    print(f"figure: {figure_path}")
    if json_path:
        path = Path(json_path)
        path.parent.mkdir(parents=True, exist_ok=True)
        numbers, replaced = strict_json(numbers)
        if replaced:
            numbers["non_finite"] = {"reason": "NaN or infinite values (a diverged run) are written as null",
                                     "where": replaced}
        path.write_text(json.dumps(numbers, indent=1, allow_nan=False))
        print(f"numbers: {path}")


# --- a small GPT on real text ------------------------------------------------------------------

# Quick: sized for lesson 09 on one CPU core (a one-block GPT, 800 steps, trained there with Adam and
# with plain SGD at lr 1.5). Its KL to the trigram model is still falling at the end, so lesson 09
# shows the turn from the recorded full-profile run.
# Full: the 512-token BPE text is 486k training tokens, so 3000 steps of 64 x 128 are already ~50
# epochs; on an H200 the held-out loss bottoms out at steps 2500-2950 and then rises (memorising).

"""Do a notebook's checked outputs survive another arithmetic path? (``benchmarks/portability.py``)

A CPU other than the builder's runs other matrix-product kernels (MKL picks its own by CPU), and a
chaotic run (a spike, a death at the edge of stability) turns a last-bit difference into another
answer. So every output nbval compares must come out the same under other kernels, other thread
counts and a 1e-6 jitter of the initial weights. This module names those paths (:data:`MODES`),
reads what a stored notebook's checked cells printed, and lists the cells that a run under one
path printed differently or where a cell raised.
"""

from __future__ import annotations

import configparser
import re
from dataclasses import dataclass
from pathlib import Path

from ctxlab.env import JITTER_VARIABLE

CHECK_MARKER = "NBVAL_CHECK_OUTPUT"  # nbval's comment marker; its metadata tag is "nbval-check-output"
CHECK_TAG = "nbval-check-output"
# Each mode: the environment the kernel runs with. "compatible" and "avx2-2t" are two real other
# arithmetic paths; "jitter-N" multiplies every initial weight by (1 + 1e-6 z) (ctxlab.env.init_jitter),
# what another CPU does to a chaotic run, on any CPU.
_ONE_THREAD = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
MODES: dict[str, dict[str, str]] = {
    "compatible": {"MKL_CBWR": "COMPATIBLE", "ATEN_CPU_CAPABILITY": "default", **_ONE_THREAD},
    "avx2-2t": {"MKL_CBWR": "AVX2", "ATEN_CPU_CAPABILITY": "avx2", "OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "2"},
    **{f"jitter-{seed}": {JITTER_VARIABLE: str(seed), **_ONE_THREAD} for seed in (1, 2, 3)},
}


@dataclass(frozen=True)
class Flip:
    """A checked cell whose output changed (``got``), or any cell that raised (``error``)."""

    cell: int
    expected: str
    got: str
    error: str = ""

    def describe(self) -> str:
        if self.error:
            return f"cell {self.cell} raised {self.error.splitlines()[0]}"
        changed = [(e, g) for e, g in zip(self.expected.splitlines(), self.got.splitlines()) if e != g]
        e, g = changed[0] if changed else (self.expected, self.got)
        return f"cell {self.cell}: expected {e.strip()!r}, got {g.strip()!r}"


class Sanitizer:
    """nbval's ``--nbval-sanitize-with`` file as a function: the same regex replacements, in order."""

    def __init__(self, path: str | Path) -> None:
        parser = configparser.ConfigParser(interpolation=None)
        if not parser.read(path, encoding="utf-8"):
            raise FileNotFoundError(f"no nbval sanitize file at {path}")
        self.rules = [(re.compile(parser[s]["regex"]), parser[s]["replace"]) for s in parser.sections()]

    def __call__(self, text: str) -> str:
        for pattern, replacement in self.rules:
            text = pattern.sub(replacement, text)
        return text


def _text_of(cell) -> str:
    """What nbval compares of a cell: its streams and the plain text of its results, in order."""
    parts = []
    for out in cell.get("outputs", []):
        if out.get("output_type") == "stream":
            parts.append(out.get("text", ""))
        elif out.get("output_type") in ("execute_result", "display_data") and "text/plain" in out.get("data", {}):
            if "image/png" not in out["data"]:  # a figure's repr ("<Figure ...>") is not a fact
                parts.append(out["data"]["text/plain"])
    return "".join(parts)


def is_checked(cell) -> bool:
    """Whether nbval compares this cell's output under ``--nbval-lax``: a ``# NBVAL_CHECK_OUTPUT``
    comment or an ``nbval-check-output`` tag (a tag spelt like the comment is ignored by nbval)."""
    if cell.cell_type != "code":
        return False
    comment = any(line.strip().lstrip("#").strip() == CHECK_MARKER for line in cell.source.splitlines())
    return comment or CHECK_TAG in cell.metadata.get("tags", [])


def checked_outputs(nb, sanitize: Sanitizer) -> dict[int, str]:
    """The sanitized outputs of the cells nbval checks under ``--nbval-lax``, by cell index."""
    return {i: sanitize(_text_of(c)) for i, c in enumerate(nb.cells) if is_checked(c)}


def flips(expected: dict[int, str], ran_nb, errors: dict[int, str], sanitize: Sanitizer) -> list[Flip]:
    """The checked cells of ``ran_nb`` that printed other than ``expected``, and every cell that raised."""
    got = checked_outputs(ran_nb, sanitize)
    out = [Flip(i, expected[i], got.get(i, "")) for i in sorted(expected) if got.get(i, "") != expected[i]]
    out += [Flip(i, expected.get(i, ""), "", error) for i, error in errors.items() if error]
    return sorted(out, key=lambda f: f.cell)

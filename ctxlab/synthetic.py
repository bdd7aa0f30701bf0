"""Synthetic inputs with a known shape, for the exercises and their checks.

An exercise reads a map or a table drawn here instead of running the experiment (which takes
minutes); its check draws more of the same kind with other sizes, orders and knobs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import Tensor


def synthetic_phase_map(gammas: Sequence[float], lrs: Sequence[float], steps: int = 800, unstable: float = math.inf,
                        stuck: tuple[int, int] | None = None, knob_lengthens: bool = False) -> Tensor:
    """A plateau map [G, R]: rest ~ (e^(3(gamma-0.5)) - 1.3) / lr, capped at ``steps``; NaN for lr >= ``unstable``.

    ``stuck`` keeps one cell of an unstable column finite (a run that got stuck instead of blowing up);
    ``knob_lengthens`` makes the column knob lengthen the rest instead (e.g. weight decay).
    """
    rows = []
    for g in gammas:
        row = []
        for r in lrs:
            factor = (1.0 + 40.0 * r) if knob_lengthens else 1.0 / r
            row.append(min(float(steps), max(0.0, round(120.0 * (math.exp(3.0 * (g - 0.5)) - 1.3) * factor / 5) * 5)))
        rows.append(row)
    plateau = torch.tensor(rows, dtype=torch.float64)
    plateau[:, torch.tensor([r >= unstable for r in lrs], dtype=torch.bool)] = torch.nan
    if stuck is not None:
        plateau[stuck] = 265.0
    return plateau


def small_init_table(vocab: int, d: int, gamma: float, seed: int, offset: float = 0.0) -> Tensor:
    """An embedding table [V, d] ~ N(0, d^(-2 gamma)) (plus a constant ``offset``), float64."""
    g = torch.Generator().manual_seed(seed)
    return torch.randn(vocab, d, generator=g, dtype=torch.float64) * d ** (-gamma) + offset

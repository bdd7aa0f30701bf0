"""Synthetic inputs with a known shape, for the exercises and their checks.

An exercise reads a map, a table or a loss curve drawn here instead of running the experiment
(which takes minutes); its check draws more of the same kind with other sizes, orders and knobs,
whose answers are known by construction.

* :func:`synthetic_phase_map`, :func:`small_init_table`: a γ x knob map of rests, a small-init table;
* :func:`staircase_curve`, :func:`spike`: loss curves with treads, slides, spikes and ends placed by
  hand, to practise and test reading a curve rung by rung (:mod:`ctxlab.rungs`).
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

def staircase_curve(steps: Tensor, treads: Sequence[Sequence[float]], width: float = 6.0,
                    noise: float = 1e-5, seed: int = 0) -> Tensor:
    """A loss curve [T] (float64) at the recorded ``steps``.

    ``treads[0] = (level, ...)`` is the start; every later entry ``(level, at)`` or ``(level, at, width)``
    is a drop (or climb) to ``level`` centred at step ``at``, taking about ``4 * width`` steps. The
    steepest slope of a drop is ``|change| / (4 * width)`` nats per step: a drop with a wide width
    slides through whatever lies between. ``noise`` adds i.i.d. Gaussian jitter of that size.
    """
    steps = torch.as_tensor(steps)
    if steps.ndim != 1 or steps.numel() < 2:
        raise ValueError(f"steps must be a 1-d tensor of at least 2 recorded steps, got shape {tuple(steps.shape)}")
    if len(treads) < 1:
        raise ValueError("treads needs at least the start level, e.g. [(0.6931,), (0.6109, 200)]")
    t = steps.to(torch.float64)
    loss = torch.full_like(t, float(treads[0][0]))
    for before, drop in zip(treads[:-1], treads[1:]):
        if len(drop) not in (2, 3):
            raise ValueError(f"each drop is (level, at) or (level, at, width), got {tuple(drop)}")
        w = float(drop[2]) if len(drop) == 3 else width
        if not (w > 0):
            raise ValueError(f"the width of a drop must be positive, got {w!r}")
        loss = loss + (float(drop[0]) - float(before[0])) * torch.sigmoid((t - float(drop[1])) / w)
    if noise:
        g = torch.Generator().manual_seed(seed)
        loss = loss + noise * torch.randn(t.shape, generator=g, dtype=torch.float64)
    return loss


def spike(steps: Tensor, loss: Tensor, at: float, height: float, width: float = 8.0) -> Tensor:
    """``loss`` plus a Gaussian bump of ``height`` nats centred at step ``at`` (a spike when positive)."""
    t = torch.as_tensor(steps).to(torch.float64)
    return torch.as_tensor(loss, dtype=torch.float64) + height * torch.exp(-(((t - at) / width) ** 2))

"""Synthetic loss curves with known rungs, to practise and test reading a curve rung by rung.

A real run gives one curve whose answers nobody knows in advance; these give curves whose treads,
slides, spikes and ends are placed by hand, so :mod:`ctxlab.rungs` (and an exercise that re-derives
it) can be checked against answers known by construction.

* :func:`staircase_curve`: a start level and a list of drops, each a smooth step (a logistic of
  chosen width) to a new level at a chosen step; a wide drop is a slide, not a tread;
* :func:`spike`: a short bump added to a curve (an overshoot of gradient descent).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor


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

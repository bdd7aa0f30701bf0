"""Read a loss curve against a predicted ladder H_0 > H_1 > ... the way a reader reads the figure.

The course's one vocabulary for a loss curve, defined here and in lesson 03 and used everywhere:

* it **rests on** a level while it is flat within ``tol`` (0.01 nats) of it: the rung's **dwell** is the
  number of steps it does so (flat = moving by less than ``flat`` nats per step, so a slide that merely
  passes through a level, or a tread at some other, unpredicted level, is never credited to it);
* it is **halfway down** stair k at its **onset**: the first step below the midpoint
  (H_{k-1} + H_k) / 2 (0 for H_0, -1 where never);
* it **reaches** a level only when it comes within ``tol`` of it (``reached``: the first such step, -1
  where never), so a curve can be halfway down a stair without reaching its level;
* it **ends on** the level its last recorded loss lies within ``tol`` of (None: none).

A curve can also rest on a level nobody predicted: :func:`shelves` finds every level stretch within
``tol`` of one value for a tenth of the run (a doubling of the step count on a log axis), and
:func:`unnamed_rests` those at no named level that the curve leaves, which a figure draws as measured.

Also per rung the longest flat stretch on it (``span``), to look at the model in the middle of it, and
for the whole curve the largest **rise** after it left H_0 (how far it ever climbs back above the lowest
loss seen so far; 0 for a curve that only goes down).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from ctxlab.validate import finite, number

TOL = 0.01  # nats: "on a rung" means within this of the predicted level
SHELF_SHARE = 0.1  # a shelf on a linear step axis lasts at least this share of the run
SHELF_RATIO = 2.0  # a shelf on a log step axis lasts at least a doubling of the step count


@dataclass(frozen=True)
class Rung:
    """One predicted level and what the curve did there (steps are training steps)."""

    order: int
    level: float
    dwell: int  # steps it rests on the level
    onset: int  # the step it is halfway down to the level (-1: never)
    span: tuple[int, int] | None  # first and last step of the longest flat stretch on the rung
    reached: int = -1  # the first step within tol of the level (-1: never)

    @property
    def middle(self) -> int | None:
        """The step halfway through the longest flat stretch: where to look at the model on this rung."""
        return None if self.span is None else (self.span[0] + self.span[1]) // 2


@dataclass(frozen=True)
class Rungs:
    """A curve read rung by rung: ``rungs[k]`` for H_k, the largest rise, the final loss and the rung
    it ends on (None: not within the tolerance of any level)."""

    rungs: tuple[Rung, ...]
    rise: float
    final: float
    ends_on: int | None
    tol: float

    def dwells(self) -> list[int]:
        return [r.dwell for r in self.rungs]

    def onsets(self) -> list[int]:
        return [r.onset for r in self.rungs]

    def reached(self) -> list[int]:
        return [r.reached for r in self.rungs]


def _check(steps: Tensor, loss: Tensor, levels: Sequence[float]) -> tuple[Tensor, Tensor, list[float]]:
    steps, loss = _check_curve(steps, loss)
    levels = [float(h) for h in levels]
    if len(levels) < 2 or any(not (a > b) for a, b in zip(levels, levels[1:])):
        raise ValueError(f"levels must be a decreasing ladder H_0 > H_1 > ... of at least 2 values, got {levels}")
    return steps, loss, levels


def _check_curve(steps: Tensor, loss: Tensor) -> tuple[Tensor, Tensor]:
    steps = torch.as_tensor(steps)
    loss = torch.as_tensor(loss, dtype=torch.float64)
    if steps.ndim != 1 or steps.numel() < 2:
        raise ValueError(f"steps must be a 1-d tensor of at least 2 recorded steps, got shape {tuple(steps.shape)}")
    if loss.shape[-1] != steps.numel():
        raise ValueError(f"loss has {loss.shape[-1]} values per curve but there are {steps.numel()} recorded steps")
    if bool((steps.diff() <= 0).any()):
        raise ValueError("steps must be strictly increasing")
    return steps, loss


def crossing_step(steps: Tensor, curve: Tensor, level: float, below: bool = True) -> Tensor:
    """First recorded step where ``curve`` [..., T] goes below (or above) ``level``; -1 if never."""
    number(level, "level")
    hit = curve < level if below else curve > level
    first = torch.where(hit.any(-1), hit.float().argmax(-1), torch.full(hit.shape[:-1], -1))
    return torch.where(first >= 0, steps[first.clamp_min(0)], torch.full_like(first, -1))


def halfway_step(steps: Tensor, curve: Tensor, fraction: float = 0.5) -> Tensor:
    """First step where ``curve`` [..., T] has covered ``fraction`` of its way from start to end
    (rising or falling): when a norm or a share arrives, whatever its final size."""
    start, end = curve[..., :1], curve[..., -1:]
    level = start + fraction * (end - start)
    rising = (end > start).squeeze(-1)
    hit = torch.where(rising[..., None], curve >= level, curve <= level)
    return steps[hit.float().argmax(-1)]


def stair_onsets(steps: Tensor, loss: Tensor, levels: Sequence[float]) -> Tensor:
    """Onset of stair k (k = 1..len(levels)-1): the first step the loss is halfway down it, below (H_{k-1} + H_k) / 2.

    loss: [..., T]; returns [..., len(levels) - 1] steps, -1 where it never got halfway down.
    """
    if len(finite(list(levels), "levels")) < 2:
        raise ValueError(f"levels must hold at least two plateau losses (H_0, H_1, ...), got {list(levels)}")
    mids = [(a + b) / 2 for a, b in zip(levels[:-1], levels[1:])]
    return torch.stack([crossing_step(steps, loss, m) for m in mids], dim=-1)


def _flat_runs(steps: Tensor, on: Tensor) -> list[tuple[int, int]]:
    """Maximal runs of consecutive recorded intervals marked ``on`` [T-1], as (first step, last step)."""
    runs, begin = [], None
    for i, flag in enumerate(on.tolist() + [False]):
        if flag and begin is None:
            begin = i
        elif not flag and begin is not None:
            runs.append((int(steps[begin]), int(steps[i])))
            begin = None
    return runs


def measure_rungs(steps: Tensor, loss: Tensor, levels: Sequence[float], tol: float = TOL,
                  flat: float | None = None) -> Rungs:
    """Read one loss curve [T] against the ladder ``levels``: dwell, onset, reach and span per rung, rise, end.

    ``flat`` (default ``tol / 100`` nats per step) is the steepest slope that still counts as resting:
    at that slope the loss needs 100 steps to move by ``tol``.
    """
    steps, loss, levels = _check(steps, loss, levels)
    if loss.ndim != 1:
        raise ValueError(f"measure_rungs reads one curve [T]; got shape {tuple(loss.shape)} (use measure_runs)")
    if not (tol > 0):
        raise ValueError(f"tol must be positive, got {tol!r}")
    flat = tol / 100 if flat is None else flat
    if not (flat > 0):
        raise ValueError(f"flat must be positive, got {flat!r}")
    if not bool(torch.isfinite(loss).all()):
        raise ValueError("the loss curve has NaN or infinite values (the run diverged): there are no rungs to read")
    width = steps.diff().to(torch.float64)
    slope = loss.diff().abs() / width
    onsets = [0] + stair_onsets(steps, loss, levels).tolist()
    rungs = []
    for k, level in enumerate(levels):
        near = (loss - level).abs() <= tol
        on = near[1:] & near[:-1] & (slope <= flat)
        runs = _flat_runs(steps, on)
        span = max(runs, key=lambda r: r[1] - r[0]) if runs else None
        first_near = near.nonzero()
        reached = int(steps[int(first_near[0])]) if len(first_near) else -1
        rungs.append(Rung(k, level, int(width[on].sum()), int(onsets[k]), span, reached))
    left = (loss < levels[0] - tol).nonzero()
    rise = 0.0
    if len(left):
        after = loss[int(left[0]):]
        rise = float((after - torch.cummin(after, 0).values).max())
    final = float(loss[-1])
    distance = [abs(final - h) for h in levels]
    nearest = min(range(len(levels)), key=distance.__getitem__)
    return Rungs(tuple(rungs), rise, final, nearest if distance[nearest] <= tol else None, tol)


@dataclass(frozen=True)
class Tread:
    """A stretch where the loss rests, from step ``first`` to ``last`` at ``level``: flat at every record
    (:func:`treads`) or within ``tol`` of the level throughout (:func:`shelves`)."""

    first: int
    last: int
    level: float  # treads: the loss at the middle record; shelves: the middle of the band

    @property
    def steps(self) -> int:
        return self.last - self.first


def treads(steps: Tensor, loss: Tensor, tol: float = TOL, flat: float | None = None, min_steps: int = 50) -> list[Tread]:
    """Every tread of one curve [T] lasting at least ``min_steps``, predicted or not: where the loss
    really rests, to set beside the ladder (a tread at no predicted level is a sub-rung to explain)."""
    steps, loss = _check_curve(steps, loss)
    if loss.ndim != 1 or not bool(torch.isfinite(loss).all()):
        raise ValueError("treads reads one finite loss curve [T]")
    flat = tol / 100 if flat is None else flat
    if not (flat > 0):
        raise ValueError(f"flat must be positive, got {flat!r}")
    slope = loss.diff().abs() / steps.diff().to(torch.float64)
    found = []
    for first, last in _flat_runs(steps, slope <= flat):
        if last - first >= min_steps:
            inside = ((steps >= first) & (steps <= last)).nonzero().flatten()
            found.append(Tread(first, last, float(loss[inside[len(inside) // 2]])))
    return found


def longest_tread_at(steps: Tensor, loss: Tensor, level: float, tol: float = TOL) -> Tread | None:
    """The longest tread of one curve [T] whose level lies within ``tol`` of ``level`` (None: the loss
    never rests there): how long a curve rests on a level that is not a rung of its ladder."""
    near = [t for t in treads(steps, loss, tol) if abs(t.level - level) <= tol]
    return max(near, key=lambda t: t.steps, default=None)


def measure_runs(steps: Tensor, losses: Tensor, levels: Sequence[float], tol: float = TOL,
                 flat: float | None = None) -> list[Rungs]:
    """:func:`measure_rungs` for every curve of ``losses`` [K, T]."""
    losses = torch.as_tensor(losses)
    if losses.ndim != 2:
        raise ValueError(f"losses must be [K, T], got shape {tuple(losses.shape)}")
    return [measure_rungs(steps, curve, levels, tol, flat) for curve in losses]


def shelves(steps: Tensor, loss: Tensor, tol: float = TOL, log: bool = False) -> list[Tread]:
    """Every stretch where one curve [T] stays within ``tol`` of one value, its ``level`` (the middle of
    its range), long and level enough to read as a rest in its figure: a tenth of the run on a linear
    step axis (``SHELF_SHARE``), a doubling of the step count on a log one (``SHELF_RATIO``, from step 1
    on), and a net change, first fifth against last, of at most ``tol``, so that a slow slide through
    the band is never one. Stretches hold three records at least and are taken left to right, each as
    long as it goes."""
    steps, loss = _check_curve(steps, loss)
    if loss.ndim != 1 or not bool(torch.isfinite(loss).all()):
        raise ValueError("shelves reads one finite loss curve [T]")
    if log:  # a log axis does not draw step 0
        steps, loss = steps[steps > 0], loss[steps > 0]
    if loss.numel() < 3:
        return []
    span = SHELF_SHARE * float(steps[-1] - steps[0])
    found, i, T = [], 0, loss.numel()
    while i < T - 1:
        tail = loss[i:]
        spread = tail.cummax(0).values - tail.cummin(0).values
        j = i + int((spread <= 2 * tol).sum()) - 1  # spread only grows, so this is the stretch's last index
        first, last, window = int(steps[i]), int(steps[j]), loss[i:j + 1]
        fifth = max(1, len(window) // 5)
        net = abs(float(window[:fifth].median() - window[-fifth:].median()))
        long_enough = last >= SHELF_RATIO * first if log else last - first >= span
        if j > i + 1 and long_enough and net <= tol:  # three records at least: two make a segment, not a stretch
            found.append(Tread(first, last, float(window.max() + window.min()) / 2))
            i = j + 1
        else:
            i += 1
    return found


def unnamed_rests(steps: Tensor, losses: Tensor, named: Sequence[float], tol: float = TOL,
                  log: bool = False) -> list[tuple[int, Tread]]:
    """(curve index, shelf) for every :func:`shelves` stretch of the curves [K, T] that lies within ``tol``
    of none of the ``named`` levels and that the curve leaves (its last loss more than 2 ``tol`` away:
    otherwise the stretch is where it ends, sliding slowly or not): the rests a figure must still draw
    and name. A curve that diverged is read up to its first non-finite record."""
    losses = torch.as_tensor(losses)
    if losses.ndim != 2:
        raise ValueError(f"losses must be [K, T], got shape {tuple(losses.shape)}")
    named, steps, found = [float(h) for h in named], torch.as_tensor(steps), []
    for k, curve in enumerate(losses):
        kept = int(torch.isfinite(curve).long().cumprod(0).sum())  # a diverged run: its records before it diverged
        if kept < 3:
            continue
        curve = curve[:kept]
        found += [(k, s) for s in shelves(steps[:kept], curve, tol, log)
                  if all(abs(s.level - h) > tol for h in named) and abs(float(curve[-1]) - s.level) > 2 * tol]
    return found


def rests_report(steps: Tensor, losses: Tensor, named: Sequence[float], tol: float = TOL, log: bool = False,
                 who: Sequence[str] | None = None) -> str:
    """:func:`unnamed_rests` in words, for a lesson to print beside its figure: "seed 1, steps 60-180 at
    0.588; ..." (``who``: a name per curve, default "seed k"), or "none"."""
    found = unnamed_rests(steps, losses, named, tol, log)
    names = [f"seed {k}" for k in range(len(losses))] if who is None else list(who)
    return "; ".join(f"{names[k]}, steps {r.first}-{r.last} at {r.level:.3f}" for k, r in found) or "none"

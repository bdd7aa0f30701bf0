"""Checks for the exercises of lesson 03 (the staircase, observed).

The cases are synthetic loss curves with known treads (smooth steps between flat levels, a little
noise, sub-levels, stairs never reached, irregular recording steps), so each check runs in well
under a second and its answers are known exactly.
"""

from __future__ import annotations

import math
from functools import cache
from typing import Any, Callable, Sequence

import torch
from torch import Tensor

from ctxlab.align import find_plateaus, match_plateaus, stair_onsets
from ctxlab.checks.core import Case, Diagnosis, _as_float, run_check

HIERARCHY = (math.log(3), 0.9503, 0.8419, 0.6630)  # the ladder of lesson 01, rounded
XOR = (math.log(8), math.log(2), 0.0)


def staircase_curve(steps: Tensor, treads: Sequence[tuple[float, float]], width: float = 6.0,
                    noise: float = 1e-5, seed: int = 0) -> Tensor:
    """A loss curve [T] at ``steps`` that starts at treads[0][0] and drops to each (level, at_step) in turn."""
    t = steps.to(torch.float64)
    loss = torch.full_like(t, treads[0][0])
    for (before, _), (level, at) in zip(treads[:-1], treads[1:]):
        loss = loss + (level - before) * torch.sigmoid((t - at) / width)
    return loss + noise * torch.randn(t.shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def _every(step: int, last: int = 4000) -> Tensor:
    return torch.arange(0, last + 1, step)


def _irregular(last: int = 4000) -> Tensor:
    """Recording steps that thin out: every 2 steps up to 500, every 10 to 2000, every 25 after."""
    return torch.cat([torch.arange(0, 500, 2), torch.arange(500, 2000, 10), torch.arange(2000, last + 1, 25)])


def _bump(steps: Tensor, loss: Tensor, at: int, height: float, width: float = 8.0) -> Tensor:
    """Add a short spike (a gradient-descent overshoot) centred at step ``at``."""
    return loss + height * torch.exp(-(((steps.to(torch.float64) - at) / width) ** 2))


@cache
def _curves() -> list[tuple[str, Tensor, Tensor, tuple[float, ...], bool]]:
    """(label, steps, loss, levels, hidden) shared by the plateau and onset checks."""
    H0, H1, H2, H3 = HIERARCHY
    s5, irregular = _every(5), _irregular()
    spiky = staircase_curve(s5, [(H0, 0), (H1 + 0.004, 240), (H2 - 0.003, 1000), (H3 + 0.008, 1500)], seed=4)
    return [
        ("clean staircase, recorded every 5 steps", s5,
         staircase_curve(s5, [(H0, 0), (H1 + 0.004, 240), (0.906, 560), (H2 - 0.003, 1100), (H3 + 0.008, 1700)], seed=1),
         HIERARCHY, False),
        ("standard init: no rest at ln 3, a short H1", s5,
         staircase_curve(s5, [(H0, 0), (H1 - 0.006, 8), (H2 - 0.005, 150), (H3 + 0.007, 500)], width=3, seed=2),
         HIERARCHY, True),
        ("a sub-level near 1.015 before H1", s5,
         staircase_curve(s5, [(H0, 0), (1.015, 1500), (H1 + 0.003, 1900), (H2 + 0.01, 2600), (H3 + 0.02, 3400)], seed=3),
         HIERARCHY, True),
        ("a spike after the second stair", s5, _bump(s5, spiky, 1040, 0.1), HIERARCHY, True),
        ("the last stair never reached, irregular recording steps", irregular,
         staircase_curve(irregular, [(H0, 0), (H1 + 0.005, 300), (H2 + 0.004, 1200)], seed=5), HIERARCHY, True),
        ("the xor ladder ln 8 -> ln 2 -> 0, recorded every 10 steps", _every(10),
         staircase_curve(_every(10), [(XOR[0], 0), (XOR[1] + 0.01, 400), (0.012, 1800)], width=10, seed=6), XOR, True),
    ]


# --- exercise 1: plateau levels matched to the ladder ---------------------------------------------


def matched_levels_reference(steps: Tensor, loss: Tensor, levels: Sequence[float]) -> list[float | None]:
    """For each predicted level, the mean loss of the plateau matched to it (or None)."""
    return [None if p is None else p.level for p in match_plateaus(find_plateaus(steps, loss), levels)]


def _levels_problem(atol: float) -> Callable[[Any, Any], str | None]:
    def compare(got: Any, expected: list[float | None]) -> str | None:
        if not isinstance(got, (list, tuple)) or len(got) != len(expected):
            n = len(got) if isinstance(got, (list, tuple)) else type(got).__name__
            return f"expected a list with one entry per level ({len(expected)}, H_0 included), got {n}"
        for k, (g, e) in enumerate(zip(got, expected)):
            if e is None and g is not None:
                return f"level H_{k}: no plateau lies in its band, so expected None, got {g!r}"
            if e is not None and (g is None or _as_float(g) is None or abs(_as_float(g) - e) > atol):
                return f"level H_{k}: expected a plateau at {e:.4f} (within {atol:g}), got {g!r}"
        return None

    return compare


def _levels_equal(got: Any, want: list) -> bool:
    return _levels_problem(2e-3)(got, want) is None


def check_03_plateau_levels(fn: Callable[[Tensor, Tensor, Sequence[float]], list]) -> None:
    """fn(steps, loss, levels) -> for each level H_k, the loss of the plateau matched to it, or None."""
    cases = [Case(label, (steps, loss, levels), matched_levels_reference(steps, loss, levels), hidden)
             for label, steps, loss, levels, hidden in _curves()]

    def nearest_anywhere(c: Case) -> list:
        found = find_plateaus(c.args[0], c.args[1])
        return [min(found, key=lambda p: abs(p.level - h)).level for h in c.args[2]]

    def first_in_band(c: Case) -> list:
        found, levels = find_plateaus(c.args[0], c.args[1]), c.args[2]
        out = []
        for k, h in enumerate(levels):
            upper = (levels[k - 1] + h) / 2 if k > 0 else float("inf")
            lower = (h + levels[k + 1]) / 2 if k + 1 < len(levels) else float("-inf")
            inside = [p.level for p in found if lower <= p.level < upper]
            out.append(inside[0] if inside else None)
        return out

    diagnoses = [
        Diagnosis(lambda g, e, c: _levels_equal(g, [float(h) for h in c.args[2]]), "you returned the predicted levels: return the measured loss of each matched plateau"),
        Diagnosis(lambda g, e, c: _levels_equal(g, nearest_anywhere(c)), "a plateau may only count for H_k if it lies in H_k's band (between the midpoints to H_(k-1) and H_(k+1)); otherwise return None"),
        Diagnosis(lambda g, e, c: isinstance(g, (list, tuple)) and len(g) == len(e) - 1, "one entry per level, H_0 included (H_0 is the rest at the start)"),
        Diagnosis(lambda g, e, c: _levels_equal(g, first_in_band(c)), "several plateaus can lie in one band (sub-levels): pick the one whose level is nearest to H_k, not the first"),
    ]  # fmt: skip
    run_check("check_03_plateau_levels", fn, cases, _levels_problem(2e-3), diagnoses)


# --- exercise 2: stair onsets ---------------------------------------------------------------------


def _ints_problem(got: Any, expected: list[int]) -> str | None:
    try:
        values = [int(v) for v in (got.tolist() if isinstance(got, Tensor) else got)]
    except Exception:
        return f"expected a list of {len(expected)} integer steps, got {got!r}"
    if values != expected:
        return f"expected onsets {expected}, got {values}"
    return None


def stair_onsets_reference(steps: Tensor, loss: Tensor, levels: Sequence[float]) -> list[int]:
    return [int(v) for v in stair_onsets(steps, loss, list(levels))]


def _first_below(steps: Tensor, loss: Tensor, value: float, last: bool = False, index: bool = False) -> int:
    """Step (or index) where ``loss`` first goes below ``value``; with ``last``, its last downward crossing."""
    below = loss < value
    crossings = (below & ~torch.cat([torch.tensor([False]), below[:-1]])).nonzero().flatten()
    if len(crossings) == 0:
        return -1
    i = int(crossings[-1] if last else crossings[0])
    return i if index else int(steps[i])


def check_03_stair_onsets(fn: Callable[[Tensor, Tensor, Sequence[float]], list]) -> None:
    """fn(steps, loss, levels) -> [onset of stair 1, ..., stair L]: first step with loss < (H_(k-1) + H_k)/2, else -1."""
    cases = [Case(label, (steps, loss, levels), stair_onsets_reference(steps, loss, levels), hidden)
             for label, steps, loss, levels, hidden in _curves()]

    def variant(index: bool = False, last: bool = False) -> Callable[[Any, Any, Case], bool]:
        def matches(g, e, c: Case) -> bool:
            steps, loss, levels = c.args
            mids = [(a + b) / 2 for a, b in zip(levels[:-1], levels[1:])]
            want = [_first_below(steps, loss, m, last=last, index=index) for m in mids]
            return _ints_problem(g, want) is None and want != e
        return matches

    def at_level(g, e, c: Case) -> bool:
        steps, loss, levels = c.args
        want = [_first_below(steps, loss, h) for h in levels[1:]]
        return _ints_problem(g, want) is None and want != e

    diagnoses = [
        Diagnosis(variant(index=True), "those are positions in the arrays, not training steps: return steps[i]"),
        Diagnosis(at_level, "you waited for the loss to reach H_k itself; a measured plateau often sits a little above it, so use the midpoint (H_(k-1) + H_k) / 2"),
        Diagnosis(variant(last=True), "that is the last time the loss crossed the midpoint (after a spike): the onset is the first crossing"),
    ]  # fmt: skip
    run_check("check_03_stair_onsets", fn, cases, _ints_problem, diagnoses)


# --- exercise 3: the longest first plateau ------------------------------------------------------------


def longest_first_plateau_reference(steps: Tensor, losses: Tensor, gammas: Sequence[float], levels: Sequence[float]) -> float:
    """The γ whose runs (averaged over seeds) take longest to reach the first stair's onset."""
    onsets = stair_onsets(steps, losses, list(levels))[:, 0].to(torch.float64)
    onsets = torch.where(onsets < 0, torch.tensor(float(steps[-1]) + 1.0, dtype=torch.float64), onsets)
    by_gamma = {g: float(onsets[[k for k, gk in enumerate(gammas) if gk == g]].mean()) for g in dict.fromkeys(gammas)}
    return max(by_gamma, key=by_gamma.get)


def _ensemble(steps: Tensor, runs: Sequence[tuple[float, Sequence[int]]], levels=HIERARCHY, seed: int = 0) -> tuple:
    """(steps, losses [K, T], gammas [K], levels) from (γ, [first-stair steps of its seeds]) with a fixed ladder."""
    H0, H1, H2, H3 = levels
    losses, gammas = [], []
    for g, firsts in runs:
        for j, t1 in enumerate(firsts):
            treads = [(H0, 0), (H1 + 0.004, t1), (H2, t1 + 700), (H3 + 0.006, t1 + 1200)]
            losses.append(staircase_curve(steps, treads, seed=seed + len(losses)))
            gammas.append(g)
    return steps, torch.stack(losses), gammas, levels


@cache
def _ensembles() -> list[tuple[str, tuple, bool]]:
    s5 = _every(5, 4000)
    return [
        ("γ = 0.5, 1, 1.5 with two seeds each", _ensemble(s5, [(0.5, [10, 15]), (1.0, [230, 200]), (1.5, [1700, 1500])]), False),
        ("a larger learning rate at γ = 1.5 (shorter wait than γ = 1)", _ensemble(s5, [(0.5, [10, 15]), (1.0, [400, 380]), (1.5, [250, 260])], seed=10), True),
        ("seeds disagree: seed 0 of γ = 1.25 waits longest, the mean of γ = 1 is larger",
         _ensemble(s5, [(1.0, [600, 700, 650]), (1.25, [900, 200, 150])], seed=20), True),
        ("γ listed out of order",
         _ensemble(s5, [(1.0, [300]), (0.75, [60]), (0.5, [20])], seed=30), True),
    ]


def check_03_longest_first_plateau(fn: Callable[[Tensor, Tensor, Sequence[float], Sequence[float]], float]) -> None:
    """fn(steps, losses [K, T], gammas [K], levels) -> the γ whose seeds wait longest (on average) before stair 1."""
    cases = [Case(label, args, longest_first_plateau_reference(*args), hidden) for label, args, hidden in _ensembles()]

    def picks(choose: Callable[[Case], float]) -> Callable[[Any, Any, Case], bool]:
        return lambda g, e, c: _as_float(g) is not None and abs(_as_float(g) - choose(c)) < 1e-9 and abs(choose(c) - e) > 1e-9

    def first_seed(c: Case) -> float:
        steps, losses, gammas, levels = c.args
        keep = [gammas.index(g) for g in dict.fromkeys(gammas)]
        return longest_first_plateau_reference(steps, losses[keep], [gammas[k] for k in keep], levels)

    diagnoses = [
        Diagnosis(picks(first_seed), "average the wait over all seeds of a γ, not only the first run"),
        Diagnosis(picks(lambda c: max(c.args[2])), "you returned the largest γ: measure the wait before the first stair in the curves instead of assuming"),
        Diagnosis(lambda g, e, c: _as_float(g) is not None and float(_as_float(g)).is_integer() and _as_float(g) not in c.args[2], "return the value of γ, not its position in the list"),
    ]  # fmt: skip
    run_check("check_03_longest_first_plateau", fn, cases, _gamma_problem, diagnoses)


def _gamma_problem(got: Any, expected: float) -> str | None:
    value = _as_float(got)
    if value is None:
        return f"expected a number (a value of γ), got {type(got).__name__}"
    if abs(value - expected) > 1e-9:
        return f"expected γ = {expected:g}, got {value:g}"
    return None

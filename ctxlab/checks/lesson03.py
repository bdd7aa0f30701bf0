"""Checks for the exercises of lesson 03 (the staircase, observed): reading curves rung by rung.

The rung-reading checks use synthetic loss curves from :mod:`ctxlab.synthetic` (treads, slides
through a level, treads at unpredicted sub-levels, spikes, stairs never gone halfway down, irregular
recording steps, other ladders): each runs in well under a second and its reference answers come
from :mod:`ctxlab.rungs`. The build-it exercise has its own module, :mod:`ctxlab.checks.lesson03_build`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import cache
from typing import Any

import torch
from torch import Tensor

from ctxlab.checks.core import Case, Diagnosis, as_float, as_ints, run_check
from ctxlab.rungs import TOL, measure_rungs, stair_onsets
from ctxlab.synthetic import spike, staircase_curve

BINARY = (math.log(2), 0.6109, 0.5554, 0.4737)  # the headline ladder (hierarchy_task(block=8, n_values=2)), rounded
XOR = (math.log(8), math.log(2), 0.0)


def _every(step: int, last: int = 2500) -> Tensor:
    return torch.arange(0, last + 1, step)


def _irregular(last: int = 2500) -> Tensor:
    """Recording steps that thin out: every 2 steps up to 400, every 10 to 1200, every 25 after."""
    return torch.cat([torch.arange(0, 400, 2), torch.arange(400, 1200, 10), torch.arange(1200, last + 1, 25)])


def _tied(steps: Tensor, loss: Tensor, levels: Sequence[float]) -> Tensor:
    """A tread whose first recorded values sit exactly on the midpoint (H0 + H1)/2 before going below it."""
    mid = (levels[0] + levels[1]) / 2
    loss = loss.clone()
    at = int((loss < mid).nonzero()[0])
    loss[at - 3:at] = mid
    return loss


def _climbs_after_leaving(steps: Tensor) -> Tensor:
    """Rests on H0, leaves it 0.02 below, climbs 0.005 at the very next record, then falls onto H1: the
    only rise is the one that starts at the leaving point itself."""
    H0, H1, H2, H3 = BINARY
    loss = staircase_curve(steps, [(H1,), (H2, 700), (H3 + 0.001, 1300)], seed=8)
    loss[:20] = H0
    loss[20], loss[21] = H0 - 0.02, H0 - 0.015
    return loss


@cache
def _curves() -> list[tuple[str, Tensor, Tensor, tuple[float, ...], bool]]:
    """(label, steps, loss, levels, hidden): the curves every rung-reading check reads."""
    H0, H1, H2, H3 = BINARY
    s5, irregular, s10 = _every(5), _irregular(), _every(10)
    clean = staircase_curve(s5, [(H0,), (H1 + 0.002, 180), (H2 - 0.003, 450), (H3 + 0.001, 900)], seed=1)
    slide = staircase_curve(s5, [(H0,), (0.585, 600, 120), (H2 + 0.002, 1000), (H3, 1500)], seed=2)
    bounce = staircase_curve(s5, [(H0,), (H1, 200), (H0 - 0.002, 320), (H1 + 0.001, 700), (H2, 1100), (H3 + 0.002, 1600)], seed=3)
    standard = staircase_curve(s5, [(H0 + 0.004,), (H1 - 0.006, 8, 3), (H2 - 0.004, 60, 3), (H3 + 0.003, 220, 3)], seed=4)
    return [
        ("a clean staircase, recorded every 5 steps", s5, clean, BINARY, False),
        ("a slide through H1 to an unpredicted sub-level at 0.585", s5, slide, BINARY, False),
        ("a spike of 0.02 on the H2 tread and a bump of 0.03 on H0", s5,
         spike(s5, spike(s5, clean, 700, 0.02), 60, 0.03), BINARY, True),
        ("never halfway down the last stair, irregular recording steps", irregular,
         staircase_curve(irregular, [(H0,), (H1 + 0.004, 300), (H2 + 0.005, 900)], seed=5), BINARY, True),
        ("leaves H0, climbs back onto it, then leaves for good", s5, bounce, BINARY, True),
        ("standard init: starts above H0, a 4-step H1, ends 0.003 above H3", s5, standard, BINARY, True),
        ("a tread 0.015 above H2 (outside the tolerance) and an end between rungs", s5,
         staircase_curve(s5, [(H0,), (H1, 200), (H2 + 0.015, 500), (0.52, 1200)], seed=6), BINARY, True),
        ("the loss sits exactly on the midpoint (H0 + H1)/2 before it goes below", s5, _tied(s5, clean, BINARY), BINARY, True),
        ("the xor ladder ln 8 -> ln 2 -> 0, recorded every 10 steps", s10,
         staircase_curve(s10, [(XOR[0],), (XOR[1] + 0.004, 400, 10), (0.006, 1800, 10)], seed=7), XOR, True),
        ("leaves H0 0.02 below it and climbs 0.005 at the next record", s5, _climbs_after_leaving(s5), BINARY, True),
    ]


def _ints_problem(what: str) -> Callable[[Any, list[int]], str | None]:
    def compare(got: Any, expected: list[int]) -> str | None:
        values = as_ints(got)
        if values is None:
            return f"expected a list of {len(expected)} integer steps ({what}), got {got!r}"
        if values != expected:
            return f"expected {what} {expected}, got {values}"
        return None

    return compare


def _gives(variant: Callable[[Case], Any], compare: Callable[[Any, Any], str | None]) -> Callable[[Any, Any, Case], bool]:
    """A diagnosis predicate: the learner's answer is what ``variant`` gives, and that differs from the reference."""

    def matches(got: Any, expected: Any, case: Case) -> bool:
        want = variant(case)
        return compare(want, expected) is not None and compare(got, want) is None

    return matches


# --- exercise 1: dwell on each rung -----------------------------------------------------------------


def dwell_reference(steps: Tensor, loss: Tensor, levels: Sequence[float], tol: float = TOL) -> list[int]:
    """Steps spent within ``tol`` of each level while flat (``ctxlab.rungs.measure_rungs``)."""
    return measure_rungs(steps, loss, levels, tol).dwells()


def _dwell_variant(steps: Tensor, loss: Tensor, levels: Sequence[float], tol: float = TOL, flat: bool = True,
                   per_step: bool = True, widths: bool = True, longest: bool = False, both_ends: bool = True) -> list[int]:
    """Dwell as the exercise defines it, with one rule switched off: the mistakes the check recognises."""
    width = steps.diff().to(torch.float64)
    change = loss.diff().abs() / (width if per_step else 1.0)
    out = []
    for level in levels:
        near = (loss - level).abs() <= tol
        on = (near[1:] & near[:-1]) if both_ends else (near[1:] | near[:-1])
        if flat:
            on = on & (change <= tol / 100)
        counted = width if widths else torch.ones_like(width)
        if longest:
            best, run = 0.0, 0.0
            for flag, w in zip(on.tolist(), counted.tolist()):
                run = run + w if flag else 0.0
                best = max(best, run)
            out.append(int(best))
        else:
            out.append(int(counted[on].sum()))
    return out


def check_03_dwell(fn: Callable[[Tensor, Tensor, Sequence[float]], list]) -> None:
    """fn(steps, loss, levels) -> [dwell on H_0, ..., H_L]: steps within 0.01 of each level while flat."""
    cases = [Case(label, (steps, loss, levels), dwell_reference(steps, loss, levels), hidden)
             for label, steps, loss, levels, hidden in _curves()]
    compare = _ints_problem("dwells")

    def variant(**kw) -> Callable[[Any, Any, Case], bool]:
        return _gives(lambda c: _dwell_variant(*c.args, **kw), compare)

    diagnoses = [
        Diagnosis(variant(flat=False), "you credited every step near a level, also where the loss slides through it: count an interval only where the loss is flat there (|change| / steps <= tol / 100)"),
        Diagnosis(variant(per_step=False), "divide the change of the loss by the number of steps between the two recordings: flatness is a slope per training step"),
        Diagnosis(variant(widths=False), "you counted recorded points; count training steps: each interval adds steps[i+1] - steps[i] (the recording is not always every step)"),
        Diagnosis(variant(longest=True), "that is the longest flat stretch on each rung; the dwell adds up every flat stretch on it"),
        Diagnosis(variant(both_ends=False), "both ends of an interval must lie within the tolerance of the level, not just one"),
        Diagnosis(lambda g, e, c: as_ints(g) is not None and len(as_ints(g)) == len(e) - 1, "one entry per level, H_0 included (the rest at the start)"),
    ]  # fmt: skip
    run_check("check_03_dwell", fn, cases, compare, diagnoses)


# --- exercise 2: stair onsets -------------------------------------------------------------------------


def stair_onsets_reference(steps: Tensor, loss: Tensor, levels: Sequence[float]) -> list[int]:
    """First step with loss < (H_(k-1) + H_k)/2 for k = 1..L; -1 where never (``ctxlab.rungs.stair_onsets``)."""
    return [int(v) for v in stair_onsets(steps, loss, list(levels))]


def _onset_variant(steps: Tensor, loss: Tensor, levels: Sequence[float], index: bool = False, last: bool = False,
                   at_level: bool = False, never: int = -1, inclusive: bool = False) -> list[int]:
    out = []
    for above, below in zip(levels[:-1], levels[1:]):
        line = below if at_level else (above + below) / 2
        hit = loss <= line if inclusive else loss < line
        if last:  # the step after which it stays below for good
            stays = torch.flip(torch.cummin(torch.flip(hit.int(), [0]), 0).values, [0]).bool()
            hit = stays
        where = hit.nonzero().flatten()
        if len(where) == 0:
            out.append(never)
        else:
            out.append(int(where[0]) if index else int(steps[where[0]]))
    return out


def check_03_stair_onsets(fn: Callable[[Tensor, Tensor, Sequence[float]], list]) -> None:
    """fn(steps, loss, levels) -> [onset of stair 1, ..., stair L]: first step with loss < (H_(k-1) + H_k)/2, else -1."""
    cases = [Case(label, (steps, loss, levels), stair_onsets_reference(steps, loss, levels), hidden)
             for label, steps, loss, levels, hidden in _curves()]
    compare = _ints_problem("onsets")

    def variant(**kw) -> Callable[[Any, Any, Case], bool]:
        return _gives(lambda c: _onset_variant(*c.args, **kw), compare)

    diagnoses = [
        Diagnosis(variant(index=True), "those are positions in the arrays, not training steps: return steps[i]"),
        Diagnosis(variant(never=0), "a stair the curve never gets halfway down has onset -1, not 0 (0 would mean: halfway down at the very start)"),
        Diagnosis(variant(at_level=True), "you waited for the loss to reach H_k itself; a tread often sits a little above it, so use the midpoint (H_(k-1) + H_k) / 2"),
        Diagnosis(variant(last=True), "that is when the loss goes below the midpoint for good; the onset is the first time it is below"),
        Diagnosis(variant(inclusive=True), "a loss exactly equal to the midpoint is not below it: use <, not <="),
    ]  # fmt: skip
    run_check("check_03_stair_onsets", fn, cases, compare, diagnoses)


# --- exercise 3: the largest rise and the rung the curve ends on ------------------------------------


def rise_and_end_reference(steps: Tensor, loss: Tensor, levels: Sequence[float], tol: float = TOL) -> tuple[float, int | None]:
    """(largest climb above the running minimum after leaving H_0, rung the final loss is on or None)."""
    read = measure_rungs(steps, loss, levels, tol)
    return read.rise, read.ends_on


def _rise_variant(steps: Tensor, loss: Tensor, levels: Sequence[float], tol: float = TOL, start: str = "first",
                  how: str = "running", end: str = "tol") -> tuple[float, int | None]:
    below = loss < levels[0] - tol
    if start == "zero":
        first = 0
    elif start == "good":  # the last time it goes below H_0 - tol, i.e. when it has left for good
        above = (~below).nonzero().flatten()
        first = int(above[-1]) + 1 if len(above) else 0
    else:
        first = int(below.nonzero()[0]) if bool(below.any()) else len(loss)
    if start == "after":  # the leaving point itself left out
        first += 1
    after = loss[first:]
    if len(after) < 2:
        rise = 0.0
    elif how == "running":
        rise = float((after - torch.cummin(after, 0).values).max())
    elif how == "one-step":
        rise = max(0.0, float(after.diff().max()))
    else:  # max minus min
        rise = float(after.max() - after.min())
    distance = [abs(float(loss[-1]) - h) for h in levels]
    nearest = min(range(len(levels)), key=distance.__getitem__)
    if end == "tol":
        ends = nearest if distance[nearest] <= tol else None
    elif end == "minus-one":
        ends = nearest if distance[nearest] <= tol else -1
    else:
        ends = nearest
    return rise, ends


def _rise_problem(got: Any, expected: tuple[float, int | None]) -> str | None:
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        return f"expected a pair (rise, ends_on), got {got!r}"
    rise = as_float(got[0])
    if rise is None or not abs(rise - expected[0]) <= 1e-6:
        return f"expected a largest rise of {expected[0]:.6f} nats, got {got[0]!r}"
    want = expected[1]
    if want is None:
        return None if got[1] is None else f"the final loss is not within the tolerance of any level: expected None, got {got[1]!r}"
    if got[1] is None or as_float(got[1]) != want:
        return f"expected the curve to end on rung {want}, got {got[1]!r}"
    return None


def check_03_rise_and_end(fn: Callable[[Tensor, Tensor, Sequence[float]], tuple]) -> None:
    """fn(steps, loss, levels) -> (largest rise after leaving H_0, index of the rung it ends on or None)."""
    cases = [Case(label, (steps, loss, levels), rise_and_end_reference(steps, loss, levels), hidden)
             for label, steps, loss, levels, hidden in _curves()]

    def variant(**kw) -> Callable[[Any, Any, Case], bool]:
        return _gives(lambda c: _rise_variant(*c.args, **kw), _rise_problem)

    def rise_only(**kw) -> Callable[[Any, Any, Case], bool]:
        def matches(g, e, c: Case) -> bool:
            want = _rise_variant(*c.args, **kw)[0]
            return isinstance(g, (tuple, list)) and len(g) == 2 and abs(want - e[0]) > 1e-6 and as_float(g[0]) is not None and abs(as_float(g[0]) - want) <= 1e-6
        return matches

    diagnoses = [
        Diagnosis(rise_only(start="zero"), "measure rises only after the loss has left H_0 (first below H_0 - tol): wobbles on the starting rest are not rises"),
        Diagnosis(rise_only(start="after"), "include the point where the loss leaves H_0 (the first below H_0 - tol): a climb right after it is a rise, measured from that point"),
        Diagnosis(rise_only(start="good"), "the loss leaves H_0 the first time it goes below H_0 - tol, not when it leaves for good: a climb back onto H_0 is a rise"),
        Diagnosis(rise_only(how="one-step"), "a rise is how far the loss climbs above the lowest value seen so far (loss - running minimum), not the largest single-step increase"),
        Diagnosis(rise_only(how="span"), "a rise is measured from the lowest loss seen so far (a running minimum), not from the lowest loss of the whole curve"),
        Diagnosis(variant(end="minus-one"), "when the final loss is on no rung, return None, not -1"),
        Diagnosis(variant(end="nearest"), "the curve ends on a rung only if its final loss is within the tolerance of that level; otherwise return None"),
    ]  # fmt: skip
    run_check("check_03_rise_and_end", fn, cases, _rise_problem, diagnoses)


# --- exercise 4: which γ waits longest before the first stair ---------------------------------------


def _wait_means(steps: Tensor, losses: Tensor, gammas: Sequence[float], levels: Sequence[float],
                never: float | None = None) -> dict[float, float]:
    """γ (ascending) -> mean wait before stair 1 over its runs; a run that never gets there waits ``never``
    (default ``steps[-1] + 1``)."""
    onsets = stair_onsets(steps, losses, list(levels))[:, 0].to(torch.float64)
    never = float(steps[-1]) + 1.0 if never is None else never
    waits = torch.where(onsets < 0, torch.tensor(never, dtype=torch.float64), onsets)
    return {g: float(waits[[k for k, gk in enumerate(gammas) if gk == g]].mean()) for g in sorted(set(gammas))}


def longest_wait_reference(steps: Tensor, losses: Tensor, gammas: Sequence[float], levels: Sequence[float]) -> float:
    """The γ whose runs (averaged over seeds) wait longest before stair 1; a run that never gets there
    counts ``steps[-1] + 1``; ties go to the smaller γ."""
    means = _wait_means(steps, losses, gammas, levels)
    return max(means, key=means.get)  # max keeps the first, i.e. the smallest, of equal means


def _ensemble(steps: Tensor, runs: Sequence[tuple[float, Sequence[int | None]]], levels=BINARY, seed: int = 0) -> tuple:
    """(steps, losses [K, T], gammas [K], levels) from (γ, [first-stair step of each seed]); None: never leaves H0."""
    H0, H1, H2, H3 = levels
    losses, gammas = [], []
    for g, firsts in runs:
        for t1 in firsts:
            treads = [(H0,)] if t1 is None else [(H0,), (H1 + 0.003, t1), (H2, t1 + 500), (H3 + 0.002, t1 + 900)]
            losses.append(staircase_curve(steps, treads, seed=seed + len(losses)))
            gammas.append(g)
    return steps, torch.stack(losses), gammas, levels


@cache
def _ensembles() -> list[tuple[str, tuple, bool]]:
    s5 = _every(5, 3000)
    return [
        ("γ = 0.5, 1, 1.5 with two seeds each", _ensemble(s5, [(0.5, [10, 15]), (1.0, [180, 200]), (1.5, [1300, 1400])]), False),
        ("a larger learning rate at γ = 1.5 (shorter wait than γ = 1)", _ensemble(s5, [(0.5, [10, 15]), (1.0, [400, 380]), (1.5, [250, 260])], seed=10), True),
        ("seeds disagree: seed 0 of γ = 1.25 waits longest, the mean of γ = 1 is larger",
         _ensemble(s5, [(1.0, [600, 700, 650]), (1.25, [900, 200, 150])], seed=20), True),
        ("γ listed out of order", _ensemble(s5, [(1.0, [300]), (0.75, [60]), (0.5, [20])], seed=30), True),
        ("one run of γ = 1.5 never leaves H0", _ensemble(s5, [(1.0, [1300, 1400]), (1.5, [None, 400])], seed=40), True),
        ("γ = 1 and 1.25 wait equally long on average", _ensemble(s5, [(1.25, [300, 500]), (1.0, [450, 350]), (0.5, [20, 20])], seed=50), True),
        ("three runs of γ = 0.5, one of γ = 1 (which waits longer)", _ensemble(s5, [(0.5, [300, 320, 310]), (1.0, [600])], seed=60), True),
        ("γ = 0.5 halfway down only at the last step, γ = 1 never", _ensemble(s5, [(0.5, [2995]), (1.0, [None])], seed=70), True),
    ]


def _gamma_problem(got: Any, expected: float) -> str | None:
    value = as_float(got)
    if value is None:
        return f"expected a number (a value of γ), got {type(got).__name__}"
    if abs(value - expected) > 1e-9:
        return f"expected γ = {expected:g}, got {value:g}"
    return None


def check_03_longest_wait(fn: Callable[[Tensor, Tensor, Sequence[float], Sequence[float]], float]) -> None:
    """fn(steps, losses [K, T], gammas [K], levels) -> the γ whose seeds wait longest (on average) before stair 1."""
    cases = [Case(label, args, longest_wait_reference(*args), hidden) for label, args, hidden in _ensembles()]

    def picks(choose: Callable[[Case], float]) -> Callable[[Any, Any, Case], bool]:
        return lambda g, e, c: _gamma_problem(g, choose(c)) is None and _gamma_problem(choose(c), e) is not None

    def longest(c: Case, never: float | None = None, larger_on_ties: bool = False) -> float:
        means = _wait_means(*c.args, never=never)
        order = sorted(means, reverse=larger_on_ties)
        return max(order, key=means.get)

    def first_seed(c: Case) -> float:
        steps, losses, gammas, levels = c.args
        keep = [gammas.index(g) for g in dict.fromkeys(gammas)]
        return longest_wait_reference(steps, losses[keep], [gammas[k] for k in keep], levels)

    def summed(c: Case) -> float:
        means, gammas = _wait_means(*c.args), c.args[2]
        sums = {g: means[g] * gammas.count(g) for g in means}
        return max(sums, key=sums.get)

    diagnoses = [
        Diagnosis(picks(first_seed), "average the wait over all seeds of a γ, not only the first run"),
        Diagnosis(picks(summed), "you added up the waits of each γ: a γ with more runs is not waiting longer; average over its runs"),
        Diagnosis(picks(lambda c: longest(c, never=float(c.args[0][-1]))), "a run that is never halfway down waited longer than one that gets there at the last recorded step: count its wait as steps[-1] + 1, not steps[-1]"),
        Diagnosis(lambda g, e, c: any(picks(lambda c, v=v: longest(c, never=v))(g, e, c) for v in (0.0, -1.0)), "a run that never gets halfway down the first stair (onset -1) has waited the whole run: count its wait as steps[-1] + 1, not 0 or -1"),
        Diagnosis(picks(lambda c: longest(c, larger_on_ties=True)), "when two γ wait equally long on average, return the smaller γ"),
        Diagnosis(picks(lambda c: min(_wait_means(*c.args).items(), key=lambda kv: kv[1])[0]), "that γ waits the shortest: return the one whose runs wait longest"),
        Diagnosis(picks(lambda c: max(c.args[2])), "you returned the largest γ: measure the wait before the first stair in the curves instead of assuming"),
        Diagnosis(lambda g, e, c: as_float(g) is not None and float(as_float(g)).is_integer() and as_float(g) not in c.args[2], "return the value of γ, not its position in the list"),
    ]  # fmt: skip
    run_check("check_03_longest_wait", fn, cases, _gamma_problem, diagnoses)

"""The build-it checks of lesson 08: a small γ × learning-rate phase map read cell by cell, and the weight-decay threshold.

The classifier labels every run of a [G, R, T] table of loss curves as the lesson's map reads it (diverged,
dead, rest or no rest on H_0); its cases are curves drawn by hand whose labels the text decides. The builder
trains a grid as one ensemble and labels it; the check trains grids of its own, whose every label holds under a
1e-6 jitter of the init, and asks for the lesson's phenomenon, then for the reference's labels. The threshold
is read off weight-decay sweeps drawn by hand (unsorted, several seeds per decay, none that stays, ...).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import torch
from torch import Tensor

from ctxlab.checks.core import Case, Diagnosis, as_float, run_check
from ctxlab.models import make_model
from ctxlab.rungs import TOL, measure_rungs
from ctxlab.synthetic import spike
from ctxlab.tasks import Task, hierarchy_task
from ctxlab.theory import plateau_levels
from ctxlab.train import TrainingDiverged, train

MIN_REST = 50  # steps on H_0 that make a rest (lesson 08: gradient descent rests at least 50 steps at γ = 1)
SIZE = {"d": 16, "hidden": 32}  # the lesson's Emb-MLP
RECORD_EVERY = 5
LABELS = ("diverged", "dead", "rest", "no rest")


# --- exercise 3a: label each run of a table of curves ---------------------------------------------------


def run_label(steps: Tensor, loss: Tensor, levels: Sequence[float], min_rest: int = MIN_REST) -> str:
    """diverged (a NaN or infinite loss), dead (ends within TOL of H_0, was farther), rest (dwell >= min_rest), no rest."""
    loss = torch.as_tensor(loss, dtype=torch.float64)
    if not bool(torch.isfinite(loss).all()):
        return "diverged"
    away = (loss - float(levels[0])).abs() > TOL
    if bool(away.any()) and not bool(away[-1]):
        return "dead"
    return "rest" if measure_rungs(steps, loss, levels).rungs[0].dwell >= min_rest else "no rest"


def classify_cells_reference(steps: Tensor, losses: Tensor, levels: Sequence[float], min_rest: int = MIN_REST) -> list[list[str]]:
    """losses [G, R, T] -> a [G][R] table of labels (:func:`run_label`)."""
    return [[run_label(steps, curve, levels, min_rest) for curve in row] for row in torch.as_tensor(losses)]


def _polyline(steps: Tensor, knots: Sequence[tuple[float, float]], noise: float = 1e-5, seed: int = 0) -> Tensor:
    """A curve through (step, loss) knots, linear in between, plus Gaussian jitter of size ``noise``."""
    t = steps.to(torch.float64)
    xs, ys = (torch.tensor(v, dtype=torch.float64) for v in zip(*knots))
    i = torch.searchsorted(xs, t, right=True).clamp(1, len(xs) - 1)
    curve = ys[i - 1] + (ys[i] - ys[i - 1]) * ((t - xs[i - 1]) / (xs[i] - xs[i - 1])).clamp(0, 1)
    return curve + noise * torch.randn(t.shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def _curves(steps: Tensor, h: Sequence[float]) -> dict[str, Tensor]:
    """Named curves against the ladder ``h``: each a run whose label the text decides."""
    end = float(steps[-1])
    rest = lambda n, seed=0: _polyline(steps, [(0, h[0]), (n, h[0]), (n + 60, h[1]), (end, h[1] - 0.003)], seed=seed)  # noqa: E731
    standard = _polyline(steps, [(0, h[0] + 0.012), (30, h[1]), (end, h[2] + 0.01)], seed=4)
    return {
        "standard": standard, "rest 160": rest(160, 5), "rest 100": rest(100, 6), "rest 60": rest(60, 7), "rest 55": rest(55, 8),
        "never leaves": _polyline(steps, [(0, h[0]), (end, h[0])], seed=1),
        "nan": torch.where(steps > 200, torch.nan, rest(60, 2)), "inf": torch.where(steps == steps[-1], math.inf, standard),
        "slow descent": _polyline(steps, [(0, h[0] + 0.05), (200, h[1]), (end, h[1] - 0.003)], seed=14),
        "slide": _polyline(steps, [(0, h[0] + 0.009), (95, h[0] - 0.01), (140, h[1]), (end, h[1])], seed=9),
        "back from below": _polyline(steps, [(0, h[0]), (120, h[0]), (200, h[1]), (320, h[0]), (end, h[0])], seed=10),
        "back from above": _polyline(steps, [(0, h[0]), (30, h[0]), (60, h[0] + 0.4), (100, h[0]), (end, h[0])], seed=11),
        "spiked rest": spike(steps, rest(200, 12), at=100, height=0.05),
        "near miss": _polyline(steps, [(0, h[0]), (80, h[0]), (140, h[0] - 0.03), (end, h[0] - 0.02)], seed=13),
    }


@cache
def _ladders() -> dict[str, list[float]]:
    return {"ln 3": plateau_levels(hierarchy_task(block=6).population),
            "ln 2": plateau_levels(hierarchy_task(block=4, n_values=2).population)}


@cache
def _tables() -> list[tuple[str, Tensor, str, list[list[str]], int, str, bool]]:
    """(label, steps, ladder, table of curve names, min_rest, dtype, hidden) of every classifier case."""
    even, uneven = torch.arange(0, 401, 5), torch.cat([torch.arange(0, 50), torch.arange(50, 401, 10)])
    return [
        ("the lesson's ladder: rests, no rests, a dead run, a diverged run (2 x 4)", even, "ln 3", [["standard", "rest 160", "nan", "slow descent"], ["never leaves", "back from below", "slide", "rest 100"]], 50, "float64", False),
        ("a rest of exactly min_rest steps, one 5 steps short, a long one", even, "ln 3", [["rest 60", "rest 55", "rest 160"]], 60, "float64", True),
        ("a spike inside a rest; a shorter rest and a longer one, uninterrupted", even, "ln 3", [["spiked rest"], ["rest 100"], ["rest 160"]], 120, "float64", True),
        ("diverged: NaN after a rest, infinite at the last step", even, "ln 3", [["nan", "inf"]], 50, "float64", True),
        ("dead: back on H0 from below and from above; a run that never leaves; a dip that never comes back", even, "ln 3", [["back from below", "back from above"], ["never leaves", "near miss"]], 50, "float64", True),
        ("uneven recording steps (every step to 50, then every 10)", uneven, "ln 3", [["rest 100", "slide", "standard"]], 80, "float64", True),
        ("another ladder (H0 = ln 2), float32 losses (3 x 2)", even, "ln 2", [["rest 160", "standard"], ["back from above", "never leaves"], ["inf", "slide"]], 50, "float32", True),
    ]  # fmt: skip


def _classify_cases() -> list[Case]:
    cases = []
    for label, steps, ladder, names, min_rest, dtype, hidden in _tables():
        curves, h = _curves(steps, _ladders()[ladder]), _ladders()[ladder]
        args = (steps, torch.stack([torch.stack([curves[n] for n in row]) for row in names]).to(getattr(torch, dtype)), h, min_rest)
        cases.append(Case(label, args, Table(classify_cells_reference(*args)), hidden))
    return cases


# --- comparing tables of labels ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Table:
    """The expected labels [G][R], and the names of the rows and columns for messages (default: their numbers)."""

    labels: list[list[str]]
    rows: tuple[str, ...] = ()
    cols: tuple[str, ...] = ()


def as_labels(value: Any) -> list[list[str]] | None:
    """What a learner returned as a table of strings (lists, tuples, numpy arrays); None if it is not one."""
    try:
        rows = value.tolist() if hasattr(value, "tolist") else list(value)
        return None if any(isinstance(row, str) for row in rows) else [[str(v) for v in row] for row in rows]
    except Exception:
        return None


def _table_problem(got: Any, expected: Table) -> str | None:
    table = as_labels(got)
    G, R = len(expected.labels), len(expected.labels[0])
    if table is None or len(table) != G or any(len(row) != R for row in table):
        return f"expected a table of {G} rows (one per γ) of {R} labels (one per learning rate), got {got!r}"
    if bad := sorted({v for row in table for v in row} - set(LABELS)):
        return f"labels are one of {', '.join(map(repr, LABELS))}; got {', '.join(map(repr, bad))}"
    for i, j in ((i, j) for i in range(G) for j in range(R) if table[i][j] != expected.labels[i][j]):
        at = f"{expected.rows[i]}, {expected.cols[j]}" if expected.rows else f"row {i}, column {j}"
        return f"at {at} expected {expected.labels[i][j]!r}, got {table[i][j]!r} (your table: {table})"
    return None


def _is_table(got: Any, wrong: list[list[str]], expected: Table) -> bool:
    return wrong != expected.labels and as_labels(got) == wrong


def _swapped(got: Any, expected: Table, case: Case) -> bool:  # the table transposed: [R][G]
    return _is_table(got, [list(col) for col in zip(*expected.labels)], expected)


class Outcome(str):
    """What a learner's call did instead of returning an answer (the comparisons name it)."""


STOPPED, NO_ANSWER = Outcome("stopped training at the first diverged run (TrainingDiverged)"), Outcome("returned None")


def _guarded(fn: Callable) -> Callable:
    """``fn`` with a stop at a diverged run and a ``None`` answer turned into an :class:`Outcome`."""
    @functools.wraps(fn)
    def call(*args):
        try:
            got = fn(*args)
        except TrainingDiverged:
            return STOPPED
        return NO_ANSWER if got is None else got

    return call if callable(fn) else fn


def _outcome_problem(got: Any) -> str | None:
    forgot = "; did you forget `return`?" if got is NO_ANSWER else ""
    return f"your function {got}{forgot}" if isinstance(got, Outcome) else None


def variant_label(steps: Tensor, loss: Tensor, levels: Sequence[float], min_rest: int, *, diverged: str = "finite",
                  dead: str = "left", rest: str = "dwell", strict: bool = False) -> str:
    """:func:`run_label` with one ingredient changed, as a typical mistake changes it: divergence read from NaN
    only; dead never, whenever it ends on H_0, or only after a stair; the rest counted without flatness (near),
    in recorded intervals (points), as the longest flat stretch, or as the wait; more than min_rest (strict)."""
    loss, h0 = torch.as_tensor(loss, dtype=torch.float64), float(levels[0])
    if bool((loss.isnan() if diverged == "nan" else ~torch.isfinite(loss)).any()):
        return "diverged"
    away, below = (loss - h0).abs() > TOL, loss < (h0 + float(levels[1])) / 2
    if not bool(away[-1]) and {"left": bool(away.any()), "ends": True, "below": bool(below.any()), "none": False}[dead]:
        return "dead"
    width = steps.diff().to(torch.float64)
    on = ~away[1:] & ~away[:-1] & ((loss.diff().abs() / width <= TOL / 100) | (rest == "near"))
    total, first = torch.cumsum(width * on, 0), below.nonzero()  # longest stretch: the running sum less its value at the last break
    length = int({"dwell": width[on].sum(), "near": width[on].sum(), "points": on.sum(),
                  "longest": (total - torch.cummax(torch.where(on, 0.0, total), 0).values).max(),
                  "wait": steps[int(first[0])] if len(first) else steps[-1]}[rest])
    return "rest" if (length > min_rest if strict else length >= min_rest) else "no rest"


def _labels_as(**change) -> Callable[[Any, Table, Case], bool]:
    """A diagnosis predicate: the learner's table is what ``change`` gives (and that is not the answer)."""

    def matches(got: Any, expected: Table, case: Case) -> bool:
        steps, losses, levels, min_rest = case.args
        wrong = [[variant_label(steps, c, levels, min_rest, **change) for c in row] for row in losses]
        return _is_table(got, wrong, expected)

    return matches


def check_08_classify_cells(fn: Callable[[Tensor, Tensor, Sequence[float], int], Any]) -> None:
    """fn(steps [T], losses [G, R, T], levels, min_rest) -> [G][R] labels: diverged, dead, rest or no rest."""
    diagnoses = [
        Diagnosis(_labels_as(dead="none"), "a run that left H0 and ended back on it is 'dead', not a rest (the old figure's bug): test for a dead run before reading the rest"),
        Diagnosis(_labels_as(dead="ends"), "a run that never left H0 (every loss within 0.01 of it) rests there the whole run: 'dead' needs a loss more than 0.01 from H0 before the end"),
        Diagnosis(_labels_as(dead="below"), "a run that jumped ABOVE H0 and came back is dead too: leaving means more than 0.01 from H0 on either side, not only down the stair"),
        Diagnosis(_labels_as(rest="near"), "the rest is lesson 03's dwell: only FLAT intervals within 0.01 of H0 count, not every step near it (a slide through the band is no rest)"),
        Diagnosis(_labels_as(rest="points"), "count training steps (the widths of the recorded intervals), not recorded points: the recording steps are not always one apart"),
        Diagnosis(_labels_as(rest="longest"), "the dwell adds up every flat interval within 0.01 of H0: a spike that interrupts a rest does not end it, so do not keep only the longest stretch"),
        Diagnosis(_labels_as(rest="wait"), "that is the wait (the step halfway down the first stair), not the rest on H0: a loss can slide for a long time without resting"),
        Diagnosis(_labels_as(strict=True), "a rest of exactly min_rest steps counts: the dwell must be AT LEAST min_rest"),
        Diagnosis(_labels_as(diverged="nan"), "an infinite loss is a divergence too: a run diverged when any loss is NaN OR infinite"),
        Diagnosis(_swapped, "your table is transposed: rows are γ (the first axis of losses), columns are learning rates"),
    ]  # fmt: skip
    compare = lambda got, expected: _outcome_problem(got) or _table_problem(got, expected)  # noqa: E731
    run_check("check_08_classify_cells", _guarded(fn), _classify_cases(), compare, diagnoses)


# --- exercise 3b: train a grid as one ensemble and label it ---------------------------------------------------


def phase_map_labels_reference(task: Task, gammas: Sequence[float], lrs: Sequence[float], steps: int,
                               min_rest: int = MIN_REST, seed: int = 0) -> list[list[str]]:
    """Train the lesson's Emb-MLP on every (γ, lr) cell as ONE ensemble (γ-major) and label each cell."""
    grid_g = [float(g) for g in gammas for _ in lrs]
    grid_r = [float(r) for _ in gammas for r in lrs]
    model = make_model("mlp", task, gamma=grid_g, seed=seed, **SIZE)
    run = train(model, task.population, steps, lr=grid_r, record_every=RECORD_EVERY, progress=False, on_divergence="record")
    return classify_cells_reference(run.steps, run.loss.reshape(len(gammas), len(lrs), -1), plateau_levels(task.population), min_rest)


GRIDS = (  # (label, block, n_values, gammas, lrs, steps, min_rest, seed, hidden): every label holds under a 1e-6 init jitter
    ("the lesson's task, 3 γ x 4 lr, 300 steps", 6, 3, (0.5, 1.0, 1.5), (0.5, 1.0, 2.0, 16.0), 300, 50, 0, False),
    ("H0 = ln 2 (block 4), 4 γ x 3 lr, seed 2, min_rest 40", 4, 2, (0.5, 1.0, 1.25, 1.5), (0.5, 2.0, 16.0), 300, 40, 2, True),
)  # fmt: skip


@cache
def grid_case(spec: tuple) -> Case:
    """The case of one grid of :data:`GRIDS`, its reference trained once."""
    label, block, n_values, gammas, lrs, steps, min_rest, seed, hidden = spec
    args = (hierarchy_task(block=block, n_values=n_values), list(gammas), list(lrs), steps, min_rest, seed)
    names = tuple(f"γ = {g:g}" for g in gammas), tuple(f"lr = {r:g}" for r in lrs)
    return Case(label, args, Table(phase_map_labels_reference(*args), *names), hidden)


def _map_problem(got: Any, expected: Table) -> str | None:
    """Shape first, then the lesson's phenomenon on the learner's own map, then every label."""
    problem, table = _outcome_problem(got) or _table_problem(got, expected), as_labels(got)
    if problem is None or not problem.startswith("at "):  # not a table of labels of the right shape, or all right
        return problem
    stable = [j for j in range(len(table[0])) if "diverged" not in (row[j] for row in table)]
    phenomenon = [
        (any(table[0][j] == "rest" for j in stable), f"at {expected.rows[0]} (standard init) your map rests on H0 at a stable learning rate: the lesson's map has no first plateau in that row"),
        (table[-1][0] != "rest", f"at {expected.rows[-1]}, {expected.cols[0]} (small init, small steps) the run rests on H0 in the lesson's map; yours says {table[-1][0]!r}"),
        (any(row[-1] != "diverged" for row in table), f"at {expected.cols[-1]} every γ diverges, far beyond gradient descent's stability limit"),
    ]  # fmt: skip
    return next((f"{message} (your table: {table})" for wrong, message in phenomenon if wrong), problem)


def _paired_the_other_way(got: Any, expected: Table, case: Case) -> bool:
    """Models laid out lr-major (γ varying fastest) but read γ-major."""
    G, R = len(expected.labels), len(expected.labels[0])
    wrong = [[expected.labels[(i * R + j) % G][(i * R + j) // G] for j in range(R)] for i in range(G)]
    return _is_table(got, wrong, expected)


def _uniform(axis: int) -> Callable[[Any, Table, Case], bool]:
    """The learner's rows (axis 0) or columns (axis 1) are all alike, the reference's are not."""
    def alike(table: list[list[str]]) -> bool:
        lines = table if axis == 0 else [list(col) for col in zip(*table)]
        return all(line == lines[0] for line in lines)

    return lambda g, e, c: (t := as_labels(g)) is not None and len(t) == len(e.labels) and alike(t) and not alike(e.labels)


def check_08_phase_map_labels(fn: Callable[[Task, list, list, int, int, int], Any]) -> None:
    """fn(task, gammas, lrs, steps, min_rest, seed) -> [G][R] labels of the grid trained as one ensemble."""
    diagnoses = [
        Diagnosis(lambda g, e, c: g is STOPPED, "a phase map expects some runs to blow up: have the training loop record a diverged run (its later losses NaN) and carry on, instead of stopping"),
        Diagnosis(_swapped, "your table is transposed: rows are γ, columns are learning rates"),
        Diagnosis(_paired_the_other_way, "your cells are paired the wrong way: the ensemble's models go γ-major (every learning rate of the first γ, then of the next), and the loss table must be read in that order"),
        Diagnosis(_uniform(0), "every γ gives the same labels: give each model of the ensemble its own γ (make_model takes one per model)"),
        Diagnosis(_uniform(1), "every learning rate gives the same labels: give each model its own learning rate (train takes one per model)"),
    ]  # fmt: skip
    run_check("check_08_phase_map_labels", _guarded(fn), [grid_case(spec) for spec in GRIDS], _map_problem, diagnoses)


# --- exercise 3c: the weight-decay threshold ------------------------------------------------------------------


def _stays(losses: Tensor, levels: Sequence[float], how: str = "halfway") -> list[bool]:
    """Per run: it never left H_0: never below the midpoint of H_0 and H_1 (or a mistake's reading of leaving)."""
    losses = torch.as_tensor(losses, dtype=torch.float64)
    mid = (float(levels[0]) + float(levels[1])) / 2
    return {"halfway": ~(losses < mid).any(-1), "reach": ~(losses < float(levels[0]) - TOL).any(-1),
            "final": ~(losses[:, -1] < mid)}[how].tolist()


def _threshold_variant(decays: Sequence[float], losses: Tensor, levels: Sequence[float], *, how: str = "halfway",
                       every: bool = True, pick: str = "smallest") -> float:
    """The threshold a reading gives: ``every`` run at a decay must stay (else any one); ``pick`` the smallest
    staying decay, the largest, the first in list order, the first above the largest leaving one, or that one."""
    runs = list(zip([float(v) for v in decays], _stays(losses, levels, how)))
    verdict = {lam: (all if every else any)(s for v, s in runs if v == lam) for lam, _ in runs}
    staying = [lam for lam, s in verdict.items() if s]
    leaving = [lam for lam, s in verdict.items() if not s]
    chosen = {"smallest": min(staying, default=math.inf), "largest": max(staying, default=math.inf),
              "listed": next((lam for lam, s in runs if verdict[lam]), math.inf),
              "above leaving": min((lam for lam in staying if lam > max(leaving, default=-math.inf)), default=math.inf),
              "last leaving": max(leaving, default=math.inf)}
    return chosen[pick]


def decay_threshold_reference(decays: Sequence[float], losses: Tensor, levels: Sequence[float]) -> float:
    """The smallest decay at which no run gets halfway down the first stair (math.inf: none in the sweep)."""
    return _threshold_variant(decays, losses, levels)


def _sweep(steps: Tensor, h: Sequence[float], runs: Sequence[tuple[float, Any]]) -> tuple[list[float], Tensor]:
    """(decays, losses [D, T]) of runs (decay, onset): a stair centred at ``onset``; None stays on H_0;
    "drift" sinks 0.03 below H_0 (no stair); "back" goes down the stair and climbs back to H_0."""
    end, curves = float(steps[-1]), []
    for k, (_, kind) in enumerate(runs):
        knots = {None: [(0, h[0]), (end, h[0] + 0.001)], "drift": [(0, h[0]), (200, h[0]), (500, h[0] - 0.03), (end, h[0] - 0.03)],
                 "back": [(0, h[0]), (100, h[0]), (160, h[1]), (400, h[1]), (600, h[0]), (end, h[0])]}.get(kind)
        curves.append(_polyline(steps, knots or [(0, h[0]), (kind - 40, h[0]), (kind + 40, h[1]), (end, h[2])], seed=20 + k))
    return [lam for lam, _ in runs], torch.stack(curves)


def _threshold_cases() -> list[Case]:
    scan = (0.003, 0.004, 0.005, 0.006, 0.0065, 0.007, 0.0075, 0.008, 0.009, 0.01)
    onsets = (165, 190, 230, 290, 340, 420, 610, None, None, None)
    shuffled = [scan[i] for i in (6, 2, 8, 0, 9, 4, 1, 7, 3, 5)]
    specs = [
        ("the lesson's scan, sorted", "ln 3", list(zip(scan, onsets)), False),
        ("the same scan in another order, with decay 0", "ln 3", [(0.0, 60)] + [(lam, dict(zip(scan, onsets))[lam]) for lam in shuffled], True),
        ("no decay in the sweep keeps the run on H0", "ln 3", [(0.001, 120), (0.004, 200), (0.002, 150)], True),
        ("two seeds per decay: at 0.007 one leaves, one stays", "ln 3", [(0.006, 300), (0.006, 350), (0.007, None), (0.007, 700), (0.008, None), (0.008, None)], True),
        ("a drift 0.03 below H0 is no stair", "ln 3", [(0.004, 250), (0.005, "drift"), (0.006, None), (0.008, None)], True),
        ("a run that goes down the stair and climbs back to H0", "ln 3", [(0.002, 150), (0.003, "back"), (0.005, 500), (0.006, None)], True),
        ("a larger decay leaves again", "ln 3", [(0.004, 200), (0.005, None), (0.006, 650), (0.007, None), (0.008, None)], True),
        ("every run stays, decays unsorted, H0 = ln 2, float32", "ln 2", [(0.02, None), (0.05, None), (0.01, None)], True),
    ]  # fmt: skip
    steps, cases = torch.arange(0, 801, 5), []
    for label, ladder, runs, hidden in specs:
        decays, losses = _sweep(steps, _ladders()[ladder], runs)
        losses = losses.float() if ladder == "ln 2" else losses
        args = (decays, losses, _ladders()[ladder])
        cases.append(Case(label, args, decay_threshold_reference(*args), hidden))
    return cases


def _threshold_problem(got: Any, expected: float) -> str | None:
    if problem := _outcome_problem(got):
        return problem
    if (value := as_float(got)) is None:
        return f"expected one number (a decay of the sweep, or math.inf), got {got!r}"
    if value != expected and not abs(value - expected) <= 1e-12 * max(1.0, abs(expected)):
        return f"expected the threshold {expected:g}, got {value:g}"
    return None


def _gives(**change) -> Callable[[Any, float, Case], bool]:
    def matches(got: Any, expected: float, case: Case) -> bool:
        wrong = _threshold_variant(*case.args, **change)
        return wrong != expected and _threshold_problem(got, wrong) is None

    return matches


def check_08_decay_threshold(fn: Callable[[Sequence[float], Tensor, Sequence[float]], float]) -> None:
    """fn(decays [D], losses [D, T], levels) -> the smallest decay at which no run leaves H_0 (math.inf: none)."""
    none = lambda g, e, c: math.isinf(e) and not (isinstance(as_float(g), float) and math.isinf(as_float(g)))  # noqa: E731
    diagnoses = [
        Diagnosis(none, "when no decay in the sweep keeps the run on H0, return math.inf (the documented 'none' value), not None, NaN, 0 or a decay"),
        Diagnosis(_gives(pick="largest"), "that is the LARGEST decay at which the run stays on H0; the threshold is the smallest"),
        Diagnosis(_gives(pick="listed"), "the decays are not sorted: take the smallest staying decay by value, not the first one in the list"),
        Diagnosis(_gives(pick="above leaving"), "the threshold is the smallest decay at which the run stays, even when a larger decay leaves again"),
        Diagnosis(_gives(every=False), "several runs share a decay here: a decay counts only when EVERY run at it stays on H0"),
        Diagnosis(_gives(pick="last leaving"), "that is the largest decay at which the run still LEAVES H0; the threshold is the smallest at which it stays"),
        Diagnosis(_gives(how="reach"), "leaving H0 means getting halfway down the first stair (below the midpoint of H0 and H1), not merely 0.01 below H0"),
        Diagnosis(_gives(how="final"), "a run that went halfway down and climbed back did leave H0: look at every step, not only the last"),
        Diagnosis(lambda g, e, c: isinstance(g, int) and not math.isinf(e) and c.args[0][g] == e, "return the decay itself, not its position in the list"),
    ]  # fmt: skip
    run_check("check_08_decay_threshold", _guarded(fn), _threshold_cases(), _threshold_problem, diagnoses)

"""The build-it checks of lesson 13: compare the two inits at matched loss, not after the same number of steps.

The learner writes two functions. (a) For every model of an ensemble, the first recorded step at which its
loss is at or below a target, on that model's own step grid, NaN when it never gets there. It is compared
with the reference on generated curves: grids that differ per model or start late, spikes back above the
target, curves that never get there or diverge to NaN, a target equal to a recorded loss, K = 1, float32
and float64. (b) The lesson's comparison at that matched loss: the small-init minus the standard-init mean
k-NN overlap with the bigram signature, on E and on E − E₀, each model read at its own matched step. It is
compared with the reference on short GPT runs of the check's own (models reordered, a model that never gets
there, a target only one init reaches), where the lesson's reading must hold as well.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from functools import cache

import torch
from torch import Tensor

from ctxlab.align import at_matched_loss, overlap_trajectory
from ctxlab.checks.core import Case, Diagnosis, as_tensor, run_check
from ctxlab.corpus import load_text, tokenizer, train_val_split
from ctxlab.lm import TinyGPT, train_lm
from ctxlab.models import ensemble_grid
from ctxlab.signatures import bigram_signature
from ctxlab.train import Trajectory

GAP_ATOL = 0.01  # on each gap of (b): one neighbour more or less moves a gap of the check's runs by 1/300
E_GAP_MIN = 0.1  # at matched loss the small-init E must beat the standard-init E by more than this (lesson 13)
# The lesson's reading is asked at targets 3.0 and 2.92 of the check's runs. Measured there: gap on E 0.31 and
# 0.31, on E - E0 0.09 and 0.10, on E at the last record (the old matched-step reading) 0.18. Over three other
# seed pairs at 160 steps: E 0.14-0.23, E - E0 at least 0.07 below it, the last record 0.05-0.13 (at 200 steps,
# targets 3.0 and 2.9, four pairs: E 0.16-0.33, E - E0 at least 0.07 below it).

# --- (a) the first recorded step at or below a target ---------------------------------------------


def first_step_at_or_below(steps: Tensor, loss: Tensor, target: float) -> Tensor:
    """Reference: per model, the first of its recorded steps [K, T] whose loss [K, T] is <= target: [K]
    float64, NaN where the model never gets there (a NaN loss never counts)."""
    return at_matched_loss(loss, torch.as_tensor(steps).to(torch.float64), [target])[:, 0]


def steps_by_rule(steps: Tensor, loss: Tensor, target: float, rule: str = "first") -> Tensor:
    """The matched steps [K] under one rule a learner might write instead ("first" is the right one)."""
    steps, loss = torch.as_tensor(steps).to(torch.float64), torch.as_tensor(loss)
    hit = ~(loss > target) if rule == "nan counts" else (loss < target if rule == "strict" else loss <= target)
    reached, T = hit.any(1), hit.shape[1]
    first = hit.to(torch.int8).argmax(1)
    index = T - 1 - hit.flip(1).to(torch.int8).argmax(1) if rule == "last" else first
    grid = steps[:1].expand_as(steps) if rule == "shared grid" else steps
    found = index.to(torch.float64) if rule == "index" else grid.gather(1, index[:, None])[:, 0]
    if rule == "common":
        found = found.max().expand_as(found) if bool(reached.all()) else torch.full_like(found, math.nan)
    if rule in ("never first", "never last"):
        never = steps[:, 0 if rule == "never first" else -1]
    else:
        never = torch.full_like(found, {"never 0": 0.0, "never -1": -1.0, "never inf": math.inf}.get(rule, math.nan))
    return torch.where(reached, found, never)


def _falling(T: int, gen: torch.Generator, rate: float, end: float = 2.5, start: float = 4.2,
             noise: float = 0.03) -> Tensor:
    """A loss curve [T] falling from ``start`` towards ``end`` over its records, with noise."""
    record = torch.linspace(0, 1, T, dtype=torch.float64)
    return end + (start - end) * torch.exp(-rate * record) + noise * torch.randn(T, generator=gen, dtype=torch.float64)


def _grid(kind: str, T: int, gen: torch.Generator) -> Tensor:
    """One model's recorded steps [T], increasing."""
    if kind == "log":
        return torch.cat([torch.zeros(1), torch.cumsum(torch.floor(1.3 ** torch.arange(T - 1.0)) + 1, 0)]).double()
    if kind == "random":
        return torch.cumsum(torch.randint(1, 20, (T,), generator=gen), 0).double() - 1
    every, first = {"10": (10, 0), "25": (25, 0), "from 100": (5, 100), "from 40": (7, 40)}[kind]
    return (first + every * torch.arange(T)).double()


def _first_at_or_below(curve: Tensor, target: float) -> int:
    return int((curve <= target).to(torch.int8).argmax())


def _step_inputs() -> list[tuple[str, tuple, bool]]:
    """(label, (steps [K, T], loss [K, T], target), hidden) for every case."""
    g = torch.Generator().manual_seed(1300)
    T = 16
    visible = (torch.stack([_grid(k, T, g) for k in ("10", "25", "log")]),
               torch.stack([_falling(T, g, rate) for rate in (3.0, 5.0, 8.0)]), 3.0)
    T = 20
    spiky = torch.stack([_falling(T, g, rate) for rate in (3.0, 4.0, 6.0, 9.0)])
    for k in range(4):
        i = _first_at_or_below(spiky[k], 3.0)
        spiky[k, i + 1:i + 4:2] += 0.6  # back above the target twice after the first visit
    spiky[0, 2] = 2.9  # a dip below the target long before the curve stays there
    never = torch.stack([_falling(T, g, 5.0), _falling(T, g, 5.0, end=3.3), _falling(T, g, 7.0)])
    tie = torch.stack([_falling(T, g, rate) for rate in (4.0, 5.0, 7.0)])
    tie_target = float(tie[1, _first_at_or_below(tie[1], 3.0)])
    single = _falling(T, g, 6.0).float()[None]
    single_target = float(single[0, _first_at_or_below(single[0], 3.0)])
    late = torch.stack([_falling(T, g, 5.0, start=2.9), _falling(T, g, 6.0), _falling(T, g, 3.0)]).float()
    diverged = torch.stack([_falling(T, g, 6.0), _falling(T, g, 4.0), _falling(T, g, 0.5)])
    diverged[2, 7:] = math.nan  # diverged at its 8th record, before it got to the target
    hair = torch.stack([_falling(T, g, rate) for rate in (4.0, 5.0)])
    for k in range(2):  # a record a hair above the target (by 5e-4) comes before the first one at or below it
        i = _first_at_or_below(hair[k], 3.0)
        hair[k, i - 1] = 3.0005
    K, T = 8, 30
    many = torch.stack([_falling(T, g, float(r), end=float(e), noise=0.05) for r, e in
                        zip(torch.empty(K).uniform_(2, 10, generator=g), (2.4, 2.5, 2.6, 3.05, 2.4, 3.1, 2.5, 2.6))])
    return [
        ("three models, each on its own step grid", visible, False),
        ("curves that spike back above the target after their first visit", (
            torch.stack([_grid(k, 20, g) for k in ("10", "log", "25", "from 40")]), spiky, 3.0), True),
        ("a model that never gets to the target", (torch.stack([_grid(k, 20, g) for k in ("25", "10", "log")]), never, 3.0), True),
        ("a target equal to a recorded loss", (torch.stack([_grid(k, 20, g) for k in ("log", "25", "10")]), tie, tie_target), True),
        ("one model (K = 1), float32, a target equal to a recorded loss", (_grid("from 40", 20, g)[None], single, single_target), True),
        ("float32, grids that start late (a resumed run), a model at or below from its first record", (
            torch.stack([_grid(k, 20, g) for k in ("from 100", "from 40", "from 100")]), late, 3.0), True),
        ("a loss 0.0005 above the target one record before it gets there", (
            torch.stack([_grid(k, 20, g) for k in ("10", "25")]), hair, 3.0), True),
        ("a diverged model (NaN loss from its divergence on)", (torch.stack([_grid(k, 20, g) for k in ("10", "log", "25")]), diverged, 3.0), True),
        ("eight models on random grids, two that never get there", (
            torch.stack([_grid("random", T, g) for _ in range(K)]), many, 2.8), True),
    ]  # fmt: skip


def _same_or_both_nan(a: Tensor, b: Tensor, atol: float) -> bool:
    return a.shape == b.shape and bool(((a - b).abs() <= atol).logical_or(a.isnan() & b.isnan()).all())


def _nan_aware(atol: float, what: str) -> Callable:
    """Compare [n] float tensors within ``atol``, NaN exactly where expected."""

    def compare(got, expected: Tensor) -> str | None:
        g = as_tensor(got)
        if g is None or tuple(g.shape) != tuple(expected.shape):
            return f"expected a tensor of shape {tuple(expected.shape)}, got {getattr(g, 'shape', type(got).__name__)}"
        g = g.to(torch.float64)
        if _same_or_both_nan(g, expected, atol):
            return None
        i = int(((g - expected).abs() > atol).logical_or(g.isnan() != expected.isnan()).nonzero()[0])
        return f"{what} {i}: expected {float(expected[i]):g}, got {float(g[i]):g} (tolerance {atol:g}; NaN: never)"

    return compare


def _matches(rule: Callable) -> Callable:
    def matches(got, expected, case) -> bool:
        g, alternative = as_tensor(got), rule(*case.args)
        return g is not None and _same_or_both_nan(g.to(torch.float64), alternative, 1e-9) and \
            not _same_or_both_nan(alternative, expected, 1e-9)

    return matches


def check_13_first_step_at_or_below(fn: Callable[[Tensor, Tensor, float], Tensor]) -> None:
    """fn(steps [K, T], loss [K, T], target) -> [K]: each model's first recorded step with loss <= target, NaN if none."""
    cases = [Case(label, args, first_step_at_or_below(*args), hidden) for label, args, hidden in _step_inputs()]

    def by(rule: str) -> Callable:
        return _matches(lambda *args: steps_by_rule(*args, rule=rule))

    never = "a model that never gets to the target is NaN (the exercise's 'never'), not 0, -1, inf, its first or its last step"
    diagnoses = [
        Diagnosis(by("index"), "you returned the crossing index (a position in the list of records), not the step: "
                               "look that position up in the model's own row of steps"),
        Diagnosis(by("shared grid"), "each model has its own step grid: read the step from that model's own row of steps, not from the first row"),
        Diagnosis(by("last"), "that is the last recorded step at or below the target; the match is the first one (a curve "
                              "that dips below and spikes back up got there at its first visit)"),
        Diagnosis(by("strict"), "a loss equal to the target counts: at or below (<=), not strictly below (<)"),
        Diagnosis(_matches(lambda s, l, t: first_step_at_or_below(s, l, t + 1e-3)),
                  "a loss a hair above the target (0.0005 here) has not got there yet: compare loss <= target exactly, "
                  "with no tolerance"),
        Diagnosis(by("common"), "every model got the same step: matching at equal steps is the comparison the lesson "
                                "replaced; each model gets its own first step at or below the target"),
        Diagnosis(by("nan counts"), "a NaN loss (a diverged model) is not at or below the target: test 'at or below', not 'not above'"),
        *[Diagnosis(by(rule), never) for rule in ("never first", "never 0", "never -1", "never inf", "never last")],
    ]  # fmt: skip
    run_check("check_13_first_step_at_or_below", fn, cases, _nan_aware(0.0, "model"), diagnoses)


# --- (b) the lesson's comparison at matched loss, on the check's own runs ---------------------------


class ShownRun(Trajectory):
    """A Trajectory that names its sizes, not its tensors, when a failing case prints its inputs."""

    def __repr__(self) -> str:
        K, T = self.loss.shape
        return f"Trajectory(K={K} models, T={T} records, steps {int(self.steps[0])} to {int(self.steps[-1])})"


@dataclass(frozen=True)
class Runs:
    """The check's GPT runs and what the lesson's measure needs: the centred bigram signature S [V, 2V], the
    30 most frequent tokens (neighbours are searched among them) and which models are small-init [K]."""

    run: ShownRun
    S: Tensor
    tokens: Tensor
    small: Tensor


@cache
def check_runs() -> Runs:
    """Two seeds at γ = 1 and at γ = 0.5, one-layer character GPTs on Shakespeare, 160 Adam steps (about 2 s on an idle core)."""
    text = load_text("shakespeare", max_chars=200_000).text
    chars = tokenizer("char", text)
    train_ids, held_out = train_val_split(chars.encode(text))
    gammas, seeds = ensemble_grid([1.0, 0.5], [7, 8])
    gpt = TinyGPT(chars.vocab_size, context=8, d=32, n_layers=1, n_heads=1, gamma=gammas, seed=seeds)
    run = train_lm(gpt, train_ids, 160, eval_tokens=held_out, batch_size=32, lr=3e-3, record_every=10, progress=False, seed=7)
    top = torch.bincount(train_ids, minlength=chars.vocab_size).argsort(descending=True, stable=True)[:30]
    S = bigram_signature(train_ids, chars.vocab_size).matrix.to(torch.float64)
    return Runs(ShownRun(**{f.name: getattr(run, f.name) for f in fields(Trajectory)}), S - S[top].mean(0), top,
                torch.tensor(gammas) == 1.0)


def gaps_by(run, S: Tensor, tokens: Tensor, small: Tensor, target: float, k: int, how: str = "matched") -> Tensor:
    """(gap on E, gap on E - E0) [2]: small-init minus standard-init mean overlap, each model read at its first
    record with loss <= target ("matched", the right one) or under one rule a learner might write instead."""
    hit = run.loss <= target
    reached, first = hit.any(1), hit.to(torch.int8).argmax(1)
    last = torch.full_like(first, hit.shape[1] - 1)
    index = {"last step": last, "never last": torch.where(reached, first, last),
             "common": torch.full_like(first, int(first[reached].max()) if bool(reached.any()) else 0)}.get(how, first)
    if how in ("last step", "never last"):
        reached = torch.ones_like(reached)
    mean = Tensor.mean if how == "plain mean" else torch.nanmean
    gaps = []
    for displacement in (False, True):
        curve = overlap_trajectory(run, S, k, tokens=None if how == "all tokens" else tokens,
                                   relative_to_init=displacement and how != "no displacement")
        at = curve.gather(1, index[:, None])[:, 0].masked_fill(~reached, math.nan)
        gaps.append(mean(at[small]) - mean(at[~small]))
    return torch.stack(gaps) * (-1 if how == "reversed" else 1)


def matched_loss_gap(run, S: Tensor, tokens: Tensor, small: Tensor, target: float, k: int) -> Tensor:
    """Reference: (gap on E, gap on E - E0) at matched loss [2], NaN where no model of an init gets there."""
    gaps = []
    for displacement in (False, True):
        at = at_matched_loss(run.loss, overlap_trajectory(run, S, k, tokens=tokens, relative_to_init=displacement), [target])[:, 0]
        gaps.append(at[small].nanmean() - at[~small].nanmean())
    return torch.stack(gaps)


@dataclass(frozen=True)
class Gaps:
    """The expected gaps [2] of one case and, where the lesson's reading is asked of it too, the gap on E at
    the last record (the old matched-step comparison, which matched loss must not fall below)."""

    values: Tensor
    target: float
    at_last_step: float | None


def _gap_inputs() -> list[tuple[str, tuple, bool, bool]]:
    """(label, (run, S, tokens, small, target, k), hidden, whether the lesson's reading is asked) for every case."""
    runs = check_runs()
    run, S, top, small = runs.run, runs.S, runs.tokens, runs.small
    order = [2, 0, 3, 1]
    shuffled = ShownRun(**{f.name: getattr(run.select(order), f.name) for f in fields(Trajectory)})
    raised = run.loss.clone()
    raised[0] += 0.5  # a small-init model whose loss never gets to 3.0
    own = "the check's runs (2 seeds at γ = 1 and 0.5, 160 steps)"
    return [
        (f"{own}, target 3.0", (run, S, top, small, 3.0, 5), False, True),
        (f"{own}, target 2.92", (run, S, top, small, 2.92, 5), True, True),
        (f"{own}, target 3.25", (run, S, top, small, 3.25, 5), True, False),
        (f"{own}, models in another order, 25 tokens, k = 4, target 3.05", (shuffled, S, top[:25], small[order], 3.05, 4), True, False),
        (f"{own}, target 2.75: only the standard-init models get there", (run, S, top, small, 2.75, 5), True, False),
        (f"{own}, one small-init model's loss raised by 0.5 nats (it never gets to 3.0)",
         (replace(run, loss=raised), S, top, small, 3.0, 5), True, False),
    ]  # fmt: skip


def _gaps_problem(got, expected: Gaps) -> str | None:
    problem = _nan_aware(GAP_ATOL, "gap")(got, expected.values)
    if problem or expected.at_last_step is None:
        return problem
    on_e, on_moved = (float(v) for v in as_tensor(got).to(torch.float64))
    if not (on_e > E_GAP_MIN and abs(on_moved) < on_e and on_e > expected.at_last_step):
        return (f"at target {expected.target}: gap on E {on_e:+.3f}, on E - E0 {on_moved:+.3f}, on E at the last record "
                f"{expected.at_last_step:+.3f}; lesson 13 reads, at matched loss, a gap on E above {E_GAP_MIN}, larger "
                "than at equal steps, and a smaller gap (in size) on E - E0")
    return None


def check_13_matched_loss_gap(fn: Callable) -> None:
    """fn(run, S, tokens, small, target, k) -> [2]: small-init minus standard-init mean overlap on E and on
    E - E0, each model read at its first record with held-out loss <= target, on the check's own runs."""
    cases = [Case(label, args, Gaps(matched_loss_gap(*args), args[4],
                                    float(gaps_by(*args, how="last step")[0]) if reading else None), hidden)
             for label, args, hidden, reading in _gap_inputs()]

    def by(how: str) -> Callable:
        def matches(got, expected: Gaps, case) -> bool:
            g, alternative = as_tensor(got), gaps_by(*case.args, how=how)
            return g is not None and _same_or_both_nan(g.to(torch.float64), alternative, GAP_ATOL) and \
                not _same_or_both_nan(alternative, expected.values, GAP_ATOL)

        return matches

    diagnoses = [
        Diagnosis(by("last step"), "you compared the inits at equal steps (every model at the last record): that is the "
                                   "comparison the lesson replaced; read each model at its own first step at or below the target"),
        Diagnosis(by("common"), "every model was read at one common step (the latest of the matched steps): matching at equal "
                                "steps again; read each model at its own matched step"),
        Diagnosis(by("reversed"), "the gap is the small-init mean minus the standard-init mean, not the other way round"),
        Diagnosis(by("no displacement"), "the second number is the displacement E - E0 (the table minus the run's first "
                                         "recorded table), not E again"),
        Diagnosis(by("plain mean"), "a model that never gets to the target is left out of its init's mean: a plain mean "
                                    "over a NaN is NaN"),
        Diagnosis(by("never last"), "a model that never gets to the target is left out, not read at its last record"),
        Diagnosis(by("all tokens"), "search the neighbours among the given tokens only, in E and in S, as the lesson does"),
    ]  # fmt: skip
    run_check("check_13_matched_loss_gap", fn, cases, _gaps_problem, diagnoses)

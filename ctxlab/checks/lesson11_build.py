"""The build-it checks of lesson 11: a random table of the signature table's rank as a control, and the race.

(a) The control keeps the input's singular values on random orthonormal bases of both sides, one table per seed;
it is checked on generated tables (rank 1, full rank tall and wide, repeated values, V = 1, d = 1, tiny, float32
and float64). (b) The race of the ΔS¹⁺²⁺³ table against a control, frozen in fresh Emb-MLPs, is compared with the
reference on runs of the check's own, where the signature table must also beat its control by a margin.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache, partial
from typing import Any

import torch
from torch import Tensor

from ctxlab.checks.core import Case, Diagnosis, as_tensor, run_check
from ctxlab.rungs import crossing_step
from ctxlab.tasks import Task, hierarchy_task, transfer_task
from ctxlab.train import train
from ctxlab.transplant import (freeze_embedding, frozen_ensemble, random_orthonormal, rank_matched_control,
                               signature_embedding, steps_to_plateaus)

SV_TOL = 1e-5  # singular values agree within this fraction of the largest (float32 arithmetic leaves ~1e-6)
RANK_RTOL = {torch.float32: 1e-4, torch.float64: 1e-10}  # a singular value counts above RTOL x the largest
DIFFER = 1e-3  # relative Frobenius distance above which two tables (or Gram matrices) count as different
MARGIN = 100  # steps by which the signature table must be halfway down the last stair before its control
CONTROL_SEED = 100  # the control of model seed s is drawn with seed CONTROL_SEED + s (lesson 11's random tables)

# --- (a) the control table ---------------------------------------------------------------------------


def rank_of(table: Tensor) -> int:
    """The number of singular values above RANK_RTOL (of the table's dtype) times the largest."""
    sv = torch.linalg.svdvals(table.double())
    return int((sv > RANK_RTOL[table.dtype] * sv[0]).sum()) if sv.numel() and sv[0] > 0 else 0


@dataclass(frozen=True)
class Draws:
    """The learner's control of (table, seed), of the same again, of (table, seed + 1); did torch's global RNG move?"""

    first: Any
    again: Any
    other: Any
    global_state_moved: bool


@dataclass(frozen=True)
class Wanted:
    """What the control of ``table`` must keep: its singular values (float64) and its rank."""

    table: Tensor
    sv: Tensor
    rank: int


def _drawn(fn: Callable[[Tensor, int], Tensor]) -> Callable[[Tensor, int], Draws]:
    def draws(table: Tensor, seed: int) -> Draws:
        state = torch.get_rng_state()
        first, again, other = (fn(table.clone(), s) for s in (seed, seed, seed + 1))
        return Draws(first, again, other, not torch.equal(state, torch.get_rng_state()))

    draws.__name__ = getattr(fn, "__name__", "your function")
    return draws


def spectrum_table(V: int, d: int, sv: Sequence[float], seed: int, dtype=torch.float64) -> Tensor:
    """[V, d] with exactly the singular values ``sv`` (float64 arithmetic, then cast to ``dtype``)."""
    generator = torch.Generator().manual_seed(seed)
    left = random_orthonormal(V, len(sv), generator, torch.float64)
    right = random_orthonormal(d, len(sv), generator, torch.float64)
    return ((left * torch.tensor(sv, dtype=torch.float64)) @ right.T).to(dtype)


def _control_cases() -> list[Case]:
    lesson = signature_embedding(hierarchy_task(), 32, (1, 2, 3), math.sqrt(27))
    specs = [
        ("lesson 11's ΔS¹⁺²⁺³ table (hierarchy task, d 32, norm √27), float32", lesson, 0, False),
        ("rank 1, [20, 8], float64", spectrum_table(20, 8, [3.0], 1), 5, True),
        ("full rank, tall [12, 5], float32", spectrum_table(12, 5, [2.0, 1.5, 1.0, 0.5, 0.25], 2, torch.float32), 7, True),
        ("full rank, wide [5, 12], float64", spectrum_table(5, 12, [4.0, 2.0, 1.0, 0.7, 0.1], 3), 11, True),
        ("repeated singular values (2, 2, 2, 1, 1), [30, 10], float64", spectrum_table(30, 10, [2, 2, 2, 1, 1], 4), 13, True),
        ("V = 1, [1, 7], float32", spectrum_table(1, 7, [1.3], 5, torch.float32), 17, True),
        ("d = 1, [9, 1], float64", spectrum_table(9, 1, [0.8], 6), 19, True),
        ("a tiny table (singular values 3e-6 .. 1e-6), [10, 6], float64", spectrum_table(10, 6, [3e-6, 2e-6, 1e-6], 8), 29, True),
        ("float64, singular values down to 1e-8 of the largest, [16, 8]", spectrum_table(16, 8, [1.0, 0.3, 1e-3, 1e-8], 7), 23, True),
        ("lesson 11's ΔS¹⁺² table (rows of zeros), d 16, float32",
         signature_embedding(hierarchy_task(), 16, (1, 2), math.sqrt(27)), 31, True),
    ]  # fmt: skip
    return [Case(label, (table, seed), Wanted(table, torch.linalg.svdvals(table.double()), rank_of(table)), hidden)
            for label, table, seed, hidden in specs]


def _relative_gap(a: Tensor, b: Tensor) -> float:
    return float((a - b).norm() / b.norm().clamp_min(1e-300))


def _grams(table: Tensor) -> tuple[Tensor, Tensor]:
    """Token-by-token E Eᵀ and column-by-column Eᵀ E, in float64."""
    return table.double() @ table.double().T, table.double().T @ table.double()


def _forced(want: Wanted, side: int) -> bool:
    """Every control has the input's Gram matrix on that side (0: tokens, 1: columns): size 1, or full rank, flat."""
    n = want.table.shape[side]
    top = want.sv[: want.rank]
    return n == 1 or (want.rank == n and bool((top - top[0]).abs().max() <= SV_TOL * top[0]))


def _control_problem(draws: Draws, want: Wanted) -> str | None:
    first, shape = as_tensor(draws.first), tuple(want.table.shape)
    if first is None or tuple(first.shape) != shape:
        got = type(draws.first).__name__ if first is None else tuple(first.shape)
        return f"expected a tensor of shape {shape} (the table's), got {got}"
    if first.dtype != want.table.dtype:
        return f"return the table's dtype: it is {want.table.dtype}, your control is {first.dtype}"
    if not bool(torch.isfinite(first).all()):
        return "the control has non-finite entries"
    if not isinstance(draws.again, Tensor) or not torch.equal(as_tensor(draws.again), first):
        return "two calls with the same seed gave different tables: one seed must give one table"
    if draws.global_state_moved:
        return "your function moved torch's global random state: draw from a torch.Generator of your own, seeded with `seed`"
    sv = torch.linalg.svdvals(first.double())
    off = float((sv - want.sv).abs().max())
    if off > SV_TOL * float(want.sv[0]):
        return (f"singular values differ from the table's by up to {off:.3g} (tolerance {SV_TOL:g} x the largest, "
                f"{float(want.sv[0]):.4g}): yours start {[round(v, 4) for v in sv[:6].tolist()]}, "
                f"the table's {[round(v, 4) for v in want.sv[:6].tolist()]}")
    if (rank := rank_of(first)) != want.rank:
        return f"your control has rank {rank}, the table rank {want.rank}"
    other = as_tensor(draws.other)
    if other is None or other.shape != first.shape or _relative_gap(other.double(), first.double()) <= DIFFER:
        return "seeds `seed` and `seed + 1` gave the same table: the seed must decide the draw"
    grams, yours = _grams(want.table), _grams(first)
    for side, what in ((0, "token-by-token E Eᵀ"), (1, "column-by-column Eᵀ E")):
        if not _forced(want, side) and _relative_gap(yours[side], grams[side]) <= DIFFER:
            return f"your control has the table's {what}: one side of the table was kept"
    return None


def _value(draws: Any, name: str = "first") -> Tensor | None:
    value = as_tensor(getattr(draws, name, None))
    return None if value is None or value.ndim != 2 else value.double()


def _rows_reused(draws: Draws, want: Wanted, case: Case) -> bool:
    """Every row of the control is a row of the table, up to sign: a permutation (or the table itself)."""
    got, table = _value(draws), want.table.double()
    if got is None or got.shape != table.shape:
        return False
    gap = torch.minimum(torch.cdist(got, table), torch.cdist(got, -table)).min(1).values
    return bool((gap <= DIFFER * float(table.norm())).all())


def _spectrum(draws: Draws, want: Wanted) -> Tensor | None:
    got = _value(draws)
    return None if got is None or got.shape != want.table.shape else torch.linalg.svdvals(got)


def _full_rank(draws: Draws, want: Wanted, case: Case) -> bool:
    sv = _spectrum(draws, want)
    return sv is not None and want.rank < sv.numel() and bool(sv[-1] > 1e-3 * sv[0])


def _float32_arithmetic(draws: Draws, want: Wanted, case: Case) -> bool:
    """A float64 table whose control is right to float32 precision (1e-5 of the largest) but not to float64's."""
    sv = _spectrum(draws, want)
    return (sv is not None and want.table.dtype == torch.float64 and rank_of(as_tensor(draws.first)) != want.rank
            and bool((sv - want.sv).abs().max() <= 1e-5 * want.sv[0]))


def _spread(wrong_norm: bool) -> Callable[[Draws, Wanted, Case], bool]:
    """The table's rank with another Frobenius norm (wrong_norm), or with its norm but other singular values."""

    def test(draws: Draws, want: Wanted, case: Case) -> bool:
        sv = _spectrum(draws, want)
        if sv is None or want.rank == 0 or rank_of(as_tensor(draws.first)) != want.rank:
            return False
        if abs(float(sv.norm() / want.sv.norm()) - 1) > 1e-4:
            return wrong_norm
        return not wrong_norm and bool((sv - want.sv).abs().max() > SV_TOL * want.sv[0])

    return test


def _side_kept(side: int) -> Callable[[Draws, Wanted, Case], bool]:
    def kept(draws: Draws, want: Wanted, case: Case) -> bool:
        got = _value(draws)
        if got is None or got.shape != want.table.shape or _forced(want, side):
            return False
        return _relative_gap(_grams(got)[side], _grams(want.table)[side]) <= DIFFER
    return kept


def _same_tables(name: str, same: bool) -> Callable[[Draws, Wanted, Case], bool]:
    def test(draws: Draws, want: Wanted, case: Case) -> bool:
        a, b = _value(draws), _value(draws, name)
        return (a is not None and b is not None and a.shape == b.shape and bool(a.norm() > DIFFER * want.table.double().norm())
                and (_relative_gap(b, a) <= DIFFER) == same)
    return test


def check_11_rank_matched_control(fn: Callable[[Tensor, int], Tensor]) -> None:
    """fn(table, seed) -> [V, d]: the table's singular values on random orthonormal bases drawn with ``seed``."""
    diagnoses = [
        Diagnosis(_same_tables("again", False), "the same seed gave two different tables: you drew from torch's global "
                  "generator; make a torch.Generator of your own, seed it with `seed`, and draw everything from it"),
        Diagnosis(lambda d, w, c: d.global_state_moved, "you reseeded torch's global generator: that changes every later "
                  "random draw in the notebook; use a torch.Generator of your own, seeded with `seed`"),
        Diagnosis(_same_tables("other", True), "the seed is ignored: seeds `seed` and `seed + 1` gave the same table "
                  "(seed your generator with the `seed` you are given)"),
        Diagnosis(_rows_reused, "your control's rows are the table's own rows (reordered or sign-flipped): a permutation "
                  "keeps every token's row and the whole geometry among the rows; draw new orthonormal bases"),
        Diagnosis(_full_rank, "your control is full rank: a random table at the same norm is the comparison lesson 11 "
                  "already made; keep the table's singular values (and so its rank), only the bases are random"),
        Diagnosis(_float32_arithmetic, "float32 arithmetic on a float64 table: float32 resolves singular values only down "
                  "to about 1e-7 of the largest, so it loses this table's small ones (rank loss) or adds noise ones; "
                  "work in the table's own dtype"),
        Diagnosis(lambda d, w, c: _spectrum(d, w) is not None and rank_of(as_tensor(d.first)) < w.rank,
                  "your control lost directions (rank loss): whether a singular value counts as zero is decided "
                  "relative to the largest one, not by an absolute threshold; simplest is to keep every singular value"),
        Diagnosis(_spread(True), "wrong scale: your control's Frobenius norm is not the table's (lesson 11's first "
                  "finding: scale alone sets the speed); keep the table's own singular values, and so its norm"),
        Diagnosis(_spread(False), "same rank and Frobenius norm, other singular values: keep each singular value of the "
                  "table, not only their sum of squares"),
        Diagnosis(_side_kept(0), "you kept the left singular vectors (rotated only the d columns): every token keeps its "
                  "inner products with every other token, the signature's geometry in other coordinates; draw the "
                  "token side at random too"),
        Diagnosis(_side_kept(1), "you kept the right singular vectors (rotated only the token side): draw the d-side "
                  "basis at random too, so that neither side is the table's"),
    ]  # fmt: skip
    run_check("check_11_rank_matched_control", _drawn(fn), _control_cases(), _control_problem, diagnoses)


# --- (b) the race: the signature table against its control -------------------------------------------


def signature_vs_control(task: Task, d: int, hidden: int, steps: int, seeds: Sequence[int],
                         make_control: Callable[[Tensor, int], Tensor]) -> dict[str, Tensor]:
    """Each stair's onset per seed [n_seeds, L] (-1: never) for the ΔS¹⁺²⁺³ table at norm √V ("signature") and
    for ``make_control(signature, 100 + s)`` ("control"), both frozen in an Emb-MLP (width d, ``hidden`` units,
    W1 and W2 at their γ = 1 init of seed s), trained by full-batch GD at lr 1, recorded every 10 steps."""
    return race_variant(task, d, hidden, steps, seeds, make_control)


def race_variant(task: Task, d: int, hidden: int, steps: int, seeds: Sequence[int], make_control, *, orders=(1, 2, 3),
                 scaled: bool = True, learn_embedding: bool = False, gamma: float = 1.0, every: int = 10,
                 at_level: bool = False) -> dict[str, Tensor]:
    """The race with one ingredient changeable: what a typical mistake computes."""
    signature = signature_embedding(task.population, d, orders, math.sqrt(task.vocab_size) if scaled else None)
    tables = {"signature": lambda s: signature, "control": lambda s: make_control(signature, CONTROL_SEED + s)}
    model, names = frozen_ensemble(task, tables, list(seeds), d=d, hidden=hidden, gamma=gamma)
    if learn_embedding:
        freeze_embedding(model, [])
    run = train(model, task.population, steps, lr=1.0, record_every=every, progress=False)
    levels = task.plateau_levels()
    onsets = (torch.stack([crossing_step(run.steps, run.loss, h) for h in levels[1:]], -1) if at_level
              else steps_to_plateaus(run, levels))
    return {name: onsets[[k for k, n in enumerate(names) if n == name]] for name in tables}


@dataclass
class SeedLog:
    """A control that writes down the seeds it is called with, then draws ``control(table, seed)``."""

    control: Callable[[Tensor, int], Tensor]
    seeds: list[int] = field(default_factory=list)

    def __call__(self, table: Tensor, seed: int) -> Tensor:
        self.seeds.append(int(seed))
        return self.control(table, seed)


@dataclass(frozen=True)
class RaceSetup:
    """One race of the check: its task and sizes, and whether the lesson's claim is checked on it."""

    label: str
    make_task: Callable[[], Task]
    d: int
    hidden: int
    steps: int
    seeds: tuple[int, ...]
    claim: bool


RACES = (
    RaceSetup("a small race: transfer task (block 3, V 9), d 8, hidden 16, 250 steps, seeds 4 and 5", partial(transfer_task, block=3), 8, 16, 250, (4, 5), False),
    RaceSetup("hierarchy task (block 6, V 18), d 16, hidden 32, 500 steps, seeds 0-2", partial(hierarchy_task, block=6), 16, 32, 500, (0, 1, 2), True),
)  # fmt: skip


@cache
def race_reference(setup: RaceSetup, **change) -> dict[str, Tensor]:
    """The reference race of ``setup`` (once per session), or with one step changed: what a mistake computes."""
    return race_variant(setup.make_task(), setup.d, setup.hidden, setup.steps, setup.seeds, rank_matched_control, **change)


@dataclass(frozen=True)
class RaceWanted:
    """A race's reference onsets and the log of the control the learner's function was handed."""

    setup: RaceSetup
    onsets: dict[str, Tensor]
    log: SeedLog


def _onsets(got: Any, name: str) -> Tensor | None:
    value = as_tensor(got.get(name)) if isinstance(got, dict) else None
    return None if value is None or value.ndim != 2 else value


def _race_problem(got: Any, want: RaceWanted) -> str | None:
    setup, wanted_seeds = want.setup, [CONTROL_SEED + s for s in want.setup.seeds]
    if sorted(want.log.seeds) != sorted(wanted_seeds):
        return (f"the control was drawn with seeds {want.log.seeds}: draw the control of model seed s with "
                f"make_control(signature, {CONTROL_SEED} + s), once per seed ({wanted_seeds})")
    if not isinstance(got, dict) or set(got) != {"signature", "control"}:
        return f"expected a dict with the keys 'signature' and 'control', got {type(got).__name__}"
    for name, expected in want.onsets.items():
        value = _onsets(got, name)
        if value is None or tuple(value.shape) != tuple(expected.shape):
            return (f"'{name}': expected a tensor [n_seeds, n_stairs] = {tuple(expected.shape)} of onset steps, got "
                    f"{type(got[name]).__name__ if value is None else tuple(value.shape)}")
        if not torch.equal(value.double(), expected.double()):
            return f"'{name}': expected the onsets {expected.tolist()}, got {value.tolist()}"
    if setup.claim:
        sig, ctl = (torch.where(got[n][:, -1] >= 0, got[n][:, -1].double(), torch.inf) for n in ("signature", "control"))
        if not bool((sig < torch.inf).all() and (ctl >= sig + MARGIN).all()):
            return (f"lesson 11's claim fails on this run: the signature table must be halfway down the last stair in "
                    f"every seed, at least {MARGIN} steps before its control (never counts as infinitely late); "
                    f"signature {got['signature'][:, -1].tolist()}, control {got['control'][:, -1].tolist()}")
    return None


def _race_is(**change) -> Callable[[Any, RaceWanted, Case], bool]:
    """A diagnosis predicate: the learner's onsets are those of the race with ``change`` (not the reference's)."""

    def matches(got: Any, want: RaceWanted, case: Case) -> bool:
        wrong = race_reference(want.setup, **change)
        return (any(not torch.equal(wrong[n], want.onsets[n]) for n in wrong)
                and all(_onsets(got, n) is not None and torch.equal(_onsets(got, n).long(), wrong[n]) for n in wrong))
    return matches


def _rows_mixed(got: Any, want: RaceWanted, case: Case) -> bool:
    """The two conditions' rows taken seed-major (interleaved) or swapped, where frozen_ensemble is condition-major."""
    both = torch.cat([want.onsets["signature"], want.onsets["control"]])
    n = both.shape[0] // 2
    picks = [(both[0::2], both[1::2]), (both[n:], both[:n])]
    return any(all(_onsets(got, k) is not None and torch.equal(_onsets(got, k).long(), rows) for k, rows
                   in zip(("signature", "control"), pair)) and not torch.equal(pair[0], both[:n]) for pair in picks)


def check_11_signature_vs_control(fn: Callable[..., dict[str, Tensor]]) -> None:
    """fn(task, d, hidden, steps, seeds, make_control) -> {"signature": [n, L], "control": [n, L]} onset steps."""
    cases = []
    for setup in RACES:
        log = SeedLog(rank_matched_control)
        args = (setup.make_task(), setup.d, setup.hidden, setup.steps, list(setup.seeds), log)
        cases.append(Case(setup.label, args, RaceWanted(setup, race_reference(setup), log), hidden=setup is not RACES[0]))
    diagnoses = [
        Diagnosis(lambda g, w, c: w.log.seeds == list(w.setup.seeds), f"the control of model seed s is drawn with "
                  f"seed {CONTROL_SEED} + s, as lesson 11 draws its random tables: the model's own seed would share "
                  "its stream with the model's init"),
        Diagnosis(lambda g, w, c: not w.log.seeds, "make_control was never called: build the control with the "
                  "function you are handed (the check hands in its own)"),
        Diagnosis(_rows_mixed, "the rows are mixed up: frozen_ensemble lists its models condition-major (every seed "
                  "of the first table, then every seed of the second), so pick each condition's rows by its name"),
        Diagnosis(_race_is(orders=(1, 2)), "that is the ΔS¹⁺² table: the signature table holds orders 1, 2 and 3 "
                  "(ΔS¹⁺²⁺³), the one lesson 11 found halfway down the last stair"),
        Diagnosis(_race_is(scaled=False), "the signature table must be rescaled to the matched norm √V before racing "
                  "(its own scale is another one, and scale alone sets the speed)"),
        Diagnosis(_race_is(learn_embedding=True), "the tables must stay frozen: only W1 and W2 learn "
                  "(frozen_ensemble freezes the embedding of every model it builds; do not unfreeze it)"),
        Diagnosis(_race_is(gamma=0.5), "W1 and W2 start at their small init, γ = 1, as in lesson 11"),
        Diagnosis(_race_is(every=1), "record every 10 steps, as lesson 11 does: an onset is the first *recorded* "
                  "step below the midpoint"),
        Diagnosis(_race_is(at_level=True), "halfway down a stair is the first recorded step below the *midpoint* "
                  "between two levels, not below the lower level itself"),
    ]  # fmt: skip
    run_check("check_11_signature_vs_control", fn, cases, _race_problem, diagnoses)

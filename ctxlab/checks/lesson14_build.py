"""The build-it checks of lesson 14: fixed codes scaled to the learned table's size, and the run that reads them.

The lesson's control "codes × d^(−γ)" asks whether the codes' rests go because the codes are fixed or
because they are large. The learner builds it. First a function that scales a code table to a learned
table's size (its RMS entry, one factor per table), compared with the reference on code tables of every
kind the text allows (±1 and 0/1 bits with a zero row, one bit, V = 1, widths other than d, float32 and
float64, ensembles of tables). Then a function that trains the learned table, the ±1 codes and the scaled
codes side by side and reads each curve on H0 and the first stair; on the check's own runs its numbers
must agree with the reference and show the ordering the lesson reads: the ±1 codes are halfway down the
first stair long before the learned table, the scaled codes long after it (or not within the run).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

import torch
from torch import Tensor

from ctxlab.checks.core import Case, Diagnosis, as_tensor, as_tensor_dict, run_check
from ctxlab.fixed_codes import binary_codes
from ctxlab.models import EmbMLP, make_model
from ctxlab.rungs import Rungs, measure_runs
from ctxlab.tasks import Task, hierarchy_task
from ctxlab.theory import plateau_levels
from ctxlab.train import train
from ctxlab.transplant import freeze_embedding, random_embedding, transplant

SIZE_RTOL = 1e-5  # on the scaled table, relative to its largest entry: float32 rounding is about 1e-7
STEP_TOL = 2  # steps, on a dwell or an onset (1e-6 init jitter and separate vs batched runs moved none here)
CONDITIONS = ("learned", "codes", "scaled codes")
FAST, SLOW = 0.5, 1.5  # ±1 codes halfway down stair 1 within FAST × every learned onset; scaled codes after SLOW ×
NO_REST = 10  # steps: the ±1 codes rest on H0 for fewer (the check's runs: 0)
LONGER = 2.0  # with the lesson's shuffled codes, the scaled codes rest on H0 at least this many times as long


# --- part (a): scale the codes ----------------------------------------------------------------------------------


def rms_entry(table: Tensor) -> Tensor:
    """The size of a table: the root mean square of its entries, one per table ([..., V, n] -> [..., 1, 1])."""
    return table.double().pow(2).mean(dim=(-2, -1), keepdim=True).sqrt()


def scale_codes_reference(codes: Tensor, learned: Tensor) -> Tensor:
    """codes [V, w] times one factor per learned table [..., V, d], so that its RMS entry is the table's: [..., V, w]."""
    return (codes.double() * rms_entry(learned) / rms_entry(codes)).to(codes.dtype)


@dataclass(frozen=True)
class Scaled:
    """What one call must give, and the inputs it was given with a pristine copy of each (to see in-place edits)."""

    table: Tensor
    given: tuple[Tensor, Tensor]
    pristine: tuple[Tensor, Tensor]


def _scale_case(label: str, codes: Tensor, learned: Tensor, hidden: bool) -> Case:
    pristine = (codes.clone(), learned.clone())
    return Case(label, (codes, learned), Scaled(scale_codes_reference(codes, learned), (codes, learned), pristine), hidden)


def _scale_cases() -> list[Case]:
    g = torch.Generator().manual_seed(1414)
    offset = 0.1 * torch.randn(2, 10, 6, generator=g) + 0.05  # a table whose entries are not centred (trained)
    ensemble = torch.stack([random_embedding(12, 16, gamma, seed) for gamma, seed in ((0.5, 5), (1.0, 6), (1.5, 7))])
    return [
        _scale_case("the lesson's ±1 codes, V = 24, d = 32, a table at γ = 1", binary_codes(24, 32), random_embedding(24, 32, 1.0, 0), False),
        _scale_case("5 untiled bits (w = 5) for a d = 32 table", binary_codes(24, 5), random_embedding(24, 32, 1.0, 1), False),
        _scale_case("0/1 codes (token 0 a zero row), float64, w = 7, d = 12", binary_codes(20, 7, signed=False).double(),
                    random_embedding(20, 12, 1.25, 2), True),
        _scale_case("V = 1: one token, one bit, w = 3, d = 8", binary_codes(1, 3), random_embedding(1, 8, 1.0, 3), True),
        _scale_case("one-bit codes (V = 2), float64 table at γ = 0.5", binary_codes(2, 4), random_embedding(2, 6, 0.5, 4).double(), True),
        _scale_case("an ensemble of 3 tables (γ 0.5, 1, 1.5), shuffled codes, V = 12, d = 16",
                    binary_codes(12, 16, shuffle_seed=0), ensemble, True),
        _scale_case("an ensemble of 2 uncentred tables, 0/1 codes in float64, w = 4, d = 6",
                    binary_codes(10, 4, signed=False).double(), offset, True),
    ]  # fmt: skip


def _scale_problem(got: Any, expected: Scaled) -> str | None:
    for name, now, before in zip(("code table", "learned table"), expected.given, expected.pristine):
        if not torch.equal(now, before):
            return f"the {name} you were given changed during the call"
    value, want = as_tensor(got), expected.table
    if value is None or not value.is_floating_point() or tuple(value.shape) != tuple(want.shape):
        shape = None if value is None else f"{tuple(value.shape)} {value.dtype}"
        return f"expected a float tensor of shape {tuple(want.shape)} (the codes' shape, one per table), got {shape or type(got).__name__}"
    off = (value.double() - want.double()).abs().nan_to_num(torch.inf)
    scale = float(want.double().abs().max())
    if float(off.max()) > SIZE_RTOL * scale:
        where = tuple(int(i) for i in torch.unravel_index(off.argmax(), off.shape))
        return (f"at index {where} expected {float(want[where]):.6f}, got {float(value[where]):.6f} "
                f"(tolerance {SIZE_RTOL:g} of the largest entry, {scale:.4f})")
    return None


# the sizes a learner may match instead of each whole table's RMS entry ([..., V, n] -> broadcastable factor)
WRONG_SIZES: dict[str, Callable[[Tensor], Tensor]] = {
    "per row": lambda t: t.pow(2).mean(-1, keepdim=True).sqrt(),
    "whole ensemble": lambda t: t.pow(2).mean().sqrt(),
    "largest": lambda t: t.abs().amax(dim=(-2, -1), keepdim=True),
    "std": lambda t: t.std(dim=(-2, -1), keepdim=True),
    "mean abs": lambda t: t.abs().mean(dim=(-2, -1), keepdim=True),
    "norm": lambda t: t.pow(2).sum(dim=(-2, -1), keepdim=True).sqrt(),
}


def _scaled_wrong(expected: Scaled, how: str) -> list[Tensor]:
    """What a mistake gives: codes matched by a wrong size, the learned table scaled, or codes re-centred first."""
    codes, learned = (t.double() for t in expected.pristine)
    if how in WRONG_SIZES:
        wrong = codes * WRONG_SIZES[how](learned) / WRONG_SIZES[how](codes)
        return [wrong, wrong.expand(*learned.shape[:-2], *codes.shape)]
    if how == "codes as 1":
        return [codes * rms_entry(learned)]
    if how == "learned scaled":
        return [learned * rms_entry(codes) / rms_entry(learned)]
    centred = codes - codes.mean(dim=(-2, -1) if how == "centred" else -2, keepdim=True)
    return [centred * rms_entry(learned) / rms_entry(centred), centred * rms_entry(learned) / rms_entry(codes)]


def _scaled_as(how: str) -> Callable[[Any, Scaled, Case], bool]:
    """A diagnosis: the learner's table is what the mistake ``how`` gives (and that is not the answer)."""

    def matches(got: Any, expected: Scaled, case: Case) -> bool:
        value = as_tensor(got)
        return value is not None and any(
            value.shape == wrong.shape and _scale_problem(wrong, expected) is not None
            and bool(torch.allclose(value.double(), wrong, rtol=1e-4, atol=1e-9, equal_nan=True))
            for wrong in _scaled_wrong(expected, how))

    return matches


def _changed_inputs(got: Any, expected: Scaled, case: Case) -> bool:
    return any(not torch.equal(now, before) for now, before in zip(expected.given, expected.pristine))


def check_14_scale_codes(fn: Callable[[Tensor, Tensor], Tensor]) -> None:
    """fn(codes [V, w], learned [..., V, d]) -> [..., V, w]: the codes times one factor per table, RMS entry matched."""
    diagnoses = [
        Diagnosis(_changed_inputs, "your function changed its inputs in place: return a new table and leave the codes "
                                   "as they are (part (b) still needs the ±1 codes after scaling them)"),
        Diagnosis(_scaled_as("per row"), "you scaled each row to its own row of the learned table: the size is one "
                                         "number per table (its RMS entry), and one factor scales the whole code table, "
                                         "so the codes keep their pattern (and a zero row stays a zero row, not 0/0)"),
        Diagnosis(_scaled_as("whole ensemble"), "one factor for the whole ensemble: each model's codes are scaled to that "
                                                "model's own table (the RMS over its V × d entries)"),
        Diagnosis(_scaled_as("largest"), "you matched the largest entries: the size is the RMS entry, the square root "
                                         "of the mean squared entry"),
        Diagnosis(_scaled_as("std"), "a standard deviation subtracts the mean (and divides by n − 1): the size is the "
                                     "RMS of the entries themselves, the square root of their mean square"),
        Diagnosis(_scaled_as("mean abs"), "you matched the mean absolute entry: the size is the RMS entry"),
        Diagnosis(_scaled_as("norm"), "you matched norms (the whole table's, or the rows'): the code table has w columns "
                                      "and the learned table d, so equal norms make entries of different sizes; match "
                                      "the RMS entry, each table's mean over its own number of entries"),
        Diagnosis(_scaled_as("codes as 1"), "you multiplied by the learned table's RMS entry alone: divide by the codes' "
                                            "own RMS entry too (0/1 codes, for one, do not have RMS 1)"),
        Diagnosis(_scaled_as("learned scaled"), "you scaled the learned table to the codes' size: it is the codes that "
                                                "are scaled, down to the learned table's size (the result has the "
                                                "codes' shape [..., V, w])"),
        Diagnosis(_scaled_as("centred"), "you re-centred the codes (took their mean off): only rescale them; one "
                                         "factor, no shift, so every code stays the code it was"),
        Diagnosis(_scaled_as("rows centred"), "you took the mean row off the codes: only rescale them; one factor, "
                                              "no shift, so every code stays the code it was"),
    ]  # fmt: skip
    run_check("check_14_scale_codes", fn, _scale_cases(), _scale_problem, diagnoses)


# --- part (b): train the three inputs and read them ---------------------------------------------------------------


@dataclass(frozen=True)
class Setup:
    """One run of the check's own: a binary hierarchy task, shuffled ±1 codes, seeds and the model's size."""

    label: str
    block: int
    shuffle_seed: int
    seeds: tuple[int, ...]
    gamma: float = 1.0
    steps: int = 300
    d: int = 16
    hidden: int = 32
    lesson_codes: bool = False  # the lesson's codes (shuffle 0): the lesson's reading of the rest on H0 applies

    def task(self) -> Task:
        return hierarchy_task(block=self.block, n_values=2)

    def args(self) -> tuple:
        task = self.task()
        return (task, binary_codes(task.vocab_size, self.d, shuffle_seed=self.shuffle_seed), list(self.seeds),
                self.gamma, self.steps, self.d, self.hidden)


SETUPS = (
    Setup("the lesson's task with 4 tokens per position, its shuffled codes, d 16, 32 units, seeds 0-2",
          4, 0, (0, 1, 2), lesson_codes=True),
    Setup("6 tokens per position (V = 18), other shuffled codes, seeds 3 and 4", 6, 1, (3, 4)),
)


def conditions_model(task: Task, codes: Tensor, seeds: list[int], gamma: float, d: int, hidden: int,
                     mistake: str | None = None) -> EmbMLP:
    """The three conditions, condition-major, each with every seed; ``mistake`` builds a typical wrong one."""
    n = len(seeds)
    model = make_model("mlp", task, d=d, hidden=hidden, gamma=gamma, seed=list(seeds) * len(CONDITIONS))
    own = model.embedding.detach()[:n]
    scaled = (codes * d ** -gamma).expand(n, -1, -1) if mistake == "expected size" else scale_codes_reference(codes, own)
    if mistake == "learned scaled up":
        scaled = own * rms_entry(codes).float() / rms_entry(own).float()
    tables = {n + j: codes for j in range(n)} | {2 * n + j: scaled[j] for j in range(n)}
    transplant(model, tables)
    moving = {"scaled trainable": range(2 * n, 3 * n), "learned scaled up": range(2 * n, 3 * n)}.get(mistake, ())
    freeze_embedding(model, [n <= k and k not in moving for k in range(3 * n)])
    with torch.no_grad():
        for j in range(n):
            if mistake != "codes keep W1":
                model.w1[n + j] *= d ** -gamma
            if mistake == "scaled W1 small":
                model.w1[2 * n + j] *= d ** -gamma
    return model


def rest_and_onset(reads: list[Rungs]) -> Tensor:
    """Per curve: the steps it rests on H0 and the step it is halfway down the first stair (-1: never) [n, 2]."""
    return torch.tensor([[r.rungs[0].dwell, r.rungs[1].onset] for r in reads])


def train_conditions(task: Task, codes: Tensor, seeds: list[int], gamma: float, steps: int, d: int, hidden: int,
                     mistake: str | None = None) -> Tensor:
    """The three conditions trained by full-batch GD at learning rate 1: the loss at every step [3 n, steps + 1]."""
    model = conditions_model(task, codes, list(seeds), gamma, d, hidden, mistake)
    return train(model, task.population, steps, lr=1.0, record_every=1, progress=False).loss


def read_conditions(task: Task, loss: Tensor) -> dict[str, list[Rungs]]:
    """Each condition's curves [n, T] (condition-major rows of ``loss``) read on the task's ladder."""
    reads = measure_runs(torch.arange(loss.shape[1]), loss, plateau_levels(task.population))
    n = len(reads) // len(CONDITIONS)
    return {name: reads[i * n:(i + 1) * n] for i, name in enumerate(CONDITIONS)}


def scaled_codes_run_reference(task: Task, codes: Tensor, seeds: list[int], gamma: float, steps: int, d: int,
                               hidden: int) -> dict[str, Tensor]:
    """Per condition [len(seeds), 2]: the rest on H0 and the onset of the first stair of each seed's curve."""
    loss = train_conditions(task, codes, seeds, gamma, steps, d, hidden)
    return {name: rest_and_onset(reads) for name, reads in read_conditions(task, loss).items()}


@cache
def _setup_loss(setup: Setup, mistake: str | None = None) -> Tensor:
    return train_conditions(*setup.args(), mistake=mistake)


def _setup_readings(setup: Setup, mistake: str | None = None) -> dict[str, Tensor]:
    return {name: rest_and_onset(r) for name, r in read_conditions(setup.task(), _setup_loss(setup, mistake)).items()}


@dataclass(frozen=True)
class Readings:
    """The reference's readings of one setup, per condition [n_seeds, 2]."""

    setup: Setup
    values: dict[str, Tensor]


def _run_cases() -> list[Case]:
    return [Case(s.label, s.args(), Readings(s, _setup_readings(s)), i > 0) for i, s in enumerate(SETUPS)]


def _as_readings(got: Any, n: int) -> dict[str, Tensor] | str:
    """The learner's answer as {condition: [n, 2] long}, or what is wrong with its form."""
    return as_tensor_dict(got, CONDITIONS, (n, 2), "whole numbers (per seed: rest on H0, onset of stair 1)", whole=True)


def _disagreement(got: dict[str, Tensor], want: dict[str, Tensor], seeds: tuple[int, ...]) -> str | None:
    for name in CONDITIONS:
        for j, seed in enumerate(seeds):
            (dwell, onset), (want_dwell, want_onset) = got[name][j].tolist(), want[name][j].tolist()
            if abs(dwell - want_dwell) > STEP_TOL:
                return f"'{name}', seed {seed}: rests on H0 for {dwell} steps, expected {want_dwell} (tolerance {STEP_TOL})"
            if (onset < 0) != (want_onset < 0) or abs(onset - want_onset) > STEP_TOL:
                return (f"'{name}', seed {seed}: halfway down the first stair at step {onset}, expected {want_onset} "
                        f"(-1: never; tolerance {STEP_TOL})")
    return None


def _ordering(got: dict[str, Tensor], setup: Setup) -> str | None:
    """What the lesson's reading says that these numbers do not."""
    learned, codes, scaled = (got[name] for name in CONDITIONS)
    first, last = int(learned[:, 1].min()), int(learned[:, 1].max())
    if first < 0:
        return "a learned seed is never halfway down the first stair within the run"
    if not bool(((codes[:, 1] >= 0) & (codes[:, 1] <= FAST * first)).all()) or int(codes[:, 0].max()) >= NO_REST:
        return (f"the ±1 codes should leave H0 at once (rest < {NO_REST} steps) and be halfway down the first stair "
                f"within {FAST:g} × every learned onset ({first}): got {codes.tolist()}")
    if not bool(((scaled[:, 1] < 0) | (scaled[:, 1] >= SLOW * last)).all()):
        return (f"the scaled codes should be halfway down the first stair after {SLOW:g} × every learned onset ({last}) "
                f"or not within the run: got {scaled[:, 1].tolist()}")
    if setup.lesson_codes and int(scaled[:, 0].min()) < LONGER * int(learned[:, 0].max()):
        return (f"with the lesson's codes the scaled codes should rest on H0 at least {LONGER:g} × as long as every "
                f"learned seed ({int(learned[:, 0].max())} steps): got {scaled[:, 0].tolist()}")
    return None


def _run_problem(got: Any, expected: Readings) -> str | None:
    setup = expected.setup
    readings = _as_readings(got, len(setup.seeds))
    if isinstance(readings, str):
        return readings
    return _disagreement(readings, expected.values, setup.seeds) or _ordering(readings, setup)


def _read_as(setup: Setup, how: str) -> dict[str, Tensor]:
    """The reference's curves read with one typical misreading."""
    loss = _setup_loss(setup)
    h0 = plateau_levels(setup.task().population)[0]
    out = {}
    for name, reads in read_conditions(setup.task(), loss).items():
        right = rest_and_onset(reads)
        if how == "reached":
            out[name] = torch.stack([right[:, 0], torch.tensor([r.rungs[1].reached for r in reads])], 1)
        elif how == "until it leaves":
            rows = loss[[CONDITIONS.index(name) * len(reads) + j for j in range(len(reads))]]
            left = (rows < h0 - 0.01).float().argmax(1)
            out[name] = torch.stack([left, right[:, 1]], 1)
        else:
            out[name] = right.flip(1)
    return out


def _gives(variant: Callable[[Setup], dict[str, Tensor]]) -> Callable[..., bool]:
    """A diagnosis: the learner's readings are the ``variant``'s (and those are not the reference's)."""

    def matches(got: Any, expected: Readings, case: Case) -> bool:
        seeds = expected.setup.seeds
        readings = _as_readings(got, len(seeds))
        if isinstance(readings, str):
            return False
        wrong = variant(expected.setup)
        return _disagreement(wrong, expected.values, seeds) is not None and _disagreement(readings, wrong, seeds) is None

    return matches


def _codes_rest(got: Any, expected: Readings, case: Case) -> bool:
    readings = _as_readings(got, len(expected.setup.seeds))
    return not isinstance(readings, str) and int(readings["codes"][:, 0].max()) >= NO_REST


def _built(mistake: str) -> Callable[..., bool]:
    return _gives(lambda setup: _setup_readings(setup, mistake))


def _read(how: str) -> Callable[..., bool]:
    return _gives(lambda setup: _read_as(setup, how))


def check_14_scaled_codes_run(fn: Callable[..., Mapping[str, Tensor]]) -> None:
    """fn(task, codes, seeds, gamma, steps, d, hidden) -> {condition: [n_seeds, 2]} (rest on H0, onset of stair 1),
    for the learned table, the ±1 codes (W1 carrying d^(−γ)) and the codes scaled to each seed's learned table
    (W1 at its own init), trained by full-batch GD at learning rate 1 on the check's own runs."""
    diagnoses = [
        Diagnosis(_built("codes keep W1"), "the ±1 codes' W1 must carry the factor d^(−γ) the learned table's init has "
                                           "(its own init times d^(−γ)), as in the lesson: the first layer starts as small"),
        Diagnosis(_built("scaled W1 small"), "the scaled codes already carry the learned table's size: their W1 keeps its "
                                             "own init; only the ±1 codes move d^(−γ) into W1"),
        Diagnosis(_built("scaled trainable"), "the scaled codes moved: freeze them, like the ±1 codes (the control is "
                                              "'small and cannot move')"),
        Diagnosis(_built("learned scaled up"), "your 'scaled codes' are the learned table scaled up to the codes' size: "
                                               "scale the codes down to each seed's learned table, and keep them fixed"),
        Diagnosis(_built("expected size"), "codes × d^(−γ) is the learned table's expected size, not its size: scale the "
                                           "codes of each seed to that seed's own table at init (part (a))"),
        Diagnosis(_read("reached"), "the onset is the first step halfway down the first stair (below the midpoint of H0 "
                                    "and H1), not the first step that reaches H1 (within 0.01 of it)"),
        Diagnosis(_read("until it leaves"), "the rest on H0 is its dwell, the steps it rests within 0.01 of H0 while "
                                            "flat, not the step at which it leaves H0"),
        Diagnosis(_read("swapped"), "each row is (rest on H0, onset of the first stair), in that order"),
        Diagnosis(_codes_rest, "your ±1 codes rest on H0: the 'codes' models read the codes as given, ±1, fixed, with "
                               "d^(−γ) in W1; if your scale_codes changes its input in place, they are no longer ±1"),
    ]  # fmt: skip
    run_check("check_14_scaled_codes_run", fn, _run_cases(), _run_problem, diagnoses)

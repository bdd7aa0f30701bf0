"""The build-it checks of lesson 12: the composition experiment recorded over training, and its reading.

(a) The timeline: an Emb-MLP ensemble (every γ with every seed, γ-major) trained by full-batch GD, with the training
accuracy, the held-out share composed and the key and anchor line-ups at every record; compared with the reference on
runs of the check's own (other keys, held-out pairs, shifts, reverse offsets, widths, learning rates, record grids).
(b) The report read off a timeline; compared on hand-made and generated timelines (the level met exactly, never,
reached then lost, at step 0, a tie for the peak) and on the exercise's run, where the lesson's phenomenon must show.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from functools import cache
from typing import Any

import torch
from torch import Tensor

from ctxlab.checks.core import Case, Diagnosis, as_tensor, run_check
from ctxlab.composition import anchor_line_up, composition_probes, key_line_up, line_up
from ctxlab.models import ensemble_grid, make_model
from ctxlab.tasks import Task, anchor_composition_task
from ctxlab.train import recorded_steps, train

TOL = 1e-4  # on every number of a timeline and a report (accuracies are multiples of 1/n: exact in effect)
LEVEL = 0.25  # a quarter of the held-out keys: the exercise's level
GAP = 0.15  # mean final composed share, γ = 1 minus γ = 0.5, on the exercise's run (measured: 0.29-0.38 under jitter)
LINE = 0.4  # small init's key line-up peaks above it (measured 0.55-0.89), standard init's stays below (at most 0.27)
FIELDS = ("steps", "train_acc", "composed", "key_line_up", "anchor_line_up")
REPORT = ("fit", "composed", "final", "peak", "peak_step")
STEP_FIELDS = ("fit", "composed", "peak_step")


@dataclass(frozen=True, repr=False)
class ShownTask(Task):
    """A Task that prints as the call that made it, so that a failing check lists its inputs in one line."""

    call: str = ""

    def __repr__(self) -> str:
        return self.call


class ShownTimeline(dict):
    """A timeline (a plain dict for the learner) that prints as its label, not as every number in it."""

    label = "a timeline"

    def __repr__(self) -> str:
        return self.label


@dataclass(frozen=True)
class Setup:
    """One run of the check: the task's arguments, the ensemble (every γ with every seed) and the training."""

    label: str
    task_args: tuple[tuple[str, Any], ...]
    gammas: tuple[float, ...]
    seeds: tuple[int, ...]
    steps: int
    every: int
    lr: float = 1.0
    d: int = 16
    hidden: int = 64

    def task(self) -> ShownTask:
        task = anchor_composition_task(**dict(self.task_args))
        call = "anchor_composition_task(" + ", ".join(f"{k}={v!r}" for k, v in self.task_args) + ")"
        return ShownTask(**{f.name: getattr(task, f.name) for f in fields(Task)}, call=call)

    def args(self) -> tuple:
        return (self.task(), list(self.gammas), list(self.seeds), self.steps, self.every, self.lr, self.d, self.hidden)


# --- exercise 3: the experiment, recorded over training ---------------------------------------------------------


def recorded_run(task: Task, gammas, seeds, steps: int, every: int, lr: float = 1.0, d: int = 16,
                 hidden: int = 64) -> dict[str, Any]:
    """The reference run with what the diagnoses need besides the timeline: the shares of held-out keys answered
    with the reverse pair's label, or right on the swapped rows; the anchors lined up against their token ids."""
    grid_gammas, grid_seeds = ensemble_grid(gammas, seeds)
    model = make_model("mlp", task, gamma=grid_gammas, seed=grid_seeds, d=d, hidden=hidden)
    test = task.info["held_out"]  # a last probe reads its rows with the anchors swapped: the trained reverse pair
    probes = {**composition_probes(task), "reverse_rows": lambda m: (m(test.x[:, [0, 2, 1]]).argmax(-1) == test.y).float().mean(-1)}
    run = train(model, task.population, steps, lr=lr, record_every=every, probes=probes, progress=False)
    E, anchors = run.embeddings, task.role_tokens("anchor")
    return {"steps": run.steps.long(), "train_acc": run.extras["train_acc"], "composed": run.extras["composed"],
            "key_line_up": key_line_up(E, task), "anchor_line_up": anchor_line_up(E, task),
            "symmetric": run.extras["symmetric"], "reverse_rows": run.extras["reverse_rows"],
            "anchor_ids": line_up(E, anchors, anchors.double()), "gammas": grid_gammas, "seeds": grid_seeds}


@cache
def setup_record(setup: Setup) -> dict[str, Any]:
    """The reference record of a setup, trained once per process."""
    return recorded_run(*setup.args())


TIMELINE_SETUPS = (
    (Setup("the exercise's task, γ 0.5 and 1, seed 0, 120 steps every 20", (("n_keys", 12),), (0.5, 1.0), (0,), 120, 20), False),
    (Setup("8 keys, held-out pair (1, 2), γ 1, seeds 3 and 4, lr 0.5, d 8, 32 units, 48 steps every 7",
           (("n_keys", 8), ("held_out", (1, 2))), (1.0,), (3, 4), 48, 7, lr=0.5, d=8, hidden=32), True),
    (Setup("5 anchors, held-out pair (2, 5), reverse offset 3, γ 0.5 and 1 x seeds 5 and 6, lr 1.5, 40 steps every 10",
           (("n_keys", 10), ("shifts", (3, -1, 2, -4, 6)), ("held_out", (2, 5)), ("reverse_offset", 3)),
           (0.5, 1.0), (5, 6), 40, 10, lr=1.5, d=12, hidden=24), True),
    (Setup("the give-away (reverse offset 0), 15 keys, γ 0.3 and 1.25, seed 7, 30 steps every 15",
           (("n_keys", 15), ("reverse_offset", 0)), (0.3, 1.25), (7,), 30, 15), True),
)  # fmt: skip


def _entries(got: Any, names: tuple[str, ...]) -> dict[str, Tensor] | str:
    """The learner's entries as CPU float64 tensors, or what is wrong with the answer's form."""
    if not isinstance(got, Mapping) or any(name not in got for name in names):
        keys = sorted(map(str, got)) if isinstance(got, Mapping) else type(got).__name__
        return f"expected a dict with the entries {list(names)}, got {keys}"
    out = {}
    for name in names:
        value = as_tensor(got[name])
        if value is None:
            return f"entry {name!r}: expected a tensor, got {type(got[name]).__name__}"
        out[name] = value.double()
    return out


def _timeline_problem(got: Any, setup: Setup) -> str | None:
    record = setup_record(setup)
    entries = _entries(got, FIELDS)
    if isinstance(entries, str):
        return entries
    steps = record["steps"]
    if entries["steps"].shape != steps.shape or not bool((entries["steps"] == steps.double()).all()):
        return f"expected the recorded steps {steps.tolist()}, got {entries['steps'].tolist()}"
    for name in FIELDS[1:]:
        want, value = record[name].double(), entries[name]
        if value.shape != want.shape:
            return f"entry {name!r}: expected shape [K, T] = {tuple(want.shape)} (one row per model), got {tuple(value.shape)}"
        off = ~((value - want).abs() <= TOL)
        if bool(off.any()):
            k, t = (int(i) for i in off.nonzero()[0])
            return (f"entry {name!r}, model {k} (γ {record['gammas'][k]:g}, seed {record['seeds'][k]}), step "
                    f"{int(steps[t])}: expected {float(want[k, t]):.4f}, got {float(value[k, t]):.4f} (tolerance {TOL:g})")
    return None


def _curves_are(wanted: Callable[[dict[str, Any], Setup], dict[str, Tensor]]) -> Callable[[Any, Setup, Case], bool]:
    """A diagnosis: the learner's entries named by ``wanted`` are its values (and those are not the reference's)."""

    def matches(got: Any, setup: Setup, case: Case) -> bool:
        record = setup_record(setup)
        wrong = wanted(record, setup)
        entries = _entries(got, tuple(wrong))
        if isinstance(entries, str):
            return False

        def same(a: Tensor, b: Tensor) -> bool:
            return a.shape == b.shape and bool(((a.double() - b.double()).abs() <= TOL).all())

        return (not all(same(wrong[n], record[n]) for n in wrong)) and all(same(entries[n], wrong[n]) for n in wrong)

    return matches


def _models_counted_wrong(got: Any, setup: Setup, case: Case) -> bool:
    entries = _entries(got, ("composed",))
    return not isinstance(entries, str) and entries["composed"].shape[:1] != (len(setup.gammas) * len(setup.seeds),)


def _seed_major(record: dict[str, Any], setup: Setup) -> dict[str, Tensor]:
    G, S = len(setup.gammas), len(setup.seeds)
    order = [g * S + s for s in range(S) for g in range(G)]  # seed-major position -> γ-major row
    return {name: record[name][order] for name in FIELDS[1:]}


def _at_lr_one(record: dict[str, Any], setup: Setup) -> dict[str, Tensor]:
    other = setup_record(replace(setup, lr=1.0))
    return {name: other[name] for name in FIELDS[1:]}


def _final_table(record: dict[str, Any], setup: Setup) -> dict[str, Tensor]:
    """Both line-ups read off the final table at every record."""
    return {name: record[name][:, -1:].expand_as(record[name]) for name in ("key_line_up", "anchor_line_up")}


def check_12_composition_timeline(fn: Callable[..., Mapping[str, Tensor]]) -> None:
    """fn(task, gammas, seeds, steps, every, lr, d, hidden) -> {"steps" [T], "train_acc", "composed", "key_line_up",
    "anchor_line_up" [K, T]}: the Emb-MLP ensemble (every γ with every seed, γ-major) trained by full-batch GD and
    recorded at steps 0, every, 2 every, ... and the last."""
    diagnoses = [
        Diagnosis(_models_counted_wrong, "cross every γ with every seed: the ensemble has len(gammas) x len(seeds) models, as the course's grid lays them out"),
        Diagnosis(_curves_are(lambda r, e: {"steps": torch.arange(0, e.steps + 1, e.every)}), "record the last step too, as the training loop does, even when it is no multiple of every"),
        Diagnosis(_curves_are(lambda r, e: {"steps": torch.arange(r["steps"].numel())}), "'steps' holds training steps (0, every, 2 every, ...), not the positions of the records"),
        Diagnosis(_curves_are(_seed_major), "your models come seed-major: lay them out γ-major (every seed of the first γ, then every seed of the next)"),
        Diagnosis(_curves_are(_at_lr_one), "train at the learning rate you are given, not at 1"),
        Diagnosis(_curves_are(lambda r, s: {"composed": r["composed"] + r["symmetric"]}),
                  "the reverse pair's label is a copy, not a composition: count only the composed label"),
        Diagnosis(_curves_are(lambda r, s: {"composed": r["reverse_rows"]}),
                  "that reads the trained reverse pair: the held-out rows are (key, first anchor, second anchor) as given"),
        Diagnosis(_curves_are(lambda r, s: {"train_acc": r["composed"], "composed": r["train_acc"]}),
                  "train_acc and composed are swapped: train_acc is on the training sequences, composed on the held-out pair"),
        Diagnosis(_curves_are(lambda r, s: {"key_line_up": r["anchor_line_up"], "anchor_line_up": r["key_line_up"]}),
                  "key_line_up and anchor_line_up are swapped"),
        Diagnosis(_curves_are(lambda r, s: {"anchor_line_up": r["anchor_ids"]}),
                  "the anchors line up against their shifts (the task's values), not their token ids"),
        Diagnosis(_curves_are(_final_table), "each record's line-up comes from that record's embedding table, not the final one"),
    ]  # fmt: skip
    cases = [Case(setup.label, setup.args(), setup, hidden) for setup, hidden in TIMELINE_SETUPS]
    run_check("check_12_composition_timeline", fn, cases, _timeline_problem, diagnoses)


# --- exercise 4: reading the timeline -----------------------------------------------------------------------------


def first_step_at_or_above(steps: Tensor, curve: Tensor, level: float) -> Tensor:
    """The first recorded step at which each row of ``curve`` [K, T] is at or above ``level`` [K]; -1 where never."""
    hit = curve >= level
    return torch.where(hit.any(-1), steps.long()[hit.float().argmax(-1)], torch.tensor(-1))


def composition_report_reference(timeline: Mapping[str, Tensor], level: float) -> dict[str, Tensor]:
    """When each model fits the training pairs and first composes ``level`` of the held-out keys, where its
    composed share ends, and its key line-up's peak with the first step of it: each [K]."""
    steps = torch.as_tensor(timeline["steps"]).long()
    key = torch.as_tensor(timeline["key_line_up"]).double()
    best = key.argmax(-1)  # the first of equal highest records
    composed = torch.as_tensor(timeline["composed"])
    return {"fit": first_step_at_or_above(steps, torch.as_tensor(timeline["train_acc"]), 1.0),
            "composed": first_step_at_or_above(steps, composed, level), "final": composed[:, -1].double(),
            "peak": key.gather(-1, best[:, None])[:, 0], "peak_step": steps[best]}


@dataclass(frozen=True)
class Reading:
    """A report case's timeline (the learner reads a copy), level and answer; ``gammas`` where the phenomenon must show."""

    timeline: dict[str, Tensor]
    level: float
    answer: dict[str, Tensor]
    gammas: tuple[float, ...] | None = None


RUN = Setup("the exercise's run: 12 keys, γ 0.5 and 1, seeds 0 and 1, 600 steps every 20", (("n_keys", 12),),
            (0.5, 1.0), (0, 1), 600, 20)


def _hand_made() -> dict[str, Tensor]:
    """Four models over steps 0..45: fitted at 20; fitted at 30, lost, regained; never; at step 0. Composed: exactly at
    the level at 20; above at 10 then below; never; at step 0. Key line-up: a tie for the peak; rising; flat; falling."""
    rows = {"train_acc": [[0.1, 0.5, 1, 1, 1, 1], [0.2, 0.9, 0.95, 1, 0.95, 1], [0, 0.3, 0.6, 0.8, 0.9, 0.95], [1] * 6],
            "composed": [[0, 0.125, 0.25, 0.25, 0.375, 0.375], [0, 0.375, 0.125, 0.125, 0.25, 0.5],
                         [0, 0, 0.125, 0.125, 0.125, 0.125], [0.5, 0.25, 0.125, 0, 0, 0.125]],
            "key_line_up": [[0.1, 0.3, 0.6, 0.6, 0.4, 0.4], [0.1, 0.2, 0.3, 0.4, 0.5, 0.7], [0.2] * 6,
                            [0.9, 0.5, 0.3, 0.3, 0.3, 0.8]],
            "anchor_line_up": [[0.3, 0.9, 0.5, 0.4, 0.4, 0.4], [0.9, 0.8, 0.7, 0.6, 0.5, 0.4], [0.3, 0.4, 0.5, 0.6, 0.7, 0.8],
                               [0.3, 0.3, 0.6, 0.3, 0.3, 0.3]]}  # fmt: skip
    return {"steps": torch.tensor([0, 10, 20, 30, 40, 45]), **{name: torch.tensor(v, dtype=torch.float32) for name, v in rows.items()}}


def _generated(seed: int, K: int, steps: int, every: int, rows: int, keys: int) -> dict[str, Tensor]:
    """Noisy rising accuracies on the grids of ``rows`` training and ``keys`` held-out sequences, random line-ups."""
    g = torch.Generator().manual_seed(seed)
    grid = torch.tensor(recorded_steps(steps, every, None))
    T = grid.numel()
    rise = torch.linspace(0, 1, T)[None] * (0.6 + 0.8 * torch.rand(K, 1, generator=g))
    fitted = (rise * rows + torch.randint(-3, 4, (K, T), generator=g)).round().clamp(0, rows)
    told = (rise * keys * 0.7 + torch.randint(-1, 2, (K, T), generator=g)).round().clamp(0, keys)
    return {"steps": grid, "train_acc": fitted / rows, "composed": told / keys,
            "key_line_up": torch.rand(K, T, generator=g), "anchor_line_up": torch.rand(K, T, generator=g)}


class LazyCases(Sequence):
    """Report cases built when first read, from (label, timeline builder, level, hidden): a stub stops at the first,
    before the exercise's run is trained. The learner gets a copy of each timeline; the reading keeps its own."""

    def __init__(self, specs: list[tuple[str, Callable[[], dict[str, Tensor]], float, bool]]) -> None:
        self.specs = specs

    def __len__(self) -> int:
        return len(self.specs)

    def __getitem__(self, i: int) -> Case:
        label, build, level, hidden = self.specs[i]
        timeline = build()
        gammas = tuple(setup_record(RUN)["gammas"]) if label.startswith(RUN.label) else None
        shown = ShownTimeline({name: value.clone() for name, value in timeline.items()})
        shown.label = f"the timeline of the case '{label}'"
        return Case(label, (shown, level), Reading(timeline, level, composition_report_reference(timeline, level), gammas), hidden)


def _report_cases() -> LazyCases:
    return LazyCases([
        ("hand-made: the level met exactly, reached then lost, never, at step 0, a tie for the peak", _hand_made, LEVEL, False),
        (RUN.label + ", level 0.25", lambda: {name: setup_record(RUN)[name] for name in FIELDS}, LEVEL, False),
        ("generated: 7 models, 95 steps every 10, 12 held-out keys, level 1/3", lambda: _generated(1, 7, 95, 10, 60, 12), 1 / 3, True),
        ("generated in float64: 3 models, 300 steps every 20, 10 held-out keys, level 0.5",
         lambda: {name: v.double() if v.is_floating_point() else v for name, v in _generated(2, 3, 300, 20, 150, 10).items()}, 0.5, True),
    ])  # fmt: skip


def _phenomenon_problem(report: dict[str, Tensor], gammas: tuple[float, ...]) -> str | None:
    """What the lesson's reading says that the report of the exercise's run does not."""
    small = torch.tensor([g == max(gammas) for g in gammas])
    fit, composed, final, peak, peak_step = (report[n] for n in REPORT)
    gap = float(final[small].mean() - final[~small].mean())
    facts = [
        (bool((fit >= 0).all()), f"every model fits the training pairs within the run: fit steps {fit.tolist()}"),
        (bool(((composed[small] >= 0) & (composed[small] < fit[small])).all()),
         "each small-init model answers a quarter of the held-out keys before it fits the training pairs"),
        (gap >= GAP, f"small init ends composing more held-out keys than standard init, by {GAP:g} in the mean (got {gap:.2f})"),
        (bool((peak[small] > LINE).all() and (peak_step[small] < fit[small]).all()),
         f"small init's key line-up peaks above {LINE:g} before its fit"),
        (bool((peak[~small] < LINE).all()), f"standard init's key line-up stays below {LINE:g}"),
    ]  # fmt: skip
    return next((f"the lesson's phenomenon did not show: {message}" for holds, message in facts if not holds), None)


def _differs(value: Tensor, want: Tensor, name: str) -> Tensor:
    """Per model: does the learner's entry ``name`` differ from ``want`` (steps exactly, numbers within TOL)?"""
    return ~((value.double() - want.double()).abs() <= (0 if name in STEP_FIELDS else TOL))


def _report_problem(got: Any, reading: Reading) -> str | None:
    entries = _entries(got, REPORT)
    if isinstance(entries, str):
        return entries
    for name in REPORT:
        want, value = reading.answer[name], entries[name]
        if value.shape != want.shape:
            return f"entry {name!r}: expected one value per model, shape {tuple(want.shape)}, got {tuple(value.shape)}"
        if bool((off := _differs(value, want, name)).any()):
            k = int(off.nonzero()[0, 0])
            return (f"entry {name!r}, model {k}: expected {float(want[k]):.4g}, got {float(value[k]):.4g} "
                    f"(yours: {[round(v, 4) for v in value.tolist()]}; -1: never)")
    return _phenomenon_problem(entries, reading.gammas) if reading.gammas else None


def report_variant(timeline: Mapping[str, Tensor], level: float, mistake: str) -> dict[str, Tensor]:
    """The report read with one typical mistake, made in every entry it can touch."""
    steps = torch.as_tensor(timeline["steps"]).long()
    out = dict(composition_report_reference(timeline, level))

    def first(curve: Tensor, at: float) -> Tensor:
        hit = curve > at if mistake == "strict" else curve >= at
        if mistake == "for good":
            hit = hit.flip(-1).int().cumprod(-1).flip(-1).bool()
        where = hit.float().argmax(-1)
        never = {"never as 0": 0, "never as the last step": int(steps[-1])}.get(mistake, -1)
        return torch.where(hit.any(-1), where if mistake == "positions" else steps[where], torch.tensor(never))

    out["fit"] = first(timeline["train_acc"], level if mistake == "fit at the level" else 1.0)
    out["composed"] = first(timeline["composed"], level)
    key = timeline["anchor_line_up" if mistake == "anchor peak" else "key_line_up"].double()
    best = key.shape[-1] - 1 - key.flip(-1).argmax(-1) if mistake == "last of ties" else key.argmax(-1)
    out["peak"], out["peak_step"] = key.gather(-1, best[:, None])[:, 0], best if mistake == "positions" else steps[best]
    if mistake == "final as best":
        out["final"] = timeline["composed"].double().max(-1).values
    return out


def _reports(mistake: str) -> Callable[[Any, Reading, Case], bool]:
    """A diagnosis: wherever the learner's report is wrong, it is what ``mistake`` gives (the mistake may be made in
    some of the entries only)."""

    def matches(got: Any, reading: Reading, case: Case) -> bool:
        entries, wrong = _entries(got, REPORT), report_variant(reading.timeline, reading.level, mistake)
        if isinstance(entries, str) or any(entries[n].shape != wrong[n].shape for n in REPORT):
            return False
        off = {n: _differs(entries[n], reading.answer[n], n) for n in REPORT}
        return any(bool(o.any()) for o in off.values()) and all(
            not bool((o & _differs(entries[n], wrong[n], n)).any()) for n, o in off.items())

    return matches


def check_12_composition_report(fn: Callable[[Mapping[str, Tensor], float], Mapping[str, Tensor]]) -> None:
    """fn(timeline, level) -> {"fit", "composed", "final", "peak", "peak_step"}, each [K]; on the exercise's run the
    report must also show the lesson's phenomenon."""
    diagnoses = [
        Diagnosis(_reports("strict"), "'at or above' the level: a share exactly at it counts (a quarter of 12 keys is exactly 0.25), and so does an accuracy of exactly 1"),
        Diagnosis(_reports("for good"), "the first recorded step it gets there, even if it falls back later, not the step from which it stays"),
        Diagnosis(_reports("positions"), "report training steps (the timeline's 'steps'), not positions in the list of records"),
        Diagnosis(_reports("never as 0"), "a curve that never gets there is -1, not 0 (0 means: already at step 0)"),
        Diagnosis(_reports("never as the last step"), "a curve that never gets there is -1, not the last step"),
        Diagnosis(_reports("fit at the level"), "fitting the training pairs means every training sequence right: a training accuracy of 1, not the level"),
        Diagnosis(_reports("final as best"), "'final' is the share at the last record, not the best one along the way"),
        Diagnosis(_reports("anchor peak"), "the peak is the key line-up's, not the anchors'"),
        Diagnosis(_reports("last of ties"), "when the highest line-up is recorded more than once, its step is the first of them"),
    ]  # fmt: skip
    run_check("check_12_composition_report", fn, _report_cases(), _report_problem, diagnoses)

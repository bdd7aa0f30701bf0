"""The build-it checks of lesson 05: predict when each mode of a LinearEmb switches on, then train it and see.

The learner writes two functions. The prediction reads Σ_yx's modes and the model's initial weights, before
any training; the measurement trains the model by plain gradient descent and reads each mode's strength off
the product map. Each is compared with the reference on models, tasks, step grids and learning rates the
check draws (modes already on at init, modes that never switch on, the key at another position). A third
check runs the two together on runs of its own: the prediction must hold there within a margin, the modes must switch
on in the order of their singular values, and the plateau must lengthen with γ as 2 ln d / rate_1 says.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

import torch
from torch import Tensor

from ctxlab.checks.core import Case, Diagnosis, as_tensor, reweighted, run_check
from ctxlab.checks.lesson05 import first_steps
from ctxlab.dataset import Dataset
from ctxlab.models import LinearEmb, ensemble_grid
from ctxlab.tasks import hierarchy_task, modes_task
from ctxlab.theory import (correlation_modes, growing_amplitude, mode_projections, mode_strengths,
                           predicted_growth_rates, predicted_switch_on, product_map)
from ctxlab.train import recorded_steps, train

LEVEL = 0.5  # a mode is switched on once a_k reaches it (lesson 05)
PREDICT_RTOL = 1e-4  # relative, on the predicted step: float32 weights move it by about 1e-6
NEAR_LEVEL = 1e-5  # a recorded a_k this close to the level (relative) may fall on either side of it in float32
AGREE = 0.2  # |measured / predicted - 1| allowed on the check's own runs (the reference: at most 0.07)
SURE = 1.25  # modes predicted within length / SURE must switch on, those predicted beyond length * SURE must not
SLOPE_RTOL = 0.1  # mode 1's switch-on step against γ: slope within 10% of 2 ln d / rate_1 (the reference: 1-3%)


@dataclass(frozen=True)
class Setup:
    """A task and the LinearEmb ensemble (every γ with every seed) that a case draws afresh at each call."""

    label: str
    data: Dataset
    d: int
    gammas: tuple[float, ...]
    seeds: tuple[int, ...]
    lr: float = 1.0
    level: float = LEVEL

    def model(self) -> LinearEmb:
        gammas, seeds = ensemble_grid(list(self.gammas), list(self.seeds))
        return LinearEmb(self.data.vocab_size, self.data.seq_len, self.data.n_labels, d=self.d, gamma=gammas, seed=seeds)


def key_second(data: Dataset) -> Dataset:
    """The same two-position population with its positions swapped: the key tokens at position 1."""
    return Dataset(data.x[:, [1, 0]], data.y, data.vocab_size, data.n_labels, data.weights)


# --- exercise 4: the prediction, before training ------------------------------------------------------


def predict_switch_on_reference(model: LinearEmb, data: Dataset, level: float = LEVEL, lr: float = 1.0) -> Tensor:
    """ln(level / a_0) / (2 ln(1 + lr s_k)) per model and mode [K, r], from the weights at init; 0 for a mode
    whose growing amplitude a_0 is already at the level."""
    modes = correlation_modes(data)
    return predicted_switch_on(modes.s, growing_amplitude(model, modes), level, lr).clamp_min(0)


def _predict_variant(model: LinearEmb, data: Dataset, level: float, lr: float, *, rate: str = "gd",
                     amplitude: str = "growing", clamp: bool = True) -> Tensor:
    """The prediction under one changed ingredient: what a typical mistake computes."""
    modes = correlation_modes(data)
    alpha, beta = mode_projections(model, modes, [0] * len(modes.s) if amplitude == "key at 0" else None)
    a0 = {"growing": ((alpha + beta) ** 2).sum(-1) / 4, "key at 0": ((alpha + beta) ** 2).sum(-1) / 4,
          "unquartered": ((alpha + beta) ** 2).sum(-1), "product": (alpha * beta).sum(-1)}[amplitude]
    s = modes.s
    per_step = {"gd": 2 * torch.log1p(lr * s), "flow": 2 * lr * s, "factor": torch.log1p(lr * s),
                "lr 1": 2 * torch.log1p(s), "log10": 2 * torch.log1p(lr * s) / math.log(10)}[rate]
    times = torch.log(level / a0) / per_step
    return times.clamp_min(0) if clamp else times


def _feature_major(model: LinearEmb) -> LinearEmb:
    """The model with its read-out rows re-read as feature-major (row j * L + i): a wrong reshape of w."""
    wrong = copy.deepcopy(model)
    K, L, d = model.n_models, model.seq_len, model.d
    with torch.no_grad():
        wrong.w.copy_(model.w.reshape(K, d, L, -1).transpose(1, 2).reshape(K, L * d, -1))
    return wrong


def _predict_cases() -> list[Case]:
    shown = modes_task((0.2, 0.45, 0.3)).population
    setups = [
        (Setup("the exercise's task, d 32, γ 1 and 1.5", shown, 32, (1.0, 1.5), (0, 1)), False),
        (Setup("key tokens at position 1, d 16", key_second(modes_task((0.45, 0.3, 0.15)).population), 16, (1.25,), (2, 3, 4)), True),
        (Setup("one filler token, d 48, level 0.2, lr 0.5", modes_task(fillers=1).population, 48, (1.5,), (5,), lr=0.5, level=0.2), True),
        (Setup("large init (γ 0.25 and 0.5): some modes start at the level", modes_task().population, 32, (0.25, 0.5), (6, 7)), True),
        (Setup("hierarchy task over Z3 (two equal singular values, 3 positions), d 24, lr 2", hierarchy_task().population, 24, (1.25,), (8, 9), lr=2.0), True),
        (Setup("the exercise's task with random weights, d 40", reweighted(shown, 10), 40, (1.0,), (11,)), True),
    ]  # fmt: skip
    cases = []
    for setup, hidden in setups:
        args = (setup.model(), setup.data, setup.level, setup.lr)
        cases.append(Case(setup.label, args, predict_switch_on_reference(*args), hidden))
    return cases


def _predict_problem(got: Any, expected: Tensor) -> str | None:
    value = as_tensor(got)
    if value is None or value.shape != expected.shape:
        shape = None if value is None else tuple(value.shape)
        return f"expected a tensor [K, r] = {tuple(expected.shape)} (one step per model and mode), got {shape or type(got).__name__}"
    value = value.double()
    off = (value - expected).abs() > PREDICT_RTOL * expected.abs().clamp_min(1.0)
    if bool(off.any()) or not bool(torch.isfinite(value).all()):
        k, m = (int(i) for i in (off | ~torch.isfinite(value)).nonzero()[0])
        return (f"model {k}, mode {m}: expected a switch-on at step {float(expected[k, m]):.3f}, got {float(value[k, m]):.3f} "
                f"(tolerance {PREDICT_RTOL:g} relative)")
    return None


def _is_wrong_answer(got: Any, wrong: Tensor, expected: Tensor) -> bool:
    """The learner's prediction is ``wrong`` (NaN where it is NaN: a log of a negative start), which is not the answer."""
    value = as_tensor(got)
    return (_predict_problem(wrong, expected) is not None and value is not None and value.shape == wrong.shape
            and bool(torch.isclose(value.double(), wrong, rtol=PREDICT_RTOL, atol=PREDICT_RTOL, equal_nan=True).all()))


def _predicts(**change) -> Callable[[Any, Tensor, Case], bool]:
    """A diagnosis predicate: the learner's prediction is the one ``change`` gives (and that is not the answer)."""
    return lambda got, expected, case: _is_wrong_answer(got, _predict_variant(*case.args, **change), expected)


def _feature_major_answer(got: Any, expected: Tensor, case: Case) -> bool:
    model, *rest = case.args
    return _is_wrong_answer(got, predict_switch_on_reference(_feature_major(model), *rest), expected)


def check_05_predict_switch_on(fn: Callable[[LinearEmb, Dataset, float, float], Tensor]) -> None:
    """fn(model, data, level, lr) -> [K, r]: each mode's predicted switch-on step, from the init alone."""
    diagnoses = [
        Diagnosis(_predicts(rate="flow"), "2 lr s_k is gradient flow's rate: a GD step multiplies each factor's mode by (1 + lr s_k), so ln a_k grows by 2 ln(1 + lr s_k) per step"),
        Diagnosis(_predicts(rate="factor"), "ln(1 + lr s_k) is the rate of one factor: a_k is a product of two factors that both grow, so it grows twice as fast, 2 ln(1 + lr s_k)"),
        Diagnosis(_predicts(rate="lr 1"), "use the learning rate you are given: the rate is 2 ln(1 + lr s_k)"),
        Diagnosis(_predicts(rate="log10"), "that uses log10: the growth is exponential in e, ln(level / a_0) / (2 ln(1 + lr s_k))"),
        Diagnosis(_predicts(amplitude="product"), "that starts from a_k(0) = α·β, the strength at init; the part that grows is |α + β|² / 4 (the α − β part decays)"),
        Diagnosis(_predicts(amplitude="unquartered"), "the growing amplitude is |α + β|² / 4: you left out the 1/4"),
        Diagnosis(_predicts(amplitude="key at 0"), "each mode lives at one position, the block of v_k with the largest norm: it is not always position 0 (here the key tokens sit at position 1)"),
        Diagnosis(_predicts(clamp=False), "a mode whose growing amplitude is already at the level switches on at once: predict step 0, not a negative step"),
        Diagnosis(_feature_major_answer, "w [K, L·d, C] is position-major: row i·d + j is feature j of position i, so W^(i) is w.reshape(K, L, d, C)[:, i]"),
    ]  # fmt: skip
    run_check("check_05_predict_switch_on", fn, _predict_cases(), _predict_problem, diagnoses)


# --- exercise 5: the measurement, by training --------------------------------------------------------


def switch_on_steps(steps: Tensor, strengths: Tensor, level: float) -> Tensor:
    """First recorded step with a_k >= level, per model and mode [K, r] (strengths [K, T, r]); -1 where never."""
    first = first_steps(steps, strengths >= level)
    return torch.where(first.isinf(), torch.tensor(-1.0, dtype=torch.float64), first).long()


def measure_switch_on_reference(model: LinearEmb, data: Dataset, steps: int, level: float = LEVEL, lr: float = 1.0,
                                every: int = 1) -> Tensor:
    """Train ``model`` in place by full-batch GD and read each mode's switch-on step at the recorded steps."""
    run = train(model, data, steps, lr=lr, record_every=every, probes={"map": product_map}, progress=False)
    return switch_on_steps(run.steps, mode_strengths(run.extras["map"], correlation_modes(data)), level)


@cache
def _strengths(setup: Setup, steps: int, lr: float) -> Tensor:
    """a_k at every step 0..steps of the setup's ensemble trained at ``lr``: [K, steps + 1, r]."""
    run = train(setup.model(), setup.data, steps, lr=lr, record_every=1, probes={"map": product_map}, progress=False)
    return mode_strengths(run.extras["map"], correlation_modes(setup.data))


@dataclass(frozen=True)
class Measured:
    """One measuring call's answer and what it is read from: a_k at every step [K, steps + 1, r], the grid."""

    setup: Setup
    steps: int
    every: int
    grid: Tensor
    expected: Tensor

    def strengths(self, lr: float | None = None) -> Tensor:
        return _strengths(self.setup, self.steps, self.setup.lr if lr is None else lr)

    def read(self, strengths: Tensor, grid: Tensor | None = None, level: float | None = None) -> Tensor:
        """The switch-on steps of ``strengths`` [K, steps + 1, r] read at ``grid`` (default: the case's)."""
        grid = self.grid if grid is None else grid
        return switch_on_steps(grid, strengths[:, grid], self.setup.level if level is None else level)


@cache
def _measure_specs() -> list[tuple[Setup, int, int, bool]]:
    """(setup, steps, every, hidden) of each measuring case: built once, so that their runs are trained once."""
    shown = modes_task((0.2, 0.45, 0.3)).population
    return [
        (Setup("the exercise's task, d 32, γ 1.25 and 1.5", shown, 32, (1.25, 1.5), (0,)), 200, 1, False),
        (Setup("recorded every 10 steps, 155 steps, d 16", shown, 16, (1.0, 1.5), (1,)), 155, 10, True),
        (Setup("large init (γ 0.25 and 0.5), lr 0.5, every 3 steps", modes_task().population, 32, (0.25, 0.5), (2, 3), lr=0.5), 60, 3, True),
        (Setup("key tokens at position 1, level 0.3, a run too short for mode 3", key_second(modes_task((0.45, 0.3, 0.15)).population), 48, (1.5,), (4, 5), level=0.3), 90, 1, True),
    ]  # fmt: skip


def _measure_cases() -> list[Case]:
    cases = []
    for setup, steps, every, hidden in _measure_specs():
        grid = torch.tensor(recorded_steps(steps, every, None))
        expected = Measured(setup, steps, every, grid, switch_on_steps(grid, _strengths(setup, steps, setup.lr)[:, grid], setup.level))
        cases.append(Case(setup.label, (setup.model(), setup.data, steps, setup.level, setup.lr, every), expected, hidden))
    return cases


def _measure_problem(got: Any, m: Measured) -> str | None:
    value = as_tensor(got)
    want = m.expected
    if value is None or value.shape != want.shape:
        shape = None if value is None else tuple(value.shape)
        return f"expected a tensor [K, r] = {tuple(want.shape)} of steps (one per model and mode), got {shape or type(got).__name__}"
    if value.is_floating_point() and not bool((value == value.round()).all()):
        return f"expected whole steps, got {value.tolist()}"
    value = value.long()
    a = m.strengths()
    near = [m.read(a, level=m.setup.level * (1 + side * NEAR_LEVEL)) for side in (-1, 1)]  # float32 may round either way
    fine = (value == want) | (value == near[0]) | (value == near[1])
    if not bool(fine.all()):
        k, mode = (int(i) for i in (~fine).nonzero()[0])
        return (f"model {k}, mode {mode}: expected the first recorded step with a_k >= {m.setup.level:g} to be "
                f"{int(want[k, mode])}, got {int(value[k, mode])} (your steps: {value.tolist()}, expected {want.tolist()})")
    return None


def _reads(variant: Callable[[Measured], Tensor]) -> Callable[[Any, Measured, Case], bool]:
    """A diagnosis predicate: the learner's steps are what ``variant`` reads (and that is not the answer)."""

    def matches(got: Any, m: Measured, case: Case) -> bool:
        wrong = variant(m)
        value = as_tensor(got)
        return not torch.equal(wrong, m.expected) and value is not None and value.shape == wrong.shape and torch.equal(value.long(), wrong)

    return matches


def _after_update(m: Measured) -> Tensor:
    """a_k recorded after the update of each step but labelled with the step before it."""
    a = m.strengths()
    later = (m.grid + 1).clamp_max(m.steps)
    return switch_on_steps(m.grid, a[:, later], m.setup.level)


def _grid_index(m: Measured) -> Tensor:
    """The position of each switch-on step in the list of recorded steps (-1 stays -1)."""
    where = {int(s): i for i, s in enumerate(m.grid)}
    return torch.tensor([[where.get(s, -1) for s in row] for row in m.expected.tolist()])


def _never_as(value: Callable[[Measured], int]) -> Callable[[Measured], Tensor]:
    return lambda m: torch.where(m.expected < 0, torch.tensor(value(m)), m.expected)


def check_05_measure_switch_on(fn: Callable[[LinearEmb, Dataset, int, float, float, int], Tensor]) -> None:
    """fn(model, data, steps, level, lr, every) -> [K, r]: train the model by full-batch GD for ``steps`` steps and
    return, per model and mode, the first recorded step with a_k >= level (-1 if none)."""
    diagnoses = [
        Diagnosis(_reads(_after_update), "off by one: record a_k before each update (step 0 is the model as given, step t the model after t updates)"),
        Diagnosis(_reads(lambda m: m.read(m.strengths(), torch.arange(m.steps + 1))), "you read a_k at every step: read it only at the recorded steps 0, every, 2·every, … and the last step, as train(..., record_every=every) records them"),
        Diagnosis(_reads(_grid_index), "those are positions in the list of recorded steps: return the steps themselves (run.steps[i])"),
        Diagnosis(_reads(_never_as(lambda m: 0)), "a mode that never reaches the level gets -1, not 0 (argmax of an all-False column is 0)"),
        Diagnosis(_reads(_never_as(lambda m: m.steps)), "a mode that never reaches the level gets -1, not the last step"),
        Diagnosis(_reads(lambda m: m.read(m.strengths().abs())), "a_k is signed: a mode switches on when a_k itself reaches the level (a learned mode points along Σ_yx, a_k > 0); a large init can start a mode below minus the level"),
        Diagnosis(_reads(lambda m: m.read(m.strengths(lr=1.0))), "train at the learning rate you are given, not at 1"),
        Diagnosis(lambda g, m, c: as_tensor(g) is not None and as_tensor(g).shape == m.expected.shape,
                  "those are not the steps of the model you were given trained by full-batch GD at lr: train that model itself (its init is what exercise 4 reads), every update on the whole population, p <- p - lr * grad, and read a_k = u_k^T A v_k from product_map with the modes of correlation_modes(data)"),
    ]  # fmt: skip
    run_check("check_05_measure_switch_on", fn, _measure_cases(), _measure_problem, diagnoses)


# --- putting it together: the prediction holds on runs of the check's own -----------------------------


@cache
def _agreement_runs() -> list[tuple[Setup, int]]:
    """Two runs whose modes, predicted with margins, either switch on well inside the run or well after it."""
    return [
        (Setup("key tokens at position 1, d 32", key_second(modes_task((0.45, 0.3, 0.15)).population), 32, (1.25, 1.5, 1.75), (21,)), 120),
        (Setup("two fillers, d 64, lr 0.5", modes_task((0.2, 0.45, 0.3), fillers=2).population, 64, (1.25, 1.5, 1.75), (22,), lr=0.5), 240),
    ]  # fmt: skip


def _agreement_problem(setup: Setup, steps: int, predicted: Tensor, measured: Tensor) -> str | None:
    """What the prediction and the measurement of one run disagree on, with margins; None when they agree."""
    for k, gamma in enumerate(setup.gammas):
        for mode in range(predicted.shape[1]):
            want, got = float(predicted[k, mode]), int(measured[k, mode])
            if want <= steps / SURE and (got < 0 or abs(got - want) > AGREE * max(want, 1.0)):
                return (f"at γ = {gamma:g} mode {mode + 1} is predicted to switch on at step {want:.0f} and measured at "
                        f"{got}: more than {AGREE:.0%} apart")
            if want >= steps * SURE and got >= 0:
                return f"at γ = {gamma:g} mode {mode + 1} is predicted beyond step {steps * SURE:.0f}, but measured on at step {got}"
        on = [int(t) for t in measured[k] if t >= 0]
        if on != sorted(on):
            return f"at γ = {gamma:g} the modes switch on at steps {measured[k].tolist()}: not in the order of their singular values"
    first = measured[:, 0].double()
    design = torch.stack([torch.tensor(setup.gammas, dtype=torch.float64), torch.ones(len(setup.gammas), dtype=torch.float64)], 1)
    slope = float(torch.linalg.lstsq(design, first[:, None]).solution[0])
    theory = 2 * math.log(setup.d) / float(predicted_growth_rates(correlation_modes(setup.data).s[:1], setup.lr))
    if abs(slope / theory - 1) > SLOPE_RTOL:
        return (f"mode 1's switch-on moves by {slope:.1f} steps per unit of γ; 2 ln d / rate_1 = {theory:.1f} "
                f"(allowed: {SLOPE_RTOL:.0%})")
    return None


def check_05_switch_on_prediction(fn: Callable[[LinearEmb, Dataset, int, float, float], tuple]) -> None:
    """fn(model, data, steps, level, lr) -> (predicted, measured), each [K, r]: the prediction of exercise 4 made
    from the model as given, then the measurement of exercise 5 on the same model, run on the check's own
    models. The prediction must hold (within 20%), the modes must switch on in singular-value order, and
    mode 1's plateau must lengthen by 2 ln d / rate_1 steps per unit of γ (within 10%)."""
    name = "check_05_switch_on_prediction"
    for setup, steps in _agreement_runs():
        where = f"{name}, hidden case '{setup.label}, γ {', '.join(f'{g:g}' for g in setup.gammas)}, {steps} steps'"
        try:
            answer = fn(setup.model(), setup.data, steps, setup.level, setup.lr)
        except NotImplementedError:
            raise AssertionError(f"{name}: not done yet: finish exercises 4 and 5 first, then call them here") from None
        except Exception as err:
            raise AssertionError(f"{where}: your function raised {type(err).__name__}: {err}") from err
        expected_shape = (len(setup.gammas) * len(setup.seeds), len(correlation_modes(setup.data).s))
        pair = tuple(answer) if isinstance(answer, (tuple, list)) else ()
        tensors = [as_tensor(x) for x in pair]
        if len(pair) != 2 or any(t is None or tuple(t.shape) != expected_shape for t in tensors):
            raise AssertionError(f"{where}: expected a pair (predicted, measured) of tensors [K, r] = {expected_shape}, "
                                 f"got {[None if t is None else tuple(t.shape) for t in tensors] or type(answer).__name__}")
        predicted, measured = tensors[0].double(), tensors[1].long()
        if not bool((predicted >= 0).all()):
            raise AssertionError(f"{where}: a predicted step is negative ({predicted.round(decimals=1).tolist()}): a "
                                 "prediction is a step >= 0 (-1 marks a measured mode that never switched on, not a prediction)")
        problem = _agreement_problem(setup, steps, predicted, measured)
        if problem:
            raise AssertionError(f"{where}: {problem}\n  predicted {predicted.round(decimals=1).tolist()}\n  measured {measured.tolist()}")
    print(f"PASS {name}")

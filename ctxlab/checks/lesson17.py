"""The checks of exercises 17: the first stair forecast from the init alone, then trained against.

Exercise 1 integrates plain GD on the key-only small-init network of a GELU Emb-MLP,
z = σ'(0) E[x_0] W1_0 W2, from the model's own weights, and returns the loss along that path. Exercise 2
reads the first stair's onset (the first step below (H0 + H1) / 2) off that path and off a trained copy of
the model. Both are compared with the reference on settings the check draws: three attribute values,
four orders, weighted rows, sampled rows with integer labels, one model or several, other widths and
learning rates, a path of no steps, a stair that never comes halfway down. A learner's function must leave
the model as it was: the forecast is made before the training it forecasts.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cache, wraps
from typing import Any

import torch
from torch import Tensor

from ctxlab.checks.core import Case, Diagnosis, as_tensor, reweighted, run_check, stub_first
from ctxlab.dataset import Dataset
from ctxlab.models import EmbMLP, ensemble_grid, make_model
from ctxlab.signatures import plateau_levels
from ctxlab.tasks import hierarchy_task
from ctxlab.theory import SLOPE_AT_ZERO, model_weights, prefix_data
from ctxlab.train import train

PATH_ATOL = 1e-4  # on the loss: a float32 path differs from the float64 reference by about 1e-6
NEAR = 1e-4  # a curve this close to the midpoint at a step may fall on either side of it in another arithmetic
NEVER = -1  # the onset of a stair that never comes halfway down


@dataclass(frozen=True)
class Setup:
    """A task's data and the Emb-MLP ensemble (every γ with every seed) a case draws afresh at each call."""

    label: str
    task: tuple  # hierarchy_task's (block, n_values, mix)
    gammas: tuple[float, ...]
    seeds: tuple[int, ...]
    d: int = 16
    hidden: int = 32
    lr: float = 1.0
    steps: int = 300
    rows: str = "population"  # or "reweighted", "skewed" (weights that favour label 0) or "sampled" (integer labels)

    def data(self) -> Dataset:
        return _data(self.task, self.rows)

    def model(self) -> EmbMLP:
        g, s = ensemble_grid(list(self.gammas), list(self.seeds))
        return make_model("mlp", self.data(), gamma=g, seed=s, d=self.d, hidden=self.hidden)

    def args(self) -> tuple:
        return self.model(), self.data(), self.lr, self.steps


@cache
def _data(task: tuple, rows: str) -> Dataset:
    block, n_values, mix = task
    t = hierarchy_task(block=block, n_values=n_values, mix=mix)
    if rows == "skewed":  # the label marginal moves off uniform, so H0 < ln C while the loss at init stays near ln C
        pop = t.population
        w = pop.weights.double() * (1 + 3 * pop.targets().double()[:, 0])
        return Dataset(pop.x, pop.y, pop.vocab_size, pop.n_labels, (w / w.sum()).float())
    return {"population": t.population, "reweighted": reweighted(t.population, 17),
            "sampled": t.sample(400, seed=17)}[rows]


BINARY, MIXED = (4, 2, (0.4, 0.3, 0.3)), (4, 2, (0.5, 0.2, 0.3))
SETUPS = [
    (Setup("binary attributes, block 4, γ 1 and 1.25, seeds 0 and 1", BINARY, (1.0, 1.25), (0, 1)), False),
    (Setup("three attribute values, block 6, d 24, hidden 48, lr 0.5", (6, 3, (0.4, 0.3, 0.3)), (1.0,), (2, 3),
           d=24, hidden=48, lr=0.5, steps=400), True),
    (Setup("weighted rows, another mix, one model, lr 2", MIXED, (1.0,), (4,), lr=2.0, steps=120, rows="reweighted"), True),
    (Setup("400 sampled rows with integer labels, γ 0.75 and 1", BINARY, (0.75, 1.0), (5,), steps=200, rows="sampled"), True),
    (Setup("four orders, block 2, d 8, hidden 16, lr 1.5", (2, 2, (0.4, 0.2, 0.2, 0.2)), (1.0,), (6, 7, 8),
           d=8, hidden=16, lr=1.5, steps=250), True),
    (Setup("no steps: the loss at init alone", BINARY, (1.0,), (9,), steps=0), True),
]  # fmt: skip
ONSET_SETUPS = [
    (replace(SETUPS[0][0], steps=250), False),
    (SETUPS[1][0], True),
    (SETUPS[2][0], True),
    (replace(SETUPS[3][0], steps=100), True),
    (replace(SETUPS[4][0], label="four orders, block 2, d 8, hidden 16, lr 1.5, 1000 steps", steps=1000), True),
    (replace(SETUPS[0][0], label="γ 1 and 1.25 for 83 steps: one model halfway down at the last step, two never", steps=83), True),
    (Setup("weights that favour label 0 (H0 below ln C, the loss at init near ln C), lr 0.5", BINARY, (1.0,), (4, 5),
           lr=0.5, steps=300, rows="skewed"), True),
]  # fmt: skip


# --- exercise 1: the loss along the small-init path -------------------------------------------------------


def linear_path(model: EmbMLP, data: Dataset, lr: float, steps: int, *, slope: float = SLOPE_AT_ZERO["gelu"],
                combine: str = "sum", rows: str = "weights", moving: str = "E W1 W2", network: str = "linear",
                shifted: bool = False) -> Tensor:
    """The loss [K, steps + 1] at steps 0..steps of plain GD at ``lr`` on z = σ'(0) E[x_0] W1_0 W2, from the
    model's weights (copies: the model is left as it was), in float64. The keywords switch one ingredient
    to what a typical mistake computes."""
    E, W1, W2 = model_weights(model)
    scale = data.n if rows == "sum" else 1  # a plain sum over rows is N times their mean
    if rows != "weights":  # every row alike
        data = Dataset(data.x, data.y, data.vocab_size, data.n_labels, torch.full((data.n,), 1.0 / data.n))
    if network != "all positions":
        data = prefix_data(data, 1)  # rows merged by their key: exact for a network that reads x_0 alone, and fewer
    factors = {"E": E.clone(), "W1": (W1 if network == "all positions" else W1[:, :1]).clone(), "W2": W2.clone()}
    trained = [factors[name].requires_grad_() for name in moving.split()]
    y = data.targets().double()
    w = data.weights.double()
    positions = range(factors["W1"].shape[1])
    losses = []
    for step in range(steps + 1 + int(shifted)):
        u = sum(factors["E"][:, data.x[:, i]] @ factors["W1"][:, i] for i in positions)  # [K, N, h]
        h = torch.nn.functional.gelu(u) if network == "gelu" else slope * u
        loss = -scale * (torch.log_softmax(h @ factors["W2"], -1) * y).sum(-1) @ w  # [K]
        losses.append(loss.detach())
        if step == steps + int(shifted):
            break
        grads = torch.autograd.grad(loss.sum() if combine == "sum" else loss.mean(), trained)
        with torch.no_grad():
            for p, g in zip(trained, grads):
                p -= lr * g
    return torch.stack(losses[int(shifted):], 1)


def untouched(fn: Callable) -> Callable:
    """``fn`` called as the check calls it, answering ``Changed`` when it altered the model's weights (which
    are then put back, so that the next case and the diagnoses see the model as drawn)."""

    @wraps(fn)
    def call(model: EmbMLP, *args):
        before = [p.detach().clone() for p in model.parameters()]
        got = fn(model, *args)
        if any(not torch.equal(b, p.detach()) for b, p in zip(before, model.parameters())):
            with torch.no_grad():
                for b, p in zip(before, model.parameters()):
                    p.copy_(b)
            return Changed(got)
        return got

    return call


@dataclass(frozen=True)
class Changed:
    """What a learner's function returned after changing the model it was given."""

    got: Any


CHANGED = ("your function changed the model's own weights: the forecast is made before the training it "
           "forecasts, so work on copies (clone the weight tensors for the path, copy.deepcopy the model to train it) "
           "and leave the model as it was")


def path_problem(got: Any, expected: Tensor) -> str | None:
    if isinstance(got, Changed):
        return CHANGED
    value = as_tensor(got)
    if value is None or value.shape != expected.shape:
        shape = None if value is None else tuple(value.shape)
        return f"expected a tensor [K, steps + 1] = {tuple(expected.shape)} (the loss at steps 0..steps), got {shape or type(got).__name__}"
    off = ~((value.double() - expected).abs() <= PATH_ATOL)
    if bool(off.any()):
        k, t = (int(i) for i in off.nonzero()[0])
        return (f"model {k}, step {t}: expected the path's loss {float(expected[k, t]):.6f}, got {float(value[k, t]):.6f} "
                f"(tolerance {PATH_ATOL:g})")
    return None


def _path_is(**mistake) -> Callable[[Any, Tensor, Case], bool]:
    """A diagnosis predicate: the learner's path is the one ``mistake`` gives, and that is not the answer. Where
    the mistake blows up, only the steps before it does are compared (the blow-up itself is chaotic)."""

    def matches(got: Any, expected: Tensor, case: Case) -> bool:
        wrong, value = linear_path(*case.args, **mistake), as_tensor(got)
        if path_problem(wrong, expected) is None or value is None or value.shape != wrong.shape:
            return False
        tame = (wrong.isfinite() & (wrong.abs() < 1e3)).long().cumprod(1).bool()  # each model's steps before a blow-up
        return bool(torch.isclose(value.double(), wrong, rtol=1e-3, atol=PATH_ATOL)[tame].all())

    return matches


PATH_HINTS = [
    (dict(slope=1.0), "GELU's slope at 0 is σ'(0) = 1/2, not 1: at small init the hidden layer passes on half of u"),
    (dict(combine="mean"), "each model needs its own gradient: sum the K models' losses before the backward pass (their mean divides every step by K)"),
    (dict(rows="mean"), "the rows carry weights (data.weights): the loss is Σ_n w_n CE(z_n, P(y | x_n)), not a plain mean over rows"),
    (dict(rows="sum"), "the rows carry weights (data.weights, summing to 1): the loss is Σ_n w_n CE(z_n, P(y | x_n)); a plain sum over rows is N times too large, and so is every step"),
    (dict(moving="E"), "all three factors move: E, the key's block W1_0 and W2 each take their gradient step"),
    (dict(moving="E W1"), "W2 moves too: all three factors take their gradient step"),
    (dict(network="gelu"), "that is the GELU network itself, or its expansion with the curvature term σ''(0) u² / 2: the "
                           "path is the first term alone, σ'(0) u, linear in u (lesson 05's three-factor network)"),
    (dict(network="all positions"), "only the key feeds the path: use position 0's tokens and block W1_0 (the anchors' order-1 drive is zero)"),
    (dict(shifted=True), "the curve starts with the loss at init, before any step: steps + 1 values, the first one at step 0"),
]  # fmt: skip


@cache
def _expected_path(setup: Setup) -> Tensor:
    """The reference path of a setup's freshly drawn models (the same at every call: the draw is seeded)."""
    return linear_path(*setup.args())


@stub_first
def check_17_first_stair_path(fn: Callable[[EmbMLP, Dataset, float, int], Tensor]) -> None:
    """fn(model, data, lr, steps) -> [K, steps + 1]: the loss along plain GD on the key-only linear path."""
    cases = [Case(setup.label, setup.args(), _expected_path(setup), hidden) for setup, hidden in SETUPS]
    diagnoses = [Diagnosis(_path_is(**mistake), hint) for mistake, hint in PATH_HINTS]
    run_check("check_17_first_stair_path", untouched(fn), cases, path_problem, diagnoses)


# --- exercise 2: the first stair's onset, forecast and measured ---------------------------------------------


def first_halfway(curve: Tensor, mid: Tensor | float) -> Tensor:
    """First step (column) of ``curve`` [K, T] below ``mid`` (a number or one per model), NEVER where none: [K]."""
    below = curve < torch.as_tensor(mid, dtype=curve.dtype).reshape(-1, 1)
    return torch.where(below.any(1), below.double().argmax(1).long(), torch.tensor(NEVER))


@dataclass(frozen=True)
class Onsets:
    """The answer of one case, with what it is read from: the forecast's path and the trained loss [K, T]."""

    predicted: Tensor
    measured: Tensor
    path: Tensor
    trained: Tensor
    levels: tuple[float, ...]

    @property
    def mid(self) -> float:
        return (self.levels[0] + self.levels[1]) / 2


def _onsets(model: EmbMLP, data: Dataset, lr: float, steps: int) -> Onsets:
    levels = tuple(plateau_levels(data)[:3])
    path = linear_path(model, data, lr, steps)
    trained = train(copy.deepcopy(model), data, steps, lr=lr, record_every=1, progress=False).loss.double()
    mid = (levels[0] + levels[1]) / 2
    return Onsets(first_halfway(path, mid), first_halfway(trained, mid), path, trained, levels)


def _pair(got: Any, K: int) -> tuple[Tensor, Tensor] | str:
    """The learner's (forecast, measured) as two integer tensors [K], or what is wrong with it."""
    if isinstance(got, Changed):
        return CHANGED
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        return f"expected a pair (forecast onsets, measured onsets), got {type(got).__name__}"
    values = [as_tensor(v) for v in got]
    if any(v is None or tuple(v.shape) != (K,) for v in values):
        return f"expected two tensors of shape ({K},), one onset per model, got shapes {[None if v is None else tuple(v.shape) for v in values]}"
    if any(v.dtype.is_floating_point or v.dtype.is_complex or v.dtype == torch.bool for v in values):
        return (f"expected integer tensors (steps are whole numbers, {NEVER} where the stair never comes halfway down), "
                f"got {[str(v.dtype) for v in values]}")
    return values[0].long(), values[1].long()


def _onset_off(got: Tensor, want: Tensor, curve: Tensor, mid: float) -> int | None:
    """The first model whose onset is wrong: not the reference's, nor one step from it where the curve passes
    within NEAR of the midpoint (another arithmetic may put that step on the other side; at the last step the
    other side is NEVER)."""
    last = curve.shape[1] - 1
    for k, (g, w) in enumerate(zip(got.tolist(), want.tolist())):
        if g == w:
            continue
        if NEVER in (g, w):
            step = w if g == NEVER else g
            if step == last and abs(float(curve[k, last]) - mid) < NEAR:
                continue
            return k
        if abs(g - w) == 1 and 0 <= min(g, w) <= last and abs(float(curve[k, min(g, w)]) - mid) < NEAR:
            continue
        return k
    return None


def _onsets_problem(got: Any, expected: Onsets) -> str | None:
    pair = _pair(got, expected.predicted.numel())
    if isinstance(pair, str):
        return pair
    for name, value, want, curve in (("forecast", pair[0], expected.predicted, expected.path),
                                     ("measured", pair[1], expected.measured, expected.trained)):
        k = _onset_off(value, want, curve, expected.mid)
        if k is not None:
            return (f"model {k}: expected the {name} onset {int(want[k])}, got {int(value[k])} (the first step below "
                    f"(H0 + H1) / 2 = {expected.mid:.4f}; {NEVER} where it never gets there)")
    return None


def _onsets_are(read: Callable[[Onsets], tuple[Tensor, Tensor]]) -> Callable[[Any, Onsets, Case], bool]:
    """A diagnosis predicate: the learner's onsets are what ``read`` takes from the case's curves (not the answer)."""

    def matches(got: Any, expected: Onsets, case: Case) -> bool:
        wrong = read(expected)
        return _onsets_problem(wrong, expected) is not None and _onsets_problem(got, Onsets(*wrong, *_curves(expected))) is None

    return matches


def _curves(answer: Onsets) -> tuple:
    return answer.path, answer.trained, answer.levels


def _both(rule: Callable[[Tensor, Onsets], Tensor]) -> Callable[[Onsets], tuple[Tensor, Tensor]]:
    return lambda a: (rule(a.path, a), rule(a.trained, a))


ONSET_HINTS = [
    (_both(lambda c, a: first_halfway(c - a.levels[1], 0.01)),
     "that is where the loss reaches H1 (within 0.01 of it); the onset is where it is halfway down, below (H0 + H1) / 2"),
    (_both(lambda c, a: first_halfway(c, (c[:, 0] + a.levels[1]) / 2)),
     "halfway between the two levels, H0 and H1 (plateau_levels), not from the loss at init, which is a little above H0"),
    (_both(lambda c, a: first_halfway(c, (a.levels[1] + a.levels[2]) / 2)),
     "the first stair runs from H0 down to H1: its midpoint is (H0 + H1) / 2, not that of the next stair"),
    (_both(lambda c, a: torch.where(first_halfway(c, a.mid) >= 0, first_halfway(c, a.mid) + 1, NEVER)),
     "steps count from 0, the loss at init: the onset is the index of the first value below the midpoint, not one more"),
    (_both(lambda c, a: torch.where(first_halfway(c, a.mid) >= 0, first_halfway(c, a.mid), c.shape[1] - 1)),
     f"a stair that never comes halfway down has onset {NEVER}, not the last step"),
    (lambda a: (torch.where(a.measured >= 0, 0, a.measured), a.measured),
     "the forecast read a trained model: forecast from the weights at init first, and train a copy"),
    (lambda a: (a.measured, a.predicted), "the pair is (forecast, measured): the forecast first"),
]  # fmt: skip


@cache
def _expected_onsets(setup: Setup) -> Onsets:
    """The reference onsets of a setup's freshly drawn models (the same at every call: the draw is seeded)."""
    return _onsets(*setup.args())


@stub_first
def check_17_first_stair_onsets(fn: Callable[[EmbMLP, Dataset, float, int], tuple[Tensor, Tensor]]) -> None:
    """fn(model, data, lr, steps) -> (forecast [K], measured [K]): the first stair's onset from the path and from training."""
    cases = [Case(setup.label, setup.args(), _expected_onsets(setup), hidden) for setup, hidden in ONSET_SETUPS]
    run_check("check_17_first_stair_onsets", untouched(fn), cases, _onsets_problem,
              [Diagnosis(_onsets_are(read), hint) for read, hint in ONSET_HINTS])

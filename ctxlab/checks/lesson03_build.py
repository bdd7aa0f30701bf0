"""The build-it check of lesson 03: the learner writes the headline model and its gradient-descent loop.

It trains nothing of the learner's choosing: it calls the learner's training function at two init
scales on seeds the check picks, compares the first steps with ctxlab's own Emb-MLP and gradient
descent started from the same draws, and reads the whole curve rung by rung.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

import torch
from torch import Tensor

from ctxlab.checks.core import Case, Diagnosis, as_ints, run_check
from ctxlab.rungs import measure_rungs

# --- exercise 5: build the staircase -------------------------------------------------------------------

# The headline model on a headline-sized task: hierarchy_task(block=8, n_values=2), Emb-MLP d 32, hidden
# 128, GELU, no biases, plain full-batch gradient descent at learning rate 1 on the exact population.
BUILD = {"block": 8, "n_values": 2, "d": 32, "hidden": 128, "lr": 1.0}
EARLY = 40  # the first steps are compared with ctxlab's own model and gradient descent from the same draws
EARLY_TOL = 1e-4  # nats; float32 rounding leaves about 1e-7, the mistakes below move them by 1e-3 or more
SMALL_DWELL = {1: 100, 2: 50}  # γ = 1: steps the curve must rest on H1 and H2 (measured: 133-189 and 71-474)
MERGED_DWELL = 20  # γ = 0.5: at most a fifth of the 100 steps γ = 1 rests on H1 (measured: 0)
MAX_RISE = 0.01


@cache
def build_task():
    """The task of the build-it exercise (``hierarchy_task(block=8, n_values=2)``) and its ladder."""
    from ctxlab.tasks import hierarchy_task
    from ctxlab.theory import plateau_levels

    task = hierarchy_task(block=BUILD["block"], n_values=BUILD["n_values"])
    return task, plateau_levels(task.population)


@cache
def _reference_start(gamma: float, seed: int, steps: int, activation: str = "gelu", exponent: float | None = None,
                     optimizer: str = "gd", lr: float = BUILD["lr"]) -> Tensor:
    """Loss at steps 0..``steps`` of ctxlab's Emb-MLP from the exercise's draws (seeded generator; E, W1, W2 in
    this order), trained by ctxlab's loop. ``exponent`` rescales every weight to std fan_in^(-exponent)."""
    from ctxlab.models import make_model
    from ctxlab.train import train

    task, _ = build_task()
    model = make_model("mlp", task, d=BUILD["d"], hidden=BUILD["hidden"], gamma=gamma, seed=seed, activation=activation)
    if exponent is not None:
        with torch.no_grad():
            for weight, fan_in in ((model.embedding, BUILD["d"]), (model.w1, task.seq_len * BUILD["d"]), (model.w2, BUILD["hidden"])):
                weight.mul_(fan_in ** (gamma - exponent))
    traj = train(model, task.population, steps, optimizer=optimizer, lr=lr, record_every=1, progress=False)
    return traj.loss[0].to(torch.float64)


@dataclass(frozen=True)
class BuildRun:
    """What one call of the learner's training function must give: the reference's first steps and,
    for its γ, the rung rules (``small``: rungs present; otherwise merged)."""

    gamma: float
    seed: int
    steps: int
    start: Tensor
    small: bool


def _curve_of(got: Any) -> tuple[list[int], Tensor] | None:
    try:
        steps, loss = got
        values = as_ints(steps)
        loss = torch.as_tensor(loss.detach() if isinstance(loss, Tensor) else loss, dtype=torch.float64).flatten()
        return (values, loss) if values is not None else None
    except Exception:
        return None


def _build_problem(got: Any, run: BuildRun) -> str | None:
    curve = _curve_of(got)
    if curve is None:
        return f"expected a pair (steps, loss) of 1-d tensors (or lists), got {type(got).__name__}"
    steps, loss = curve
    n = run.steps
    if len(loss) != n + 1 or steps != list(range(n + 1)):
        return (f"for {n} steps expected steps 0, 1, ..., {n} and {n + 1} losses (step 0: before any update; "
                f"step t: after t updates), got {len(steps)} steps from {steps[:1]} to {steps[-1:]} and {len(loss)} losses")
    if not bool(torch.isfinite(loss).all()):
        return "the loss became NaN or infinite: the run diverged"
    start = run.start
    if not abs(float(loss[0]) - float(start[0])) <= EARLY_TOL:
        return (f"the loss at step 0 is {float(loss[0]):.6f}; the model of the exercise, drawn from seed {run.seed} at "
                f"γ = {run.gamma:g}, starts at {float(start[0]):.6f}")
    early = (loss[:len(start)] - start).abs()
    if not float(early.max()) <= EARLY_TOL:
        t = int((early > EARLY_TOL).nonzero()[0])
        return (f"the loss at step 0 is right, but at step {t} it is {float(loss[t]):.6f} where full-batch gradient "
                f"descent at learning rate {BUILD['lr']:g} gives {float(start[t]):.6f}")
    _, levels = build_task()
    read = measure_rungs(torch.arange(n + 1), loss, levels)
    dwell = read.dwells()
    if run.small:
        for k, least in SMALL_DWELL.items():
            if dwell[k] < least:
                return f"at γ = {run.gamma:g} the curve rests {dwell[k]} steps on H{k} (it must rest at least {least}; dwells {dwell})"
        if read.rise > MAX_RISE:
            return f"at γ = {run.gamma:g} the loss climbs back by {read.rise:.4f} nats (at most {MAX_RISE} allowed)"
        if read.ends_on != len(levels) - 1:
            return f"at γ = {run.gamma:g} the curve should end on H{len(levels) - 1} = {levels[-1]:.4f}; it ends at {read.final:.4f}"
    elif dwell[1] > MERGED_DWELL:
        return f"at γ = {run.gamma:g} the curve rests {dwell[1]} steps on H1; standard init should merge the stairs (at most {MERGED_DWELL})"
    return None


def _build_cases() -> list[Case]:
    cases = []
    for gamma, seed, steps, hidden in ((0.5, 5, 300, False), (1.0, 5, 1500, False), (0.5, 8, 100, True), (1.0, 8, 1500, True)):
        start = _reference_start(gamma, seed, min(EARLY, steps))
        label = f"γ = {gamma:g}, seed {seed}, {steps} steps"
        cases.append(Case(label, (gamma, seed, steps), BuildRun(gamma, seed, steps, start, gamma >= 1), hidden))
    return cases


def _starts_at(variant: Callable[[BuildRun], float]) -> Callable[[Any, Any, Case], bool]:
    """A diagnosis predicate: the learner's step-0 loss is the one a mistaken model would start from."""

    def matches(got: Any, run: BuildRun, case: Case) -> bool:
        curve = _curve_of(got)
        want = variant(run)
        return (curve is not None and len(curve[1]) > 0 and abs(want - float(run.start[0])) > EARLY_TOL
                and abs(float(curve[1][0]) - want) <= EARLY_TOL)

    return matches


def _off_by_one_length(got: Any, run: BuildRun, case: Case) -> bool:
    """n losses for n steps, or steps counted from 1."""
    curve = _curve_of(got)
    return curve is not None and (len(curve[1]) == run.steps or curve[0][:1] == [1])


def _adam_like(got: Any, run: BuildRun, case: Case) -> bool:
    curve = _curve_of(got)
    if curve is None or len(curve[1]) < 6:
        return False
    for lr in (1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 0.1, 0.3, 1.0):
        adam = _reference_start(run.gamma, run.seed, 5, optimizer="adam", lr=lr)
        if float((curve[1][:6] - adam).abs().max()) <= EARLY_TOL:
            return True
    return False


def _right_start_wrong_steps(got: Any, run: BuildRun, case: Case) -> bool:
    curve = _curve_of(got)
    if curve is None or len(curve[1]) != run.steps + 1 or abs(float(curve[1][0]) - float(run.start[0])) > EARLY_TOL:
        return False
    return float((curve[1][:len(run.start)] - run.start).abs().max()) > EARLY_TOL


def check_03_build_staircase(fn: Callable[[float, int, int], tuple]) -> None:
    """fn(gamma, seed, steps) -> (steps 0..n, population loss at each): the headline model trained by plain GD."""
    d, hidden = BUILD["d"], BUILD["hidden"]
    fan_ins = f"fan-ins d = {d}, 3d = {3 * d}, hidden = {hidden}"
    diagnoses = [
        Diagnosis(_off_by_one_length, "off by one: record the loss before each update and once more after the last one, so that n steps give n + 1 losses at steps 0..n"),
        Diagnosis(_starts_at(lambda run: float(run.start[1])), "off by one: your loss at step 0 is the loss after the first update; record the loss before you update"),
        Diagnosis(_starts_at(lambda run: float(_reference_start(run.gamma, run.seed, 0, exponent=0.0)[0])), f"your weights are N(0, 1): scale each draw by fan_in^(-γ) ({fan_ins})"),
        Diagnosis(_starts_at(lambda run: float(_reference_start(run.gamma, run.seed, 0, exponent=2 * run.gamma)[0])), "N(0, fan_in^(-2γ)) names the variance: the standard deviation, the factor on torch.randn, is fan_in^(-γ)"),
        Diagnosis(_starts_at(lambda run: float(_reference_start(run.gamma, run.seed, 0, exponent=run.gamma ** 2)[0])), "the scale is fan_in^(-γ), not fan_in^(-γ²)"),
        Diagnosis(_starts_at(lambda run: float(_reference_start(run.gamma, run.seed, 0, activation="relu")[0])), "the hidden layer uses GELU (torch.nn.functional.gelu), not ReLU"),
        Diagnosis(_adam_like, "those are Adam's steps: the exercise asks for plain gradient descent, p <- p - lr * grad with lr = 1"),
        Diagnosis(_right_start_wrong_steps, "your start is right but the updates are not plain full-batch gradient descent on the model of the exercise: no biases (a bias learns even when it starts at 0), the gradient of the whole population's loss every step (no minibatches), p <- p - 1.0 * grad (no Adam, no momentum)"),
        Diagnosis(lambda g, run, c: _curve_of(g) is not None and len(_curve_of(g)[1]) == run.steps + 1
                  and abs(float(_curve_of(g)[1][0]) - float(run.start[0])) > EARLY_TOL, f"your step-0 loss is not that of the model of the exercise: draw E [V, d], W1 [3d, hidden], W2 [hidden, 2] in this order with torch.randn(..., generator=torch.Generator().manual_seed(seed)), multiply each by fan_in^(-γ) ({fan_ins}), no biases, GELU; and return the loss your training loop recorded, not a curve made some other way"),
    ]  # fmt: skip
    run_check("check_03_build_staircase", fn, _build_cases(), _build_problem, diagnoses)

"""The build-it checks of lesson 07: the force G on A = W_Q W_K^T (E3), and when it grows against when attention moves.

The learner writes E3 at a model's current weights, then trains the lesson's model with it as a probe and reads
two steps: when ||G|| has grown by a factor over its start, and when the key's attention leaves 1/L. The first
check compares G with the library's on pointer tasks of other sizes, widths, heads, seeds, weights, a trained
model and float64. The second compares both steps with the check's own runs and then holds the lesson's order
there: at small init the force grows long before attention moves, and frozen attention never moves at all.
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

from ctxlab.attention_exp import POINTER_TASK, attention_model
from ctxlab.checks.core import HARD_LABELS_HINT, Case, Diagnosis, as_tensor, hard_labels, reweighted, run_check
from ctxlab.checks.lesson07 import leaves_uniform
from ctxlab.dataset import Dataset
from ctxlab.tasks import Task, partner_task, pointer_task
from ctxlab.theory import SLOPE_AT_ZERO, qk_force, target_attention
from ctxlab.train import cross_entropy, recorded_steps, train

FORCE_RTOL = 1e-4  # |G - G_ref| within this share of the largest |G_ref| entry, model by model (G is ~1e-7 at init)
NEAR = 1e-4  # a record this close to a threshold (relative) may fall on either side of it in another arithmetic
EARLIER = 4  # at gamma = 1 attention leaves at least this many times later than ||G|| reaches the factor (measured: 10-12)


# --- exercise 3a: the force G at the current weights --------------------------------------------------------


def force_variant(model, data: Dataset, *, slope: bool = True, per_length: bool = True, head_scale: bool = True,
                  centred: bool = True, query: str = "last", weighted: bool = True, with_key: bool = True,
                  w_v_transposed: bool = False, prediction: str = "uniform", sign: float = 1.0,
                  transposed: bool = False) -> Tensor:
    """E3 written out, with one ingredient changed where a keyword says so: what a typical mistake computes.

    With the defaults it is -1/(L sqrt(d_head)) sum_n w_n sum_j <g_n, (h_nj - h_bar_n) W_V> h_nL^T h_nj,
    g_n = sigma'(0) (u - y_n) (W1 W2)^T: the library's ``qk_force``, [K, d, d] in float64."""
    E, P, W_v = (t.detach().double().cpu() for t in (model.embedding, model.position, model.w_v))
    M = model.w1.detach().double().cpu() @ model.w2.detach().double().cpu()
    x, L = data.x.cpu(), model.seq_len
    h = E[:, x] + P[:, None]  # [K, N, L, d]
    if prediction == "uniform":
        p = torch.full((model.n_labels,), 1.0 / model.n_labels, dtype=torch.float64)
    else:  # the model's own current prediction
        with torch.no_grad():
            p = torch.softmax(model(data.x).double().cpu(), -1)
    w = data.weights.double().cpu() if weighted else torch.full((data.n,), 1.0 / data.n, dtype=torch.float64)
    g = (SLOPE_AT_ZERO[model.activation] if slope else 1.0) * (p - data.targets().double().cpu()) @ M.transpose(-1, -2)
    values = (h - h.mean(2, keepdim=True) if centred else h) @ (W_v.transpose(-1, -2) if w_v_transposed else W_v)[:, None]
    c = torch.einsum("knd,knld->knl", g, values)
    if not with_key:
        c = c * (torch.arange(L) < L - 1)
    q = h[:, :, -1] if query == "last" else h.mean(2)
    G = -sign * torch.einsum("n,knd,knl,knle->kde", w, q, c, h)
    G = G / ((L if per_length else 1) * math.sqrt(model.d_head if head_scale else model.d))
    return G.transpose(-1, -2) if transposed else G


def _model(task: Task, **kwargs):
    return attention_model(task, **{"gamma": 1.0, "seed": 0, **kwargs})


@cache
def _trained_model():
    """The lesson's model after 100 GD steps at lr 1: the loss near H(Y | key), E and M grown, p no longer u."""
    task = pointer_task(**POINTER_TASK)
    model = _model(task, seed=[8, 9])
    train(model, task.population, 100, lr=1.0, record_every=100, progress=False)
    return model


def _force_cases() -> list[Case]:
    lesson, five, copies, partner = pointer_task(**POINTER_TASK), pointer_task(n_ctx=5), pointer_task(n_ctx=2, key_copies=2), partner_task()
    wide = pointer_task(n_ctx=3, n_values=3, tokens_per_value=2, mix=(0.4, 0.6))
    specs = [
        ("the lesson's task and model, gamma 1, seeds 0-1", _model(lesson, seed=[0, 1]), lesson.population, False),
        ("5 context positions, gamma 0.75, d 8", _model(five, gamma=0.75, seed=4, d=8, hidden=16), five.population, True),
        ("3 attributes, 2 tokens each, d 12, d_head 4", _model(wide, seed=[2, 3], d=12, d_head=4, hidden=24), wide.population, True),
        ("two copies of each key, random row weights", _model(copies, seed=5), reweighted(copies.population, 7), True),
        ("float64 weights, gamma 1.25, three seeds", _model(lesson, gamma=1.25, seed=[5, 6, 7]).double(), lesson.population, True),
        ("no residual, gamma 0.5 (the prediction is not u)", _model(lesson, gamma=0.5, seed=11, residual=False), lesson.population, True),
        ("after 100 GD steps (E, W_V and M have grown)", copy.deepcopy(_trained_model()), lesson.population, True),
        ("the partner task, sampled rows (one label each)", _model(partner, seed=12, d=8, hidden=16), partner.sample(300, seed=3), True),
    ]  # fmt: skip
    return [Case(label, (model, data), qk_force(model, data).double(), hidden) for label, model, data, hidden in specs]


def _force_problem(got: Any, expected: Tensor) -> str | None:
    value = as_tensor(got)
    if value is None or tuple(value.shape) != tuple(expected.shape):
        shape = None if value is None else tuple(value.shape)
        return f"expected a tensor [K, d, d] = {tuple(expected.shape)} (one d x d force per model), got {shape or type(got).__name__}"
    if not value.is_floating_point() or not bool(torch.isfinite(value).all()):
        return "expected finite floating-point values"
    scale = expected.abs().amax((-2, -1))  # [K]
    off = (value.double() - expected).abs().amax((-2, -1)) / scale
    if bool((off > FORCE_RTOL).any()):
        k = int(off.argmax())
        return (f"model {k}: your G differs from the reference by {float(off[k]):.2g} of its largest entry "
                f"({float(scale[k]):.3g}); tolerance {FORCE_RTOL:g}")
    return None


def _computes(**change) -> Callable[[Any, Tensor, Case], bool]:
    """A diagnosis predicate: the learner's G is the one ``change`` gives, and that one is not the answer."""

    def matches(got: Any, expected: Tensor, case: Case) -> bool:
        wrong = force_variant(*case.args, **change)
        return _force_problem(wrong, expected) is not None and _force_problem(got, wrong) is None

    return matches


def exact_force(model, data: Dataset) -> Tensor:
    """-dR/dA by autograd, for a head as wide as the model (W_K square): -grad(W_Q) W_K^-1, [K, d, d] in float64."""
    model = copy.deepcopy(model)
    model.zero_grad(set_to_none=True)
    cross_entropy(model(data.x), data).sum().backward()
    return -model.w_q.grad.double() @ torch.linalg.inv(model.w_k.detach().double())


def _exact(got: Any, expected: Tensor, case: Case) -> bool:
    model, data = case.args
    if model.d_head != model.d:
        return False
    wrong = exact_force(model, data)
    return _force_problem(wrong, expected) is not None and _force_problem(got, wrong) is None


def _hard_labels(got: Any, expected: Tensor, case: Case) -> bool:
    model, data = case.args
    wrong = force_variant(model, hard_labels(data))
    return _force_problem(wrong, expected) is not None and _force_problem(got, wrong) is None


def check_07_qk_force(fn: Callable[[Any, Dataset], Tensor]) -> None:
    """fn(model, data) -> [K, d, d]: E3, the force -dR/dA on A = W_Q W_K^T at uniform attention and p = u."""
    diagnoses = [
        Diagnosis(_computes(sign=-1.0), "that is dR/dA, the gradient: G is the force -dR/dA (g = sigma'(0)(p - y) M^T with p = u, and a minus sign in front)"),
        Diagnosis(_computes(slope=False), "a factor 2 too large: the GELU head is linear at small init with slope sigma'(0) = 1/2, and g carries it"),
        Diagnosis(_computes(per_length=False), "a factor L too large: at uniform attention every weight is 1/L, so each score moves the output by (1/L)(h_j - h_bar) W_V"),
        Diagnosis(_computes(head_scale=False), "scores are divided by sqrt(d_head) (model.d_head), not sqrt(d): here the head is narrower than the width"),
        Diagnosis(_computes(transposed=True), "you have G transposed (the query and key roles swapped): s_Lj = h_L A h_j^T, so the row index of G comes from the query h_L and the column index from the key h_j"),
        Diagnosis(_computes(centred=False), "centre the values: the softmax's Jacobian at uniform attention gives (h_j - h_bar) W_V, the value minus the mean value"),
        Diagnosis(_computes(query="mean"), "only the last position is read, so only the last query counts: the query is h_L (the key's own h), not the mean of the h's"),
        Diagnosis(_computes(with_key=False), "the sum over j runs over all L positions, the key's own position included"),
        Diagnosis(_computes(w_v_transposed=True), "the value of position j is the row vector h_j W_V: multiply by model.w_v, not by its transpose"),
        Diagnosis(_computes(weighted=False), "the expectation is over the population: weight each row by data.weights (here they are not uniform)"),
        Diagnosis(_computes(prediction="model"), "leading order: take p = u = 1/C, the prediction of a model at small init (as in E2 and E3), not the model's current softmax"),
        Diagnosis(_hard_labels, HARD_LABELS_HINT),
        Diagnosis(_exact, "that is the exact -dR/dA (autograd): E3 is its leading order, at attention exactly 1/L and p = u, which is what the exercise asks for"),
    ]  # fmt: skip
    run_check("check_07_qk_force", fn, _force_cases(), _force_problem, diagnoses)


# --- exercise 3b: when the force grows, and when attention leaves uniform -------------------------------------


def force_growth_step(steps: Tensor, norms: Tensor, factor: float) -> Tensor:
    """First recorded step where norms [K, T] reach ``factor`` times their value at the first record; -1 if never."""
    reached = norms >= factor * norms[:, :1]
    first = torch.as_tensor(steps)[reached.double().argmax(-1)]
    return torch.where(reached.any(-1), first, torch.full_like(first, -1))


@dataclass(frozen=True)
class ForceRun:
    """One case of exercise 3b: a pointer task, an ensemble (gamma, seed, frozen attention per model) and the run's settings."""

    label: str
    task_spec: tuple  # pointer_task's keyword arguments, as (name, value) pairs
    gammas: tuple[float, ...]
    seeds: tuple[int, ...]
    frozen: tuple[bool, ...]
    lr: float | tuple[float, ...]  # one rate, or one per model
    steps: int
    every: int
    factor: float
    tol: float
    holds_order: bool = False  # the run on which the lesson's order is checked

    def task(self) -> Task:
        return _pointer(self.task_spec)

    def model(self):
        return attention_model(self.task(), list(self.gammas), list(self.seeds), list(self.frozen))

    def rates(self) -> float | list[float]:
        return list(self.lr) if isinstance(self.lr, tuple) else self.lr

    def grid(self) -> Tensor:
        return torch.tensor(recorded_steps(self.steps, self.every, None))


@cache
def _pointer(spec: tuple) -> Task:
    return pointer_task(**dict(spec))


@cache
def _curves(run: ForceRun) -> dict[str, Tensor]:
    """||G||, the key's attention to its target and ||W_Q W_K^T|| at the case's recorded steps: [K, T] each."""
    task = run.task()
    probes = {"force": lambda m: torch.linalg.matrix_norm(qk_force(m, task.population).double()),
              "attention": target_attention(task), "qk": lambda m: m.qk_norm()}
    out = train(run.model(), task.population, run.steps, lr=run.rates(), record_every=run.every, probes=probes, progress=False)
    return {name: out.extras[name].double() for name in probes}


def read_steps(run: ForceRun, *, factor: float | None = None, tol: float | None = None, force: str = "force",
               seq_len: float | None = None) -> tuple[Tensor, Tensor]:
    """(force step, attention step) [K] each, read off the run's recorded curves; a keyword changes one setting."""
    curves, grid = _curves(run), run.grid()
    return (force_growth_step(grid, curves[force], run.factor if factor is None else factor),
            leaves_uniform(grid, curves["attention"], run.task().seq_len if seq_len is None else seq_len,
                           run.tol if tol is None else tol))


def _runs() -> list[tuple[ForceRun, bool]]:
    lesson = tuple(sorted(POINTER_TASK.items()))
    short = tuple(sorted({"n_ctx": 2, "n_values": 2, "mix": (0.3, 0.7)}.items()))
    return [
        (ForceRun("the lesson's task: gamma 1 seeds 0-2 at lr 0.8, seed 0's twin with attention frozen, gamma 0.5 seed 3 at lr 0.4",
                  lesson, (1.0, 1.0, 1.0, 1.0, 0.5), (0, 1, 2, 0, 3), (False, False, False, True, False),
                  lr=(0.8, 0.8, 0.8, 0.8, 0.4), steps=1100, every=10, factor=100.0, tol=0.02, holds_order=True), False),
        (ForceRun("2 context positions (L = 3), gamma 1 and 0.75, lr 0.8, 300 steps recorded every 7, factor 2, tol 0.05",
                  short, (1.0, 0.75, 1.0), (4, 5, 6), (False, False, False), lr=0.8, steps=300, every=7, factor=2.0, tol=0.05), True),
    ]  # fmt: skip


def _pair(got: Any, K: int) -> tuple[Tensor, Tensor] | str:
    """The learner's answer as two integer tensors [K], or what is wrong with its form."""
    parts = tuple(got) if isinstance(got, (tuple, list)) else ()
    tensors = [as_tensor(p) for p in parts]
    if len(parts) != 2 or any(t is None or tuple(t.shape) != (K,) for t in tensors):
        return (f"expected a pair (force_step, attention_step) of tensors [K] = ({K},), got "
                f"{[None if t is None else tuple(t.shape) for t in tensors] or type(got).__name__}")
    if any(t.is_floating_point() and not bool((t == t.round()).all()) for t in tensors):
        return f"expected whole steps, got {[t.tolist() for t in tensors]}"
    return tensors[0].long(), tensors[1].long()


def _mismatch(got: Any, run: ForceRun) -> str | None:
    """None when the learner's steps are the reference's (a record within NEAR of a threshold may go either way)."""
    want = read_steps(run)
    answer = _pair(got, len(want[0]))
    if isinstance(answer, str):
        return answer
    near = [read_steps(run, factor=run.factor * (1 + s * NEAR), tol=run.tol * (1 + s * NEAR)) for s in (-1, 1)]
    for i, name in enumerate(("force_step (||G|| reaches factor x its start)", "attention_step (leaves 1/L +- tol)")):
        fine = (answer[i] == want[i]) | (answer[i] == near[0][i]) | (answer[i] == near[1][i])
        if not bool(fine.all()):
            k = int((~fine).nonzero()[0])
            return f"model {k}: {name} expected {int(want[i][k])}, got {int(answer[i][k])} (yours {answer[i].tolist()}, expected {want[i].tolist()})"
    return None


def _steps_problem(got: Any, run: ForceRun) -> str | None:
    """The learner's steps must be the reference's; on the lesson run they must also show the lesson's order."""
    problem = _mismatch(got, run)
    if problem is None and run.holds_order:
        problem = _order_problem(run, *_pair(got, len(run.gammas)))
    return problem


def _reads(variant: Callable[[ForceRun], tuple[Tensor, Tensor]]) -> Callable[[Any, ForceRun, Case], bool]:
    """A diagnosis predicate: the learner's pair is the one ``variant`` reads, and that pair is not the answer."""

    def matches(got: Any, run: ForceRun, case: Case) -> bool:
        wrong, answer = variant(run), _pair(got, len(run.gammas))
        return (not isinstance(answer, str) and any(not torch.equal(w, r) for w, r in zip(wrong, read_steps(run)))
                and all(torch.equal(a, w.long()) for a, w in zip(answer, wrong)))

    return matches


def _as_index(run: ForceRun) -> tuple[Tensor, Tensor]:
    where = {int(s): i for i, s in enumerate(run.grid())}
    return tuple(torch.tensor([where.get(int(s), -1) for s in steps]) for steps in read_steps(run))


def _never_as(value: Callable[[ForceRun], int]) -> Callable[[ForceRun], tuple[Tensor, Tensor]]:
    return lambda run: tuple(torch.where(s < 0, torch.tensor(value(run)), s) for s in read_steps(run))


def _swapped(run: ForceRun) -> tuple[Tensor, Tensor]:
    return read_steps(run)[::-1]


def _force_steps_diagnoses() -> list[Diagnosis]:
    return [
        Diagnosis(_reads(_never_as(lambda run: 0)), "a model whose ||G|| never reaches the factor (or whose attention never leaves) gets -1, not 0: argmax of an all-False row is 0, so check that the row has a True"),
        Diagnosis(_reads(_never_as(lambda run: run.steps)), "a model that never gets there gets -1, not the last step"),
        Diagnosis(_reads(_as_index), "those are positions in the list of records: return the training steps themselves (the trajectory's steps at those positions)"),
        Diagnosis(_reads(_swapped), "return the pair in the order (force_step, attention_step)"),
        Diagnosis(_reads(lambda run: read_steps(run, force="qk")), "that is how ||W_Q W_K^T|| grows, A itself, which moves only when attention does: record the norm of the force G of exercise 3a, computed at every recorded step"),
        Diagnosis(_reads(lambda run: read_steps(run, factor=100.0)), "use the factor you are given (100 is only the lesson run's)"),
        Diagnosis(_reads(lambda run: read_steps(run, factor=run.factor + 1)), "||G|| itself must reach factor x its value at step 0: you waited for its increase ||G|| - ||G_0|| to reach that, one factor more"),
        Diagnosis(_reads(lambda run: read_steps(run, tol=0.02)), "use the tol you are given for the attention band (0.02 is only the lesson run's)"),
        Diagnosis(_reads(lambda run: read_steps(run, seq_len=4)), "uniform attention is 1/L with L = task.seq_len: this task is not lesson 07's (L = 4)"),
        Diagnosis(lambda g, run, c: not isinstance(_pair(g, len(run.gammas)), str) and _mismatch(g, run) is not None,
                  "those are not the steps of the model you were given, trained in place by full-batch GD at lr for `steps` steps and recorded every `every` steps: train that model itself, record ||G|| (Frobenius, per model) and the key's attention to its target as probes, and read both curves at the recorded steps"),
    ]  # fmt: skip


def _order_problem(run: ForceRun, force_step: Tensor, attention_step: Tensor) -> str | None:
    """What contradicts the lesson's order on the check's lesson run; None when it holds with the margins."""
    for k, (gamma, frozen) in enumerate(zip(run.gammas, run.frozen)):
        f, a = int(force_step[k]), int(attention_step[k])
        if frozen and (f < 0 or a >= 0):
            return f"model {k} (attention frozen at 1/L): its force should grow (step {f}) while its attention never leaves (step {a})"
        if not frozen and gamma >= 1 and (f < 0 or a < EARLIER * f):
            return (f"model {k} (gamma {gamma:g}): ||G|| should reach {run.factor:g}x its start at least {EARLIER} times earlier "
                    f"than attention leaves 1/L +- {run.tol:g}; got steps {f} and {a}")
        if not frozen and gamma < 1 and (a < 0 or 0 <= f <= a):
            return f"model {k} (gamma {gamma:g}): attention should leave before ||G|| has grown {run.factor:g}-fold; got steps {f} and {a}"
    return None


def check_07_force_before_attention(fn: Callable[..., tuple[Tensor, Tensor]]) -> None:
    """fn(model, task, steps, lr, every, factor, tol) -> (force_step, attention_step), each [K]: train the model in place by
    full-batch GD and read when ||G|| first reaches factor x its start and when the key's attention first leaves 1/L +- tol
    (-1: never). Compared with the check's own runs; on the lesson's run the force must grow first, by a margin."""
    cases = [Case(run.label, (run.model(), run.task(), run.steps, run.rates(), run.every, run.factor, run.tol), run, hidden)
             for run, hidden in _runs()]
    run_check("check_07_force_before_attention", fn, cases, _steps_problem, _force_steps_diagnoses())

"""Checks for lesson 06's build exercise: the next-stair equation built from a plateau model's own residual,
then held against autograd.

The cases are models the check trains itself (short runs of small hierarchy tasks, cached within a kernel)
and one untrained model at a large init, where GELU's slope differs from 1/2 everywhere. Every case hands
the learner a fresh copy, so nothing a learner's function does to a model leaks into another case.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

import torch
from torch import Tensor

from ctxlab.checks.core import HARD_LABELS_HINT, Case, Diagnosis, as_tensor, hard_labels, reweighted, run_check
from ctxlab.dataset import Dataset
from ctxlab.models import EmbMLP, make_model
from ctxlab.tasks import hierarchy_task
from ctxlab.theory import (CURVATURE_AT_ZERO, conditional_rows, embedding_velocity, gelu_slope, hidden_state,
                           model_weights, next_stair_velocity)
from ctxlab.train import train

TOLERANCE = 1e-4  # velocities: of their largest entry; cosines: absolute. float32 arithmetic errs by ~1e-6
AGREE = 0.99  # on a plateau every token the equation moves must reach this cosine (the reference: > 0.9999)


@dataclass(frozen=True)
class Run:
    """A hierarchy task (its keyword arguments as pairs) and an Emb-MLP ensemble trained on it by plain GD at lr 1
    for ``steps`` steps, from its init or, with ``after``, on from the end of another run."""

    label: str
    task: tuple
    d: int
    hidden: int
    gammas: tuple
    seeds: tuple
    steps: int
    after: Run | None = None

    def data(self) -> Dataset:
        return hierarchy_task(**dict(self.task)).population

    def model(self) -> EmbMLP:
        """A fresh copy of the trained ensemble."""
        return copy.deepcopy(_trained(self))


@cache
def _trained(run: Run) -> EmbMLP:
    if run.after is not None:
        model = run.after.model()
    else:
        model = make_model("mlp", hierarchy_task(**dict(run.task)), gamma=list(run.gammas), seed=list(run.seeds),
                           d=run.d, hidden=run.hidden)
    if run.steps:
        train(model, run.data(), run.steps, lr=1.0, record_every=run.steps, progress=False)
    return model


Z3_PLATEAU = Run("Z3, 6 tokens per position, d 32, h 64, γ 1, on the H1 plateau (260 steps)",
                 (("block", 6),), 32, 64, (1.0, 1.0), (0, 1), 260)
Z3_PAST = Run("the same run at step 450, past its plateau: the anchor-1 tokens have grown",
              (("block", 6),), 32, 64, (1.0, 1.0), (0, 1), 190, after=Z3_PLATEAU)
BINARY_PLATEAU = Run("binary attributes, 4 tokens per position, d 32, h 64, γ 1, on the H2 plateau (350 steps)",
                     (("block", 4), ("n_values", 2)), 32, 64, (1.0, 1.0), (0, 1), 350)
MIXED = Run("the default task (9 tokens per position), d 16, h 40, γ 0.75, 1 and 1.5 after 200 steps",
            (), 16, 40, (0.75, 1.0, 1.5), (6, 7, 8), 200)
LARGE_INIT = Run("binary, 2 tokens per position, 4 positions, untrained at γ 0.25 (GELU's slope far from 1/2), d 20, h 30",
                 (("block", 2), ("n_values", 2), ("mix", (0.4, 0.3, 0.2, 0.1))), 20, 30, (0.25, 0.25), (9, 10), 0)


@dataclass(frozen=True)
class Expected:
    """The answer of one case and what the diagnoses recompute variants from: a pristine copy of the model."""

    value: Tensor
    model: EmbMLP
    data: Dataset
    position: int
    tokens: tuple = ()
    plateau: bool = False


# --- part (a): the predicted velocity ---------------------------------------------------------------


def velocity_variant(model: EmbMLP, data: Dataset, position: int, *, slope: str = "exact", residual: str = "model",
                     weights: str = "population", block: int | None = None, context: str = "before") -> Tensor:
    """The predicted velocity [K, V, d] with one ingredient changed, as a typical mistake computes it."""
    E, W1, W2 = model_weights(model)
    if residual == "model":
        with torch.no_grad():
            r = data.targets().double()[None] - torch.softmax(model(data.x), dim=-1).double()
    else:
        before = range(position) if residual == "data" else []
        r = (conditional_rows(data, range(position + 1)) - conditional_rows(data, before))[None]
    seen = {"before": range(position), "through": range(position + 1), "full": range(data.seq_len)}[context]
    u = hidden_state(E, W1, data.x, seen)
    gate = {"exact": gelu_slope(u), "half": torch.full_like(u, 0.5), "leading": CURVATURE_AT_ZERO * u,
            "tanh": torch.ops.aten.gelu_backward(torch.ones_like(u), u, approximate="tanh")}[slope]
    w = {"population": data.weights.double(), "none": torch.ones(data.n, dtype=torch.float64),
         "uniform": torch.full((data.n,), 1.0 / data.n, dtype=torch.float64)}[weights]
    per_row = gate * (r @ W2.transpose(1, 2)) * w[None, :, None]
    M = torch.zeros(E.shape[0], data.vocab_size, W2.shape[1], dtype=torch.float64).index_add_(1, data.x[:, position], per_row)
    return M @ W1[:, position if block is None else block].transpose(1, 2)


def _velocity_problem(got: Any, want: Expected) -> str | None:
    value, expected = as_tensor(got), want.value
    if value is None or tuple(value.shape) != tuple(expected.shape):
        shape = None if value is None else tuple(value.shape)
        return f"expected a tensor [K, V, d] = {tuple(expected.shape)}, got {shape or type(got).__name__}"
    if not value.is_floating_point():
        return f"expected real numbers, got dtype {value.dtype}"
    scale = float(expected.abs().max())
    diff = (value.double() - expected).abs().nan_to_num(float("inf"))
    if float(diff.max()) > TOLERANCE * scale:
        k, t, j = (int(i) for i in torch.unravel_index(diff.argmax(), diff.shape))
        return (f"model {k}, token {t}, coordinate {j}: expected {float(expected[k, t, j]):.6f}, got "
                f"{float(value[k, t, j]):.6f} (tolerance {TOLERANCE:g} of the largest entry, {scale:.3g})")
    return None


def _is(variant: Callable[[Expected], Tensor]) -> Callable[[Any, Expected, Case], bool]:
    """A diagnosis predicate: the learner's answer is ``variant``'s (and that is not the answer)."""

    def matches(got: Any, want: Expected, case: Case) -> bool:
        wrong = Expected(variant(want), want.model, want.data, want.position)
        return _velocity_problem(wrong.value, want) is not None and _velocity_problem(got, wrong) is None

    return matches


def _varies(**change) -> Callable[[Any, Expected, Case], bool]:
    return _is(lambda w: velocity_variant(w.model, w.data, w.position, **change))


def _other_block(got: Any, want: Expected, case: Case) -> bool:
    return any(_is(lambda w, b=b: velocity_variant(w.model, w.data, w.position, block=b))(got, want, case)
               for b in range(want.data.seq_len) if b != want.position)


def _drive_shape(got: Any, want: Expected, case: Case) -> bool:
    value = as_tensor(got)
    K, V, _ = want.value.shape
    return value is not None and tuple(value.shape) == (K, V, want.model.hidden)


SHAPES_HINT = ("the shapes do not fit: E is [K, V, d], W1 of one position [K, d, h], W2 [K, h, C] and the residual "
               "[K, N, C]; reading the residual out through W2 multiplies by W2 transposed, and the velocity is "
               "M(t) times W1 of the position transposed")


def _explaining_shapes(fn: Callable) -> Callable:
    """``fn``, with a shape error raised inside it explained: the transposes are the usual cause."""

    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except RuntimeError as err:
            text = str(err).splitlines()[0] if str(err) else ""
            if "shape" in text or "size" in text:
                raise RuntimeError(f"{text}: {SHAPES_HINT}") from err
            raise

    return wrapped


def _velocity_cases() -> list[Case]:
    specs = [
        (Z3_PLATEAU, None, 1, False),
        (BINARY_PLATEAU, None, 2, True),
        (Z3_PLATEAU, "reweighted", 1, True),
        (Z3_PLATEAU, "sampled", 1, True),
        (MIXED, None, 1, True),
        (MIXED, None, 2, True),
        (LARGE_INIT, "float64", 3, True),
        (BINARY_PLATEAU, None, 1, True),
    ]  # fmt: skip
    cases = []
    for run, change, position, hidden in specs:
        data, model = run.data(), run.model()
        if change == "reweighted":
            data = reweighted(data, 11)
        elif change == "sampled":
            data = hierarchy_task(**dict(run.task)).sample(400, seed=12)
        elif change == "float64":
            model = model.double()
        label = f"{run.label}{f', {change}' if change else ''}, position {position}"
        want = Expected(next_stair_velocity(model, data, position), copy.deepcopy(model), data, position)
        cases.append(Case(label, (model, data, position), want, hidden))
    return cases


def check_06_stair_velocity(fn: Callable[[EmbMLP, Dataset, int], Tensor]) -> None:
    """fn(model, data, position) -> [K, V, d]: M(t) W1_position^T, with M(t) the sum over the rows whose token at
    ``position`` is t of w(x) σ'(u_c(x)) ⊙ W2 (e_y - p(x)), u_c the hidden state of the positions before."""
    diagnoses = [
        Diagnosis(_is(lambda w: -w.value), "sign flipped: the velocity is -dLoss/dE, the residual e_y - p(x) (target minus prediction)"),
        Diagnosis(_varies(slope="half"), "that uses σ'(0) = 1/2 for every row: on the plateau the context's hidden state u_c has grown, so take GELU's slope at u_c (with a constant slope the drive cancels, since the order-1 moments match)"),
        Diagnosis(_varies(slope="leading"), "that is the lesson's leading-order form σ''(0) u_c: the exercise asks for GELU's slope itself, σ'(u_c) = Φ(u_c) + u_c φ(u_c)"),
        Diagnosis(_varies(slope="tanh"), "that is the slope of the tanh approximation of GELU: the model uses the exact (erf) GELU, whose slope is Φ(u) + u φ(u) with the normal CDF Φ and density φ"),
        Diagnosis(_varies(residual="marginal"), "that residual is the label's, P(y | c, t) - P(y): use the model's own residual e_y - p(x), from its predictions"),
        Diagnosis(_varies(residual="data"), "that residual is the data's, P(y | c, t) - P(y | c) (the order-1 optimum's): use the model's own residual e_y - p(x), from its predictions"),
        Diagnosis(_varies(weights="none"), "weight each row by data.weights (its population probability): without weights the sum is N times too large"),
        Diagnosis(_varies(weights="uniform"), "weight each row by data.weights (its population probability), not 1/N"),
        Diagnosis(lambda g, e, c: _is(lambda w: velocity_variant(w.model, hard_labels(w.data), w.position))(g, e, c), HARD_LABELS_HINT),
        Diagnosis(_other_block, "that velocity goes out through W1 of another position: a token at `position` enters the hidden layer through W1's block of that position, rows position·d to position·d + d - 1"),
        Diagnosis(lambda g, e, c: _varies(context="through")(g, e, c) or _varies(context="full")(g, e, c),
                  "σ' is taken at u_c, the hidden state of the context: the positions before `position` only, without the token at `position` and those after it (with all of them, σ'(u(x)) gives autograd's exact velocity, which the equation approximates)"),
        Diagnosis(_drive_shape, "that is M(t) [K, V, h]: the velocity of E_t is M(t) times W1 of the position transposed, [K, V, d]"),
    ]  # fmt: skip
    run_check("check_06_stair_velocity", _explaining_shapes(fn) if callable(fn) else fn, _velocity_cases(),
              _velocity_problem, diagnoses)


# --- part (b): against autograd, token by token -----------------------------------------------------


def token_cosines(predicted: Tensor, exact: Tensor, tokens) -> Tensor:
    """Cosine over the d coordinates of each listed token's velocity, per model: [K, len(tokens)]."""
    a, b = predicted.double()[:, list(tokens)], exact.double()[:, list(tokens)]
    return (a * b).sum(-1) / (a.norm(dim=-1) * b.norm(dim=-1)).clamp_min(1e-300)


def velocity_cosines_reference(model: EmbMLP, data: Dataset, position: int, tokens) -> Tensor:
    """cosine(predicted velocity, autograd's -dLoss/dE) per model and token of ``tokens``: [K, len(tokens)]."""
    with torch.enable_grad():
        exact = embedding_velocity(model, data)
    return token_cosines(next_stair_velocity(model, data, position), exact, tokens)


def _cosines_variant(want: Expected, *, data: Dataset | None = None, tokens=None, sign: float = 1.0) -> Tensor:
    """The cosines with autograd's side computed on ``data`` (or for ``tokens``, or with ``sign``) instead."""
    with torch.enable_grad():
        exact = sign * embedding_velocity(want.model, want.data if data is None else data)
    predicted = next_stair_velocity(want.model, want.data, want.position)
    return token_cosines(predicted, exact, want.tokens if tokens is None else tokens)


def _cosines_problem(got: Any, want: Expected) -> str | None:
    value, expected = as_tensor(got), want.value
    if value is None or tuple(value.shape) != tuple(expected.shape):
        shape = None if value is None else tuple(value.shape)
        return f"expected a tensor [K, len(tokens)] = {tuple(expected.shape)} of cosines, got {shape or type(got).__name__}"
    value = value.double()
    if want.plateau and not bool((value >= AGREE).all()):
        k, i = (int(j) for j in (~(value >= AGREE)).nonzero()[0])
        return (f"on this plateau model the next-stair equation agrees with autograd for every token it moves (the "
                f"reference's cosines: {float(expected.min()):.5f} or more), but model {k}, token {want.tokens[i]} gives "
                f"{float(value[k, i]):.5f} < {AGREE}")
    diff = (value - expected).abs().nan_to_num(float("inf"))
    if float(diff.max()) > TOLERANCE:
        k, i = (int(j) for j in torch.unravel_index(diff.argmax(), diff.shape))
        return (f"model {k}, token {want.tokens[i]}: expected cosine {float(expected[k, i]):.6f}, got "
                f"{float(value[k, i]):.6f} (tolerance {TOLERANCE:g})")
    return None


def _gives(variant: Callable[[Expected], Tensor]) -> Callable[[Any, Expected, Case], bool]:
    """A diagnosis predicate: the learner's cosines are ``variant``'s (and those are not the answer)."""

    def matches(got: Any, want: Expected, case: Case) -> bool:
        wrong = Expected(variant(want), want.model, want.data, want.position, want.tokens)
        return _cosines_problem(wrong.value, want) is not None and _cosines_problem(got, wrong) is None

    return matches


def _flat(data: Dataset) -> Dataset:
    return Dataset(data.x, data.y, data.vocab_size, data.n_labels, torch.full((data.n,), 1.0 / data.n))


def _cosine_cases() -> list[Case]:
    specs = [
        (Z3_PLATEAU, None, 1, "the anchor-1 tokens", True, False),
        (BINARY_PLATEAU, None, 2, "the anchor-2 tokens", True, True),
        (Z3_PAST, None, 1, "the anchor-1 tokens in reverse order", False, True),
        (Z3_PLATEAU, "reweighted", 1, "the anchor-1 tokens, every other one", False, True),
        (MIXED, None, 1, "the anchor-1 tokens", False, True),
    ]  # fmt: skip
    cases = []
    for run, change, position, which, plateau, hidden in specs:
        data, model = run.data(), run.model()
        data = reweighted(data, 13) if change == "reweighted" else data
        tokens = data.x[:, position].unique().tolist()
        tokens = tokens[::-1] if "reverse" in which else tokens[::2] if "every other" in which else tokens
        label = f"{run.label}{f', {change}' if change else ''}, position {position}, {which}"
        want = Expected(velocity_cosines_reference(model, data, position, tokens), copy.deepcopy(model), data,
                        position, tuple(tokens), plateau)
        cases.append(Case(label, (model, data, position, tokens), want, hidden))
    return cases


def check_06_velocity_cosines(fn: Callable[[EmbMLP, Dataset, int, list], Tensor]) -> None:
    """fn(model, data, position, tokens) -> [K, len(tokens)]: per model and listed token, the cosine between the
    predicted velocity and autograd's -dLoss/dE; on a plateau every one of them is at least 0.99."""
    diagnoses = [
        Diagnosis(_gives(lambda w: _cosines_variant(w, sign=-1.0)), "sign flipped: autograd's velocity is -dLoss/dE, the way gradient descent moves E"),
        Diagnosis(_gives(lambda w: _cosines_variant(w, data=_flat(w.data))), "the loss is the population's: weight each row's cross-entropy by data.weights, not equally"),
        Diagnosis(_gives(lambda w: _cosines_variant(w, data=hard_labels(w.data))), HARD_LABELS_HINT),
        Diagnosis(_gives(lambda w: _cosines_variant(w, tokens=sorted(w.tokens))), "one cosine per listed token, in the order of `tokens` (not sorted)"),
        Diagnosis(lambda g, w, c: as_tensor(g) is not None and tuple(as_tensor(g).shape) == tuple(w.value.shape[:1]),
                  "one cosine per model AND token, [K, len(tokens)]: the cosine runs over the d coordinates of one token's velocity, not over the whole table"),
        Diagnosis(lambda g, w, c: as_tensor(g) is not None and tuple(as_tensor(g).shape) == (w.value.shape[0], w.data.vocab_size),
                  "only the listed tokens: [K, len(tokens)], one cosine per token of `tokens`, in that order"),
    ]  # fmt: skip
    run_check("check_06_velocity_cosines", fn, _cosine_cases(), _cosines_problem, diagnoses)

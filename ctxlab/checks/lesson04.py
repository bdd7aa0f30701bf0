"""Checks for the exercises of lesson 04 (gradient flow at small init: the E1 velocity)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor

from ctxlab.checks.core import (
    HARD_LABELS_HINT,
    Case,
    Diagnosis,
    as_float,
    as_tensor,
    hard_labels,
    reweighted,
    run_check,
)
from ctxlab.models import EmbMLP
from ctxlab.signatures import joint
from ctxlab.dataset import Dataset
from ctxlab.tasks import Task, hierarchy_task, with_token_frequencies, xor_task, zipf
from ctxlab.theory import cosine_per_model, embedding_velocity, mlp_embedding_velocity


def zipf_hierarchy(exponent: float = 1.0, mix=(0.4, 0.3, 0.3)) -> Dataset:
    """The hierarchy population with Zipf-distributed keys (rank = token id)."""
    return with_token_frequencies(hierarchy_task(mix=mix).population, 0, zipf(9, 27, exponent))


def _key_in_the_middle() -> Dataset:
    pop = hierarchy_task().population
    return Dataset(pop.x[:, [1, 0, 2]], pop.y, pop.vocab_size, pop.n_labels, pop.weights)


# --- exercise 1: the E1 velocity ---------------------------------------------------------------


def _velocity_cases() -> list[Case]:
    h = hierarchy_task()
    specs: list[tuple[str, Task | Dataset, dict, bool]] = [
        ("hierarchy task, gamma 1, seeds 0-1", h, dict(gamma=1.0, seed=[0, 1]), False),
        ("hierarchy task with Zipf keys, gamma 1 and 1.5", zipf_hierarchy(), dict(gamma=[1.0, 1.5], seed=2), True),
        ("hierarchy task with random weights (every position matters)", reweighted(h.population, 3), dict(gamma=1.2, seed=4), True),
        ("hierarchy task, key at position 2", _key_in_the_middle(), dict(gamma=1.0, seed=5), True),
        ("xor task, d 16, hidden 64", xor_task(), dict(gamma=1.0, seed=6, d=16, hidden=64), True),
        ("hierarchy task, tanh activation", h, dict(gamma=1.0, seed=7, activation="tanh"), True),
    ]  # fmt: skip
    cases = []
    for label, source, kwargs, hidden in specs:
        data = source.population if isinstance(source, Task) else source
        model = EmbMLP(data.vocab_size, data.seq_len, data.n_labels, **kwargs)
        reference = mlp_embedding_velocity(model, data)
        cases.append(Case(label, (model, data), (reference, embedding_velocity(model, data)), hidden))
    return cases


def _velocity_compare(got: Any, expected: tuple[Tensor, Tensor]) -> str | None:
    reference, autograd = expected
    g = as_tensor(got)
    if g is None:
        return f"expected a tensor of shape {tuple(reference.shape)}, got {type(got).__name__}"
    if tuple(g.shape) != tuple(reference.shape):
        return f"expected shape {tuple(reference.shape)} [K, V, d], got {tuple(g.shape)}"
    g = g.double()
    cos = cosine_per_model(g, autograd)
    if not bool(torch.isfinite(g).all()) or float(cos.min()) < 0.999:
        return f"cosine with the autograd velocity is {float(cos.min()):.4f} (needs >= 0.999)"
    rel = (g - reference.double()).flatten(1).norm(dim=1) / reference.double().flatten(1).norm(dim=1)
    if float(rel.max()) > 1e-3:
        return f"direction right (cosine {float(cos.min()):.5f}) but size off: relative error {float(rel.max()):.3g} vs the reference"
    return None


def _scaled(got: Any, expected: tuple[Tensor, Tensor], factor: float) -> bool:
    g, ref = as_tensor(got).double(), expected[0].double()
    return bool(torch.allclose(g, factor * ref, rtol=1e-3, atol=1e-9 * float(ref.abs().max())))


def _e1_variant(model: EmbMLP, data: Dataset, *, conditional: bool = False, centre: bool = True,
                positions: Sequence[int] | None = None) -> Tensor:
    """E1 with one step changed: P(y | x_i = s) - u for the drive (the frequency dropped), no centring, or
    only some positions."""
    K, V, d = model.embedding.shape
    L, C = model.seq_len, model.n_labels
    w1 = model.w1.detach().double().reshape(K, L, d, -1)
    out = torch.zeros(K, V, d, dtype=torch.float64)
    for i in range(L) if positions is None else positions:
        table = joint(data, (i,))
        pi = table.sum(-1, keepdim=True)
        if conditional:
            drive = torch.where(pi > 0, table / pi.clamp_min(1e-300) - 1.0 / C, torch.zeros_like(table))
        else:
            drive = table - pi / C if centre else table
        out += drive[None] @ (w1[:, i] @ model.w2.detach().double()).transpose(-1, -2)
    return 0.5 * out if model.activation == "gelu" else out


def _gives(**change) -> Callable[[Any, Any, Case], bool]:
    def matches(g: Any, e: Any, c: Case) -> bool:
        alt = _e1_variant(*c.args, **change)
        return bool(torch.allclose(as_tensor(g).double(), alt, rtol=1e-3, atol=1e-12)) and not torch.allclose(alt, e[0].double())

    return matches


def check_04_e1_velocity(fn: Callable[[EmbMLP, Dataset], Tensor]) -> None:
    """fn(model, data) -> [K, V, d]: sigma'(0) sum_i M_i (P(x_i = s, y) - pi_i(s) u), M_i = W1^(i) W2."""
    diagnoses = [
        Diagnosis(lambda g, e, c: _scaled(g, e, 2.0), "twice too big: multiply by sigma'(0), which is 1/2 for GELU (gelu(u) ~ u/2 near 0)"),
        Diagnosis(lambda g, e, c: _scaled(g, e, 0.5), "half too small: sigma'(0) is 1/2 for GELU but 1 for tanh; look at model.activation"),
        Diagnosis(_gives(centre=False), "subtract pi_i(s) u from P(x_i = s, ·): at small init the model already predicts u"),
        Diagnosis(lambda g, e, c: any(_gives(positions=[i])(g, e, c) for i in range(c.args[0].seq_len)),
                  "you used one position only: sum the drive over every position i, each with its own block M_i"),
        Diagnosis(_gives(conditional=True),
                  "you used P(y | x_i = s) - u: weight it by the token's frequency pi_i(s), i.e. use the joint P(x_i = s, y) - pi_i(s) u"),
        Diagnosis(lambda g, e, c: bool(torch.allclose(as_tensor(g).double(), mlp_embedding_velocity(c.args[0], hard_labels(c.args[1])).double(),
                                                      rtol=1e-3, atol=1e-12)), HARD_LABELS_HINT),
    ]  # fmt: skip
    run_check("check_04_e1_velocity", fn, _velocity_cases(), _velocity_compare, diagnoses)


# --- exercise 2: update-norm ratio of two tokens -------------------------------------------------


def parallel_population(freqs: Tensor, strengths: Tensor, classes: Tensor, n_labels: int) -> Dataset:
    """One position; token s has frequency freqs[s] and P(y | s) = u + strengths[s] (e_{classes[s]} - u)."""
    V = len(freqs)
    u = torch.full((n_labels,), 1.0 / n_labels, dtype=torch.float64)
    q = u + strengths[:, None].double() * (torch.nn.functional.one_hot(classes, n_labels).double() - u)
    return Dataset(torch.arange(V)[:, None], q.float(), V, n_labels, (freqs / freqs.sum()).float())


def measured_ratio(data: Dataset, a: int, b: int, gamma: float = 1.5, seed: int = 0) -> float:
    """||dE_a/dt|| / ||dE_b/dt|| from the exact gradient at init of a small-init Emb-MLP."""
    model = EmbMLP(data.vocab_size, data.seq_len, data.n_labels, gamma=gamma, seed=seed)
    v = embedding_velocity(model, data)[0].double()
    return float(v[a].norm() / v[b].norm())


def _ratio_case(label: str, data: Dataset, a: int, b: int, hidden: bool, seed: int) -> Case:
    table = joint(data, (0,))
    pi = table.sum(-1)
    q = table / pi[:, None].clamp_min(1e-300)
    args = (float(pi[a]), float(pi[b]), q[a].float(), q[b].float())
    return Case(f"{label}, tokens {a} and {b}", args, measured_ratio(data, a, b, seed=seed), hidden)


def _ratio_cases() -> list[Case]:
    cases = [_ratio_case("hierarchy with Zipf keys (same attribute)", zipf_hierarchy(), 0, 3, False, 0)]
    f = torch.tensor([0.4, 0.1, 0.25, 0.05, 0.2], dtype=torch.float64)
    s = torch.tensor([0.2, 0.8, 0.5, 0.3, 0.9], dtype=torch.float64)
    cls = torch.tensor([1, 1, 0, 0, 2])
    one = parallel_population(f, s, cls, 3)
    cases += [
        _ratio_case("one position, 3 labels, same class, different strengths", one, 0, 1, True, 1),
        _ratio_case("one position, 3 labels, same class, different strengths", one, 3, 2, True, 2),
        _ratio_case("one position, 6 labels", parallel_population(f, s, torch.tensor([4, 2, 4, 4, 2]), 6), 3, 0, True, 3),
        _ratio_case("hierarchy with Zipf^1.5 keys", zipf_hierarchy(1.5), 7, 1, True, 4),
    ]
    return cases


def _relative(rtol: float):
    def compare(got: Any, expected: float) -> str | None:
        value = as_float(got)
        if value is None:
            return f"expected a number, got {type(got).__name__}"
        if not abs(value - expected) <= rtol * abs(expected):
            return f"measured ratio {expected:.4f}, you predicted {value:.4f} (tolerance {rtol:.0%})"
        return None

    return compare


def check_04_update_ratio(fn: Callable[[float, float, Tensor, Tensor], float]) -> None:
    """fn(pi_a, pi_b, q_a, q_b) -> ||dE_a/dt|| / ||dE_b/dt|| at init, for q_a - u parallel to q_b - u."""

    def near(value: Callable[[Case], float]) -> Callable[[Any, Any, Case], bool]:
        return lambda g, e, c: abs(float(g) - value(c)) < 1e-3 * abs(value(c))

    def pis(c: Case) -> float:
        return c.args[0] / c.args[1]

    def dev(q: Tensor) -> float:
        return float((q.double() - 1.0 / len(q)).norm())

    diagnoses = [
        Diagnosis(near(lambda c: 1 / pis(c)), "upside down: the more frequent token moves faster, so pi_a sits in the numerator"),
        Diagnosis(near(pis), "frequencies alone are not enough when the signatures differ: multiply by ||q - u|| of each token"),
        Diagnosis(near(lambda c: pis(c) * float(c.args[2].double().norm() / c.args[3].double().norm())),
                  "subtract the uniform distribution u = 1/C before taking the norm: only q - u drives the update"),
        Diagnosis(near(lambda c: pis(c) ** 2 * dev(c.args[2]) / dev(c.args[3])), "E1 is linear in the frequency, not quadratic"),
    ]  # fmt: skip
    run_check("check_04_update_ratio", fn, _ratio_cases(), _relative(0.01), diagnoses)

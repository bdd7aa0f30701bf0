"""Checks for the exercises of lesson 07 (self-attention at small init)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from ctxlab.checks.core import Case, Diagnosis, all_close, as_tensor, run_check, tensor_close
from ctxlab.models import EmbAttention
from ctxlab.tasks import hierarchy_task, partner_task, pointer_task
from ctxlab.theory import bag_of_context

# --- exercise 1: the output of uniform attention -----------------------------------------------


def _uniform_cases() -> list[Case]:
    h = hierarchy_task()
    specs = [
        ("pointer task (lesson 07), gamma 1, seeds 0-1", pointer_task(n_ctx=3), dict(gamma=1.0, seed=[0, 1], d=16, hidden=32), False),
        ("pointer task, 5 context positions, gamma 0.75", pointer_task(n_ctx=5), dict(gamma=0.75, seed=4, d=8, hidden=8), True),
        ("hierarchy task, gamma 0.5, d 8", h, dict(gamma=0.5, seed=2, d=8, hidden=16), True),
        ("partner task (default size), d_head 4", partner_task(), dict(gamma=1.0, seed=3, d=12, d_head=4, hidden=8), True),
    ]  # fmt: skip
    cases = []
    for label, task, kwargs, hidden in specs:
        model = EmbAttention(task.vocab_size, task.seq_len, task.n_labels, **kwargs)
        x = task.population.x[:50]
        cases.append(Case(label, (model, x), bag_of_context(model, x), hidden))
    return cases


def check_07_uniform_output(fn: Callable[[EmbAttention, Tensor], Tensor]) -> None:
    """fn(model, x) -> [K, N, d]: mean over positions j of (E[x_j] + P_j) W_V."""

    def no_positions(g: Any, e: Tensor, c: Case) -> bool:
        model, x = c.args
        return all_close(g, model.embedding.detach()[:, x].mean(2) @ model.w_v.detach(), 1e-6)

    def no_values(g: Any, e: Tensor, c: Case) -> bool:
        model, x = c.args
        return all_close(g, (model.embedding.detach()[:, x] + model.position.detach()[:, None]).mean(2), 1e-6)

    diagnoses = [
        Diagnosis(no_positions, "add the position embeddings: every h_j = E[x_j] + P_j (model.position)"),
        Diagnosis(no_values, "the attention output is a weighted mean of *values* h_j W_V: multiply by model.w_v"),
        Diagnosis(lambda g, e, c: all_close(g, e * c.args[1].shape[1], 1e-6),
                  "uniform weights are 1/L each: take the mean over positions, not the sum"),
    ]  # fmt: skip
    run_check("check_07_uniform_output", fn, _uniform_cases(), tensor_close(1e-5), diagnoses)


# --- exercise 2: when does attention leave uniform? ---------------------------------------------


def leaves_uniform(steps: Tensor, weights: Tensor, seq_len: int, tol: float = 0.01) -> Tensor:
    """First recorded step where |weights - 1/L| > tol, per row of weights [K, T]; -1 if never (reference)."""
    off = (torch.as_tensor(weights, dtype=torch.float64) - 1.0 / seq_len).abs() > tol
    first = off.double().argmax(-1)
    s = torch.as_tensor(steps)
    return torch.where(off.any(-1), s[first], torch.full_like(first, -1, dtype=s.dtype))


def _curve(T: int, L: int, start: int, slope: float, wobble: float = 0.0) -> Tensor:
    t = torch.arange(T, dtype=torch.float64)
    return 1.0 / L + slope * (t - start).clamp_min(0) + wobble * torch.sin(t)


def _leave_cases() -> list[Case]:
    steps = torch.arange(0, 2000, 25)
    T = len(steps)
    rising = torch.stack([_curve(T, 6, 30, 0.002), _curve(T, 6, 50, 0.004), _curve(T, 6, 0, 0.0)])
    falling = torch.stack([_curve(T, 4, 10, -0.003), _curve(T, 4, 60, 0.001, 0.004)])
    shifted = torch.stack([_curve(T, 3, 20, 0.003) + 0.02])  # starts away from uniform already
    # one excursion out of the band at records 8-10, back inside, then out for good from record 40
    excursion = _curve(T, 5, 40, 0.002) + 0.03 * torch.exp(-(((torch.arange(T) - 9.0) / 1.2) ** 2))
    late = torch.stack([excursion, _curve(T, 5, 20, 0.002), _curve(T, 5, 0, 0.0, 0.004)])
    irregular = torch.cat([torch.arange(100, 1000, 50), torch.arange(1000, 7000, 200)])[:T]
    at_ends = torch.full((2, T), 0.25, dtype=torch.float64)
    at_ends[0, -1] += 0.05  # leaves only at the last record
    at_ends[1, 0] -= 0.05  # only at the first, then back
    specs = [
        ("three seeds, one never leaves (L = 6)", (steps, rising, 6), False),
        ("attention moving *away* from the named position (L = 4)", (steps, falling, 4), True),
        ("a curve that starts off uniform (L = 3)", (steps, shifted, 3), True),
        ("tolerance 0.05", (steps * 2, rising, 6, 0.05), True),
        ("leaves the band briefly, comes back, leaves for good later (L = 5)", (steps, late, 5), True),
        ("recorded from step 100, irregularly (L = 5)", (irregular[: late.shape[1]], late[1:], 5), True),
        ("one model leaves only at the last record, one only at the first (L = 4)", (steps, at_ends, 4), True),
        ("a single record (L = 4)", (torch.tensor([300]), torch.tensor([[0.25], [0.3]], dtype=torch.float64), 4), True),
    ]  # fmt: skip
    return [Case(label, args, leaves_uniform(*args), hidden) for label, args, hidden in specs]


def check_07_leaves_uniform(fn: Callable[..., Tensor]) -> None:
    """fn(steps, weights [K, T], seq_len, tol=0.01) -> [K] first step with |w - 1/L| > tol, -1 if never."""

    def as_index(g: Any, e: Tensor, c: Case) -> bool:
        s = torch.as_tensor(c.args[0])
        idx = torch.as_tensor([int((s == v).nonzero()[0]) if v >= 0 else -1 for v in e.tolist()])
        return not torch.equal(idx, e) and all_close(g, idx)

    def one_sided(g: Any, e: Tensor, c: Case) -> bool:
        w = torch.as_tensor(c.args[1], dtype=torch.float64)
        tol = c.args[3] if len(c.args) > 3 else 0.01
        return all_close(g, leaves_uniform(c.args[0], 1.0 / c.args[2] + (w - 1.0 / c.args[2]).clamp_min(0), c.args[2], tol))

    def from_start(g: Any, e: Tensor, c: Case) -> bool:
        w = torch.as_tensor(c.args[1], dtype=torch.float64)
        tol = c.args[3] if len(c.args) > 3 else 0.01
        return all_close(g, leaves_uniform(c.args[0], w - w[:, :1] + 1.0 / c.args[2], c.args[2], tol))

    def evenly_spaced(g: Any, e: Tensor, c: Case) -> bool:
        s = torch.as_tensor(c.args[0])
        if len(s) < 2:
            return False
        idx = torch.as_tensor([int((s == v).nonzero()[0]) if v >= 0 else -1 for v in e.tolist()])
        alt = torch.where(idx >= 0, s[0] + idx * (s[1] - s[0]), idx)
        return not torch.equal(alt, e) and all_close(g, alt)

    def for_good(g: Any, e: Tensor, c: Case) -> bool:
        w = torch.as_tensor(c.args[1], dtype=torch.float64)
        tol = c.args[3] if len(c.args) > 3 else 0.01
        off = (w - 1.0 / c.args[2]).abs() > tol
        stays = off.flip(-1).int().cumprod(-1).flip(-1).double()
        alt = leaves_uniform(c.args[0], stays / c.args[2] + 1.0 / c.args[2], c.args[2], tol)
        return not torch.equal(alt, e) and all_close(g, alt)

    def never_as_first_step(g: Any, e: Tensor, c: Case) -> bool:
        return all_close(g, torch.where(e < 0, torch.as_tensor(c.args[0])[0], e)) and bool((e < 0).any())

    def last_record_skipped(g: Any, e: Tensor, c: Case) -> bool:
        s, w = torch.as_tensor(c.args[0]), torch.as_tensor(c.args[1], dtype=torch.float64)
        alt = leaves_uniform(s[:-1], w[:, :-1], *c.args[2:]) if len(s) > 1 else torch.full_like(e, -1)
        return not torch.equal(alt, e) and all_close(g, alt)

    diagnoses = [
        Diagnosis(last_record_skipped, "look at every record, the last one too: a model that first leaves the band at the "
                                       "final record leaves there"),
        Diagnosis(never_as_first_step, "a model whose attention never leaves the band must get -1: argmax of an all-False row is 0, "
                                       "so check mask.any(-1) first"),
        Diagnosis(for_good, "that is when the weight leaves the band for good; the question asks for the FIRST recorded step "
                            "outside it, even if the weight comes back inside later"),
        Diagnosis(lambda g, e, c: len(c.args) > 3 and all_close(g, leaves_uniform(*c.args[:3])),
                  "use the tol you are given (the default 0.01 is only the default)"),
        Diagnosis(evenly_spaced, "steps need not start at 0 nor be evenly spaced: return steps[t] for the record t you found"),
        Diagnosis(as_index, "return the training *step* (steps[t]), not the index t of the record"),
        Diagnosis(one_sided, "attention can also move *below* 1/L (away from the named position): compare |w - 1/L| with tol"),
        Diagnosis(from_start, "measure the distance from the uniform value 1/L, not from the first recorded value"),
    ]

    def compare(got: Any, expected: Tensor) -> str | None:
        g = as_tensor(got)
        if g is None or tuple(g.shape) != tuple(expected.shape):
            return f"expected a tensor of shape {tuple(expected.shape)} (one step per model)"
        if g.is_floating_point() and not bool((g == g.round()).all()):
            return f"expected integer steps, got {g.tolist()}"
        if not torch.equal(g.long(), expected.long()):
            return f"expected steps {expected.tolist()}, got {g.tolist()}"
        return None

    run_check("check_07_leaves_uniform", fn, _leave_cases(), compare, diagnoses)

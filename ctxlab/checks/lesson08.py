"""Checks for the exercises of lesson 08 (the knobs: optimizer, LayerNorm, weight decay, phase map).

The phase-map cases are synthetic maps with a known shape (a rest that grows with gamma and
shrinks with the learning rate, unstable learning-rate columns, other axis orders, another knob),
so the check runs instantly. The LayerNorm cases are embedding tables drawn at several gamma and
widths, including ones so small that LayerNorm's epsilon matters.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import cache
from typing import Any

import torch
from torch import Tensor

from ctxlab.checks.core import Case, Diagnosis, as_float, run_check, tensor_close
from ctxlab.synthetic import small_init_table, synthetic_phase_map

LAYERNORM_EPS = 1e-5  # torch.nn.functional.layer_norm's default


# --- exercise 1: the corner without a first plateau ---------------------------------------------


def no_plateau_corner_reference(gammas: Sequence[float], lrs: Sequence[float], plateau: Tensor) -> tuple[float, float]:
    """Drop learning-rate columns with a diverged run (NaN); along each axis pick the edge with the shorter mean rest."""
    plateau = torch.as_tensor(plateau, dtype=torch.float64)
    stable = [j for j in range(len(lrs)) if not bool(plateau[:, j].isnan().any())]
    kept = plateau[:, stable]
    gamma = gammas[0] if float(kept[0].mean()) < float(kept[-1].mean()) else gammas[-1]
    lr = lrs[stable[0]] if float(kept[:, 0].mean()) < float(kept[:, -1].mean()) else lrs[stable[-1]]
    return float(gamma), float(lr)


@cache
def _maps() -> list[tuple[str, tuple, bool]]:
    lesson_g, lesson_r = (0.5, 0.75, 1.0, 1.25, 1.5), (0.25, 0.5, 1.0, 2.0, 4.0, 8.0)
    wide_g, wide_r = (0.5, 0.625, 0.75, 0.875, 1.0, 1.25, 1.5), (0.125, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0)
    desc_r = tuple(reversed(lesson_r[:5]))
    desc_g = tuple(reversed(lesson_g))
    decay = (0.0, 1e-3, 3e-3, 1e-2, 3e-2)
    return [
        ("the lesson's grid: the lr = 8 column diverged except one stuck run", (lesson_g, lesson_r,
         synthetic_phase_map(lesson_g, lesson_r, unstable=8.0, stuck=(2, 5))), False),
        ("a 7 x 8 grid, two unstable columns", (wide_g, wide_r, synthetic_phase_map(wide_g, wide_r, unstable=8.0)), True),
        ("learning rates listed from large to small, all stable", (lesson_g, desc_r,
         synthetic_phase_map(lesson_g, desc_r)), True),
        ("gamma listed from large to small, one unstable column", (desc_g, lesson_r,
         synthetic_phase_map(desc_g, lesson_r, unstable=8.0)), True),
        ("a gamma x weight-decay map: decay lengthens the rest", (lesson_g, decay,
         synthetic_phase_map(lesson_g, decay, knob_lengthens=True)), True),
    ]


def _corner_problem(got: Any, expected: tuple[float, float]) -> str | None:
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        return f"expected a pair (gamma, lr), got {got!r}"
    values = [as_float(v) for v in got]
    if None in values:
        return f"expected two numbers (gamma, lr), got {got!r}"
    if any(abs(v - e) > 1e-9 for v, e in zip(values, expected)):
        return f"expected the corner (gamma, lr) = ({expected[0]:g}, {expected[1]:g}), got ({values[0]:g}, {values[1]:g})"
    return None


def check_08_no_plateau_corner(fn: Callable[[Sequence[float], Sequence[float], Tensor], tuple]) -> None:
    """fn(gammas, lrs, plateau [G, R]) -> (gamma, lr): the corner where the rest at ln C vanishes."""
    cases = [Case(label, args, no_plateau_corner_reference(*args), hidden) for label, args, hidden in _maps()]

    def gives(pick: Callable[[Case], Any]) -> Callable[[Any, Any, Case], bool]:
        return lambda g, e, c: _corner_problem(g, pick(c)) is None and _corner_problem(pick(c), e) is not None

    def longest(c: Case) -> tuple[float, float]:
        gammas, lrs, plateau = c.args
        return no_plateau_corner_reference(gammas, lrs, -plateau)

    def nan_blind(c: Case) -> tuple[float, float]:
        gammas, lrs, plateau = c.args
        def mean(t: Tensor) -> float:
            return float(t[~t.isnan()].mean())

        return (float(gammas[0] if mean(plateau[0]) < mean(plateau[-1]) else gammas[-1]),
                float(lrs[0] if mean(plateau[:, 0]) < mean(plateau[:, -1]) else lrs[-1]))

    diagnoses = [
        Diagnosis(lambda g, e, c: _corner_problem(g, (e[1], e[0])) is None and e[0] != e[1], "you returned (lr, gamma): return (gamma, lr)"),
        Diagnosis(gives(longest), "that is the corner where the rest is LONGEST; the question asks where it vanishes (shortest mean rest)"),
        Diagnosis(gives(nan_blind), "a learning rate at which some run diverged (NaN) is unstable: drop that whole column before reading the edges"),
        Diagnosis(gives(lambda c: (float(min(c.args[0])), float(max(c.args[1])))), "you assumed (smallest gamma, largest lr); read the corner off the map: the largest lr may be unstable, or the column knob may lengthen the rest"),
        Diagnosis(lambda g, e, c: isinstance(g, (tuple, list)) and len(g) == 2 and all(isinstance(v, int) for v in g), "return the values of gamma and lr, not their positions in the lists"),
    ]  # fmt: skip
    run_check("check_08_no_plateau_corner", fn, cases, _corner_problem, diagnoses)


# --- exercise 2: the norm of a LayerNorm'd embedding -----------------------------------------------


def layernorm_norms_reference(E: Tensor) -> Tensor:
    """||LayerNorm(E_s)|| for every row s of E [V, d] (no affine, biased variance, eps 1e-5)."""
    return _layernorm_norms(E, LAYERNORM_EPS)


def _layernorm_norms(E: Tensor, eps: float) -> Tensor:
    E = torch.as_tensor(E, dtype=torch.float64)
    centred = E - E.mean(-1, keepdim=True)
    return (centred / (centred.pow(2).mean(-1, keepdim=True) + eps).sqrt()).norm(dim=-1)


@cache
def _tables() -> list[tuple[str, Tensor, bool]]:
    return [
        ("V = 18, d = 16, gamma = 1", small_init_table(18, 16, 1.0, 0), False),
        ("V = 27, d = 32, gamma = 0.5 (standard init)", small_init_table(27, 32, 0.5, 1), True),
        ("V = 27, d = 32, gamma = 1.5 (epsilon starts to matter)", small_init_table(27, 32, 1.5, 2), True),
        ("V = 10, d = 64, gamma = 1.5 (variance below epsilon)", small_init_table(10, 64, 1.5, 3), True),
        ("V = 12, d = 8, gamma = 1, every entry shifted by 0.05", small_init_table(12, 8, 1.0, 4, offset=0.05), True),
    ]


def check_08_layernorm_norms(fn: Callable[[Tensor], Tensor]) -> None:
    """fn(E [V, d]) -> [V]: the Euclidean norm of each row after LayerNorm (no affine, eps = 1e-5)."""
    cases = [Case(label, (E,), layernorm_norms_reference(E), hidden) for label, E, hidden in _tables()]
    compare = tensor_close(1e-3)

    def same(value: Callable[[Tensor], Tensor]) -> Callable[[Any, Any, Case], bool]:
        return lambda g, e, c: compare(g, value(c.args[0])) is None and compare(value(c.args[0]), e) is not None

    def unbiased(E: Tensor) -> Tensor:
        centred = E - E.mean(-1, keepdim=True)
        return (centred / (centred.var(-1, keepdim=True) + LAYERNORM_EPS).sqrt()).norm(dim=-1)

    def std_plus_eps(E: Tensor) -> Tensor:
        centred = E - E.mean(-1, keepdim=True)
        return (centred / (centred.pow(2).mean(-1, keepdim=True).sqrt() + LAYERNORM_EPS)).norm(dim=-1)

    def rms(E: Tensor) -> Tensor:
        return (E / (E.pow(2).mean(-1, keepdim=True) + LAYERNORM_EPS).sqrt()).norm(dim=-1)

    diagnoses = [
        Diagnosis(same(lambda E: torch.full((E.shape[0],), math.sqrt(E.shape[1]), dtype=torch.float64)), "√d is the limit without epsilon: include eps = 1e-5 in the denominator sqrt(var + eps); it matters once var ~ d^(-2γ) is near 1e-5"),
        Diagnosis(same(lambda E: _layernorm_norms(E, 1e-6)), "LayerNorm's epsilon here is 1e-5 (torch's default), not 1e-6"),
        Diagnosis(same(std_plus_eps), "epsilon goes inside the square root: divide by sqrt(var + eps), not by std + eps"),
        Diagnosis(same(unbiased), "LayerNorm divides by the biased variance (mean of squares over d, not d - 1)"),
        Diagnosis(same(rms), "LayerNorm subtracts each row's mean before dividing (that is RMSNorm)"),
        Diagnosis(same(lambda E: E.norm(dim=-1)), "that is the norm before normalisation: apply LayerNorm to each row first"),
        Diagnosis(same(lambda E: layernorm_norms_reference(E.T)), "normalise over the d coordinates of each token (the last axis), not over the tokens"),
    ]  # fmt: skip
    run_check("check_08_layernorm_norms", fn, cases, compare, diagnoses)

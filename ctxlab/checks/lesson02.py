"""Checks for the exercises of lesson 02 (measuring alignment)."""

from __future__ import annotations

from functools import cache
from typing import Any, Callable

import torch
from torch import Tensor

from ctxlab.align import cka
from ctxlab.checks.core import Case, Diagnosis, as_float, as_tensor, number_close, run_check
from ctxlab.signatures import label_signature
from ctxlab.tasks import hierarchy_task, xor_task


def _randn(seed: int, *shape: int) -> Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


@cache
def _signatures() -> dict[str, Tensor]:
    h = hierarchy_task().population
    return {
        "hierarchy ΔS¹": label_signature(h, 1, "incremental").matrix.double(),
        "hierarchy ΔS²": label_signature(h, 2, "incremental").matrix.double(),
        "xor raw S¹": label_signature(xor_task().population, 1, "raw").matrix.double(),
    }


def _pairs() -> list[tuple[str, Tensor, Tensor, bool]]:
    """(label, E, S, hidden): aligned, random, shifted and scaled embeddings against several signatures."""
    sig = _signatures()
    s1, s2, x1 = sig["hierarchy ΔS¹"], sig["hierarchy ΔS²"], sig["xor raw S¹"]
    aligned = s1 @ _randn(0, s1.shape[1], 32) + 0.3 * _randn(1, 27, 32)
    return [
        ("order-1 copy plus noise vs ΔS¹", aligned, s1, False),
        ("random E (27 x 32) vs ΔS¹", _randn(2, 27, 32), s1, False),
        ("order-1 copy shifted by +5 in every coordinate vs ΔS¹", aligned + 5.0, s1, True),
        ("order-1 copy scaled by 1000 vs ΔS²", 1000 * aligned, s2, True),
        ("random E (16 x 8) vs the xor task's raw S¹", _randn(3, 16, 8), x1, True),
        ("random E (40 x 5) vs random S (40 x 60)", _randn(4, 40, 5), _randn(5, 40, 60) + 2.0, True),
    ]


# --- exercise 1: linear CKA ----------------------------------------------------------------------


def _uncentred_cka(E: Tensor, S: Tensor) -> float:
    ge, gs = E @ E.T, S @ S.T
    return float((ge * gs).sum() / (ge.norm() * gs.norm()))


def check_02_linear_cka(fn: Callable[[Tensor, Tensor], float]) -> None:
    """fn(E [V, d], S [V, m]) -> linear CKA of the token-centred Gram matrices, a number in [0, 1]."""
    cases = [Case(label, (E, S), float(cka(E, S)), hidden) for label, E, S, hidden in _pairs()]

    def is_(value: Callable[[Case], float]) -> Callable[[Any, Any, Case], bool]:
        return lambda g, e, c: abs(as_float(g) - value(c)) < 1e-6 and abs(as_float(g) - e) > 1e-6

    def centred(c: Case) -> tuple[Tensor, Tensor]:
        E, S = c.args
        return E - E.mean(0), S - S.mean(0)

    def frobenius_of_e(c: Case) -> float:
        E, S = centred(c)
        return float((S.T @ E).norm() ** 2 / (E.norm() ** 2 * S.norm() ** 2))

    diagnoses = [
        Diagnosis(is_(lambda c: _uncentred_cka(*c.args)), "not centred: subtract the mean row (over tokens) from E and from S first"),
        Diagnosis(lambda g, e, c: is_(lambda c: _uncentred_cka(centred(c)[0], c.args[1]))(g, e, c)
                  or is_(lambda c: _uncentred_cka(c.args[0], centred(c)[1]))(g, e, c),
                  "you centred only one of E and S: subtract the mean row from both"),
        Diagnosis(is_(frobenius_of_e), "the denominator uses ||E||_F ||S||_F squared; it needs the norms of the Gram matrices, ||E^T E||_F ||S^T S||_F"),
        Diagnosis(is_(lambda c: c.expected / c.args[0].shape[0]), "divided by V: CKA is a ratio, so no 1/V or 1/(V-1) factors survive; drop them or put them on both sides"),
        Diagnosis(is_(lambda c: c.expected ** 0.5), "that is the square root of CKA: the numerator is ||S^T E||_F squared"),
    ]  # fmt: skip
    run_check("check_02_linear_cka", fn, cases, number_close(atol=1e-6), diagnoses)


# --- exercise 2: a random rotation -----------------------------------------------------------------


def _rotation_problem(got: Any, E: Tensor) -> str | None:
    """What is wrong with (fn(E, seed), fn(E, seed) again, fn(E, seed + 1)) as random rotations of E."""
    outs = [as_tensor(g) for g in got]
    if any(o is None or tuple(o.shape) != tuple(E.shape) for o in outs):
        return f"expected E @ Q with the shape of E {tuple(E.shape)}, got {[None if o is None else tuple(o.shape) for o in outs]}"
    precision = 1e-8 if all(o.dtype == torch.float64 for o in outs) else 1e-5
    first, again, other = (o.double() for o in outs)
    gram = E @ E.T
    if not torch.allclose(first @ first.T, gram, atol=precision * float(gram.abs().max())):
        return ("the token-by-token inner products E E^T changed, so Q is not orthogonal or it acts on the wrong "
                "side: multiply E [V, d] on the right by a d x d matrix with Q^T Q = I (e.g. from torch.linalg.qr)")
    if not torch.equal(first, again):
        return "two calls with the same seed gave different results: draw Q with torch.Generator().manual_seed(seed)"
    if torch.allclose(first, other):
        return "seed and seed + 1 gave the same result: Q must depend on the seed"
    Q = torch.linalg.lstsq(E, first).solution
    if (first - E).norm() < 1e-6 * E.norm() or int((Q.abs() > 1e-6).sum()) <= E.shape[1]:
        return ("Q only permutes or flips the axes (or does nothing): draw a random rotation, e.g. the Q factor of the QR "
                "decomposition of a Gaussian d x d matrix")
    d = E.shape[1]
    if int(torch.linalg.matrix_rank(E)) == d and float((Q.abs() > 1e-6).double().mean()) < 0.9:
        return (f"Q mixes only some of the axes ({int((Q.abs() > 1e-6).sum())} of its {d * d} entries are non-zero; a "
                "rotation in one plane leaves the other axes alone): a random rotation mixes all d axes, e.g. the Q "
                "factor of the QR decomposition of a Gaussian d x d matrix")
    return None


def check_02_random_rotation(fn: Callable[[Tensor, int], Tensor]) -> None:
    """fn(E [V, d], seed) -> E @ Q for a random orthogonal Q [d, d] that depends only on ``seed``."""
    if not callable(fn):
        raise AssertionError(f"check_02_random_rotation: pass your function itself, got {fn!r}")

    def three_calls(E: Tensor, seed: int) -> tuple:
        return fn(E, seed), fn(E, seed), fn(E, seed + 1)

    three_calls.__name__ = getattr(fn, "__name__", "your function")
    inputs = [
        ("E 27 x 32 (V < d), seed 0", _randn(10, 27, 32), 0, False),
        ("E 40 x 8, seed 5", _randn(11, 40, 8), 5, True),
        ("E 16 x 3, seed 123", _randn(12, 16, 3), 123, True),
        ("E 30 x 16, shifted by +3, seed 7", _randn(13, 30, 16) + 3.0, 7, True),
    ]
    cases = [Case(label, (E, seed), E, hidden) for label, E, seed, hidden in inputs]
    run_check("check_02_random_rotation", three_calls, cases, _rotation_problem)


# --- exercise 3: a permutation baseline --------------------------------------------------------------


def shuffled_cka_reference(E: Tensor, S: Tensor, n: int, seed: int) -> float:
    """Mean CKA of E against ``n`` row-shuffled copies of S (shuffling E's rows is the same thing)."""
    g = torch.Generator().manual_seed(seed)
    perms = torch.stack([torch.randperm(E.shape[0], generator=g) for _ in range(n)])
    return float(cka(torch.as_tensor(E, dtype=torch.float64)[perms], S).mean())


def _baseline_problem(got: Any, expected: tuple[float, float, float]) -> str | None:
    value, tolerance, spread = expected
    first, again, others = got
    first, again = as_float(first), as_float(again)
    if first is None or again is None:
        return f"expected a number, got {type(got[0]).__name__}"
    if first != again:
        return "two calls with the same seed gave different results: shuffle with torch.Generator().manual_seed(seed)"
    if abs(first - value) > tolerance:
        return f"expected about {value:.4f} (within {tolerance:.3f}, the spread of a mean over shuffles), got {first:.4f}"
    if others:
        found = float(torch.tensor([as_float(o) for o in others], dtype=torch.float64).std())
        if found < 0.3 * spread:
            return (f"with n = 2 shuffles, {len(others)} seeds should scatter by about {spread:.4f}; yours scatter by only "
                    f"{found:.4f}, as if you averaged many more shuffles: use exactly n shuffled copies")
    return None


N_SPREAD_SEEDS = 16  # seeds of the n = 2 case, whose scatter shows whether n shuffles were used


def check_02_permutation_baseline(fn: Callable[[Tensor, Tensor, int, int], float]) -> None:
    """fn(E, S, n, seed) -> mean CKA of E against n copies of S with their rows (tokens) shuffled."""
    if not callable(fn):
        raise AssertionError(f"check_02_permutation_baseline: pass your function itself, got {fn!r}")

    def calls(E: Tensor, S: Tensor, n: int, seed: int) -> tuple:
        others = [fn(E, S, n, seed + 1 + k) for k in range(N_SPREAD_SEEDS)] if n <= 2 else []
        return fn(E, S, n, seed), fn(E, S, n, seed), others

    calls.__name__ = getattr(fn, "__name__", "your function")
    run_check("check_02_permutation_baseline", calls, _baseline_cases(), _baseline_problem)


def baseline_expected(E: Tensor, S: Tensor, n: int, mean_shuffles: int = 2000) -> tuple[float, float, float]:
    """What the check expects of a mean over ``n`` shuffles: (the mean of ``mean_shuffles`` shuffles, the
    tolerance of 5 spreads of an n-shuffle mean, that spread), the spread read from 200 shuffles."""
    perms = torch.stack([torch.randperm(E.shape[0], generator=torch.Generator().manual_seed(i)) for i in range(200)])
    spread = float(cka(E[perms], S).std()) / n**0.5
    return shuffled_cka_reference(E, S, mean_shuffles, seed=99), max(5 * spread, 2e-3), spread


@cache
def _baseline_cases() -> list[Case]:
    """Expected (mean, tolerance, scatter over seeds) per pair, with n = 300 shuffles and once with n = 2."""
    cases = []
    for label, E, S, hidden in _pairs()[:5]:
        for n in (300, 2) if not cases else (300,):  # the mean's error is a tenth of the tolerance
            cases.append(Case(f"{label}, n = {n}", (E, S, n, 1 + len(cases)), baseline_expected(E, S, n), hidden or n == 2))
    # six tokens against one column: so few orders that the shuffled scores are lopsided and their median
    # sits several tolerances of a 3000-shuffle mean away from it
    E, S = _randn(20, 6, 3), _randn(120, 6, 1)
    cases.append(Case("random E (6 x 3) vs a random column S (6 x 1), n = 3000", (E, S, 3000, 1 + len(cases)),
                      baseline_expected(E, S, 3000, mean_shuffles=20000), True))
    return cases

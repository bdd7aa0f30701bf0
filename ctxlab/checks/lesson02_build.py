"""The build-it checks of lesson 02: an alignment test against shuffled signatures, and how much noise it sees through.

The learner writes three functions. The test scores an embedding (or a batch of them) against a signature and
against n row-shuffled copies of it, and reports the real score, the shuffled mean, the shuffled top and the
excess over the top. The noise sweep builds unit(S_c W) + σ unit(N_c) for every noise level and every draw,
tests them all, and finds the first level at which the test no longer tells most of them from random. Both are
compared with the reference on inputs the check generates: batches, float32, rank-deficient signatures, a rank-1
embedding, tokens with equal signature rows (whose swaps tie the real score exactly), tiny and huge scales and a
mean row that centring must remove. The last check runs the sweep for all four scores on the lesson's ΔS¹ and
holds it to what the lesson shows: every test sees the signal while the noise is no bigger than twice the
signal, every test has lost it at twenty times the signal, CKA's and the subspace fraction's tests agree (ΔS¹'s
Gram matrix has two equal eigenvalues, so they are one test) and RSA's gives out no later than CKA's.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any

import torch
from torch import Tensor

from ctxlab.align import METRICS, cka, ridge_r2, rsa, subspace_fraction
from ctxlab.checks.core import Case, Diagnosis, as_float, as_tensor, run_check
from ctxlab.signatures import label_signature
from ctxlab.tasks import hierarchy_task, xor_task

TOL = 1e-6  # absolute, on every number compared; an excess must also beat it to count as a detection
KEYS = ("score", "baseline", "top", "excess")


def _randn(seed: int, *shape: int, scale: float = 1.0) -> Tensor:
    return scale * torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


# --- exercise 4: the alignment test ------------------------------------------------------------------


def _shuffled_scores(E: Tensor, S: Tensor, score: Callable, n: int, seed: int, shuffle: str = "rows") -> Tensor:
    """score(E, S reordered) for n permutations drawn one after another from one seeded generator: [n, ...].
    ``shuffle`` names what a mistake reorders instead ("columns", "E rows", "both", "reseeded")."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n):
        if shuffle == "reseeded":
            g = torch.Generator().manual_seed(seed)
        if shuffle == "columns":
            out.append(score(E, S[:, torch.randperm(S.shape[1], generator=g)]))
            continue
        p = torch.randperm(S.shape[0], generator=g)
        pair = {"E rows": (E[..., p, :], S), "both": (E[..., p, :], S[p])}.get(shuffle, (E, S[p]))
        out.append(score(*pair))
    return torch.stack(out)


def alignment_test_reference(E, S, score: Callable, n: int, seed: int) -> dict[str, Tensor]:
    """The real score of E [..., V, d] against S [V, m], the mean and the top of its n shuffled scores, and the
    excess of the real score over that top; each [...] (float64)."""
    return _test_variant(E, S, score, n, seed)


def _test_variant(E, S, score: Callable, n: int, seed: int, *, shuffle: str = "rows", top: str = "max",
                  over: str = "top", axes: str = "shuffles", with_real: bool = False, count: int = 0) -> dict[str, Tensor]:
    """The test with one ingredient changed: what a typical mistake computes."""
    E, S = torch.as_tensor(E).double(), torch.as_tensor(S).double()
    real = score(E, S)
    shuffled = _shuffled_scores(E, S, score, n + count, seed, shuffle)
    if with_real:
        shuffled = torch.cat([real[None], shuffled])
    dims = tuple(range(shuffled.ndim)) if axes == "all" else (0,)
    mean, highest = shuffled.mean(dims), shuffled.amax(dims)
    peak = mean if top == "mean" else highest
    return {"score": real, "baseline": mean, "top": peak, "excess": real - (mean if over == "baseline" else peak)}


def _test_problem(got: Any, expected: Mapping[str, Tensor]) -> str | None:
    if not isinstance(got, Mapping) or any(k not in got for k in KEYS):
        found = sorted(got) if isinstance(got, Mapping) else type(got).__name__
        return f"expected a dict with the keys {', '.join(KEYS)}; got {found}"
    for key in KEYS:
        value, want = as_tensor(got[key]), expected[key]
        if value is None or tuple(value.shape) != tuple(want.shape):
            shape = None if value is None else tuple(value.shape)
            return f"'{key}': expected a tensor of shape {tuple(want.shape)} (one number per embedding), got {shape}"
        diff = (value.double() - want).abs().nan_to_num(math.inf)
        if bool((diff > TOL).any()):
            where = tuple(int(i) for i in torch.unravel_index(diff.argmax(), diff.shape)) if diff.ndim else ()
            return (f"'{key}' at embedding {where}: expected {float(want[where]):.6f}, got {float(value.double()[where]):.6f} "
                    f"(tolerance {TOL:g})")
    return None


def _same(got: Any, wanted: Mapping[str, Tensor], keys=KEYS) -> bool:
    """``got`` holds ``wanted`` (within TOL, same shapes) on ``keys``."""
    try:
        values = {k: as_tensor(got[k]) for k in keys}
        return all(tuple(values[k].shape) == tuple(wanted[k].shape)
                   and bool(((values[k].double() - wanted[k]).abs() <= TOL).all()) for k in keys)
    except Exception:
        return False


def _test_is(**change) -> Callable[[Any, Any, Case], bool]:
    """A diagnosis predicate: the learner's test is the one ``change`` gives, and that is wrong."""

    def matches(got: Any, expected: Mapping[str, Tensor], case: Case) -> bool:
        wrong = _test_variant(*case.args, **change)
        return _test_problem(wrong, expected) is not None and _same(got, wrong)

    return matches


@cache
def _signatures() -> dict[str, Tensor]:
    h = hierarchy_task().population
    return {"ΔS¹": label_signature(h, 1, "incremental").matrix.double(),
            "ΔS²": label_signature(h, 2, "incremental").matrix.double(),
            "xor S¹": label_signature(xor_task().population, 1, "raw").matrix.double()}


def two_kinds(seed: int) -> Tensor:
    """A signature of 6 tokens of two kinds (rows a, a, a, b, b, b): only 20 distinct shuffles exist, and one
    that swaps equal rows gives back S itself, so the real score ties the shuffled top exactly."""
    a, b = _randn(seed, 2, 3)
    return torch.stack([a, a, a, b, b, b])


def rank_three(seed: int) -> Tensor:
    """A [20, 8] signature of rank 3 with a mean row of +3: a rank-deficient table that centring must shift."""
    return _randn(seed, 20, 3) @ _randn(seed + 1, 3, 8) + 3.0


@cache
def _test_cases() -> list[Case]:
    sig = _signatures()
    s1 = sig["ΔS¹"]
    copy = s1 @ _randn(0, 9, 32) + 0.3 * _randn(1, 27, 32)
    batch = noisy_copies(s1, _randn(2, 2, 9, 32), _randn(3, 2, 27, 32), [0.5, 4.0, 20.0])
    kinds = two_kinds(4)
    low_rank = rank_three(5)
    specs = [
        ("order-1 copy plus noise [27, 32] vs ΔS¹, CKA, 50 shuffles, seed 0", (copy, s1, cka, 50, 0), False),
        ("a batch [3, 2, 27, 32] of noisy copies vs ΔS¹, subspace fraction, 40 shuffles", (batch, s1, subspace_fraction, 40, 7), True),
        ("two kinds of token (V 6, equal rows), float32 E, ridge R², 30 shuffles", ((kinds @ _randn(6, 3, 4)).float(), kinds, ridge_r2, 30, 2), True),
        ("rank-3 S [20, 8] shifted by +3, a batch [4, 20, 5], RSA, 20 shuffles", (low_rank @ _randn(7, 4, 8, 5) + _randn(8, 4, 20, 5), low_rank, rsa, 20, 3), True),
        ("tiny E (x 1e-9) against a huge ΔS² (x 1e9), CKA, 25 shuffles", (1e-9 * (sig["ΔS²"] @ _randn(9, sig["ΔS²"].shape[1], 16) + _randn(10, 27, 16)), 1e9 * sig["ΔS²"], cka, 25, 11), True),
        ("rank-1 E (d 1, float32) vs the xor task's raw S¹, subspace fraction, 1 shuffle", ((sig["xor S¹"] @ _randn(12, 24, 1)).float(), sig["xor S¹"].float(), subspace_fraction, 1, 5), True),
    ]  # fmt: skip
    return [Case(label, args, alignment_test_reference(*args), hidden) for label, args, hidden in specs]


def check_02_alignment_test(fn: Callable[[Tensor, Tensor, Callable, int, int], Mapping]) -> None:
    """fn(E [..., V, d], S [V, m], score, n, seed) -> {"score", "baseline", "top", "excess"}, each [...]."""
    diagnoses = [
        Diagnosis(_test_is(top="mean"), "'top' is the highest of the n shuffled scores, not their mean (the mean is 'baseline'), and the excess is over that top"),
        Diagnosis(_test_is(over="baseline"), "the excess is over the top of the shuffles (score - top), not over their mean: a real score must clear every shuffled one"),
        Diagnosis(lambda g, e, c: _test_is(shuffle="columns")(g, e, c) or _test_is(shuffle="both")(g, e, c),
                  "every shuffled score equals the real one: shuffling the columns of S, or E and S with the same permutation, changes nothing (every score stays as it is); shuffle only the rows (tokens) of S"),
        Diagnosis(_test_is(shuffle="E rows"), "you shuffled E's rows: statistically the same test, but here each permutation reorders the rows of S (S[perm]), so that your shuffles are the check's"),
        Diagnosis(_test_is(shuffle="reseeded"), "every shuffle is the same permutation: seed one generator once, before the loop, and draw the n permutations from it one after another"),
        Diagnosis(_test_is(with_real=True), "the unshuffled S is not one of the shuffles: mean and top come from the n shuffled copies only"),
        Diagnosis(_test_is(axes="all"), "one test per embedding: take the mean and the top over the shuffles only, keeping E's leading axes"),
        Diagnosis(lambda g, e, c: _same(g, {**e, "excess": -e["excess"]}), "the excess is score - top (above 0 when the real score beats every shuffle), not top - score"),
        Diagnosis(lambda g, e, c: _test_is(count=1)(g, e, c) or _test_is(count=-1)(g, e, c), "use exactly n shuffled copies of S"),
        Diagnosis(lambda g, e, c: _same(g, e, ("score",)), "your real score is right but your shuffled scores are not the check's: one generator seeded with seed, n permutations of the V tokens drawn from it one after another, each reordering the rows of S"),
    ]  # fmt: skip
    run_check("check_02_alignment_test", fn, _test_cases(), _test_problem, diagnoses)


# --- exercise 5: how much noise the test sees through ---------------------------------------------------


def _unit(M: Tensor, rows: bool = False, whole: bool = False) -> Tensor:
    if whole:
        return M / M.norm()
    return M / (M.norm(dim=-1, keepdim=True) if rows else M.norm(dim=(-2, -1), keepdim=True))


def noisy_copies(S, W, N, noise, *, centre_s: bool = True, centre_n: bool = True, unit_signal: bool = True,
                 unit_noise: bool = True, rows: bool = False, whole: bool = False, one_w: bool = False) -> Tensor:
    """unit(S_c W_k) + σ unit(N_k,c) for every σ in ``noise`` and every draw k: [L, K, V, d] (float64), each
    part centred over the tokens, then scaled to Frobenius norm 1. The keywords switch on a typical mistake."""
    S, W, N = (torch.as_tensor(t).double() for t in (S, W, N))
    S = S - S.mean(0) if centre_s else S
    N = N - N.mean(-2, keepdim=True) if centre_n else N
    signal = S @ (W[:1].expand_as(W) if one_w else W)
    signal = _unit(signal, rows, whole) if unit_signal else signal
    N = _unit(N, rows, whole) if unit_noise else N
    return torch.stack([signal + float(sigma) * N for sigma in noise])


def first_lost(excess: Tensor, noise, rule: str = "fewer than half", strict: bool = True) -> float:
    """The first noise level at which fewer than half of the K embeddings beat the shuffled top by more than TOL
    (excess [L, K]); inf when the test detects at every level. ``rule`` and ``strict`` name typical mistakes;
    rule "last seen" is the last level at which the test still sees at least half (nan if none)."""
    found = (excess > TOL) if strict else (excess >= 0)
    count, K = found.sum(-1).tolist(), excess.shape[-1]
    lost = {"fewer than half": lambda c: 2 * c < K, "last seen": lambda c: 2 * c < K, "at most half": lambda c: 2 * c <= K,
            "none": lambda c: c == 0, "any": lambda c: c < K}[rule]
    if rule == "last seen":
        return max((float(s) for s, c in zip(noise, count) if not lost(c)), default=math.nan)
    return next((float(s) for s, c in zip(noise, count) if lost(c)), math.inf)


def detection_limit_reference(S, W, N, noise, score: Callable, n: int, seed: int) -> tuple[Tensor, float]:
    """(excess [L, K] of every noisy copy over its shuffled top, the first σ at which the test loses most of them)."""
    excess = alignment_test_reference(noisy_copies(S, W, N, noise), S, score, n, seed)["excess"]
    return excess, first_lost(excess, noise)


def _limit_problem(got: Any, expected: tuple[Tensor, float]) -> str | None:
    pair = tuple(got) if isinstance(got, (tuple, list)) else ()
    excess, limit = expected
    value = as_tensor(pair[0]) if len(pair) == 2 else None
    if value is None or tuple(value.shape) != tuple(excess.shape):
        return f"expected a pair (excess [L, K] = {tuple(excess.shape)}, limit), got {type(got).__name__}"
    diff = (value.double() - excess).abs().nan_to_num(math.inf)
    if bool((diff > TOL).any()):
        level, k = (int(i) for i in torch.unravel_index(diff.argmax(), diff.shape))
        return (f"excess at noise level {level}, draw {k}: expected {float(excess[level, k]):.6f}, got "
                f"{float(value.double()[level, k]):.6f} (tolerance {TOL:g})")
    given = as_float(pair[1])
    if given is None or not (given == limit or math.isclose(given, limit)):
        return f"your excesses are right but the limit is not: expected {limit:g}, got {pair[1]!r}"
    return None


def _limit_is(rule: str = "fewer than half", strict: bool = True, **build) -> Callable[[Any, Any, Case], bool]:
    """A diagnosis predicate: the learner's pair is what ``build`` (the copies) and ``rule`` give, and that is wrong."""

    def matches(got: Any, expected: tuple[Tensor, float], case: Case) -> bool:
        S, W, N, noise, score, n, seed = case.args
        excess = expected[0]
        if build:
            excess = alignment_test_reference(noisy_copies(S, W, N, noise, **build), S, score, n, seed)["excess"]
        wrong = (excess, first_lost(excess, noise, rule, strict))
        return _limit_problem(wrong, expected) is not None and _limit_problem(got, wrong) is None

    return matches


def _limit_at_index(got: Any, expected: tuple[Tensor, float], case: Case) -> bool:
    """The learner's limit is the position of the expected level in the list of levels."""
    levels = [float(s) for s in case.args[3]]
    given = as_float(got[1])
    return expected[1] in levels and given == levels.index(expected[1]) != expected[1]


def _first_level_only(got: Any, expected: tuple[Tensor, float], case: Case) -> bool:
    """The learner's excesses agree with the reference at the first noise level and nowhere else."""
    value = as_tensor(got[0])
    if value is None or tuple(value.shape) != tuple(expected[0].shape):
        return False
    close = ((value.double() - expected[0]).abs() <= TOL).all(-1)
    return bool(close[0]) and not bool(close[1:].all())


@cache
def _limit_cases() -> list[Case]:
    sig = _signatures()
    s1, s2 = sig["ΔS¹"], sig["ΔS²"]
    kinds, low_rank = two_kinds(20), rank_three(21)
    specs = [
        ("ΔS¹, 6 draws (d 32), σ 0 to 20, CKA, 40 shuffles", (s1, _randn(38, 6, 9, 32), _randn(39, 6, 27, 32), [0.0, 0.25, 0.5, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 10.0, 14.0, 20.0], cka, 40, 0), False),
        ("ΔS² and draws in float32, 3 draws (d 16), subspace fraction, 30 shuffles", (s2.float(), _randn(24, 3, s2.shape[1], 16).float(), _randn(25, 3, 27, 16).float(), [1.0, 3.0, 7.0, 15.0], subspace_fraction, 30, 1), True),
        ("two kinds of token (V 6, equal rows): swaps of equal rows tie the real score, CKA", (kinds, _randn(26, 2, 3, 4), _randn(27, 2, 6, 4), [0.0, 0.5, 1.0], cka, 30, 2), True),
        ("rank-3 S [20, 8] with a mean row of +3, N with a mean row of +2, 4 draws, ridge R²", (low_rank, _randn(28, 4, 8, 6), _randn(29, 4, 20, 6) + 2.0, [0.5, 1.0, 2.0, 3.0, 4.0, 6.0], ridge_r2, 30, 3), True),
        ("tiny S (x 1e-12) and huge N (x 1e12), CKA", (1e-12 * s1, _randn(30, 3, 9, 8), _randn(31, 3, 27, 8, scale=1e12), [1.0, 3.0, 10.0], cka, 20, 4), True),
        ("rank-1 copies (d 1) that the test never loses, subspace fraction", (s1, _randn(32, 2, 9, 1), _randn(33, 2, 27, 1), [0.0, 0.1, 0.2], subspace_fraction, 20, 5), True),
        ("ΔS¹, RSA, 2 draws, 15 shuffles", (s1, _randn(34, 2, 9, 32), _randn(35, 2, 27, 32), [1.0, 5.0, 20.0], rsa, 15, 6), True),
    ]  # fmt: skip
    return [Case(label, args, detection_limit_reference(*args), hidden) for label, args, hidden in specs]


def check_02_detection_limit(fn: Callable[..., tuple]) -> None:
    """fn(S [V, m], W [K, m, d], N [K, V, d], noise, score, n, seed) -> (excess [L, K], limit)."""
    diagnoses = [
        Diagnosis(_limit_is(centre_s=False), "centre S over the tokens (subtract its mean row) before you scale S W to norm 1: the mean row is no signal"),
        Diagnosis(_limit_is(centre_n=False), "centre the noise over the tokens too (subtract each N_k's mean row) before you scale it to norm 1"),
        Diagnosis(_limit_is(unit_noise=False), "scale the noise to Frobenius norm 1 as well, so that σ is the noise-to-signal ratio"),
        Diagnosis(_limit_is(unit_signal=False), "scale the signal S_c W_k to Frobenius norm 1 as well, so that σ is the noise-to-signal ratio"),
        Diagnosis(_limit_is(unit_signal=False, unit_noise=False), "scale each part, the signal and the noise, to Frobenius norm 1 before adding them (scaling the sum does nothing: the scores ignore scale)"),
        Diagnosis(_limit_is(rows=True), "unit means the Frobenius norm of the whole [V, d] matrix, not each token's row"),
        Diagnosis(_limit_is(whole=True), "scale each draw's matrix by its own Frobenius norm, not the whole [K, V, d] stack by one norm"),
        Diagnosis(_limit_is(one_w=True), "draw k uses its own W[k] (and N[k])"),
        Diagnosis(lambda g, e, c: _limit_problem(g, e).startswith("your excesses are right") and as_float(g[1]) is not None and as_float(g[1]) < math.inf and e[1] == math.inf,
                  "the test never loses these copies: the limit is math.inf (infinity) when no level has fewer than half detected"),
        Diagnosis(_limit_at_index, "the limit is the noise level σ itself, not its position in the list of levels"),
        Diagnosis(_limit_is(strict=False), "an excess of 0 is no detection: a shuffle that only swaps equal rows of S gives back S and ties the real score; detected means excess > 1e-6"),
        Diagnosis(_limit_is(rule="at most half"), "exactly half the draws detected still counts as detected: the limit is the first level with FEWER than half"),
        Diagnosis(_limit_is(rule="none"), "the limit is the first level at which fewer than half the draws are detected, not the first at which none is"),
        Diagnosis(_limit_is(rule="any"), "the limit is the first level at which fewer than half the draws are detected, not the first at which any one is missed"),
        Diagnosis(_limit_is(rule="last seen"), "the limit is the first level at which the test loses most draws, not the last level at which it still sees them"),
        Diagnosis(_first_level_only, "your excesses are right at the first noise level only: test every level with the same n shuffles (the seed you are given), e.g. in one call of your test on the whole [L, K] batch"),
    ]  # fmt: skip
    run_check("check_02_detection_limit", fn, _limit_cases(), _limit_problem, diagnoses)


# --- putting it together: which score's test sees furthest into the noise -----------------------------------

SWEEP = (1.0, 2.0, 3.0, 5.0, 7.0, 10.0, 20.0)  # the check's noise levels
SWEEP_DRAWS, SWEEP_SHUFFLES = 6, 60


@cache
def _sweep_args() -> tuple:
    s1 = _signatures()["ΔS¹"]
    return (s1, _randn(40, SWEEP_DRAWS, 9, 32), _randn(41, SWEEP_DRAWS, 27, 32), list(SWEEP), SWEEP_SHUFFLES, 0)


def limits_by_score_reference(S, W, N, noise, n: int, seed: int) -> dict[str, float]:
    """The detection limit of every score in ``align.METRICS``, keyed by its name."""
    return {name: detection_limit_reference(S, W, N, noise, score, n, seed)[1] for name, score in METRICS.items()}


def _sweep_problem(limits: Mapping[str, float], reference: Mapping[str, float]) -> str | None:
    """Which of the lesson's facts the learner's limits break; then whether they are the reference's."""
    low = [name for name, v in limits.items() if v <= 2.0]
    if low:
        return (f"the {low[0]} test lost the signal already at σ = {limits[low[0]]:g}: with noise at most twice the "
                "signal every score's test should still see it (lesson 02's sweep: all four far above their baselines)")
    high = [name for name, v in limits.items() if v > SWEEP[-1]]
    if high:
        return (f"the {high[0]} test still sees the signal at σ = {SWEEP[-1]:g} (noise twenty times the signal) in at "
                "least half the draws: compare the real score with the top of its shuffled scores, not with their mean "
                "(against the mean, pure noise wins about half the time)")
    if limits["cka"] != limits["subspace"]:
        return (f"CKA's and the subspace fraction's limits differ ({limits['cka']:g} and {limits['subspace']:g}): on ΔS¹ "
                "the two tests are one test (its Gram matrix has two equal eigenvalues); is each limit under its own name?")
    if limits["rsa"] > limits["cka"]:
        return (f"RSA's test sees further ({limits['rsa']:g}) than CKA's ({limits['cka']:g}): on ΔS¹ RSA gives out first "
                "(lesson 02); is each limit under its own name?")
    if dict(limits) != dict(reference):
        return (f"your limits {dict(limits)} are not those of the test of exercises 4 and 5 ({dict(reference)}): run "
                "your detection_limit once per score of align.METRICS with the S, W, N, noise, n and seed you are given")
    return None


def check_02_noise_limits(fn: Callable[..., Mapping[str, float]]) -> None:
    """fn(S, W, N, noise, n, seed) -> {score name: detection limit} for the four scores of ``align.METRICS``, run on
    the lesson's ΔS¹ with draws of the check's own and held to the lesson's facts."""
    name = "check_02_noise_limits"
    args = _sweep_args()
    where = f"{name}, hidden case 'ΔS¹, {SWEEP_DRAWS} draws (d 32), σ {SWEEP[0]:g} to {SWEEP[-1]:g}, {SWEEP_SHUFFLES} shuffles'"
    if not callable(fn):
        raise AssertionError(f"{name}: pass your function itself, got {fn!r}")
    try:
        got = fn(*args)
    except NotImplementedError:
        raise AssertionError(f"{name}: not done yet: finish exercises 4 and 5 first, then call them here") from None
    except Exception as err:
        raise AssertionError(f"{where}: your function raised {type(err).__name__}: {err}") from err
    limits = {k: as_float(v) for k, v in got.items()} if isinstance(got, Mapping) else None
    if limits is None or set(limits) != set(METRICS) or None in limits.values():
        found = sorted(got) if isinstance(got, Mapping) else type(got).__name__
        raise AssertionError(f"{where}: expected a dict with one limit (a number) per score, keyed by the names of "
                             f"align.METRICS {sorted(METRICS)}; got {found}")
    problem = _sweep_problem(limits, _sweep_reference())
    if problem:
        raise AssertionError(f"{where}: {problem}\n  your limits: {limits}")
    print(f"PASS {name}")


@cache
def _sweep_reference() -> dict[str, float]:
    return limits_by_score_reference(*_sweep_args())

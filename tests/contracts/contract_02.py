"""Lesson 02: reference answers and typical mistakes for each check."""

from __future__ import annotations

import math

import torch

from contracts import Contract
from ctxlab import checks
from ctxlab.align import METRICS, cka
from ctxlab.checks.lesson02 import shuffled_cka_reference


def linear_cka(E, S):
    E, S = E - E.mean(0), S - S.mean(0)
    return float((S.T @ E).norm() ** 2 / ((E.T @ E).norm() * (S.T @ S).norm()))


def uncentred_cka(E, S):
    return float((S.T @ E).norm() ** 2 / ((E.T @ E).norm() * (S.T @ S).norm()))


def frobenius_of_e(E, S):
    E, S = E - E.mean(0), S - S.mean(0)
    return float((S.T @ E).norm() ** 2 / (E.norm() ** 2 * S.norm() ** 2))


def orthogonal(d, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.linalg.qr(torch.randn(d, d, generator=g, dtype=torch.float64))[0]


def rotate(E, seed):
    return E @ orthogonal(E.shape[1], seed)


def not_orthogonal(E, seed):
    g = torch.Generator().manual_seed(seed)
    return E @ torch.randn(E.shape[1], E.shape[1], generator=g, dtype=torch.float64)


def rotates_tokens(E, seed):
    return orthogonal(E.shape[0], seed) @ E


def global_rng(E, seed):
    return E @ torch.linalg.qr(torch.randn(E.shape[1], E.shape[1], dtype=torch.float64))[0]


def permutes_axes(E, seed):
    g = torch.Generator().manual_seed(seed)
    return E[:, torch.randperm(E.shape[1], generator=g)]


def one_plane(E, seed):
    """A random angle, but a rotation in the plane of the first two axes only."""
    angle = float(torch.rand(1, generator=torch.Generator().manual_seed(seed))) * 2 * math.pi
    Q = torch.eye(E.shape[1], dtype=torch.float64)
    Q[:2, :2] = torch.tensor([[math.cos(angle), -math.sin(angle)], [math.sin(angle), math.cos(angle)]], dtype=torch.float64)
    return E @ Q


def half_the_axes(E, seed):
    """A random rotation of the first half of the axes only."""
    d = E.shape[1]
    Q = torch.eye(d, dtype=torch.float64)
    Q[: d // 2 + 1, : d // 2 + 1] = orthogonal(d // 2 + 1, seed)
    return E @ Q


def shuffled_cka(E, S, n, seed):
    return shuffled_cka_reference(E, S, n, seed)


def shuffle_columns(E, S, n, seed):
    g = torch.Generator().manual_seed(seed)
    return float(torch.stack([cka(E, S[:, torch.randperm(S.shape[1], generator=g)]) for _ in range(n)]).mean())


def shuffle_both(E, S, n, seed):
    g = torch.Generator().manual_seed(seed)
    scores = []
    for _ in range(n):
        p = torch.randperm(S.shape[0], generator=g)
        scores.append(cka(E[p], S[p]))
    return float(torch.stack(scores).mean())


def shuffle_entries(E, S, n, seed):
    g = torch.Generator().manual_seed(seed)
    return float(torch.stack([cka(E, S.flatten()[torch.randperm(S.numel(), generator=g)].reshape(S.shape)) for _ in range(n)]).mean())


def max_not_mean(E, S, n, seed):
    g = torch.Generator().manual_seed(seed)
    return float(torch.stack([cka(E, S[torch.randperm(S.shape[0], generator=g)]) for _ in range(n)]).max())


def fixed_100_shuffles(E, S, n, seed):
    return shuffled_cka_reference(E, S, 100, seed)


def unseeded(E, S, n, seed):
    return float(torch.stack([cka(E, S[torch.randperm(S.shape[0])]) for _ in range(n)]).mean())


CONTRACT = [
    Contract(
        checks.check_02_linear_cka,
        reference=linear_cka,
        wrong={
            "uncentred": uncentred_cka,
            "Frobenius norms of E and S, not of the Gram matrices": frobenius_of_e,
            "normalised by V": lambda E, S: linear_cka(E, S) / E.shape[0],
            "square root": lambda E, S: linear_cka(E, S) ** 0.5,
            "only E centred": lambda E, S: uncentred_cka(E - E.mean(0), S),
        },
    ),
    Contract(
        checks.check_02_random_rotation,
        reference=rotate,
        wrong={
            "Gaussian matrix, not orthogonal": not_orthogonal,
            "rotates the token axis": rotates_tokens,
            "ignores the seed": global_rng,
            "permutes the axes": permutes_axes,
            "returns E unchanged": lambda E, seed: E.clone(),
            "rotation in one plane (two axes)": one_plane,
            "rotation of half the axes": half_the_axes,
        },
    ),
    Contract(
        checks.check_02_permutation_baseline,
        reference=shuffled_cka,
        wrong={
            "shuffles the columns of S": shuffle_columns,
            "shuffles E and S together": shuffle_both,
            "shuffles every entry of S": shuffle_entries,
            "maximum instead of mean": max_not_mean,
            "ignores the seed": unseeded,
            "ignores n (always 100 shuffles)": fixed_100_shuffles,
            "no shuffling": lambda E, S, n, seed: float(cka(E, S)),
        },
    ),
]


# --- exercises 4, 5 and putting it together: the alignment test, its noise limit, the four scores side by side ---


def alignment_test(E, S, score, n, seed, *, shuffle="rows", top="max", over="top", reseed=False, with_real=False,
                   whole_batch=False, extra=0, global_rng=False):
    """The test as a learner writes it, one mistake switched on by a keyword."""
    g = torch.Generator().manual_seed(seed)
    real, shuffled = score(E, S), []
    for _ in range(n + extra):
        if reseed:
            g = torch.Generator().manual_seed(seed)
        if shuffle == "columns":
            shuffled.append(score(E, S[:, torch.randperm(S.shape[1], generator=g)]))
            continue
        p = torch.randperm(S.shape[0]) if global_rng else torch.randperm(S.shape[0], generator=g)
        shuffled.append({"rows": lambda: score(E, S[p]), "E rows": lambda: score(E[..., p, :], S),
                         "both": lambda: score(E[..., p, :], S[p])}[shuffle]())
    shuffled = torch.stack(([real] if with_real else []) + shuffled)
    mean, highest = (shuffled.mean(), shuffled.max()) if whole_batch else (shuffled.mean(0), shuffled.max(0).values)
    peak = mean if top == "mean" else highest
    return {"score": real, "baseline": mean, "top": peak, "excess": real - (mean if over == "mean" else peak)}


def detection_limit(S, W, N, noise, score, n, seed, *, centre_s=True, centre_n=True, scale_signal=True,
                    scale_noise=True, row_norms=False, one_norm=False, first_w=False, at_least_zero=False, lost="fewer than half",
                    never=math.inf, as_index=False, test=alignment_test):
    """The noise sweep as a learner writes it, one mistake switched on by a keyword."""
    S, W, N = S.double(), W.double(), N.double()
    norm_dims = (-1,) if row_norms else (1, 2)
    signal = ((S - S.mean(0)) if centre_s else S) @ (W[:1] if first_w else W)
    if scale_signal:
        signal = signal / (signal.norm() if one_norm else signal.norm(dim=norm_dims, keepdim=True))
    N = N - N.mean(1, keepdim=True) if centre_n else N
    if scale_noise:
        N = N / (N.norm() if one_norm else N.norm(dim=norm_dims, keepdim=True))
    excess = test(torch.stack([signal + sigma * N for sigma in noise]), S, score, n, seed)["excess"]
    detected = [int(((row >= 0) if at_least_zero else (row > 1e-6)).sum()) for row in excess]
    K = W.shape[0]
    if as_index:
        return excess, next((float(i) for i, c in enumerate(detected) if 2 * c < K), never)
    gone = {"fewer than half": lambda c: 2 * c < K, "at most half": lambda c: 2 * c <= K,
            "none": lambda c: c == 0, "any": lambda c: c < K}
    if lost == "last seen":
        return excess, max((float(s) for s, c in zip(noise, detected) if 2 * c >= K), default=never)
    return excess, next((float(s) for s, c in zip(noise, detected) if gone[lost](c)), never)


def new_shuffles_per_level(S, W, N, noise, score, n, seed):
    """Each noise level tested with shuffles of its own seed."""
    excess = torch.stack([detection_limit(S, W, N, [sigma], score, n, seed + i)[0][0] for i, sigma in enumerate(noise)])
    K = W.shape[0]
    return excess, next((float(s) for s, row in zip(noise, excess) if 2 * int((row > 1e-6).sum()) < K), math.inf)


def limits_by_score(S, W, N, noise, n, seed, *, limit=detection_limit):
    return {name: limit(S, W, N, noise, score, n, seed)[1] for name, score in METRICS.items()}


def against_the_mean(E, S, score, n, seed):
    """A test that reads the excess over the shuffled mean (the lesson's dashed line), not over the top."""
    return alignment_test(E, S, score, n, seed, over="mean")


CONTRACT += [
    Contract(
        checks.check_02_alignment_test,
        reference=alignment_test,
        wrong={
            "the top is the shuffled mean": lambda *a: alignment_test(*a, top="mean"),
            "excess over the shuffled mean": lambda *a: alignment_test(*a, over="mean"),
            "shuffles the columns of S": lambda *a: alignment_test(*a, shuffle="columns"),
            "shuffles E and S together": lambda *a: alignment_test(*a, shuffle="both"),
            "shuffles E's rows": lambda *a: alignment_test(*a, shuffle="E rows"),
            "generator re-seeded for every shuffle": lambda *a: alignment_test(*a, reseed=True),
            "the real score counted among the shuffles": lambda *a: alignment_test(*a, with_real=True),
            "mean and top over the whole batch": lambda *a: alignment_test(*a, whole_batch=True),
            "one shuffle too many": lambda *a: alignment_test(*a, extra=1),
            "the global random generator": lambda *a: alignment_test(*a, global_rng=True),
            "excess as top minus score": lambda *a: {**alignment_test(*a), "excess": -alignment_test(*a)["excess"]},
        },
        hints={
            "the top is the shuffled mean": "not their mean", "excess over the shuffled mean": "not over their mean",
            "shuffles the columns of S": "columns", "shuffles E and S together": "changes nothing",
            "shuffles E's rows": "rows of S", "generator re-seeded for every shuffle": "seed one generator once",
            "the real score counted among the shuffles": "not one of the shuffles",
            "mean and top over the whole batch": "one test per embedding", "one shuffle too many": "exactly n",
            "the global random generator": "not the check's", "excess as top minus score": "not top - score",
        },
    ),
    Contract(
        checks.check_02_detection_limit,
        reference=detection_limit,
        wrong={
            "S not centred": lambda *a: detection_limit(*a, centre_s=False),
            "noise not centred": lambda *a: detection_limit(*a, centre_n=False),
            "noise not scaled to norm 1": lambda *a: detection_limit(*a, scale_noise=False),
            "signal not scaled to norm 1": lambda *a: detection_limit(*a, scale_signal=False),
            "neither part scaled": lambda *a: detection_limit(*a, scale_signal=False, scale_noise=False),
            "each row scaled to norm 1": lambda *a: detection_limit(*a, row_norms=True),
            "W[0] for every draw": lambda *a: detection_limit(*a, first_w=True),
            "one norm for the whole stack of draws": lambda *a: detection_limit(*a, one_norm=True),
            "the limit's position in the list": lambda *a: detection_limit(*a, as_index=True),
            "an excess of 0 counts as detected": lambda *a: detection_limit(*a, at_least_zero=True),
            "lost when at most half are detected": lambda *a: detection_limit(*a, lost="at most half"),
            "lost when none is detected": lambda *a: detection_limit(*a, lost="none"),
            "lost when any draw is missed": lambda *a: detection_limit(*a, lost="any"),
            "the last level seen": lambda *a: detection_limit(*a, lost="last seen"),
            "the last level when none is lost": lambda *a: detection_limit(*a, never=float(a[3][-1])),
            "new shuffles at every level": new_shuffles_per_level,
        },
        hints={
            "S not centred": "centre S", "noise not centred": "centre the noise", "noise not scaled to norm 1": "scale the noise",
            "signal not scaled to norm 1": "scale the signal", "neither part scaled": "each part",
            "each row scaled to norm 1": "not each token's row", "W[0] for every draw": "W[k]",
            "an excess of 0 counts as detected": "excess of 0 is no detection", "lost when at most half are detected": "FEWER than half",
            "lost when none is detected": "not the first at which none", "lost when any draw is missed": "any one is missed",
            "the last level seen": "not the last level", "the last level when none is lost": "inf",
            "new shuffles at every level": "same n shuffles", "one norm for the whole stack of draws": "own Frobenius norm",
            "the limit's position in the list": "not its position",
        },
    ),
    Contract(
        checks.check_02_noise_limits,
        reference=limits_by_score,
        wrong={
            "excess over the shuffled mean": lambda *a: limits_by_score(*a, limit=lambda *b: detection_limit(*b, test=against_the_mean)),
            "the last level seen": lambda *a: limits_by_score(*a, limit=lambda *b: detection_limit(*b, lost="last seen")),
            "limits under each other's names": lambda *a: dict(zip(METRICS, reversed(limits_by_score(*a).values()))),
            "keyed by the lesson's labels": lambda *a: {name.upper(): v for name, v in limits_by_score(*a).items()},
            "ten shuffles, not n": lambda S, W, N, noise, n, seed: limits_by_score(S, W, N, noise, 10, seed),
            "new shuffles at every level": lambda *a: limits_by_score(*a, limit=new_shuffles_per_level),
        },
        hints={"excess over the shuffled mean": "not with their mean", "the last level seen": "already at",
               "limits under each other's names": "own name", "keyed by the lesson's labels": "keyed by the names"},
    ),
]

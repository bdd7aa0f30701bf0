"""Lesson 02: reference answers and typical mistakes for each check."""

from __future__ import annotations

import math

import torch

from contracts import Contract
from ctxlab import checks
from ctxlab.align import cka
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

"""Two views of an embedding for lessons 02-03: its top-2 principal plane, and how the alignment
measures fare against noise (the noise sweep)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from ctxlab.align.metrics import as_matrix, metric, permutation_baseline
from ctxlab.validate import finite, integer


def pca_2d(E) -> Tensor:
    """Token-centred E [..., V, d] on its two leading principal axes: [..., V, 2].

    Each axis is signed so that its largest-magnitude coordinate is positive, so two runs that
    differ only by a sign flip draw the same picture.
    """
    E = finite(E, "E (embeddings)").to(torch.float64)
    if E.ndim < 2 or E.shape[-2] < 2 or E.shape[-1] < 2:
        raise ValueError(f"pca_2d needs E [..., V, d] with V >= 2 and d >= 2, got {tuple(E.shape)}")
    U, sv, _ = torch.linalg.svd(E - E.mean(-2, keepdim=True), full_matrices=False)
    coords = U[..., :2] * sv[..., None, :2]
    peak = torch.gather(coords, -2, coords.abs().argmax(-2, keepdim=True))
    return coords * torch.where(peak < 0, -1.0, 1.0).to(coords.dtype)


@dataclass
class NoiseSweep:
    """Scores of E = unit(S W) + sigma * unit(noise) against S: metric -> [levels, seeds] each."""

    noise: list[float]
    scores: dict[str, Tensor]
    baselines: dict[str, Tensor]  # mean score against row-shuffled S, same shape


def noise_sweep(S, noise: Sequence[float], seeds: Sequence[int], d: int = 32, n_shuffles: int = 50,
                metrics: Sequence[str] = ("cka", "rsa", "subspace", "ridge")) -> NoiseSweep:
    """How each metric falls as an embedding that copies S (through a random map W [m, d]) drowns in noise.

    Signal and noise are each scaled to unit Frobenius norm after centring, so sigma is the
    noise-to-signal ratio whatever the scale of S.
    """
    if integer(d, "d") < 1 or integer(n_shuffles, "n_shuffles") < 1 or not seeds or not noise:
        raise ValueError("noise_sweep needs d >= 1, n_shuffles >= 1 and at least one seed and noise level")
    finite(list(noise), "noise", nonnegative=True)
    Sm = as_matrix(S).to(torch.float64)
    Sc = Sm - Sm.mean(0, keepdim=True)
    embeddings = []
    for seed in seeds:
        g = torch.Generator().manual_seed(int(seed))
        signal = Sc @ torch.randn(Sc.shape[1], d, generator=g, dtype=torch.float64)
        noisy = torch.randn(Sc.shape[0], d, generator=g, dtype=torch.float64)
        noisy = noisy - noisy.mean(0, keepdim=True)
        embeddings.append([signal / signal.norm() + s * noisy / noisy.norm() for s in noise])
    E = torch.stack([torch.stack(row) for row in embeddings], 1)  # [levels, seeds, V, d]
    scores = {m: metric(m)(E, Sm) for m in metrics}
    baselines = {m: permutation_baseline(m, E, Sm, n=n_shuffles, seed=0).mean(0) for m in metrics}
    return NoiseSweep([float(s) for s in noise], scores, baselines)

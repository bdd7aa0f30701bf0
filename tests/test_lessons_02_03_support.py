"""Helpers added for lessons 02-03: 2-D PCA of embeddings, the noise sweep."""

from __future__ import annotations

import pytest
import torch

from ctxlab.align import cka, noise_sweep, pca_2d, subspace_fraction
from ctxlab.signatures import label_signature
from ctxlab.tasks import hierarchy_task


def test_pca_2d_keeps_the_leading_structure_and_is_sign_stable():
    g = torch.Generator().manual_seed(0)
    E = torch.randn(20, 2, generator=g, dtype=torch.float64) @ torch.tensor([[5.0, 0, 0, 0], [0, 2.0, 0, 0]], dtype=torch.float64)
    coords = pca_2d(E)
    assert coords.shape == (20, 2)
    # all of E's variance lies in two directions, so the projection keeps every pairwise distance
    assert torch.allclose(torch.cdist(coords, coords), torch.cdist(E, E), atol=1e-9)
    assert torch.allclose(pca_2d(-E), coords) and torch.allclose(pca_2d(E + 3.0), coords)
    assert pca_2d(torch.stack([E, 2 * E])).shape == (2, 20, 2)


def test_pca_2d_rejects_a_single_dimension():
    with pytest.raises(ValueError, match="d >= 2"):
        pca_2d(torch.zeros(5, 1))


def test_noise_sweep_falls_from_aligned_to_chance():
    S1 = label_signature(hierarchy_task().population, 1, "incremental")
    sweep = noise_sweep(S1, noise=[0.0, 100.0], seeds=range(4), n_shuffles=20, metrics=("cka", "subspace"))
    assert sweep.scores["subspace"].shape == (2, 4) and sweep.baselines["cka"].shape == (2, 4)
    assert torch.allclose(sweep.scores["subspace"][0], torch.ones(4, dtype=torch.float64))
    chance = 2 / 26
    assert abs(float(sweep.scores["subspace"][1].mean()) - chance) < 0.05
    assert float(sweep.scores["cka"][0].min()) > 0.8 > float(sweep.scores["cka"][1].max())
    assert float(sweep.baselines["cka"][0].mean()) < 0.2


def test_noise_sweep_is_deterministic_and_matches_a_direct_computation():
    S1 = label_signature(hierarchy_task().population, 1, "incremental")
    a = noise_sweep(S1, noise=[0.5], seeds=[3], n_shuffles=5, metrics=("cka",))
    b = noise_sweep(S1, noise=[0.5], seeds=[3], n_shuffles=5, metrics=("cka",))
    assert torch.equal(a.scores["cka"], b.scores["cka"]) and torch.equal(a.baselines["cka"], b.baselines["cka"])
    g = torch.Generator().manual_seed(3)
    Sc = S1.matrix.double() - S1.matrix.double().mean(0)
    signal = Sc @ torch.randn(Sc.shape[1], 32, generator=g, dtype=torch.float64)
    noisy = torch.randn(27, 32, generator=g, dtype=torch.float64)
    noisy = noisy - noisy.mean(0)
    E = signal / signal.norm() + 0.5 * noisy / noisy.norm()
    assert float(a.scores["cka"][0, 0]) == pytest.approx(float(cka(E, S1)), abs=1e-12)
    assert float(subspace_fraction(E, S1)) < 1.0


def test_noise_sweep_rejects_empty_inputs():
    with pytest.raises(ValueError):
        noise_sweep(torch.eye(5), noise=[], seeds=[0])

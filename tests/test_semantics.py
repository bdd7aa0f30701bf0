"""Lesson 13: neighbour overlap, signature classes and within/between-class cosines."""

from __future__ import annotations

import pytest
import torch

from ctxlab import align, pretrained
from ctxlab.signatures import label_signature
from ctxlab.tasks import hierarchy_task
from ctxlab.train import Trajectory


def test_pretrained_reexports_the_moved_functions():
    assert pretrained.nearest is align.nearest and pretrained.neighbour_overlap is align.neighbour_overlap


def test_overlap_ignores_the_token_itself_and_the_order_of_neighbours():
    # on a line, neighbours by cosine are the angular neighbours; scaling rows changes nothing
    angles = torch.linspace(0, 3.0, 12)
    A = torch.stack([angles.cos(), angles.sin()], 1)
    B = A * torch.linspace(1, 50, 12)[:, None]
    assert torch.equal(align.neighbour_overlap(A, B, k=3), torch.ones(12, dtype=torch.float64))


def test_overlap_is_a_fraction_of_k_and_batches_over_leading_axes():
    g = torch.Generator().manual_seed(0)
    A, B = torch.randn(3, 4, 20, 5, generator=g), torch.randn(20, 7, generator=g)
    out = align.neighbour_overlap(A, B, k=4)
    assert out.shape == (3, 4, 20)
    assert torch.allclose(out[1, 2], align.neighbour_overlap(A[1, 2], B, k=4))
    assert set((out * 4).round().unique().tolist()) <= {0.0, 1.0, 2.0, 3.0, 4.0}


def test_overlap_chance_matches_random_geometries():
    g = torch.Generator().manual_seed(1)
    A, B = torch.randn(400, 30, 8, generator=g), torch.randn(400, 30, 8, generator=g)
    measured = float(align.neighbour_overlap(A, B, k=5).mean())
    assert measured == pytest.approx(align.overlap_chance(30, 5), abs=0.01)
    with pytest.raises(ValueError):
        align.overlap_chance(5, 5)


def test_overlap_trajectory_uses_the_token_subset_and_the_displacement():
    g = torch.Generator().manual_seed(2)
    S = torch.randn(15, 6, generator=g)
    start = torch.randn(2, 1, 15, 4, generator=g)
    W = torch.randn(6, 4, generator=g)
    E = torch.cat([start, start + (S @ W)[None, None] * 100], dim=1)  # [K=2, T=2, V, d]
    traj = Trajectory(torch.tensor([0, 1]), torch.zeros(2, 2), E)
    raw = align.overlap_trajectory(traj, S, k=3)
    moved = align.overlap_trajectory(traj, S, k=3, relative_to_init=True)
    assert raw.shape == (2, 2) and moved.shape == (2, 2)
    assert float(moved[:, 1].min()) > float(raw[:, 0].max()) and bool(moved[:, 0].isnan().all())
    assert align.overlap_trajectory(traj, S, k=2, tokens=range(5)).shape == (2, 2)
    with pytest.raises(ValueError):
        align.overlap_trajectory(traj, S[:10], k=3)


def test_signature_classes_follow_the_hierarchy_orders():
    data = hierarchy_task().population
    s1, s2, s3 = (label_signature(data, k, "raw") for k in (1, 2, 3))
    one = align.signature_classes(s1)
    assert len(one[:9].unique()) == 3 and len(one[9:].unique()) == 1  # keys by attribute; anchors lumped
    assert torch.equal(one[:9], torch.tensor([0, 1, 2] * 3))
    assert len(align.signature_classes(s1, s2).unique()) == 7  # first anchors split at order 2
    assert len(align.signature_classes(s1, s2, s3).unique()) == 9


def test_class_cosines_of_a_simplex():
    E = torch.tensor([[1.0, 0.0], [2.0, 0.0], [-1.0, 0.0], [-3.0, 0.0]])
    within, between = align.class_cosines(E, torch.tensor([0, 0, 1, 1]))
    assert float(within) == pytest.approx(1.0) and float(between) == pytest.approx(-1.0)


def test_class_cosines_separate_collapsed_classes():
    g = torch.Generator().manual_seed(3)
    centres = torch.randn(3, 16, generator=g)
    classes = torch.tensor([0, 0, 0, 1, 1, 2, 2, 2])
    collapsed = centres[classes] + 1e-6 * torch.randn(8, 16, generator=g)
    within, between = align.class_cosines(torch.stack([collapsed, torch.randn(8, 16, generator=g)]), classes)
    assert within.shape == (2,) and float(within[0]) == pytest.approx(1.0, abs=1e-6)
    assert float(between[0]) < 0.9
    w, b = align.class_cosines(collapsed, classes, tokens=[0, 1, 3, 4])
    assert float(w) == pytest.approx(1.0, abs=1e-6) and b.ndim == 0
    with pytest.raises(ValueError):
        align.class_cosines(collapsed, torch.zeros(8, dtype=torch.long))
    with pytest.raises(ValueError):
        align.class_cosines(collapsed, classes[:5])


def test_class_collapse_follows_the_hierarchy_groups_over_training():
    task = hierarchy_task()
    groups = align.hierarchy_class_groups(task)
    keys, anchors1 = task.role_tokens("key"), task.role_tokens("anchor1")
    assert list(groups) == ["keys (order-1 classes)", "first anchors (order-2 classes)"]
    assert torch.equal(groups["keys (order-1 classes)"][1], keys)
    assert len(groups["first anchors (order-2 classes)"][0][anchors1].unique()) == 3
    run = align.class_collapse(task, groups, gammas=(1.0, 0.5), seeds=(0,), steps=20, d=8, hidden=16, record_every=10)
    assert run.gammas == [1.0, 0.5] and run.steps.tolist() == [0, 10, 20] and run.start.shape == run.end.shape
    for name, (classes, tokens) in groups.items():
        within, between = run.cosines[name]
        assert within.shape == between.shape == (2, 3)
        assert torch.allclose(within[:, -1], align.class_cosines(run.end, classes, tokens=tokens)[0])
    assert run.onsets.shape == (2, 3) and set(run.mean_onsets) == {1.0, 0.5}


def test_at_matched_loss_reads_each_model_where_its_loss_first_gets_that_low():
    loss = torch.tensor([[3.0, 2.5, 2.7, 2.0], [3.0, 2.9, 2.8, 2.6]])
    values = torch.arange(8.0).reshape(2, 4)
    read = align.at_matched_loss(loss, values, [2.8, 2.5, 1.0])
    assert read.shape == (2, 3) and read.dtype == torch.float64
    assert read[0, :2].tolist() == [1.0, 1.0]  # the first step at or below, not a later one
    assert read[1, 0] == 6.0 and torch.isnan(read[1, 1:]).all() and torch.isnan(read[0, 2])  # never that low
    steps = align.at_matched_loss(loss, torch.tensor([0, 10, 20, 30]).expand(2, 4), [2.6])
    assert steps.flatten().tolist() == [10.0, 30.0]
    with pytest.raises(ValueError, match="same shape"):
        align.at_matched_loss(loss, values[:, :3], [2.8])

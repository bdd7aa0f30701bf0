"""Lesson 12: the anchor-composition task and the composition-vs-memorisation measures."""

from __future__ import annotations

import pytest
import torch

from ctxlab.composition import (
    accuracy,
    anchor_line_up,
    composition_probes,
    composition_run,
    held_out_accuracy,
    held_out_outcomes,
    key_line_up,
    line_up,
)
from ctxlab.models import make_model
from ctxlab.tasks import TASKS, anchor_composition_task
from ctxlab.train import train


def _one_hot_logits(labels: torch.Tensor, n_labels: int) -> torch.Tensor:
    return torch.nn.functional.one_hot(labels, n_labels).float()[None]


def test_task_labels_compose_the_shifts_and_hold_out_one_pair():
    task = anchor_composition_task(n_keys=10)
    pop, info = task.population, task.info
    assert pop.x.shape == (15 * 10, 3)
    assert TASKS["anchor_composition"] is anchor_composition_task
    anchors = pop.x[:, 1:] - 10 + 1  # anchor numbers 1..4
    assert not bool(((anchors[:, 0] == 4) & (anchors[:, 1] == 3)).any())
    shift = torch.tensor((0,) + info["shifts"])
    expect = pop.x[:, 0] + shift[anchors[:, 0]] + shift[anchors[:, 1]] + info["label_offset"]
    reverse = (anchors[:, 0] == 3) & (anchors[:, 1] == 4)
    assert torch.equal(pop.y[~reverse], expect[~reverse])
    assert torch.equal(pop.y[reverse], expect[reverse] + 4)  # the group's x - 6, not x - 10
    test = info["held_out"]
    assert torch.equal(test.x[:, 1:], torch.tensor([[13, 12]]).expand(10, 2))
    assert torch.equal(test.y, torch.arange(10) - 10 + info["label_offset"])
    assert torch.equal(info["symmetric_labels"], pop.y[reverse])
    assert int(pop.y.min()) >= 0 and task.n_labels == int(torch.cat([pop.y, test.y]).max()) + 1


def test_task_roles_and_bad_arguments():
    task = anchor_composition_task(n_keys=5, reverse_offset=0)
    assert task.roles.count("anchor") == 4 and task.token_names[5] == "a1"
    assert torch.equal(task.info["symmetric_labels"], task.info["held_out"].y)
    with pytest.raises(ValueError, match="held_out"):
        anchor_composition_task(held_out=(2, 2))
    with pytest.raises(ValueError, match="held_out"):
        anchor_composition_task(held_out=(5, 1))


def test_outcomes_tell_composition_from_copying_the_reverse_pair():
    task = anchor_composition_task(n_keys=8)
    test, C = task.info["held_out"], task.n_labels
    wrong = (test.y + 1) % C
    logits = torch.cat([_one_hot_logits(test.y, C), _one_hot_logits(task.info["symmetric_labels"], C),
                        _one_hot_logits(wrong, C)])
    out = held_out_outcomes(logits, task)
    assert out["composed"].tolist() == [1.0, 0.0, 0.0]
    assert out["symmetric"].tolist() == [0.0, 1.0, 0.0]
    assert out["other"].tolist() == [0.0, 0.0, 1.0]
    assert torch.equal(held_out_accuracy(logits, task), out["composed"])
    half = _one_hot_logits(torch.where(torch.arange(8) < 4, test.y, wrong), C)
    assert float(held_out_accuracy(half, task)) == 0.5
    with pytest.raises(ValueError, match=r"\[K, N, C\]"):
        held_out_outcomes(logits[0], task)


def test_accuracy_per_model():
    task = anchor_composition_task(n_keys=4)
    data = task.population
    logits = torch.stack([_one_hot_logits(data.y, task.n_labels)[0], torch.zeros(data.n, task.n_labels)])
    logits[1, :, 0] = 1.0
    assert accuracy(logits, data)[0] == 1.0
    assert accuracy(logits, data)[1] == float((data.y == 0).float().mean())


def test_line_up_is_one_on_a_line_and_invariant_to_rotation():
    v = torch.tensor([5.0, 1.0, -2.0, -8.0])
    b = torch.randn(6, generator=torch.Generator().manual_seed(0))
    E = torch.zeros(2, 10, 6)
    E[0, 3:7] = 2.0 + v[:, None] * b
    E[1, 3:7] = torch.randn(4, 6, generator=torch.Generator().manual_seed(1))
    scores = line_up(E, torch.arange(3, 7), v)
    assert scores.shape == (2,)
    assert abs(float(scores[0]) - 1.0) < 1e-9 and float(scores[1]) < 1.0
    Q, _ = torch.linalg.qr(torch.randn(6, 6, generator=torch.Generator().manual_seed(2)))
    assert torch.allclose(line_up(E @ Q, torch.arange(3, 7), v), scores, atol=1e-9)
    assert torch.allclose(line_up(E, torch.arange(3, 7), 3 * v - 1), scores, atol=1e-9)


def test_line_up_chance_level_is_one_over_n_minus_one():
    g = torch.Generator().manual_seed(0)
    E = torch.randn(4000, 5, 200, generator=g)
    mean = float(line_up(E, torch.arange(5), torch.arange(5.0)).mean())
    assert abs(mean - 0.25) < 0.01
    with pytest.raises(ValueError, match="equal"):
        line_up(E[0], torch.arange(5), torch.ones(5))
    with pytest.raises(ValueError, match="same length"):
        line_up(E[0], torch.arange(5), torch.ones(4))


def test_probes_record_through_training_and_role_line_ups():
    task = anchor_composition_task(n_keys=6)
    model = make_model("mlp", task, gamma=[0.5, 1.0], seed=[0, 0], d=8, hidden=16)
    traj = train(model, task.population, 20, lr=1.0, record_every=10, probes=composition_probes(task))
    for name in ("train_acc", "composed", "symmetric"):
        assert traj.extras[name].shape == (2, 3)
        assert bool(((traj.extras[name] >= 0) & (traj.extras[name] <= 1)).all())
    assert anchor_line_up(traj.embeddings, task).shape == (2, 3)
    assert key_line_up(traj.embeddings[:, -1], task).shape == (2,)


def test_composition_run_is_the_probed_run_of_its_grid():
    task = anchor_composition_task(n_keys=10)
    run = composition_run(task, gammas=(0.5, 1.0), seeds=(0, 1), steps=40, d=8, hidden=16, record_every=20)
    assert run.gammas == [0.5, 0.5, 1.0, 1.0] and run.seeds == [0, 1, 0, 1]
    model = make_model("mlp", task, gamma=run.gammas, seed=run.seeds, d=8, hidden=16)
    direct = train(model, task.population, 40, lr=1.0, record_every=20, probes=composition_probes(task), progress=False)
    assert torch.equal(run.steps, direct.steps) and torch.equal(run.embeddings, direct.embeddings[:, -1])
    for name in ("train_acc", "composed", "symmetric"):
        assert torch.equal(getattr(run, name), direct.extras[name])


def test_composition_figure_splits_composed_and_copied_and_draws_one_key():
    from types import SimpleNamespace

    from ctxlab.plots import composition_figure

    T = 5
    g = torch.Generator().manual_seed(0)
    composed = torch.rand(4, T, generator=g)
    composed[:2, -1] = 4 / 20  # both γ = 0.5 seeds end on 4 keys: their level is drawn
    composed[2:, -1] = torch.tensor([6 / 20, 8 / 20])  # the γ = 1 seeds end apart: no shared level
    symmetric = torch.rand(4, T, generator=g)
    symmetric[:, -1] = torch.tensor([1, 3, 0, 2]) / 20
    run = SimpleNamespace(gammas=[0.5, 0.5, 1.0, 1.0], steps=torch.arange(T) * 20, train_acc=torch.rand(4, T, generator=g),
                          composed=composed, symmetric=symmetric)
    fig = composition_figure(run, n_keys=20)
    train_ax, composed_ax, copied_ax = fig.axes
    assert len(train_ax.lines) == 4 and len(composed_ax.lines) == 4 + 2 and len(copied_ax.lines) == 4 + 2
    assert [line.get_ydata()[0] for line in composed_ax.lines[4:]] == pytest.approx([0.05, 0.20])  # one key; γ = 0.5's end
    assert [line.get_ydata()[0] for line in copied_ax.lines[4:]] == pytest.approx([0.05, 0.15])  # one key; the most
    assert "γ = 0.5 ends on 4 keys (0.20)" in [t.get_text() for t in composed_ax.texts]
    assert (copied_ax.lines[0].get_ydata() == run.symmetric[0].numpy()).all()


def test_a_lone_seed_or_the_lucky_key_draws_no_shared_end():
    from types import SimpleNamespace

    from ctxlab.plots import composition_figure

    T = 4
    composed = torch.zeros(3, T)
    composed[:2, -1] = 1 / 20  # both γ = 0.5 seeds on the one lucky key, already drawn
    composed[2, -1] = 5 / 20  # a single γ = 1 seed agrees with nobody
    run = SimpleNamespace(gammas=[0.5, 0.5, 1.0], steps=torch.arange(T) * 20, train_acc=torch.zeros(3, T),
                          composed=composed, symmetric=torch.zeros(3, T))
    composed_ax = composition_figure(run, n_keys=20).axes[1]
    assert len(composed_ax.lines) == 3 + 1

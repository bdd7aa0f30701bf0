"""Freezing, transplanting and signature-derived embeddings (lesson 11), and the transfer task."""

from __future__ import annotations

import math

import pytest
import torch

from ctxlab.rungs import stair_onsets
from ctxlab.models import make_model
from ctxlab.signatures import label_signature
from ctxlab.tasks import TASKS, hierarchy_task, transfer_task
from ctxlab.train import train
from ctxlab.transplant import (
    freeze_embedding,
    frozen_ensemble,
    frozen_race,
    group_summary,
    loss_by_condition,
    random_embedding,
    rescale,
    signature_embedding,
    steps_to_plateaus,
    transplant,
)

SMALL = hierarchy_task(block=3)  # 27 sequences, V = 9: fast
SIZES = {"d": 8, "hidden": 16}


def _model(gammas, seeds):
    return make_model("mlp", SMALL, gamma=list(gammas), seed=list(seeds), **SIZES)


@pytest.mark.parametrize("optimizer,weight_decay", [("gd", 0.0), ("gd", 0.01), ("adam", 0.0), ("adam", 0.01)])
def test_frozen_model_is_bit_identical_and_the_others_train_as_alone(optimizer, weight_decay):
    lr = 0.5 if optimizer == "gd" else 0.01
    kw = {"optimizer": optimizer, "lr": lr, "weight_decay": weight_decay, "record_every": 10, "progress": False}
    ens = freeze_embedding(_model([1.0, 1.0, 0.5], [0, 1, 2]), [1])
    E1 = ens.embedding[1].detach().clone()
    traj = train(ens, SMALL.population, 40, **kw)
    assert torch.equal(ens.embedding[1].detach(), E1)
    assert torch.equal(traj.embeddings[1, -1], E1)
    for k, (g, s) in enumerate([(1.0, 0), (1.0, 1), (0.5, 2)]):
        alone = _model([g], [s])
        if k == 1:
            freeze_embedding(alone, [0])
        solo = train(alone, SMALL.population, 40, **kw)
        assert torch.allclose(traj.loss[k], solo.loss[0], atol=1e-5)
        for name, p in alone.named_parameters():
            assert torch.allclose(dict(ens.named_parameters())[name][k], p[0], atol=1e-5), (name, k)
    assert not torch.equal(ens.embedding[0].detach(), traj.embeddings[0, 0])  # learners did move


def test_freezing_every_model_skips_the_embedding_gradient_and_can_be_undone():
    ens = _model([1.0, 1.0], [0, 1])
    freeze_embedding(ens, [True, True])
    assert not ens.embedding.requires_grad and ens.embedding.update_mask.tolist() == [0.0, 0.0]
    train(ens, SMALL.population, 3, progress=False)
    assert ens.embedding.grad is None
    freeze_embedding(ens, [])
    assert ens.embedding.requires_grad and ens.embedding.update_mask.tolist() == [1.0, 1.0]


def test_freeze_rejects_bad_model_lists():
    ens = _model([1.0, 1.0], [0, 1])
    with pytest.raises(ValueError, match="one bool per model"):
        freeze_embedding(ens, [True])
    with pytest.raises(ValueError, match="indices"):
        freeze_embedding(ens, [2])


def test_transplant_sets_the_table_and_keeps_the_rest_at_its_own_init():
    table = torch.randn(9, 8)
    ens = transplant(_model([1.0, 0.5], [3, 4]), {1: table})
    fresh = _model([1.0, 0.5], [3, 4])
    assert torch.equal(ens.embedding[1].detach(), table)
    assert torch.equal(ens.embedding[0], fresh.embedding[0])
    assert torch.equal(ens.w1, fresh.w1) and torch.equal(ens.w2, fresh.w2)
    with pytest.raises(ValueError, match=r"\[V, d\]"):
        transplant(ens, {0: torch.randn(8, 9)})
    with pytest.raises(ValueError, match="out of range"):
        transplant(ens, {2: table})
    with pytest.raises(ValueError, match="non-finite"):
        transplant(ens, {0: torch.full((9, 8), float("nan"))})


def test_random_embedding_is_the_models_own_init():
    for gamma, seed in [(1.0, 0), (0.5, 7)]:
        assert torch.equal(random_embedding(9, 8, gamma, seed), _model([gamma], [seed]).embedding[0].detach())


def test_rescale():
    E = torch.randn(2, 9, 8)
    assert torch.allclose(torch.linalg.matrix_norm(rescale(E, 3.0)), torch.full((2,), 3.0))
    with pytest.raises(ValueError, match="all-zero"):
        rescale(torch.zeros(9, 8), 1.0)
    with pytest.raises(ValueError, match="positive"):
        rescale(E, 0.0)


def _projector(M: torch.Tensor, tol: float = 1e-5) -> torch.Tensor:
    U, sv, _ = torch.linalg.svd(M.double(), full_matrices=False)
    U = U[:, sv > tol * sv.max()]
    return U @ U.T


def test_signature_embedding_spans_the_centred_signature():
    task = hierarchy_task()
    E = signature_embedding(task, 32, orders=(1, 2, 3), norm=5.0)
    assert E.shape == (27, 32)
    assert math.isclose(float(E.norm()), 5.0, rel_tol=1e-5)
    S = torch.cat([label_signature(task.population, k, "incremental").matrix for k in (1, 2, 3)], dim=1).double()
    S = S - S.mean(0)
    assert torch.allclose(_projector(E), _projector(S), atol=1e-5)
    assert torch.allclose(E.double().mean(0), torch.zeros(32, dtype=torch.float64), atol=1e-5)  # rows centred
    assert float(E[:, 6:].abs().max()) < 1e-4  # rank 6: the other columns are zero


def test_signature_embedding_of_orders_1_2_cannot_see_the_second_anchor():
    task = hierarchy_task()
    E = signature_embedding(task, 32, orders=(1, 2))
    anchor2 = E[task.role_tokens("anchor2")]
    assert float(anchor2.norm(dim=1).max()) < 1e-5
    assert float(E[task.role_tokens("key")].norm(dim=1).min()) > 0.1
    assert signature_embedding(task, 2, orders=(1,)).shape == (27, 2)  # width below the rank truncates
    with pytest.raises(ValueError, match="orders"):
        signature_embedding(task, 8, orders=())
    with pytest.raises(ValueError, match="d must"):
        signature_embedding(task, 0)


def test_steps_to_plateaus_and_group_summary():
    task = hierarchy_task(block=3)
    traj = train(_model([0.5, 0.5], [0, 1]), task.population, 30, lr=1.0, record_every=1, progress=False)
    levels = task.plateau_levels()
    assert torch.equal(steps_to_plateaus(traj, levels), stair_onsets(traj.steps, traj.loss, levels))
    summary = group_summary(torch.tensor([10, 20, -1, -1]), ["a", "a", "b", "b"])
    assert summary["a"] == (15.0, pytest.approx(math.sqrt(50)), 2)
    assert math.isnan(summary["b"][0]) and summary["b"][2] == 0
    with pytest.raises(ValueError, match="one value per model"):
        group_summary(torch.tensor([1.0]), ["a", "b"])


def test_transfer_task_shares_tokens_and_ladder_but_not_labels():
    h, t = hierarchy_task(), transfer_task()
    assert TASKS["transfer"] is transfer_task
    assert torch.equal(h.population.x, t.population.x) and h.roles == t.roles
    assert torch.equal(h.info["attribute"], t.info["attribute"])
    assert t.plateau_levels() == pytest.approx(h.plateau_levels(), abs=1e-9)
    differs = (t.population.y - h.population.y).abs().sum(1) > 1e-6
    assert float(differs.float().mean()) == pytest.approx(2 / 3)
    assert torch.equal(transfer_task(coefficients=(1, 1, 1)).population.y, h.population.y)
    blind = transfer_task(coefficients=(1, 0, 1)).plateau_levels()  # x2 plays no part: H(Y|x1,x2) = H(Y|x1)
    assert blind[2] == pytest.approx(blind[1])
    with pytest.raises(ValueError, match="coefficient"):
        transfer_task(coefficients=(1, 2))


def test_frozen_ensemble_gives_each_condition_its_table_and_groups_the_losses():
    V = SMALL.vocab_size
    tables = {"ones": lambda s: torch.ones(V, 8) * (s + 1), "random": lambda s: random_embedding(V, 8, 1.0, seed=s)}
    model, names = frozen_ensemble(SMALL, tables, [3, 4], d=8, hidden=16)
    assert names == ["ones", "ones", "random", "random"] and model.seeds == [3, 4, 3, 4]
    assert torch.equal(model.embedding[1].detach(), torch.full((V, 8), 5.0))
    assert torch.equal(model.embedding[2].detach(), random_embedding(V, 8, 1.0, seed=3))
    traj = train(model, SMALL.population, 5, record_every=1, progress=False)
    assert torch.equal(traj.embeddings[:, -1], traj.embeddings[:, 0])  # every table stayed frozen
    grouped = loss_by_condition(traj, names)
    assert list(grouped) == ["ones", "random"] and torch.equal(grouped["random"][1], traj.loss[2:])
    with pytest.raises(ValueError, match="one name per model"):
        loss_by_condition(traj, names[:3])
    with pytest.raises(ValueError, match="at least one table"):
        frozen_ensemble(SMALL, {}, [0])


def test_frozen_race_freezes_six_tables_at_the_matched_norm_next_to_its_learner():
    reference = train(_model([1.0, 1.0], [0, 1]), SMALL.population, 10, record_every=5, progress=False)
    race = frozen_race(SMALL, reference, [0, 1], d=8, steps=10)
    V = SMALL.vocab_size
    assert race.norm == pytest.approx(math.sqrt(V)) and len(race.names) == 12 and race.onsets.shape == (12, 3)
    E = race.run.embeddings
    assert torch.equal(E[:, -1], E[:, 0])  # frozen
    norms = torch.linalg.matrix_norm(E[:, 0])
    assert torch.allclose(norms[2:], torch.full((10,), race.norm), rtol=1e-4)  # all but the small random table
    other = race.names.index("learned (other seed)")  # seed 0 reads seed 1's learned table
    assert torch.allclose(E[other, 0], rescale(reference.embeddings[1, -1], race.norm))
    assert list(race.curves())[0] == "learned (the learner)" and len(race.curves()) == 7
    control = E[race.names.index("rank-matched random"), 0]
    signature = E[race.names.index("ΔS¹⁺²⁺³"), 0]
    assert torch.allclose(torch.linalg.svdvals(control), torch.linalg.svdvals(signature), rtol=1e-4, atol=1e-5)
    assert not torch.allclose(control @ control.T, signature @ signature.T, atol=1e-3)  # same spectrum, other directions
    with pytest.raises(ValueError, match="one learner per seed"):
        frozen_race(SMALL, reference, [0, 1, 2], d=8, steps=10)

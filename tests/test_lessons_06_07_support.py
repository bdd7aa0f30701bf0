"""Library support for lessons 06-07: the pair residual, group cosines and the partner task."""

from __future__ import annotations

import pytest
import torch

from ctxlab.signatures import conditional_entropy, interaction, joint
from ctxlab.tasks import TASKS, hierarchy_task, make_task, partner_task, pointer_task
from ctxlab.theory import pair_residual, residual_vs_increment


def _order1_optimum(data):
    table = joint(data, (0,))
    return (table / table.sum(-1, keepdim=True))[data.x[:, 0]]


def test_pair_residual_equals_delta2_at_the_order1_optimum():
    data = hierarchy_task().population
    R = pair_residual(data, _order1_optimum(data), 0, 1)
    assert torch.allclose(R, interaction(data, (0, 1)), atol=1e-6)


def test_pair_residual_of_the_truth_is_zero_and_batches_over_models():
    data = hierarchy_task().population
    truth = data.targets()
    R = pair_residual(data, torch.stack([truth, _order1_optimum(data)]), 1, 2)
    assert R.shape == (2, 27, 27, 3)
    assert float(R[0].abs().max()) < 1e-6


def test_residual_vs_increment_of_a_model_at_the_order1_optimum_and_away_from_it():
    data = hierarchy_task().population
    optimum = _order1_optimum(data).log()
    check = residual_vs_increment(lambda x: torch.stack([optimum, torch.zeros_like(optimum)]), data, 0, 1)
    assert check.positions == (0, 1) and check.residual.shape == (2, 27, 27, 3)
    assert float(check.cosine[0]) > 1 - 1e-9 and float(check.relative[0]) < 1e-6  # R = ΔS² there
    assert float(check.relative[1]) > 0.5  # a uniform model's residual is mostly order-1 error


def test_pair_residual_rejects_bad_input():
    data = hierarchy_task().population
    with pytest.raises(ValueError, match="distinct"):
        pair_residual(data, data.targets(), 1, 1)
    with pytest.raises(ValueError, match="probs"):
        pair_residual(data, data.targets()[:5], 0, 1)


def test_partner_task_population_and_levels():
    task = partner_task()
    pop = task.population
    assert pop.n == 9 * 9 * 3 * 3 ** 2 and pop.seq_len == 4 and pop.vocab_size == 21
    assert "partner" in TASKS and make_task("partner").population.n == pop.n
    keys, partners = task.role_tokens("key"), task.role_tokens("partner")
    assert bool(torch.isin(pop.x[:, -1], keys).all())
    is_partner = torch.isin(pop.x[:, :-1], partners)
    assert bool((is_partner.sum(1) == 1).all())
    assert torch.equal(is_partner.long().argmax(1), task.info["partner_position"])
    ln_c, h1, h2 = task.info["levels"]
    assert ln_c == pytest.approx(torch.log(torch.tensor(3.0)).item())
    assert h1 == pytest.approx(conditional_entropy(pop, (3,)))  # the key is last
    assert h2 == pytest.approx(2 / 3 * torch.log(torch.tensor(2.0)).item(), abs=1e-6)
    assert ln_c > h1 > h2


def test_partner_task_rejects_bad_input():
    with pytest.raises(ValueError):
        partner_task(n_keys=8)
    with pytest.raises(ValueError):
        partner_task(mix=(0.5, 0.6))
    with pytest.raises(ValueError):
        partner_task(n_fillers=20, seq_len=6)


def test_target_attention_is_one_over_l_at_small_init_and_bag_matches_the_model():
    from ctxlab.models import make_model
    from ctxlab.theory import bag_of_context, target_attention

    task = pointer_task(n_ctx=2, n_values=2, mix=(0.5, 0.5))
    L = task.population.seq_len
    model = make_model("attention", task, gamma=1.5, seed=[0, 1], d=8, hidden=8)
    assert torch.allclose(target_attention(task)(model), torch.full((2,), 1 / L), atol=1e-4)
    with torch.no_grad():
        model.w_q.zero_()  # exactly uniform attention
        out = model.attention(task.population.x) @ (
            (model.embedding[:, task.population.x] + model.position[:, None]) @ model.w_v[:, None])
    assert torch.allclose(out[:, :, -1], bag_of_context(model, task.population.x), atol=1e-6)
    with pytest.raises(ValueError, match="target_position"):
        target_attention(hierarchy_task())


def test_departure_step():
    from ctxlab.theory import departure_step

    steps = torch.tensor([0, 10, 20, 30])
    curve = torch.tensor([[1.0, 1.0, 1.5, 3.0], [1.0, 1.05, 1.0, 0.95], [0.0, -0.2, 0.0, 0.0]])
    assert departure_step(steps, curve[:2], 0.1, relative=True).tolist() == [20, -1]
    assert departure_step(steps, curve[2:], 0.1).tolist() == [10]
    with pytest.raises(ValueError):
        departure_step(steps, curve[:, :3], 0.1)


def test_whether_levels_lie_between_the_rungs_and_are_the_coarse_entropies():
    from ctxlab.theory import plateau_levels, whether_levels

    task = hierarchy_task()
    levels, subs = plateau_levels(task.population), whether_levels(task)
    assert [name for name, _ in subs] == ["H(Y | [A(x1)=0])", "H(Y | x1, [A(x2)=0])", "H(Y | x1, x2, [A(x3)=0])"]
    assert all(hi > h > lo for (_, h), hi, lo in zip(subs, levels, levels[1:]))
    data, attr = task.population, task.info["attribute"]
    zero = attr[data.x[:, 0]] == 0  # by hand: the label's entropy within each of the two groups, weighted
    by_hand = 0.0
    for group in (zero, ~zero):
        w = data.weights[group].double()
        p = (w[:, None] * data.targets()[group].double()).sum(0) / w.sum()
        by_hand -= float(w.sum() * (p * p.clamp_min(1e-300).log()).sum())
    assert abs(subs[0][1] - by_hand) < 1e-6  # float32 weights
    assert whether_levels(hierarchy_task(block=8, n_values=2)) == []

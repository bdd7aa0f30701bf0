"""Lesson 14: fixed binary codes in place of a trainable input table."""

from __future__ import annotations

import json
import math

import matplotlib.pyplot as plt
import pytest
import torch

from ctxlab import plots
from ctxlab.fixed_codes import (
    binary_codes,
    code_reach,
    code_width,
    first_layer_tokens,
    fix_tables,
    fixed_code_ensemble,
    fixed_codes_experiment,
    gpt_codes_experiment,
    token_positions,
)
from ctxlab.lm import TinyGPT, train_lm
from ctxlab.models import make_model
from ctxlab.signatures import label_signature
from ctxlab.tasks import hierarchy_task, xor_task
from ctxlab.train import train


def test_code_width_is_the_fewest_bits_that_tell_tokens_apart():
    assert [code_width(v) for v in (1, 2, 3, 4, 5, 24, 32, 33, 65536)] == [1, 1, 2, 2, 3, 5, 5, 6, 16]


def test_binary_codes_tile_the_bits_of_each_id():
    codes = binary_codes(24, 12)
    assert codes.shape == (24, 12) and set(codes.unique().tolist()) == {-1.0, 1.0}
    assert torch.equal(codes[:, :5], codes[:, 5:10]) and torch.equal(codes[:, 10:], codes[:, :2])
    assert codes[13, :5].tolist() == [1.0, -1.0, 1.0, 1.0, -1.0]  # 13 = 0b01101, lowest bit first
    assert len({tuple(r) for r in codes.tolist()}) == 24  # every token its own code
    assert torch.equal(binary_codes(24, 12, signed=False), (codes + 1) / 2)
    shuffled = binary_codes(24, 12, shuffle_seed=0)
    assert sorted(map(tuple, shuffled.tolist())) == sorted(map(tuple, codes.tolist()))  # the same code book, relabelled
    assert not torch.equal(shuffled, codes) and torch.equal(shuffled, binary_codes(24, 12, shuffle_seed=0))


def test_binary_codes_reject_a_width_below_the_code():
    with pytest.raises(ValueError, match="d must be at least"):
        binary_codes(24, 4)
    with pytest.raises(ValueError, match="vocab_size"):
        binary_codes(0, 8)


def test_fixed_codes_stay_put_and_the_learned_table_trains_as_it_would_alone():
    task = hierarchy_task(block=4, n_values=2)
    codes = binary_codes(task.vocab_size, 8)
    model, names = fixed_code_ensemble(task, {"learned": None, "codes": codes}, seeds=[0, 1], d=8, hidden=16)
    assert names == ["learned", "learned", "codes", "codes"]
    alone = make_model("mlp", task, d=8, hidden=16, gamma=1.0, seed=[0, 1])
    assert torch.equal(model.w1[2], alone.w1[0] * 8 ** -1.0)  # the code model's W1 carries E's init scale
    run = train(model, task.population, 30, record_every=10, progress=False)
    ref = train(alone, task.population, 30, record_every=10, progress=False)
    torch.testing.assert_close(run.loss[:2], ref.loss, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(run.embeddings[:2], ref.embeddings, rtol=1e-4, atol=1e-6)
    assert torch.equal(run.embeddings[2:], codes.expand(2, 4, *codes.shape))  # bit-identical all along
    assert bool((run.loss[2:, -1] < run.loss[2:, 0]).all())  # the rest of the network learns


def test_first_layer_tokens_is_each_tokens_row_of_its_own_positions_table():
    task = hierarchy_task(block=4, n_values=2)
    positions = token_positions(task.population)
    assert positions.tolist() == [0] * 4 + [1] * 4 + [2] * 4
    model = make_model("mlp", task, d=6, hidden=5, gamma=1.0, seed=[0, 1])
    rep = first_layer_tokens(model, positions)
    assert rep.shape == (2, 12, 5)
    for s in (0, 5, 11):
        l = int(positions[s])
        assert torch.allclose(rep[1, s], model.embedding[1, s] @ model.w1[1, 6 * l:6 * (l + 1)])
    x = task.population.x[:3]  # the first layer's input is the sum of these rows over the positions
    total = rep[0, x].sum(1)
    direct = model.embedding[0, x].reshape(3, -1) @ model.w1[0]
    assert torch.allclose(total, direct, atol=1e-6)


def test_token_positions_and_first_layer_reject_what_they_cannot_read():
    with pytest.raises(ValueError, match="exactly one position"):
        token_positions(xor_task().population)
    task = hierarchy_task(block=4, n_values=2)
    with pytest.raises(ValueError, match="positions must give"):
        first_layer_tokens(make_model("mlp", task, d=4, hidden=4), torch.zeros(5, dtype=torch.long))
    with pytest.raises(TypeError, match="reads an EmbMLP"):
        first_layer_tokens(make_model("linear", task, d=4), torch.zeros(12, dtype=torch.long))


def test_code_reach_is_one_for_codes_that_hold_the_attribute_and_less_for_shuffled_ones():
    task = hierarchy_task(block=8, n_values=2)
    positions = token_positions(task.population)
    order1 = label_signature(task.population, 1, "incremental")
    assert code_reach(binary_codes(24, 32), positions, order1) == pytest.approx(1.0)  # attribute = lowest id bit
    assert code_reach(binary_codes(24, 32, shuffle_seed=0), positions, order1) < 0.9
    one_hot = torch.eye(24)  # a table with a direction per token reaches everything
    assert code_reach(one_hot, positions, order1) == pytest.approx(1.0)


def test_fixed_codes_experiment_reads_every_model():
    result = fixed_codes_experiment(seeds=(0,), steps=40, d=8, hidden=16, record_every=10, progress=False)
    assert result.names == ["learned", "id codes", "shuffled codes"]
    assert len(result.rungs) == 3 and result.shares.shape == (3, 5, 3)
    assert result.trajectory.extras["first_layer"].shape == (3, 5, 24, 16)
    assert result.reach["learned"] == [1.0, 1.0, 1.0] and result.reach["id codes"][0] == pytest.approx(1.0)
    scores, band = result.r2_with_band(1, n=20)
    assert scores.shape == band.shape == (3,)
    assert result.models("id codes") == [1]
    numbers = json.loads(json.dumps(result.to_json(), allow_nan=False))  # strict JSON
    assert [r["condition"] for r in numbers["runs"]] == result.names and len(numbers["levels"]) == 4
    figures = [plots.fixed_codes_curves(result), plots.first_layer_shares(result),
               plots.r2_band_figure(result.names, scores, band),
               plots.curves_by_label(result.trajectory.steps, {"a": result.trajectory.loss[:2]}, result.levels)]
    assert [len(f.axes) for f in figures] == [3, 3, 1, 1]
    plt.close("all")
    with pytest.raises(ValueError, match="order must lie"):
        result.r2_with_band(4)
    with pytest.raises(ValueError, match="unknown condition"):
        result.models("random")


def test_fix_tables_keeps_the_chosen_gpt_tables_and_trains_the_rest():
    V, d = 10, 8
    codes = binary_codes(V, d)
    model = fix_tables(TinyGPT(V, 6, d=d, n_layers=1, n_heads=2, gamma=[1.0] * 3, seed=[0, 1, 2]), {1: codes, 2: -codes})
    start = {name: p.detach().clone() for name, p in model.named_parameters()}
    stream = torch.arange(200) % V
    train_lm(model, stream, 5, eval_tokens=stream, batch_size=4, eval_windows=2, progress=False)
    assert torch.equal(model.embedding[1], codes) and torch.equal(model.embedding[2], -codes)  # bit-identical under Adam
    assert not torch.equal(model.embedding[0], start["embedding"][0])  # the learned table moves
    assert not torch.equal(model.w_out[1], start["w_out"][1])  # and so does the rest of a code model
    with pytest.raises(ValueError, match="at least one model"):
        fix_tables(model, {})
    with pytest.raises(ValueError, match="must be \\[V, d\\]"):
        fix_tables(model, {0: torch.zeros(V, d + 1)})
    with pytest.raises(ValueError, match="out of range"):
        fix_tables(model, {3: codes})


def test_gpt_codes_experiment_runs_both_conditions_on_the_same_batches():
    result = gpt_codes_experiment(seeds=(0, 1), steps=6, context=8, d=16, batch_size=4, records=4, progress=False)
    traj = result.trajectory
    assert result.names == ["learned", "learned", "fixed codes", "fixed codes"] and traj.seeds == [0, 1, 0, 1]
    assert traj.steps.tolist()[0] == 0 and traj.steps.tolist()[-1] == 6 and traj.loss.shape == (4, len(traj.steps))
    assert set(result.entropies) == {"unigram", "bigram", "trigram"} and result.config["bits"] == 7  # 76 characters
    codes = binary_codes(result.config["vocab"], 16)
    assert torch.equal(traj.embeddings[2:, -1], codes.expand(2, *codes.shape))  # the codes never moved
    assert not torch.equal(traj.embeddings[0, 0], traj.embeddings[0, -1])  # the learned table moved
    assert traj.loss[:, 0].sub(math.log(result.config["vocab"])).abs().max() < 0.1  # both start near ln V
    assert result.models("fixed codes") == [2, 3] and set(result.kl_minimum_steps()) == set(result.entropies)
    numbers = json.loads(json.dumps(result.to_json(), allow_nan=False))  # strict JSON
    assert numbers["conditions"] == result.names and len(numbers["held_out_loss"]) == 4
    assert len(plots.gpt_codes_figure(result).axes) == 4
    plt.close("all")
    with pytest.raises(ValueError, match="seeds"):
        gpt_codes_experiment(seeds=(), steps=2)

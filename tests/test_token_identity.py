"""Lesson 16: the re-injected-table model, loss per frequency bin, slopes and rung steps."""

from __future__ import annotations

import math

import pytest
import torch

from ctxlab.models import EmbMLP
from ctxlab.plots import bin_loss_figure, rung_step_figure, table_control_figure, update_size_figure
from ctxlab.theory import embedding_velocity
from ctxlab.token_identity import (
    NEVER,
    ReinjectedMLP,
    bin_data,
    bin_levels,
    bin_losses,
    frequency_bins,
    key_frequency,
    loglog_slope,
    rare_token_experiment,
    rung_steps,
    update_sizes,
    zipf_hierarchy,
)
from ctxlab.train import cross_entropy, train


def _model(n_tables: int, **kw) -> ReinjectedMLP:
    return ReinjectedMLP(24, 3, 2, hidden=16, n_tables=n_tables, gamma=kw.pop("gamma", 0.75), seed=kw.pop("seed", [0, 1]), **kw)


def test_tables_do_not_change_the_shared_weights_at_init():
    plain, one, two = _model(0), _model(1), _model(2)
    for name in ("embedding", "w1", "w2", "w3"):
        assert torch.equal(getattr(plain, name), getattr(one, name)) and torch.equal(getattr(plain, name), getattr(two, name))
    assert one.tables.shape == (2, 1, 24, 16) and two.router.shape == (2, 2, 3)
    assert torch.allclose(two.routing(), torch.full((2, 2, 3), 1 / 3))
    with pytest.raises(ValueError, match="no router"):
        plain.routing()


def test_forward_matches_the_formula_and_the_null_bank_switches_injection_off():
    task = zipf_hierarchy()
    x = task.population.x[:7]
    model = _model(2, gamma=0.5)
    gelu = torch.nn.functional.gelu
    with torch.no_grad():
        model.router.copy_(torch.randn(2, 2, 3))
        alpha = model.routing()
        h = model.embedding[:, x].reshape(2, 7, -1)
        memory = model.tables[:, :, x].sum(3)  # [K, tables, N, H]: summed over the sequence
        m = torch.einsum("klt,ktnh->klnh", alpha[..., :2], memory)
        expect = gelu(gelu(h @ model.w1 + m[:, 0]) @ model.w2 + m[:, 1]) @ model.w3
        assert torch.allclose(model(x), expect, atol=1e-6)
        model.router[..., -1] = 50.0  # all weight on the null bank
        plain = _model(0, gamma=0.5)
        assert torch.allclose(model(x), plain(x), atol=1e-6)


def test_plain_model_is_a_two_layer_emb_mlp():
    task = zipf_hierarchy()
    x = task.population.x[:5]
    model = _model(0)
    one = EmbMLP(24, 3, 2, hidden=16, gamma=0.75, seed=[0, 1])
    with torch.no_grad():
        u = one.embedding[:, x].reshape(2, 5, -1) @ model.w1
        assert torch.allclose(model(x), torch.nn.functional.gelu(torch.nn.functional.gelu(u) @ model.w2) @ model.w3, atol=1e-6)


def test_the_first_layer_only_control_injects_into_the_first_hidden_layer_alone():
    x = zipf_hierarchy().population.x[:7]
    every, first = _model(1), _model(1, inject_into="first")
    assert first.router.shape == (2, 1, 2) and first.routing().shape == (2, 1, 2)
    with torch.no_grad():
        assert torch.equal(first.tables, every.tables) and torch.equal(first.w2, every.w2)  # same init
        table = first.routing()[:, 0, :1, None, None].mul(first.tables).sum(1)  # [K, V, H]: layer 1's mix
        bag = torch.nn.functional.one_hot(x, 24).sum(1).float()
        u1 = first.embedding[:, x].reshape(2, 7, -1) @ first.w1 + bag @ table
        gelu = torch.nn.functional.gelu
        assert torch.allclose(first(x), gelu(gelu(u1) @ first.w2) @ first.w3, atol=1e-6)
        assert not torch.allclose(first(x), every(x), atol=1e-9)  # every layer also injects into layer 2
    with pytest.raises(ValueError, match="inject_into"):
        _model(1, inject_into="last")


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="n_tables"):
        ReinjectedMLP(24, 3, 2, n_tables=-1)
    with pytest.raises(ValueError, match="activation"):
        ReinjectedMLP(24, 3, 2, activation="swish")
    with pytest.raises(ValueError, match="token ids must lie"):
        _model(0)(torch.tensor([[0, 9, 30]]))
    with pytest.raises(ValueError, match=r"tokens must be \[N, 3\]"):
        _model(0)(torch.tensor([[0, 9]]))
    with pytest.raises(ValueError, match="n_bins"):
        frequency_bins(torch.ones(4) / 4, 5)
    with pytest.raises(ValueError, match="positive"):
        loglog_slope(torch.tensor([0.5, 0.0]), torch.tensor([1.0, 2.0]))
    with pytest.raises(ValueError, match="early_step"):
        rare_token_experiment(steps=10, early_step=7, record_every=5)
    with pytest.raises(ValueError, match="first_layer_only"):
        rare_token_experiment(first_layer_only=(0,))
    with pytest.raises(ValueError, match="at least one table count"):
        rare_token_experiment(tables=())
    with pytest.raises(ValueError, match="exponent"):
        zipf_hierarchy(exponent=0.0)
    data = zipf_hierarchy().population
    with pytest.raises(ValueError, match="no row"):
        bin_losses(torch.zeros(1, data.n, 2), data, [torch.tensor([20])])
    with pytest.raises(ValueError, match="logits"):
        bin_losses(torch.zeros(1, 3, 2), data, [torch.tensor([0])])


def test_zipf_keys_keep_the_ladder_for_every_bin():
    task = zipf_hierarchy(block=8, exponent=1.5)
    freq = key_frequency(task)
    assert torch.allclose(freq, (1 / torch.arange(1, 9.0, dtype=torch.float64) ** 1.5) / (1 / torch.arange(1, 9.0) ** 1.5).sum().double())
    bins = frequency_bins(freq, 4)
    assert [b.tolist() for b in bins] == [[0, 1], [2, 3], [4, 5], [6, 7]]
    levels = bin_levels(task.population, bins)
    assert torch.allclose(levels[:, 1:], torch.tensor(task.plateau_levels()[1:], dtype=torch.float64).expand(4, 3), atol=1e-5)
    assert bool((levels[:, 0] <= math.log(2) + 1e-9).all()) and bool((levels[:, 0] >= task.plateau_levels()[0] - 0.01).all())
    assert abs(float(bin_data(task.population, bins[0]).weights.sum()) - 1) < 1e-6


def test_bin_losses_average_back_to_the_loss():
    data = zipf_hierarchy(block=8, exponent=1.5).population
    logits = torch.randn(3, data.n, 2, generator=torch.Generator().manual_seed(0))
    bins = frequency_bins(key_frequency(zipf_hierarchy(8, 1.5)), 3)
    per_bin = bin_losses(logits, data, bins)
    share = torch.stack([data.weights[torch.isin(data.x[:, 0], b)].sum() for b in bins]).double()
    assert torch.allclose(per_bin @ share, cross_entropy(logits, data).double(), atol=1e-5)


def test_loglog_slope_recovers_a_power_law_per_row():
    freq = torch.tensor([0.5, 0.2, 0.1, 0.05, 0.01])
    sizes = torch.stack([3 * freq**1.0, freq**0.5, 7 * freq**-2.0])
    assert torch.allclose(loglog_slope(freq, sizes), torch.tensor([1.0, 0.5, -2.0], dtype=torch.float64), atol=1e-5)


def test_rung_steps_use_inf_for_never():
    steps = torch.tensor([0, 10, 20, 40])
    curves = torch.tensor([[0.7, 0.6, 0.5, 0.4], [0.7, 0.7, 0.7, 0.7], [0.7, 0.5, 0.6, 0.5]])
    got = rung_steps(steps, curves, 0.55)
    assert got.tolist() == [20.0, NEVER, 10.0]


def test_first_updates_scale_with_frequency_with_and_without_tables():
    """E1's frequency law on the Zipf keys: the initial gradient of every key ∝ π(s), tables or not."""
    task = zipf_hierarchy(block=8, exponent=1.5)
    keys, freq = task.role_tokens("key"), key_frequency(task)
    for n in (0, 2):
        model = ReinjectedMLP(24, 3, 2, hidden=32, n_tables=n, gamma=1.0, seed=[0, 1])
        speed = embedding_velocity(model, task.population)[:, keys].norm(dim=-1)
        assert bool(((loglog_slope(freq, speed) - 1).abs() < 0.02).all())


def test_update_sizes_and_training_through_the_one_loop():
    task = zipf_hierarchy(block=8, exponent=1.5)
    model = _model(1)
    run = train(model, task.population, 20, record_every=10, progress=False)
    sizes = update_sizes(run.embeddings, 1, task.role_tokens("key"))
    assert sizes.shape == (2, 8) and bool((sizes > 0).all())
    assert float(run.loss[0, -1]) < float(run.loss[0, 0])
    with pytest.raises(ValueError, match="step_index"):
        update_sizes(run.embeddings, 0, task.role_tokens("key"))


def test_experiment_records_bins_updates_and_routing():
    run = rare_token_experiment(tables=(0, 1), seeds=(0, 1), steps=20, early_step=10, record_every=10, hidden=16,
                                first_layer_only=(1,), progress=False)
    assert run.steps.tolist() == [0, 10, 20] and len(run.bins) == 4
    assert run.runs[0]["bins"].shape == (2, 4, 3) and "table_updates" not in run.runs[0]
    assert run.runs[1]["table_updates"].shape == (2, 8) and run.runs[1]["routing"].shape == (2, 2, 2)
    reached = run.rung_steps(1)
    assert reached.shape == (2, 4, 3) and bool(torch.isinf(reached[..., 2]).all())  # 20 steps: no rung 3 yet
    with pytest.raises(ValueError, match="n_tables=2"):
        run.rung_steps(2)
    assert sorted(run.first_layer_only) == [1] and run.first_layer_only[1]["routing"].shape == (2, 1, 2)
    assert run.rung_steps(1, first_layer_only=True).shape == (2, 4, 3)
    with pytest.raises(ValueError, match="first-layer-only run with n_tables=2"):
        run.rung_steps(2, first_layer_only=True)
    ratios, steps = table_control_figure(run).axes
    assert len(ratios.collections) == 0 and len(ratios.lines) == 2 * 2  # a line of dots per seed and variant
    assert [t.get_text() for t in steps.get_legend().get_texts()] == ["K = 1, every layer", "K = 1, first hidden layer only",
                                                                       "no extra table"]
    panels = bin_loss_figure(run).axes
    assert len(panels) == 2
    dotted = sorted(round(float(line.get_ydata()[0]), 4) for line in panels[0].lines if line.get_linestyle() == ":")
    assert dotted == sorted([round(float(h), 4) for h in run.bin_levels[:, 0]] + [round(math.log(2), 4)])  # own H0s, ln 2
    never = rung_step_figure(run).axes[2]  # rung 3 is never reached: every seed and bin an x on the top edge
    assert sum(len(c.get_offsets()) for c in never.collections) == 2 * 2 * 4
    sizes = {"E": run.runs[1]["key_updates"], "T": run.runs[1]["table_updates"]}
    fig = update_size_figure(run.frequency, sizes, {k: loglog_slope(run.frequency, v) for k, v in sizes.items()})
    assert [ax.get_title().splitlines()[0] for ax in fig.axes] == ["E", "T"]

"""LinearEmb, modes_task, with_token_frequencies and the linear-network mode theory."""

import math

import pytest
import torch

from ctxlab.models import LinearEmb, make_model
from ctxlab.signatures import joint
from ctxlab.tasks import hierarchy_task, make_task, modes_task, with_token_frequencies
from ctxlab.theory import (
    e1_agreement,
    mode_growth,
    correlation_modes,
    fit_growth_rate,
    growing_amplitude,
    mode_projections,
    input_output_correlation,
    mode_strengths,
    predicted_growth_rates,
    predicted_switch_on,
    product_map,
)
from ctxlab.train import train


def test_linear_model_is_an_ensemble_with_small_init():
    task = modes_task()
    model = make_model("linear", task, gamma=[1.0, 2.0], seed=[0, 0], d=16)
    assert isinstance(model, LinearEmb)
    assert model.embedding.shape == (2, task.vocab_size, 16) and model.w.shape == (2, 2 * 16, 4)
    assert float(model.embedding[1].detach().std()) < float(model.embedding[0].detach().std()) / 5
    single = make_model("linear", task, gamma=2.0, seed=0, d=16)
    assert torch.equal(single.embedding[0], model.embedding[1])
    assert model(task.population.x).shape == (2, task.population.n, 4)
    with pytest.raises(ValueError):
        LinearEmb(0, 2, 4)


def test_product_map_reproduces_the_logits():
    task = modes_task()
    model = make_model("linear", task, gamma=0.5, seed=1)
    A = product_map(model)  # [K, C, L*V]
    x = task.population.x
    onehot = torch.cat([torch.nn.functional.one_hot(x[:, i], task.vocab_size) for i in range(2)], 1).double()
    assert torch.allclose(onehot @ A[0].T, model(x)[0].double(), atol=1e-5)



def test_product_map_takes_a_model_from_a_re_imported_ctxlab():
    """`ctxlab grade` re-imports ctxlab before each check: the check's model and the learner's imported
    product_map then come from two copies of the package."""
    import importlib.util

    import ctxlab.models

    spec = importlib.util.spec_from_file_location("ctxlab_models_copy", ctxlab.models.__file__)
    copy = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(copy)
    task = modes_task()
    model = copy.LinearEmb(task.vocab_size, task.seq_len, task.n_labels, d=8, gamma=1.0, seed=0)
    assert not isinstance(model, LinearEmb)
    assert torch.equal(product_map(model), product_map(make_model("linear", task, gamma=1.0, seed=0, d=8)))


def test_modes_task_singular_values_follow_the_strengths():
    task = modes_task((0.5, 0.3, 0.15))
    assert make_task("modes").name == "modes"
    modes = correlation_modes(task.population)
    expected = torch.tensor([0.5, 0.3, 0.15], dtype=torch.float64) * math.sqrt(8) / 16
    assert torch.allclose(modes.s, expected, atol=1e-7)
    sigma = input_output_correlation(task.population)
    assert sigma.shape == (4, 2 * task.vocab_size)
    assert torch.allclose(sigma.sum(0), torch.zeros(sigma.shape[1], dtype=torch.float64), atol=1e-9)
    with pytest.raises(ValueError):
        modes_task((0.6, 0.5, 0.1))


def test_growth_rate_and_switch_on_match_a_run():
    task = modes_task()
    modes = correlation_modes(task.population)
    model = make_model("linear", task, gamma=1.5, seed=0)
    amp = growing_amplitude(model, modes)
    run = train(model, task.population, 120, lr=1.0, record_every=1, probes={"map": product_map}, progress=False)
    a = mode_strengths(run.extras["map"], modes)[0]
    rate = fit_growth_rate(run.steps, a[:, 0], 10, 30)
    assert float(rate) == pytest.approx(float(predicted_growth_rates(modes.s)[0]), rel=0.05)
    on = int((a[:, 0] >= 0.5).float().argmax())
    assert on == pytest.approx(float(predicted_switch_on(modes.s, amp, 0.5)[0, 0]), rel=0.15)


def test_mode_projections_give_each_modes_strength_and_its_growing_part():
    task = modes_task()
    modes = correlation_modes(task.population)
    model = make_model("linear", task, gamma=[1.0, 1.5], seed=[0, 1], d=16)
    alpha, beta = mode_projections(model, modes)
    assert alpha.shape == beta.shape == (2, len(modes.s), 16)
    # every mode of this task lives at the key's position: α·β is the mode's strength in the product map
    assert torch.allclose((alpha * beta).sum(-1), mode_strengths(product_map(model), modes), atol=1e-12)
    assert torch.allclose(growing_amplitude(model, modes), ((alpha + beta) ** 2).sum(-1) / 4)
    elsewhere = mode_projections(model, modes, [1] * len(modes.s))  # read at the filler position instead
    assert not torch.allclose(elsewhere[0], alpha)


def test_mode_growth_reads_rates_and_switch_on_only_where_the_mode_is_exponential():
    result = mode_growth(modes_task(), gammas=(0.75, 1.5), steps=300)
    assert result.strengths.shape == (2, 301, 3) and result.loss.shape == (2, 301)
    assert torch.isnan(result.measured_rate[0]).all() and (result.windows[0] == -1).all()  # large init: no stretch
    assert torch.allclose(result.measured_rate[1], result.predicted_rate, rtol=0.05)
    assert result.switch_on[1].tolist() == sorted(result.switch_on[1].tolist())  # strongest mode first
    assert torch.allclose(result.switch_on[1].double(), result.expected_switch_on[1], rtol=0.1)


def test_e1_agreement_follows_the_eps4_law_and_needs_two_gammas_to_fit():
    result = e1_agreement(hierarchy_task(), gammas=(0.75, 1.0, 1.25), widths=(16, 32), seeds=(0, 1))
    assert result.cosines.shape == (2, 3, 2) and bool((result.cosines > 0.9).all())
    assert torch.allclose(result.fitted_slope, result.predicted_slope, rtol=0.1)
    assert result.predicted_slope[1] < result.predicted_slope[0] < 0  # wider: steeper
    with pytest.raises(ValueError, match="fit_from"):
        e1_agreement(hierarchy_task(), gammas=(0.5, 1.0), widths=(16,), seeds=(0,), fit_from=0.75)


def test_fit_growth_rate_recovers_an_exponential():
    t = torch.arange(50.0)
    assert float(fit_growth_rate(t, -3e-3 * torch.exp(0.2 * t), 5, 40)) == pytest.approx(0.2)
    with pytest.raises(ValueError):
        fit_growth_rate(t, t, 60, 70)


def test_with_token_frequencies_moves_only_frequencies():
    task = hierarchy_task()
    probs = torch.zeros(27, dtype=torch.float64)
    probs[:9] = torch.arange(9, 0, -1, dtype=torch.float64)
    probs /= probs.sum()
    skewed = with_token_frequencies(task, 0, probs)
    t_old, t_new = joint(task.population, (0,)), joint(skewed.population, (0,))
    assert torch.allclose(t_new.sum(-1), probs, atol=1e-6)
    q_old, q_new = t_old[:9] / t_old[:9].sum(-1, keepdim=True), t_new[:9] / t_new[:9].sum(-1, keepdim=True)
    assert torch.allclose(q_old, q_new, atol=1e-6)
    assert torch.allclose(joint(skewed.population, (1,)).sum(-1), joint(task.population, (1,)).sum(-1), atol=1e-6)
    bad = probs.clone()
    bad[:9], bad[9] = 0, 1
    with pytest.raises(ValueError):
        with_token_frequencies(task.population, 0, bad)
    with pytest.raises(ValueError):
        with_token_frequencies(task.population, 5, probs)

"""Token-level learning times (lesson 15): the sigmoid fit, the per-sequence order, the reconstruction."""

import json
import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pytest
import torch

from ctxlab.learning_times import (
    Reconstruction,
    fit_sigmoids,
    learns_before,
    log_spaced_steps,
    log_tau_iqr,
    order_losses,
    r_squared,
    reconstruction,
    sigmoid_curve,
    token_loss_probe,
    token_orders,
)
from ctxlab.learning_times_text import (
    ngram_token_losses,
    text_learning_time_experiment,
    window_loss_probe,
)
from ctxlab.lm import NGramPredictor, TinyGPT, next_token_loss, train_lm
from ctxlab.models import make_model
from ctxlab.plots import (
    learning_time_figure,
    reconstruction_figure,
    spectra_figure,
    token_curves_figure,
)
from ctxlab.signatures import conditional_entropy
from ctxlab.tasks import hierarchy_task
from ctxlab.train import cross_entropy, train

STEPS = torch.tensor(log_spaced_steps(2000, 80), dtype=torch.float64)


def test_sigmoid_curve_runs_from_floor_plus_drop_to_floor():
    curve = sigmoid_curve(STEPS, torch.tensor(0.3), torch.tensor(0.4), torch.tensor(100.0), torch.tensor(0.2))
    assert curve[0] == pytest.approx(0.7, abs=1e-6) and curve[-1] == pytest.approx(0.3, abs=1e-6)
    at_tau = sigmoid_curve(torch.tensor([100.0]), torch.tensor(0.3), torch.tensor(0.4), torch.tensor(100.0), torch.tensor(0.2))
    assert float(at_tau) == pytest.approx(0.5)


def test_fit_recovers_known_sigmoids_at_once():
    floor = torch.tensor([0.1, 0.5, 0.2])
    drop = torch.tensor([0.6, -0.2, 0.3])
    tau = torch.tensor([30.0, 300.0, 900.0])
    width = torch.tensor([0.3, 0.15, 0.5])
    noise = 1e-3 * torch.randn(3, STEPS.numel(), generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    fit = fit_sigmoids(STEPS, sigmoid_curve(STEPS, floor, drop, tau, width) + noise, iterations=600)
    assert torch.allclose(fit.tau.log(), tau.double().log(), atol=0.05)
    assert torch.allclose(fit.width, width.double(), atol=0.03)
    assert torch.allclose(fit.drop, drop.double(), atol=0.01)
    assert torch.allclose(fit.floor, floor.double(), atol=0.01)
    assert bool((fit.r2 > 0.99).all()) and bool(fit.moved.all())


def test_flat_curves_are_flagged_not_fitted():
    curves = torch.stack([sigmoid_curve(STEPS, torch.tensor(0.2), torch.tensor(0.5), torch.tensor(50.0), torch.tensor(0.2)),
                          0.4 + 0.001 * torch.sin(STEPS)])
    fit = fit_sigmoids(STEPS, curves)
    assert fit.moved.tolist() == [True, False]
    assert math.isnan(float(fit.tau[1])) and math.isnan(float(fit.r2[1]))
    assert torch.allclose(fit.curves(STEPS)[1], curves[1].mean().expand(STEPS.numel()))


def test_fit_validates_its_inputs():
    with pytest.raises(ValueError, match="leave out step 0"):
        fit_sigmoids(torch.arange(0.0, 10.0), torch.zeros(2, 10))
    with pytest.raises(ValueError, match="values each"):
        fit_sigmoids(STEPS, torch.zeros(2, 5))
    with pytest.raises(ValueError, match="iterations"):
        fit_sigmoids(STEPS, torch.zeros(2, STEPS.numel()), iterations=0)


def test_r_squared_is_one_for_a_perfect_fit_and_nan_for_a_constant():
    y = torch.linspace(0, 1, 10)
    assert float(r_squared(y, y)) == pytest.approx(1.0)
    assert float(r_squared(y, torch.full_like(y, float(y.mean())))) == pytest.approx(0.0)
    assert math.isnan(float(r_squared(torch.ones(5), torch.ones(5))))


def test_order_losses_average_to_the_entropy_ladder():
    data = hierarchy_task(block=8, n_values=2).population
    table = order_losses(data)
    assert table.shape == (4, data.n)
    for k in range(4):
        assert float(table[k] @ data.weights.double()) == pytest.approx(conditional_entropy(data, tuple(range(k))), abs=1e-6)


def test_token_orders_on_the_binary_hierarchy():
    """Sequences whose anchors carry attribute 1 at x3 reach their full-context loss with x1 alone;
    those with attribute 0 at x3 need all three tokens; none stop at order 2."""
    task = hierarchy_task(block=8, n_values=2)
    data = task.population
    best = order_losses(data)[-1]
    orders = token_orders(data, best)
    a3 = task.info["attribute"][data.x[:, 2]]
    assert bool((orders[a3 == 1] == 1).all()) and bool((orders[a3 == 0] == 3).all())
    assert token_orders(data, torch.stack([best, best])).shape == (2, data.n)
    with pytest.raises(ValueError, match="final_loss"):
        token_orders(data, best[:10])


def test_probe_rows_average_to_the_recorded_loss_and_reconstruction_is_exact_for_exact_sigmoids():
    task = hierarchy_task(block=8, n_values=2)
    data = task.population
    model = make_model("mlp", task, gamma=[1.0, 1.0], seed=[0, 1], d=8, hidden=16)
    run = train(model, data, 20, record_steps=[1, 5, 10, 20], probes={"rows": token_loss_probe(data)}, progress=False)
    assert torch.allclose(run.extras["rows"] @ data.weights, run.loss, atol=1e-6)
    with torch.no_grad():
        assert torch.allclose(run.loss[:, -1], cross_entropy(model(data.x), data), atol=1e-6)

    fit = fit_sigmoids(STEPS, sigmoid_curve(STEPS, torch.tensor([0.1, 0.3]), torch.tensor([0.5, 0.2]),
                                             torch.tensor([20.0, 400.0]), torch.tensor([0.2, 0.4])))
    exact = fit.curves(STEPS)
    rec = reconstruction(STEPS, exact[None], fit, torch.tensor([0.25, 0.75]))
    assert float(rec.r2_curve[0]) == pytest.approx(1.0) and float(rec.r2_slope[0]) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="weights"):
        reconstruction(STEPS, exact[None], fit, torch.ones(3))


def test_the_three_figures_draw_from_small_inputs():
    K, N = 2, 6
    floor, drop = torch.rand(K, N, generator=torch.Generator().manual_seed(1), dtype=torch.float64), torch.full((K, N), 0.3)
    tau, width = torch.linspace(20, 800, K * N).reshape(K, N), torch.full((K, N), 0.3)
    curves = sigmoid_curve(STEPS, floor, drop, tau, width)
    fit = fit_sigmoids(STEPS, curves, iterations=50)
    groups = [torch.arange(N) < 3, torch.arange(N) >= 3]
    fig = token_curves_figure(STEPS, curves, fit.curves(STEPS), groups, ["first", "second"], [1, 3], [[0.7, 0.5, 0.5, 0.2]] * 2)
    assert sum(ax.get_visible() for ax in fig.axes) == 2
    orders = torch.tensor([[1, 1, 1, 3, 3, 3]] * K)
    assert len(learning_time_figure(fit.tau, orders, fit.r2, torch.tensor([[30, 200, 900]] * K)).axes) == 2
    rec = reconstruction(STEPS, curves, fit, torch.full((N,), 1.0 / N))
    assert isinstance(rec, Reconstruction) and len(reconstruction_figure(STEPS, rec).axes) == 2
    plt.close("all")


def test_window_probe_holds_every_tokens_loss_at_the_chosen_steps():
    V = 7
    stream = torch.arange(300) % V
    windows = torch.stack([stream[i:i + 7] for i in (0, 3, 11)])  # [3 windows, 6 inputs + 1]
    model = TinyGPT(V, 6, d=8, n_layers=1, n_heads=2, gamma=[1.0, 1.0], seed=[0, 1])
    run = train_lm(model, stream, 9, eval_tokens=stream, batch_size=4, eval_windows=2, record_steps=[1, 4, 9],
                   probes={"every": window_loss_probe(windows), "late": window_loss_probe(windows, first=2)}, progress=False)
    assert run.steps.tolist() == [1, 4, 9]  # train_lm records where it is told
    assert run.extras["every"].shape == (2, 3, 3, 6) and run.extras["late"].shape == (2, 3, 3, 4)
    assert torch.equal(run.extras["late"], run.extras["every"][..., 2:])
    with torch.no_grad():
        mean = next_token_loss(model(windows[:, :-1]), windows[:, 1:])
    torch.testing.assert_close(run.extras["every"][:, -1].mean((1, 2)), mean)
    with pytest.raises(ValueError, match="first must lie"):
        window_loss_probe(windows, first=6)
    with pytest.raises(ValueError, match="windows must be"):
        window_loss_probe(windows[0])
    with pytest.raises(ValueError, match="record_steps"):
        train_lm(model, stream, 5, eval_tokens=stream, record_steps=[3, 8], progress=False)


def test_ngram_token_losses_read_each_models_table():
    V = 4
    train_tokens = torch.tensor([0, 1, 2, 3, 0, 1, 2, 0, 1, 3] * 20)
    uni, bi, tri = (NGramPredictor(train_tokens, V, n) for n in (1, 2, 3))
    windows = torch.tensor([[0, 1, 2, 3, 0], [1, 3, 0, 1, 2]])
    losses = ngram_token_losses([uni, bi, tri], windows, first=1)
    assert losses.shape == (3, 2, 3)
    assert float(losses[0, 0, 0]) == pytest.approx(-math.log(uni.probs[0, 2]), rel=1e-6)  # p(x_2) at position 1
    assert float(losses[1, 1, 1]) == pytest.approx(-math.log(bi.probs[0, 1]), rel=1e-6)  # p(x_3 = 1 | x_2 = 0)
    assert float(losses[1, 1, 2]) == pytest.approx(-math.log(bi.probs[1, 2]), rel=1e-6)  # p(x_4 = 2 | x_3 = 1)
    assert float(losses[2, 1, 0]) == pytest.approx(-math.log(tri.probs[1 * V + 3, 0]), rel=1e-6)  # p(0 | 1, 3)
    with pytest.raises(ValueError, match="first >= 1"):
        ngram_token_losses([tri], windows, first=0)


def test_spread_and_precedence_of_learning_times():
    tau = torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0, float("nan"), 10.0, 20.0, 30.0, 40.0, 50.0]).exp()
    orders = torch.tensor([1] * 6 + [2] * 5)
    assert log_tau_iqr(tau, orders, min_count=5) == pytest.approx({1: 2.0, 2: 20.0})  # quartiles of 1..5 and 10..50
    assert log_tau_iqr(tau, orders, min_count=6) == {}  # five fitted tokens each: too few
    assert learns_before(tau, orders, 1, 2) == 1.0 and learns_before(tau, orders, 2, 1) == 0.0
    mixed = torch.tensor([1.0, 2.0, 3.0, 4.0])
    assert learns_before(mixed, torch.tensor([1, 2, 2, 1]), 1, 2) == 0.5 and learns_before(mixed, torch.ones(4), 1, 1) == 0.5
    assert learns_before(torch.stack([tau, tau]), orders, 1, 2) == 1.0  # one order per token serves every seed
    with pytest.raises(ValueError, match="broadcast"):
        log_tau_iqr(tau, orders[:3])
    with pytest.raises(ValueError, match="both orders 1 and 3"):
        learns_before(tau, orders, 1, 3)


def test_text_learning_times_run_order_and_draw():
    result = text_learning_time_experiment(seeds=(0, 1), steps=8, context=6, d=8, batch_size=4, windows=3, records=5,
                                           progress=False)
    K, M, T = result.curves.shape
    assert (K, M) == (2, 3 * 5) and T == len(result.steps) and result.steps.tolist()[0] == 1  # positions 1..5 of 3 windows
    assert result.ngram_losses.shape == (3, M) and set(result.orders.tolist()) <= {0, 1, 2}  # context tokens
    assert torch.equal(result.orders, result.ngram_losses.argmin(0))
    assert result.rec.r2_curve.shape == (2,) and set(result.entropies) == {"unigram", "bigram", "trigram"}
    json.loads(json.dumps(result.to_json()))
    fig = spectra_figure({"text": (result.fit.tau, result.orders, {0: "unigram", 1: "bigram", 2: "trigram"})}, {"text": 8})
    assert len(fig.axes) == 1
    plt.close("all")


def test_order_levels_push_close_labels_apart_but_keep_the_lines():
    from ctxlab.plots import order_levels

    fig, ax = plt.subplots()
    ax.set_ylim(0, 10)
    order_levels(ax, [3.0, 4.78, 5.21])  # orders 1 and 2 0.43 apart: 4 % of the height
    ys = sorted(t.xy[1] for t in ax.texts)
    assert ys[2] - ys[1] >= 0.06 - 1e-9 and ys[0] == pytest.approx(0.3)
    assert sorted(line.get_ydata()[0] for line in ax.lines) == [3.0, 4.78, 5.21]
    plt.close(fig)

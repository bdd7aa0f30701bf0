"""The staircase predictor (ctxlab.theory.predict) and ``ctxlab predict``: its pieces hold their identities,
its forecast lands on a small binary task, and bad input fails with a message."""

import json

import pytest
import torch

from ctxlab.cli import main
from ctxlab.dataset import Dataset
from ctxlab.experiments import staircase
from ctxlab.experiments.prediction import measured, prediction_json, training_steps
from ctxlab.models import make_model
from ctxlab.signatures import conditional_entropy
from ctxlab.tasks import hierarchy_task, xor_task
from ctxlab.theory import predict_staircase
from ctxlab.theory.plateaus import (
    mode_level,
    model_weights,
    prefix_data,
    rank_one_level,
    restricted_loss,
    tied_pattern,
)

SMALL = dict(block=4, n_values=2, mix=(0.5, 0.5))


@pytest.fixture(scope="module")
def small_run():
    task = hierarchy_task(**SMALL)
    prediction = predict_staircase(task, [1.0], [0, 1], lr=1.0, d=16, hidden=32, progress=False)
    result = staircase([1.0], [0, 1], steps=training_steps(prediction), lr=1.0, task=task, d=16, hidden=32,
                       progress=False)
    return prediction, result


def test_prefix_data_gives_the_restricted_loss_of_the_whole_population():
    task = hierarchy_task(block=3, n_values=3, mix=(0.4, 0.3, 0.3))
    E, W1, W2 = model_weights(make_model("mlp", task, gamma=0.5, seed=[0, 1], d=8, hidden=16))
    for k in (1, 2):
        small = prefix_data(task.population, k)
        assert small.n == 3 ** k
        full = restricted_loss(E, W1, W2, task.population, range(k))
        assert torch.allclose(restricted_loss(E, W1, W2, small, range(k)), full, atol=1e-6)


def test_a_two_valued_mode_leaves_the_coarse_level():
    task = hierarchy_task(block=9, n_values=3, mix=(0.4, 0.3, 0.3))
    data, attr = task.population, task.info["attribute"]
    pattern = torch.zeros(data.vocab_size, dtype=torch.float64)
    anchors = task.role_tokens("anchor1")
    pattern[anchors] = torch.where(attr[anchors] == 0, 2.0, -1.0).double()
    level, _ = mode_level(data, 1, pattern)
    coarse = data.x.clone()
    coarse[:, 1] = torch.where(attr[data.x[:, 1]] == 0, anchors[0], anchors[1])
    assert level == pytest.approx(conditional_entropy(Dataset(coarse, data.y, data.vocab_size, 3, data.weights), (0, 1)),
                                  abs=1e-4)


def test_rank_one_is_all_an_order_one_model_needs_for_two_labels():
    data = hierarchy_task(**SMALL).population
    assert rank_one_level(data, 0) == pytest.approx(conditional_entropy(data, (0,)), abs=1e-5)


def test_tied_pattern_merges_only_values_within_the_tie():
    pattern = torch.tensor([0.47, -0.23, -0.24, 0.0, 0.9])
    out = tied_pattern(pattern, torch.tensor([0, 1, 2]))
    assert out[1] == out[2] == pytest.approx(-0.235)
    assert out[0] == pytest.approx(0.47) and out[3] == 0.0 and out[4] == pytest.approx(0.9)


def test_the_forecast_lands_on_a_small_binary_task(small_run):
    prediction, result = small_run
    assert [r.name for r in prediction.rungs] == ["H(Y)", "H(Y | x1)", "H(Y | x1, x2)"]
    assert prediction.levels == pytest.approx(result.levels)
    for k, read in enumerate(measured(prediction, result)):
        for j, rung in enumerate(prediction.rungs[1:], start=1):
            seen = read.rungs[j].onset
            assert abs(int(rung.onset[k]) - seen) <= 0.25 * seen, (k, rung.name, int(rung.onset[k]), seen)


def test_the_json_holds_what_the_issue_names(small_run):
    prediction, result = small_run
    for numbers, trained in ((prediction_json(prediction, result), True), (prediction_json(prediction), False)):
        assert numbers["task"]["values"] == 2 and numbers["task"]["mix"] == [0.5, 0.5]
        run = numbers["runs"][0]
        assert {"gamma", "seed", "rungs"} <= set(run)
        for rung in run["rungs"]:
            assert {"name", "level", "predicted_onset", "measured_onset", "predicted_dwell", "measured_dwell"} <= set(rung)
            assert (rung["measured_dwell"] is not None) == trained


@pytest.mark.parametrize("task, kwargs, message", [
    (xor_task(), {}, "hierarchy-family"),
    (hierarchy_task(block=4, n_values=2, mix=(0.5, 0.5, 0.0)), {}, "every order must lower the loss"),
    (hierarchy_task(**SMALL), {"lr": 0.0}, "lr"),
])
def test_bad_input_is_named(task, kwargs, message):
    with pytest.raises(ValueError, match=message):
        predict_staircase(task, **kwargs)


def test_cli_predict_trains_and_writes_measured_beside_predicted(tmp_path, capsys):
    out = tmp_path / "p.json"
    code = main(["predict", "--values", "2", "--block", "4", "--mix", "0.5", "0.5", "--gammas", "1", "--seeds", "1",
                 "--width", "16", "--train", "--no-progress", "--out", str(tmp_path), "--json", str(out)])
    assert code == 0
    numbers = json.loads(out.read_text())
    rungs = numbers["runs"][0]["rungs"]
    assert [r["name"] for r in rungs] == ["H(Y)", "H(Y | x1)", "H(Y | x1, x2)"]
    assert all(r["measured_onset"] is not None for r in rungs)
    assert (tmp_path / "prediction.png").stat().st_size > 0
    printed = capsys.readouterr().out
    assert "predicted in" in printed and "measured" in printed


def test_cli_predict_rejects_a_bad_mix_before_any_work(tmp_path, capsys):
    assert main(["predict", "--mix", "0.5", "0.6", "--out", str(tmp_path), "--no-progress"]) == 2
    err = capsys.readouterr()
    assert "ctxlab predict: error: mix" in err.err and "predicted in" not in err.out


def test_the_staircase_figure_draws_the_predicted_ladder_and_onsets(small_run):
    from ctxlab.plots import staircase_figure

    prediction, result = small_run
    top = staircase_figure(result, prediction=prediction).axes[0]
    drawn = [line for line in top.lines if list(line.get_xdata()) == [0, 1]]  # the axhlines
    levels = sorted(round(float(line.get_ydata()[0]), 4) for line in drawn)
    assert levels == sorted(round(h, 4) for h in prediction.levels)
    ticks = [line for line in top.lines if line.get_marker() == "v"]
    assert len(ticks) == 2 * (len(prediction.rungs) - 1)  # two seeds, one tick per predicted onset


def test_sub_level_growth_follows_which_on_the_whether_rest():
    from ctxlab.experiments import sub_level_growth

    task = hierarchy_task(n_values=3, block=6, mix=(0.5, 0.5))
    growth = sub_level_growth(task, gammas=(1.0,), seeds=(0,), lr=0.5, d=16, hidden=32, steps=1200, every=50)
    assert growth.steps.tolist() == list(range(0, 1201, 50))
    assert growth.loss.shape == growth.size.shape == growth.drive_rate.shape == (1, 25)
    assert growth.measured_rate().shape == (1, 24) and growth.size[0, -1] > 0  # oriented positive at the end
    held, (first, last) = growth.held_rate(0), growth.rests[0]  # this run rests on the sub-level (steps 400-500)
    assert first < int(growth.steps[growth.middles[0]]) < last
    inside = (growth.steps >= growth.steps[growth.middles[0]]) & (growth.steps <= last)
    assert bool(held[inside].isfinite().all()) and bool(held[~inside].isnan().all())
    assert float(held[growth.middles[0]]) == pytest.approx(float(growth.size[0, growth.middles[0]]))


@pytest.mark.parametrize(("task", "kwargs", "message"), [
    (hierarchy_task(**SMALL), {}, "no whether sub-level"),
    (hierarchy_task(n_values=3, block=6, mix=(0.5, 0.5)), {"order": 1}, "order must lie in"),
    (hierarchy_task(n_values=3, block=6, mix=(0.5, 0.5)), {"lr": 0.0}, "lr"),
])
def test_sub_level_growth_names_bad_input(task, kwargs, message):
    from ctxlab.experiments import sub_level_growth

    with pytest.raises(ValueError, match=message):
        sub_level_growth(task, steps=10, **kwargs)


def test_a_plateau_the_restricted_flow_cannot_reach_in_its_budget_is_noted(tmp_path, capsys, monkeypatch):
    """A flow that gives up short of its level (MAX_STEPS, here 50) says so, in the prediction, the command's
    output and its JSON; the small task's flows all reach their levels."""
    import ctxlab.theory.plateaus as plateaus

    assert predict_staircase(hierarchy_task(**SMALL), [1.0], [0], d=16, hidden=32, progress=False).stalls == []
    monkeypatch.setattr(plateaus, "MAX_STEPS", 50)
    out = tmp_path / "p.json"
    assert main(["predict", "--values", "2", "--block", "4", "--mix", "0.5", "0.5", "--gammas", "1", "--seeds", "1",
                 "--width", "16", "--no-progress", "--out", str(tmp_path), "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "note: the restricted flow did not come within 1e-3 of H(Y | x1, x2) = 0.3466 in 50 steps" in printed
    assert any("in 50 steps" in note for note in json.loads(out.read_text())["stalls"])

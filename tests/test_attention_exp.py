"""The pointer task, the uniform-attention baseline and ``ctxlab attention`` (tiny runs)."""

from __future__ import annotations

import dataclasses
import json
import shlex

import pytest
import torch

from ctxlab.attention_exp import attention_on_rung
from ctxlab.cli import main
from ctxlab.models import make_model
from ctxlab.tasks import pointer_task
from ctxlab.theory import misread_keys, target_attention


def test_pointer_task_labels_levels_and_bag_floor():
    task = pointer_task(n_ctx=3)
    pop = task.population
    assert pop.n == 2**3 * 6 and task.seq_len == 4 and pop.vocab_size == 8  # n_ctx 3: 8 contexts x 6 keys
    key = pop.x[:, -1] - 2
    where = task.info["target_position"]
    assert torch.equal(where, key % 3)
    a_key, a_target = key // 3 % 2, pop.x[torch.arange(pop.n), where] % 2
    expected = torch.full((pop.n, 2), 0.0)
    expected[torch.arange(pop.n), a_key] += 0.5
    expected[torch.arange(pop.n), (a_key + a_target) % 2] += 0.5
    assert torch.allclose(pop.y, expected)
    h0, h1, h2 = task.info["levels"]
    assert h0 == pytest.approx(torch.log(torch.tensor(2.0)).item(), abs=1e-6)
    assert h1 == pytest.approx(-(0.75 * torch.log(torch.tensor(0.75)) + 0.25 * torch.log(torch.tensor(0.25))).item(), abs=1e-6)
    assert h2 == pytest.approx(0.5 * h0, abs=1e-6)  # A(x_p) = 1: a coin; A(x_p) = 0: certain
    assert h2 + 0.1 < task.info["bag_level"] < h1  # the bag knows the counts, not the places
    # k of the 3 positions read, the others only the bag: each position's keys are a third of the data
    bag = task.info["bag_level"]
    assert task.info["partial_levels"] == pytest.approx([bag + k / 3 * (h2 - bag) for k in (1, 2)], abs=1e-9)


class _FixedAttention:
    """A stand-in model whose key row of attention is set per key token: [K, N, L, L]."""

    def __init__(self, task, peaks: list[dict[int, int]]):
        x = task.population.x
        n, L = x.shape
        self.embedding = torch.zeros(len(peaks), 1)
        self.attn = torch.full((len(peaks), n, L, L), 1.0 / L)
        for k, peak in enumerate(peaks):
            for row, token in enumerate(x[:, -1].tolist()):
                where = peak.get(token, int(task.info["target_position"][row]))
                self.attn[k, row, -1] = 0.1 / (L - 1)
                self.attn[k, row, -1, where] = 0.9

    def attention(self, x):
        return self.attn


def test_misread_keys_names_keys_whose_attention_peaks_elsewhere():
    task = pointer_task(n_ctx=3)
    keys = task.population.x[:, -1].unique().tolist()  # key token t names position (t - 2) % 3
    model = _FixedAttention(task, [{}, {keys[0]: 1, keys[5]: 1}, {keys[2]: 2}])  # keys[2] names 2: read right
    found = misread_keys(model, task)
    assert found[0] == {} and found[2] == {}
    assert set(found[1]) == {task.token_names[keys[0]], task.token_names[keys[5]]}
    row = found[1][task.token_names[keys[0]]]
    assert len(row) == 3 and row[1] == pytest.approx(0.9) and row[0] == pytest.approx(0.1 / 3)
    with pytest.raises(ValueError, match="pointer task"):
        misread_keys(model, dataclasses.replace(task, info={}))


def test_target_attention_split_by_position():
    from ctxlab.theory import target_attention

    task = pointer_task(n_ctx=3)
    model = make_model("attention", task, gamma=0.5, seed=[0, 1], d=8, hidden=8)
    with torch.no_grad():
        model.w_q.mul_(30)  # scores far from uniform, so the split has something to show
    whole, split = target_attention(task)(model), target_attention(task, by_position=True)(model)
    assert split.shape == (2, 3)
    assert torch.allclose(split.mean(1), whole, atol=1e-6)  # every position is named by a third of the keys
    attn = model.attention(task.population.x)[:, :, -1, :]
    named = task.info["target_position"] == 1
    assert torch.allclose(split[:, 1], attn[:, named, 1].mean(1), atol=1e-6)


def test_pointer_task_rejects_bad_input():
    for kwargs, named in (({"n_ctx": 1}, "n_ctx"), ({"mix": (0.5, 0.6)}, "mix"), ({"n_ctx": 12, "tokens_per_value": 4}, "population")):
        with pytest.raises(ValueError, match=named):
            pointer_task(**kwargs)


def test_uniform_attention_is_a_frozen_bag_per_model():
    task = pointer_task(n_ctx=3)
    model = make_model("attention", task, gamma=0.5, seed=[0, 0], uniform_attention=[False, True], d=8, hidden=8)
    with torch.no_grad():
        model.w_q.mul_(30)  # scores far from zero
    attn = model.attention(task.population.x).detach()
    assert float((attn[0] - 0.25).abs().max()) > 0.1 and torch.equal(attn[1], torch.full_like(attn[1], 0.25))
    model(task.population.x).sum().backward()
    assert float(model.w_q.grad[1].abs().max()) == 0 and float(model.w_q.grad[0].abs().max()) > 0
    probe = target_attention(task)(model).detach()
    assert float(probe[1]) == pytest.approx(0.25)
    with pytest.raises(ValueError, match="uniform_attention"):
        make_model("attention", task, seed=[0, 1, 2], uniform_attention=[True, False])


def test_attention_on_rung_reads_only_the_steps_on_the_rung():
    loss = torch.tensor([0.7, 0.56, 0.56, 0.4, 0.35])
    attention = torch.tensor([0.25, 0.26, 0.24, 0.6, 0.9])
    assert attention_on_rung(loss, attention, 0.5623, 4) == pytest.approx(0.01, abs=1e-6)
    assert attention_on_rung(loss, attention, 0.1, 4) is None


def test_command_writes_strict_json_and_figure(tmp_path, capsys):
    numbers, figs = tmp_path / "n.json", tmp_path / "figs"
    code = main(shlex.split(f"attention --steps 10 --seeds 2 --gammas 1 1.5 --profile quick --no-progress "
                            f"--out {figs} --json {numbers}"))
    out = capsys.readouterr().out
    assert code == 0 and "uniform: end - H(Y|key,x_p)" in out
    saved = json.loads(numbers.read_text(), parse_constant=lambda c: pytest.fail(f"{c} in the JSON"))
    assert set(saved) >= {"task", "seq_len", "levels", "runs", "baseline_runs", "seconds"}
    assert [lv["order"] for lv in saved["levels"]] == [0, 1, 2]
    assert [(r["gamma"], r["seed"]) for r in saved["runs"]] == [(1.0, 0), (1.0, 1), (1.5, 0), (1.5, 1)]
    for run, base in zip(saved["runs"], saved["baseline_runs"]):
        assert len(run["steps"]) == len(run["loss"]) == len(run["attention_to_target"]) == len(run["qk_norm"])
        assert run["steps"][0] == 0 and run["steps"][-1] == 10 and base["steps"] == run["steps"]
        assert abs(run["attention_to_target"][0] - 1 / saved["seq_len"]) < 1e-3
    assert (figs / "attention.png").exists()


BAD = {
    "steps zero": ("attention --steps 0", "--steps"),
    "seeds zero": ("attention --seeds 0", "--seeds"),
    "lr nan": ("attention --lr nan", "--lr"),
    "gamma negative": ("attention --gammas -1", "--gammas"),
    "profile unknown": ("attention --profile huge", "--profile"),
    "device unknown": ("attention --device tpu", "--device"),
    "out is a file": ("attention --out {FILE}", "--out"),
    "json is a folder": ("attention --json {DIR}", "--json"),
    "json is the figure": ("attention --out {DIR} --json {DIR}/attention.png", "--json"),
}


@pytest.mark.parametrize("line,named", BAD.values(), ids=BAD.keys())
def test_bad_options_fail_before_training(line, named, tmp_path, capsys):
    (tmp_path / "f").write_text("x")
    (tmp_path / "d").mkdir()
    argv = shlex.split(line.format(FILE=tmp_path / "f", DIR=tmp_path / "d")) + ["--steps", "100000", "--no-progress"]
    if line.startswith("attention --steps"):
        argv = shlex.split(line) + ["--no-progress"]
    try:
        code = main(argv)
    except SystemExit as exit_:
        code = exit_.code
    out, err = capsys.readouterr()
    assert code == 2 and named in err and len(err.strip().splitlines()) == 1 and out == ""


def test_a_diverging_run_says_so_and_fails(tmp_path, capsys):
    code = main(shlex.split(f"attention --lr 1e6 --steps 20 --seeds 1 --no-progress --profile quick --out {tmp_path}"))
    err = capsys.readouterr().err
    assert code == 1 and err.startswith("ctxlab attention: error: ") and "diverged" in err


@pytest.mark.parametrize("block,cosine", [({}, 0.99), ({"residual": False, "readout": "mean"}, 0.999)],
                         ids=["lesson 07's block", "no residual, mean read-out"])
def test_e2_and_e3_match_autograd_at_small_init_and_scale_as_stated(block, cosine):
    """E2 and E3 hold for both read-outs, with and without the residual (whose direct path makes the
    GELU's curvature matter sooner: a looser cosine at gamma 1), and scale as eps^6 and eps^8."""
    from ctxlab.attention_exp import POINTER_TASK, attention_model
    from ctxlab.theory import attention_embedding_velocity, cosine_per_model, embedding_velocity, qk_force, qk_velocity

    task = pointer_task(**POINTER_TASK)
    model = attention_model(task, gamma=1.0, seed=[0, 1, 2], **block)
    assert bool((cosine_per_model(attention_embedding_velocity(model, task.population),
                                  embedding_velocity(model, task.population)) > cosine).all())
    predicted, exact = qk_velocity(model, task.population)
    assert bool((cosine_per_model(predicted, exact) > cosine).all())
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(0.5)
    predicted_half, exact_half = qk_velocity(model, task.population)
    force_half = qk_force(model, task.population)
    assert bool((cosine_per_model(predicted_half, exact_half) > 0.999).all())  # closer to leading order
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(2.0)
    assert float(qk_force(model, task.population).norm() / force_half.norm()) == pytest.approx(2**6, rel=0.02)
    assert float(exact.norm() / exact_half.norm()) == pytest.approx(2**8, rel=0.02)


def test_readout_last_reads_the_last_position_and_bad_readouts_fail():
    task = pointer_task(n_ctx=2)
    kwargs = dict(gamma=0.5, seed=[0, 1], d=8, hidden=8)
    mean, last = (make_model("attention", task, readout=r, **kwargs) for r in ("mean", "last"))
    x = task.population.x[:7]
    with torch.no_grad():
        h = mean.embedding[:, x] + mean.position[:, None]
        r = mean.attention(x) @ (h @ mean.w_v[:, None])
        per_position = torch.nn.functional.gelu(r @ mean.w1[:, None]) @ mean.w2[:, None]  # [K, N, L, C]
        torch.testing.assert_close(mean(x), per_position.mean(2))
        torch.testing.assert_close(last(x), per_position[:, :, -1])
    with pytest.raises(ValueError, match="readout"):
        make_model("attention", task, readout="first", **kwargs)


def test_side_levels_name_the_bag_floor_and_the_partial_read_and_are_drawn():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ctxlab.attention_exp import BAG_NAME, side_levels
    from ctxlab.plots import label_side_levels
    from ctxlab.tasks import make_task

    task = pointer_task(n_ctx=3)
    levels = side_levels(task)
    assert levels == [(BAG_NAME, task.info["bag_level"]), ("2 of 3 positions read", task.info["partial_levels"][-1])]
    last, key = task.info["levels"][-1], task.info["levels"][1]
    assert all(last < loss < key for _, loss in levels)  # both lie on the last stair
    assert side_levels(make_task("partner")) == []  # a task without a bag floor has none
    fig, ax = plt.subplots()
    label_side_levels(ax, levels)
    assert [t.get_text() for t in ax.texts] == [f"{n} = {v:.3f}" for n, v in levels] and len(ax.lines) == 2
    plt.close(fig)

"""Models and training: init scale, ensembles equal separate runs, determinism, optimizers, errors."""

import pytest
import torch

from ctxlab.models import EmbAttention, ensemble_grid, make_model
from ctxlab.tasks import hierarchy_task, xor_task
from ctxlab.train import cross_entropy, relative_gradient_rates, train


@pytest.fixture(scope="module")
def task():
    return hierarchy_task()


def test_init_scale_follows_gamma(task):
    model = make_model("mlp", task, d=64, hidden=256, gamma=[0.5, 1.0], seed=[0, 0])
    for k, gamma in enumerate([0.5, 1.0]):
        assert float(model.embedding[k].detach().std()) == pytest.approx(64 ** (-gamma), rel=0.05)
        assert float(model.w1[k].detach().std()) == pytest.approx((3 * 64) ** (-gamma), rel=0.05)
        assert float(model.w2[k].detach().std()) == pytest.approx(256 ** (-gamma), rel=0.05)


@pytest.mark.parametrize("kind", ["mlp", "attention"])
@pytest.mark.parametrize("optimizer", ["gd", "adam"])
def test_ensemble_equals_separate_models(kind, optimizer):
    task = hierarchy_task(block=3)
    gammas, seeds = [0.75, 1.0, 1.25], [3, 4, 5]
    lrs = [0.5, 1.0, 0.7] if optimizer == "gd" else [1e-2, 2e-2, 5e-3]
    together = train(make_model(kind, task, gamma=gammas, seed=seeds, hidden=32), task.population, 30,
                     optimizer=optimizer, lr=lrs, progress=False)
    for k in range(3):
        alone = train(make_model(kind, task, gamma=gammas[k], seed=seeds[k], hidden=32), task.population, 30,
                      optimizer=optimizer, lr=lrs[k], progress=False)
        torch.testing.assert_close(together.loss[k], alone.loss[0], rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(together.embeddings[k], alone.embeddings[0], rtol=1e-4, atol=1e-6)


def test_training_is_deterministic_and_records_requested_steps(task):
    def run():
        model = make_model("mlp", task, gamma=1.0, seed=7, hidden=32)
        return train(model, task.population, 40, record_steps=[0, 10, 40], progress=False)

    a, b = run(), run()
    assert a.steps.tolist() == [0, 10, 40]
    assert torch.equal(a.loss, b.loss) and torch.equal(a.embeddings, b.embeddings)
    assert a.loss[0, 0] == pytest.approx(torch.log(torch.tensor(3.0)).item(), abs=1e-4)


def test_gradient_descent_lowers_the_loss_and_sgd_uses_minibatches(task):
    model = make_model("mlp", task, gamma=0.5, seed=0, hidden=32)
    traj = train(model, task.population, 200, lr=1.0, progress=False)
    assert float(traj.loss[0, -1]) < float(traj.loss[0, 0]) - 0.1
    sample = task.sample(2000, seed=0)
    sgd = train(make_model("mlp", task, gamma=0.5, seed=0, hidden=32), sample, 50, optimizer="sgd",
                lr=0.5, batch_size=64, progress=False)
    assert sgd.loss.shape == (1, 51)


def test_probes_are_recorded(task):
    model = make_model("attention", task, gamma=[1.0, 1.0], seed=[0, 1], hidden=16)
    traj = train(model, task.population, 20, record_every=10, progress=False,
                 probes={"qk": lambda m: m.qk_norm(), "attn": lambda m: m.attention(task.population.x).mean(1)})
    assert traj.extras["qk"].shape == (2, 3) and traj.extras["attn"].shape == (2, 3, 3, 3)
    # at small init, attention is uniform: 1/L everywhere
    torch.testing.assert_close(traj.extras["attn"][:, 0], torch.full((2, 3, 3), 1 / 3), atol=1e-4, rtol=0)


def test_query_key_weights_are_frozen_at_small_init():
    """Scores are O(eps^4): W_Q, W_K move ~1e4 times slower than the value path (E, W_V)."""
    task = xor_task()
    model = EmbAttention(task.vocab_size, task.seq_len, task.n_labels, gamma=[1.0], seed=[0])
    rates = {k: float(v[0]) for k, v in relative_gradient_rates(model, task.population).items()}
    assert min(rates["embedding"], rates["w_v"]) > 1e3 * max(rates["w_q"], rates["w_k"])


def test_ensemble_grid_is_gamma_major():
    assert ensemble_grid([0.5, 1.0], [0, 1]) == ([0.5, 0.5, 1.0, 1.0], [0, 1, 0, 1])


def test_bad_inputs_raise_clear_errors(task):
    with pytest.raises(ValueError, match="gamma must be a positive"):
        make_model("mlp", task, gamma=0.0)
    with pytest.raises(ValueError, match="gamma must be a positive"):
        make_model("mlp", task, gamma=-1)
    with pytest.raises(ValueError, match="same length"):
        make_model("mlp", task, gamma=[1.0, 0.5], seed=[0, 1, 2])
    with pytest.raises(ValueError, match="unknown model"):
        make_model("rnn", task)
    with pytest.raises(ValueError, match="unknown activation"):
        make_model("mlp", task, activation="swish")
    model = make_model("mlp", task)
    with pytest.raises(ValueError, match="unknown optimizer"):
        train(model, task.population, 5, optimizer="lion")
    with pytest.raises(ValueError, match="unknown device"):
        train(model, task.population, 5, device="tpu")
    with pytest.raises(ValueError, match="does not fit the model"):
        train(model, xor_task().population, 5)
    with pytest.raises(ValueError, match="length 3"):
        model(torch.zeros(4, 2, dtype=torch.long))
    with pytest.raises(ValueError, match="token ids"):
        model(torch.full((4, 3), 99))
    with pytest.raises(ValueError, match="lr must be"):
        train(model, task.population, 5, lr=[0.1, 0.2])
    with pytest.raises(ValueError, match="batch_size"):
        train(model, task.population, 5, optimizer="sgd")


def test_cross_entropy_soft_and_hard_labels_agree(task):
    model = make_model("mlp", task, gamma=0.5, seed=1)
    sample = task.sample(50, seed=0)
    logits = model(sample.x)
    hard = cross_entropy(logits, sample)
    manual = torch.nn.functional.cross_entropy(logits[0], sample.y)
    torch.testing.assert_close(hard[0], manual)


@pytest.mark.parametrize("optimizer", ["gd", "sgd"])
def test_training_that_blows_up_raises_naming_step_and_model(task, optimizer):
    from ctxlab.train import TrainingDiverged

    model = make_model("mlp", task, d=8, hidden=16, gamma=[1.0, 0.5], seed=[0, 3])
    with pytest.raises(TrainingDiverged, match=r"model 1 \(gamma 0.5, seed 3\) at step \d+"):
        train(model, task.population, 50, lr=[1.0, 1e6], optimizer=optimizer,
              batch_size=16 if optimizer == "sgd" else None, progress=False)


def test_progress_bars_end_at_n_of_n(task, monkeypatch):
    import tqdm.auto

    from ctxlab.lm import TinyGPT, train_lm

    bars = []

    class Recording(tqdm.auto.tqdm):
        def close(self):
            bars.append((self.n, self.total))
            super().close()

    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setattr(tqdm.auto, "tqdm", Recording)
    train(make_model("mlp", task, d=4, hidden=8), task.population, 7, progress=True)
    tokens = torch.randint(0, 5, (300,), generator=torch.Generator().manual_seed(0))
    train_lm(TinyGPT(5, 4, d=4, n_layers=1, n_heads=1), tokens, 6, eval_tokens=tokens, batch_size=4, progress=True)
    assert sorted(set(bars)) == [(6, 6), (7, 7)]  # closed (maybe twice: exit and __del__) at N/N


def test_one_weight_decay_per_model_is_the_runs_one_by_one():
    from ctxlab.models import EmbMLP
    from ctxlab.tasks import hierarchy_task

    task = hierarchy_task(block=4, n_values=2)
    decays = [0.0, 3e-3, 1e-2]
    batched = train(EmbMLP(task.vocab_size, task.seq_len, task.n_labels, d=8, hidden=16, gamma=1.0, seed=[0, 0, 0]),
                    task.population, 60, weight_decay=decays, record_every=20, progress=False)
    for k, lam in enumerate(decays):
        alone = train(EmbMLP(task.vocab_size, task.seq_len, task.n_labels, d=8, hidden=16, gamma=1.0, seed=0),
                      task.population, 60, weight_decay=lam, record_every=20, progress=False)
        torch.testing.assert_close(batched.loss[k], alone.loss[0], rtol=1e-6, atol=1e-7)
    assert batched.config["weight_decay"] == pytest.approx(decays)
    with pytest.raises(ValueError, match="weight_decay"):
        train(EmbMLP(task.vocab_size, task.seq_len, task.n_labels, d=8, hidden=16, seed=[0, 1]), task.population, 1,
              weight_decay=[0.1, -1.0], progress=False)

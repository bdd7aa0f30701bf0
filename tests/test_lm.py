"""The tiny GPT, the n-gram yardsticks and next-token training."""

import pytest
import torch

from ctxlab.lm import NGramPredictor, TinyGPT, generate, kl_to, train_lm


def test_gpt_is_causal_and_shaped():
    model = TinyGPT(11, 8, d=16, n_layers=2, n_heads=2, gamma=[0.5, 1.0], seed=[0, 1])
    x = torch.randint(0, 11, (3, 8), generator=torch.Generator().manual_seed(0))
    logits = model(x)
    assert logits.shape == (2, 3, 8, 11)
    changed = x.clone()
    changed[:, 5:] = (changed[:, 5:] + 1) % 11
    torch.testing.assert_close(model(changed)[:, :, :5], logits[:, :, :5])
    assert not torch.allclose(model(changed)[:, :, 5:], logits[:, :, 5:])
    with pytest.raises(ValueError, match="1 <= T <= 8"):
        model(torch.zeros(2, 9, dtype=torch.long))
    with pytest.raises(ValueError, match="divisible"):
        TinyGPT(11, 8, d=10, n_heads=3)


def test_ngram_predictor_matches_counts():
    tokens = torch.tensor([0, 1, 0, 1, 0, 2, 0, 1])
    bigram = NGramPredictor(tokens, 3, 2, alpha=1e-6)
    after_zero = bigram.probs[0]
    assert float(after_zero[1]) == pytest.approx(3 / 4, abs=1e-4) and float(after_zero[2]) == pytest.approx(1 / 4, abs=1e-4)
    x = tokens[None, :4]
    assert bigram.predict(x).shape == (1, 4, 3)
    assert NGramPredictor(tokens, 3, 3).predict(x).shape == (1, 3, 3)
    with pytest.raises(ValueError, match="too big"):
        NGramPredictor(tokens, 1000, 3)


def test_kl_is_zero_for_the_ngram_itself():
    tokens = torch.randint(0, 5, (500,), generator=torch.Generator().manual_seed(2))
    bigram = NGramPredictor(tokens, 5, 2)
    x = tokens[None, :20]
    logits = bigram.predict(x).log()[None]  # [1, 1, 20, 5]: a "model" that is the bigram
    assert float(kl_to(logits, bigram, x, first=0)) == pytest.approx(0.0, abs=1e-5)


def test_train_lm_ensemble_equals_separate_runs_and_records_kl():
    tokens = torch.randint(0, 7, (3000,), generator=torch.Generator().manual_seed(3))
    train, held = tokens[:2500], tokens[2500:]
    sticks = {"unigram": NGramPredictor(train, 7, 1), "bigram": NGramPredictor(train, 7, 2)}

    def run(gammas, seeds):
        model = TinyGPT(7, 6, d=8, n_layers=1, n_heads=1, gamma=gammas, seed=seeds)
        return train_lm(model, train, 20, eval_tokens=held, yardsticks=sticks, batch_size=8, record_every=10,
                        lr=1e-2, progress=False)

    both = run([1.0, 0.75], [0, 1])
    assert both.loss.shape == (2, 3) and both.extras["kl_bigram"].shape == (2, 3)
    alone = run([0.75], [1])
    torch.testing.assert_close(both.loss[1], alone.loss[0], rtol=1e-4, atol=1e-5)


def test_generate_is_seeded():
    model = TinyGPT(9, 5, d=8, n_layers=1, n_heads=1, gamma=[1.0, 1.0], seed=[0, 1])
    a = generate(model, torch.tensor([1, 2]), 6, seed=4)
    assert a.shape == (2, 8) and torch.equal(a, generate(model, torch.tensor([1, 2]), 6, seed=4))


def test_recorded_full_profile_run_loads_and_round_trips():
    from ctxlab.experiments import LMResult, recorded_lm_run

    full = recorded_lm_run()
    traj = full.trajectory
    assert traj.gammas == [1.0, 1.0, 0.5, 0.5] and int(traj.steps[-1]) == full.config["steps"] == 3000
    minima = full.kl_minimum_steps()
    for k in (0, 1):  # small init: the phases in order, and the trigram curve turns inside the run
        assert minima["unigram"][k] < minima["bigram"][k] < minima["trigram"][k] < int(traj.steps[-1])
        assert float(traj.extras["kl_trigram"][k, -1]) > float(traj.extras["kl_trigram"][k].min()) + 0.05
    again = LMResult.from_json(full.to_json(), last_step=1000)
    assert int(again.trajectory.steps[-1]) == 1000 and set(again.samples) <= {0, 600}
    assert torch.equal(again.trajectory.loss, traj.loss[:, : len(again.trajectory.steps)])
    with pytest.raises(ValueError, match="no recorded run"):
        recorded_lm_run("nonexistent")


def test_predictor_from_a_shared_table_equals_one_counted_alone():
    from ctxlab.signatures import ngram_tables

    tokens = torch.randint(0, 5, (400,), generator=torch.Generator().manual_seed(0))
    tables = ngram_tables(tokens, 5, max_n=3)
    for n in (1, 2, 3):
        shared = NGramPredictor.from_table(tables[n - 1], 5)
        assert shared.n == n and torch.equal(shared.probs, NGramPredictor(tokens, 5, n).probs)
    with pytest.raises(ValueError, match="V\\^\\(n-1\\)"):
        NGramPredictor.from_table(tables[2][:7], 5)


def test_shuffled_band_holds_chance_and_an_aligned_embedding_stands_above_it():
    from ctxlab.experiments import shuffled_alignment_band
    from ctxlab.train import Trajectory

    g = torch.Generator().manual_seed(5)
    S = torch.randn(12, 4, generator=g, dtype=torch.float64)
    E0 = 0.01 * torch.randn(12, 6, generator=g, dtype=torch.float64)
    aligned = E0 + S @ torch.randn(4, 6, generator=g, dtype=torch.float64)  # E - E0 is a linear image of S
    random = E0 + torch.randn(12, 6, generator=g, dtype=torch.float64)
    embeddings = torch.stack([torch.stack([E0, aligned]), torch.stack([E0, random]), torch.stack([E0, torch.full_like(E0, torch.nan)])])
    traj = Trajectory(steps=torch.tensor([0, 10]), loss=torch.zeros(3, 2), embeddings=embeddings, extras={},
                      gammas=[1.0] * 3, seeds=[0, 1, 2], config={}, diverged_at=torch.tensor([-1, -1, 5]))
    band = shuffled_alignment_band(traj, {"s": S}, n=30)["s"]
    assert band.shape == (2, 3, 2) and bool((band[0, :2] <= band[1, :2]).all())
    from ctxlab.align import cka, permutation_baseline

    baseline = permutation_baseline("cka", embeddings[:2, 1] - E0, S, n=30)  # the same shuffles, one CKA each
    torch.testing.assert_close(band[:, :2, 1], torch.stack([baseline.min(0).values, baseline.max(0).values]))
    assert float(cka(aligned - E0, S)) > float(band[1, 0, 1]) + 0.2  # the aligned model clears its band
    assert float(band[0, 1, 1]) <= float(cka(random - E0, S)) <= float(band[1, 1, 1])  # chance falls inside the band
    assert bool(band[:, 2, 1].isnan().all())  # a diverged model has no band after it diverged
    with pytest.raises(ValueError, match="number of shuffles"):
        shuffled_alignment_band(traj, {"s": S}, n=0)


def test_lm_settings_take_the_optimizer_and_the_band_round_trips():
    from ctxlab.experiments import LMResult, language_model, lm_settings

    assert lm_settings("quick", {"optimizer": "sgd"})["optimizer"] == "sgd"
    with pytest.raises(ValueError, match="unknown optimizer 'gd'"):
        lm_settings("quick", {"optimizer": "gd"})
    run = language_model(seeds=(0,), source="pydoc", profile="quick", steps=4, record_every=2, optimizer="sgd", lr=0.5,
                         progress=False)
    assert run.config["optimizer"] == "sgd" and run.alignment_band["bigram"].shape == (2, 1, 3)
    again = LMResult.from_json(run.to_json())
    torch.testing.assert_close(again.alignment_band["trigram"], run.alignment_band["trigram"].float(), atol=1e-5, rtol=0)


def test_lm_figures_draw_the_band_only_where_one_was_recorded():
    import matplotlib

    matplotlib.use("Agg")
    from ctxlab.experiments import recorded_lm_run
    from ctxlab.plots import lm_figure, lm_regimes_figure

    full = recorded_lm_run()
    assert full.alignment_band is None and len(lm_figure(full).axes) == 2
    from ctxlab.experiments import LMResult

    numbers = full.to_json()
    numbers["alignment_band"] = {name: [rows, rows] for name, rows in numbers["alignment"].items()}  # [2, K, T]
    banded = LMResult.from_json(numbers)
    fig = lm_regimes_figure({"a": banded, "b": banded})
    assert len(fig.axes) == 6 and fig.axes[0].get_ylim() == fig.axes[3].get_ylim()


def test_text_data_splits_the_text_and_counts_its_yardsticks_once():
    from ctxlab.experiments import NGRAM_ORDERS, text_data
    from ctxlab.signatures import ngram_cross_entropies

    data = text_data("pydoc", "char")
    assert data.vocab_size == data.tokenizer.vocab_size and set(data.yardsticks) == set(NGRAM_ORDERS)
    assert len(data.held_out) == pytest.approx(len(data.train) / 9, rel=1e-3)  # the last 10 % held out
    assert [p.n for p in data.yardsticks.values()] == [1, 2, 3]
    h = list(data.entropies.values())
    assert h == pytest.approx(ngram_cross_entropies(data.train, data.held_out, data.vocab_size), rel=1e-6)
    assert h[0] > h[1] > h[2]
    with pytest.raises(ValueError, match="unknown text source"):
        text_data("no such text")

"""Bad inputs at the library boundary: NaN, infinite or negative values where they make no sense,
float token ids, empty lists, wrong types. Each must raise a ``ValueError`` that names the argument,
never a raw torch/Python error and never a silent wrong result (e.g. NaN embeddings scored as 0)."""

from __future__ import annotations

import math

import pytest
import torch

from ctxlab import align, composition, corpus, rungs, signatures, tasks, theory, transplant
from ctxlab.lm import NGramPredictor, TinyGPT, generate, train_lm
from ctxlab.models import EmbMLP, ensemble_grid, make_model
from ctxlab.train import train

NAN, INF = math.nan, math.inf
TASK = tasks.hierarchy_task(block=3)
DATA = TASK.population
V = TASK.vocab_size
E = torch.randn(V, 4, dtype=torch.float64)
E_NAN = E.clone()
E_NAN[0, 0] = NAN
S = signatures.label_signature(DATA, 1)
STREAM = torch.randint(0, 5, (200,))
COMPOSE = tasks.anchor_composition_task(n_keys=4)


def model(**kw):
    return make_model("mlp", TASK, d=4, hidden=8, **kw)


def gpt():
    return TinyGPT(5, 4, d=4, n_layers=1, n_heads=1)


def steps(T=5):
    return torch.arange(T)


def dataset(**change):
    args = dict(x=DATA.x, y=DATA.y, vocab_size=V, n_labels=DATA.n_labels, weights=DATA.weights)
    args.update(change)
    return tasks.Dataset(**args)


def with_nan(t: torch.Tensor) -> torch.Tensor:
    t = t.clone().float()
    t.view(-1)[0] = NAN
    return t


CASES = {
    # tasks
    "Dataset float token ids": (lambda: dataset(x=DATA.x.float()), "x"),
    "Dataset NaN weights": (lambda: dataset(weights=with_nan(DATA.weights)), "weights"),
    "Dataset negative weights": (lambda: dataset(weights=DATA.weights * torch.tensor([-1.0] + [1.0] * (DATA.n - 1))), "weights"),
    "Dataset NaN soft labels": (lambda: dataset(y=with_nan(DATA.y)), "y"),
    "Dataset negative soft labels": (lambda: dataset(y=DATA.y - 0.5), "y"),
    "Dataset soft labels not distributions": (lambda: dataset(y=DATA.y * 2), "y"),
    "Dataset float 1-d labels": (lambda: dataset(y=DATA.y.argmax(1).float()), "y"),
    "Dataset empty": (lambda: dataset(x=DATA.x[:0], y=DATA.y[:0], weights=DATA.weights[:0]), "empty"),
    "hierarchy_task NaN mix": (lambda: tasks.hierarchy_task(mix=(NAN, 0.5, 0.5)), "mix"),
    "hierarchy_task negative mix": (lambda: tasks.hierarchy_task(mix=(-0.2, 0.6, 0.6)), "mix"),
    "hierarchy_task empty mix": (lambda: tasks.hierarchy_task(mix=()), "mix"),
    "hierarchy_task float block": (lambda: tasks.hierarchy_task(block=4.5), "block"),
    "xor_task float vocab": (lambda: tasks.xor_task(vocab=8.0), "vocab"),
    "Task.sample zero": (lambda: TASK.sample(0), "n"),
    "Task.sample float n": (lambda: TASK.sample(2.5), "n"),
    "with_token_frequencies NaN probs": (lambda: tasks.with_token_frequencies(TASK, 0, with_nan(torch.full((V,), 1.0 / V))), "probs"),
    "with_token_frequencies negative probs": (lambda: tasks.with_token_frequencies(TASK, 0, torch.tensor([-1.0, 2.0] + [0.0] * (V - 2))), "probs"),
    "with_token_frequencies float position": (lambda: tasks.with_token_frequencies(TASK, 0.5, torch.full((V,), 1.0 / V)), "position"),
    "modes_task NaN strength": (lambda: tasks.modes_task(strengths=(NAN, 0.1, 0.1)), "strengths"),
    "modes_task negative strength": (lambda: tasks.modes_task(strengths=(-0.1, 0.1, 0.1)), "strengths"),
    "zipf no tokens": (lambda: tasks.zipf(0, 10), "n_tokens"),
    "zipf NaN exponent": (lambda: tasks.zipf(5, 10, exponent=NAN), "exponent"),
    "zipf more tokens than vocab": (lambda: tasks.zipf(20, 10), "n_tokens"),
    "partner_task NaN mix": (lambda: tasks.partner_task(mix=(NAN, 0.5)), "mix"),
    "anchor_composition_task float shifts": (lambda: tasks.anchor_composition_task(shifts=(1.5, 2, 3, 4)), "shifts"),
    "anchor_composition_task one-anchor held_out": (lambda: tasks.anchor_composition_task(held_out=(1,)), "held_out"),
    "transfer_task float coefficients": (lambda: tasks.transfer_task(coefficients=(1.5, 2, 1)), "coefficients"),
    "make_task unknown": (lambda: tasks.make_task("parity"), "task"),
    # models
    "model NaN gamma": (lambda: model(gamma=NAN), "gamma"),
    "model negative gamma": (lambda: model(gamma=-1.0), "gamma"),
    "model float width": (lambda: make_model("mlp", TASK, d=2.5), "d"),
    "model float seed": (lambda: model(seed=1.5), "seed"),
    "model NaN seed": (lambda: model(seed=NAN), "seed"),
    "model empty grid": (lambda: model(gamma=[], seed=[]), "gamma"),
    "ensemble_grid empty": (lambda: ensemble_grid([], [0]), "gammas"),
    "model float token ids": (lambda: model()(DATA.x.float() + 0.5), "token"),
    "model wrong length": (lambda: model()(DATA.x[:, :2]), "length"),
    "model unknown activation": (lambda: EmbMLP(V, 3, 3, activation="swish"), "activation"),
    "TinyGPT float token ids": (lambda: gpt()(torch.zeros(2, 3)), "token"),
    # train
    "train NaN lr": (lambda: train(model(), DATA, 3, lr=NAN, progress=False), "lr"),
    "train negative lr": (lambda: train(model(), DATA, 3, lr=-1.0, progress=False), "lr"),
    "train text lr": (lambda: train(model(), DATA, 3, lr="fast", progress=False), "lr"),
    "train NaN momentum": (lambda: train(model(), DATA, 3, optimizer="momentum", momentum=NAN, progress=False), "momentum"),
    "train negative momentum": (lambda: train(model(), DATA, 3, optimizer="momentum", momentum=-0.5, progress=False), "momentum"),
    "train momentum 1": (lambda: train(model(), DATA, 3, optimizer="momentum", momentum=1.0, progress=False), "momentum"),
    "train negative weight decay": (lambda: train(model(), DATA, 3, weight_decay=-0.1, progress=False), "weight_decay"),
    "train NaN weight decay": (lambda: train(model(), DATA, 3, weight_decay=NAN, progress=False), "weight_decay"),
    "train record_every zero": (lambda: train(model(), DATA, 3, record_every=0, progress=False), "record_every"),
    "train record_every negative": (lambda: train(model(), DATA, 3, record_every=-2, progress=False), "record_every"),
    "train record_every float": (lambda: train(model(), DATA, 3, record_every=1.5, progress=False), "record_every"),
    "train record_steps float": (lambda: train(model(), DATA, 3, record_steps=[0, 1.5], progress=False), "record_steps"),
    "train record_steps NaN": (lambda: train(model(), DATA, 3, record_steps=[NAN], progress=False), "record_steps"),
    "train record_steps empty": (lambda: train(model(), DATA, 3, record_steps=[], progress=False), "record_steps"),
    "train bool steps": (lambda: train(model(), DATA, True, progress=False), "steps"),
    "train float steps": (lambda: train(model(), DATA, 3.0, progress=False), "steps"),
    "train negative batch": (lambda: train(model(), DATA, 3, optimizer="sgd", batch_size=-4, progress=False), "batch_size"),
    "train float batch": (lambda: train(model(), DATA, 3, optimizer="sgd", batch_size=2.5, progress=False), "batch_size"),
    "train unknown on_divergence": (lambda: train(model(), DATA, 3, on_divergence="ignore", progress=False), "on_divergence"),
    # align
    "rsa NaN embedding": (lambda: align.rsa(E_NAN, S), "E"),
    "cka NaN embedding": (lambda: align.cka(E_NAN, S), "E"),
    "cka infinite embedding": (lambda: align.cka(E * INF, S), "E"),
    "subspace NaN embedding": (lambda: align.subspace_fraction(E_NAN, S), "E"),
    "ridge NaN signature": (lambda: align.ridge_r2(E, with_nan(S.matrix)), "S"),
    "ridge negative alpha": (lambda: align.ridge_r2(E, S, alpha=-1.0), "alpha"),
    "cka float tokens": (lambda: align.cka(E, S, tokens=[0.5, 1.5, 2.5]), "tokens"),
    "permutation_baseline zero shuffles": (lambda: align.permutation_baseline("cka", E, S, n=0), "n"),
    "crossing_step NaN level": (lambda: rungs.crossing_step(steps(), torch.rand(5), NAN), "level"),
    "stair_onsets one level": (lambda: rungs.stair_onsets(steps(), torch.rand(5), [1.0]), "levels"),
    "measure_rungs negative flat": (lambda: rungs.measure_rungs(steps(), torch.rand(5), [1.0, 0.5], flat=-1.0), "flat"),
    "measure_rungs negative tol": (lambda: rungs.measure_rungs(steps(), torch.rand(5), [1.0, 0.5], tol=-1.0), "tol"),
    "pca_2d NaN": (lambda: align.pca_2d(E_NAN), "E"),
    "noise_sweep NaN noise": (lambda: align.noise_sweep(S, [NAN], [0], n_shuffles=1, metrics=("cka",)), "noise"),
    "noise_sweep negative noise": (lambda: align.noise_sweep(S, [-1.0], [0], n_shuffles=1, metrics=("cka",)), "noise"),
    "nearest float row": (lambda: align.nearest(E, 1.5), "row"),
    "nearest float k": (lambda: align.nearest(E, 1, k=2.5), "k"),
    "neighbour_overlap float k": (lambda: align.neighbour_overlap(E, E, k=2.5), "k"),
    "signature_classes negative tol": (lambda: align.signature_classes(S, tol=-1.0), "tol"),
    "signature_classes NaN tol": (lambda: align.signature_classes(S, tol=NAN), "tol"),
    "class_cosines float classes": (lambda: align.class_cosines(E, torch.arange(V) / 2), "classes"),
    # signatures
    "label_signature float order": (lambda: signatures.label_signature(DATA, 1.0), "order"),
    "conditional_entropy position out of range": (lambda: signatures.conditional_entropy(DATA, (7,)), "positions"),
    "conditional_entropy float position": (lambda: signatures.conditional_entropy(DATA, (0.5,)), "positions"),
    "bucket_rare float tokens": (lambda: signatures.bucket_rare(STREAM.float(), 5, 3), "tokens"),
    "bigram_signature float tokens": (lambda: signatures.bigram_signature(STREAM.float(), 5), "tokens"),
    "trigram_increment float tokens": (lambda: signatures.trigram_increment(STREAM.float(), 5), "tokens"),
    "ngram_tables NaN alpha": (lambda: signatures.ngram_tables(STREAM, 5, 2, alpha=NAN), "alpha"),
    "ngram_tables infinite alpha": (lambda: signatures.ngram_tables(STREAM, 5, 2, alpha=INF), "alpha"),
    "ngram_tables float tokens": (lambda: signatures.ngram_tables(STREAM.float(), 5, 2), "tokens"),
    "ngram_tables token out of range": (lambda: signatures.ngram_tables(STREAM, 3, 2), "tokens"),
    "ngram_tables float order": (lambda: signatures.ngram_tables(STREAM, 5, 2.5), "max_n"),
    "held_out_cross_entropies no tables": (lambda: signatures.held_out_cross_entropies([], STREAM, 5), "tables"),
    # theory
    "predicted_growth_rates NaN lr": (lambda: theory.predicted_growth_rates(torch.rand(3), lr=NAN), "lr"),
    "predicted_growth_rates negative lr": (lambda: theory.predicted_growth_rates(torch.rand(3), lr=-1.0), "lr"),
    "predicted_switch_on negative level": (lambda: theory.predicted_switch_on(torch.rand(3), torch.rand(3), -1.0), "level"),
    "pair_residual float position": (lambda: theory.pair_residual(DATA, DATA.y, 0.5, 1), "i"),
    "pair_residual NaN probs": (lambda: theory.pair_residual(DATA, with_nan(DATA.y), 0, 1), "probs"),
    "departure_step NaN tol": (lambda: theory.departure_step(steps(), torch.rand(5), NAN), "tol"),
    "class_cosines NaN rows": (lambda: align.class_cosines(E_NAN, torch.arange(V) % 2), "E"),
    # corpus
    "load_text float max_chars": (lambda: corpus.load_text("pydoc", max_chars=10.5), "max_chars"),
    "decode float ids": (lambda: corpus.CharTokenizer("abc").decode([0.5, 1.0]), "ids"),
    "tokenizer NaN vocab": (lambda: corpus.tokenizer("bpe", "abc", vocab_size=NAN), "vocab_size"),
    "next_token_windows float context": (lambda: corpus.next_token_windows(STREAM, 2.5, 5), "context"),
    "next_token_windows negative max_windows": (lambda: corpus.next_token_windows(STREAM, 3, 5, max_windows=-1), "max_windows"),
    "next_token_windows float tokens": (lambda: corpus.next_token_windows(STREAM.float(), 3, 5), "tokens"),
    # lm
    "NGramPredictor NaN alpha": (lambda: NGramPredictor(STREAM, 5, 2, alpha=NAN), "alpha"),
    "generate negative length": (lambda: generate(gpt(), torch.tensor([0, 1]), -1), "n_new"),
    "generate NaN temperature": (lambda: generate(gpt(), torch.tensor([0, 1]), 2, temperature=NAN), "temperature"),
    "generate float prompt": (lambda: generate(gpt(), torch.tensor([0.5, 1.0]), 2), "prompt"),
    "train_lm float tokens": (lambda: train_lm(gpt(), STREAM.float(), 2, eval_tokens=STREAM, progress=False), "train_tokens"),
    "train_lm zero batch": (lambda: train_lm(gpt(), STREAM, 2, eval_tokens=STREAM, batch_size=0, progress=False), "batch_size"),
    "train_lm negative weight decay": (lambda: train_lm(gpt(), STREAM, 2, eval_tokens=STREAM, weight_decay=-1.0, progress=False), "weight_decay"),
    "train_lm NaN lr": (lambda: train_lm(gpt(), STREAM, 2, eval_tokens=STREAM, lr=NAN, progress=False), "lr"),
    # transplant
    "freeze_embedding float index": (lambda: transplant.freeze_embedding(model(seed=[0, 1]), [0.5]), "models"),
    "transplant NaN table": (lambda: transplant.transplant(model(), {0: torch.full((V, 4), NAN)}), "table"),
    "random_embedding NaN gamma": (lambda: transplant.random_embedding(V, 4, NAN, 0), "gamma"),
    "random_embedding float seed": (lambda: transplant.random_embedding(V, 4, 1.0, 0.5), "seed"),
    "rescale infinite norm": (lambda: transplant.rescale(E, INF), "norm"),
    "signature_embedding float width": (lambda: transplant.signature_embedding(TASK, 2.5), "d"),
    # composition
    "accuracy NaN logits": (lambda: composition.accuracy(torch.full((1, COMPOSE.population.n, COMPOSE.n_labels), NAN), COMPOSE.population), "logits"),
    "line_up float tokens": (lambda: composition.line_up(E, [0.5, 1.5, 2.5], [1.0, 2.0, 3.0]), "tokens"),
    "line_up NaN values": (lambda: composition.line_up(E, [0, 1, 2], [1.0, NAN, 3.0]), "values"),
}


@pytest.mark.parametrize("call, named", CASES.values(), ids=CASES.keys())
def test_bad_input_is_a_clear_value_error(call, named):
    with pytest.raises(ValueError) as caught:
        call()
    assert named in str(caught.value), f"the message should name {named!r}: {caught.value}"


def test_a_diverged_model_is_frozen_and_reads_nan_after_it_diverged():
    traj = train(model(gamma=[1.0, 1.0], seed=[0, 1]), DATA, 30, lr=[1.0, 1e6], progress=False,
                 on_divergence="record")
    stable, blown = traj.diverged_at.tolist()
    assert stable == -1 and 0 <= blown < 30
    after = traj.steps > blown
    scores = align.align_trajectory(traj, [S], "cka", relative_to_init=True)[S.name]
    assert bool(torch.isfinite(scores[0, 1:]).all()) and bool(torch.isfinite(traj.loss[0]).all())
    assert bool(scores[1, after].isnan().all()) and bool(traj.loss[1, after].isnan().all())
    assert bool(torch.isfinite(traj.embeddings[1]).all())  # frozen before its numbers overflowed
    assert bool((traj.embeddings[1, after] == traj.embeddings[1, -1]).all())  # and it stays frozen

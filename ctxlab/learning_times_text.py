"""Token-level learning times on text: lesson 15's measures on the small GPT of lesson 09.

On text there is no exact population, so the contextualised tokens are the characters of fixed
held-out windows, and a token's order comes from the n-gram models of the training text:

* :func:`window_loss_probe` -- a ``train_lm(probes=...)`` function recording every token's loss;
* :func:`ngram_token_losses` -- the loss each n-gram model gives each token, whose smallest entry
  names the token's order;
* :func:`text_learning_time_experiment` -- the run: TinyGPTs, the probe at log-spaced steps,
  :func:`ctxlab.learning_times.fit_sigmoids` and the reconstruction of the mean loss.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from ctxlab.learning_times import (
    Reconstruction,
    SigmoidFit,
    fit_sigmoids,
    log_spaced_steps,
    reconstruction,
)
from ctxlab.validate import integer, token_ids


def window_loss_probe(windows: Tensor, first: int = 0) -> Callable:
    """A probe for :func:`ctxlab.lm.train_lm`: the loss of every contextualised token of fixed
    windows [N, T + 1] (inputs and their next tokens), at positions ``first`` .. T-1: [K, N, T - first].

    ``first`` leaves out the positions where a yardstick lacks its full context (n - 2 for an n-gram).
    """
    windows = token_ids(windows, "windows")
    if windows.ndim != 2 or windows.shape[1] < 2:
        raise ValueError(f"windows must be [N, T + 1] token ids with T >= 1, got shape {tuple(windows.shape)}")
    if not 0 <= integer(first, "first") < windows.shape[1] - 1:
        raise ValueError(f"first must lie in [0, {windows.shape[1] - 1}) for windows of {windows.shape[1] - 1} inputs")

    def token_loss(model) -> Tensor:
        x = windows.to(model.embedding.device)
        logp = torch.log_softmax(model(x[:, :-1])[:, :, first:], dim=-1)
        targets = x[:, first + 1:].expand(logp.shape[0], -1, -1)
        return -logp.gather(-1, targets[..., None]).squeeze(-1)

    return token_loss


def ngram_token_losses(predictors: Sequence, windows: Tensor, first: int) -> Tensor:
    """The loss each n-gram model (:class:`ctxlab.lm.NGramPredictor`, in the order given) gives every
    token of :func:`window_loss_probe`'s windows, positions ``first`` .. T-1: [n_models, N, T - first]."""
    windows = token_ids(windows, "windows")
    if windows.ndim != 2:
        raise ValueError(f"windows must be [N, T + 1] token ids, got shape {tuple(windows.shape)}")
    x, targets = windows[:, :-1], windows[:, first + 1:]
    rows = []
    for predictor in predictors:
        if first < predictor.n - 2:
            raise ValueError(f"a {predictor.n}-gram needs first >= {predictor.n - 2} (its full context), got {first}")
        probs = predictor.predict(x)[:, first - (predictor.n - 2):]  # positions first .. T-1
        rows.append(-probs.gather(-1, targets[..., None].to(probs.device)).squeeze(-1).double().log().cpu())
    return torch.stack(rows)


@dataclass(frozen=True)
class TextLearningTimes:
    """:func:`text_learning_time_experiment`: every contextualised token's held-out loss [K, M, T],
    its fit, its order [M], the n-gram losses [3, M] and the mean-loss reconstruction; entropies as in
    lesson 09. A token's order is the number of context tokens of the n-gram model that gives it the
    lowest loss (0 unigram, 1 bigram, 2 trigram), as an order on the synthetic task counts context tokens."""

    steps: Tensor
    curves: Tensor
    fit: SigmoidFit
    orders: Tensor
    ngram_losses: Tensor
    rec: Reconstruction
    entropies: dict[str, float]
    seeds: list[int]
    seconds: float

    def to_json(self) -> dict:
        return {"seeds": self.seeds, "entropies": self.entropies, "orders": self.orders.tolist(),
                "tau": self.fit.tau.tolist(), "r2": self.fit.r2.tolist(), "r2_curve": self.rec.r2_curve.tolist(),
                "r2_slope": self.rec.r2_slope.tolist(), "seconds": round(self.seconds, 2)}


def text_learning_time_experiment(seeds: Sequence[int] = (0, 1, 2), steps: int = 400, context: int = 16, d: int = 32,
                                  batch_size: int = 16, lr: float = 1e-2, windows: int = 32, records: int = 40,
                                  device=None, progress: bool | None = None,
                                  source: str = "shakespeare") -> TextLearningTimes:
    """Lesson 15 on text: small GPTs (lesson 09's TinyGPT, one block, Adam) on the shipped Shakespeare
    (or the UTF-8 file ``source`` names),
    characters; the loss of every token of ``windows`` fixed held-out windows recorded at log-spaced
    steps, one sigmoid fitted per curve, each token ordered by the n-gram model that predicts it best
    (:class:`TextLearningTimes`)."""
    from ctxlab.experiments.gpt import text_data
    from ctxlab.lm import TinyGPT, random_windows, train_lm

    seeds = [integer(s, "seeds") for s in seeds]
    if not seeds:
        raise ValueError("seeds must name at least one seed")
    integer(windows, "windows", minimum=1)
    data = text_data(source, "char")
    first = max(p.n for p in data.yardsticks.values()) - 2  # every yardstick has its full context from here
    probe_windows = random_windows(data.held_out, windows, context, torch.Generator().manual_seed(12345))
    model = TinyGPT(data.vocab_size, context, d=d, n_layers=1, n_heads=2, gamma=[1.0] * len(seeds), seed=seeds)
    start = time.perf_counter()
    run = train_lm(model, data.train, steps, eval_tokens=data.held_out, batch_size=batch_size, optimizer="adam", lr=lr,
                   record_steps=log_spaced_steps(steps, records), probes={"token_loss": window_loss_probe(probe_windows, first)},
                   device=device, progress=progress)
    curves = run.extras["token_loss"].flatten(2).transpose(1, 2).double()  # [K, M, T]
    fit = fit_sigmoids(run.steps, curves)
    ngram = ngram_token_losses(list(data.yardsticks.values()), probe_windows, first).flatten(1)  # [3, M]
    rec = reconstruction(run.steps, curves, fit, torch.ones(curves.shape[1]))
    return TextLearningTimes(run.steps, curves, fit, ngram.argmin(0), ngram, rec, data.entropies, seeds,
                             time.perf_counter() - start)

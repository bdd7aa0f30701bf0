"""Check for lesson 09's "putting them together": a tiny GPT trained while its KL to the bigram predictor is
recorded, read on what the recording does (its steps, its first and last values against the model itself,
and the fall towards the bigram model), since no two ways of drawing the batches train the same weights."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

import torch
from torch import Tensor

from ctxlab.checks.core import as_tensor
from ctxlab.checks.lesson09 import bigram_table, kl_to_bigram, shakespeare_chars

KL_TOL = 1e-6  # nats, on a recorded KL against the same model's KL computed here
FALLS = 0.5  # every model's lowest recorded KL is below this share of its first one (0.1-0.2 in the runs)


@dataclass(frozen=True)
class TinyRun:
    """A tiny GPT ensemble and what the learner's function is called with."""

    label: str
    gammas: tuple[float, ...]
    context: int
    steps: int
    every: int
    seed: int
    hidden: bool


@cache
def _text() -> tuple[Tensor, int, Tensor]:
    tokens, V = shakespeare_chars(20000)
    return tokens, V, bigram_table(tokens, V, 0.1)


def _model(run: TinyRun, V: int):
    from ctxlab.lm import TinyGPT

    return TinyGPT(V, run.context, d=16, n_layers=1, n_heads=1, gamma=list(run.gammas), seed=list(range(len(run.gammas))))


def _runs() -> list[TinyRun]:
    return [TinyRun("one GPT at γ = 1, context 8, 200 steps recorded every 20", (1.0,), 8, 200, 20, 0, False),
            TinyRun("two GPTs (γ 1 and 1.5), context 6, 150 steps recorded every 40 (the last step is no multiple)",
                    (1.0, 1.5), 6, 150, 40, 1, True)]


def kls_of(model, table: Tensor, x_eval: Tensor) -> Tensor:
    """Each model's KL to the bigram predictor on the windows x_eval: [K]."""
    with torch.no_grad():
        logits = model(x_eval)
    return torch.tensor([kl_to_bigram(logits[k], table, x_eval) for k in range(logits.shape[0])], dtype=torch.float64)


def _problem(run: TinyRun, answer, before: Tensor, after: Tensor, trained: bool) -> str | None:
    pair = tuple(answer) if isinstance(answer, (tuple, list)) else ()
    steps, kl = (as_tensor(x) for x in pair) if len(pair) == 2 else (None, None)
    grid = sorted(set(range(0, run.steps + 1, run.every)) | {run.steps})
    K = len(run.gammas)
    if steps is None or kl is None:
        return f"expected a pair (steps [T], kl [K, T]), got {type(answer).__name__}"
    if steps.tolist() != grid:
        return (f"recorded at steps {steps.tolist()[:6]}...: record before the first update (step 0), after every "
                f"{run.every}-th update and after the last ({grid[:4]}..., {grid[-1]})")
    if tuple(kl.shape) != (K, len(grid)):
        return f"kl has shape {tuple(kl.shape)}: one row per model of the ensemble, one column per recorded step ({K}, {len(grid)})"
    if not trained:
        return "the model you were given did not change: train it in place (its own parameters, updated by the optimizer)"
    if float((kl[:, 0].double() - before).abs().max()) > KL_TOL:
        return (f"the KL at step 0 is {kl[:, 0].tolist()}, the untrained model's is {before.tolist()}: record before "
                "the first update, on the windows x_eval")
    if float((kl[:, -1].double() - after).abs().max()) > KL_TOL:
        return (f"the last recorded KL is {kl[:, -1].tolist()}, the trained model's is {after.tolist()}: record after "
                "the last update, on the windows x_eval, with the model's own logits")
    fell = kl.double().amin(-1) / kl[:, 0].double()
    if bool((fell > FALLS).any()):
        return (f"the lowest KL is {fell.tolist()} of the first: with Adam at lr 1e-2 it falls below {FALLS:g} of it in "
                "these runs (next-token loss of every position, every model's loss summed)")
    return None


def check_09_kl_over_training(fn: Callable[..., tuple]) -> None:
    """fn(model, tokens, table, x_eval, steps, every, seed) -> (steps [T], kl [K, T]): the ensemble trained in
    place by Adam (lr 1e-2) on 32 random windows a step, its KL to the bigram table on x_eval recorded at step
    0, after every every-th update and after the last."""
    name = "check_09_kl_over_training"
    from ctxlab.lm import random_windows

    tokens, V, table = _text()
    for run in _runs():
        where = f"{name}, {'hidden' if run.hidden else 'visible'} case '{run.label}'"
        model = _model(run, V)
        start = copy.deepcopy(model)
        x_eval = random_windows(tokens, 32, run.context, torch.Generator().manual_seed(100 + run.seed))[:, :-1]
        before = kls_of(start, table, x_eval)
        try:
            answer = fn(model, tokens, table, x_eval, run.steps, run.every, run.seed)
        except NotImplementedError:
            raise AssertionError(f"{name}: not done yet: replace the `raise NotImplementedError` with your code") from None
        except Exception as err:
            raise AssertionError(f"{where}: your function raised {type(err).__name__}: {err}") from err
        trained = any(not torch.equal(p, q) for p, q in zip(model.parameters(), start.parameters()))
        problem = _problem(run, answer, before, kls_of(model, table, x_eval), trained)
        if problem:
            raise AssertionError(f"{where}: {problem}")
    print(f"PASS {name}")

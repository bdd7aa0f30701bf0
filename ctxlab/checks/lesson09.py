"""Checks for the exercises of lesson 09 (a small GPT on real text).

The cases are short character streams of the shipped Shakespeare text and synthetic streams and
curves with known answers, so each check runs in well under a second.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

import torch
from torch import Tensor

from ctxlab.checks.core import Case, Diagnosis, all_close, as_tensor, number_close, run_check, tensor_close


@cache
def shakespeare_chars(n: int) -> tuple[Tensor, int]:
    from ctxlab.corpus import CharTokenizer, load_text

    text = load_text("shakespeare", max_chars=n).text
    tok = CharTokenizer(text)
    return tok.encode(text), tok.vocab_size


def _random_stream(seed: int, n: int, vocab: int) -> Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, vocab, (n,), generator=g)


def token_streams() -> list[tuple[str, Tensor, int, bool]]:
    """(label, tokens, vocabulary size, hidden); one vocabulary has a token that never occurs."""
    chars, V = shakespeare_chars(4000)
    return [
        ("first 4000 Shakespeare characters", chars, V, False),
        ("random stream, V=5, 300 tokens", _random_stream(0, 300, 5), 5, True),
        ("random stream over 6 ids, V=8 (ids 6, 7 never occur)", _random_stream(1, 200, 6), 8, True),
        ("a repeating pattern 0 1 2 0 1 2 ...", torch.arange(60) % 3, 3, True),
    ]


# --- exercise 1: the add-alpha bigram table ---------------------------------------------------------


def bigram_counts(tokens: Tensor, V: int) -> Tensor:
    """count[a, b] = how often b follows a: [V, V] float64."""
    ones = torch.ones(len(tokens) - 1, dtype=torch.float64)
    return torch.zeros(V, V, dtype=torch.float64).index_put_((tokens[:-1], tokens[1:]), ones, accumulate=True)


def wrapped(tokens: Tensor) -> Tensor:
    """The stream with its first token appended: counting it adds the pair (last, first), a wrap-around."""
    return torch.cat([tokens, tokens[:1]])


WRAP_HINT = ("you counted a pair (last token, first token) that is not in the stream (torch.roll wraps around): "
             "count only the len(tokens) - 1 pairs (tokens[t], tokens[t + 1])")


def bigram_table(tokens: Tensor, vocab_size: int, alpha: float) -> Tensor:
    """Reference: P(next = b | current = a) = (count(a, b) + alpha) / (count(a, .) + V alpha): [V, V]."""
    counts = bigram_counts(tokens, vocab_size) + alpha
    return counts / counts.sum(1, keepdim=True)


def check_09_bigram_table(fn: Callable[[Tensor, int, float], Tensor]) -> None:
    """fn(tokens, V, alpha) -> [V, V]: row a is the add-alpha P(next token | current token = a)."""
    cases = []
    for label, tokens, V, hidden in token_streams():
        for alpha in (0.1, 1.0):
            cases.append(Case(f"{label}, alpha {alpha}", (tokens, V, alpha), bigram_table(tokens, V, alpha),
                              hidden or alpha != 0.1))

    def unsmoothed(c: Case) -> Tensor:
        counts = bigram_counts(c.args[0], c.args[1])
        return counts / counts.sum(1, keepdim=True).clamp_min(1e-300)

    def column_normalised(c: Case) -> Tensor:
        counts = bigram_counts(c.args[0], c.args[1]) + c.args[2]
        return counts / counts.sum(0, keepdim=True)

    diagnoses = [
        Diagnosis(lambda g, e, c: all_close(g, bigram_table(wrapped(c.args[0]), c.args[1], c.args[2]), 1e-5),
                  WRAP_HINT),
        Diagnosis(lambda g, e, c: all_close(as_tensor(g).T, e), "looks transposed: row a is the CURRENT token, column b the NEXT one"),
        Diagnosis(lambda g, e, c: all_close(g, column_normalised(c)), "normalised over the wrong axis: each ROW (one current token) must sum to 1"),
        Diagnosis(lambda g, e, c: all_close(g, unsmoothed(c)), "no smoothing: add alpha to every count (all V*V of them) before normalising"),
        Diagnosis(lambda g, e, c: all_close(g, bigram_table(c.args[0], c.args[1], 1.0)) and c.args[2] != 1.0, "you used alpha = 1 whatever alpha was passed"),
    ]  # fmt: skip
    run_check("check_09_bigram_table", fn, cases, tensor_close(atol=1e-5), diagnoses)


# --- exercise 2: KL from a model to the bigram predictor ----------------------------------------------


def kl_to_bigram(logits: Tensor, table: Tensor, x: Tensor) -> float:
    """Reference: mean over positions of KL(softmax(logits[n, t]) || table[x[n, t]])."""
    logp = torch.log_softmax(logits.double(), dim=-1)
    logq = table.double()[x].clamp_min(1e-300).log()
    return float((logp.exp() * (logp - logq)).sum(-1).mean())


@cache
def _kl_cases() -> list[tuple[str, tuple[Tensor, Tensor, Tensor], bool]]:
    out = []
    for seed, (N, T, V, scale, hidden) in enumerate([(4, 6, 5, 2.0, False), (8, 3, 7, 0.5, True), (2, 10, 4, 4.0, True),
                                                     (16, 8, 12, 1.0, True)]):
        g = torch.Generator().manual_seed(10 + seed)
        logits = scale * torch.randn(N, T, V, generator=g, dtype=torch.float64)
        table = torch.softmax(torch.randn(V, V, generator=g, dtype=torch.float64), dim=-1)
        x = torch.randint(0, V, (N, T), generator=g)
        out.append((f"random logits, N={N}, T={T}, V={V}", (logits, table, x), hidden))
    return out


def check_09_kl_to_bigram(fn: Callable[[Tensor, Tensor, Tensor], float]) -> None:
    """fn(logits [N, T, V], table [V, V], x [N, T]) -> mean KL(model || bigram) over all N*T positions."""
    cases = [Case(label, args, kl_to_bigram(*args), hidden) for label, args, hidden in _kl_cases()]

    def is_(value: Callable[[Case], float]) -> Callable:
        return lambda g, e, c: abs(float(g) - value(c)) < 1e-4 and abs(float(g) - e) > 1e-4

    def reversed_kl(c: Case) -> float:
        logits, table, x = c.args
        logp, q = torch.log_softmax(logits, -1), table[x]
        return float((q * (q.log() - logp)).sum(-1).mean())

    def cross_entropy(c: Case) -> float:
        logits, table, x = c.args
        p = torch.softmax(logits, -1)
        return float(-(p * table[x].log()).sum(-1).mean())

    def logits_as_logprobs(c: Case) -> float:
        logits, table, x = c.args
        return float((logits.exp() * (logits - table[x].log())).sum(-1).mean())

    diagnoses = [
        Diagnosis(is_(reversed_kl), "that is KL(bigram || model): the yardstick KL weights by the MODEL's probabilities, sum p (log p - log q)"),
        Diagnosis(is_(cross_entropy), "that is the cross-entropy -sum p log q: subtract the model's own entropy (add sum p log p)"),
        Diagnosis(is_(lambda c: c.expected * c.args[0].shape[0] * c.args[0].shape[1]), "you summed over positions: take the mean over all N*T positions"),
        Diagnosis(is_(lambda c: c.expected * c.args[0].shape[1]),
                  "you summed over the T positions of each sequence and averaged over sequences: take the mean over all N*T positions"),
        Diagnosis(is_(lambda c: kl_to_bigram(c.args[0], c.args[1].T / c.args[1].T.sum(1, keepdim=True), c.args[2])),
                  "the bigram prediction after token a is ROW a of the table, table[x], not its column"),
        Diagnosis(is_(logits_as_logprobs), "logits are not log-probabilities: apply log_softmax over the last axis first"),
        Diagnosis(is_(lambda c: c.expected / 0.6931471805599453), "that is in bits: use natural logs"),
    ]  # fmt: skip
    run_check("check_09_kl_to_bigram", fn, cases, number_close(atol=1e-5), diagnoses)


# --- exercise 3: the step where a model is closest to an n-gram model -------------------------------------


def closest_steps(steps: Tensor, kl: Tensor) -> Tensor:
    """Reference: for each model (row of kl [K, T]) the recorded step where its KL is smallest: [K]."""
    return steps[kl.argmin(-1)]


@cache
def _curves() -> list[tuple[str, Tensor, Tensor, bool]]:
    irregular = torch.cat([torch.arange(0, 200, 10), torch.arange(200, 1001, 50)])
    t = irregular.double()

    def dip(at: float, w: float) -> Tensor:
        return 1.0 + 0.8 * (1 - torch.exp(-(((t - at) / w) ** 2))) + 0.001 * t / 1000

    even = torch.arange(0, 1501, 25)
    te = even.double()
    return [
        ("two models, recorded every 25 steps", even, torch.stack([(te - 500) ** 2 / 1e5 + 0.3, (te - 900) ** 2 / 1e5 + 0.2]), False),
        ("three models, irregular recording steps", irregular, torch.stack([dip(150, 40), dip(400, 100), dip(800, 200)]), True),
        ("one model, still falling at the end", even, (2.0 - te / 2000)[None], True),
        ("four models, minima at the first step and in the middle", even,
         torch.stack([te / 1000 + 0.1, (te - 750).abs() / 1000, (te - 25).abs() / 500, (te - 1000) ** 2 / 1e6]), True),
        ("two models whose smallest KL is reached at several recorded steps (a flat bottom)", irregular,
         torch.stack([(t - 300).clamp_min(0) / 1000 + (200 - t).clamp_min(0) / 500 + 0.25,
                      torch.where(t < 600, 1.0 - t / 1000, torch.full_like(t, 0.4))]), True),
    ]


def check_09_closest_step(fn: Callable[[Tensor, Tensor], Tensor]) -> None:
    """fn(steps [T], kl [K, T]) -> [K] integer tensor: the recorded step of each model's smallest KL."""
    cases = [Case(label, (steps, kl), closest_steps(steps, kl), hidden) for label, steps, kl, hidden in _curves()]
    def last_of_ties(c: Case) -> Tensor:
        steps, kl = c.args
        at_min = kl == kl.min(-1, keepdim=True).values
        return steps[at_min.shape[-1] - 1 - at_min.flip(-1).int().argmax(-1)]

    diagnoses = [
        Diagnosis(lambda g, e, c: all_close(g, last_of_ties(c)) and not all_close(g, e),
                  "the smallest KL is reached at several recorded steps: return the EARLIEST of them (argmin does)"),
        Diagnosis(lambda g, e, c: all_close(g, c.args[1].argmin(-1)) and not all_close(g, e), "those are indices into the recording: return steps[index], the training step"),
        Diagnosis(lambda g, e, c: all_close(g, closest_steps(c.args[0], -c.args[1])), "that is where the KL is LARGEST: the model is closest where the divergence is smallest"),
        Diagnosis(lambda g, e, c: all_close(g, c.args[1].min(-1).values), "those are the smallest KL values: return the step where each occurs"),
        Diagnosis(lambda g, e, c: as_tensor(g).numel() == 1 and e.numel() > 1, "return one step per model (a [K] tensor), not one for the whole ensemble"),
    ]  # fmt: skip
    run_check("check_09_closest_step", fn, cases, tensor_close(atol=0.5), diagnoses)

"""Lesson 09: reference answers and typical mistakes for each check."""

from __future__ import annotations

import math

import torch

from contracts import Contract
from ctxlab import checks
from ctxlab.checks.lesson09 import bigram_table, closest_steps, kl_to_bigram


def counts(tokens, V):
    ones = torch.ones(len(tokens) - 1, dtype=torch.float64)
    return torch.zeros(V, V, dtype=torch.float64).index_put_((tokens[:-1], tokens[1:]), ones, accumulate=True)


def reversed_kl(logits, table, x):
    logp, q = torch.log_softmax(logits.double(), -1), table.double()[x]
    return float((q * (q.log() - logp)).sum(-1).mean())


def cross_entropy(logits, table, x):
    p = torch.softmax(logits.double(), -1)
    return float(-(p * table.double()[x].log()).sum(-1).mean())


CONTRACT = [
    Contract(
        checks.check_09_bigram_table,
        reference=bigram_table,
        wrong={
            "transposed": lambda t, V, a: bigram_table(t, V, a).T,
            "no smoothing": lambda t, V, a: counts(t, V) / counts(t, V).sum(1, keepdim=True).clamp_min(1e-300),
            "normalised over columns": lambda t, V, a: (counts(t, V) + a) / (counts(t, V) + a).sum(0, keepdim=True),
            "alpha fixed at 1": lambda t, V, a: bigram_table(t, V, 1.0),
            "smoothing added after normalising": lambda t, V, a: bigram_table(t, V, 1e-9) + a,
            "wrap-around pair (torch.roll)": lambda t, V, a: bigram_table(torch.cat([t, t[:1]]), V, a),
        },
    ),
    Contract(
        checks.check_09_kl_to_bigram,
        reference=kl_to_bigram,
        wrong={
            "reversed KL": reversed_kl,
            "cross-entropy": cross_entropy,
            "summed over positions": lambda lg, tb, x: kl_to_bigram(lg, tb, x) * x.numel(),
            "logits used as log-probabilities": lambda lg, tb, x: float((lg.exp() * (lg - tb[x].log())).sum(-1).mean()),
            "in bits": lambda lg, tb, x: kl_to_bigram(lg, tb, x) / math.log(2),
            "summed over positions, averaged over sequences": lambda lg, tb, x: kl_to_bigram(lg, tb, x) * x.shape[1],
            "table indexed by column (P(current | next))": lambda lg, tb, x: kl_to_bigram(lg, tb.T / tb.T.sum(1, keepdim=True), x),
        },
    ),
    Contract(
        checks.check_09_closest_step,
        reference=closest_steps,
        wrong={
            "index instead of step": lambda s, kl: kl.argmin(-1),
            "largest KL": lambda s, kl: s[kl.argmax(-1)],
            "the smallest value": lambda s, kl: kl.min(-1).values,
            "one step for all models": lambda s, kl: s[kl.min(0).values.argmin()],
            "last step": lambda s, kl: s[-1].expand(kl.shape[0]),
            "latest of tied minima": lambda s, kl: s[kl.shape[-1] - 1 - kl.flip(-1).argmin(-1)],
        },
    ),
]

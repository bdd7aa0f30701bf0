"""Lesson 10: reference answers and typical mistakes for each check."""

from __future__ import annotations

import torch

from contracts import Contract
from ctxlab import checks
from ctxlab.align import cka
from ctxlab.checks.lesson10 import bin_cka, signature_from_counts


def pair_counts(tokens, V):
    ones = torch.ones(len(tokens) - 1, dtype=torch.float64)
    return torch.zeros(V, V, dtype=torch.float64).index_put_((tokens[:-1], tokens[1:]), ones, accumulate=True)


def rows(m):
    return m / m.sum(1, keepdim=True).clamp_min(1e-300)


def uncentred(E, S, f, lo, hi):
    idx = f.argsort(descending=True)[lo:hi]
    e, s = E[idx], S[idx]
    ge, gs = e @ e.T, s @ s.T
    return float((ge * gs).sum() / (ge.norm() * gs.norm()))


CONTRACT = [
    Contract(
        checks.check_10_bigram_signature,
        reference=signature_from_counts,
        wrong={
            "halves swapped": lambda t, V: torch.cat([rows(pair_counts(t, V).T), rows(pair_counts(t, V))], 1),
            "P(s | previous) instead of P(previous | s)": lambda t, V: torch.cat([rows(pair_counts(t, V)), rows(pair_counts(t, V)).T], 1),
            "joint probabilities": lambda t, V: torch.cat([pair_counts(t, V), pair_counts(t, V).T], 1) / (len(t) - 1),
            "next-token half only": lambda t, V: rows(pair_counts(t, V)),
            "wrap-around pair (torch.roll)": lambda t, V: torch.cat(
                [rows(pair_counts(torch.cat([t, t[:1]]), V)), rows(pair_counts(torch.cat([t, t[:1]]), V).T)], 1),
            "NaN rows for unseen tokens": lambda t, V: torch.cat(
                [pair_counts(t, V) / pair_counts(t, V).sum(1, keepdim=True), pair_counts(t, V).T / pair_counts(t, V).T.sum(1, keepdim=True)], 1),
            "add-one smoothing": lambda t, V: torch.cat([rows(pair_counts(t, V) + 1), rows(pair_counts(t, V).T + 1)], 1),
        },
    ),
    Contract(
        checks.check_10_bin_alignment,
        reference=bin_cka,
        wrong={
            "token ids instead of ranks": lambda E, S, f, lo, hi: float(cka(E[lo:hi], S[lo:hi])),
            "rarest first": lambda E, S, f, lo, hi: bin_cka(E, S, -f, lo, hi),
            "uncentred CKA": uncentred,
            "all tokens": lambda E, S, f, lo, hi: float(cka(E, S)),
            "off by one (ranks lo..hi)": lambda E, S, f, lo, hi: bin_cka(E, S, f, lo, hi + 1),
            "ties: higher id first (ascending sort reversed)": lambda E, S, f, lo, hi: float(
                cka(E[f.argsort(stable=True).flip(0)[lo:hi]], S[f.argsort(stable=True).flip(0)[lo:hi]])),
        },
    ),
]

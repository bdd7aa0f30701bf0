"""Lesson 10: reference answers and typical mistakes for each check."""

from __future__ import annotations

import torch

from contracts import Contract
from ctxlab import checks
from ctxlab.align import cka, rsa
from ctxlab.checks.lesson10 import bin_cka, signature_from_counts
from ctxlab.checks.lesson10_build import frequency_report_reference
from ctxlab.checks.lesson10_reading import read_report_reference


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


# --- exercise 3: the frequency report, as a learner writes it with one mistake switched on --------------------


def learner_report(tokens, V, E, bin_size, n_shuffles, seed, *, rank="falling", keep_partial=False, reseed=True,
                   permute="S", std_unbiased=True, excess_over="mean", second=None, score=cka, restrict=True):
    counts = torch.bincount(tokens, minlength=V).double()
    order = {"falling": counts.argsort(descending=True, stable=True), "rising": counts.argsort(stable=True),
             "ids": torch.arange(V), "ascending reversed": counts.argsort(stable=True).flip(0)}[rank]
    S, E = signature_from_counts(tokens, V), E.double()
    n = len(tokens)
    first_half, second_half = (tokens[0::2], tokens[1::2]) if second == "alternate" else (tokens[:n // 2], tokens[n // 2:])
    S_a = signature_from_counts(first_half, V)
    S_b = S if second == "whole" else signature_from_counts(second_half, V)
    out = {k: [] for k in ("cka", "baseline", "spread", "excess", "reliability")}
    g = torch.Generator().manual_seed(seed)
    starts = range(0, V, bin_size) if keep_partial else range(0, V - bin_size + 1, bin_size)
    for lo in starts:
        idx = order[lo:lo + bin_size]
        if len(idx) < 3:
            continue
        if reseed:
            g = torch.Generator().manual_seed(seed)
        e, s = (E[idx], S[idx]) if restrict else (E, S)
        scores = []
        for _ in range(n_shuffles):
            if permute == "vocabulary":
                scores.append(float(score(e, S[torch.randperm(V, generator=g)[:len(idx)]])))
            else:
                p = torch.randperm(len(e), generator=g)
                scores.append(float(score(e[p], s) if permute == "E" else score(e, s[p])))
        shuffled = torch.tensor(scores, dtype=torch.float64)
        real = float(score(e, s))
        out["cka"].append(real)
        out["baseline"].append(float(shuffled.mean()))
        out["spread"].append(float(shuffled.std(unbiased=std_unbiased)))
        out["excess"].append(real - float(shuffled.mean() if excess_over == "mean" else shuffled.max()))
        out["reliability"].append(float(score(S_a[idx], S_b[idx])))
    return {k: torch.tensor(v, dtype=torch.float64) for k, v in out.items()}


def report_seeded_per_bin_number(tokens, V, E, bin_size, n_shuffles, seed):
    """Bin i's shuffles from a generator seeded with seed + i."""
    pieces = [learner_report(tokens, V, E, bin_size, n_shuffles, seed + i) for i in range(V // bin_size)]
    return {k: torch.stack([p[k][i] for i, p in enumerate(pieces)]) for k in pieces[0]}


def report_with(**mistake):
    return lambda *args: learner_report(*args, **mistake)


CONTRACT += [
    Contract(
        checks.check_10_frequency_report,
        reference=frequency_report_reference,
        wrong={
            "rarest first": report_with(rank="rising"),
            "bins of token ids": report_with(rank="ids"),
            "ties: higher id first": report_with(rank="ascending reversed"),
            "partial last bin kept": report_with(keep_partial=True),
            "one generator for every bin": report_with(reseed=False),
            "E's rows shuffled": report_with(permute="E"),
            "shuffled rows from the whole vocabulary": report_with(permute="vocabulary"),
            "population std": report_with(std_unbiased=False),
            "excess over the highest shuffle": report_with(excess_over="top"),
            "reliability against the whole stream": report_with(second="whole"),
            "halves as every other token": report_with(second="alternate"),
            "RSA for CKA": report_with(score=rsa),
            "scored over all tokens": report_with(restrict=False),
            "only the real CKA per bin": lambda *a: {"cka": learner_report(*a)["cka"]},
            "bin i seeded with seed + i": report_seeded_per_bin_number,
        },
        hints={
            "rarest first": "MOST frequent", "bins of token ids": "not of token ids", "ties: higher id first": "lower id first",
            "partial last bin kept": "not full", "one generator for every bin": "seeded afresh",
            "E's rows shuffled": "inverse permutation", "shuffled rows from the whole vocabulary": "inside the bin",
            "population std": "n - 1", "excess over the highest shuffle": "shuffled MEAN",
            "reliability against the whole stream": "first half", "halves as every other token": "cut in the middle",
            "RSA for CKA": "not RSA", "scored over all tokens": "restrict", "only the real CKA per bin": "exactly the keys",
            "bin i seeded with seed + i": "seed plus the bin's number",
        },
    ),
]


# --- putting them together: the reading of a report, as a learner writes it with one mistake ------------------


def learner_verdict(report, z, *, in_spreads=True, tie_beyond=False, bins="ends", tie_flat=True, order="cfs",
                    drops="ratio", tie_signature=True, column="excess", flat_in_spreads=False):
    ex, sp, rel = report[column].double(), report["spread"].double(), report["reliability"].double()
    first, last = (int(ex.argmax()), int(ex.argmin())) if bins == "extremes" else (0, -1)
    look = {"ends": [first, last], "every bin": range(len(ex)), "rarest only": [last], "extremes": [first, last]}[bins]
    scale = [z * float(sp[i]) if in_spreads else z for i in look]
    chance = any((ex[i] < s) if tie_beyond else (ex[i] <= s) for i, s in zip(look, scale))
    a, b = (ex[first] / sp[first], ex[last] / sp[last]) if flat_in_spreads else (ex[first], ex[last])
    flat = bool(b >= a) if tie_flat else bool(b > a)
    if drops == "ratio":
        r_rel, r_ex = float(rel[last] / rel[first]), float(ex[last] / ex[first])
        signature = r_rel <= r_ex if tie_signature else r_rel < r_ex
    else:
        signature = float(rel[first] - rel[last]) >= float(ex[first] - ex[last])
    answers = {"c": ("chance", chance), "f": ("flat", flat), "s": ("signature", signature)}
    for key in order:
        name, holds = answers[key]
        if holds:
            return name
    return "model"


def verdict_with(**mistake):
    return lambda report, z: learner_verdict(report, z, **mistake)


CONTRACT += [
    Contract(
        checks.check_10_read_report,
        reference=read_report_reference,
        wrong={
            "compared with z, not z spreads": verdict_with(in_spreads=False),
            "exactly z spreads counted as beyond chance": verdict_with(tie_beyond=True),
            "every bin must be beyond chance": verdict_with(bins="every bin"),
            "only the rarest bin tested for chance": verdict_with(bins="rarest only"),
            "equal excesses read as a fall": verdict_with(tie_flat=False),
            "signature asked before flat": verdict_with(order="csf"),
            "flat asked before chance": verdict_with(order="fcs"),
            "differences instead of fractions": verdict_with(drops="difference"),
            "a fraction tie read as the model's": verdict_with(tie_signature=False),
            "highest and lowest bins instead of the ends": verdict_with(bins="extremes"),
            "raw CKA instead of the excess": verdict_with(column="cka"),
            "flat judged in spreads": verdict_with(flat_in_spreads=True),
            "capitalised verdicts": lambda report, z: read_report_reference(report, z).capitalize(),
            "chance judged on the excess's size": lambda report, z: read_report_reference(
                {**report, "excess": report["excess"].abs(), "cka": report["baseline"] + report["excess"].abs()}, z),
        },
        hints={
            "compared with z, not z spreads": "ITS spread", "exactly z spreads counted as beyond chance": "MORE than z",
            "every bin must be beyond chance": "middle bin", "only the rarest bin tested for chance": "most frequent bin must",
            "equal excesses read as a fall": "has not fallen", "signature asked before flat": "ask in order",
            "flat asked before chance": "chance comes first", "differences instead of fractions": "FRACTIONS",
            "a fraction tie read as the model's": "exactly the excess's fraction",
            "highest and lowest bins instead of the ends": "not the highest", "raw CKA instead of the excess": "raw CKA",
            "capitalised verdicts": "one of the strings", "chance judged on the excess's size": "BELOW its shuffles",
        },
    ),
]

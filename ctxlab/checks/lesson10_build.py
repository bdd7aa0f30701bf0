"""The build-it check of lesson 10: a frequency report of an embedding against the text's signature.

The learner puts the set's first two exercises to work and adds what the lesson reads beside them: from a token
stream alone, the tokens ranked by frequency and cut into bins, each bin's CKA with the bigram signature, its
baseline and spread over row-shuffled signatures, the excess, and the split-half reliability of the signature
itself. The report is compared with the reference on streams the check makes (the shipped text, a stream whose
counts tie across bin edges, tokens that never occur, an odd length, a width above the bin size), and on the
set's noisy copy of the signature it must show what the lesson reads: every bin above its shuffles by more than
three spreads, the excess falling from the most frequent bin to the rarest, and the signature's own split-half
agreement falling with it. On an embedding unrelated to the text no bin may stand out by more than four spreads.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

import torch
from torch import Tensor

from ctxlab.align import cka, rsa
from ctxlab.checks.core import Case, Diagnosis, as_tensor_dict, run_check
from ctxlab.pretrained import alignment_by_bin, frequency_bins
from ctxlab.signatures import bigram_signature

KEYS = ("cka", "baseline", "spread", "excess", "reliability")
TOL = 1e-5  # absolute, on every number of the report
ABOVE, CHANCE = 3.0, 4.0  # spreads: the noisy copy's smallest excess must beat ABOVE; an unrelated one stays within CHANCE


def frequency_report_reference(tokens: Tensor, V: int, E: Tensor, bin_size: int, n_shuffles: int, seed: int) -> dict[str, Tensor]:
    """Per bin of ``bin_size`` frequency ranks (rank 0 the most frequent, ties in id order, a partial last bin
    dropped): CKA of E and the bigram signature, the mean and std of n shuffled CKAs, the excess, and the CKA
    between the signatures of the stream's two halves; each [n_bins] float64."""
    order = torch.bincount(tokens, minlength=V).argsort(descending=True, stable=True)
    bins = frequency_bins(V, bin_size)
    signature = bigram_signature(tokens, V).matrix.double()[order]
    half = len(tokens) // 2
    halves = [bigram_signature(part, V).matrix.double()[order] for part in (tokens[:half], tokens[half:])]
    by_bin = alignment_by_bin(E.double()[order], signature, bins, n_shuffles=n_shuffles, seed=seed)
    out = {"cka": [b.cka for b in by_bin], "baseline": [b.shuffled_cka for b in by_bin],
           "spread": [b.shuffled_spread for b in by_bin], "excess": [b.excess for b in by_bin],
           "reliability": [float(cka(halves[0][idx], halves[1][idx])) for idx in bins]}
    return {k: torch.tensor(v, dtype=torch.float64) for k, v in out.items()}


def report_variant(tokens: Tensor, V: int, E: Tensor, bin_size: int, n_shuffles: int, seed: int, *, order: str = "falling",
                   partial: bool = False, seeding: str = "per bin", shuffled: str = "S rows", spread: str = "n-1",
                   over: str = "mean", halves: str = "halves", score: str = "cka", within: bool = True) -> dict[str, Tensor]:
    """The report written out, with one ingredient changed where a keyword says so: what a typical mistake computes."""
    counts = torch.bincount(tokens, minlength=V).double()
    ranked = {"falling": lambda: counts.argsort(descending=True, stable=True), "rising": lambda: counts.argsort(stable=True),
              "ids": lambda: torch.arange(V), "reversed": lambda: counts.argsort(stable=True).flip(0)}[order]()
    bins = [ranked[lo:lo + bin_size] for lo in range(0, V - (0 if partial else bin_size - 1), bin_size)]
    bins = [b for b in bins if len(b) >= 3]
    fn = {"cka": cka, "rsa": rsa}[score]
    S, E = bigram_signature(tokens, V).matrix.double(), E.double()
    half = len(tokens) // 2
    parts = {"halves": (tokens[:half], tokens[half:]), "half and whole": (tokens[:half], tokens),
             "alternate": (tokens[0::2], tokens[1::2])}[halves]
    S_a, S_b = (bigram_signature(p, V).matrix.double() for p in parts)
    g = torch.Generator().manual_seed(seed)
    out: dict[str, list[float]] = {k: [] for k in KEYS}
    for i, idx in enumerate(bins):
        if seeding != "once":
            g = torch.Generator().manual_seed(seed + (i if seeding == "seed + bin" else 0))
        e, s = (E[idx], S[idx]) if within else (E, S)
        scores = []
        for _ in range(n_shuffles):
            if shuffled == "all tokens":  # rows drawn from the whole vocabulary
                scores.append(float(fn(e, S[torch.randperm(V, generator=g)[:len(idx)]])))
                continue
            p = torch.randperm(e.shape[0], generator=g)
            scores.append(float(fn(e[p], s) if shuffled == "E rows" else fn(e, s[p])))
        t = torch.tensor(scores, dtype=torch.float64)
        real = float(fn(e, s))
        out["cka"].append(real)
        out["baseline"].append(float(t.mean()))
        out["spread"].append(float(t.std(unbiased=spread == "n-1")))
        out["excess"].append(real - float(t.mean() if over == "mean" else t.max()))
        out["reliability"].append(float(fn(S_a[idx], S_b[idx])))
    return {k: torch.tensor(v, dtype=torch.float64) for k, v in out.items()}


def shakespeare_tokens(n: int) -> tuple[Tensor, int]:
    """The first n characters of the shipped Shakespeare, as character ids, and the vocabulary size."""
    from ctxlab.corpus import CharTokenizer, load_text

    text = load_text("shakespeare", max_chars=n).text
    tok = CharTokenizer(text)
    return tok.encode(text), tok.vocab_size


def noisy_copy(tokens: Tensor, V: int, d: int = 16, seed: int = 0) -> Tensor:
    """The set's synthetic embedding: the signature mapped into d dimensions, plus noise that grows with rarity."""
    S = bigram_signature(tokens, V).matrix.double()
    g = torch.Generator().manual_seed(seed)
    rank = torch.bincount(tokens, minlength=V).argsort(descending=True, stable=True).argsort().double()
    return S @ torch.randn(2 * V, d, generator=g, dtype=torch.float64) + (rank / V)[:, None] * torch.randn(V, d, generator=g, dtype=torch.float64)


def _randn(seed: int, *shape: int, dtype=torch.float64) -> Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


@cache
def _inputs() -> tuple[tuple[str, tuple, bool, str], ...]:
    """(label, (tokens, V, E, bin_size, n_shuffles, seed), hidden, what the report must show)."""
    text, V = shakespeare_tokens(20_000)
    short, V_short = shakespeare_tokens(3_001)  # odd length: the halves are 1500 and 1501 tokens
    ties = torch.tensor([0, 1, 2, 3, 4, 5] * 30 + [6, 7, 6, 7, 8, 8] * 5)  # counts 30 x6, 10 x3, 0 x3: ties across bin edges
    random = torch.randint(0, 12, (500,), generator=torch.Generator().manual_seed(4))
    return (
        ("20,000 Shakespeare characters, the set's noisy copy, bins of 20, 20 shuffles", (text, V, noisy_copy(text, V), 20, 20, 0), False, "copy"),
        ("the same text, an embedding drawn at random (no relation to the text), bins of 10",
         (text, V, _randn(1, V, 16), 10, 20, 0), True, "chance"),
        ("3,001 characters (odd length), float32 embedding d 8, bins of 7, 15 shuffles, seed 3",
         (short, V_short, _randn(2, V_short, 8, dtype=torch.float32), 7, 15, 3), True, ""),
        ("counts tied across bin edges, ids 9-11 never occur but fill the last bin (V 12), bins of 4",
         (ties, 12, _randn(3, 12, 5), 4, 12, 5), True, ""),
        ("a random stream over 12 ids, embedding wider than the bin (d 20), bins of 6, 30 shuffles, seed 11",
         (random, 12, _randn(5, 12, 20), 6, 30, 11), True, ""),
    )  # fmt: skip


def _as_report(got: Any, n_bins: int) -> dict[str, Tensor] | str:
    """The learner's report as float64 tensors [n_bins], or what is wrong with its form."""
    return as_tensor_dict(got, KEYS, (n_bins,), "a tensor with one number per full bin:")


def report_differs(got: Any, expected: dict[str, Tensor]) -> str | None:
    """None when the learner's report is the expected one within TOL, else what differs first."""
    report = _as_report(got, len(expected["cka"]))
    if isinstance(report, str):
        return report
    for key in KEYS:
        off = (report[key] - expected[key]).abs().nan_to_num(float("inf"))
        if bool((off > TOL).any()):
            i = int(off.argmax())
            return (f"report['{key}'], bin {i}: expected {float(expected[key][i]):.5f}, got {float(report[key][i]):.5f} "
                    f"(tolerance {TOL:g}); expected {[round(v, 4) for v in expected[key].tolist()]}")
    return None


def _shows(report: dict[str, Tensor], what: str) -> str | None:
    """What contradicts the lesson's reading on the check's own inputs; None when it holds with the margins."""
    in_spreads = report["excess"] / report["spread"]
    if what == "copy":
        if not bool((in_spreads > ABOVE).all()):
            return f"on the noisy copy every bin's excess should beat {ABOVE:g} spreads of its shuffles; got {in_spreads.tolist()}"
        if not (report["excess"][0] > report["excess"][-1] and report["reliability"][0] > report["reliability"][-1]):
            return "on the noisy copy the excess and the split-half reliability should both fall from the first bin to the last"
    if what == "chance" and not bool((in_spreads.abs() < CHANCE).all()):
        return f"an embedding unrelated to the text should stay within {CHANCE:g} spreads of its shuffles; got {in_spreads.tolist()}"
    return None


def _problem(got: Any, case_expected: tuple[dict[str, Tensor], str]) -> str | None:
    expected, what = case_expected
    return report_differs(got, expected) or _shows(_as_report(got, len(expected["cka"])), what)


def _computes(**change) -> Callable[[Any, Any, Case], bool]:
    """A diagnosis predicate: the learner's report is the one ``change`` gives, and that one is not the answer."""

    def matches(got: Any, expected: tuple[dict[str, Tensor], str], case: Case) -> bool:
        wrong = report_variant(*case.args, **change)
        return report_differs(wrong, expected[0]) is not None and report_differs(got, wrong) is None

    return matches


def check_10_frequency_report(fn: Callable[..., dict[str, Tensor]]) -> None:
    """fn(tokens, V, E, bin_size, n_shuffles, seed) -> {"cka", "baseline", "spread", "excess", "reliability"},
    each a tensor [n_bins]: the lesson's frequency analysis of E against the stream's bigram signature."""
    cases = [Case(label, args, (frequency_report_reference(*args), what), hidden) for label, args, hidden, what in _inputs()]
    diagnoses = [
        Diagnosis(_computes(order="rising"), "rank 0 is the MOST frequent token: sort the counts in falling order"),
        Diagnosis(_computes(order="ids"), "the bins are ranges of frequency RANKS, not of token ids: order the tokens by falling count first"),
        Diagnosis(_computes(order="reversed"), "tokens with equal counts keep id order, lower id first (a stable descending sort); reversing an ascending sort puts the higher id first"),
        Diagnosis(_computes(partial=True), "drop a last bin that is not full: every bin holds exactly bin_size ranks"),
        Diagnosis(_computes(seeding="once"), "each bin's shuffles start from a generator seeded afresh with `seed`, as permutation_baseline does: one generator for the whole report gives other permutations"),
        Diagnosis(_computes(seeding="seed + bin"), "every bin's generator is seeded with `seed` itself, not with seed plus the bin's number"),
        Diagnosis(_computes(shuffled="E rows"), "the copy's row i must be row p[i] of the bin's signature, s[p]: you used the inverse permutation, or shuffled the embedding's rows instead (either gives the same numbers, not the reference's)"),
        Diagnosis(_computes(shuffled="all tokens"), "shuffle inside the bin: permute the bin's own signature rows, not rows drawn from the whole vocabulary"),
        Diagnosis(_computes(spread="n"), "the spread is torch's default standard deviation (dividing by n - 1), not the population one"),
        Diagnosis(_computes(over="top"), "the excess is over the shuffled MEAN (the baseline), not over the highest shuffle"),
        Diagnosis(_computes(halves="half and whole"), "reliability compares the signature of the first half of the stream with that of the second half, not with the whole stream's (which contains it)"),
        Diagnosis(_computes(halves="alternate"), "the two halves are the stream cut in the middle, tokens[:n // 2] and tokens[n // 2:], each counted on its own (every other token breaks the pairs)"),
        Diagnosis(_computes(score="rsa"), "the report's score is linear CKA (ctxlab.align.cka), not RSA"),
        Diagnosis(_computes(within=False), "restrict E and S to the bin's tokens before scoring: that was the CKA over all tokens"),
    ]  # fmt: skip
    run_check("check_10_frequency_report", fn, cases, _problem, diagnoses)

"""Checks for the exercises of lesson 10 (probing a pretrained model).

None of them needs the pretrained model: the cases are character streams of the shipped text and
synthetic embeddings, so the exercises can be graded on any machine.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from ctxlab.align import cka
from ctxlab.checks.core import Case, Diagnosis, all_close, as_tensor, number_close, run_check, tensor_close
from ctxlab.checks.lesson09 import WRAP_HINT, bigram_counts, token_streams, wrapped
from ctxlab.signatures import bigram_signature

# --- exercise 1: the bigram signature from counts --------------------------------------------------


def signature_from_counts(tokens: Tensor, vocab_size: int) -> Tensor:
    """Reference: row s = [P(next | s), P(previous | s)], [V, 2V]; zero rows for tokens never seen there."""
    return bigram_signature(tokens, vocab_size).matrix.double()


def _rows(m: Tensor) -> Tensor:
    return m / m.sum(1, keepdim=True).clamp_min(1e-300)


def check_10_bigram_signature(fn: Callable[[Tensor, int], Tensor]) -> None:
    """fn(tokens, V) -> [V, 2V]: columns 0..V-1 P(next = b | s), columns V..2V-1 P(previous = a | s)."""
    cases = [Case(label, (tokens, V), signature_from_counts(tokens, V), hidden) for label, tokens, V, hidden in token_streams()]

    def halves(c: Case) -> tuple[Tensor, Tensor]:
        C = bigram_counts(*c.args)
        return _rows(C), _rows(C.T)

    def nan_for_unseen(g, e, c) -> bool:
        got = as_tensor(g)
        return got is not None and got.shape == e.shape and bool(got.isnan().any()) \
            and all_close(got.nan_to_num(0.0), e, 1e-5)

    diagnoses = [
        Diagnosis(nan_for_unseen, "0/0 gave NaN: a token that never has a successor (or predecessor) gets a zero row in that "
                                  "half; divide by the row total clamped away from 0"),
        Diagnosis(lambda g, e, c: all_close(g, signature_from_counts(wrapped(c.args[0]), c.args[1]), 1e-5), WRAP_HINT),
        Diagnosis(lambda g, e, c: all_close(g, torch.cat(halves(c)[::-1], 1)), "the halves are swapped: P(next | s) first, then P(previous | s)"),
        Diagnosis(lambda g, e, c: all_close(g, torch.cat([halves(c)[0], _rows(bigram_counts(*c.args)).T], 1)),
                  "the second half is P(s | previous) transposed: to condition on s, normalise the counts of (previous, s) over the previous token"),
        Diagnosis(lambda g, e, c: all_close(g, torch.cat([bigram_counts(*c.args), bigram_counts(*c.args).T], 1) / (len(c.args[0]) - 1)),
                  "those are joint probabilities P(s, next): divide each row by its own total, not by the number of pairs"),
        Diagnosis(lambda g, e, c: as_tensor(g).shape[-1] == c.args[1], "only one half: the signature has 2V columns, next-token AND previous-token distributions"),
    ]  # fmt: skip
    run_check("check_10_bigram_signature", fn, cases, tensor_close(atol=1e-5), diagnoses)


# --- exercise 2: alignment inside a frequency bin -------------------------------------------------------


def bin_cka(E: Tensor, S: Tensor, frequency: Tensor, lo: int, hi: int) -> float:
    """Reference: linear CKA of E and S on the tokens of frequency ranks lo..hi-1 (rank 0 = most frequent)."""
    order = frequency.argsort(descending=True, stable=True)
    idx = order[lo:hi]
    return float(cka(E[idx].double(), S[idx].double()))


def _uncentred_cka(E: Tensor, S: Tensor) -> float:
    ge, gs = E @ E.T, S @ S.T
    return float((ge * gs).sum() / (ge.norm() * gs.norm()))


def _bin_inputs() -> list[tuple[str, tuple, bool]]:
    """Embeddings that copy the signature for frequent tokens and drift away for rare ones."""
    out = []
    for seed, (V, m, d, lo, hi, hidden) in enumerate([(40, 12, 6, 0, 10, False), (40, 12, 6, 20, 35, True),
                                                      (60, 20, 8, 10, 30, True), (30, 9, 16, 5, 25, True)]):
        g = torch.Generator().manual_seed(20 + seed)
        S = torch.rand(V, m, generator=g, dtype=torch.float64)
        frequency = torch.rand(V, generator=g, dtype=torch.float64)  # distinct, so ranks are unambiguous
        rank = frequency.argsort(descending=True).argsort().double()
        noise = (rank / V)[:, None] * 3 * torch.randn(V, d, generator=g, dtype=torch.float64)
        E = S @ torch.randn(m, d, generator=g, dtype=torch.float64) + noise + 2.0
        out.append((f"V={V}, ranks {lo}..{hi - 1}", (E, S, frequency, lo, hi), hidden))
    E, S, _, _, _ = out[1][1]
    counts = torch.tensor([9, 3, 7, 3, 3, 12, 5, 3, 7, 1] * 4, dtype=torch.float64)  # tied counts across the bin edges
    out.append(("V=40, integer counts with ties at the bin edges, ranks 9..20", (E, S, counts, 9, 21), True))
    return out


def check_10_bin_alignment(fn: Callable[[Tensor, Tensor, Tensor, int, int], float]) -> None:
    """fn(E [V, d], S [V, m], frequency [V], lo, hi) -> CKA of E and S on the tokens ranked lo..hi-1 by frequency."""
    cases = [Case(label, args, bin_cka(*args), hidden) for label, args, hidden in _bin_inputs()]

    def is_(value: Callable[[tuple], float]) -> Callable:
        return lambda g, e, c: abs(float(g) - value(c.args)) < 1e-4 and abs(float(g) - e) > 1e-4

    def by_id(a):
        E, S, _, lo, hi = a
        return float(cka(E[lo:hi], S[lo:hi]))

    def rarest_first(a):
        E, S, f, lo, hi = a
        return bin_cka(E, S, -f, lo, hi)

    def uncentred(a):
        E, S, f, lo, hi = a
        idx = f.argsort(descending=True)[lo:hi]
        return _uncentred_cka(E[idx], S[idx])

    def ties_high_id_first(a):
        E, S, f, lo, hi = a
        idx = f.argsort(stable=True).flip(0)[lo:hi]
        return float(cka(E[idx].double(), S[idx].double()))

    def unstable_sort(a):
        E, S, f, lo, hi = a
        idx = f.argsort(descending=True)[lo:hi]
        return float(cka(E[idx].double(), S[idx].double()))

    diagnoses = [
        Diagnosis(is_(unstable_sort), "tokens with equal frequency must keep id order: sort with stable=True "
                                      "(an unstable sort may put tied tokens in any order)"),
        Diagnosis(is_(ties_high_id_first), "tokens with equal frequency must keep id order (lower id first, as a stable "
                                           "descending sort gives); reversing an ascending sort puts the higher id first"),
        Diagnosis(is_(by_id), "you took token ids lo..hi-1: sort the tokens by falling frequency and take RANKS lo..hi-1"),
        Diagnosis(is_(rarest_first), "rank 0 is the MOST frequent token: sort in descending order"),
        Diagnosis(is_(uncentred), "centre first: subtract the mean row of E and of S over the bin's tokens before the Gram matrices"),
        Diagnosis(lambda g, e, c: is_(lambda a: bin_cka(*a[:4], a[4] + 1))(g, e, c) or is_(lambda a: bin_cka(a[0], a[1], a[2], a[3] + 1, a[4]))(g, e, c),
                  "off by one: the bin holds ranks lo, lo+1, ..., hi-1 (order[lo:hi], as a Python slice)"),
        Diagnosis(is_(lambda a: float(cka(a[0], a[1]))), "that is the CKA over all tokens: restrict E and S to the bin"),
    ]  # fmt: skip
    run_check("check_10_bin_alignment", fn, cases, number_close(atol=1e-5), diagnoses)

"""The last check of set 10: a reading of the frequency report, defended before it is made.

A fall of the alignment with rarity says something about the model only once two simpler causes are ruled out:
chance (a bin whose excess is not more than a few spreads above its shuffles says nothing) and the statistic itself (a
signature counted from fewer pairs agrees less with itself; when its split-half reliability falls by at least
the fraction the excess falls, a noisier signature explains the decline without the model). The learner's
verdict is compared with the reference on reports built over the whole specification (every verdict, exact
ties on each boundary, a middle bin within chance, one bin, float32) and on the reports of four embeddings of
the shipped text: the set's noisy copy, a half-text signature, a three-quarter-text signature and a random one.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

import torch
from torch import Tensor

from ctxlab.checks.core import Case, Diagnosis, run_check, stub_first
from ctxlab.checks.lesson10_build import frequency_report_reference, noisy_copy, shakespeare_tokens
from ctxlab.signatures import bigram_signature

VERDICTS = ("chance", "flat", "signature", "model")


def read_report_reference(report: dict[str, Tensor], z: float) -> str:
    """The verdict on a frequency report: "chance" when the first or the last bin's excess is not more than z
    spreads, "flat" when the last bin's excess is not below the first's, "signature" when the reliability falls
    by at least the excess's fraction (last / first), "model" otherwise. Exact: the ratios compared crosswise."""
    return verdict_variant(report, z)


def verdict_variant(report: dict[str, Tensor], z: float, *, beyond: str = "more", bins: str = "ends", scale: str = "spreads",
                    flat: str = "not below", order: str = "chance flat signature", falls: str = "fraction",
                    signature: str = "at least", score: str = "excess") -> str:
    """The verdict written out, with one ingredient changed where a keyword says so: what a typical mistake computes."""
    ex, sp, rel = (report[k].double() for k in (score, "spread", "reliability"))
    a, b = (int(ex.argmax()), int(ex.argmin())) if bins == "extremes" else (0, len(ex) - 1)
    looked_at = {"every bin": range(len(ex)), "last": [b], "first": [a]}.get(bins, [a, b])
    bar = z * sp if scale == "spreads" else torch.full_like(sp, z)
    size = ex.abs() if beyond == "abs" else ex
    within = [bool(size[i] < bar[i]) if beyond == "at least" else bool(size[i] <= bar[i]) for i in looked_at]
    no_fall = bool(ex[b] >= ex[a]) if flat == "not below" else bool(ex[b] > ex[a])
    if falls == "fraction":
        lhs, rhs = rel[b] * ex[a], ex[b] * rel[a]  # rel[b] / rel[a] against ex[b] / ex[a], crosswise
    else:
        lhs, rhs = ex[a] - ex[b], rel[a] - rel[b]  # the drops themselves: the excess's against the reliability's
    noisy = {"at least": bool(lhs <= rhs), "more": bool(lhs < rhs), "at most": bool(lhs >= rhs)}[signature]
    tests = {"chance": any(within), "flat": no_fall, "signature": noisy}
    for name in order.split():
        if tests[name]:
            return name
    return "model"


def _report(excess, spread, reliability, baseline=None, dtype=torch.float64) -> dict[str, Tensor]:
    """A report from its excess, spread and reliability per bin (the CKA is the baseline plus the excess)."""
    ex, sp, rel = (torch.tensor(v, dtype=torch.float64) for v in (excess, spread, reliability))
    base = torch.tensor(baseline, dtype=torch.float64) if baseline is not None else torch.full_like(ex, 0.25)
    out = {"cka": base + ex, "baseline": base, "spread": sp, "excess": ex, "reliability": rel}
    return {k: v.to(dtype) for k, v in out.items()}


def _built() -> list[tuple[str, tuple]]:
    """(label, (report, z)): each boundary of the specification, on multiples of 1/64 so that any way of
    comparing (ratios, products, differences, float32) decides a tie exactly."""
    return [
        ("the most frequent bin within chance, the rarest beyond", (_report([0.125, 0.5, 0.375], [0.0625, 0.0625, 0.0625], [0.75, 0.5, 0.5]), 3.0)),
        ("a first bin exactly z spreads above its shuffles (a tie: not beyond chance)", (_report([0.375, 0.25], [0.125, 0.0625], [0.75, 0.5]), 3.0)),
        ("the rarest bin many spreads BELOW its shuffles", (_report([0.5, -0.5], [0.0625, 0.0625], [1.0, 0.5]), 3.0)),
        ("the rarest bin within chance, the first far beyond", (_report([0.5, 0.25, 0.125], [0.0625, 0.0625, 0.0625], [0.75, 0.5, 0.5]), 3.0)),
        ("a middle bin within chance, both ends beyond; the reliability steady", (_report([0.75, 0.0625, 0.5], [0.0625, 0.0625, 0.0625], [0.75, 0.75, 0.75]), 3.0)),
        ("excess below z but many spreads (z 1.5, spreads 1/16)", (_report([1.0, 0.5], [0.0625, 0.0625], [1.0, 1.0]), 1.5)),
        ("excess above z but within z spreads (z 0.25, spreads 1/4)", (_report([0.5, 0.375], [0.25, 0.25], [1.0, 1.0]), 0.25)),
        ("the same excess in the first and last bins (a tie: flat)", (_report([0.5, 0.25, 0.5], [0.0625, 0.0625, 0.0625], [1.0, 0.5, 0.5]), 2.0)),
        ("the excess rises with rarity while the reliability falls", (_report([0.5, 0.625], [0.0625, 0.0625], [1.0, 0.5]), 3.0)),
        ("reliability and excess fall by the same fraction (a tie: signature)", (_report([0.5, 0.25], [0.0625, 0.0625], [1.0, 0.5]), 3.0)),
        ("the reliability falls by a larger difference but a smaller fraction", (_report([0.5, 0.3125], [0.0625, 0.0625], [1.0, 0.75]), 2.0)),
        ("the reliability falls by a smaller difference but a larger fraction", (_report([1.0, 0.8125], [0.0625, 0.0625], [0.5, 0.375]), 2.0)),
        ("the reliability rises with rarity", (_report([0.75, 0.5], [0.0625, 0.0625], [0.5, 0.625]), 2.0)),
        ("the lowest excess in a middle bin (the reading compares the ends)", (_report([0.75, 0.25, 0.625], [0.0625, 0.0625, 0.0625], [1.0, 0.75, 0.75]), 2.0)),
        ("the raw CKA falls while the excess rises (the baseline falls more)", (_report([0.5, 0.625], [0.0625, 0.0625], [1.0, 0.5], [0.5, 0.125]), 3.0)),
        ("the raw CKA rises while the excess falls (the baseline rises)", (_report([0.75, 0.5], [0.0625, 0.0625], [1.0, 1.0], [0.125, 0.5]), 3.0)),
        ("one bin, beyond chance (nothing can fall)", (_report([0.5], [0.0625], [0.75]), 3.0)),
        ("one bin, within chance", (_report([0.125], [0.0625], [0.75]), 3.0)),
        ("float32, a decline the signature does not explain", (_report([0.75, 0.5, 0.25], [0.0625] * 3, [1.0, 0.875, 0.75], dtype=torch.float32), 2.5)),
        ("float32, the fraction tie", (_report([0.5, 0.375], [0.0625] * 2, [1.0, 0.75], dtype=torch.float32), 1.0)),
    ]  # fmt: skip


def _generated(n: int = 60, seed: int = 10) -> list[tuple[str, tuple]]:
    """Random reports of 1-6 bins on a 1/64 grid, each bin's excess drawn some spreads from z, half of them
    equal to one another somewhere: every verdict occurs."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for i in range(n):
        B = int(torch.randint(1, 7, (1,), generator=g))
        z = [1.0, 2.0, 2.5, 3.0, 4.0][int(torch.randint(0, 5, (1,), generator=g))]
        spread = torch.randint(1, 5, (B,), generator=g) / 64
        excess = spread * (z + torch.randint(-2, 9, (B,), generator=g) / 2)
        reliability = torch.randint(8, 65, (B,), generator=g) / 64
        if i % 4 == 1 and B > 1 and bool((excess[[0, -1]] > 0).all()):  # the fraction tie: both fall by the same ratio
            reliability[[0, -1]] = 2 * excess[[0, -1]]
        if i % 4 == 3 and B > 1:  # the flat tie
            excess[-1] = excess[0]
        out.append((f"generated report {i} ({B} bins, z {z:g})", (_report(excess.tolist(), spread.tolist(), reliability.tolist()), z)))
    return out


def reading_embeddings(tokens: Tensor, V: int) -> dict[str, Tensor]:
    """Four embeddings of a stream for the reading, one per verdict on the shipped text: the set's noisy copy of
    the signature, the signature of the stream's first half and of its last three quarters mapped into 16
    dimensions, and a random table unrelated to the text."""
    g = torch.Generator().manual_seed(0)
    mapped = [bigram_signature(part, V).matrix.double() @ torch.randn(2 * V, 16, generator=g, dtype=torch.float64)
              for part in (tokens[: len(tokens) // 2], tokens[len(tokens) // 4 :])]
    return {"noisy copy": noisy_copy(tokens, V), "first half's signature": mapped[0],
            "last 3/4's signature": mapped[1],
            "random": torch.randn(V, 16, generator=torch.Generator().manual_seed(1), dtype=torch.float64)}


@cache
def _text_reports() -> tuple[tuple[str, tuple], ...]:
    """(label, (report, 3.0)) for the four embeddings of the lesson's 20,000 characters the exercise reads."""
    text, V = shakespeare_tokens(20_000)
    return tuple((f"the report of the {name} embedding (20,000 characters, bins of 20, 20 shuffles), z 3",
                  (frequency_report_reference(text, V, E, 20, 20, 0), 3.0)) for name, E in reading_embeddings(text, V).items())


def reading_cases() -> list[Case]:
    """The check's cases: the built reports first (each isolates one rule, so a failure names its mistake), the
    four text reports (visible), then the generated ones."""
    hidden = [Case(label, args, read_report_reference(*args), hidden=True) for label, args in _built()]
    visible = [Case(label, args, read_report_reference(*args)) for label, args in _text_reports()]
    return hidden + visible + [Case(label, args, read_report_reference(*args), hidden=True) for label, args in _generated()]


def _verdict_differs(got: Any, expected: str) -> str | None:
    if not isinstance(got, str) or got not in VERDICTS:
        return f"return one of the strings {', '.join(repr(v) for v in VERDICTS)}; got {got!r}"
    return None if got == expected else f"expected {expected!r}, got {got!r}"


def _computes(fn: Callable, cases: list[Case], **change) -> Callable[[Any, Any, Case], bool]:
    """A diagnosis predicate: the learner's verdicts are the ones ``change`` gives on every case (a four-way
    verdict often lands on the same wrong string by two routes in one case, never across all of them)."""
    answers: dict[int, Any] = {}

    def learner(i: int) -> Any:
        if i not in answers:
            answers[i] = fn(*cases[i].args)
        return answers[i]

    def matches(got: Any, expected: Any, case: Case) -> bool:
        return verdict_variant(*case.args, **change) != expected and all(
            learner(i) == verdict_variant(*c.args, **change) for i, c in enumerate(cases))

    return matches


@stub_first
def check_10_read_report(fn: Callable[[dict[str, Tensor], float], str]) -> None:
    """fn(report, z) -> "chance" | "flat" | "signature" | "model": the reading of a frequency report, with its
    two simpler causes (chance, the signature's own noise) ruled out first."""
    cases = reading_cases()
    diagnoses = [
        Diagnosis(_computes(fn, cases, beyond="abs"), "an excess far BELOW its shuffles is not beyond chance either: beyond means more than z spreads above, not away"),
        Diagnosis(_computes(fn, cases, beyond="at least"), "a bin exactly z spreads above its shuffles is not beyond chance: it needs MORE than z spreads"),
        Diagnosis(_computes(fn, cases, bins="every bin"), "only the two bins the reading compares, the first and the last, must be beyond chance; a middle bin within chance does not stop it"),
        Diagnosis(_computes(fn, cases, bins="last"), "the most frequent bin must be beyond chance too, not only the rarest: the reading compares the two"),
        Diagnosis(_computes(fn, cases, bins="first"), "the rarest bin must be beyond chance too, not only the most frequent: the reading compares the two"),
        Diagnosis(_computes(fn, cases, scale="raw"), "measure the excess in spreads: a bin is beyond chance when its excess is more than z times ITS spread, not more than z"),
        Diagnosis(_computes(fn, cases, flat="below"), "an excess equal in the first and last bins has not fallen: that is 'flat', nothing to explain"),
        Diagnosis(_computes(fn, cases, order="chance signature flat"), "ask in order: chance, then whether the excess fell at all ('flat'), and only then what explains the fall"),
        Diagnosis(_computes(fn, cases, order="flat chance signature"), "chance comes first: a report whose end bins are within chance cannot be read as flat or falling"),
        Diagnosis(_computes(fn, cases, falls="difference"), "compare the FRACTIONS each falls by (last bin over first), not the differences: the reliability and the excess are on different scales"),
        Diagnosis(_computes(fn, cases, signature="more"), "a reliability that falls by exactly the excess's fraction explains all of it: that is 'signature'"),
        Diagnosis(_computes(fn, cases, score="cka"), "read the excess over the shuffles, not the raw CKA: the raw CKA carries the baseline, which changes from bin to bin"),
        Diagnosis(_computes(fn, cases, signature="at most"), "the signature explains the fall when the reliability falls by AT LEAST the excess's fraction, not at most"),
        Diagnosis(_computes(fn, cases, bins="extremes"), "the reading compares the first bin (the most frequent) with the last (the rarest), not the highest excess with the lowest"),
    ]  # fmt: skip
    run_check("check_10_read_report", fn, cases, _verdict_differs, diagnoses)

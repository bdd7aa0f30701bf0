"""The build-it checks of lesson 09: which text signature the GPT's embedding lines up with, under SGD and under Adam.

The learner writes three functions. The first scores every recorded embedding's displacement E_t - E_0 against
a signature and subtracts the top of its shuffled band (lesson 02's linear CKA, the shuffles handed in, so that
the answer is one number); its cases are embeddings with a planted signal (small and large init, float32 and
float64, more signature columns than tokens, shuffles that hold the identity) and a recorded GPT. The second
reads, from such margins, the signature that leads at every record from a step on by more than a margin; its
cases are curves drawn by hand whose answers the text decides (a lead equal to the margin, a first step off the
grid, three signatures). The third puts the two together on two tiny GPTs the check trains itself (one block,
width 16, three seeds, 150 steps of plain SGD and of Adam on the same batches): the lesson's disagreement must
show, the trigram increment leading under SGD and the bigram signature under Adam.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import torch
from torch import Tensor

from ctxlab.checks.core import Case, Diagnosis, as_tensor, run_check, tensor_close

TOL = 1e-4  # on a margin: float32 arithmetic moves it by about 1e-6
FROM_STEP, BY = 100, 0.02  # the lesson's reading: the larger margin by over 0.02 at every record from step 100 on
N_SHUFFLES = 20
RUN = {"context": 8, "d": 16, "n_heads": 2, "steps": 150, "record_every": 10, "batch_size": 32}
SEEDS = (0, 1, 2)
REGIMES = {"plain SGD, lr 1.5": ("sgd", 1.5), "Adam, lr 0.01": ("adam", 1e-2)}
EXPECTED_LEADERS = {"plain SGD, lr 1.5": "trigram", "Adam, lr 0.01": "bigram"}  # measured: every lead >= 0.04 = 2 BY


# --- exercise 4a: the margin over the shuffled band -----------------------------------------------------


def centred_gram(M: Tensor, axis: int = -2) -> Tensor:
    """M [..., V, m] centred along ``axis`` (-2: each column over the V tokens), times its transpose: [..., V, V]."""
    M = M.double()
    M = M - M.mean(axis, keepdim=True)
    return M @ M.transpose(-1, -2)


def margin_variant(embeddings: Tensor, signature: Tensor, perms: Tensor, *, origin: str = "first",
                   centre: str = "tokens", band: str = "top", squared: bool = True, shuffled: str = "signature",
                   zero_as_zero: bool = True) -> Tensor:
    """CKA(E_t - origin, S) minus a statistic of its shuffled band, per model and record [K, T]; the defaults are
    the answer, every other setting one mistake (the displacement's origin, the centring, the band's statistic,
    CKA unsquared, the embedding's rows shuffled, 0 / 0 left NaN at a zero displacement)."""
    E = embeddings.double()
    first = E[:, :1] if origin == "first" else torch.cat([E[:, :1], E[:, :-1]], 1) if origin == "previous" else 0.0
    D = E - first
    axis = {"tokens": -2, "features": -1}.get(centre)
    ge = D @ D.transpose(-1, -2) if axis is None else centred_gram(D, axis)
    gs = signature.double() @ signature.double().T if axis is None else centred_gram(signature, axis)
    den = torch.linalg.matrix_norm(ge) * torch.linalg.matrix_norm(gs)
    den = den.clamp_min(1e-300) if zero_as_zero else den

    def score(gram_e: Tensor, gram_s: Tensor) -> Tensor:
        value = (gram_e * gram_s).sum((-1, -2)) / den
        return value if squared else value.clamp_min(0).sqrt()

    raw = score(ge, gs)
    if shuffled == "signature":
        copies = torch.stack([score(ge, gs[p][:, p]) for p in perms])
    else:
        copies = torch.stack([score(ge[..., p, :][..., :, p], gs) for p in perms])
    top = {"top": copies.max(0).values, "bottom": copies.min(0).values, "mean": copies.mean(0),
           "none": torch.zeros_like(raw), "flipped": copies.max(0).values}[band]
    return top - raw if band == "flipped" else raw - top


def band_margins_reference(embeddings: Tensor, signature: Tensor, perms: Tensor) -> Tensor:
    """[K, T]: CKA(E_t - E_0, S) - max_j CKA(E_t - E_0, S[perms[j]]), 0 where E_t - E_0 is zero."""
    return margin_variant(embeddings, signature, perms)


def random_perms(V: int, n: int, seed: int, identity: bool = False) -> Tensor:
    """n permutations of V tokens [n, V]; the first is the identity when asked."""
    g = torch.Generator().manual_seed(seed)
    perms = torch.stack([torch.randperm(V, generator=g) for _ in range(n)])
    if identity:
        perms[0] = torch.arange(V)
    return perms


def planted(seed: int, K: int, T: int, V: int, m: int, d: int, init: float, dtype=torch.float32) -> tuple[Tensor, Tensor]:
    """Embeddings [K, T, V, d] whose displacement grows along S W plus noise (zero at record 0), and S [V, m]."""
    g = torch.Generator().manual_seed(seed)
    S = torch.softmax(2 * torch.randn(V, m, generator=g, dtype=torch.float64), -1)
    signal = (S - S.mean(0)) @ torch.randn(m, d, generator=g, dtype=torch.float64)
    noise = 0.5 * signal.std() * torch.randn(K, T, V, d, generator=g, dtype=torch.float64)
    growth = (torch.arange(T, dtype=torch.float64) / (T - 1)) ** 2
    E0 = init * torch.randn(K, 1, V, d, generator=g, dtype=torch.float64)
    return (E0 + growth[:, None, None] * (signal + noise)).to(dtype), S.to(dtype)


def _margin_cases() -> Iterator[Case]:
    """The drawn cases, then the recorded GPT: trained (once) only when a learner's function gets that far."""
    shown = planted(0, 2, 6, 10, 6, 8, init=0.05)
    specs = [
        ("planted signal, K 2, T 6, V 10, m 6, 12 shuffles (float32)", shown, random_perms(10, 12, 0), False),
        ("float64, one model, V 24, m 60: more signature columns than tokens", planted(1, 1, 5, 24, 60, 12, 0.02, torch.float64),
         random_perms(24, 30, 1), True),
        ("large init: E_0 much larger than the displacement", planted(2, 3, 4, 16, 8, 6, init=2.0), random_perms(16, 10, 2), True),
        ("shuffles that include the identity (the margin is never above 0)", planted(3, 2, 5, 12, 5, 8, 0.05),
         random_perms(12, 8, 3, identity=True), True),
    ]
    for label, (E, S), perms, hidden in specs:
        yield Case(label, (E, S, perms), band_margins_reference(E, S, perms), hidden)
    run = regime_runs()["plain SGD, lr 1.5"]
    E, S = run.trajectory.embeddings, run.signatures["bigram"]
    yield Case("the check's SGD GPT, bigram signature", (E, S, run.perms), band_margins_reference(E, S, run.perms), True)


def _margins_are(**mistake) -> Callable[[Any, Tensor, Case], bool]:
    """A diagnosis predicate: the learner's margins are the ones ``mistake`` gives (NaN where it is NaN)."""

    def matches(got: Any, expected: Tensor, case: Case) -> bool:
        wrong, value = margin_variant(*case.args, **mistake), as_tensor(got)
        return (value is not None and value.shape == wrong.shape and tensor_close(TOL)(wrong, expected) is not None
                and bool(torch.isclose(value.double(), wrong, rtol=0, atol=TOL, equal_nan=True).all()))

    return matches


def check_09_band_margins(fn: Callable[[Tensor, Tensor, Tensor], Tensor]) -> None:
    """fn(embeddings [K, T, V, d], signature [V, m], perms [n, V]) -> [K, T]: CKA(E_t - E_0, S) minus the top of
    its shuffled band, within 1e-4."""
    diagnoses = [
        Diagnosis(_margins_are(zero_as_zero=False), "your margin is NaN where E_t - E_0 is zero (record 0): there the CKA is 0 / 0; take it, and the margin, as 0"),
        Diagnosis(_margins_are(origin="none"), "you scored the embedding itself: score its displacement E_t - E_0 from the first record, the init"),
        Diagnosis(_margins_are(origin="previous"), "that is the displacement from the previous record: take E_t - E_0, from the FIRST record"),
        Diagnosis(_margins_are(centre="none"), "the Gram matrices are not centred: centre each column over the V tokens first (linear CKA, lesson 02)"),
        Diagnosis(_margins_are(centre="features"), "you centred each row (over its features): centre each COLUMN over the V tokens"),
        Diagnosis(_margins_are(squared=False), "that is the square root of linear CKA: the numerator is <G_E, G_S> = ||E_c^T S_c||^2, squared"),
        Diagnosis(_margins_are(band="none"), "that is the raw CKA: subtract the top of the shuffled band"),
        Diagnosis(_margins_are(band="bottom"), "you subtracted the band's bottom: the margin is over its TOP, the highest shuffled CKA"),
        Diagnosis(_margins_are(band="mean"), "you subtracted the band's mean: the margin is over its TOP, the highest shuffled CKA"),
        Diagnosis(_margins_are(band="flipped"), "the sign is flipped: the margin is CKA minus the band's top (above the band: positive)"),
        Diagnosis(_margins_are(shuffled="embedding"), "you shuffled the embedding's rows: shuffle the SIGNATURE's, S[perm] (row i of the copy is row perm[i] of S)"),
    ]  # fmt: skip
    run_check("check_09_band_margins", fn, _margin_cases(), tensor_close(TOL), diagnoses)


# --- exercise 4b: which signature leads --------------------------------------------------------------------


def leader_variant(steps: Tensor, margins: dict[str, Tensor], from_step: float, by: float, *, records: str = "from",
                   test: str = "every", strict: bool = True, use_by: bool = True, against: str = "all",
                   pick: str = "largest") -> list[str | None]:
    """Per model, the signature whose margin beats every other's by more than ``by`` at every record at a step
    >= from_step, else None; the defaults are the answer, every other setting one mistake."""
    names = list(margins)
    M = torch.stack([torch.as_tensor(margins[n], dtype=torch.float64) for n in names])  # [S, K, T]
    steps = torch.as_tensor(steps)
    keep = {"from": steps >= from_step, "after": steps > from_step, "all": torch.ones_like(steps, dtype=torch.bool),
            "last": torch.arange(len(steps)) == len(steps) - 1,
            "index": torch.arange(len(steps)) >= int(from_step)}[records]
    M = M[:, :, keep]
    if pick == "smallest":
        M = -M
    if test == "mean":
        M = M.mean(-1, keepdim=True)
    gap = by if use_by else 0.0
    out = []
    for k in range(M.shape[1]):
        leader = None
        for i, name in enumerate(names):
            lead = M[i, k] - torch.cat([M[:i, k], M[i + 1:, k]])  # [S - 1, T']
            beats = (lead > gap) if strict else (lead >= gap)
            if bool(beats.all(-1).all() if against == "all" else beats.all(-1).any()):
                leader = name
                break
        out.append(leader)
    return out


def leading_signature_reference(steps: Tensor, margins: dict[str, Tensor], from_step: float, by: float) -> list[str | None]:
    """[K] names (or None): the signature ahead of every other by more than ``by`` at every record from ``from_step``."""
    return leader_variant(steps, margins, from_step, by)


def _piecewise(steps: Sequence[float], knots: Sequence[tuple[float, float]]) -> Tensor:
    """A margin curve: value v from step s on, for each (s, v) knot in order (step 0 always 0)."""
    t = torch.as_tensor(steps, dtype=torch.float64)
    out = torch.zeros_like(t)
    for start, value in knots:
        out = torch.where(t >= start, torch.tensor(value, dtype=torch.float64), out)
    return torch.where(t == 0, 0.0, out)


def _leader_cases() -> list[Case]:
    even, irregular, doubling = list(range(0, 151)), [0, 5, 10, 20, 40, 80, 120, 160, 200], [0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512]
    p = _piecewise
    specs = [
        ("two models recorded at every step: trigram ahead from step 100 after the bigram led; bigram ahead throughout", even, 100, 0.02,
         {"bigram": [p(even, [(10, 0.06), (100, 0.03)]), p(even, [(10, 0.15)])], "trigram": [p(even, [(10, 0.0), (100, 0.12)]), p(even, [(10, 0.05)])]}, False),
        ("the bigram signature ahead at step 130 and at the last record, the trigram increment at the others", even, 100, 0.02,
         {"bigram": [p(even, [(10, 0.05), (130, 0.15), (140, 0.05), (150, 0.15)])], "trigram": [p(even, [(10, 0.12)])]}, True),
        ("a lead of 0.01 throughout: positive, but not by more than by", even, 100, 0.02,
         {"bigram": [p(even, [(10, 0.04)])], "trigram": [p(even, [(10, 0.05)])]}, True),
        ("a lead exactly as large as by at every record from step 100", even, 100, 0.0625,
         {"bigram": [p(even, [(10, 0.25)])], "trigram": [p(even, [(10, 0.375), (100, 0.3125)])]}, True),
        ("doubling steps, from_step 8: the lead off at step 8, 16 and 256 in models 0, 1 and 2", doubling, 8, 0.02,
         {"bigram": [p(doubling, [(1, 0.1)])] * 3,
          "trigram": [p(doubling, [(1, 0.2), (at, 0.1), (2 * at, 0.2)]) for at in (8, 16, 256)]}, True),
        ("from_step 100 between recorded steps, the lead off at step 80 only", irregular, 100, 0.02,
         {"bigram": [p(irregular, [(5, 0.2), (80, 0.4), (120, 0.2)])], "trigram": [p(irregular, [(5, 0.3), (80, 0.1), (120, 0.3)])]}, True),
        ("three signatures: trigram beats bigram but not unigram; bigram beats both; trigram ahead of both by at most by", even, 100, 0.02,
         {"unigram": [p(even, [(10, v)]) for v in (0.015, 0.01, 0.0)], "bigram": [p(even, [(10, v)]) for v in (0.0, 0.2, 0.01)],
          "trigram": [p(even, [(10, v)]) for v in (0.03, 0.02, 0.02)]}, True),
        ("both margins below their bands: the larger one still leads", even, 50, 0.02,
         {"bigram": [p(even, [(10, -0.02)])], "trigram": [p(even, [(10, -0.08)])]}, True),
    ]  # fmt: skip
    cases = []
    for label, steps, from_step, by, curves, hidden in specs:
        margins = {name: torch.stack(rows) for name, rows in curves.items()}
        args = (torch.tensor(steps), margins, from_step, by)
        cases.append(Case(label, args, leading_signature_reference(*args), hidden))
    return cases


def _names_problem(got: Any, expected: list[str | None]) -> str | None:
    values = list(got) if isinstance(got, (list, tuple)) else None
    if values is None or len(values) != len(expected):
        return f"expected a list of {len(expected)} entries (one name or None per model), got {got!r}"
    if values != expected:
        return f"expected {expected}, got {values}"
    return None


def _leaders_are(**mistake) -> Callable[[Any, list, Case], bool]:
    def matches(got: Any, expected: list, case: Case) -> bool:
        wrong = leader_variant(*case.args, **mistake)
        return wrong != expected and _names_problem(got, wrong) is None

    return matches


def check_09_leading_signature(fn: Callable[[Tensor, dict, float, float], list]) -> None:
    """fn(steps [T], margins {name: [K, T]}, from_step, by) -> [K] names or None: the signature whose margin exceeds
    every other's by more than ``by`` at every record at a step >= from_step."""
    diagnoses = [
        Diagnosis(_leaders_are(records="all"), "you read every record: only the records at steps >= from_step count"),
        Diagnosis(_leaders_are(records="last"), "you read only the last record: the lead must hold at EVERY record from from_step on"),
        Diagnosis(_leaders_are(test="mean"), "you tested the lead on average: it must hold at EVERY record from from_step on"),
        Diagnosis(_leaders_are(strict=False), "a lead equal to by is not a lead: the margin must exceed the other's by MORE than by"),
        Diagnosis(_leaders_are(use_by=False), "any positive lead counted: the margin must exceed every other's by more than by"),
        Diagnosis(_leaders_are(records="after"), "the record at from_step itself counts: keep the steps >= from_step"),
        Diagnosis(_leaders_are(records="index"), "from_step is a training step, not a position in the records: compare it with steps"),
        Diagnosis(_leaders_are(against="any"), "the leader must beat EVERY other signature, not just one of them"),
        Diagnosis(_leaders_are(pick="smallest"), "that is the trailing signature: the leader has the LARGEST margin"),
        Diagnosis(lambda g, e, c: isinstance(g, (list, tuple)) and len(g) == len(e) > 1 and len(set(g)) == 1 < len(set(e)),
                  "one answer for all models: read each model's margins on their own"),
        Diagnosis(lambda g, e, c: isinstance(g, (list, tuple)) and any(isinstance(v, int) for v in g),
                  "return each signature's NAME (its key in margins), not its position"),
    ]  # fmt: skip
    run_check("check_09_leading_signature", fn, _leader_cases(), _names_problem, diagnoses)


# --- exercise 4c: the two regimes, on the check's own GPTs -----------------------------------------------


@dataclass(frozen=True)
class RegimeRun:
    """A recorded tiny-GPT run (steps [T], embeddings [K, T, V, d]), the text's signatures {name: [V, m]} and
    the shuffles [n, V] that its bands use."""

    trajectory: Any  # ctxlab.train.Trajectory
    signatures: dict[str, Tensor]
    perms: Tensor


@cache
def regime_runs() -> dict[str, RegimeRun]:
    """The check's own runs: one-block GPTs (width 16, context 8, seeds 0-2) trained for 150 steps on the shipped
    Shakespeare by plain SGD at lr 1.5 and by Adam at lr 0.01 on the same batches, the embedding recorded every 10
    steps. About 3 s on one CPU thread, once per process."""
    from ctxlab.corpus import CharTokenizer, load_text, train_val_split
    from ctxlab.lm import TinyGPT, train_lm
    from ctxlab.models import ensemble_grid
    from ctxlab.signatures import bigram_signature, trigram_increment

    text = load_text("shakespeare").text
    tok = CharTokenizer(text)
    train_tokens, held_out = train_val_split(tok.encode(text))
    V = tok.vocab_size
    signatures = {"bigram": bigram_signature(train_tokens, V).matrix, "trigram": trigram_increment(train_tokens, V).matrix}
    perms = random_perms(V, N_SHUFFLES, seed=0)
    runs = {}
    for name, (optimizer, lr) in REGIMES.items():
        gammas, seeds = ensemble_grid([1.0], list(SEEDS))
        model = TinyGPT(V, RUN["context"], d=RUN["d"], n_layers=1, n_heads=RUN["n_heads"], gamma=gammas, seed=seeds)
        traj = train_lm(model, train_tokens, RUN["steps"], eval_tokens=held_out, batch_size=RUN["batch_size"],
                        optimizer=optimizer, lr=lr, record_every=RUN["record_every"], eval_windows=8, progress=False)
        runs[name] = RegimeRun(traj, signatures, perms)
    return runs


def alignment_leaders_reference(run, signatures: dict[str, Tensor], perms: Tensor, from_step: float, by: float) -> list[str | None]:
    """Per model, the signature whose margin over its shuffled band leads (exercises 4a and 4b together)."""
    margins = {name: band_margins_reference(run.embeddings, S, perms) for name, S in signatures.items()}
    return leading_signature_reference(run.steps, margins, from_step, by)


def _order_hint(got: list, case: Case) -> str:
    """What a learner's leaders that are not the reference's most likely did."""
    run, signatures, perms, from_step, by = case.args
    names, expected = list(signatures), case.expected
    swap = dict(zip(names, names[::-1])) | {None: None}
    raw = {n: margin_variant(run.embeddings, S, perms, band="none") for n, S in signatures.items()}
    if got == [swap[v] for v in expected]:
        return "your leaders are the other way round: key each signature's margins by its own name"
    if got == leading_signature_reference(run.steps, raw, from_step, by):
        return ("those are the leaders of the raw CKA values: their shuffled bands sit at different heights, so compare "
                "the margins over the bands' tops")
    if all(v is None for v in got):
        return "no signature leads in any model: pass from_step and by through (records at steps >= from_step, a lead of more than by)"
    return "your leaders differ from exercises 4a and 4b put together: the margins of each signature, then the leader"


def planted_run() -> tuple[Any, dict[str, Tensor], Tensor]:
    """A drawn run whose displacement grows along one signature, that signature and an unrelated one, the shuffles."""
    from ctxlab.train import Trajectory

    E, S = planted(4, 2, 6, 10, 6, 8, init=0.05)
    unrelated = torch.softmax(torch.randn(10, 6, generator=torch.Generator().manual_seed(5)), -1)
    run = Trajectory(torch.arange(0, 60, 10), torch.zeros(2, 6), E)
    return run, {"unrelated": unrelated, "planted": S}, random_perms(10, 12, 4)


def _order_cases() -> Iterator[Case]:
    """The drawn run, then the check's GPTs (trained only when a learner's function gets that far), whose leaders
    must be the lesson's."""
    run, signatures, perms = planted_run()
    args = (run, signatures, perms, 20, BY)
    yield Case(f"a drawn run along the 'planted' signature, from step 20, by {BY}", args, alignment_leaders_reference(*args))
    for regime, gpt in regime_runs().items():
        label = f"{regime}, seeds {', '.join(map(str, SEEDS))}, from step {FROM_STEP}, by {BY}"
        args = (gpt.trajectory, gpt.signatures, gpt.perms, FROM_STEP, BY)
        expected = alignment_leaders_reference(*args)
        assert expected == [EXPECTED_LEADERS[regime]] * len(SEEDS), (
            f"check_09_alignment_order: on '{label}' the reference itself measured {expected}, not the lesson's order")
        yield Case(label, args, expected, hidden=True)


def check_09_alignment_order(fn: Callable[[Any, dict, Tensor, float, float], list]) -> None:
    """fn(run, signatures, perms, from_step, by) -> [K] leaders, on a drawn run and on the check's SGD and Adam GPTs
    (from step 100 on, by 0.02): the trigram increment must lead under SGD and the bigram signature under Adam."""
    name = "check_09_alignment_order"
    for case in _order_cases():
        where = f"{name}, {'hidden' if case.hidden else 'visible'} case '{case.label}'"
        try:
            got = fn(*case.args)
        except NotImplementedError:
            raise AssertionError(f"{name}: not done yet: finish exercises 4a and 4b first, then call them here") from None
        except Exception as err:
            raise AssertionError(f"{where}: your function raised {type(err).__name__}: {err}") from err
        problem = _names_problem(got, case.expected)
        if problem:
            if not isinstance(got, (list, tuple)) or len(got) != len(case.expected):
                raise AssertionError(f"{where}: {problem}")
            raise AssertionError(f"{where}: {_order_hint(list(got), case)}\n  {problem}")
    print(f"PASS {name}")

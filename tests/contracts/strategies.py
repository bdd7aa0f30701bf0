"""Hypothesis strategies that draw exercise inputs across what each exercise text allows.

``tests/test_wrong_answer_search.py`` searches them for inputs where a named wrong answer differs from
the reference. Each strategy returns the argument tuple of one call of the learner's function. Sizes,
grids, ties and scales are drawn by Hypothesis (so they shrink); bulk random values come from a drawn
seed. Inputs keep a margin from every boundary the text does not decide (a distance exactly at the
tolerance, a slope exactly at the flatness limit, a tie for the k-th neighbour); the boundaries it does
decide (a loss exactly on a midpoint, a curve that only touches a level) are drawn on purpose.
"""

from __future__ import annotations

import copy
import math

import torch
from hypothesis import assume
from hypothesis import strategies as st

from ctxlab.checks.lesson06 import pair_term_population
from ctxlab.checks.lesson11 import LEVELS as RACE_LEVELS
from ctxlab.checks.lesson11 import race_curves
from ctxlab.dataset import Dataset
from ctxlab.fixed_codes import code_width
from ctxlab.learning_times import log_spaced_steps, order_losses, sigmoid_curve

TOL = 0.01  # the lesson-03 tolerance (nats)
GAMMAS = (0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0)


def _generator(draw) -> torch.Generator:
    return torch.Generator().manual_seed(draw(st.integers(0, 2**20)))


# --- rows that are equal within a tolerance (sets 01 and 13) -------------------------------------


@st.composite
def grouped_rows(draw, atol: float | None = None) -> tuple:
    """(matrix, atol): rows in groups that never chain. Within a group every entry differs by at most
    0.9 atol (so a Euclidean distance can exceed atol); two groups differ somewhere by at least 2 atol,
    down to a single entry (rows 3 atol apart at scale 1 are what a relative tolerance merges). Base
    entries may sit on a grid line of atol (or half of it) with members 1e-4 atol on either side.
    Entries of size 1e-3 to 1e3, float32 where its rounding stays below 1% of atol."""
    atol = draw(st.sampled_from((1e-9, 1e-7, 1e-6, 1e-4, 1e-2))) if atol is None else atol
    n_cols, scale = draw(st.integers(1, 5)), draw(st.sampled_from((1e-3, 1.0, 1e3)))
    g = _generator(draw)
    bases = [scale * (2 * torch.rand(n_cols, generator=g, dtype=torch.float64) - 1)]
    for _ in range(draw(st.integers(0, 4))):
        if draw(st.booleans()):
            bases.append(scale * (2 * torch.rand(n_cols, generator=g, dtype=torch.float64) - 1))
            continue
        new = draw(st.sampled_from(bases)).clone()
        factor = draw(st.sampled_from((3.0, 5.0, 10.0, 30.0, 300.0, 3000.0)))
        new[draw(st.integers(0, n_cols - 1))] += draw(st.sampled_from((-1.0, 1.0))) * factor * atol
        bases.append(new)
    snap = draw(st.sampled_from((None, 0.0, 0.5)))  # put base entries on k * atol or (k + 1/2) * atol
    if snap is not None:
        bases = [(torch.floor(b / atol) + snap) * atol for b in bases]
    base = torch.stack(bases)
    apart = (base[:, None] - base[None]).abs().amax(-1) + 3 * atol * torch.eye(len(bases), dtype=torch.float64)
    assume(bool((apart >= 2 * atol).all()))
    picks = list(range(len(bases))) + draw(st.lists(st.integers(0, len(bases) - 1), max_size=5))
    picks = draw(st.permutations(picks))
    jitter = torch.tensor(draw(st.lists(st.sampled_from((0.0, 1e-4, -1e-4, 0.05, -0.3, 0.45, -0.45)),
                                        min_size=len(picks) * n_cols, max_size=len(picks) * n_cols)),
                          dtype=torch.float64).reshape(len(picks), n_cols)
    matrix = base[list(picks)] + atol * jitter
    if draw(st.booleans()) and scale * 1.2e-7 < 0.01 * atol:
        matrix = matrix.float()
    return matrix, atol


# --- datasets (sets 01, 15, 16) ------------------------------------------------------------------


@st.composite
def datasets(draw, max_len: int = 3, max_vocab: int = 4, max_rows: int = 16) -> Dataset:
    """A small Dataset: integer labels or label distributions (some one-hot), uniform or random
    weights, repeated contexts with different labels (as in sampled data) or not."""
    V, L, C = draw(st.integers(2, max_vocab)), draw(st.integers(1, max_len)), draw(st.integers(2, 3))
    N = draw(st.integers(1, max_rows))
    g = _generator(draw)
    x = torch.randint(V, (N, L), generator=g)
    if draw(st.booleans()):
        y = torch.rand(N, C, generator=g, dtype=torch.float64) ** 3
        hard = torch.rand(N, generator=g) < 0.3
        y = torch.where(hard[:, None], torch.nn.functional.one_hot(y.argmax(1), C).double(), y)
        y = (y / y.sum(1, keepdim=True)).float()
    else:
        y = torch.randint(C, (N,), generator=g)
    w = torch.ones(N) if draw(st.booleans()) else torch.rand(N, generator=g) + 0.05
    return Dataset(x, y, V, C, w / w.sum())


@st.composite
def pair_inputs(draw) -> tuple:
    """(data, i, j) for set 01's pair term: a small Dataset of L = 2 or 3 positions and i ≠ j in either order."""
    data = draw(datasets())
    assume(data.seq_len >= 2)
    i, j = draw(st.permutations(range(data.seq_len)))[:2]
    return data, i, j


@st.composite
def entropy_inputs(draw) -> tuple:
    """(data, positions): positions any subset of 0..L-1, in any order, possibly empty."""
    data = draw(datasets())
    order = draw(st.permutations(range(data.seq_len)))
    return data, tuple(order[: draw(st.integers(0, data.seq_len))])


@st.composite
def order_inputs(draw) -> tuple:
    """(data, final_loss, tol): each row's final loss near one of its order-k losses (a little above or
    below) or at 0 (below what any order gives a row with a spread label distribution)."""
    data = draw(datasets())
    table = order_losses(data)  # [L + 1, N]
    tol = draw(st.sampled_from((0.0, 0.005, 0.01, 0.05)))
    final = []
    for n in range(data.n):
        k = draw(st.integers(-1, data.seq_len))
        offset = draw(st.sampled_from((0.001, -0.001, 0.003, 0.03, -0.03)))
        final.append(0.0 if k < 0 else max(0.0, float(table[k, n]) + offset))
    final = torch.tensor(final, dtype=torch.float64)
    assume(float((table - (final + tol)).abs().min()) > 1e-7)
    return data, final, tol


@st.composite
def bin_inputs(draw) -> tuple:
    """(logits [K, N, C], data, ids): tokens of ``ids`` at any position, logits small to large."""
    data = draw(datasets(max_len=3, max_vocab=5))
    ids = sorted(draw(st.sets(st.integers(0, data.vocab_size - 1), min_size=1)))
    ids = torch.tensor(ids)
    assume(float(data.weights[torch.isin(data.x[:, 0], ids)].sum()) > 1e-3)
    K, scale = draw(st.integers(1, 4)), draw(st.sampled_from((0.01, 1.5, 10.0, 30.0)))
    logits = scale * torch.randn(K, data.n, data.n_labels, generator=_generator(draw))
    return (logits if draw(st.booleans()) else logits.double()), data, ids


# --- loss curves (sets 03 and 16) ----------------------------------------------------------------


@st.composite
def step_grids(draw, n_points: int):
    """Recorded steps: every dt steps from 0 (or a later start), or irregular gaps."""
    start = draw(st.sampled_from((0, 0, 1, 7)))
    if draw(st.booleans()):
        return start + draw(st.sampled_from((1, 2, 5, 10, 25))) * torch.arange(n_points)
    gaps = draw(st.lists(st.sampled_from((1, 2, 3, 5, 10, 25, 50)), min_size=n_points - 1, max_size=n_points - 1))
    return start + torch.cat([torch.zeros(1, dtype=torch.long), torch.tensor(gaps, dtype=torch.long).cumsum(0)])


@st.composite
def ladders(draw) -> list[float]:
    """H_0 > H_1 > ...: 2 to 4 levels, gaps 0.03 to 0.2 nats, the usual H_0 or others."""
    levels = [draw(st.sampled_from((math.log(2), math.log(8), 1.0, 0.35)))]
    for _ in range(draw(st.integers(1, 3))):
        levels.append(levels[-1] - draw(st.sampled_from((0.03, 0.055, 0.08, 0.2))))
    return levels


@st.composite
def loss_curves(draw) -> tuple:
    """(steps, loss float64, levels): a curve made of stretches, each at a level (on it or 0.004 to
    0.03 off), exactly on a stair's midpoint, or in between, drifting at 0 to 1e-3 nats per step; one-point
    stretches are spikes. Curves rest, slide, climb back onto H_0, stop between rungs, never get down."""
    levels = draw(ladders())
    mids = [(a + b) / 2 for a, b in zip(levels[:-1], levels[1:])]
    values, drifts, lengths = [], [], []
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(("level", "level", "midpoint", "between")))
        if kind == "level":
            value = draw(st.sampled_from(levels)) + draw(st.sampled_from((0.0, 0.004, -0.004, 0.009, -0.009, 0.015, -0.03)))
        elif kind == "midpoint":
            value = draw(st.sampled_from(mids))
        else:
            value = draw(st.floats(levels[-1] - 0.05, levels[0] + 0.05))
        values.append(value)
        drifts.append(0.0 if kind == "midpoint" else draw(st.sampled_from((0.0, 0.0, 3e-5, -3e-5, 8e-5, -2e-4, 1e-3))))
        lengths.append(draw(st.integers(1, 8)))
    T = sum(lengths)
    assume(T >= 2)
    steps = draw(step_grids(T))
    loss, at = torch.empty(T, dtype=torch.float64), 0
    for value, drift, n in zip(values, drifts, lengths):
        loss[at:at + n] = value + drift * (steps[at:at + n] - steps[at]).double()
        at += n
    for h in levels:  # no point exactly at the tolerance, no interval exactly at the flatness limit
        assume(float(((loss - h).abs() - TOL).abs().min()) > 1e-9)
    assume(float((loss.diff().abs() / steps.diff().double() - TOL / 100).abs().min()) > 1e-12)
    return steps, loss, levels


@st.composite
def phase_cells(draw) -> tuple:
    """(steps [T], losses [G, R, T], levels, min_rest) for set 08's cell labels: a G x R grid (1 to 3 each) of
    runs on one step grid, each made of 1 to 4 stretches: on H0 (or 0.004 to 0.009 off it), on a lower
    level, above H0, or in between, each flat or drifting; some runs go back to H0 after leaving it,
    some end there, a few hold a NaN or an infinite loss; min_rest from 5 to 50 steps. No record lies
    exactly 0.01 from H0 and no interval exactly at the flatness limit (the text decides neither)."""
    levels, T = draw(ladders()), draw(st.integers(3, 16))
    G, R = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    steps = draw(step_grids(T))
    losses = torch.empty(G, R, T, dtype=torch.float64)
    for i in range(G):
        for j in range(R):
            cuts = sorted(set(draw(st.lists(st.integers(1, T - 1), max_size=3))))
            for start, end in zip([0, *cuts], [*cuts, T]):
                kind = draw(st.sampled_from(("h0", "h0", "level", "above", "between")))
                value = {"h0": levels[0] + draw(st.sampled_from((0.0, 0.004, -0.004, 0.009, -0.009))),
                         "level": draw(st.sampled_from(levels[1:])), "above": levels[0] + draw(st.sampled_from((0.05, 0.3))),
                         "between": (levels[0] + levels[-1]) / 2}[kind]
                drift = draw(st.sampled_from((0.0, 0.0, 3e-5, -2e-4, 1e-3)))
                losses[i, j, start:end] = value + drift * (steps[start:end] - steps[start]).double()
            if draw(st.integers(0, 7)) == 0:
                losses[i, j, draw(st.integers(0, T - 1))] = draw(st.sampled_from((math.nan, math.inf)))
    finite = losses[torch.isfinite(losses)]
    assume(float(((finite - levels[0]).abs() - TOL).abs().min()) > 1e-9)
    slopes = losses.diff(dim=-1).abs() / steps.diff().double()
    finite_slopes = slopes[torch.isfinite(slopes)]
    assume(finite_slopes.numel() == 0 or float((finite_slopes - TOL / 100).abs().min()) > 1e-12)
    return steps, losses, levels, draw(st.sampled_from((5, 10, 25, 50)))


@st.composite
def wait_ensembles(draw) -> tuple:
    """(steps, losses [K, T], gammas [K], levels): 1 to 4 values of γ with 1 to 4 seeds each (unequal
    counts), runs in any order; a run rests just above the first midpoint until its onset (or never
    leaves), then sits near H_1, and may climb back. Onsets come from few points, so means tie often."""
    levels = draw(ladders())
    T = draw(st.integers(2, 10))
    steps = draw(step_grids(T))
    runs = []
    for gamma in draw(st.lists(st.sampled_from(GAMMAS), min_size=1, max_size=4, unique=True)):
        for _ in range(draw(st.integers(1, 4))):
            onset = draw(st.one_of(st.none(), st.integers(0, T - 1)))
            back = None if onset is None else draw(st.one_of(st.none(), st.integers(onset + 1, T)))
            runs.append((gamma, onset, back))
    runs = draw(st.permutations(runs))
    losses = torch.full((len(runs), T), levels[0] + 0.002, dtype=torch.float64)
    for k, (_, onset, back) in enumerate(runs):
        if onset is not None:
            losses[k, onset:back] = levels[1] + 0.003
    return steps, losses, [r[0] for r in runs], levels


@st.composite
def rung_inputs(draw) -> tuple:
    """(steps, curve, level): values on a grid of 1/64 (exact in float32), the level one of the values
    (touched), between two of them, or below all (never)."""
    T = draw(st.integers(2, 12))
    steps = draw(step_grids(T))
    values = draw(st.lists(st.integers(0, 64), min_size=T, max_size=T))
    level = draw(st.one_of(st.sampled_from(values).map(float), st.integers(-2, 130).map(lambda i: i / 2)))
    dtype = draw(st.sampled_from((torch.float32, torch.float64)))
    return steps, torch.tensor(values, dtype=dtype) / 64, level / 64


# --- embeddings, signatures and codes (sets 02, 13 and 14) -------------------------------------


def _partner(draw, g: torch.Generator, A: torch.Tensor, n: int, noise: float) -> torch.Tensor:
    """A matrix [V, n] beside A [V, m]: independent of it, a linear image of it plus ``noise`` times
    Gaussian noise, or A itself (then with A's m columns)."""
    kind = draw(st.sampled_from(("independent", "image", "same")))
    V, m = A.shape
    if kind == "image":
        return A @ torch.randn(m, n, generator=g, dtype=torch.float64) + noise * torch.randn(V, n, generator=g, dtype=torch.float64)
    return A.clone() if kind == "same" else torch.randn(V, n, generator=g, dtype=torch.float64)


@st.composite
def cka_inputs(draw) -> tuple:
    """(E [V, d], S [V, m]), V >= 3 (as the library asks): E independent of S, a noisy linear image of
    it, or S itself; each with its columns shifted by offsets up to 10 (or not) and scaled by 1e-3 to
    1e3; float64. Only pairs whose token-centred columns are not all zero (CKA defined) are kept."""
    V, d, m = draw(st.integers(3, 12)), draw(st.integers(1, 6)), draw(st.integers(1, 6))
    g = _generator(draw)
    S = torch.randn(V, m, generator=g, dtype=torch.float64)
    E = _partner(draw, g, S, d, noise=0.3)
    out = []
    for M in (E, S):
        if draw(st.booleans()):
            M = M + 10 * torch.rand(M.shape[1], generator=g, dtype=torch.float64)
        out.append(M * draw(st.sampled_from((1e-3, 1.0, 1e3))))
    E, S = out
    assume(all(float((M - M.mean(0)).norm()) > 1e-6 * float(M.norm()) for M in (E, S)))
    return E, S


@st.composite
def rotation_inputs(draw) -> tuple:
    """(E [V, d], seed) for set 02's random rotation: d = 2 to 8 axes to mix (the text asks that all of
    them be mixed, so d >= 2), V = 1 to 12 tokens (fewer tokens than axes, or E of lower rank, included),
    entries scaled by 1e-3 to 1e3 and shifted or not; float64, as the set's embeddings; any seed."""
    V, d = draw(st.integers(1, 12)), draw(st.integers(2, 8))
    g = _generator(draw)
    E = torch.randn(V, d, generator=g, dtype=torch.float64)
    if draw(st.booleans()):
        E[:, -1] = E[:, 0]  # a rank below d even when V >= d
    E = E * draw(st.sampled_from((1e-3, 1.0, 1e3))) + draw(st.sampled_from((0.0, 3.0)))
    return E, draw(st.integers(0, 10**6))


@st.composite
def baseline_inputs(draw) -> tuple:
    """(E, S, n, seed) for set 02's permutation baseline: an E, S pair as for CKA (V = 3 to 12), n = 1 to
    300 shuffles, any seed."""
    E, S = draw(cka_inputs())
    return E, S, draw(st.sampled_from((1, 2, 7, 50, 300))), draw(st.integers(0, 10**6))


def _unique_top_k(M: torch.Tensor, k: int) -> bool:
    """Each row's k cosine neighbours (itself excluded) are set apart from the next by a margin."""
    unit = M.double() / M.double().norm(dim=1, keepdim=True)
    sims = (unit @ unit.T).fill_diagonal_(-math.inf).sort(1, descending=True).values
    return k == M.shape[0] - 1 or bool((sims[:, k - 1] - sims[:, k] > 1e-6).all())


@st.composite
def knn_inputs(draw) -> tuple:
    """(A [V, m], B [V, n], k), 1 <= k < V: B independent of A, a noisy linear image of it, or A itself;
    each may hold equal or parallel rows (a copy scaled by 0.01 to 100); row norms spread or not;
    float32 or float64. Only inputs whose top-k sets are unique (no tie for the k-th place) are kept."""
    V = draw(st.integers(3, 10))
    k, m, n = draw(st.integers(1, V - 1)), draw(st.integers(1, 4)), draw(st.integers(1, 4))
    g = _generator(draw)
    A = torch.randn(V, m, generator=g, dtype=torch.float64)
    B = _partner(draw, g, A, n, noise=0.5)
    out = []
    for M in (A, B):
        for _ in range(draw(st.integers(0, 2))):
            i, j = draw(st.integers(0, V - 1)), draw(st.integers(0, V - 1))
            M[j] = draw(st.sampled_from((1.0, 0.01, 100.0))) * M[i]
        if draw(st.booleans()):
            M = M * torch.exp(1.5 * torch.randn(V, 1, generator=g, dtype=torch.float64))
        out.append(M)
    dtype = draw(st.sampled_from((torch.float32, torch.float64)))
    A, B = out[0].to(dtype), out[1].to(dtype)
    assume(_unique_top_k(A, k) and _unique_top_k(B, k))
    return A, B, k


@st.composite
def code_sizes(draw) -> tuple:
    """(vocab_size, d): V from 1 up (powers of two and V = 1, 2 often), d from ⌈log₂V⌉ (1 for V <= 2)."""
    V = draw(st.one_of(st.sampled_from((1, 2, 3, 4, 8, 16, 32, 64, 128, 256)), st.integers(1, 300)))
    return V, code_width(V) + draw(st.integers(0, 20))


# --- token streams, KL records and model outputs (set 09) ------------------------------------------


@st.composite
def bigram_inputs(draw) -> tuple:
    """(tokens [n], V, alpha), n >= 2: streams over V = 1 to 8 ids, some ids never seen or seen only as
    the last token (no successor), repeats and runs of one id; alpha from 1e-3 to 2.5."""
    V = draw(st.integers(1, 8))
    tokens = draw(st.lists(st.integers(0, V - 1), min_size=2, max_size=40))
    if V > 1 and draw(st.booleans()):  # the last token occurs nowhere else: its row has no counts
        tokens = [t for t in tokens if t != V - 1] + [V - 1]
        assume(len(tokens) >= 2)
    return torch.tensor(tokens), V, draw(st.sampled_from((1e-3, 0.1, 0.5, 1.0, 2.5)))


@st.composite
def kl_records(draw) -> tuple:
    """(steps [T], kl [K, T]): T = 1 to 12 recorded steps, strictly increasing, evenly spaced from 0 or
    not; K = 1 to 4 models; KL values on a coarse grid, so that a model's smallest KL is often reached
    at several recorded steps."""
    T, K = draw(st.integers(1, 12)), draw(st.integers(1, 4))
    steps = draw(step_grids(T))
    values = draw(st.lists(st.sampled_from((0.0, 0.05, 0.1, 0.3, 1.0, 2.5)), min_size=K * T, max_size=K * T))
    return steps, torch.tensor(values, dtype=torch.float64).reshape(K, T)


@st.composite
def kl_inputs(draw) -> tuple:
    """(logits [N, T, V], table [V, V], x [N, T]) for set 09's KL: N, T = 1 to 5 and V = 1 to 6; logits
    at a scale from 1e-3 (near uniform) to 8 (near one-hot), in float32 or float64; the table's rows
    strictly positive probability rows, near uniform or peaked; x any ids."""
    N, T, V = draw(st.integers(1, 5)), draw(st.integers(1, 5)), draw(st.integers(1, 6))
    g = _generator(draw)
    logits = draw(st.sampled_from((1e-3, 0.5, 2.0, 8.0))) * torch.randn(N, T, V, generator=g, dtype=torch.float64)
    table = torch.softmax(draw(st.sampled_from((0.1, 1.0, 4.0))) * torch.randn(V, V, generator=g, dtype=torch.float64), -1)
    x = torch.randint(0, V, (N, T), generator=g)
    dtype = draw(st.sampled_from((torch.float32, torch.float64)))
    return logits.to(dtype), table.to(dtype), x


# --- mode strengths over training (set 05) -------------------------------------------------------


@st.composite
def switch_on_inputs(draw) -> tuple:
    """(steps [T], strengths [T, r], level) for set 05's switch-on order: T = 1 to 12 recorded steps on
    any grid; r = 1 to 5 modes; signed strengths on a coarse grid of multiples of the level, so that
    modes often reach the level at the same record, sit exactly on it (the text decides: that counts),
    reach it only at the first or the last record, dip back below it, or never reach it; float32 or
    float64."""
    T, r = draw(st.integers(1, 12)), draw(st.integers(1, 5))
    level = draw(st.sampled_from((0.5, 0.1, 2.0)))
    units = draw(st.lists(st.sampled_from((0.0, 0.3, 0.9, 1.0, 1.2, 3.0, -1.0, -2.0)), min_size=T * r, max_size=T * r))
    strengths = level * torch.tensor(units, dtype=torch.float64).reshape(T, r)
    return draw(step_grids(T)), strengths.to(draw(st.sampled_from((torch.float32, torch.float64)))), level


@st.composite
def growth_inputs(draw) -> tuple:
    """(steps [T], a [T], start, stop) for set 05's growth rate: T = 3 to 40 recorded steps on any grid;
    a = ±a0 e^{rate (t - t0)} with rate from -0.3 to 0.5 per step (scaled so that ln|a| changes by at
    most 30 over the run) and noise of 0 to 5%; a window holding at least two recorded steps whose ends
    lie on recorded steps or between them; float32 or float64."""
    T = draw(st.integers(3, 40))
    steps = draw(step_grids(T))
    t = steps.double()
    span = float(t[-1] - t[0])
    rate = draw(st.sampled_from((-0.3, -0.01, 0.002, 0.05, 0.2, 0.5)))
    rate = rate if abs(rate) * span <= 30 else math.copysign(30 / span, rate)
    g = _generator(draw)
    noise = draw(st.sampled_from((0.0, 0.01, 0.05)))
    a = draw(st.sampled_from((1e-4, 0.3))) * torch.exp(rate * (t - t[0])) * (1 + noise * torch.randn(T, generator=g, dtype=torch.float64))
    a = a * draw(st.sampled_from((1.0, -1.0)))
    i = draw(st.integers(0, T - 2))
    j = draw(st.integers(i + 1, T - 1))
    start = float(t[i]) - (0.5 * float(t[i] - t[i - 1]) if i > 0 and draw(st.booleans()) else 0.0)
    stop = float(t[j]) + (0.5 * float(t[j + 1] - t[j]) if j < T - 1 and draw(st.booleans()) else 0.0)
    return steps, a.to(draw(st.sampled_from((torch.float32, torch.float64)))), start, stop


# --- pair terms (set 06) -------------------------------------------------------------------------


@st.composite
def residual_inputs(draw) -> tuple:
    """(data, probs, i, j) for set 06's residual table: a small Dataset of L = 2 or 3 positions, model
    predictions probs [N, C] (softmax rows of any sharpness, float32 or float64) and i ≠ j in either order."""
    data, i, j = draw(pair_inputs())
    g = _generator(draw)
    logits = draw(st.sampled_from((0.1, 1.0, 5.0))) * torch.randn(data.n, data.n_labels, generator=g, dtype=torch.float64)
    return data, torch.softmax(logits, -1).to(draw(st.sampled_from((torch.float32, torch.float64)))), i, j


@st.composite
def pair_term_tasks(draw) -> tuple:
    """(data,) for set 06's next pairs: ``pair_term_population`` of L = 2 to 4 positions over V = 2 or 3
    tokens, uniform weights or independent per-position weights, with 0 to 2 single-position terms and
    0 to 3 pair terms on pairs drawn anywhere, adjacent or not; a pair term's weight from 1e-3 up, well
    above the text's tolerance of about 1e-6, so the pairs that interact are exactly the drawn ones."""
    L, V = draw(st.integers(2, 4)), draw(st.integers(2, 3))
    pairs = [(i, j) for i in range(L) for j in range(i + 1, L)]
    chosen = draw(st.lists(st.sampled_from(pairs), max_size=3, unique=True))
    terms = [(p, draw(st.sampled_from((1e-3, 0.2, 0.3)))) for p in chosen]
    terms += [((i,), 0.15) for i in draw(st.lists(st.integers(0, L - 1), max_size=2))]
    weights = None if draw(st.booleans()) else [draw(st.lists(st.sampled_from((0.2, 1.0, 3.0)), min_size=V, max_size=V))
                                                for _ in range(L)]
    return (pair_term_population(L, V, terms, weights),)


# --- attention weights over training (set 07) ----------------------------------------------------


@st.composite
def leave_inputs(draw) -> tuple:
    """(steps [T], weights [K, T], seq_len[, tol]) for set 07's detector: T = 1 to 16 recorded steps,
    strictly increasing, from 0 or not, evenly spaced or not; K = 1 to 4 models; L = 2 to 8; tol given
    (1e-4 to 0.2) or left at its default 0.01. Each weight lies a drawn number of tolerances from 1/L,
    above or below, inside the band or outside it, never within 5% of its edge; float32 or float64."""
    T, K, L = draw(st.integers(1, 16)), draw(st.integers(1, 4)), draw(st.integers(2, 8))
    given = draw(st.booleans())
    tol = draw(st.sampled_from((1e-4, 0.003, 0.02, 0.05, 0.2))) if given else 0.01
    steps = draw(step_grids(T))
    units = draw(st.lists(st.sampled_from((0.0, 0.3, -0.6, 0.95, -0.95, 1.05, -1.05, 1.5, -2.0, 4.0)),
                          min_size=K * T, max_size=K * T))
    offsets = tol * torch.tensor(units, dtype=torch.float64).reshape(K, T)
    offsets = offsets.clamp(-1.0 / L, 1.0 - 1.0 / L)  # attention weights stay in [0, 1]
    assume(bool(((offsets.abs() - tol).abs() > 0.05 * tol).all()))
    weights = (1.0 / L + offsets).to(draw(st.sampled_from((torch.float32, torch.float64))))
    return (steps, weights, L, tol) if given else (steps, weights, L)


@st.composite
def parallel_signatures(draw) -> tuple:
    """(pi_a, pi_b, q_a, q_b) for set 04's update ratio: C = 2 to 6 labels, q_a - u and q_b - u along one
    drawn direction (strengths from a tenth of the way to the simplex's edge up to the edge itself, where
    a label's probability is 0), frequencies from 0.02 to 0.9; float32 signatures, as the check passes."""
    C = draw(st.integers(2, 6))
    direction = torch.randn(C, generator=_generator(draw), dtype=torch.float64)
    direction = direction - direction.mean()
    assume(float(direction.abs().max()) > 1e-3)
    edge = float((1.0 / C) / (-direction).clamp_min(1e-12).max())  # u + edge * direction touches a face
    u = torch.full((C,), 1.0 / C, dtype=torch.float64)
    qa, qb = (u + draw(st.sampled_from((0.1, 0.3, 0.6, 1.0))) * edge * direction for _ in range(2))
    pa, pb = (draw(st.sampled_from((0.02, 0.1, 0.25, 0.5, 0.9))) for _ in range(2))
    return pa, pb, qa.clamp_min(0).float(), qb.clamp_min(0).float()


@st.composite
def signature_tables(draw) -> tuple:
    """(data, d, orders, norm) for set 11's signature table: a small dataset (L = 1 to 3, tokens absent
    or repeated, uniform or random row weights), a non-empty set of its orders, d = 1 to 6 (below, at or
    above the rank), a norm from 0.1 to 10. Left out: rows that do not vary (the table is then zero and
    no norm can be set) and a tie between the d-th and the next singular value (the top d are not unique)."""
    from ctxlab.signatures import label_signature

    data = draw(datasets())
    orders = draw(st.lists(st.integers(1, data.x.shape[1]), min_size=1, max_size=data.x.shape[1], unique=True))
    d, norm = draw(st.integers(1, 6)), draw(st.sampled_from((0.1, 1.0, 3.0, 10.0)))
    S = torch.cat([label_signature(data, k, "incremental").matrix.double() for k in orders], dim=1)
    sv = torch.linalg.svdvals(S - S.mean(0))
    assume(float(sv[0]) > 1e-6)
    assume(d >= sv.numel() or float(sv[d - 1] - sv[d]) > 1e-3 * float(sv[0]))
    return data, d, sorted(orders) if draw(st.booleans()) else orders, norm


@st.composite
def first_layer_inputs(draw) -> tuple:
    """(E [V, d], W1 [L*d, hidden], positions [V]) for set 14's first-layer rows: V = 1 to 8 tokens, d = 1 to
    5, L = 1 to 4 positions (some unused), hidden = 1 to 6; each token at any position, in any order;
    entries at scale 1e-3 to 10; float32 or float64."""
    V, d, L, hidden = draw(st.integers(1, 8)), draw(st.integers(1, 5)), draw(st.integers(1, 4)), draw(st.integers(1, 6))
    g = _generator(draw)
    dtype = draw(st.sampled_from((torch.float32, torch.float64)))
    E = draw(st.sampled_from((1e-3, 1.0, 10.0))) * torch.randn(V, d, generator=g, dtype=torch.float64)
    W1 = torch.randn(L * d, hidden, generator=g, dtype=torch.float64)
    positions = torch.tensor(draw(st.lists(st.integers(0, L - 1), min_size=V, max_size=V)))
    return E.to(dtype), W1.to(dtype), positions


@st.composite
def span_inputs(draw) -> tuple:
    """(M [V, h], S [V, m]) for set 14's share inside a signature's span: V = 3 to 12 tokens, h and m = 1 to
    6; S of full column rank or not (a repeated or combined column, a constant column that centring
    zeroes), shifted by an offset or not; M partly inside the span of the centred S, partly outside, at
    scale 1e-3 to 1e3; float32 or float64."""
    V, h, m = draw(st.integers(3, 12)), draw(st.integers(1, 6)), draw(st.integers(1, 6))
    g = _generator(draw)
    S = torch.randn(V, m, generator=g, dtype=torch.float64)
    if m > 1:
        deficiency = draw(st.sampled_from(("none", "repeated", "combined", "constant")))
        if deficiency == "repeated":
            S[:, -1] = S[:, 0]
        elif deficiency == "combined":
            S[:, -1] = S[:, 0] - 2 * S[:, 1 % (m - 1)]
        elif deficiency == "constant":
            S[:, -1] = 3.0
    S = S + draw(st.sampled_from((0.0, 4.0)))
    Sc = S - S.mean(0)
    assume(float(Sc.norm()) > 1e-6)
    inside = Sc @ torch.randn(m, h, generator=g, dtype=torch.float64)
    M = inside + draw(st.sampled_from((0.0, 0.3, 3.0))) * torch.randn(V, h, generator=g, dtype=torch.float64)
    M = draw(st.sampled_from((1e-3, 1.0, 1e3))) * (M + draw(st.sampled_from((0.0, 2.0))))
    assume(float((M - M.mean(0)).norm()) > 1e-9 * float(M.abs().max()))
    dtype = draw(st.sampled_from((torch.float32, torch.float64)))
    return M.to(dtype), S.to(dtype)


@st.composite
def phase_maps(draw) -> tuple:
    """(gammas, lrs, plateau [G, R]) for set 08's corner: G = 2 to 6 values of γ and R = 2 to 7 learning rates,
    each listed from small to large or the other way; rests drawn per cell (any shape, not only the
    lesson's); 0 to 2 columns with diverged runs (NaN) in some or all of their rows, at least one column
    left stable. Edge means never tie within 1e-6 (the text does not say which edge a tie picks)."""
    G, R = draw(st.integers(2, 6)), draw(st.integers(2, 7))
    gammas = sorted(draw(st.lists(st.sampled_from(GAMMAS), min_size=G, max_size=G, unique=True)))
    lrs = sorted(draw(st.lists(st.sampled_from((0.125, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0)), min_size=R, max_size=R, unique=True)))
    gammas, lrs = (values[::-1] if draw(st.booleans()) else values for values in (gammas, lrs))
    plateau = torch.tensor(draw(st.lists(st.integers(0, 400), min_size=G * R, max_size=G * R)), dtype=torch.float64).reshape(G, R)
    for j in draw(st.lists(st.integers(0, R - 1), max_size=2, unique=True)):
        rows = draw(st.lists(st.integers(0, G - 1), min_size=1, max_size=G, unique=True))
        plateau[rows, j] = math.nan
    stable = [j for j in range(R) if not bool(plateau[:, j].isnan().any())]
    assume(stable)
    kept = plateau[:, stable]
    assume(abs(float(kept[0].mean() - kept[-1].mean())) > 1e-6)
    assume(len(stable) == 1 or abs(float(kept[:, 0].mean() - kept[:, -1].mean())) > 1e-6)  # one column: no choice
    return gammas, lrs, plateau


@st.composite
def code_scalings(draw) -> tuple:
    """(codes [V, w], learned [..., V, d]) for set 14's scaled codes: V = 1 to 12 tokens, ±1 or 0/1 codes (tiled
    or not, shuffled or not) of width 1 to 8, or any table; one learned table or an ensemble of 1 to 3 (or
    a 2 x 2 grid) of width 1 to 8, its rows of different sizes, at scale 1e-4 to 10, centred or not;
    float32 or float64 each."""
    from ctxlab.fixed_codes import binary_codes

    V, d = draw(st.integers(1, 12)), draw(st.integers(1, 8))
    w = draw(st.integers(code_width(V), 8))  # every bit of an id appears at least once
    g = _generator(draw)
    kind = draw(st.sampled_from(("signed", "unsigned", "shuffled", "any")))
    if kind == "any":
        codes = torch.randn(V, w, generator=g, dtype=torch.float64)
    else:
        codes = binary_codes(V, w, signed=kind != "unsigned", shuffle_seed=0 if kind == "shuffled" else None).double()
    assume(float(codes.abs().max()) > 0)
    lead = draw(st.sampled_from(((), (1,), (2,), (3,), (2, 2))))
    rows = torch.rand(*lead, V, 1, generator=g, dtype=torch.float64) * 3 + 0.1  # rows of different sizes
    learned = draw(st.sampled_from((1e-4, 0.03, 1.0, 10.0))) * rows * torch.randn(*lead, V, d, generator=g, dtype=torch.float64)
    learned = learned + draw(st.sampled_from((0.0, 0.05)))
    assume(float(learned.abs().max()) > 0)
    return (codes.to(draw(st.sampled_from((torch.float32, torch.float64)))),
            learned.to(draw(st.sampled_from((torch.float32, torch.float64)))))


@st.composite
def attention_models(draw) -> tuple:
    """(model, x) for set 07's uniform-attention output: an EmbAttention ensemble of K = 1 to 3 models
    (gammas and seeds drawn, d_head = d or smaller), V = 2 to 9 tokens, L = 1 to 6 positions, d = 2 to 8,
    and N = 1 to 12 sequences of random tokens (so a token id and its position differ); float32 or float64."""
    from ctxlab.models import EmbAttention

    K, V, L = draw(st.integers(1, 3)), draw(st.integers(2, 9)), draw(st.integers(1, 6))
    d = draw(st.sampled_from((2, 4, 8)))
    gammas = draw(st.lists(st.sampled_from((0.5, 1.0, 1.5)), min_size=K, max_size=K))
    seeds = draw(st.lists(st.integers(0, 50), min_size=K, max_size=K))
    model = EmbAttention(V, L, draw(st.integers(2, 4)), d=d, d_head=draw(st.sampled_from((None, max(1, d // 2)))),
                         hidden=4, gamma=gammas, seed=seeds).to(draw(st.sampled_from((torch.float32, torch.float64))))
    x = torch.randint(0, V, (draw(st.integers(1, 12)), L), generator=_generator(draw))
    return model, x


# --- embedding tables (set 08) -------------------------------------------------------------------


@st.composite
def layernorm_tables(draw) -> tuple:
    """(E [V, d],) for set 08's LayerNorm norms: V = 1 to 12 rows, d = 1 to 64 coordinates; entries at a
    scale from 1e-5 (variance far below LayerNorm's epsilon) to 10, shifted by a shared offset or not;
    a constant row (zero variance) and a repeated row drawn on purpose; float32 or float64."""
    V, d = draw(st.integers(1, 12)), draw(st.integers(1, 64))
    E = draw(st.sampled_from((1e-5, 1e-3, 0.03, 1.0, 10.0))) * torch.randn(V, d, generator=_generator(draw), dtype=torch.float64)
    E = E + draw(st.sampled_from((0.0, 0.05, -3.0)))
    if draw(st.booleans()):
        E[0] = E[0, 0]
    if V > 1 and draw(st.booleans()):
        E[-1] = E[0]
    return (E.to(draw(st.sampled_from((torch.float32, torch.float64)))),)


# --- races of conditions over seeds (set 11) -----------------------------------------------------


@st.composite
def race_inputs(draw) -> tuple:
    """(runs, levels) for set 11's finishing order: 1 to 4 conditions, on one shared step grid or each on
    its own (T = 10 to 60 records, from 0 or not, even or not), each with its own number of seeds (1 to
    4); each seed's loss drops from level to level (``race_curves``), the last drop at a share of the run
    drawn from a coarse set, so that means tie, single seeds stand out, and some seeds never get
    halfway down the last stair."""
    names = draw(st.lists(st.sampled_from(("signature", "random", "learned", "zeta", "alpha", "b")), min_size=1,
                          max_size=4, unique=True))
    shared = draw(step_grids(draw(st.integers(10, 60)))) if draw(st.booleans()) else None
    runs = {}
    for name in names:
        steps = shared if shared is not None else draw(step_grids(draw(st.integers(10, 60))))
        start, span = float(steps[0]), float(steps[-1] - steps[0])
        lasts = draw(st.lists(st.sampled_from((0.35, 0.5, 0.65, 0.8, math.inf)), min_size=1, max_size=4))
        runs[name] = (steps, race_curves(steps, [(start + 0.1 * span, start + 0.2 * span, start + f * span) for f in lasts]))
    return runs, RACE_LEVELS


# --- embeddings along a value line (set 12) ------------------------------------------------------


@st.composite
def line_up_inputs(draw) -> tuple:
    """(E [V, d], tokens [n], values [n]) for set 12's line-up share: n = 3 to 10 distinct token ids in
    any order among V = n to 14, d = 1 to 8; the tokens' rows near a line indexed by the values, or
    random, around a mean far from 0 or not; values integers or not, repeated or not, never all equal;
    float32 or float64."""
    n = draw(st.integers(3, 10))
    V, d = draw(st.integers(n, 14)), draw(st.integers(1, 8))
    g = _generator(draw)
    tokens = torch.randperm(V, generator=g)[:n]
    values = torch.tensor(draw(st.lists(st.sampled_from((-3.0, -1.0, 0.0, 0.5, 2.0, 7.0)), min_size=n, max_size=n)),
                          dtype=torch.float64)
    assume(float(values.std()) > 0)
    E = torch.randn(V, d, generator=g, dtype=torch.float64)
    if draw(st.booleans()):  # near a line: (value - mean) * b plus noise
        b = torch.randn(d, generator=g, dtype=torch.float64)
        E[tokens] = values[:, None] * b + draw(st.sampled_from((0.0, 0.1, 1.0))) * torch.randn(n, d, generator=g, dtype=torch.float64)
    E = E + draw(st.sampled_from((0.0, 5.0)))
    assume(float((E[tokens] - E[tokens].mean(0)).norm()) > 1e-6)
    return E.to(draw(st.sampled_from((torch.float32, torch.float64)))), tokens, values


# --- loss at matched levels (set 13) -------------------------------------------------------------


@st.composite
def matched_loss_inputs(draw) -> tuple:
    """(steps [K, T], loss [K, T], target) for set 13's first step at or below a loss: K = 1 to 4 models,
    each on its own strictly increasing grid of T = 1 to 10 records (from 0 or not, even or not); losses
    on a coarse grid around the target, exactly on it (the text decides: that counts), a hair above it
    (that does not), above it throughout, NaN where a model diverged; float32 or float64."""
    K, T = draw(st.integers(1, 4)), draw(st.integers(1, 10))
    steps = torch.stack([draw(step_grids(T)) for _ in range(K)])
    target = draw(st.sampled_from((0.5, 0.375, 1.25)))  # exact in float32 too: "on the target" means one thing
    units = draw(st.lists(st.sampled_from((2.0, 1.5, 1.001, 1.0, 0.8, 0.0, math.nan)), min_size=K * T, max_size=K * T))
    loss = target * torch.tensor(units, dtype=torch.float64).reshape(K, T)
    return steps, loss.to(draw(st.sampled_from((torch.float32, torch.float64)))), target


# --- sigmoid curves (set 15) ---------------------------------------------------------------------


@st.composite
def sigmoid_inputs(draw) -> tuple:
    """((steps, curve), truth [floor, drop, ln tau, width]): an exact sigmoid in log-step (or with noise of
    0.2 % of its drop: a fit cannot recover a width from noise that rivals the drop) on log-spaced steps, falling or rising by 0.05 to 0.8, width 0.08 to 0.6, its midpoint tau
    anywhere that leaves at least 18% of the change (1.5 widths) on either side of the recorded steps
    and at least 4 recorded steps within 2 widths of it (a sharper step than the grid has no width)."""
    last, n = draw(st.sampled_from((300, 1000, 2000, 5000, 20000))), draw(st.sampled_from((40, 70, 100)))
    steps = torch.tensor(log_spaced_steps(last, n), dtype=torch.float64)
    floor = draw(st.floats(0.0, 1.0))
    drop = draw(st.sampled_from((-1.0, 1.0))) * draw(st.floats(0.05, 0.8))
    width = draw(st.floats(0.08, 0.6))
    lo, hi = math.log(float(steps[0])) + 1.5 * width, math.log(last) - 1.5 * width
    log_tau = lo + draw(st.floats(0.0, 1.0)) * (hi - lo)
    assume(int(((steps.log() - log_tau).abs() <= 2 * width).sum()) >= 4)
    curve = sigmoid_curve(steps, torch.tensor(floor), torch.tensor(drop), torch.tensor(math.exp(log_tau)), torch.tensor(width))
    if draw(st.booleans()):
        curve = curve + 2e-3 * abs(drop) * torch.randn(steps.numel(), generator=_generator(draw), dtype=torch.float64)
    return (steps, curve), torch.tensor([floor, drop, log_tau, width], dtype=torch.float64)


# --- update sizes against frequency (set 16) ------------------------------------------------------


@st.composite
def loglog_inputs(draw) -> tuple:
    """(frequency [n], size [n]) for set 16's log-log slope: n = 2 to 12 positive frequencies in any order,
    some repeated but never all equal, spanning up to four decades; size = scale · π^p with p from -1
    to 2, multiplicative noise of 0 to 30% and a scale from 1e-4 to 300; float32 or float64."""
    n = draw(st.integers(2, 12))
    g = _generator(draw)
    freq = torch.tensor(draw(st.lists(st.sampled_from((1e-4, 0.002, 0.01, 0.05, 0.2, 0.5, 1.0)), min_size=n, max_size=n)),
                        dtype=torch.float64)
    assume(float(freq.max() / freq.min()) > 1)
    power = draw(st.sampled_from((-1.0, 0.0, 0.6, 1.0, 2.0)))
    noise = draw(st.sampled_from((0.0, 0.05, 0.3)))
    size = draw(st.sampled_from((1e-4, 1.0, 300.0))) * freq ** power * torch.exp(noise * torch.randn(n, generator=g, dtype=torch.float64))
    dtype = draw(st.sampled_from((torch.float32, torch.float64)))
    return freq.to(dtype), size.to(dtype)


_MOVES = st.sampled_from((0.0, 1e-3, 1.0, 10.0))  # how far one piece of a token's parameters moves


@st.composite
def update_pairs(draw) -> tuple:
    """(before, after) for set 16's update size per token: a ReinjectedMLP ensemble of K = 1 to 3 models with
    V = 1 to 8 tokens and 0 to 3 tables, and a copy with its embedding and each table moved by its own
    scale (0, 1e-3, 1 or 10: a piece that did not move, or one far larger than the rest), the other weights
    moved too; tokens 0 and 1 given equal rows before and after, or not; float32 or float64."""
    from ctxlab.token_identity import ReinjectedMLP

    K, V, n_tables = draw(st.integers(1, 3)), draw(st.integers(1, 8)), draw(st.integers(0, 3))
    seeds = draw(st.lists(st.integers(0, 50), min_size=K, max_size=K))
    before = ReinjectedMLP(V, draw(st.integers(1, 3)), draw(st.integers(2, 3)), d=draw(st.integers(1, 6)),
                           hidden=draw(st.integers(2, 8)), n_tables=n_tables, gamma=draw(st.sampled_from((0.5, 1.0))),
                           seed=seeds).to(draw(st.sampled_from((torch.float32, torch.float64))))
    after = copy.deepcopy(before)
    g = _generator(draw)
    with torch.no_grad():
        for name, p in after.named_parameters():
            p.add_(0.1 * torch.randn(p.shape, generator=g, dtype=torch.float64).to(p.dtype))
        after.embedding.copy_(before.embedding + draw(_MOVES) * (after.embedding - before.embedding))
        for j in range(n_tables):
            after.tables[:, j] = before.tables[:, j] + draw(_MOVES) * (after.tables[:, j] - before.tables[:, j])
        if V > 1 and draw(st.booleans()):
            for model in (before, after):
                model.embedding[:, 1] = model.embedding[:, 0]
                if n_tables:
                    model.tables[:, :, 1] = model.tables[:, :, 0]
    return before, after


# --- token streams and embeddings (set 10) -------------------------------------------------------


@st.composite
def stream_inputs(draw) -> tuple:
    """(tokens [n], V) for set 10's bigram signature, n >= 2: streams over V = 1 to 8 ids, some ids never
    seen, one seen only first (no predecessor) or only last (no successor), repeats and runs of one id."""
    V = draw(st.integers(1, 8))
    tokens = draw(st.lists(st.integers(0, V - 1), min_size=2, max_size=40))
    if V > 1 and draw(st.booleans()):  # an id that occurs only at one end of the stream
        end = draw(st.sampled_from((0, V - 1)))
        rest = [t for t in tokens if t != end]
        tokens = [end] + rest if draw(st.booleans()) else rest + [end]
        assume(len(tokens) >= 2)
    return torch.tensor(tokens), V


@st.composite
def bin_alignment_inputs(draw) -> tuple:
    """(E [V, d], S [V, m], frequency [V], lo, hi) for set 10's alignment inside a frequency bin: V = 4 to
    24 tokens, frequencies distinct, or integer counts with ties (across the bin's edges too), or a few
    values repeated; a bin of 3 ranks or more anywhere, the whole vocabulary included; E independent of
    S or a noisy image of it, shifted or not; float32 or float64. Bins whose rows are constant are left out."""
    V = draw(st.integers(4, 24))
    g = _generator(draw)
    kind = draw(st.sampled_from(("distinct", "counts", "few values")))
    if kind == "distinct":
        frequency = torch.rand(V, generator=g, dtype=torch.float64)
    elif kind == "counts":
        frequency = torch.randint(0, draw(st.integers(2, 8)), (V,), generator=g).double()
    else:
        frequency = torch.tensor(draw(st.lists(st.sampled_from((0.5, 0.25, 0.125)), min_size=V, max_size=V)), dtype=torch.float64)
    lo = draw(st.integers(0, V - 3))
    hi = draw(st.integers(lo + 3, V))
    S = torch.randn(V, draw(st.integers(1, 6)), generator=g, dtype=torch.float64)
    E = _partner(draw, g, S, draw(st.integers(1, 6)), noise=0.5) + draw(st.sampled_from((0.0, 3.0)))
    order = sorted(range(V), key=lambda i: (-float(frequency[i]), i))[lo:hi]
    assume(all(float((M[order] - M[order].mean(0)).norm()) > 1e-6 * float(M[order].norm()) for M in (E, S)))
    dtype = draw(st.sampled_from((torch.float32, torch.float64)))
    return E.to(dtype), S.to(dtype), frequency.to(dtype), lo, hi


@st.composite
def reconstruction_inputs(draw) -> tuple:
    """(mean_curve [T], fitted [N, T], weights [N]) for set 15's rebuild: T = 3 to 40 records, N = 1 to 8
    curves (sigmoid-like or any), probabilities summing to 1 (equal or not, some tiny), a measured mean
    equal to the rebuild, noisy or shifted by a constant; float32 or float64; the mean curve varies."""
    T, N = draw(st.integers(3, 40)), draw(st.integers(1, 8))
    g = _generator(draw)
    t = torch.linspace(0, 1, T, dtype=torch.float64)
    if draw(st.booleans()):
        fitted = 0.3 + 0.4 * torch.sigmoid(-(t[None] - torch.rand(N, 1, generator=g, dtype=torch.float64)) * 12)
    else:
        fitted = torch.rand(N, T, generator=g, dtype=torch.float64)
    raw = torch.ones(N, dtype=torch.float64) if draw(st.booleans()) else torch.rand(N, generator=g, dtype=torch.float64) + 1e-3
    weights = raw / raw.sum()
    mean = weights @ fitted + draw(st.sampled_from((0.0, 0.01, 0.2))) * torch.randn(T, generator=g, dtype=torch.float64)
    mean = mean + draw(st.sampled_from((0.0, 0.02, -0.5)))
    assume(float((mean - mean.mean()).pow(2).sum()) > 1e-6)
    dtype = draw(st.sampled_from((torch.float32, torch.float64)))
    return mean.to(dtype), fitted.to(dtype), weights.to(dtype)


@st.composite
def gain_inputs(draw) -> tuple:
    """(without [K, V], with_tables [K, V], data, edges, position) for set 16's gain per frequency bin: a
    small dataset (uniform or random row weights; tokens absent at the position), any position, 2 to 5
    increasing edges on a grid of sixteenths (so a frequency can lie on an edge exactly), 0 and 1
    included or not, so that bins can be empty and tokens can fall outside every bin; K = 1 to 3 models
    with positive update sizes; float32 or float64."""
    data = draw(datasets(max_len=3, max_vocab=6))
    position = draw(st.integers(0, data.seq_len - 1))
    edges = sorted(draw(st.sets(st.integers(0, 16), min_size=2, max_size=5)))
    K, V = draw(st.integers(1, 3)), data.vocab_size
    g = _generator(draw)
    without = torch.rand(K, V, generator=g, dtype=torch.float64) + 0.01
    with_tables = without * (0.5 + 20 * torch.rand(K, V, generator=g, dtype=torch.float64))
    dtype = draw(st.sampled_from((torch.float32, torch.float64)))
    return without.to(dtype), with_tables.to(dtype), data, [e / 16 for e in edges], position


@st.composite
def leader_inputs(draw) -> tuple:
    """(steps [T], margins {name: [K, T]}, from_step, by) for set 09's leading signature: T = 1 to 8 records
    on any step grid, K = 1 to 3 models, 2 to 4 signatures; from_step on a recorded step, between two, or
    at or before the first. Margins are multiples of by / 4 (exact in float32), so a lead of exactly by is
    drawn on purpose; per model a drawn signature leads every record, by a drawn multiple, or none is
    made to; negative margins too; float32 or float64 curves."""
    T, K, n_sig = draw(st.integers(1, 8)), draw(st.integers(1, 3)), draw(st.integers(2, 4))
    steps = draw(step_grids(T))
    by = draw(st.sampled_from((0.0625, 0.125, 0.25)))
    units = torch.tensor(draw(st.lists(st.integers(-4, 8), min_size=n_sig * K * T, max_size=n_sig * K * T)),
                         dtype=torch.float64).reshape(n_sig, K, T)
    for k in range(K):
        leader = draw(st.integers(-1, n_sig - 1))  # -1: nobody made to lead
        if leader >= 0:
            others = torch.cat([units[:leader, k], units[leader + 1:, k]]).amax(0)
            units[leader, k] = others + torch.tensor(draw(st.lists(st.sampled_from((1, 4, 5, 8)), min_size=T, max_size=T)),
                                                     dtype=torch.float64)
    i = draw(st.integers(0, T - 1))
    from_step = float(steps[i]) - draw(st.sampled_from((0.0, 0.5))) * (float(steps[i] - steps[i - 1]) if i else 1.0)
    names = ["unigram", "bigram", "trigram", "4-gram"][:n_sig]
    dtype = draw(st.sampled_from((torch.float32, torch.float64)))
    return steps, {n: (by / 4 * units[j]).to(dtype) for j, n in enumerate(names)}, from_step, by


@st.composite
def margin_inputs(draw) -> tuple:
    """(embeddings [K, T, V, d], signature [V, m], perms [n, V]) for set 09's band margins: K = 1 or 2 models,
    T = 2 to 5 records, V = 3 to 10 tokens, m and d = 1 to 6; a displacement along the signature or
    not, an init small or large next to it, a record that has not moved from record 0 (or not); 1 to 6
    shuffles, the identity among them or not; float32 or float64. Signatures whose columns do not vary
    over the tokens are left out (CKA needs a varying S)."""
    K, T, V = draw(st.integers(1, 2)), draw(st.integers(2, 5)), draw(st.integers(3, 10))
    m, d = draw(st.integers(1, 6)), draw(st.integers(1, 6))
    g = _generator(draw)
    S = torch.rand(V, m, generator=g, dtype=torch.float64)
    assume(float((S - S.mean(0)).norm()) > 1e-6)
    along = draw(st.booleans())
    step = (S - S.mean(0)) @ torch.randn(m, d, generator=g, dtype=torch.float64) if along else torch.zeros(V, d, dtype=torch.float64)
    moves = torch.cumsum(torch.randn(K, T, V, d, generator=g, dtype=torch.float64) * draw(st.sampled_from((0.1, 1.0)))
                         + step, dim=1)
    moves = moves - moves[:, :1]  # no displacement at record 0
    if T > 2 and draw(st.booleans()):
        moves[:, 1] = 0.0  # a record that has not moved from record 0
    E = draw(st.sampled_from((0.01, 3.0))) * torch.randn(K, 1, V, d, generator=g, dtype=torch.float64) + moves
    perms = torch.stack([torch.randperm(V, generator=g) for _ in range(draw(st.integers(1, 6)))])
    if draw(st.booleans()):
        perms[draw(st.integers(0, len(perms) - 1))] = torch.arange(V)
    dtype = draw(st.sampled_from((torch.float32, torch.float64)))
    return E.to(dtype), S.to(dtype), perms


@st.composite
def report_inputs(draw) -> tuple:
    """(tokens, V, E, bin_size, n_shuffles, seed): a stream over some of V ids (ids that never occur, ties in
    the counts from a repeated pattern, odd and even lengths), an embedding of any width in float32 or
    float64, bins of 3 ids up to all V, and any number of shuffles from 2."""
    V = draw(st.integers(4, 14))
    used = draw(st.integers(3, V))
    g = _generator(draw)
    if draw(st.booleans()):  # a repeated pattern: every used id equally often, then a few extra
        tokens = torch.cat([torch.arange(used).repeat(draw(st.integers(2, 12))),
                            torch.randint(0, used, (draw(st.integers(0, 5)),), generator=g)])
    else:
        tokens = torch.randint(0, used, (draw(st.integers(3 * V, 300)),), generator=g)
    perm = torch.randperm(V, generator=g)  # which ids are used, so that unseen ids fall anywhere
    tokens = perm[tokens]
    d = draw(st.integers(2, 12))
    E = torch.randn(V, d, generator=g, dtype=draw(st.sampled_from((torch.float32, torch.float64))))
    assume(bool((E.double().var(0) > 0).all()))
    return tokens, V, E, draw(st.integers(3, V)), draw(st.integers(2, 25)), draw(st.integers(0, 50))


@st.composite
def reading_inputs(draw) -> tuple:
    """(report, z) for set 10's reading: 1-6 bins on a 1/64 grid (so that every way of comparing decides a tie
    alike), excesses some spreads either side of z (some far below the shuffles), positive reliabilities, exact
    ties between the end bins (equal excesses, equal fractions), float32 or float64."""
    B = draw(st.integers(1, 6))
    z = draw(st.sampled_from((0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 4.0)))
    spread = torch.tensor(draw(st.lists(st.integers(1, 8), min_size=B, max_size=B)), dtype=torch.float64) / 64
    offsets = draw(st.lists(st.integers(-16, 8), min_size=B, max_size=B))  # down to z + 8 spreads below the shuffles
    if draw(st.integers(0, 3)):  # mostly both ends beyond chance, so that the later questions are asked
        offsets[0], offsets[-1] = draw(st.integers(1, 8)), draw(st.integers(1, 8))
    excess = spread * (z + torch.tensor(offsets, dtype=torch.float64) / 2)
    if draw(st.booleans()) and bool(excess[-1] > excess[0]):  # the excess falls with rarity
        excess[0], excess[-1], spread[0], spread[-1] = excess[-1].item(), excess[0].item(), spread[-1].item(), spread[0].item()
    reliability = torch.tensor(draw(st.lists(st.integers(1, 64), min_size=B, max_size=B)), dtype=torch.float64) / 64
    baseline = torch.tensor(draw(st.lists(st.integers(0, 32), min_size=B, max_size=B)), dtype=torch.float64) / 64
    tie = draw(st.sampled_from(("none", "flat", "fraction")))
    if tie == "flat":
        excess[-1] = excess[0]
    if tie == "fraction" and bool((excess[[0, -1]] > 0).all()) and bool((excess[[0, -1]] <= 0.5).all()):
        reliability[[0, -1]] = 2 * excess[[0, -1]]
    dtype = draw(st.sampled_from((torch.float32, torch.float64)))
    report = {"cka": baseline + excess, "baseline": baseline, "spread": spread, "excess": excess, "reliability": reliability}
    return {k: v.to(dtype) for k, v in report.items()}, z


# --- the first stair's small-init path (set 17) ----------------------------------------------------------


@st.composite
def first_stair_inputs(draw) -> tuple:
    """(model, data, lr, steps) for set 17's path: a hierarchy task of 2 to 4 orders over 2 or 3 attribute
    values with blocks of 2 to 4 tokens and a drawn mix, as its population, with drawn row weights, or as
    12 to 80 sampled rows (integer labels); an Emb-MLP ensemble of 1 to 3 models (γ 0.75 to 1.5, d 2 to 8,
    hidden 2 to 16); lr 0.25 to 2 and 0 to 40 steps."""
    from ctxlab.checks.core import reweighted
    from ctxlab.models import make_model
    from ctxlab.tasks import hierarchy_task

    n_values = draw(st.sampled_from((2, 3)))
    block = n_values * draw(st.integers(1, 2)) if n_values == 2 else 3
    orders = draw(st.integers(2, 4 if block <= 2 else 3))
    raw = draw(st.lists(st.integers(1, 9), min_size=orders, max_size=orders))
    task = hierarchy_task(block=block, n_values=n_values, mix=tuple(r / sum(raw) for r in raw))
    rows = draw(st.sampled_from(("population", "reweighted", "sampled")))
    seed = draw(st.integers(0, 50))
    data = {"population": task.population, "reweighted": reweighted(task.population, seed),
            "sampled": task.sample(draw(st.integers(12, 80)), seed=seed)}[rows]
    K = draw(st.integers(1, 3))
    model = make_model("mlp", data, gamma=draw(st.lists(st.sampled_from((0.75, 1.0, 1.25, 1.5)), min_size=K, max_size=K)),
                       seed=draw(st.lists(st.integers(0, 50), min_size=K, max_size=K)), d=draw(st.integers(2, 8)),
                       hidden=draw(st.integers(2, 16)))
    return model, data, draw(st.sampled_from((0.25, 0.5, 1.0, 2.0))), draw(st.integers(0, 40))

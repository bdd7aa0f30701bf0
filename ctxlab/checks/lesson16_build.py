"""The build-it checks of lesson 16: how far everything a token owns moves, with and without re-injected tables.

The learner writes three functions. (a) The total update size of each token: its embedding row and its row of
every re-injected table taken as one vector, the length of that vector's change. (b) The comparison of two
conditions per frequency bin: the mean update of a bin's tokens with tables over their mean update without,
the bins edged on each token's frequency at its own position. (c) The short run that trains both conditions
from the same draws and hands back both. (a) and (b) are compared with the reference on generated inputs
(models with 0 to 3 tables, V = 1, tokens that never occur, equal rows, float32 and float64, frequencies on an
edge, empty bins); (c) on runs of the check's own, where the lesson's reading must hold as well.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import torch
from torch import Tensor

from ctxlab.checks.core import Case, Diagnosis, as_tensor, reweighted, run_check
from ctxlab.dataset import Dataset
from ctxlab.token_identity import ReinjectedMLP, frequency_bins, update_sizes, zipf_hierarchy

TOL = 1e-4  # relative, on every size and gain; float32 rounding leaves about 1e-6
GAIN_FLOOR = 10.0  # every bin's gain on the check's runs (measured: 14.7-19.1 with one table, 15.7-20.4 with two)
FLAT = 1.1  # largest over smallest bin gain of one seed (measured: at most 1.035; per key at most 1.05)

# --- (a) the total update size of a token ------------------------------------------------------------


def token_update_sizes_reference(before: ReinjectedMLP, after: ReinjectedMLP) -> Tensor:
    """‖θ_s(after) − θ_s(before)‖ per model and token [K, V] (float64), θ_s = (E[s], T_1[s], ..., T_n[s])."""
    tokens = torch.arange(before.vocab_size)
    squares = update_sizes(torch.stack([before.embedding, after.embedding], 1).detach(), 1, tokens) ** 2
    for j in range(before.n_tables):
        pair = torch.stack([before.tables[:, j], after.tables[:, j]], 1).detach()
        squares = squares + update_sizes(pair, 1, tokens) ** 2
    return squares.sqrt()


def _sizes_variant(before: ReinjectedMLP, after: ReinjectedMLP, how: str) -> Tensor:
    """What a typical mistake computes from the same two models [K, V]."""
    rows = (after.embedding - before.embedding).detach().double()
    tables = [(after.tables - before.tables)[:, j].detach().double() for j in range(after.n_tables)]
    total = token_update_sizes_reference(before, after)
    if how == "norm of the sum":
        return (rows.pow(2).sum(-1) + (sum(tables).pow(2).sum(-1) if tables else 0)).sqrt()
    start = before.embedding.detach().double().pow(2).sum(-1)
    if tables:
        start = start + before.tables.detach().double().pow(2).sum(-1).sum(1)
    return {"embedding only": lambda: rows.norm(dim=-1),
            "sum of lengths": lambda: rows.norm(dim=-1) + sum(t.norm(dim=-1) for t in tables),
            "tables only": lambda: sum(t.pow(2).sum(-1) for t in tables).sqrt() if tables else rows.norm(dim=-1),
            "relative": lambda: total / start.sqrt(),
            "squared": lambda: total ** 2}[how]()  # fmt: skip


def close_problem(got: Any, expected: Tensor, what: str) -> str | None:
    """None when ``got`` equals ``expected`` within a relative TOL (NaN where it is NaN), else what differs."""
    value = as_tensor(got)
    if value is None or tuple(value.shape) != tuple(expected.shape):
        shape = type(got).__name__ if value is None else tuple(value.shape)
        return f"expected {what} of shape {tuple(expected.shape)}, got {shape}"
    value, expected = value.double(), expected.double()
    if bool((value.isnan() != expected.isnan()).any()):
        where = tuple(int(i) for i in (value.isnan() != expected.isnan()).nonzero()[0])
        return f"{what}: expected {float(expected[where]):.4g} at index {where}, got {float(value[where]):.4g}"
    got0, want0 = value.nan_to_num(0.0), expected.nan_to_num(0.0)
    bound = TOL * (want0.abs() + 1e-3 * want0.abs().max()) + 1e-12
    off = ((got0 - want0).abs() > bound) | ~torch.isfinite(got0)
    if bool(off.any()):
        where = tuple(int(i) for i in off.nonzero()[0])
        return (f"{what}: expected {float(want0[where]):.6g} at index {where}, got {float(value[where]):.6g} "
                f"(tolerance {TOL:g} relative)")
    return None


def _is(got: Any, wrong: Tensor, expected: Tensor) -> bool:
    """``got`` is the ``wrong`` answer, and that wrong answer is not the right one."""
    return close_problem(got, wrong, "") is None and close_problem(wrong, expected, "") is not None


def _moved(model: ReinjectedMLP, seed: int, table_scales: Sequence[float] = ()) -> ReinjectedMLP:
    """A copy of ``model`` with every weight moved at random (table j by ``table_scales[j]``)."""
    g = torch.Generator().manual_seed(seed)
    after = copy.deepcopy(model)
    with torch.no_grad():
        for name, p in after.named_parameters():
            noise = torch.randn(p.shape, generator=g, dtype=torch.float64).to(p.dtype)
            if name == "tables":
                noise *= torch.tensor(table_scales, dtype=p.dtype)[None, :, None, None]
            p.add_(0.1 * noise)
    return after


@cache
def _trained(extra_tokens: int, n_tables: int, steps: int) -> tuple[ReinjectedMLP, ReinjectedMLP]:
    """A model with ``n_tables`` tables before and after ``steps`` GD steps on the Zipf task, whose vocabulary
    holds ``extra_tokens`` more tokens that never occur."""
    from ctxlab.train import train

    data = zipf_hierarchy(8, 1.5).population
    data = Dataset(data.x, data.y, data.vocab_size + extra_tokens, data.n_labels, data.weights)
    model = ReinjectedMLP(data.vocab_size, data.seq_len, data.n_labels, n_tables=n_tables, gamma=0.75, seed=[0, 1, 2])
    before = copy.deepcopy(model)
    train(model, data, steps, record_every=steps, progress=False, device="cpu")
    return before, model


def _equal_rows() -> tuple[ReinjectedMLP, ReinjectedMLP]:
    """Tokens 0 and 1 with equal rows, before and after (two tables, float32)."""
    before = ReinjectedMLP(5, 2, 3, d=6, hidden=10, n_tables=2, gamma=1.0, seed=[7, 8])
    after = _moved(before, 9, (1.0, 0.4))
    with torch.no_grad():
        for model in (before, after):
            model.embedding[:, 1], model.tables[:, :, 1] = model.embedding[:, 0], model.tables[:, :, 0]
    return before, after


def _size_cases() -> list[Case]:
    def fresh(pair):
        return tuple(copy.deepcopy(m) for m in pair)

    no_table = ReinjectedMLP(11, 3, 2, d=16, hidden=24, n_tables=0, gamma=1.0, seed=[1, 2])
    three = ReinjectedMLP(9, 2, 3, d=8, hidden=12, n_tables=3, gamma=0.75, seed=[3]).double()
    single = ReinjectedMLP(1, 2, 2, d=4, hidden=6, n_tables=1, gamma=1.0, seed=[4, 5])
    specs = [
        ("the lesson's model with one table, 3 seeds, after 10 GD steps on the Zipf task", fresh(_trained(0, 1, 10)), False),
        ("no table (n_tables = 0), 2 models, every weight moved", (no_table, _moved(no_table, 10)), True),
        ("three tables moved by different amounts, float64, router and hidden weights moved too",
         (three, _moved(three, 11, (0.2, 1.0, 3.0))), True),
        ("a vocabulary of one token (V = 1), one table", (single, _moved(single, 12, (1.0,))), True),
        ("two tables, 4 tokens that never occur, after 5 GD steps", fresh(_trained(4, 2, 5)), True),
        ("tokens 0 and 1 with equal rows before and after, two tables", _equal_rows(), True),
    ]  # fmt: skip
    return [Case(label, pair, token_update_sizes_reference(*pair), hidden) for label, pair, hidden in specs]


SIZE_HINTS = {
    "embedding only": "you counted only the embedding row: a token also owns its row of every re-injected table, "
                      "and those rows move too (far more): count them all",
    "sum of lengths": "you added up the lengths of the pieces (the sum of the lengths, as the lesson adds its tables): "
                      "the update is the length of the whole vector's change, the square root of the sum of ALL squared changes",
    "norm of the sum": "you added the tables' row changes together before taking the length (the norm of the sum): each "
                       "table's row is a parameter of its own; square every change, then add",
    "tables only": "the embedding row counts too: a token owns E[s] and its row of every table",
    "relative": "that is the change relative to the parameters' starting length: measure the absolute change",
    "squared": "that is the squared length: take the square root of the sum of squares",
}  # fmt: skip


def check_16_token_update_sizes(fn: Callable[[ReinjectedMLP, ReinjectedMLP], Tensor]) -> None:
    """fn(before, after) -> [K, V]: the length of the change of each token's embedding row and table rows together."""
    diagnoses = [Diagnosis(lambda g, e, c, how=how: _is(g, _sizes_variant(*c.args, how), e), hint)
                 for how, hint in SIZE_HINTS.items()]
    run_check("check_16_token_update_sizes", fn, _size_cases(), lambda g, e: close_problem(g, e, "update sizes"),
              diagnoses)


# --- (b) the two conditions per frequency bin ------------------------------------------------------------


def token_frequency(data: Dataset, position: int, rows: str = "weighted") -> Tensor:
    """π(s) = P(x_position = s) [V] (float64); ``rows="counted"``: the share of rows, ignoring their weights."""
    w = data.weights.double() if rows == "weighted" else torch.full((data.n,), 1.0 / data.n, dtype=torch.float64)
    return torch.zeros(data.vocab_size, dtype=torch.float64).index_add_(0, data.x[:, position], w)


def bin_gain_reference(without: Tensor, with_tables: Tensor, data: Dataset, edges: Sequence[float], position: int = 0,
                       where: str = "own", rows: str = "weighted", bins: str = "edges", mean: str = "plain",
                       combine: str = "ratio of means", empty: str = "nan") -> Tensor:
    """[K, n_bins]: per bin (edges[b] < π(s) <= edges[b+1], π at ``position``), the plain mean update with tables
    over the plain mean without; NaN for a bin that holds no token. The keywords change one ingredient, as a
    typical mistake does (the defaults are the answer)."""
    if where == "any":
        freq = sum(token_frequency(data, i, rows) for i in range(data.seq_len))
    else:
        freq = token_frequency(data, 0 if where == "first" else position, rows)
    cut = torch.as_tensor(edges, dtype=torch.float64)
    if bins == "rank":
        present = (freq > 0).nonzero()[:, 0]
        groups = [present[ids] for ids in frequency_bins(freq[present], len(cut) - 1)]
    else:
        low_closed = bins == "[lo, hi)"
        groups = [(((freq >= lo) & (freq < hi)) if low_closed else ((freq > lo) & (freq <= hi))).nonzero()[:, 0]
                  for lo, hi in zip(cut[:-1], cut[1:])]
    a, b = with_tables.double(), without.double()
    out = []
    for ids in groups:
        w = freq[ids] / freq[ids].sum() if mean == "weighted" else torch.full((len(ids),), 1 / max(len(ids), 1)).double()
        if not len(ids):
            out.append(torch.full(a.shape[:1], 0.0 if empty == "zero" else float("nan"), dtype=torch.float64))
        elif combine == "mean of ratios":
            out.append((a[:, ids] / b[:, ids]) @ w)
        else:
            ratio = (a[:, ids] @ w) / (b[:, ids] @ w)
            out.append(1 / ratio if combine == "inverted" else ratio)
    return torch.stack(out, -1)


def _sizes_for(data: Dataset, models: int, gain: float, seed: int, dtype=torch.float32) -> tuple[Tensor, Tensor]:
    """Update sizes without and with tables [K, V] of the lesson's kind: ∝ frequency anywhere, times a gain with noise."""
    g = torch.Generator().manual_seed(seed)
    freq = sum(token_frequency(data, i) for i in range(data.seq_len))
    noise = lambda: torch.exp(0.3 * torch.randn(models, data.vocab_size, generator=g, dtype=torch.float64))  # noqa: E731
    without = 1e-2 * freq * noise()
    return without.to(dtype), (gain * without * noise()).to(dtype)


def _gain_cases() -> list[Case]:
    zipf8, zipf6 = zipf_hierarchy(8, 1.5).population, zipf_hierarchy(6, 1.0).population
    g = torch.Generator().manual_seed(162)
    grid = torch.randint(0, 6, (8, 2), generator=g)
    grid[:, 0] = torch.tensor([0, 0, 1, 1, 2, 3, 3, 3])  # π = 1/4, 1/4, 1/8, 3/8 at position 0: 1/4 on an edge
    ties = Dataset(grid, torch.zeros(8, dtype=torch.int64), 6, 2, torch.full((8,), 1.0 / 8))
    one = Dataset(torch.zeros(4, 3, dtype=torch.int64), torch.tensor([0, 1, 0, 1]), 1, 2, torch.full((4,), 0.25))
    mixed = Dataset(torch.randint(0, 12, (40, 3), generator=g), torch.randint(0, 2, (40,), generator=g), 12, 2,
                    torch.full((40,), 1 / 40))
    specs = [
        ("the Zipf task's keys, 3 models, edges (0, 0.05, 0.15, 1)", zipf8, (0, 0.05, 0.15, 1.0), 0, 3, torch.float32, False),
        ("block 6, exponent 1, float64, an empty bin (0.6, 1]", zipf6, (0, 0.09, 0.15, 0.6, 1.0), 0, 2, torch.float64, True),
        ("8 rows of equal weight: a frequency of 1/4 on an edge", ties, (0, 0.25, 0.5), 0, 2, torch.float32, True),
        ("a vocabulary of one token (V = 1), one bin", one, (0, 1.0), 0, 2, torch.float64, True),
        ("reweighted rows, tokens at every position, binned at position 1", reweighted(mixed, 5), (0, 0.06, 0.1, 0.5), 1, 2,
         torch.float32, True),
        ("edges from 0.03 to 0.3: the rarest and the commonest keys in no bin", zipf8, (0.03, 0.07, 0.3), 0, 1, torch.float64, True),
    ]  # fmt: skip
    cases = []
    for k, (label, data, edges, position, models, dtype, hidden) in enumerate(specs):
        without, with_tables = _sizes_for(data, models, 12.0 + k, 20 + k, dtype)
        args = (without, with_tables, data, list(edges), position)
        cases.append(Case(label, args, bin_gain_reference(*args), hidden))
    return cases


GAIN_HINTS = [
    ({"where": "any"}, "you counted a token at every position: its frequency is read at its own position only (the "
                       "position you are given); a token that never occurs there belongs to no bin"),
    ({"where": "first"}, "you binned by the frequency at position 0: read it at the position you are given"),
    ({"rows": "counted"}, "π(s) is a probability: weight each row by data.weights, do not count rows"),
    ({"bins": "rank"}, "those are bins of equal size by rank: a bin holds the tokens whose frequency lies between its "
                       "two edges, however many they are"),
    ({"bins": "[lo, hi)"}, "a frequency equal to an edge belongs to the lower bin: edges[b] < π(s) <= edges[b+1] "
                           "(and a token with π(s) = 0 is in no bin)"),
    ({"mean": "weighted"}, "you weighted each token by its frequency: within a bin every token counts once (a plain, "
                           "unweighted mean over the bin's tokens)"),
    ({"combine": "mean of ratios"}, "that is the mean of the per-token ratios: divide the bin's mean update with "
                                    "tables by its mean update without"),
    ({"combine": "inverted"}, "that is without over with: the gain is the update with tables over the update without"),
    ({"empty": "zero"}, "a bin that holds no token has no mean: give nan there, not 0"),
]  # fmt: skip


def check_16_bin_gain(fn: Callable[[Tensor, Tensor, Dataset, Sequence[float], int], Tensor]) -> None:
    """fn(without [K, V], with_tables [K, V], data, edges, position) -> [K, n_bins]: per frequency bin, the mean
    update with tables over the mean update without."""
    diagnoses = [Diagnosis(lambda g, e, c, change=change: _is(g, bin_gain_reference(*c.args, **change), e), hint)
                 for change, hint in GAIN_HINTS]
    run_check("check_16_bin_gain", fn, _gain_cases(), lambda g, e: close_problem(g, e, "gains"), diagnoses)


# --- (c) the short run: both conditions from the same draws ------------------------------------------------


@dataclass(frozen=True)
class GainRun:
    """One run of the check's own: the Zipf task, a table count, bin edges and the training settings."""

    label: str
    block: int
    exponent: float
    n_tables: int
    edges: tuple[float, ...]
    seeds: tuple[int, ...]
    steps: int
    gamma: float = 0.75
    lr: float = 1.0

    def args(self) -> tuple:
        data = zipf_hierarchy(self.block, self.exponent).population
        return data, self.n_tables, list(self.edges), list(self.seeds), self.steps, self.gamma, self.lr


RUNS = [
    (GainRun("8 Zipf keys (exponent 1.5), one table, 10 steps", 8, 1.5, 1, (0, 0.05, 0.15, 1.0), (3, 4), 10), False),
    (GainRun("6 Zipf keys (exponent 1), two tables, 15 steps at lr 0.5", 6, 1.0, 2, (0, 0.09, 0.15, 1.0), (5, 6), 15,
             lr=0.5), True),
]  # fmt: skip


@cache
def trained_pair(run: GainRun, n_tables: int, seed_shift: int = 0, steps: int | None = None,
                 lr: float | None = None) -> tuple[ReinjectedMLP, ReinjectedMLP]:
    """``run``'s model with ``n_tables`` tables before and after its training (the keywords change one setting,
    as a typical mistake does). Cached: callers must not change the models."""
    from ctxlab.train import train

    data = run.args()[0]
    model = ReinjectedMLP(data.vocab_size, data.seq_len, data.n_labels, n_tables=n_tables, gamma=run.gamma,
                          seed=[s + seed_shift for s in run.seeds])
    before = copy.deepcopy(model)
    n = run.steps if steps is None else steps
    train(model, data, n, lr=run.lr if lr is None else lr, record_every=n, progress=False, device="cpu")
    return before, model


def table_gain_reference(run: GainRun) -> tuple[Tensor, Tensor, Tensor]:
    """(without [S, V], with_tables [S, V], gain [S, n_bins]) for one of the check's runs."""
    without = token_update_sizes_reference(*trained_pair(run, 0))
    with_tables = token_update_sizes_reference(*trained_pair(run, run.n_tables))
    return without, with_tables, bin_gain_reference(without, with_tables, run.args()[0], run.edges)


def _parts(got: Any) -> list[Tensor] | None:
    """The learner's (without, with_tables, gain) as tensors, or None when it is not such a triple."""
    if not isinstance(got, (tuple, list)) or len(got) != 3:
        return None
    parts = [as_tensor(x) for x in got]
    return None if any(p is None for p in parts) else parts


def _reading_problem(gain: Tensor) -> str | None:
    """What the lesson's reading says of the gains [S, n_bins] and they do not show; None when they do."""
    gain = gain.double()
    if not bool((gain > GAIN_FLOOR).all()):
        return f"some bin's tokens move less than {GAIN_FLOOR:g} times as far with tables: gains {gain.round(decimals=2).tolist()}"
    spread = gain.max(-1).values / gain.min(-1).values
    if not bool((spread <= FLAT).all()):
        return (f"the gain differs between bins by more than {FLAT - 1:.0%} (largest over smallest per seed: "
                f"{spread.round(decimals=3).tolist()}): the tables should raise every bin alike")
    return None


def _run_problem(got: Any, expected: tuple[Tensor, Tensor, Tensor]) -> str | None:
    parts = _parts(got)
    if parts is None:
        return (f"expected a triple (without [S, V], with_tables [S, V], gain [S, n_bins]) of shapes "
                f"{[tuple(e.shape) for e in expected]}, got {type(got).__name__}")
    for what, part, want in zip(("sizes without tables", "sizes with tables", "gains"), parts, expected):
        problem = close_problem(part, want, what)
        if problem:
            return problem
    return _reading_problem(parts[2])


def _sizes_are(changed: dict, which: tuple[int, ...] = (0, 1), how: str | None = None):
    """A diagnosis predicate: the learner's sizes (``which`` of without, with) are those of a changed run."""

    def matches(got, expected, case: Case) -> bool:
        run, parts = next(r for r, _ in RUNS if r.label == case.label), _parts(got)
        for i in which:
            pair = trained_pair(run, (0, run.n_tables)[i], **changed)
            wrong = _sizes_variant(*pair, how) if how else token_update_sizes_reference(*pair)
            if not _is(parts[i], wrong, expected[i]):
                return False
        return True

    return matches


def _gain_is(change: dict):
    def matches(got, expected, case: Case) -> bool:
        parts = _parts(got)
        wrong = bin_gain_reference(expected[0], expected[1], case.args[0], case.args[2], **change)
        return all(close_problem(p, e, "") is None for p, e in zip(parts[:2], expected[:2])) and _is(parts[2], wrong, expected[2])

    return matches


def _with_only_wrong(got, expected, case: Case) -> bool:
    parts = _parts(got)
    return close_problem(parts[0], expected[0], "") is None and close_problem(parts[1], expected[1], "") is not None


def check_16_table_gain(fn: Callable[[Dataset, int, list, list, int, float, float], tuple]) -> None:
    """fn(data, n_tables, edges, seeds, steps, gamma, lr) -> (without [S, V], with_tables [S, V], gain [S, n_bins]):
    both conditions trained from the same draws, their sizes (a) and gains (b); on the check's runs the gain must
    exceed GAIN_FLOOR in every bin and be the same in every bin within FLAT."""
    diagnoses = [
        Diagnosis(lambda g, e, c: bool(_parts(g)[0].double().abs().max() == 0),
                  "every update size is 0: your 'before' is the trained model itself; keep a deep copy of each model "
                  "before you train it"),
        Diagnosis(_sizes_are({"lr": 1.0}), "train at the learning rate you are given"),
        Diagnosis(lambda g, e, c: any(_sizes_are({"steps": c.args[4] + d})(g, e, c) for d in (-1, 1)),
                  "train exactly `steps` full-batch updates: not one more, not one less"),
        Diagnosis(_sizes_are({"seed_shift": 1}), "build both models from the seeds you are given"),
        *[Diagnosis(_sizes_are({}, (1,), how), "with tables: " + SIZE_HINTS[how])
          for how in ("embedding only", "sum of lengths", "norm of the sum")],
        Diagnosis(_with_only_wrong, "the model with tables does not start from the same draws or train alike: build "
                                    "it with the same seeds and γ as the one without, and train it the same way"),
        *[Diagnosis(_gain_is(change), "the gains: " + hint) for change, hint in GAIN_HINTS],
    ]  # fmt: skip
    cases = [Case(run.label, run.args(), table_gain_reference(run), hidden) for run, hidden in RUNS]
    run_check("check_16_table_gain", fn, cases, _run_problem, diagnoses)

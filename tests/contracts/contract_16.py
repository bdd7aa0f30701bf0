"""Lesson 16 (token identity, rare tokens): reference answers and typical mistakes for each check."""

from __future__ import annotations

import copy
import math

import torch

from contracts import Contract, train_once
from ctxlab import checks
from ctxlab.token_identity import ReinjectedMLP, bin_losses, loglog_slope, rung_steps


def _centred_fit(x, y):
    x, y = x.double() - x.double().mean(), y.double() - y.double().mean()
    return float((x * y).sum() / (x * x).sum())


def _per_row(logits, data):
    return -(torch.log_softmax(logits.double(), -1) * data.targets().double()).sum(-1)


def not_renormalised(logits, data, ids):
    return _per_row(logits, data) @ (data.weights.double() * torch.isin(data.x[:, 0], ids).double())


def unweighted(logits, data, ids):
    m = torch.isin(data.x[:, 0], ids).double()
    return _per_row(logits, data) @ m / m.sum()


def ids_at_any_position(logits, data, ids):
    w = data.weights.double() * torch.isin(data.x, ids).any(1).double()
    return _per_row(logits, data) @ w / w.sum()


def all_rows(logits, data, ids):
    return _per_row(logits, data) @ data.weights.double()


def first_step_or(never):
    def fn(steps, curve, level):
        below = curve < level
        return float(steps[below.nonzero()[0, 0]]) if bool(below.any()) else never
    return fn


def index_not_step(steps, curve, level):
    below = curve < level
    return float(below.nonzero()[0, 0]) if bool(below.any()) else math.inf


def last_entry(steps, curve, level):
    above = (curve >= level).nonzero()
    if not bool((curve < level).any()):
        return math.inf
    return float(steps[int(above[-1, 0]) + 1]) if len(above) else float(steps[0])


def at_or_below(steps, curve, level):
    hit = curve <= level
    return float(steps[hit.nonzero()[0, 0]]) if bool(hit.any()) else math.inf


CONTRACT = [
    Contract(
        checks.check_16_loglog_slope,
        reference=lambda frequency, size: float(loglog_slope(frequency, size)),
        wrong={
            "no logs": lambda frequency, size: _centred_fit(frequency, size),
            "log frequency regressed on log size": lambda frequency, size: _centred_fit(size.log(), frequency.log()),
            "semi-log fit": lambda frequency, size: _centred_fit(frequency, size.log()),
        },
    ),
    Contract(
        checks.check_16_bin_loss,
        reference=lambda logits, data, ids: bin_losses(logits, data, [ids])[:, 0],
        wrong={
            "weights not renormalised inside the bin": not_renormalised,
            "unweighted mean over the bin's rows": unweighted,
            "loss of all rows": all_rows,
            "one number for the whole ensemble": lambda logits, data, ids: bin_losses(logits, data, [ids])[:, 0].mean(),
            "ids matched at any position": ids_at_any_position,
        },
        hints={"ids matched at any position": "at ANY position"},
    ),
    Contract(
        checks.check_16_rung_step,
        reference=lambda steps, curve, level: float(rung_steps(steps, curve, level)),
        wrong={
            "-1 for never": first_step_or(-1.0),
            "0 for never": first_step_or(0.0),
            "the last recorded step for never": lambda steps, curve, level: first_step_or(float(steps[-1]))(steps, curve, level),
            "index instead of step": index_not_step,
            "last entry below instead of the first crossing": last_entry,
            "at or below instead of strictly below": at_or_below,
        },
    ),
]


# --- exercise 4, build it: how far everything a token owns moves, with and without re-injected tables -------


def sizes(before, after, *, pieces="all", combine="squares", relative=False):
    """Each token's update size [K, V], written as a learner would, one mistake switched on."""
    rows = (after.embedding - before.embedding).detach().double()
    tables = [(after.tables - before.tables)[:, j].detach().double() for j in range(after.n_tables)]
    if pieces == "embedding":
        tables = []
    if combine == "lengths":
        total = rows.norm(dim=-1) + sum(t.norm(dim=-1) for t in tables)
    elif combine == "sum first" and tables:
        total = (rows.pow(2).sum(-1) + sum(tables).pow(2).sum(-1)).sqrt()
    else:
        total = (rows.pow(2).sum(-1) + sum(t.pow(2).sum(-1) for t in tables)).sqrt()
    if relative:
        start = before.embedding.detach().double().pow(2).sum(-1)
        if after.n_tables:
            start = start + before.tables.detach().double().pow(2).sum((1, -1))
        total = total / start.sqrt()
    return total ** 2 if combine == "no root" else total


def gain(without, with_tables, data, edges, position=0, *, anywhere=False, first=False, count_rows=False,
         by_rank=False, closed_low=False, weighted=False, per_token=False, inverted=False, empty_as_zero=False):
    """The gain per frequency bin [K, n_bins], written as a learner would, one mistake switched on."""
    weights = torch.full((data.n,), 1 / data.n, dtype=torch.float64) if count_rows else data.weights.double()
    freq = torch.zeros(data.vocab_size, dtype=torch.float64)
    for i in range(data.seq_len) if anywhere else [0 if first else position]:
        freq.index_add_(0, data.x[:, i], weights)
    if by_rank:
        seen = (freq > 0).nonzero()[:, 0]
        order = seen[torch.argsort(freq[seen], descending=True, stable=True)]
        groups = [(torch.arange(data.vocab_size)[:, None] == chunk).any(-1) for chunk in torch.tensor_split(order, len(edges) - 1)]
    else:
        groups = [((freq >= lo) & (freq < hi)) if closed_low else ((freq > lo) & (freq <= hi)) for lo, hi in zip(edges[:-1], edges[1:])]
    out = []
    for members in groups:
        a, b = with_tables[:, members].double(), without[:, members].double()
        if empty_as_zero and not bool(members.any()):
            out.append(torch.zeros(a.shape[0], dtype=torch.float64))
        elif per_token:
            out.append((a / b).mean(-1))
        elif weighted:
            w = freq[members] / freq[members].sum()
            out.append((a @ w) / (b @ w))
        else:
            out.append(b.mean(-1) / a.mean(-1) if inverted else a.mean(-1) / b.mean(-1))
    return torch.stack(out, -1)


def table_gain(data, n_tables, edges, seeds, steps, gamma, lr, *, keep_copy=True, at_lr=None, extra_steps=0,
               seed_shift=0, table_seed_shift=0, sizes_with=sizes, gain_with=gain):
    """Train both conditions from the same draws, then measure (a) and compare per bin (b); one mistake switched on."""
    measured = []
    for n in (0, n_tables):
        shift = seed_shift + (table_seed_shift if n else 0)
        model = ReinjectedMLP(data.vocab_size, data.seq_len, data.n_labels, n_tables=n, gamma=gamma,
                              seed=[s + shift for s in seeds])
        before = copy.deepcopy(model) if keep_copy else model
        train_once(model, data, steps + extra_steps, lr=lr if at_lr is None else at_lr, progress=False, device="cpu")
        measured.append((sizes_with if n else sizes)(before, model))
    return measured[0], measured[1], gain_with(measured[0], measured[1], data, edges, 0)


def _with(fn, **mistake):
    return lambda *args: fn(*args, **mistake)


CONTRACT += [
    Contract(
        checks.check_16_token_update_sizes,
        reference=sizes,
        wrong={
            "only the embedding row": _with(sizes, pieces="embedding"),
            "sum of the pieces' lengths": _with(sizes, combine="lengths"),
            "norm of the tables' summed changes": _with(sizes, combine="sum first"),
            "relative change": _with(sizes, relative=True),
            "no square root": _with(sizes, combine="no root"),
        },
        hints={"only the embedding row": "only the embedding row", "sum of the pieces' lengths": "sum of the lengths",
               "norm of the tables' summed changes": "norm of the sum", "relative change": "relative",
               "no square root": "square root"},
    ),
    Contract(
        checks.check_16_bin_gain,
        reference=gain,
        wrong={
            "tokens counted at any position": _with(gain, anywhere=True),
            "frequency always at position 0": _with(gain, first=True),
            "rows counted, weights ignored": _with(gain, count_rows=True),
            "bins by rank, not by frequency": _with(gain, by_rank=True),
            "bins [lo, hi)": _with(gain, closed_low=True),
            "mean weighted by frequency": _with(gain, weighted=True),
            "mean of per-token ratios": _with(gain, per_token=True),
            "without over with": _with(gain, inverted=True),
            "an empty bin as 0": _with(gain, empty_as_zero=True),
        },
        hints={"tokens counted at any position": "own position", "frequency always at position 0": "position you are given",
               "rows counted, weights ignored": "data.weights", "bins by rank, not by frequency": "by rank",
               "bins [lo, hi)": "lower bin", "mean weighted by frequency": "unweighted",
               "mean of per-token ratios": "mean of the per-token ratios", "without over with": "without over with",
               "an empty bin as 0": "nan"},
    ),
    Contract(
        checks.check_16_table_gain,
        reference=table_gain,
        wrong={
            "no copy before training": _with(table_gain, keep_copy=False),
            "trained at learning rate 1": _with(table_gain, at_lr=1.0),
            "one step too many": _with(table_gain, extra_steps=1),
            "other seeds for both models": _with(table_gain, seed_shift=1),
            "other seeds for the model with tables": _with(table_gain, table_seed_shift=3),
            "only the embedding row counted": _with(table_gain, sizes_with=_with(sizes, pieces="embedding")),
            "the tables' lengths added": _with(table_gain, sizes_with=_with(sizes, combine="lengths")),
            "gain without over with": _with(table_gain, gain_with=_with(gain, inverted=True)),
            "keys counted at any position": _with(table_gain, gain_with=_with(gain, anywhere=True)),
        },
        hints={"no copy before training": "deep copy", "trained at learning rate 1": "learning rate you are given",
               "one step too many": "exactly `steps`", "other seeds for both models": "seeds you are given",
               "other seeds for the model with tables": "same draws", "only the embedding row counted": "only the embedding row",
               "the tables' lengths added": "sum of the lengths", "gain without over with": "without over with",
               "keys counted at any position": "own position"},
    ),
]

"""Lesson 03: reference answers and typical mistakes for each check."""

from __future__ import annotations

import torch

from contracts import Contract
from ctxlab import checks
from ctxlab.align import find_plateaus, stair_onsets
from ctxlab.checks.lesson03 import longest_first_plateau_reference, matched_levels_reference


def in_band(levels, k, value):
    upper = (levels[k - 1] + levels[k]) / 2 if k > 0 else float("inf")
    lower = (levels[k] + levels[k + 1]) / 2 if k + 1 < len(levels) else float("-inf")
    return lower <= value < upper


def nearest_without_bands(steps, loss, levels):
    found = find_plateaus(steps, loss)
    return [min(found, key=lambda p: abs(p.level - h)).level if found else None for h in levels]


def first_in_band(steps, loss, levels):
    found = find_plateaus(steps, loss)
    out = []
    for k in range(len(levels)):
        inside = [p.level for p in found if in_band(levels, k, p.level)]
        out.append(inside[0] if inside else None)
    return out


def first_below(steps, loss, value, index=False, last=False):
    below = loss < value
    start = below & ~torch.cat([torch.tensor([False]), below[:-1]])
    hits = start.nonzero().flatten()
    if len(hits) == 0:
        return -1
    i = int(hits[-1] if last else hits[0])
    return i if index else int(steps[i])


def onsets(steps, loss, levels, **kw):
    return [first_below(steps, loss, (a + b) / 2, **kw) for a, b in zip(levels[:-1], levels[1:])]


def first_stair_waits(steps, losses, levels):
    return stair_onsets(steps, losses, list(levels))[:, 0].double()


def max_gamma(steps, losses, gammas, levels):
    return max(gammas)


def shortest_wait(steps, losses, gammas, levels):
    waits = first_stair_waits(steps, losses, levels)
    means = {g: float(waits[[k for k, x in enumerate(gammas) if x == g]].mean()) for g in dict.fromkeys(gammas)}
    return min(means, key=means.get)


def first_seed_only(steps, losses, gammas, levels):
    keep = [gammas.index(g) for g in dict.fromkeys(gammas)]
    return longest_first_plateau_reference(steps, losses[keep], [gammas[k] for k in keep], levels)


def index_not_value(steps, losses, gammas, levels):
    unique = list(dict.fromkeys(gammas))
    return unique.index(longest_first_plateau_reference(steps, losses, gammas, levels))


def longest_any_plateau(steps, losses, gammas, levels):
    longest = [max(p.length for p in find_plateaus(steps, loss)) for loss in losses]
    return gammas[max(range(len(gammas)), key=lambda k: longest[k])]


CONTRACT = [
    Contract(
        checks.check_03_plateau_levels,
        reference=matched_levels_reference,
        wrong={
            "predicted instead of measured": lambda steps, loss, levels: list(levels),
            "nearest plateau without bands": nearest_without_bands,
            "first plateau in the band": first_in_band,
            "skips H_0": lambda steps, loss, levels: matched_levels_reference(steps, loss, levels)[1:],
        },
    ),
    Contract(
        checks.check_03_stair_onsets,
        reference=lambda steps, loss, levels: [int(v) for v in stair_onsets(steps, loss, list(levels))],
        wrong={
            "index instead of step": lambda steps, loss, levels: onsets(steps, loss, levels, index=True),
            "crossing the level itself": lambda steps, loss, levels: [first_below(steps, loss, h) for h in levels[1:]],
            "last crossing": lambda steps, loss, levels: onsets(steps, loss, levels, last=True),
        },
    ),
    Contract(
        checks.check_03_longest_first_plateau,
        reference=longest_first_plateau_reference,
        wrong={
            "always the largest γ": max_gamma,
            "shortest wait": shortest_wait,
            "first seed only": first_seed_only,
            "index instead of γ": index_not_value,
            "longest plateau of any kind": longest_any_plateau,
        },
    ),
]

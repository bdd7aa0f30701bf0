"""Lesson 11 (task learning): reference answers and typical mistakes for each check."""


from __future__ import annotations

from contracts import Contract
from ctxlab import checks
from ctxlab.checks.lesson11 import finishing_order, table_variant
from ctxlab.rungs import crossing_step, stair_onsets
from ctxlab.transplant import signature_embedding


def _last(run, levels, at_level: bool = False):
    steps, loss = run
    if at_level:
        return crossing_step(steps, loss, levels[-1])
    return stair_onsets(steps, loss, list(levels))[:, -1]


def at_the_level(runs, levels):
    """Reaching = going below H_L itself."""
    done = {n: float(_last(r, levels, True).double().mean()) for n, r in runs.items() if bool((_last(r, levels, True) >= 0).all())}
    return sorted(done, key=done.get)


def never_as_minus_one(runs, levels):
    """Averages the -1 of seeds that never finish with the real steps."""
    done = {n: float(_last(r, levels).double().mean()) for n, r in runs.items() if bool((_last(r, levels) >= 0).any())}
    return sorted(done, key=done.get)


def by_final_loss(runs, levels):
    done = finishing_order(runs, levels)
    return sorted(done, key=lambda n: float(runs[n][1][:, -1].mean()))


def by_best_seed(runs, levels):
    done = finishing_order(runs, levels)
    return sorted(done, key=lambda n: float(_last(runs[n], levels).min()))


def ties_by_name(runs, levels):
    done = finishing_order(runs, levels)
    mean = {n: float(_last(runs[n], levels).double().mean()) for n in done}
    return sorted(done, key=lambda n: (mean[n], n))


def by_median_step(runs, levels):
    done = finishing_order(runs, levels)
    return sorted(done, key=lambda n: float(_last(runs[n], levels).double().median()))


CONTRACT = [
    Contract(
        checks.check_11_signature_table,
        reference=signature_embedding,
        wrong={
            "no centring": lambda data, d, orders, norm: table_variant(data, d, orders, norm, centre=False).float(),
            "bare singular vectors U (no S)": lambda data, d, orders, norm: table_variant(data, d, orders, norm, scale_by_sv=False).float(),
            "raw signatures": lambda data, d, orders, norm: table_variant(data, d, orders, norm, form="raw").float(),
            "not rescaled": lambda data, d, orders, norm: signature_embedding(data, d, orders),
            "transposed": lambda data, d, orders, norm: signature_embedding(data, d, orders, norm).T,
            "highest order only": lambda data, d, orders, norm: signature_embedding(data, d, orders[-1:], norm),
        },
    ),
    Contract(
        checks.check_11_finishing_order,
        reference=finishing_order,
        wrong={
            "crossing H_L instead of the midpoint": at_the_level,
            "never-reached seeds averaged as -1": never_as_minus_one,
            "ordered by final loss": by_final_loss,
            "ordered by the best seed": by_best_seed,
            "ties broken by name": ties_by_name,
            "median step instead of mean": by_median_step,
        },
    ),
]

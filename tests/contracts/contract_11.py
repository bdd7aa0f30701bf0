"""Lesson 11 (task learning): reference answers and typical mistakes for each check."""


from __future__ import annotations

from contracts import Contract, train_once
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


# --- exercise 3: a random rank-matched table as a control, and the race against it --------------------

import math  # noqa: E402

import torch  # noqa: E402

from ctxlab.checks.lesson11_build import signature_vs_control  # noqa: E402
from ctxlab.transplant import random_orthonormal, rank_matched_control  # noqa: E402
from ctxlab.rungs import crossing_step as _crossing  # noqa: E402
from ctxlab.transplant import freeze_embedding, frozen_ensemble, random_embedding, rescale, steps_to_plateaus  # noqa: E402


def control(table, seed, *, work=None, rank=None, spectrum="same", keep=None, generator="own"):
    """A rank-matched control as a learner writes it, with one mistake switched on."""
    V, d = table.shape
    dtype = work or table.dtype
    t = table.to(dtype)
    if generator == "own":
        g = torch.Generator().manual_seed(seed)
    elif generator == "fixed":
        g = torch.Generator().manual_seed(0)
    else:  # "global": torch's own generator, reseeded or not
        g = None
        if generator == "reseeded":
            torch.manual_seed(seed)
    U, sv, Vh = torch.linalg.svd(t, full_matrices=False)
    r = sv.numel() if rank is None else rank(table, sv)
    left = random_orthonormal(V, r, g, dtype) if g is not None else torch.linalg.qr(torch.randn(V, r, dtype=dtype))[0]
    right = random_orthonormal(d, r, g, dtype) if g is not None else torch.linalg.qr(torch.randn(d, r, dtype=dtype))[0]
    if keep == "left":
        left = U[:, :r]
    if keep == "right":
        right = Vh[:r].T
    values = {"same": sv[:r], "unit": torch.ones(r, dtype=dtype),
              "flat": torch.full((r,), float(sv.norm()) / math.sqrt(max(r, 1)), dtype=dtype)}[spectrum]
    return ((left * values) @ right.T).to(table.dtype)


def float32_rank(table, sv):
    return int(torch.linalg.matrix_rank(table.float()))


def flat_rank(table, sv):
    return int(torch.linalg.matrix_rank(table))


def full_rank_random(table, seed):
    V, d = table.shape
    return rescale(random_embedding(V, d, 1.0, seed), float(table.norm())).to(table.dtype)


def row_permutation(table, seed):
    return table[torch.randperm(table.shape[0], generator=torch.Generator().manual_seed(seed))]


def race(task, d, hidden, steps, seeds, make_control, *, orders=(1, 2, 3), scale=True, offset=100, own=False,
         learn=False, gamma=1.0, every=10, at_level=False, rows="by name"):
    """signature_vs_control as a learner writes it, with one mistake switched on."""
    from ctxlab.transplant import signature_embedding

    signature = signature_embedding(task.population, d, orders, math.sqrt(task.vocab_size) if scale else None)
    draw = rank_matched_control if own else make_control
    tables = {"signature": lambda s: signature, "control": lambda s: draw(signature, offset + s)}
    model, names = frozen_ensemble(task, tables, list(seeds), d=d, hidden=hidden, gamma=gamma)
    if learn:
        freeze_embedding(model, [])
    run = train_once(model, task.population, steps, lr=1.0, record_every=every, progress=False)
    levels = task.plateau_levels()
    if at_level:
        onsets = torch.stack([_crossing(run.steps, run.loss, h) for h in levels[1:]], -1)
    else:
        onsets = steps_to_plateaus(run, levels)
    if rows == "interleaved":
        return {"signature": onsets[0::2], "control": onsets[1::2]}
    picked = {name: onsets[[k for k, n in enumerate(names) if n == name]] for name in tables}
    return {"signature": picked["control"], "control": picked["signature"]} if rows == "swapped" else picked


CONTRACT += [
    Contract(
        checks.check_11_rank_matched_control,
        reference=rank_matched_control,
        wrong={
            "full-rank random table at the same norm": full_rank_random,
            "unit singular values (wrong scale)": lambda t, s: control(t, s, spectrum="unit", rank=flat_rank),
            "normalised to Frobenius norm 1 (wrong scale)": lambda t, s: (c := control(t, s)) / c.norm(),
            "flat spectrum at the same norm": lambda t, s: control(t, s, spectrum="flat", rank=flat_rank),
            "a permutation of the rows": row_permutation,
            "torch's global generator (nondeterministic)": lambda t, s: control(t, s, generator="global"),
            "torch.manual_seed(seed) on the global generator": lambda t, s: control(t, s, generator="reseeded"),
            "seed ignored (generator seeded with 0)": lambda t, s: control(t, s, generator="fixed"),
            "left singular vectors kept (only the columns rotated)": lambda t, s: control(t, s, keep="left"),
            "right singular vectors kept (only the token side rotated)": lambda t, s: control(t, s, keep="right"),
            "float32 arithmetic on a float64 table": lambda t, s: control(t, s, work=torch.float32),
            "rank counted in float32 (rank loss)": lambda t, s: control(t, s, rank=float32_rank),
            "absolute rank threshold": lambda t, s: control(t, s, rank=lambda table, sv: int((sv > 1e-5).sum())),
            "float32 returned for a float64 table": lambda t, s: rank_matched_control(t.float(), s),
        },
        hints={
            "full-rank random table at the same norm": "full rank", "unit singular values (wrong scale)": "wrong scale",
            "normalised to Frobenius norm 1 (wrong scale)": "wrong scale",
            "flat spectrum at the same norm": "not only their sum of squares",
            "a permutation of the rows": "permutation", "torch's global generator (nondeterministic)": "global generator",
            "torch.manual_seed(seed) on the global generator": "reseeded",
            "seed ignored (generator seeded with 0)": "seed is ignored",
            "left singular vectors kept (only the columns rotated)": "kept the left singular vectors",
            "right singular vectors kept (only the token side rotated)": "kept the right singular vectors",
            "float32 arithmetic on a float64 table": "float32 arithmetic",
            "rank counted in float32 (rank loss)": "rank loss", "absolute rank threshold": "rank loss",
            "float32 returned for a float64 table": "table's dtype",
        },
    ),
    Contract(
        checks.check_11_signature_vs_control,
        reference=signature_vs_control,
        wrong={
            "the ΔS¹⁺² table": lambda *a: race(*a, orders=(1, 2)),
            "the signature at its own scale": lambda *a: race(*a, scale=False),
            "control seeded with the model seed s": lambda *a: race(*a, offset=0),
            "own control instead of make_control": lambda *a: race(*a, own=True),
            "embedding left to learn": lambda *a: race(*a, learn=True),
            "W1 and W2 at γ = 0.5": lambda *a: race(*a, gamma=0.5),
            "recorded every step": lambda *a: race(*a, every=1),
            "below the lower level, not the midpoint": lambda *a: race(*a, at_level=True),
            "rows interleaved (seed-major)": lambda *a: race(*a, rows="interleaved"),
            "conditions swapped": lambda *a: race(*a, rows="swapped"),
        },
        hints={
            "the ΔS¹⁺² table": "ΔS¹⁺²⁺³", "the signature at its own scale": "matched norm",
            "control seeded with the model seed s": "100 + s", "own control instead of make_control": "never called",
            "embedding left to learn": "frozen", "W1 and W2 at γ = 0.5": "γ = 1", "recorded every step": "record every 10",
            "below the lower level, not the midpoint": "midpoint", "rows interleaved (seed-major)": "condition-major",
            "conditions swapped": "condition-major",
        },
    ),
]

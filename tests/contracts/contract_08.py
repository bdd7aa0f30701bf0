"""Lesson 08: reference answers and typical mistakes for each check."""

from __future__ import annotations

import math

import torch

from contracts import Contract, train_once
from ctxlab import checks
from ctxlab.checks.lesson08 import layernorm_norms_reference, no_plateau_corner_reference
from ctxlab.checks.lesson08_build import classify_cells_reference, decay_threshold_reference, phase_map_labels_reference
from ctxlab.models import make_model
from ctxlab.theory import plateau_levels


def longest_corner(gammas, lrs, plateau):
    return no_plateau_corner_reference(gammas, lrs, -torch.as_tensor(plateau))


def nan_ignored(gammas, lrs, plateau):
    """Averages the finite cells of each edge but keeps the unstable column."""
    def mean(t):
        return float(t[~t.isnan()].mean())
    g = gammas[0] if mean(plateau[0]) < mean(plateau[-1]) else gammas[-1]
    r = lrs[0] if mean(plateau[:, 0]) < mean(plateau[:, -1]) else lrs[-1]
    return float(g), float(r)


def smallest_corner_cell(gammas, lrs, plateau):
    """The corner cell with the smallest finite rest (ties: the first one)."""
    corners = [(0, 0), (0, len(lrs) - 1), (len(gammas) - 1, 0), (len(gammas) - 1, len(lrs) - 1)]
    finite = [(float(plateau[i, j]), i, j) for i, j in corners if not math.isnan(float(plateau[i, j]))]
    _, i, j = min(finite, key=lambda t: t[0])
    return float(gammas[i]), float(lrs[j])


def rms_norms(E):
    return (E / (E.pow(2).mean(-1, keepdim=True) + 1e-5).sqrt()).norm(dim=-1)


def unbiased_norms(E):
    c = E - E.mean(-1, keepdim=True)
    return (c / (c.var(-1, keepdim=True) + 1e-5).sqrt()).norm(dim=-1)


# --- exercise 3a: label each run (learner-style wrong answers, written without the check's helpers) ---------


def labels_with(steps, losses, levels, min_rest, *, diverged=torch.isfinite, dead="left", rest="dwell", strict=False):
    h0, mid = levels[0], (levels[0] + levels[1]) / 2
    width = steps.diff().double()

    def label(loss):
        loss = loss.double()
        if not bool(diverged(loss).all()):
            return "diverged"
        near = (loss - h0).abs() <= 0.01
        ends_on = bool(near[-1])
        left = {"left": not bool(near.all()), "ends": True, "below": bool((loss < mid).any()), "never": False}[dead]
        if ends_on and left:
            return "dead"
        on = near[1:] & near[:-1]
        if rest != "near":
            on &= loss.diff().abs() / width <= 0.0001
        if rest == "points":
            length = int(on.sum())
        elif rest == "longest":
            length, run = 0, 0
            for w, flag in zip(width.tolist(), on.tolist()):
                run = run + w if flag else 0
                length = max(length, run)
        elif rest == "wait":
            below = (loss < mid).nonzero()
            length = int(steps[below[0, 0]]) if len(below) else int(steps[-1])
        else:
            length = int(width[on].sum())
        return "rest" if (length > min_rest if strict else length >= min_rest) else "no rest"

    return [[label(curve) for curve in row] for row in losses]


def nan_only(loss):
    return ~loss.isnan()


# --- exercise 3b: the grid as one ensemble -----------------------------------------------------------------


def grid_labels(task, gammas, lrs, steps, min_rest, seed, *, layout="gamma-major", one_lr=False, one_gamma=False,
                record=True, transpose=False):
    if layout == "gamma-major":
        grid_g, grid_r = [g for g in gammas for _ in lrs], [r for _ in gammas for r in lrs]
    else:  # gamma varies fastest, but the table is still read gamma-major below
        grid_g, grid_r = [g for _ in lrs for g in gammas], [r for r in lrs for _ in gammas]
    model = make_model("mlp", task, gamma=[gammas[0]] * len(grid_g) if one_gamma else grid_g, seed=seed, d=16, hidden=32)
    kwargs = {"on_divergence": "record"} if record else {}
    run = train_once(model, task.population, steps, lr=1.0 if one_lr else grid_r, record_every=5, progress=False, **kwargs)
    table = classify_cells_reference(run.steps, run.loss.reshape(len(gammas), len(lrs), -1), plateau_levels(task.population), min_rest)
    return [list(col) for col in zip(*table)] if transpose else table


# --- exercise 3c: the weight-decay threshold ------------------------------------------------------------------


def threshold_with(decays, losses, levels, *, leaves="halfway", pick="smallest", every=True):
    losses = torch.as_tensor(losses).double()
    mid = (levels[0] + levels[1]) / 2
    left = {"halfway": (losses < mid).any(-1), "reach": (losses < levels[0] - 0.01).any(-1),
            "final": losses[:, -1] < mid}[leaves].tolist()
    verdicts = {}
    for lam, gone in zip(decays, left):
        verdicts.setdefault(float(lam), []).append(not gone)
    stays = {lam: (all(v) if every else any(v)) for lam, v in verdicts.items()}
    good = [lam for lam, ok in stays.items() if ok]
    if pick == "largest":
        return max(good) if good else math.inf
    if pick == "listed":
        return next((float(lam) for lam in decays if stays[float(lam)]), math.inf)
    if pick == "last leaving":
        return max((lam for lam, ok in stays.items() if not ok), default=math.inf)
    if pick == "above leaving":
        top = max((lam for lam, ok in stays.items() if not ok), default=-math.inf)
        return min((lam for lam in good if lam > top), default=math.inf)
    if pick == "none as None":
        return min(good) if good else None
    if pick == "none as nan":
        return min(good) if good else math.nan
    if pick == "index":
        return [float(v) for v in decays].index(min(good)) if good else math.inf
    return min(good) if good else math.inf


CONTRACT = [
    Contract(
        checks.check_08_no_plateau_corner,
        reference=no_plateau_corner_reference,
        wrong={
            "corner with the longest rest": longest_corner,
            "(lr, gamma) swapped": lambda gammas, lrs, plateau: no_plateau_corner_reference(gammas, lrs, plateau)[::-1],
            "unstable column kept": nan_ignored,
            "always (smallest gamma, largest lr)": lambda gammas, lrs, plateau: (float(min(gammas)), float(max(lrs))),
            "smallest corner cell": smallest_corner_cell,
        },
    ),
    Contract(
        checks.check_08_layernorm_norms,
        reference=layernorm_norms_reference,
        wrong={
            "sqrt(d), epsilon ignored": lambda E: torch.full((E.shape[0],), math.sqrt(E.shape[1]), dtype=torch.float64),
            "unbiased variance": unbiased_norms,
            "RMSNorm (no centring)": rms_norms,
            "norm before normalisation": lambda E: E.norm(dim=-1),
            "epsilon added to the standard deviation": lambda E: ((E - E.mean(-1, keepdim=True)) / (
                (E - E.mean(-1, keepdim=True)).pow(2).mean(-1, keepdim=True).sqrt() + 1e-5)).norm(dim=-1),
            "torch layer_norm in float32 with eps 1e-6": lambda E: torch.nn.functional.layer_norm(E.float(), (E.shape[1],), eps=1e-6).norm(dim=-1),
        },
    ),
    Contract(
        checks.check_08_classify_cells,
        reference=classify_cells_reference,
        wrong={
            "dead runs read as rests (the old figure bug)": lambda s, l, h, m: labels_with(s, l, h, m, dead="never"),
            "dead whenever it ends on H0, even if it never left": lambda s, l, h, m: labels_with(s, l, h, m, dead="ends"),
            "dead only after going down the stair": lambda s, l, h, m: labels_with(s, l, h, m, dead="below"),
            "rest = any time near H0 (no flatness)": lambda s, l, h, m: labels_with(s, l, h, m, rest="near"),
            "rest counted in recorded points": lambda s, l, h, m: labels_with(s, l, h, m, rest="points"),
            "rest = the longest contiguous stretch": lambda s, l, h, m: labels_with(s, l, h, m, rest="longest"),
            "rest = the wait before the first stair": lambda s, l, h, m: labels_with(s, l, h, m, rest="wait"),
            "more than min_rest instead of at least": lambda s, l, h, m: labels_with(s, l, h, m, strict=True),
            "only NaN counts as diverged": lambda s, l, h, m: labels_with(s, l, h, m, diverged=nan_only),
            "lr and γ axes swapped": lambda s, l, h, m: [list(c) for c in zip(*classify_cells_reference(s, l, h, m))],
        },
        hints={"dead runs read as rests (the old figure bug)": "old figure", "dead whenever it ends on H0, even if it never left": "never left",
               "dead only after going down the stair": "ABOVE", "rest = any time near H0 (no flatness)": "FLAT",
               "rest counted in recorded points": "recorded points", "rest = the longest contiguous stretch": "interrupts",
               "rest = the wait before the first stair": "wait", "more than min_rest instead of at least": "AT LEAST",
               "only NaN counts as diverged": "NaN OR infinite", "lr and γ axes swapped": "transposed"},
    ),
    Contract(
        checks.check_08_phase_map_labels,
        reference=phase_map_labels_reference,
        wrong={
            "training stops at the first diverged run": lambda *a: grid_labels(*a, record=False),
            "lr and γ axes swapped": lambda *a: grid_labels(*a, transpose=True),
            "models laid out γ-fastest, read γ-major": lambda *a: grid_labels(*a, layout="lr-major"),
            "one learning rate for every model": lambda *a: grid_labels(*a, one_lr=True),
            "one γ for every model": lambda *a: grid_labels(*a, one_gamma=True),
        },
        hints={"training stops at the first diverged run": "record a diverged run", "lr and γ axes swapped": "transposed",
               "models laid out γ-fastest, read γ-major": "paired the wrong way",
               "one learning rate for every model": "its own learning rate", "one γ for every model": "its own γ"},
    ),
    Contract(
        checks.check_08_decay_threshold,
        reference=decay_threshold_reference,
        wrong={
            "the largest staying decay": lambda d, l, h: threshold_with(d, l, h, pick="largest"),
            "decays assumed sorted": lambda d, l, h: threshold_with(d, l, h, pick="listed"),
            "the last decay that leaves": lambda d, l, h: threshold_with(d, l, h, pick="last leaving"),
            "the first staying decay above every leaving one": lambda d, l, h: threshold_with(d, l, h, pick="above leaving"),
            "a decay counts if any seed stays": lambda d, l, h: threshold_with(d, l, h, every=False),
            "leaving = 0.01 below H0": lambda d, l, h: threshold_with(d, l, h, leaves="reach"),
            "only the final loss read": lambda d, l, h: threshold_with(d, l, h, leaves="final"),
            "None when no decay stays": lambda d, l, h: threshold_with(d, l, h, pick="none as None"),
            "NaN when no decay stays": lambda d, l, h: threshold_with(d, l, h, pick="none as nan"),
            "the position of the decay": lambda d, l, h: threshold_with(d, l, h, pick="index"),
        },
        hints={"the largest staying decay": "LARGEST", "decays assumed sorted": "not sorted", "the last decay that leaves": "LEAVES",
               "the first staying decay above every leaving one": "even when a larger decay leaves",
               "a decay counts if any seed stays": "EVERY run", "leaving = 0.01 below H0": "halfway",
               "only the final loss read": "climbed back", "None when no decay stays": "math.inf",
               "NaN when no decay stays": "math.inf", "the position of the decay": "position"},
    ),
]

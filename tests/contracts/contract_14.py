"""Lesson 14 (fixed codes): reference answers and typical mistakes for each check."""

from __future__ import annotations

import math

import torch

from contracts import Contract, train_once
from ctxlab import checks
from ctxlab.align import subspace_fraction
from ctxlab.checks.lesson14_build import scale_codes_reference
from ctxlab.fixed_codes import binary_codes, first_layer_rows, fixed_code_ensemble
from ctxlab.models import make_model
from ctxlab.rungs import measure_runs
from ctxlab.theory import plateau_levels
from ctxlab.transplant import freeze_embedding, transplant


def _bits(vocab_size, d, bits, highest_first=False, signed=True):
    shifts = torch.arange(bits - 1, -1, -1) if highest_first else torch.arange(bits)
    table = ((torch.arange(vocab_size)[:, None] >> shifts) & 1).float()[:, torch.arange(d) % bits]
    return 2 * table - 1 if signed else table


def _width(vocab_size):
    return max(1, math.ceil(math.log2(vocab_size)))


def zero_padded(vocab_size, d):
    K = _width(vocab_size)
    table = torch.zeros(vocab_size, d)
    table[:, :K] = _bits(vocab_size, K, K)
    return table


def _share(M, S, centre_m, centre_s):
    M, S = M.double(), S.double()
    M, S = (M - M.mean(0) if centre_m else M), (S - S.mean(0) if centre_s else S)
    U, sv, _ = torch.linalg.svd(S, full_matrices=False)
    U = U[:, sv > 1e-6 * sv.max()]
    return float((U.T @ M).pow(2).sum() / M.pow(2).sum())


def each_column_separately(M, S):
    Mc, Sc = M.double() - M.double().mean(0), S.double() - S.double().mean(0)
    unit = Sc / Sc.norm(dim=0)
    return float((unit.T @ Mc).pow(2).sum() / Mc.pow(2).sum())


CONTRACT = [
    Contract(
        checks.check_14_code_table,
        reference=lambda V, d: binary_codes(V, d),
        wrong={
            "0/1 bits": lambda V, d: _bits(V, d, _width(V), signed=False),
            "highest bit first": lambda V, d: _bits(V, d, _width(V), highest_first=True),
            "floor(log2 V) bits": lambda V, d: _bits(V, d, max(1, math.floor(math.log2(V)))),
            "ceil(log2(V + 1)) bits": lambda V, d: _bits(V, d, max(1, math.ceil(math.log2(V + 1)))),
            "zero-padded instead of tiled": zero_padded,
        },
    ),
    Contract(
        checks.check_14_first_layer_rows,
        reference=first_layer_rows,
        wrong={
            "every token through position 0's block": lambda E, W1, pos: E @ W1[: E.shape[1]],
            "sum of all positions' blocks": lambda E, W1, pos: E @ W1.reshape(-1, E.shape[1], W1.shape[1]).sum(0),
            "blocks taken as every L-th row": lambda E, W1, pos: torch.einsum(
                "vd,vdh->vh", E, W1.reshape(E.shape[1], -1, W1.shape[1]).transpose(0, 1)[pos]),
            "token id used as the position": lambda E, W1, pos: torch.einsum(
                "vd,vdh->vh", E, W1.reshape(-1, E.shape[1], W1.shape[1])[torch.arange(len(pos)) % (W1.shape[0] // E.shape[1])]),
        },
    ),
    Contract(
        checks.check_14_r2_in_span,
        reference=lambda M, S: float(subspace_fraction(M, S)),
        wrong={
            "nothing centred": lambda M, S: _share(M, S, False, False),
            "signature not centred": lambda M, S: _share(M, S, True, False),
            "ratio of norms, not of squared norms": lambda M, S: math.sqrt(float(subspace_fraction(M, S))),
            "projects on each column separately": each_column_separately,
        },
    ),
]


# --- the build: codes scaled to the learned table's size, and the run that reads them ----------------------------


def rms(table):
    return table.pow(2).mean(dim=(-2, -1), keepdim=True).sqrt()


def scale(codes, learned, *, size=rms, in_place=False, centre=False):
    """A learner's scale_codes, one mistake switched on."""
    start = codes - codes.mean() if centre else codes
    factor = size(learned.double()) / size(start.double())
    if in_place:
        return codes.mul_(factor.to(codes.dtype))
    return start * factor.to(codes.dtype)


def each_row(t):
    return t.pow(2).mean(-1, keepdim=True).sqrt()


def fit_scaled(task, codes, seeds, gamma, steps, d, hidden, *, codes_w1=True, scaled_w1_small=False,
               scaled_frozen=True, scaled_from="table", scale_fn=scale, read="right"):
    """A learner's run: learned table and ±1 codes from fixed_code_ensemble, the scaled codes in a second ensemble."""
    n = len(seeds)
    small = make_model("mlp", task, d=d, hidden=hidden, gamma=gamma, seed=list(seeds))
    own = small.embedding.detach().clone()
    scaled = {"table": lambda: torch.stack([scale_fn(codes, own[j]) for j in range(n)]),
              "d^-γ": lambda: (codes * d ** -gamma).expand(n, -1, -1), "up": lambda: own * rms(codes) / rms(own)}[scaled_from]()
    model, _ = fixed_code_ensemble(task, {"learned": None, "codes": codes}, seeds, gamma, d, hidden)
    if not codes_w1:
        with torch.no_grad():
            model.w1[n:] /= d ** -gamma
    transplant(small, dict(enumerate(scaled)))
    if scaled_frozen and scaled_from != "up":
        freeze_embedding(small, range(n))
    if scaled_w1_small:
        with torch.no_grad():
            small.w1 *= d ** -gamma
    levels = plateau_levels(task.population)
    out = {}
    for names, ensemble in ((("learned", "codes"), model), (("scaled codes",), small)):
        run = train_once(ensemble, task.population, steps, record_every=1, progress=False)
        for i, name in enumerate(names):
            loss = run.loss[i * n:(i + 1) * n]
            reads = measure_runs(run.steps, loss, levels)
            dwell = [r.rungs[0].dwell for r in reads]
            if read == "until it leaves":
                dwell = (loss < levels[0] - 0.01).float().argmax(1).tolist()
            onset = [r.rungs[1].reached if read == "reached" else r.rungs[1].onset for r in reads]
            out[name] = torch.tensor([[o, w] if read == "swapped" else [w, o] for w, o in zip(dwell, onset)])
    return out


CONTRACT += [
    Contract(
        checks.check_14_scale_codes,
        reference=scale_codes_reference,
        wrong={
            "each row to its own learned row": lambda c, lt: scale(c, lt, size=each_row),
            "one factor for the whole ensemble": lambda c, lt: scale(c, lt, size=lambda t: t.pow(2).mean().sqrt()),
            "largest entries matched": lambda c, lt: scale(c, lt, size=lambda t: t.abs().amax(dim=(-2, -1), keepdim=True)),
            "torch.std instead of the RMS": lambda c, lt: scale(c, lt, size=lambda t: t.std(dim=(-2, -1), keepdim=True)),
            "mean |entry| matched": lambda c, lt: scale(c, lt, size=lambda t: t.abs().mean(dim=(-2, -1), keepdim=True)),
            "Frobenius norms matched (width taken as d)": lambda c, lt: scale(c, lt, size=torch.linalg.matrix_norm),
            "the codes taken to have RMS 1": lambda c, lt: c * rms(lt).to(c.dtype),
            "the learned table scaled instead": lambda c, lt: lt * rms(c) / rms(lt),
            "codes re-centred first": lambda c, lt: scale(c, lt, centre=True),
            "scaled in place": lambda c, lt: scale(c, lt, in_place=True),
        },
        hints={
            "each row to its own learned row": "each row", "one factor for the whole ensemble": "whole ensemble",
            "largest entries matched": "largest", "torch.std instead of the RMS": "standard deviation",
            "mean |entry| matched": "mean absolute", "Frobenius norms matched (width taken as d)": "w columns",
            "the codes taken to have RMS 1": "codes' own RMS", "the learned table scaled instead": "codes that are scaled", "codes re-centred first": "re-centred",
            "scaled in place": "in place",
        },
    ),
    Contract(
        checks.check_14_scaled_codes_run,
        reference=fit_scaled,
        wrong={
            "scale_codes scales the codes in place": lambda *a: fit_scaled(*a, scale_fn=lambda c, lt: scale(c, lt, in_place=True)),
            "±1 codes without d^(−γ) in W1": lambda *a: fit_scaled(*a, codes_w1=False),
            "scaled codes' W1 times d^(−γ) too": lambda *a: fit_scaled(*a, scaled_w1_small=True),
            "scaled codes left trainable": lambda *a: fit_scaled(*a, scaled_frozen=False),
            "learned table scaled up to ±1 instead": lambda *a: fit_scaled(*a, scaled_from="up"),
            "codes × d^(−γ), not the table's own size": lambda *a: fit_scaled(*a, scaled_from="d^-γ"),
            "onset read as the step that reaches H1": lambda *a: fit_scaled(*a, read="reached"),
            "rest read as the step it leaves H0": lambda *a: fit_scaled(*a, read="until it leaves"),
            "pair in the wrong order": lambda *a: fit_scaled(*a, read="swapped"),
        },
        hints={
            "scale_codes scales the codes in place": "in place", "±1 codes without d^(−γ) in W1": "must carry",
            "scaled codes' W1 times d^(−γ) too": "keeps its own init", "scaled codes left trainable": "freeze them",
            "learned table scaled up to ±1 instead": "scaled up", "codes × d^(−γ), not the table's own size": "expected size",
            "onset read as the step that reaches H1": "halfway down", "rest read as the step it leaves H0": "dwell",
            "pair in the wrong order": "in that order",
        },
    ),
]

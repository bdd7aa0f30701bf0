"""Lesson 14 (fixed codes): reference answers and typical mistakes for each check."""

from __future__ import annotations

import math

import torch

from contracts import Contract
from ctxlab import checks
from ctxlab.align import subspace_fraction
from ctxlab.fixed_codes import binary_codes, first_layer_rows


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

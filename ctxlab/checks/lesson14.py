"""Checks for the exercises of lesson 14 (fixed codes): the code table, the first layer's token
representation and its R² in the span of a signature."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor

from ctxlab.align import subspace_fraction
from ctxlab.checks.core import (
    Case,
    Diagnosis,
    all_close,
    number_close,
    run_check,
    tensor_close,
)
from ctxlab.fixed_codes import binary_codes, code_width, first_layer_rows

# --- exercise: the code table --------------------------------------------------------------------


def _bits_table(vocab_size: int, d: int, bits: int, highest_first: bool = False) -> Tensor:
    """±1 codes of the ids with ``bits`` bits, tiled to d (the shapes of the usual mistakes)."""
    shifts = torch.arange(bits - 1, -1, -1) if highest_first else torch.arange(bits)
    table = ((torch.arange(vocab_size)[:, None] >> shifts) & 1).float()
    return (2 * table - 1)[:, torch.arange(d) % bits]


def check_14_code_table(fn: Callable[[int, int], Tensor]) -> None:
    """fn(vocab_size, d) -> [V, d]: bit (c mod ⌈log₂V⌉) of each id in column c, lowest bit first, as ±1."""
    specs = [("V = 24, d = 32", 24, 32, False), ("V = 5, d = 7", 5, 7, False), ("V = 2, d = 3", 2, 3, True),
             ("V = 32, d = 12 (a power of two)", 32, 12, True), ("V = 33, d = 6", 33, 6, True),
             ("V = 100, d = 7", 100, 7, True),
             ("V = 1, d = 3 (one token still gets K = max(1, ceil(log2 V)) = 1 bit)", 1, 3, True)]  # fmt: skip
    cases = [Case(label, (V, d), binary_codes(V, d), hidden) for label, V, d, hidden in specs]

    def zero_one(g, e, c: Case) -> bool:
        return all_close(g, (e + 1) / 2, 1e-6)

    def highest_first(g, e, c: Case) -> bool:
        V, d = c.args
        return all_close(g, _bits_table(V, d, code_width(V), highest_first=True), 1e-6)

    def too_few_bits(g, e, c: Case) -> bool:
        V, d = c.args
        return V > 2 and all_close(g, _bits_table(V, d, max(1, math.floor(math.log2(V)))), 1e-6)

    def one_bit_too_many(g, e, c: Case) -> bool:
        V, d = c.args
        return all_close(g, _bits_table(V, d, max(1, math.ceil(math.log2(V + 1)))), 1e-6)

    def zero_padded(g, e, c: Case) -> bool:
        V, d = c.args
        K = code_width(V)
        padded = torch.zeros(V, d)
        padded[:, :K] = e[:, :K]
        return d > K and all_close(g, padded, 1e-6)

    diagnoses = [
        Diagnosis(zero_one, "write the bits as ±1 (bit 1 -> +1, bit 0 -> -1), not 0/1"),
        Diagnosis(highest_first, "put the lowest bit first: column c holds bit (c mod K), bit 0 = id & 1"),
        Diagnosis(too_few_bits, "floor(log2 V) bits cannot tell V tokens apart when V is not a power of two: "
                                "use K = ceil(log2 V)"),
        Diagnosis(one_bit_too_many, "K = ceil(log2 V) bits: for V a power of two that is log2 V, not one more"),
        Diagnosis(zero_padded, "tile the K bits across all d columns (column c holds bit c mod K), do not pad with zeros"),
    ]  # fmt: skip
    run_check("check_14_code_table", fn, cases, tensor_close(1e-6), diagnoses)


# --- exercise: the first layer's token representation ----------------------------------------------


def _first_layer_cases() -> list[Case]:
    g = torch.Generator().manual_seed(14)
    specs = [
        ("hierarchy layout: V = 24, d = 32, 3 positions", 24, 32, 3, 16, torch.arange(24) // 8, False),
        ("V = 6, d = 4, 2 positions", 6, 4, 2, 5, torch.tensor([0, 0, 0, 1, 1, 1]), False),
        ("V = 10, d = 3, 4 positions, tokens not grouped", 10, 3, 4, 7, torch.tensor([3, 0, 2, 1, 3, 0, 2, 1, 0, 3]), True),
        ("V = 9, d = 5, 3 positions, one unused", 9, 5, 3, 2, torch.tensor([2, 0, 0, 2, 0, 2, 2, 0, 0]), True),
    ]  # fmt: skip
    cases = []
    for label, V, d, L, h, pos, hidden in specs:
        E, W1 = torch.randn(V, d, generator=g), torch.randn(L * d, h, generator=g)
        cases.append(Case(label, (E, W1, pos), first_layer_rows(E, W1, pos), hidden))
    return cases


def check_14_first_layer_rows(fn: Callable[[Tensor, Tensor, Tensor], Tensor]) -> None:
    """fn(E [V, d], W1 [L*d, hidden], positions [V]) -> [V, hidden]: E[s] @ W1_{positions[s]}."""

    def first_block(g, e, c: Case) -> bool:
        E, W1, _ = c.args
        return all_close(g, E @ W1[: E.shape[1]], 1e-5)

    def all_blocks(g, e, c: Case) -> bool:
        E, W1, _ = c.args
        return all_close(g, E @ W1.reshape(-1, E.shape[1], W1.shape[1]).sum(0), 1e-5)

    def interleaved(g, e, c: Case) -> bool:
        E, W1, pos = c.args
        d = E.shape[1]
        blocks = W1.reshape(d, -1, W1.shape[1]).transpose(0, 1)
        return all_close(g, torch.einsum("vd,vdh->vh", E, blocks[pos]), 1e-5)

    diagnoses = [
        Diagnosis(first_block, "every token went through the block of position 0: pick the block of the token's own "
                               "position, W1[l*d:(l+1)*d] with l = positions[s]"),
        Diagnosis(all_blocks, "you summed the blocks of all positions: a token is read only by the block of its own position"),
        Diagnosis(interleaved, "the blocks are consecutive rows of W1 (reshape to [L, d, hidden]), "
                               "not every L-th row ([d, L, hidden])"),
    ]  # fmt: skip
    run_check("check_14_first_layer_rows", fn, _first_layer_cases(), tensor_close(1e-4), diagnoses)


# --- exercise: R² in the span of a signature ---------------------------------------------------------


def _r2_cases() -> list[Case]:
    g = torch.Generator().manual_seed(41)
    low_rank = torch.randn(12, 2, generator=g) @ torch.randn(2, 5, generator=g) + 4.0
    near = low_rank @ torch.randn(5, 8, generator=g) + 0.5 * torch.randn(12, 8, generator=g) + 2.0
    skewed = torch.randn(9, 3, generator=g) @ torch.tensor([[1.0, 0.9, 0.0], [0.0, 0.3, 0.2], [0.0, 0.0, 1.0]])
    specs = [
        ("12 tokens, rank-2 signature with an offset", near, low_rank, False),
        ("random representation, 9 tokens", torch.randn(9, 6, generator=g) + 1.0, skewed + 3.0, False),
        ("signature with correlated columns", torch.randn(9, 4, generator=g) + skewed @ torch.randn(3, 4, generator=g),
         skewed, True),
        ("one-column signature, 20 tokens", torch.randn(20, 10, generator=g) + 5.0, torch.randn(20, 1, generator=g), True),
    ]  # fmt: skip
    return [Case(label, (M, S), float(subspace_fraction(M, S)), hidden) for label, M, S, hidden in specs]


def _share(M: Tensor, S: Tensor, centre_m: bool, centre_s: bool) -> float:
    """||P M||² / ||M||² with P onto the span of S, each centred over the tokens or not."""
    M, S = M.double(), S.double()
    M, S = (M - M.mean(0) if centre_m else M), (S - S.mean(0) if centre_s else S)
    U, sv, _ = torch.linalg.svd(S, full_matrices=False)
    U = U[:, sv > 1e-6 * sv.max()]
    return float((U.T @ M).pow(2).sum() / M.pow(2).sum())


def check_14_r2_in_span(fn: Callable[[Tensor, Tensor], float]) -> None:
    """fn(M [V, h], S [V, m]) -> share of the token-centred ||M||² in the token-space span of the centred S."""

    def uncentred(g, e, c: Case) -> bool:
        return all_close(g, _share(*c.args, centre_m=False, centre_s=False), 1e-6)

    def signature_uncentred(g, e, c: Case) -> bool:
        return all_close(g, _share(*c.args, centre_m=True, centre_s=False), 1e-6)

    def not_squared(g, e, c: Case) -> bool:
        return all_close(g, math.sqrt(max(e, 0.0)), 1e-6)

    def columns_not_orthonormal(g, e, c: Case) -> bool:
        M, S = (a.double() for a in c.args)
        Mc, Sc = M - M.mean(0), S - S.mean(0)
        unit = Sc / Sc.norm(dim=0)
        return all_close(g, float((unit.T @ Mc).pow(2).sum() / Mc.pow(2).sum()), 1e-6)

    diagnoses = [
        Diagnosis(uncentred, "centre M and S over the tokens (subtract the mean row) before projecting"),
        Diagnosis(signature_uncentred, "centre S too: its mean row would add the all-tokens direction to the span"),
        Diagnosis(not_squared, "a share of the squared norm: ||P Mc||² / ||Mc||², not the ratio of norms"),
        Diagnosis(columns_not_orthonormal, "S's columns are not orthogonal: project onto an orthonormal basis of "
                                           "their span (e.g. the left singular vectors), not onto each column"),
    ]  # fmt: skip
    run_check("check_14_r2_in_span", fn, _r2_cases(), number_close(1e-6), diagnoses)

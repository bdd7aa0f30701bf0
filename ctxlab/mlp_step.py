"""The Emb-MLP's forward and backward written out, for the CPU where every lesson trains.

Autograd's generic path for ``EmbMLP`` multiplies a one-hot matrix into the per-position tables and
lays its two small products with the read-out out badly for MKL (a batched [N, hidden] x [hidden, C]
product with C = 2 runs at a few per cent of the machine's peak). Written out:

* the first layer is a gather-and-sum of rows of the per-position tables E W1_l (``embedding_bag``),
  and its backward a scatter-add of the hidden gradient into those rows (``index_add_``, sequential and
  so deterministic on a CPU);
* the products with W2 are laid out as wide [C, hidden] x [hidden, N] products;
* GELU is torch's exact (erf) GELU and its backward torch's own, so the numbers are the generic path's
  up to the order of float sums (``benchmarks/cpu_efficiency.py`` compares 4000-step loss curves).

It is used for GELU models without LayerNorm on the CPU; anything else (other activations, LayerNorm,
a GPU, where the one-hot product is fast and ``index_add_`` is not deterministic) keeps autograd's path.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn


def stacked_rows(x: Tensor, n_models: int, vocab: int) -> Tensor:
    """Row indices [K*N, L] into the K models' stacked per-position tables [K*L*V, hidden]: model k,
    position l, token v is row (k L + l) V + v. ``x`` is [N, L] (shared) or [K, N, L] (per model)."""
    L = x.shape[-1]
    rows = x.long() + vocab * torch.arange(L, device=x.device)
    rows = rows.expand(n_models, *rows.shape[-2:]) if rows.ndim == 2 else rows
    rows = rows + (L * vocab * torch.arange(n_models, device=x.device))[:, None, None]
    return rows.reshape(-1, L)


class GeluMLP(torch.autograd.Function):
    """logits [K, N, C] = gelu(sum_l (E W1_l)[x_l]) W2 for rows from :func:`stacked_rows`."""

    @staticmethod
    def forward(ctx, rows: Tensor, table: Tensor, w1: Tensor, w2: Tensor) -> Tensor:
        K, V, d = table.shape
        L, hidden = rows.shape[1], w1.shape[-1]
        w1 = w1.reshape(K, L, d, hidden)
        tables = (table[:, None] @ w1).reshape(K * L * V, hidden)
        u = nn.functional.embedding_bag(rows, tables, mode="sum").reshape(K, -1, hidden)
        a = nn.functional.gelu(u)
        slope = torch.ops.aten.gelu_backward(torch.ones_like(u), u)  # GELU'(u), while u is in cache
        ctx.save_for_backward(rows, table, w1, w2, slope, a)
        return (w2.transpose(1, 2) @ a.transpose(1, 2)).transpose(1, 2)

    @staticmethod
    def backward(ctx, grad_logits: Tensor):
        rows, table, w1, w2, slope, a = ctx.saved_tensors
        K, V, d = table.shape
        L, hidden = w1.shape[1], w1.shape[-1]
        grad_w2 = (grad_logits.transpose(1, 2) @ a).transpose(1, 2)
        grad_u = (grad_logits @ w2.transpose(1, 2)).mul_(slope).reshape(-1, hidden)
        grad_tables = torch.zeros(K * L * V, hidden, dtype=grad_u.dtype)
        for position in range(L):
            grad_tables.index_add_(0, rows[:, position], grad_u)
        grad_tables = grad_tables.reshape(K, L, V, hidden)
        grad_table = (grad_tables @ w1.transpose(2, 3)).sum(1)
        grad_w1 = (table.transpose(1, 2)[:, None] @ grad_tables).reshape(K, L * d, hidden)
        return None, grad_table, grad_w1, grad_w2


def gelu_mlp(x: Tensor, table: Tensor, w1: Tensor, w2: Tensor) -> Tensor:
    """The Emb-MLP's logits [K, N, C] through :class:`GeluMLP` (tokens [N, L] or [K, N, L])."""
    return GeluMLP.apply(stacked_rows(x, table.shape[0], table.shape[1]), table, w1, w2)


def fits(table: Tensor, activation: str, layernorm: bool) -> bool:
    """Whether the written-out step computes this model: GELU, no LayerNorm, on the CPU."""
    return activation == "gelu" and not layernorm and table.device.type == "cpu"

"""The Emb-MLP's forward and backward written out, for the CPU where every lesson trains.

Autograd's generic path for ``EmbMLP`` multiplies a one-hot matrix into the per-position tables and
lays its two small products with the read-out out badly for MKL (a batched [N, hidden] x [hidden, C]
product with C = 2 runs at a few per cent of the machine's peak). Written out:

* the first layer is a gather-and-sum of rows of the per-position tables E W1_l (``embedding_bag``),
  and its backward a scatter-add of the hidden gradient into those rows: a product with the sparse
  0/1 matrix of which sequence uses which row, built once when the same tokens come a second time
  (full-batch training passes one tensor every step), and ``index_add_`` for tokens seen once (a
  minibatch); both sum each row in a fixed order, so they are deterministic on a CPU;
* the products with W2 are laid out as wide [C, hidden] x [hidden, N] products, W2's transpose made
  contiguous first (MKL runs the strided one at less than half the speed);
* GELU is torch's exact (erf) GELU and its backward torch's own, so the numbers are the generic path's
  up to the order of float sums (``benchmarks/cpu_efficiency.py`` compares 4000-step loss curves).

It is used for GELU models without LayerNorm on the CPU; anything else (other activations, LayerNorm,
a GPU, where the one-hot product is fast and ``index_add_`` is not deterministic) keeps autograd's path.
"""

from __future__ import annotations

import warnings

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


def scatter_matrix(rows: Tensor, n_rows: int, dtype: torch.dtype) -> Tensor:
    """The sparse (CSR) [n_rows, K*N] matrix with a 1 where sequence n of model k uses a table row:
    its product with the hidden gradient [K*N, hidden] is the scatter-add into the tables' rows."""
    flat = rows.reshape(-1)
    counts = torch.zeros(n_rows + 1, dtype=torch.long)
    counts[1:] = torch.bincount(flat, minlength=n_rows).cumsum(0)
    sequence = torch.div(torch.argsort(flat, stable=True), rows.shape[1], rounding_mode="floor")
    with warnings.catch_warnings():  # torch calls its CSR support beta; the product used here is plain
        warnings.simplefilter("ignore", UserWarning)
        return torch.sparse_csr_tensor(counts, sequence, torch.ones(flat.numel(), dtype=dtype), (n_rows, rows.shape[0]))


class _LastTokens:
    """The rows of the last tokens seen, and their scatter matrix once the same tensor comes back
    unchanged (``_version`` counts in-place writes)."""

    def __init__(self) -> None:
        self.tokens, self.key, self.rows, self.scatter = None, None, None, None

    def __call__(self, x: Tensor, n_models: int, vocab: int, dtype: torch.dtype) -> tuple[Tensor, Tensor | None]:
        key = (n_models, vocab, dtype, x._version)
        if self.tokens is x and self.key == key:
            if self.scatter is None:
                self.scatter = scatter_matrix(self.rows, n_models * x.shape[-1] * vocab, dtype)
            return self.rows, self.scatter
        self.tokens, self.key, self.rows, self.scatter = x, key, stacked_rows(x, n_models, vocab), None
        return self.rows, None


last_tokens = _LastTokens()


class GeluMLP(torch.autograd.Function):
    """logits [K, N, C] = gelu(sum_l (E W1_l)[x_l]) W2 for rows from :func:`stacked_rows` (and, when
    there is one, their :func:`scatter_matrix`)."""

    @staticmethod
    def forward(ctx, rows: Tensor, scatter: Tensor | None, table: Tensor, w1: Tensor, w2: Tensor) -> Tensor:
        K, V, d = table.shape
        L, hidden = rows.shape[1], w1.shape[-1]
        w1 = w1.reshape(K, L, d, hidden)
        tables = (table[:, None] @ w1).reshape(K * L * V, hidden)
        u = nn.functional.embedding_bag(rows, tables, mode="sum").reshape(K, -1, hidden)
        a = nn.functional.gelu(u)
        ctx.scatter = scatter
        ctx.save_for_backward(rows, table, w1, w2, u, a)
        return (w2.transpose(1, 2).contiguous() @ a.transpose(1, 2)).transpose(1, 2)

    @staticmethod
    def backward(ctx, grad_logits: Tensor):
        rows, table, w1, w2, u, a = ctx.saved_tensors
        K, V, d = table.shape
        L, hidden = w1.shape[1], w1.shape[-1]
        grad_w2 = (grad_logits.transpose(1, 2) @ a).transpose(1, 2)
        grad_u = torch.ops.aten.gelu_backward(grad_logits @ w2.transpose(1, 2), u).reshape(-1, hidden)
        if ctx.scatter is not None:
            grad_tables = ctx.scatter @ grad_u
        else:
            grad_tables = torch.zeros(K * L * V, hidden, dtype=grad_u.dtype)
            for position in range(L):
                grad_tables.index_add_(0, rows[:, position], grad_u)
        grad_tables = grad_tables.reshape(K, L, V, hidden)
        grad_table = (grad_tables @ w1.transpose(2, 3)).sum(1)
        grad_w1 = (table.transpose(1, 2)[:, None] @ grad_tables).reshape(K, L * d, hidden)
        return None, None, grad_table, grad_w1, grad_w2


def gelu_mlp(x: Tensor, table: Tensor, w1: Tensor, w2: Tensor) -> Tensor:
    """The Emb-MLP's logits [K, N, C] through :class:`GeluMLP` (tokens [N, L] or [K, N, L])."""
    rows, scatter = last_tokens(x, table.shape[0], table.shape[1], table.dtype)
    return GeluMLP.apply(rows, scatter, table, w1, w2)


def fits(table: Tensor, activation: str, layernorm: bool) -> bool:
    """Whether the written-out step computes this model: GELU, no LayerNorm, on the CPU."""
    return activation == "gelu" and not layernorm and table.device.type == "cpu"

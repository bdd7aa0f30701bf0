"""The Emb-Attention model's forward and backward written out, for the CPU where lesson 07 trains.

The course's attention model is tiny (sequences of 4 tokens, widths 16 to 64), so autograd's generic
path spends its time on overhead: each step runs dozens of batched products over one [1 x 16] by
[16 x 4] matrix per sequence, and the backward adds a view, expand or reshape node for each of them.
Written out:

* the embedding is a row gather from the K stacked tables, and its backward a scatter-add
  (``index_add_``, sequential and so deterministic on a CPU);
* every product with a weight is one [K, N*L, a] x [K, a, b] product per model, as on the generic path,
  and the queries, keys and values come out of one such product (W_Q, W_K, W_V side by side);
* the per-sequence products (scores, attention times values, and their backward) are broadcast
  multiply-and-sum over the 4 positions, which is cheaper than a batched product at this size;
* the read-out mean over query positions is taken before W2 (the same sum, one product fewer);
* GELU is torch's exact (erf) GELU and its backward torch's own.

The numbers are the generic path's up to the order of float sums (``tests/test_cpu_step.py`` compares
logits, gradients and a training run's loss curve). On a 2-core VM lesson 07's run takes about a fifth
less time (``benchmarks/attention_step.py``): each of the step's small operations still costs tens of
microseconds there, and the step has about fifty of them. It serves GELU models with the MLP head and no
LayerNorm on the CPU; anything else keeps autograd's path.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn


def stacked_rows(x: Tensor, n_models: int, vocab: int) -> Tensor:
    """Row indices [K*N*L] into the K models' stacked tables [K*V, d]: model k, token v is row k V + v.
    ``x`` is [N, L] (shared) or [K, N, L] (per model)."""
    rows = x.long().expand(n_models, *x.shape[-2:]) if x.ndim == 2 else x.long()
    return (rows + vocab * torch.arange(n_models, device=x.device)[:, None, None]).reshape(-1)


def per_model(t: Tensor, w: Tensor) -> Tensor:
    """t [K, ..., a] times each model's own w [K, a, b]: [K, ..., b], as one matmul per model (a
    broadcast ``t @ w[:, None]`` would run one tiny product per sequence, many times slower on a CPU).
    Both of the attention model's paths use it."""
    return (t.reshape(t.shape[0], -1, t.shape[-1]) @ w).reshape(*t.shape[:-1], w.shape[-1])


def gram(t: Tensor, g: Tensor) -> Tensor:
    """sum over every row of t [K, ..., a] outer g [K, ..., b]: the weight gradient [K, a, b]."""
    return t.reshape(t.shape[0], -1, t.shape[-1]).transpose(1, 2) @ g.reshape(g.shape[0], -1, g.shape[-1])


class GeluAttention(torch.autograd.Function):
    """Mean-over-queries logits [K, N, C] of the attention model (``ctxlab.models.EmbAttention``)."""

    @staticmethod
    def forward(ctx, rows, table, position, w_q, w_k, w_v, w1, w2, uniform, residual: bool, last: bool):
        K, V, d = table.shape
        L, d_head = position.shape[1], w_q.shape[-1]
        h = table.reshape(K * V, d).index_select(0, rows).reshape(K, -1, L, d) + position[:, None]
        w_qkv = torch.cat([w_q, w_k, w_v], dim=-1)  # one product for queries, keys and values
        q, k, v = per_model(h, w_qkv).split([d_head, d_head, d], dim=-1)
        queries, q = (h[:, :, -1:], q[:, :, -1:]) if last else (h, q)  # [K, N, Q, d], [K, N, Q, d_head]
        scores = (q[:, :, :, None] * k[:, :, None]).sum(-1) / math.sqrt(d_head)  # [K, N, Q, L]
        attn = torch.where(uniform[:, None, None, None], 1.0 / L, torch.softmax(scores, dim=-1))
        r = (attn[..., None] * v[:, :, None]).sum(-2)  # [K, N, Q, d]
        if residual:
            r = r + queries
        u = per_model(r, w1)
        a = nn.functional.gelu(u)
        slope = torch.ops.aten.gelu_backward(torch.ones_like(u), u)  # GELU'(u), while u is in cache
        mean_a = a.mean(2)  # [K, N, hidden]
        ctx.save_for_backward(rows, h, q, k, v, attn, r, slope, mean_a, w_qkv, w1, w2, uniform)
        ctx.sizes, ctx.residual, ctx.last = (K, V, d, d_head), residual, last
        return (w2.transpose(1, 2) @ mean_a.transpose(1, 2)).transpose(1, 2)  # the layout MKL runs fastest

    @staticmethod
    def backward(ctx, grad_logits: Tensor):
        rows, h, q, k, v, attn, r, slope, mean_a, w_qkv, w1, w2, uniform = ctx.saved_tensors
        K, V, d, d_head = ctx.sizes
        grad_w2 = (grad_logits.transpose(1, 2) @ mean_a).transpose(1, 2)
        grad_u = slope * (grad_logits @ w2.transpose(1, 2))[:, :, None].div_(r.shape[2])  # [K, N, Q, hidden]
        grad_w1 = gram(r, grad_u)
        grad_r = per_model(grad_u, w1.transpose(1, 2))  # [K, N, Q, d]
        grad_attn = (grad_r[:, :, :, None] * v[:, :, None]).sum(-1)  # [K, N, Q, L]
        grad_v = (attn[..., None] * grad_r[:, :, :, None]).sum(2)  # [K, N, L, d]
        grad_scores = attn * (grad_attn - (grad_attn * attn).sum(-1, keepdim=True)) / math.sqrt(d_head)
        grad_scores = grad_scores.masked_fill(uniform[:, None, None, None], 0.0)  # frozen attention: no gradient
        grad_q = (grad_scores[..., None] * k[:, :, None]).sum(-2)  # [K, N, Q, d_head]
        grad_k = (grad_scores[..., None] * q[:, :, :, None]).sum(2)  # [K, N, L, d_head]
        if ctx.last:  # only the last position asked a question
            grad_q = torch.cat([torch.zeros_like(grad_k[:, :, :-1]), grad_q], dim=2)
        grad_qkv = torch.cat([grad_q, grad_k, grad_v], dim=-1)  # [K, N, L, 2 d_head + d]
        grad_h = per_model(grad_qkv, w_qkv.transpose(1, 2))
        if ctx.residual:
            if ctx.last:
                grad_h[:, :, -1:] += grad_r
            else:
                grad_h += grad_r
        grad_w_qkv = gram(h, grad_qkv).split([d_head, d_head, d], dim=-1)
        grad_table = torch.zeros(K * V, d, dtype=grad_h.dtype).index_add_(0, rows, grad_h.reshape(-1, d))
        return (None, grad_table.reshape(K, V, d), grad_h.sum(1), *grad_w_qkv, grad_w1, grad_w2, None, None, None)


def gelu_attention(model, x: Tensor) -> Tensor:
    """The logits [K, N, C] of an :class:`~ctxlab.models.EmbAttention` that :func:`fits`, through
    :class:`GeluAttention` (tokens [N, L] or [K, N, L])."""
    rows = stacked_rows(x, model.n_models, model.vocab_size)
    return GeluAttention.apply(rows, model.embedding, model.position, model.w_q, model.w_k, model.w_v, model.w1,
                               model.w2, model.uniform, model.residual, model.readout == "last")


def fits(table: Tensor, activation: str, layernorm: bool, mlp: bool) -> bool:
    """Whether the written-out step computes this model: a GELU MLP head, no LayerNorm, on the CPU."""
    return activation == "gelu" and mlp and not layernorm and table.device.type == "cpu"

"""Attention at small init (lesson 07): the attention to the target, the bag of context it starts
as, and the leading-order velocities of the embedding and of W_Q W_K^T."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from ctxlab.dataset import Dataset
from ctxlab.theory.first_stair import SLOPE_AT_ZERO
from ctxlab.train import cross_entropy
from ctxlab.validate import number

# sigma'(0) of each activation: gelu(u) = u * Phi(u) ~ u / 2 near 0.


def target_attention(task) -> Callable[[object], Tensor]:
    """A ``train`` probe: mean over sequences of attn[query = the key (last position), key = the
    position it names] for a pointer task (``info["target_position"]``); returns [K], 1/L while uniform."""
    where = task.info.get("target_position")
    if where is None:
        raise ValueError("target_attention needs a task with info['target_position'] (see pointer_task)")
    x = task.population.x
    rows = torch.arange(x.shape[0])

    def probe(model) -> Tensor:
        attn = model.attention(x.to(model.embedding.device))[:, :, -1, :]  # [K, N, L]
        return attn[:, rows, where.to(attn.device)].mean(1)

    return probe


def bag_of_context(model, x: Tensor) -> Tensor:
    """Attention output when every score is equal: mean_j (E[x_j] + P_j) W_V, [K, N, d].

    At small init the scores are O(eps^4), so this is what one attention layer computes at first.
    """
    h = model.embedding.detach()[:, x] + model.position.detach()[:, None]  # [K, N, L, d]
    return h.mean(2) @ model.w_v.detach()


def _uniform_attention_parts(model, data: Dataset):
    """What E2 and E3 share at uniform attention: h [K, N, L, d] and the bag-level error g [K, N, d]
    (dLoss/d o_i for every query i, leading order: p = u, through M = W1 W2)."""
    if not getattr(model, "mlp", False) or model.residual or model.layernorm or model.activation not in SLOPE_AT_ZERO:
        raise ValueError("E2/E3 are written for the default attention block: GELU/tanh/linear head, no residual, "
                         "no LayerNorm")
    x = data.x.cpu()
    h = (model.embedding.detach().double().cpu()[:, x] + model.position.detach().double().cpu()[:, None])
    M = model.w1.detach().double().cpu() @ model.w2.detach().double().cpu()
    u = torch.full((model.n_labels,), 1.0 / model.n_labels, dtype=torch.float64)
    error = (u - data.targets().double().cpu()) * data.weights.double().cpu()[:, None]  # w_n (p - y), p = u
    g = SLOPE_AT_ZERO[model.activation] / model.seq_len * error @ M.transpose(-1, -2)  # [K, N, d]
    return h, g


def attention_embedding_velocity(model, data: Dataset) -> Tensor:
    """E2, the leading-order -dLoss/dE of the attention model at uniform attention: [K, V, d].

    dE_s/dt = sigma'(0)/L * sum_j pi_j(s) (P(y | x_j = s) - u) (W_V W1 W2)^T: E1 with the bag in
    place of the positions."""
    _, g = _uniform_attention_parts(model, data)
    one_hot = torch.nn.functional.one_hot(data.x.cpu(), model.vocab_size).double()  # [N, L, V]
    # o_i = (1/L) sum_j h_j W_V for each of the L queries, so dLoss/dh_j = sum_i g (1/L) W_V^T = g W_V^T
    back = g @ model.w_v.detach().double().cpu().transpose(-1, -2)  # [K, N, d]
    return -torch.einsum("nlv,knd->kvd", one_hot, back).float()


def qk_force(model, data: Dataset) -> Tensor:
    """E3: -dLoss/dA for A = W_Q W_K^T at uniform attention, leading order: [K, d, d].

    -dR/dA = -1/(L sqrt(d_head)) E[sum_ij <g_i, (h_j - h_bar) W_V> h_i^T h_j], and since g_i = g for
    every query at uniform attention this is -1/sqrt(d_head) E[h_bar^T sum_j c_j h_j]: six weight
    factors (h_bar, h_j, h_j - h_bar, W_V, W1, W2), so O(eps^6)."""
    h, g = _uniform_attention_parts(model, data)
    v = (h - h.mean(2, keepdim=True)) @ model.w_v.detach().double().cpu()[:, None]  # (h_j - h_bar) W_V
    c = torch.einsum("knd,knld->knl", g, v)
    return -torch.einsum("knd,knl,knle->kde", h.mean(2), c, h).float() / model.d_head ** 0.5


def qk_velocity(model, data: Dataset) -> tuple[Tensor, Tensor]:
    """dA/dt under gradient flow on W_Q and W_K: (E3's prediction G W_K W_K^T + W_Q W_Q^T G with
    G = :func:`qk_force`, the exact value -grad_Q W_K^T - W_Q grad_K^T by autograd), each [K, d, d]."""
    G = qk_force(model, data).double()
    wq, wk = model.w_q.detach().double().cpu(), model.w_k.detach().double().cpu()
    predicted = G @ wk @ wk.transpose(-1, -2) + wq @ wq.transpose(-1, -2) @ G
    model.zero_grad(set_to_none=True)
    cross_entropy(model(data.x), data).sum().backward()
    gq, gk = model.w_q.grad.detach().double().cpu(), model.w_k.grad.detach().double().cpu()
    model.zero_grad(set_to_none=True)
    actual = -gq @ wk.transpose(-1, -2) - wq @ gk.transpose(-1, -2)
    return predicted.float(), actual.float()


def departure_step(steps: Tensor, curve: Tensor, tol: float, relative: bool = False) -> Tensor:
    """First recorded step where ``curve`` [..., T] leaves its starting value by more than ``tol``.

    With ``relative=True`` the tolerance is ``tol * |curve[..., 0]|`` (for norms that start > 0).
    Returns [...] steps, -1 where the curve never leaves.
    """
    c = torch.as_tensor(curve, dtype=torch.float64)
    s = torch.as_tensor(steps)
    if c.shape[-1] != s.numel() or number(tol, "tol") <= 0:
        raise ValueError(f"need one curve value per recorded step ({s.numel()}) and tol > 0")
    start = c[..., :1]
    bound = tol * start.abs() if relative else torch.full_like(start, tol)
    out = (c - start).abs() > bound
    first = out.double().argmax(-1)
    return torch.where(out.any(-1), s[first], torch.full_like(first, -1, dtype=s.dtype))

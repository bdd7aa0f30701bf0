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


def _named_positions(task) -> Tensor:
    """[N]: the position each sequence's key names (a pointer task's ``info['target_position']``)."""
    where = task.info.get("target_position")
    if where is None:
        raise ValueError("needs a pointer task, with info['target_position'] (see pointer_task)")
    return where


def _named_position_groups(task) -> Tensor:
    """[N, n_ctx]: for each position a pointer task's key can name, the weights of a mean over the
    sequences whose key names it."""
    where = _named_positions(task)
    groups = torch.nn.functional.one_hot(where, task.seq_len - 1).double()
    return groups / groups.sum(0)


def key_attention_map(task) -> Callable[[object], Tensor]:
    """A ``train`` probe for a pointer task: the key's attention over all L positions, averaged over
    the sequences whose key names each context position: [K, n_ctx, L]. Where attention finds the
    target, row p peaks at column p."""
    groups, x = _named_position_groups(task), task.population.x

    def probe(model) -> Tensor:
        attn = model.attention(x.to(model.embedding.device))[:, :, -1, :]  # [K, N, L]
        return torch.einsum("knl,np->kpl", attn.double(), groups.to(attn.device)).to(attn.dtype)

    return probe


def misread_keys(model, task) -> list[dict[str, list[float]]]:
    """Per model, the key tokens of a pointer task whose attention (the mean over their sequences)
    peaks on a context position other than the one they name, each with that attention over the
    context positions: attention that has moved, but to the wrong place."""
    x, named = task.population.x, _named_positions(task)
    with torch.no_grad():
        attn = model.attention(x.to(model.embedding.device))[:, :, -1, :-1].double().cpu()  # [K, N, n_ctx]
    found = [{} for _ in range(attn.shape[0])]
    for token in x[:, -1].unique().tolist():
        rows = x[:, -1] == token
        mean = attn[:, rows].mean(1)  # [K, n_ctx]
        for k in (mean.argmax(-1) != named[rows][0]).nonzero().flatten().tolist():
            found[k][task.token_names[token]] = mean[k].tolist()
    return found


def target_attention(task, by_position: bool = False) -> Callable[[object], Tensor]:
    """A ``train`` probe: mean over sequences of attn[query = the key (last position), key = the
    position it names] for a pointer task; returns [K], 1/L while uniform. ``by_position=True``: the
    mean over the sequences whose key names each position, [K, n_ctx] (the diagonal of
    :func:`key_attention_map`)."""
    per_position = key_attention_map(task)
    shares = torch.bincount(task.info["target_position"], minlength=task.seq_len - 1).double() / task.population.n

    def probe(model) -> Tensor:
        diagonal = per_position(model).diagonal(dim1=-2, dim2=-1)  # [K, n_ctx]
        return diagonal if by_position else (diagonal.double() @ shares.to(diagonal.device)).to(diagonal.dtype)

    return probe


def bag_of_context(model, x: Tensor) -> Tensor:
    """Attention output when every score is equal: mean_j (E[x_j] + P_j) W_V, [K, N, d].

    At small init the scores are O(eps^4), so this is what one attention layer computes at first.
    """
    h = model.embedding.detach()[:, x] + model.position.detach()[:, None]  # [K, N, L, d]
    return h.mean(2) @ model.w_v.detach()


def _uniform_attention_parts(model, data: Dataset):
    """What E2 and E3 share at uniform attention: h [K, N, L, d], the bag-level error g [K, N, d]
    (dLoss/d o_i = w_i g for query i, leading order: p = u, through M = W1 W2) and the read-out
    weights w [L] of the queries (1/L each for a mean read-out; 1 for the last query alone)."""
    if not getattr(model, "mlp", False) or model.layernorm or model.activation not in SLOPE_AT_ZERO:
        raise ValueError("E2/E3 are written for the course's attention block: GELU/tanh/linear head, no LayerNorm")
    x = data.x.cpu()
    h = (model.embedding.detach().double().cpu()[:, x] + model.position.detach().double().cpu()[:, None])
    M = model.w1.detach().double().cpu() @ model.w2.detach().double().cpu()
    u = torch.full((model.n_labels,), 1.0 / model.n_labels, dtype=torch.float64)
    error = (u - data.targets().double().cpu()) * data.weights.double().cpu()[:, None]  # w_n (p - y), p = u
    g = SLOPE_AT_ZERO[model.activation] * error @ M.transpose(-1, -2)  # [K, N, d]
    L = model.seq_len
    w = torch.full((L,), 1.0 / L, dtype=torch.float64) if model.readout == "mean" else torch.eye(L, dtype=torch.float64)[-1]
    return h, g, w


def attention_embedding_velocity(model, data: Dataset) -> Tensor:
    """E2, the leading-order -dLoss/dE of the attention model at uniform attention: [K, V, d].

    Every query outputs the bag o = (1/L) sum_j h_j W_V, so the value path gives token s
    sigma'(0)/L * sum_j pi_j(s) (P(y | x_j = s) - u) (W_V W1 W2)^T whatever the read-out: E1 with the
    bag in place of the positions. A residual adds the direct path w_j sigma'(0) pi_j(s) (P(y | x_j = s) - u)
    (W1 W2)^T, with w_j the read-out weight of position j: for a last-position read-out, the last token's."""
    _, g, w = _uniform_attention_parts(model, data)
    one_hot = torch.nn.functional.one_hot(data.x.cpu(), model.vocab_size).double()  # [N, L, V]
    # o_i = (1/L) sum_j h_j W_V for every query and sum_i w_i = 1, so dLoss/dh_j = g W_V^T / L
    back = (g @ model.w_v.detach().double().cpu().transpose(-1, -2) / model.seq_len)[:, :, None] \
        + (w[:, None] * g[:, :, None] if model.residual else 0)  # [K, N, L, d]
    return -torch.einsum("nlv,knld->kvd", one_hot, back.expand(-1, -1, model.seq_len, -1)).float()


def qk_force(model, data: Dataset) -> Tensor:
    """E3: -dLoss/dA for A = W_Q W_K^T at uniform attention, leading order: [K, d, d].

    -dR/dA = -1/(L sqrt(d_head)) E[sum_ij w_i <g, (h_j - h_bar) W_V> h_i^T h_j] = -1/(L sqrt(d_head))
    E[q^T sum_j c_j h_j] with q = sum_i w_i h_i the read-out's query (h_bar for a mean read-out, h_L for
    the last position) and c_j = <g, (h_j - h_bar) W_V>: six weight factors (q, h_j, h_j - h_bar, W_V,
    W1, W2), so O(eps^6). A residual changes g's value, not this form."""
    h, g, w = _uniform_attention_parts(model, data)
    v = (h - h.mean(2, keepdim=True)) @ model.w_v.detach().double().cpu()[:, None]  # (h_j - h_bar) W_V
    c = torch.einsum("knd,knld->knl", g, v)
    query = torch.einsum("l,knld->knd", w, h)
    return -torch.einsum("knd,knl,knle->kde", query, c, h).float() / (model.seq_len * model.d_head ** 0.5)


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

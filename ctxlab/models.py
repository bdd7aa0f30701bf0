"""Small-init models, always as ensembles: every parameter has a leading model axis K.

Each of the K models has its own init exponent gamma and seed; every weight is drawn from
N(0, fan_in^(-2 gamma)) (the embedding table and positional table use the width d as fan-in, as
the paper's group does). Model k of an ensemble starts from exactly the numbers a stand-alone
model with the same gamma and seed would, so one batched run replaces K separate runs.

* :class:`EmbMLP`: concatenated token embeddings -> hidden layer -> label logits.
* :class:`EmbAttention`: embeddings + positions -> one softmax self-attention layer ->
  per-position MLP head -> logits averaged over positions (residual and LayerNorm optional).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import Tensor, nn

from ctxlab import attention_step, mlp_step
from ctxlab.attention_step import per_model
from ctxlab.env import init_jitter
from ctxlab.validate import integer, nonempty, token_ids

ACTIVATIONS = {
    "gelu": nn.functional.gelu,
    "relu": torch.relu,
    "tanh": torch.tanh,
    "linear": lambda u: u,
}


def _as_list(value, name: str) -> list:
    return list(value) if isinstance(value, (Sequence, Tensor)) and not isinstance(value, str) else [value]


def small_init(shape: Sequence[int], fan_in: int, gamma: float, generator: torch.Generator) -> Tensor:
    """The course's one init formula: entries N(0, fan_in^(-2 gamma)), drawn from ``generator``
    (times 1 + 1e-6 z when the portability test's jitter is on: :func:`ctxlab.env.init_jitter`)."""
    return init_jitter(torch.randn(*shape, generator=generator) * fan_in ** (-gamma))


def ensemble_grid(gammas, seeds) -> tuple[list[float], list[int]]:
    """All (gamma, seed) pairs, gamma-major: the usual layout of a sweep."""
    pairs = [(float(g), integer(s, "seeds")) for g in nonempty(_as_list(gammas, "gammas"), "gammas")
             for s in nonempty(_as_list(seeds, "seeds"), "seeds")]
    return [g for g, _ in pairs], [s for _, s in pairs]


class Ensemble(nn.Module):
    """Shared machinery: the gamma/seed bookkeeping and the small-init weight factory."""

    def __init__(self, gamma, seed) -> None:
        super().__init__()
        gammas, seeds = _as_list(gamma, "gamma"), _as_list(seed, "seed")
        if len(gammas) == 1 and len(seeds) > 1:
            gammas = gammas * len(seeds)
        if len(seeds) == 1 and len(gammas) > 1:
            seeds = seeds * len(gammas)
        if len(gammas) != len(seeds):
            raise ValueError(f"gamma and seed lists must have the same length, got {len(gammas)} and {len(seeds)}")
        nonempty(gammas, "gamma (one per model)")
        for g in gammas:
            if not (isinstance(g, (int, float)) and math.isfinite(g) and g > 0):
                raise ValueError(f"gamma must be a positive number (0.5 = standard init, 1 = small), got {g!r}")
        self.gammas = [float(g) for g in gammas]
        self.seeds = [integer(s, "seed") for s in seeds]
        self._generators = [torch.Generator().manual_seed(s) for s in self.seeds]

    @property
    def n_models(self) -> int:
        return len(self.gammas)

    def _weight(self, *shape: int, fan_in: int) -> nn.Parameter:
        """A [K, *shape] parameter; slice k ~ N(0, fan_in^(-2 gamma_k)), drawn from model k's own stream."""
        return nn.Parameter(torch.stack([small_init(shape, fan_in, g, gen) for g, gen in zip(self.gammas, self._generators)]))


def one_hot_embed(x: Tensor, table: Tensor) -> Tensor:
    """Look up rows of a [K, V, d] table for tokens x [N, L] (or [K, N, L]): [K, N, L, d].

    A one-hot matmul instead of indexing: its backward is much faster on a CPU.
    """
    one_hot = nn.functional.one_hot(x.long(), table.shape[-2]).to(table.dtype)
    if one_hot.ndim == 3:
        return torch.einsum("nlv,kvd->knld", one_hot, table)
    return torch.einsum("knlv,kvd->knld", one_hot, table)


def first_layer(x: Tensor, table: Tensor, w1: Tensor) -> Tensor:
    """concat(E[x_1], ..., E[x_L]) W1 as sum_l (E W1_l)[x_l]: [K, N, hidden].

    The same numbers as embedding then multiplying, with the big matmul over the L*V rows of the
    per-position tables instead of the L*d inputs of every sequence (cheaper when V < d*hidden/...);
    both matmuls are batched over models with the same shape per model, so model k of an ensemble
    computes exactly what it would alone.
    """
    K, V, d = table.shape
    L = w1.shape[1] // d
    per_position = table[:, None] @ w1.reshape(K, L, d, -1)  # [K, L, V, hidden]
    rows = x.long() + V * torch.arange(L, device=x.device)  # row of (position l, token x_l) in the stacked tables
    one_hot = nn.functional.one_hot(rows, L * V).sum(-2).to(table.dtype)  # [(K,) N, L*V]
    return one_hot @ per_position.reshape(K, L * V, -1)


def check_sizes(**sizes) -> None:
    """Every size a positive integer, named in the error if not."""
    for name, value in sizes.items():
        integer(value, name, minimum=1)


def _check_tokens(x: Tensor, vocab: int, seq_len: int | None = None) -> None:
    token_ids(x, "tokens")
    if x.ndim not in (2, 3):
        raise ValueError(f"tokens must be [N, L] (or [K, N, L]), got shape {tuple(x.shape)}")
    if seq_len is not None and x.shape[-1] != seq_len:
        raise ValueError(f"model expects sequences of length {seq_len}, got length {x.shape[-1]}")
    if x.numel() and (int(x.min()) < 0 or int(x.max()) >= vocab):
        raise ValueError(f"token ids must lie in [0, {vocab}), got range [{int(x.min())}, {int(x.max())}]")


class EmbMLP(Ensemble):
    """z = sigma(concat(E[x_1], ..., E[x_L]) W1) W2, no biases.

    Shapes: embedding [K, V, d], w1 [K, L*d, hidden], w2 [K, hidden, C]; logits [K, N, C].
    ``layernorm`` normalises each token's embedding before the MLP (it breaks the small-init
    scaling on purpose, for the lesson on knobs). On a CPU a GELU model trains through the
    written-out step of :mod:`ctxlab.mlp_step` (the same numbers up to float rounding; 1.7x faster than
    autograd's path on one thread in ``benchmarks/cpu_efficiency.py``);
    ``written_out = False`` keeps autograd's generic path, to compare against.
    """

    written_out = True

    def __init__(
        self,
        vocab_size: int,
        seq_len: int,
        n_labels: int,
        d: int = 32,
        hidden: int = 128,
        activation: str = "gelu",
        gamma=1.0,
        seed=0,
        layernorm: bool = False,
    ) -> None:
        super().__init__(gamma, seed)
        if activation not in ACTIVATIONS:
            raise ValueError(f"unknown activation {activation!r}; choose one of {sorted(ACTIVATIONS)}")
        check_sizes(vocab_size=vocab_size, seq_len=seq_len, n_labels=n_labels, d=d, hidden=hidden)
        self.vocab_size, self.seq_len, self.n_labels = vocab_size, seq_len, n_labels
        self.d, self.hidden, self.activation, self.layernorm = d, hidden, activation, layernorm
        self.embedding = self._weight(vocab_size, d, fan_in=d)
        self.w1 = self._weight(seq_len * d, hidden, fan_in=seq_len * d)
        self.w2 = self._weight(hidden, n_labels, fan_in=hidden)

    def forward(self, x: Tensor) -> Tensor:
        _check_tokens(x, self.vocab_size, self.seq_len)
        if self.written_out and mlp_step.fits(self.embedding, self.activation, self.layernorm):
            return mlp_step.gelu_mlp(x, self.embedding, self.w1, self.w2)
        if self.layernorm:
            h = nn.functional.layer_norm(one_hot_embed(x, self.embedding), (self.d,))  # [K, N, L, d]
            u = h.reshape(h.shape[0], h.shape[1], -1) @ self.w1
        else:
            u = first_layer(x, self.embedding, self.w1)
        return ACTIVATIONS[self.activation](u) @ self.w2


class EmbAttention(Ensemble):
    """One softmax self-attention layer over h_j = E[x_j] + P_j, then a per-position head.

    scores = (h W_Q)(h W_K)^T / sqrt(d_k); o = softmax(scores) (h W_V); r = o (+ h if residual);
    per-position logits sigma(r W1) W2 (or r W_out with ``mlp=False``), then ``readout="mean"`` (the
    default) averages them over positions and ``readout="last"`` keeps the last position's: the query
    that makes the prediction, as in a language model.
    With no residual (the default) the value path is the only way token identity reaches the
    head; with one, each position's own token reaches it directly too (lesson 07's model).
    ``uniform_attention`` (one bool, or one per model) freezes every attention weight at 1/L (W_Q and
    W_K get no gradient): the same model reduced to a bag of context, the baseline that shows what
    attention adds; one ensemble can hold both kinds.
    On a CPU a GELU model with the MLP head and no LayerNorm trains through the written-out step of
    :mod:`ctxlab.attention_step` (the same numbers up to the order of float sums); ``written_out = False``
    keeps autograd's generic path, to compare against.
    """

    written_out = True

    def __init__(
        self,
        vocab_size: int,
        seq_len: int,
        n_labels: int,
        d: int = 32,
        d_head: int | None = None,
        hidden: int = 128,
        activation: str = "gelu",
        gamma=1.0,
        seed=0,
        residual: bool = False,
        layernorm: bool = False,
        mlp: bool = True,
        uniform_attention: bool = False,
        readout: str = "mean",
    ) -> None:
        super().__init__(gamma, seed)
        if activation not in ACTIVATIONS:
            raise ValueError(f"unknown activation {activation!r}; choose one of {sorted(ACTIVATIONS)}")
        if readout not in ("mean", "last"):
            raise ValueError(f"readout must be 'mean' (logits averaged over positions) or 'last', got {readout!r}")
        d_head = d if d_head is None else d_head
        check_sizes(vocab_size=vocab_size, seq_len=seq_len, n_labels=n_labels, d=d, d_head=d_head, hidden=hidden)
        self.vocab_size, self.seq_len, self.n_labels = vocab_size, seq_len, n_labels
        self.d, self.d_head, self.hidden, self.activation = d, d_head, hidden, activation
        self.residual, self.layernorm, self.mlp, self.readout = residual, layernorm, mlp, readout
        uniform = [bool(u) for u in _as_list(uniform_attention, "uniform_attention")]
        if len(uniform) not in (1, self.n_models):
            raise ValueError(f"uniform_attention must be one bool or one per model ({self.n_models}), got {len(uniform)}")
        self.register_buffer("uniform", torch.tensor(uniform * (self.n_models // len(uniform))))
        self.embedding = self._weight(vocab_size, d, fan_in=d)
        self.position = self._weight(seq_len, d, fan_in=d)
        self.w_q = self._weight(d, d_head, fan_in=d)
        self.w_k = self._weight(d, d_head, fan_in=d)
        self.w_v = self._weight(d, d, fan_in=d)
        if mlp:
            self.w1 = self._weight(d, hidden, fan_in=d)
            self.w2 = self._weight(hidden, n_labels, fan_in=hidden)
        else:
            self.w_out = self._weight(d, n_labels, fan_in=d)

    def attention(self, x: Tensor) -> Tensor:
        """Attention weights [K, N, L, L] (query position, key position)."""
        h = self._inputs(x)
        return self._weights(h, h)

    def _inputs(self, x: Tensor) -> Tensor:
        _check_tokens(x, self.vocab_size, self.seq_len)
        return one_hot_embed(x, self.embedding) + self.position[:, None]  # [K, N, L, d]

    def _weights(self, queries: Tensor, h: Tensor) -> Tensor:
        """Softmax attention of ``queries`` [K, N, Q, d] over ``h`` [K, N, L, d] (1/L where frozen)."""
        attn = h.new_full((*queries.shape[:-1], h.shape[-2]), 1.0 / h.shape[-2])
        if not bool(self.uniform.all()):
            scores = per_model(queries, self.w_q) @ per_model(h, self.w_k).transpose(-1, -2) / math.sqrt(self.d_head)
            attn = torch.where(self.uniform[:, None, None, None], attn, torch.softmax(scores, dim=-1))
        return attn

    def forward(self, x: Tensor) -> Tensor:
        if self.written_out and attention_step.fits(self.embedding, self.activation, self.layernorm, self.mlp):
            _check_tokens(x, self.vocab_size, self.seq_len)
            return attention_step.gelu_attention(self, x)
        h = self._inputs(x)
        queries = h if self.readout == "mean" else h[:, :, -1:]  # a last-position read-out needs one query
        r = self._weights(queries, h) @ per_model(h, self.w_v)
        if self.residual:
            r = r + queries
        if self.layernorm:
            r = nn.functional.layer_norm(r, (self.d,))
        if self.mlp:
            z = per_model(ACTIVATIONS[self.activation](per_model(r, self.w1)), self.w2)
        else:
            z = per_model(r, self.w_out)
        return z.mean(dim=2)

    def qk_norm(self) -> Tensor:
        """||W_Q W_K^T||_F per model [K]: how far attention scores can move from uniform."""
        return torch.linalg.matrix_norm(self.w_q @ self.w_k.transpose(-1, -2))


class LinearEmb(Ensemble):
    """z = sum_i E[x_i] W^(i): embeddings times one linear read-out per position, nothing else.

    The simplest model with a learnable embedding: a two-factor linear network whose product map
    (``product_map`` in :mod:`ctxlab.theory`) follows the Saxe mode picture at small init.
    Shapes: embedding [K, V, d], w [K, L*d, C] (fan-in L*d); logits [K, N, C].
    """

    def __init__(self, vocab_size: int, seq_len: int, n_labels: int, d: int = 32, gamma=1.0, seed=0) -> None:
        super().__init__(gamma, seed)
        check_sizes(vocab_size=vocab_size, seq_len=seq_len, n_labels=n_labels, d=d)
        self.vocab_size, self.seq_len, self.n_labels, self.d = vocab_size, seq_len, n_labels, d
        self.embedding = self._weight(vocab_size, d, fan_in=d)
        self.w = self._weight(seq_len * d, n_labels, fan_in=seq_len * d)

    def forward(self, x: Tensor) -> Tensor:
        _check_tokens(x, self.vocab_size, self.seq_len)
        h = one_hot_embed(x, self.embedding)  # [K, N, L, d]
        return h.reshape(h.shape[0], h.shape[1], -1) @ self.w


MODELS = {"mlp": EmbMLP, "attention": EmbAttention, "linear": LinearEmb}


def make_model(kind: str, task, **kwargs) -> Ensemble:
    """Build a model sized for ``task`` (vocab, length, labels): ``kind`` is a key of ``MODELS``."""
    if kind not in MODELS:
        raise ValueError(f"unknown model {kind!r}; choose one of {sorted(MODELS)}")
    return MODELS[kind](task.vocab_size, task.seq_len, task.n_labels, **kwargs)

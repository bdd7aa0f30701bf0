"""Probability signatures: the token-conditioned label and context distributions of a dataset.

A signature gives each token ``s`` a row. For order k and a token at position i, the row lists
``P(y | x_i = s, x_J = t_J)`` over every set J of k-1 other positions, every context t_J and
every label y. Three forms:

* ``raw``: the conditional distribution itself.
* ``centered``: ``P(y | s, t_J) - P(y | t_J)``, i.e. what token s adds to its context.
* ``incremental``: the inclusion-exclusion (Moebius) interaction term,
  ``sum over T subset of S of (-1)^{|S|-|T|} P(y | x_T)``. Under independent positions the
  incremental terms of different orders are orthogonal functions, so each order carries only
  what the lower ones do not.

Token->context signatures are the same objects with a context token ``x_j`` as the label.
Everything is computed by weighted counting (``index_add``), so an exact population and a
sampled dataset go through the same code. Conditional entropies ``H(Y | X_S)`` are the plateau
losses a model can reach with statistics of the positions in S.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import torch
from torch import Tensor

from ctxlab.dataset import Dataset
from ctxlab.validate import integer, nonempty, number, token_ids

FORMS = ("raw", "centered", "incremental")
KINDS = ("label", "context")


@dataclass(frozen=True)
class Signature:
    """A signature matrix with one row per token.

    matrix: [V, m]; columns run over (token position i, context positions J, context tokens, label).
    frequency: [V] probability that a random position holds the token (rows of rare tokens are noisy).
    """

    matrix: Tensor
    order: int
    kind: str
    form: str
    tokens: tuple[str, ...]
    frequency: Tensor
    meta: dict = field(default_factory=dict)

    @property
    def name(self) -> str:
        return f"{self.kind}{self.order}-{self.form}"


def joint(data: Dataset, positions: tuple[int, ...]) -> Tensor:
    """P(x_S = t_S, y) as a tensor [V] * |S| + [C], by weighted counting over all rows at once."""
    V, C = data.vocab_size, data.n_labels
    flat = torch.zeros(data.x.shape[0], dtype=torch.long, device=data.x.device)
    for p in positions:
        flat = flat * V + data.x[:, p].long()
    if data.y.ndim == 1:  # integer labels: fold y into the index instead of a one-hot [N, C]
        table = torch.zeros(V ** len(positions) * C, dtype=torch.float64, device=data.x.device)
        table.index_add_(0, flat * C + data.y.long(), data.weights.to(torch.float64))
    else:
        mass = data.weights[:, None].to(torch.float64) * data.y.to(torch.float64)
        table = torch.zeros(V ** len(positions), C, dtype=torch.float64, device=data.x.device)
        table.index_add_(0, flat, mass)
    return table.reshape(*([V] * len(positions)), C)


def _conditional(table: Tensor) -> tuple[Tensor, Tensor]:
    """Split a joint table [..., C] into P(y | context) [..., C] (0 where undefined) and the mask."""
    marginal = table.sum(-1, keepdim=True)
    defined = marginal > 0
    return torch.where(defined, table / marginal.clamp_min(1e-300), torch.zeros_like(table)), defined


def _check_order(order: int, max_order: int, what: str) -> None:
    if not isinstance(order, int) or order < 0:
        raise ValueError(f"order must be a non-negative integer, got {order!r}")
    if order > max_order:
        raise ValueError(
            f"a {what} signature of order {order} conditions on {order} tokens, but the data "
            f"supports at most order {max_order}; use a lower order or longer sequences"
        )


def interaction(data: Dataset, S: tuple[int, ...]) -> Tensor:
    """Moebius interaction term Delta_S(t_S, y) [V]*|S| + [C] (0 where x_S = t_S never occurs)."""
    k = len(S)
    total = torch.zeros(*([data.vocab_size] * k), data.n_labels, dtype=torch.float64, device=data.x.device)
    for r in range(k + 1):
        for T in itertools.combinations(range(k), r):
            cond, _ = _conditional(joint(data, tuple(S[a] for a in T)))
            shape = [data.vocab_size if a in T else 1 for a in range(k)] + [data.n_labels]
            total = total + (-1) ** (k - r) * cond.reshape(shape)
    _, defined = _conditional(joint(data, S))
    return total * defined


def _block(data: Dataset, i: int, J: tuple[int, ...], form: str) -> Tensor:
    """The columns of one (position i, context set J) block: [V, V^|J| * C]."""
    S = (i,) + J
    if form == "incremental":
        sorted_S = tuple(sorted(S))
        block = interaction(data, sorted_S).permute(*[sorted_S.index(p) for p in S], len(S))
    else:
        sorted_S = tuple(sorted(S))
        table = joint(data, sorted_S).permute(*[sorted_S.index(p) for p in S], len(S))
        cond, defined = _conditional(table)
        context, _ = _conditional(table.sum(0))  # P(y | x_J = t_J)
        if form == "raw":
            block = torch.where(defined, cond, context.unsqueeze(0).expand_as(cond))
        else:
            block = (cond - context.unsqueeze(0)) * defined
    return block.reshape(data.vocab_size, -1)


def token_frequency(data: Dataset) -> Tensor:
    """P(a random position holds token s): [V]."""
    V, L = data.vocab_size, data.seq_len
    counts = torch.zeros(V, dtype=torch.float64, device=data.x.device)
    counts.index_add_(0, data.x.reshape(-1).long(), data.weights.to(torch.float64).repeat_interleave(L))
    return counts / L


def label_signature(data: Dataset, order: int = 1, form: str = "incremental", names=None) -> Signature:
    """Token->label signature of ``order``: rows over tokens, columns over (i, J, t_J, y).

    Order 0 is P(y) (the same row for every token); order 1 is P(y | x_i = s); order 2 adds one
    context token, and so on up to the sequence length.
    """
    if form not in FORMS:
        raise ValueError(f"unknown signature form {form!r}; choose one of {FORMS}")
    _check_order(order, data.seq_len, "label")
    V, L = data.vocab_size, data.seq_len
    if order == 0:
        py = joint(data, ()).reshape(1, -1)
        matrix = torch.zeros(V, data.n_labels, dtype=torch.float64) if form == "centered" else py.repeat(V, 1)
    else:
        blocks = [
            _block(data, i, J, form)
            for i in range(L)
            for J in itertools.combinations([p for p in range(L) if p != i], order - 1)
        ]
        matrix = torch.cat(blocks, dim=1)
    names = tuple(names) if names is not None else tuple(str(s) for s in range(V))
    return Signature(matrix.float(), order, "label", form, names, token_frequency(data).float())


def _with_label_at(data: Dataset, j: int) -> Dataset:
    """The same sequences with position j removed from the input and used as the label."""
    keep = [p for p in range(data.seq_len) if p != j]
    return Dataset(data.x[:, keep], data.x[:, j].long(), data.vocab_size, data.vocab_size, data.weights)


def context_signature(data: Dataset, order: int = 1, form: str = "raw", names=None) -> Signature:
    """Token->context signature: P(x_j = t | x_i = s, ...) for every other position j.

    Order 1 is the co-occurrence signature K_ij(s, t); for next-token text it holds the next- and
    previous-token distributions of s. Order k conditions on k-1 further context tokens.
    """
    if form not in FORMS:
        raise ValueError(f"unknown signature form {form!r}; choose one of {FORMS}")
    _check_order(order, data.seq_len - 1, "context")
    if order == 0:
        raise ValueError("a context signature needs order >= 1 (order 0 has no conditioning token)")
    V, L = data.vocab_size, data.seq_len
    blocks = []
    for j in range(L):
        reduced = _with_label_at(data, j)
        blocks += [
            _block(reduced, i, J, form)
            for i in range(L - 1)
            for J in itertools.combinations([p for p in range(L - 1) if p != i], order - 1)
        ]
    names = tuple(names) if names is not None else tuple(str(s) for s in range(V))
    return Signature(torch.cat(blocks, dim=1).float(), order, "context", form, names, token_frequency(data).float())


def signature(data: Dataset, order: int = 1, kind: str = "label", form: str = "incremental", names=None) -> Signature:
    """Dispatch on ``kind`` ("label" or "context")."""
    if kind not in KINDS:
        raise ValueError(f"unknown signature kind {kind!r}; choose one of {KINDS}")
    fn = label_signature if kind == "label" else context_signature
    return fn(data, order=order, form=form, names=names)


def conditional_entropy(data: Dataset, positions=()) -> float:
    """H(Y | X_S) in nats: the best cross-entropy reachable with the tokens at positions S."""
    positions = tuple(integer(p, "positions") for p in positions)
    if any(p < 0 or p >= data.seq_len for p in positions) or len(set(positions)) != len(positions):
        raise ValueError(f"positions {positions} must be distinct and lie in [0, {data.seq_len})")
    table = joint(data, positions).reshape(-1, data.n_labels)
    cond, _ = _conditional(table)
    logs = torch.where(table > 0, torch.log(cond.clamp_min(1e-300)), torch.zeros_like(cond))
    return max(0.0, float(-(table * logs).sum()))


@dataclass(frozen=True)
class Stair:
    """One rung of the entropy ladder: the best positions of a given order and their entropy."""

    order: int
    positions: tuple[int, ...]
    entropy: float


def entropy_ladder(data: Dataset, max_order: int | None = None) -> list[Stair]:
    """For k = 0..max_order, the minimum of H(Y | X_S) over position sets |S| = k.

    These are the predicted plateau losses of a model that learns statistics order by order.
    """
    max_order = data.seq_len if max_order is None else max_order
    _check_order(max_order, data.seq_len, "label")
    ladder = []
    for k in range(max_order + 1):
        best = min(itertools.combinations(range(data.seq_len), k), key=lambda S: conditional_entropy(data, S))
        ladder.append(Stair(k, best, conditional_entropy(data, best)))
    return ladder


# --- next-token text ---------------------------------------------------------------------------
def plateau_levels(data: Dataset, max_order: int | None = None) -> list[float]:
    """Predicted plateau losses H_0 >= H_1 >= ...: the best entropy with order-k statistics
    (the staircase's predicted rungs; :meth:`ctxlab.tasks.Task.plateau_levels` adds a task's own ladder)."""
    return [stair.entropy for stair in entropy_ladder(data, max_order)]


# For text the label of position t is the next token x_{t+1}. Counting runs over the token stream
# with one index_add, so a million tokens take about a second.


def bucket_rare(tokens: Tensor, vocab_size: int, keep: int) -> tuple[Tensor, Tensor]:
    """Map the ``keep`` most frequent tokens to ids 0..keep-1 and every other token to ``keep``.

    Returns (new token stream, original ids of the kept tokens in frequency order).
    """
    _stream(tokens, vocab_size)
    if not 1 <= integer(keep, "keep") <= vocab_size:
        raise ValueError(f"keep must lie in [1, {vocab_size}], got {keep}")
    counts = torch.bincount(tokens, minlength=vocab_size)
    kept = counts.argsort(descending=True, stable=True)[:keep]
    remap = torch.full((vocab_size,), keep, dtype=torch.long)
    remap[kept] = torch.arange(keep)
    return remap[tokens], kept


def _stream(tokens: Tensor, vocab_size: int, min_length: int = 1) -> Tensor:
    """Check a token stream: 1-d integer ids in [0, vocab_size), at least ``min_length`` of them."""
    tokens = token_ids(tokens, "tokens")
    integer(vocab_size, "vocab_size", minimum=1)
    if tokens.ndim != 1 or len(tokens) < min_length:
        raise ValueError(f"tokens must be a 1-d stream of at least {min_length} token ids, got shape {tuple(tokens.shape)}")
    if int(tokens.min()) < 0 or int(tokens.max()) >= vocab_size:
        raise ValueError(f"tokens must lie in [0, {vocab_size}), found [{int(tokens.min())}, {int(tokens.max())}]")
    return tokens


def _pair_counts(tokens: Tensor, vocab_size: int) -> Tensor:
    """C[a, b] = number of times token b follows token a: [V, V] float64."""
    _stream(tokens, vocab_size, 2)
    counts = torch.zeros(vocab_size * vocab_size, dtype=torch.float64)
    counts.index_add_(0, tokens[:-1] * vocab_size + tokens[1:], torch.ones(len(tokens) - 1, dtype=torch.float64))
    return counts.reshape(vocab_size, vocab_size)


def _rows_normalised(counts: Tensor) -> Tensor:
    return counts / counts.sum(-1, keepdim=True).clamp_min(1e-300)


def bigram_signature(tokens: Tensor, vocab_size: int, names=None) -> Signature:
    """Order-1 text signature of token s: [P(next | s), P(previous | s)], a [V, 2V] matrix."""
    counts = _pair_counts(tokens, vocab_size)
    matrix = torch.cat([_rows_normalised(counts), _rows_normalised(counts.T)], dim=1)
    freq = torch.bincount(tokens, minlength=vocab_size).double() / len(tokens)
    names = tuple(names) if names is not None else tuple(str(s) for s in range(vocab_size))
    return Signature(matrix.float(), 1, "text", "raw", names, freq.float())


def trigram_increment(tokens: Tensor, vocab_size: int, names=None) -> Signature:
    """Order-2 text signature of token s at position t: the interaction with the token before it,
    P(x_{t+1} | x_{t-1}, x_t = s) - P(x_{t+1} | x_t = s) - P(x_{t+1} | x_{t-1}) + P(x_{t+1}): [V, V*V]."""
    _stream(tokens, vocab_size, 3)
    windows = torch.stack([tokens[:-2], tokens[1:-1]], dim=1)
    data = Dataset(windows, tokens[2:], vocab_size, vocab_size, torch.full((len(windows),), 1.0 / len(windows)))
    matrix = interaction(data, (1, 0)).reshape(vocab_size, -1)
    freq = torch.bincount(tokens, minlength=vocab_size).double() / len(tokens)
    names = tuple(names) if names is not None else tuple(str(s) for s in range(vocab_size))
    return Signature(matrix.float(), 2, "text", "incremental", names, freq.float())


def _ngram_index(stream: Tensor, vocab_size: int, n: int) -> Tensor:
    """Each window of n tokens as one integer in [0, V^n), the last token varying fastest."""
    idx = torch.zeros(len(stream) - n + 1, dtype=torch.long)
    for k in range(n):
        idx = idx * vocab_size + stream[k : len(stream) - n + 1 + k]
    return idx


MAX_NGRAM_ENTRIES = 150_000_000  # a 512-token BPE trigram table fits; bigger vocabularies need bucketing


def ngram_tables(tokens: Tensor, vocab_size: int, max_n: int = 3, alpha: float = 0.1) -> list[Tensor]:
    """Smoothed n-gram models P(next | previous n-1 tokens) for n = 1..max_n: [V^(n-1), V] float64 each.

    The unigram adds ``alpha`` to every count. Each higher order adds alpha·V pseudo-counts spread
    by the order below (a Dirichlet prior centred on the (n-1)-gram), so a rare context falls back to
    the shorter one instead of to a uniform guess: with plain add-alpha a 512-token BPE trigram
    model scores worse on held-out text than the bigram model.
    """
    integer(max_n, "max_n", minimum=1)
    number(alpha, "alpha", positive=True)
    _stream(tokens, vocab_size)
    if vocab_size**max_n > MAX_NGRAM_ENTRIES:
        raise ValueError(
            f"a dense {max_n}-gram table over {vocab_size} tokens is too big; bucket rare tokens first "
            "(ctxlab.signatures.bucket_rare) or use a character tokenizer"
        )
    if len(tokens) <= max_n:
        raise ValueError(f"stream too short for {max_n}-grams")
    tables: list[Tensor] = []
    for n in range(1, max_n + 1):
        counts = torch.zeros(vocab_size**n, dtype=torch.float64)
        counts.index_add_(0, _ngram_index(tokens, vocab_size, n), torch.ones(len(tokens) - n + 1, dtype=torch.float64))
        if n == 1:
            counts.add_(alpha)
        else:  # context (u, ...) falls back to the row of its last n-2 tokens in the table below
            counts.view(vocab_size, -1, vocab_size).add_(tables[-1], alpha=alpha * vocab_size)
        counts = counts.view(-1, vocab_size)
        tables.append(counts.div_(counts.sum(-1, keepdim=True)))
    return tables


def held_out_cross_entropies(tables: list[Tensor], held_out: Tensor, vocab_size: int) -> list[float]:
    """Cross-entropy in nats of each table of :func:`ngram_tables` (orders 1, 2, ...) on ``held_out``."""
    nonempty(tables, "tables")
    _stream(held_out, vocab_size)
    if len(held_out) <= len(tables):
        raise ValueError(f"held-out stream too short for {len(tables)}-grams")
    return [float(-table.view(-1)[_ngram_index(held_out, vocab_size, n)].log().mean())
            for n, table in enumerate(tables, start=1)]


def ngram_cross_entropies(train: Tensor, held_out: Tensor, vocab_size: int, max_n: int = 3, alpha: float = 0.1) -> list[float]:
    """Held-out H(X_{t+1} | previous n-1 tokens) for n = 1..max_n, in nats.

    Each n-gram model (:func:`ngram_tables`) is counted on ``train`` and scored on ``held_out``:
    plug-in entropies on the training text itself are biased low.
    """
    return held_out_cross_entropies(ngram_tables(train, vocab_size, max_n, alpha), held_out, vocab_size)

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
import math
from dataclasses import dataclass, field

import torch
from torch import Tensor

from ctxlab.tasks import Dataset

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
    mass = data.weights[:, None].to(torch.float64) * data.targets().to(torch.float64)
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
    positions = tuple(positions)
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


def uniform_entropy(n_labels: int) -> float:
    """ln C: the loss of a model that predicts the uniform distribution (all logits equal)."""
    return math.log(n_labels)

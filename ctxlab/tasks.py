"""Synthetic sequence tasks whose label depends on the input through a known ladder of orders.

Every task has an exact *population*: each input sequence with its probability and its label
distribution, so losses, signatures and entropies can be computed exactly. ``Task.sample``
draws a finite training set from it when you want estimation noise.

* :func:`hierarchy_task` -- the label mixes an order-1 term (a key token), an order-2 term
  (key + one anchor) and an order-3 term (key + two anchors): three stairs.
* :func:`xor_task` -- an order-1 group label plus a pair term ``h(x1) xor k(x2)`` that carries
  no order-1 signal at all (``groups=1`` keeps only the pair term).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import torch
from torch import Tensor


@dataclass(frozen=True)
class Dataset:
    """Sequences with labels and probability weights.

    x: [N, L] token ids in ``[0, vocab_size)``.
    y: [N] integer labels, or [N, C] label distributions (soft labels of an exact population).
    weights: [N] non-negative, summing to 1 (the population probability of each row, or 1/N).
    """

    x: Tensor
    y: Tensor
    vocab_size: int
    n_labels: int
    weights: Tensor

    def __post_init__(self) -> None:
        x, y, w = self.x, self.y, self.weights
        if x.ndim != 2:
            raise ValueError(f"x must be [N, L] token ids, got shape {tuple(x.shape)}")
        if x.shape[0] == 0 or x.shape[1] == 0:
            raise ValueError("empty dataset: x has no rows or no positions")
        if x.dtype not in (torch.int64, torch.int32):
            raise ValueError(f"x must hold integer token ids, got dtype {x.dtype}")
        if int(x.min()) < 0 or int(x.max()) >= self.vocab_size:
            raise ValueError(
                f"token ids must lie in [0, {self.vocab_size}), found range "
                f"[{int(x.min())}, {int(x.max())}]: check vocab_size or the tokenizer"
            )
        n = x.shape[0]
        if y.shape[0] != n or w.shape != (n,):
            raise ValueError(
                f"shape mismatch: x has {n} rows, y has shape {tuple(y.shape)}, weights {tuple(w.shape)}"
            )
        if y.ndim == 1:
            if y.dtype not in (torch.int64, torch.int32):
                raise ValueError("1-d labels must be integer class ids")
            if int(y.min()) < 0 or int(y.max()) >= self.n_labels:
                raise ValueError(f"labels must lie in [0, {self.n_labels}), found max {int(y.max())}")
        elif y.ndim != 2 or y.shape[1] != self.n_labels:
            raise ValueError(f"soft labels must be [N, {self.n_labels}], got {tuple(y.shape)}")
        if bool((w < 0).any()) or abs(float(w.sum()) - 1.0) > 1e-4:
            raise ValueError("weights must be non-negative and sum to 1")

    @property
    def n(self) -> int:
        return self.x.shape[0]

    @property
    def seq_len(self) -> int:
        return self.x.shape[1]

    def targets(self) -> Tensor:
        """Label distributions [N, C] (one-hot rows for integer labels)."""
        if self.y.ndim == 2:
            return self.y.to(torch.float32)
        return torch.nn.functional.one_hot(self.y.long(), self.n_labels).to(torch.float32)

    def to(self, device) -> "Dataset":
        return Dataset(self.x.to(device), self.y.to(device), self.vocab_size, self.n_labels, self.weights.to(device))


@dataclass(frozen=True)
class Task:
    """A task: its exact population plus what a lesson needs to talk about its tokens.

    roles: one name per token (e.g. ``"key"``), used to group tokens in plots and norms.
    """

    name: str
    population: Dataset
    token_names: tuple[str, ...]
    roles: tuple[str, ...]
    description: str
    info: dict = field(default_factory=dict)

    @property
    def vocab_size(self) -> int:
        return self.population.vocab_size

    @property
    def seq_len(self) -> int:
        return self.population.seq_len

    @property
    def n_labels(self) -> int:
        return self.population.n_labels

    def sample(self, n: int, seed: int = 0) -> Dataset:
        """Draw ``n`` i.i.d. (sequence, label) pairs from the population, each weighted 1/n."""
        if n <= 0:
            raise ValueError(f"n must be positive, got {n}")
        g = torch.Generator().manual_seed(seed)
        pop = self.population
        rows = torch.multinomial(pop.weights, n, replacement=True, generator=g)
        labels = torch.multinomial(pop.targets()[rows], 1, generator=g).squeeze(1)
        return Dataset(pop.x[rows], labels, pop.vocab_size, pop.n_labels, torch.full((n,), 1.0 / n))

    def role_tokens(self, role: str) -> Tensor:
        """Token ids that play ``role``."""
        ids = [i for i, r in enumerate(self.roles) if r == role]
        if not ids:
            raise ValueError(f"task {self.name!r} has no role {role!r}; roles are {sorted(set(self.roles))}")
        return torch.tensor(ids)


def _all_sequences(choices: list[list[int]]) -> Tensor:
    """Every sequence whose position i takes a value from ``choices[i]``: [prod |choices|, L]."""
    return torch.tensor(list(itertools.product(*choices)), dtype=torch.long)


def hierarchy_task(block: int = 9, n_values: int = 3, mix: tuple[float, ...] = (0.4, 0.3, 0.3)) -> Task:
    """Key token x1 and anchors x2, x3, ..., each position with its own block of ``block`` tokens.

    Every token carries an attribute in Z_{n_values} (``index within block mod n_values``).
    The label is ``A(x1) + ... + A(x_{k})  (mod n_values)`` with probability ``mix[k-1]``:
    an order-1 term, an order-2 term, ... up to order ``len(mix)``. With the defaults the
    plateau losses are ln 3 = 1.0986, H(Y|x1) = 0.9503, H(Y|x1,x2) = 0.8419, H(Y|X) = 0.6630.
    """
    if block < 1 or n_values < 2 or block % n_values:
        raise ValueError("need block >= 1, n_values >= 2 and block divisible by n_values")
    mix_t = torch.tensor(mix, dtype=torch.float64)
    if len(mix) < 1 or bool((mix_t < 0).any()) or abs(float(mix_t.sum()) - 1.0) > 1e-9:
        raise ValueError(f"mix must be non-negative probabilities summing to 1, got {mix}")
    L = len(mix)
    x = _all_sequences([[p * block + j for j in range(block)] for p in range(L)])
    attr = torch.arange(L * block) % block % n_values
    partial = torch.cumsum(attr[x], dim=1) % n_values  # [N, L]: sum of the first k attributes
    y = torch.zeros(x.shape[0], n_values, dtype=torch.float64)
    for k in range(L):
        y[torch.arange(x.shape[0]), partial[:, k]] += mix_t[k]
    role_names = ["key"] + [f"anchor{p}" for p in range(1, L)]
    names = tuple(f"{'k' if p == 0 else 'a' + str(p)}{j}" for p in range(L) for j in range(block))
    pop = Dataset(x, y.float(), L * block, n_values, torch.full((x.shape[0],), 1.0 / x.shape[0]))
    return Task(
        name="hierarchy",
        population=pop,
        token_names=names,
        roles=tuple(role_names[p] for p in range(L) for _ in range(block)),
        description=(
            f"label = sum of the first k token attributes mod {n_values}, k drawn with probabilities {tuple(mix)}"
        ),
        info={"attribute": attr, "mix": tuple(mix), "block": block},
    )


def xor_task(vocab: int = 16, groups: int = 4, seq_len: int = 3) -> Task:
    """The pair-interaction task: ``y = g(x1) + G * (h(x1) xor k(x2))``; later positions are noise.

    g(s) = s // (vocab/G) is the group (order-1 signal); h(s) = s mod 2 and k(s) = (s // 2) mod 2
    are bits balanced within each group, so the pair term has no order-1 signal at all.
    Plateaus: ln(2G) -> ln 2 -> 0. With ``groups=1`` only the pure XOR remains: ln 2 -> 0.
    """
    if groups < 1 or vocab % (2 * groups) or vocab < 4 or seq_len < 2:
        raise ValueError("need vocab divisible by 2*groups (vocab >= 4) and seq_len >= 2")
    x = _all_sequences([list(range(vocab))] * seq_len)
    tokens = torch.arange(vocab)
    g, h, k = tokens // (vocab // groups), tokens % 2, (tokens // 2) % 2
    y = g[x[:, 0]] + groups * (h[x[:, 0]] ^ k[x[:, 1]])
    pop = Dataset(x, y, vocab, 2 * groups, torch.full((x.shape[0],), 1.0 / x.shape[0]))
    return Task(
        name="xor",
        population=pop,
        token_names=tuple(f"t{s}" for s in range(vocab)),
        roles=("token",) * vocab,
        description=f"label = g(x1) + {groups} * (h(x1) xor k(x2)); positions 3.. are noise",
        info={"group": g, "h": h, "k": k},
    )


TASKS = {"hierarchy": hierarchy_task, "xor": xor_task}


def make_task(name: str, **kwargs) -> Task:
    """Build a task by name (``hierarchy`` or ``xor``)."""
    if name not in TASKS:
        raise ValueError(f"unknown task {name!r}; choose one of {sorted(TASKS)}")
    return TASKS[name](**kwargs)

"""Sequences with labels and probability weights: what every task, signature and training loop reads.

Its own module so that tasks (which build datasets) and signatures (which measure them) both
depend on it and not on each other.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from ctxlab.validate import finite


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
                raise ValueError(f"1-d labels y must be integer class ids, got dtype {y.dtype}")
            if int(y.min()) < 0 or int(y.max()) >= self.n_labels:
                raise ValueError(f"labels must lie in [0, {self.n_labels}), found max {int(y.max())}")
        elif y.ndim != 2 or y.shape[1] != self.n_labels:
            raise ValueError(f"soft labels y must be [N, {self.n_labels}], got {tuple(y.shape)}")
        elif bool((finite(y, "soft labels y", nonnegative=True).sum(-1) - 1).abs().max() > 1e-4):
            raise ValueError("soft labels y must be label distributions: each row sums to 1")
        if abs(float(finite(w, "weights", nonnegative=True).sum()) - 1.0) > 1e-4:
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

    def to(self, device) -> Dataset:
        return Dataset(self.x.to(device), self.y.to(device), self.vocab_size, self.n_labels, self.weights.to(device))

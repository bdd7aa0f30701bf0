"""What every task is: an exact population (each input sequence with its probability and its label
distribution, so losses, signatures and entropies are exact) plus names and roles for its tokens.
``Task.sample`` draws a finite training set from it when you want estimation noise."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import torch
from torch import Tensor

from ctxlab.dataset import Dataset
from ctxlab.signatures import plateau_levels
from ctxlab.validate import integer


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
        integer(n, "n", minimum=1)
        g = torch.Generator().manual_seed(seed)
        pop = self.population
        rows = torch.multinomial(pop.weights, n, replacement=True, generator=g)
        labels = torch.multinomial(pop.targets()[rows], 1, generator=g).squeeze(1)
        return Dataset(pop.x[rows], labels, pop.vocab_size, pop.n_labels, torch.full((n,), 1.0 / n))

    def plateau_levels(self) -> list[float]:
        """Predicted plateau losses: the task's own ladder (``info["levels"]``) when it defines one,
        else the entropy ladder of its population (costly for long sequences: V^L tables)."""
        if "levels" in self.info:
            return [float(h) for h in self.info["levels"]]
        return plateau_levels(self.population)

    def role_tokens(self, role: str) -> Tensor:
        """Token ids that play ``role``."""
        ids = [i for i, r in enumerate(self.roles) if r == role]
        if not ids:
            raise ValueError(f"task {self.name!r} has no role {role!r}; roles are {sorted(set(self.roles))}")
        return torch.tensor(ids)


def all_sequences(choices: list[list[int]]) -> Tensor:
    """Every sequence with position i drawn from ``choices[i]`` (the product), one per row [N, L]."""
    """Every sequence whose position i takes a value from ``choices[i]``: [prod |choices|, L]."""
    return torch.tensor(list(itertools.product(*choices)), dtype=torch.long)

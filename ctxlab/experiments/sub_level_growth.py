"""The *which* mode on the *whether* sub-level of a task over Z_n, n >= 3, measured in training: how fast it
grows there beside the rate 2 ln(1 + lr s) its drive gives at the same steps (lesson 17, where the forecast
of the staircase misses). The forecast reads that rate once, on the sub-level; this reads both at every
recorded step of a real run."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from ctxlab.models import ensemble_grid, make_model
from ctxlab.rungs import TOL, longest_tread_at
from ctxlab.theory.next_stair import whether_levels
from ctxlab.theory.plateaus import model_weights
from ctxlab.theory.predict import drive, drive_modes, mode_size
from ctxlab.train import train
from ctxlab.validate import integer, number


@dataclass(frozen=True)
class SubLevelGrowth:
    """One run per (γ, seed): the loss [K, T] at ``steps`` [T]; along the drive's top mode (taken in the middle
    of each run's rest on the sub-level) its size a^T E W1 b [K, T] (signed, positive at the end) and the rate 2 ln(1 + lr s(t)) [K, T]
    that the drive's top singular value s(t) gives; ``rests``: each run's (first, last) recorded step within
    0.01 of the sub-level on its longest flat stretch there (None where it does not rest there); ``middles``: the recorded index in the middle of each rest, where the
    mode is taken."""

    gammas: list[float]
    seeds: list[int]
    name: str
    level: float
    steps: Tensor
    loss: Tensor
    size: Tensor
    drive_rate: Tensor
    rests: list[tuple[int, int] | None]
    middles: list[int]

    def measured_rate(self) -> Tensor:
        """d ln(size) / d step between recorded steps [K, T - 1], placed at the earlier step."""
        return self.size.abs().log().diff(dim=1) / self.steps.diff().double()

    def held_rate(self, k: int) -> Tensor:
        """Run k's size from the middle of its rest to the rest's end if it grew at the rate the drive gives in
        the middle [T] (NaN outside that stretch): the growth a forecast that holds the rate fixed assumes."""
        out = torch.full(self.steps.shape, float("nan"), dtype=torch.float64)
        i, rest = self.middles[k], self.rests[k]
        if rest is not None:
            span = (self.steps >= self.steps[i]) & (self.steps <= rest[1])
            out[span] = self.size[k, i] * torch.exp(self.drive_rate[k, i] * (self.steps[span] - self.steps[i]).double())
        return out


def sub_level_growth(task, gammas=(1.0,), seeds=(0, 1, 2), order: int = 2, lr: float = 0.5, d: int = 32,
                     hidden: int = 128, steps: int = 2400, every: int = 50) -> SubLevelGrowth:
    """Train Emb-MLP on a hierarchy task over Z_n (n >= 3) and follow the *which* mode of ``order`` (its tokens
    enter at position order - 1) on the sub-level H(Y | x1 .. x_{order-1}, [A(x_order) = 0])."""
    if task.n_labels < 3:
        raise ValueError("a binary task has no whether sub-level: whether is which (use n_values >= 3)")
    data, position = task.population, integer(order, "order") - 1
    if not 1 <= position < data.seq_len:
        raise ValueError(f"order must lie in [2, {data.seq_len}]: the first stair has no sub-level to leave")
    number(lr, "lr", positive=True)
    every = integer(every, "every", minimum=1)
    g, s = ensemble_grid(list(gammas), list(seeds))
    model = make_model("mlp", task, gamma=g, seed=s, d=d, hidden=hidden)
    targets = data.targets().double()

    def own_drive(net) -> Tensor:  # the drive with the model's own residual e_y - p(x), at the recorded step
        with torch.no_grad():
            probs = torch.softmax(net(data.x), dim=-1).double()
        return drive(*model_weights(net), data, position, targets[None] - probs)

    traj = train(model, data, integer(steps, "steps"), lr=lr, record_every=every, progress=False,
                 probes={"drive": own_drive, "first_layer": lambda net: model_weights(net)[1]})
    t, loss = traj.steps, traj.loss.double()
    drives, weights = traj.extras["drive"].unbind(1), list(zip(traj.embeddings.double().unbind(1),
                                                              traj.extras["first_layer"].unbind(1)))
    name, level = whether_levels(task)[position]
    tokens = data.x[:, position].unique()
    rests, middles, middle = [], [], []
    for k in range(len(g)):
        tread = longest_tread_at(t, loss[k], level)
        near = None if tread is None else t[(t >= tread.first) & (t <= tread.last) & ((loss[k] - level).abs() <= TOL)]
        rests.append(None if near is None or len(near) < 2 else (int(near[0]), int(near[-1])))
        at = len(t) // 2 if rests[-1] is None else int((t - sum(rests[-1]) / 2).abs().argmin())
        middles.append(at)
        middle.append(drives[at][k])
    mode = drive_modes(torch.stack(middle), tokens, 1)[0]
    size = torch.stack([mode_size(E, W1, position, mode) for E, W1 in weights], 1)
    size = size * size[:, -1:].sign()
    top = torch.stack([torch.linalg.svdvals(M[:, tokens])[:, 0] for M in drives], 1)
    return SubLevelGrowth(g, s, name, level, t, loss, size, 2 * torch.log1p(lr * top), rests, middles)

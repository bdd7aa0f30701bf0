"""Train an ensemble of K models at once and record what the lessons look at.

Full-batch gradient descent is the default because it is the discretised gradient flow the
theory describes; Adam and minibatch SGD are there as contrasts. Learning rates may differ per
model, so a gamma x learning-rate phase map is one batched run. The result is a
:class:`Trajectory`: losses, embedding snapshots and any probes at the recorded steps.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch
from torch import Tensor

from ctxlab import cpu
from ctxlab.env import device as pick_device
from ctxlab.env import progress_enabled
from ctxlab.models import Ensemble
from ctxlab.optimizer import Optimizer
from ctxlab.dataset import Dataset
from ctxlab.validate import integer, number

OPTIMIZERS = ("gd", "sgd", "momentum", "adam")
ON_DIVERGENCE = ("raise", "record")
# A loss above this many times max(its step-0 value, 1 nat) has exploded. Runs that recover stay far
# below it (the quick phase map: at most 2.1x its start; the cells that blow up reach over 1000x).
EXPLOSION_FACTOR = 10.0

Probe = Callable[[Ensemble], Tensor]


@dataclass
class Trajectory:
    """What a training run recorded, all on the CPU.

    steps: [T] recorded steps (0 = initialization); loss: [K, T] loss on the whole dataset;
    embeddings: [K, T, V, d]; extras: name -> [K, T, ...] from the probes.
    diverged_at: [K] first step where the model's loss was NaN, infinite or exploding (-1: never);
    a diverged model was frozen there: its loss is NaN at later recorded steps (it has no honest
    value), its embedding stays at the frozen state.
    """

    steps: Tensor
    loss: Tensor
    embeddings: Tensor
    extras: dict[str, Tensor] = field(default_factory=dict)
    gammas: list[float] = field(default_factory=list)
    seeds: list[int] = field(default_factory=list)
    config: dict = field(default_factory=dict)
    diverged_at: Tensor | None = None

    def __post_init__(self) -> None:
        if self.diverged_at is None:
            self.diverged_at = torch.full((self.loss.shape[0],), -1, dtype=torch.long)

    @property
    def n_models(self) -> int:
        return self.loss.shape[0]

    def index(self, step: int) -> int:
        """Position of the recorded step closest to ``step``."""
        return int(torch.argmin((self.steps - step).abs()))

    def select(self, models: Sequence[int]) -> "Trajectory":
        """The sub-ensemble of the given model indices."""
        idx = torch.as_tensor(list(models), dtype=torch.long)
        return Trajectory(
            self.steps,
            self.loss[idx],
            self.embeddings[idx],
            {k: v[idx] for k, v in self.extras.items()},
            [self.gammas[i] for i in idx.tolist()],
            [self.seeds[i] for i in idx.tolist()],
            dict(self.config),
            self.diverged_at[idx],
        )


class Recorder:
    """Preallocated [K, T, ...] buffers, filled in place at each recorded step.

    Thousands of small snapshot tensors allocated between the large per-step temporaries fragment
    the heap: on a CPU that cost hundreds of MB of resident memory for a few MB of data.
    """

    def __init__(self, n_records: int) -> None:
        self.n_records, self.index = n_records, 0
        self.buffers: dict[str, Tensor] = {}

    def put(self, name: str, value: Tensor) -> None:
        value = value.detach()
        if name not in self.buffers:
            self.buffers[name] = torch.empty(value.shape[0], self.n_records, *value.shape[1:], dtype=value.dtype)
        self.buffers[name][:, self.index].copy_(value)

    def advance(self) -> None:
        self.index += 1

    def trajectory(self, steps: list[int], model: Ensemble, diverged_at: Tensor, config: dict,
                   blank: Sequence[str] = ("loss",), extras: dict[str, Tensor] | None = None) -> "Trajectory":
        """What was recorded as a :class:`Trajectory`; the ``blank`` records read NaN after each model's
        divergence (they have no honest value there)."""
        for name in blank:
            self.buffers[name] = blank_after_divergence(self.buffers[name], steps, diverged_at)
        loss, embeddings = self.buffers.pop("loss"), self.buffers.pop("embedding")
        return Trajectory(torch.tensor(steps), loss, embeddings, self.buffers | (extras or {}), list(model.gammas),
                          list(model.seeds), config, diverged_at)


def cross_entropy(logits: Tensor, data: Dataset) -> Tensor:
    """Weighted cross-entropy of each model [K]: sum_n w_n * CE(logits[k, n], y_n)."""
    logp = torch.log_softmax(logits, dim=-1)
    if data.y.ndim == 1:
        per_row = -logp.gather(-1, data.y.long().expand(logits.shape[0], -1)[..., None]).squeeze(-1)
    else:
        per_row = -(logp * data.y.to(logp.dtype)).sum(-1)
    return per_row @ data.weights.to(logp.dtype)


def per_model(value, k: int, name: str, device) -> Tensor:
    """One finite non-negative value per model [k] from a number or a list (learning rates)."""
    if isinstance(value, Tensor) and (value.is_complex() or value.dtype == torch.bool):
        raise ValueError(f"{name} must be real numbers, got dtype {value.dtype}")
    try:
        values = torch.as_tensor(value, dtype=torch.float32, device=device).reshape(-1)
    except (TypeError, ValueError, RuntimeError):
        raise ValueError(f"{name} must be a number or one number per model, got {value!r}") from None
    if values.numel() == 1:
        values = values.expand(k)
    if values.numel() != k:
        raise ValueError(f"{name} must be a number or one value per model ({k}), got {values.numel()} values")
    if bool((values < 0).any()) or not bool(torch.isfinite(values).all()):
        raise ValueError(f"{name} must be finite and non-negative, got {values.tolist()}")
    return values


def check_training_settings(steps, momentum, weight_decay, on_divergence: str) -> None:
    """The checks both training loops make before they start (a per-model weight decay is checked by ``per_model``)."""
    integer(steps, "steps", minimum=0)
    if number(momentum, "momentum", minimum=0) >= 1:
        raise ValueError(f"momentum must lie in [0, 1), got {momentum!r}")
    if not isinstance(weight_decay, (Sequence, Tensor)) or isinstance(weight_decay, str):
        number(weight_decay, "weight_decay", minimum=0)
    if on_divergence not in ON_DIVERGENCE:
        raise ValueError(f"unknown on_divergence {on_divergence!r}; choose one of {ON_DIVERGENCE}")


def recorded_steps(steps: int, record_every: int | None, record_steps) -> list[int]:
    """The steps a loop records: ``record_steps`` checked, else every ``record_every`` (about 500 by default)."""
    if record_steps is not None:
        if isinstance(record_steps, (str, bytes)):
            raise ValueError(f"record_steps must be a list of integer steps, got {record_steps!r}")
        chosen = sorted({integer(s, "each of record_steps") for s in record_steps})
        if not chosen or chosen[0] < 0 or chosen[-1] > steps:
            raise ValueError(f"record_steps must be a non-empty list of steps in [0, {steps}]")
        return chosen
    every = max(1, steps // 500) if record_every is None else integer(record_every, "record_every", minimum=1)
    return sorted(set(range(0, steps + 1, every)) | {steps})


def blank_after_divergence(values: Tensor, steps: Sequence[int], diverged_at: Tensor) -> Tensor:
    """NaN in the records [K, T, ...] of each diverged model after the step where it diverged."""
    after = torch.as_tensor(list(steps))[None, :] > diverged_at[:, None]
    after &= (diverged_at >= 0)[:, None]
    return values.masked_fill(after.reshape(*after.shape, *[1] * (values.ndim - 2)), float("nan"))


class TrainingDiverged(RuntimeError):
    """Training met a NaN, infinite or exploding loss (``on_divergence="raise"``)."""


def describe_divergence(gammas: Sequence[float], seeds: Sequence[int], diverged_at: Tensor) -> str:
    """One line naming each diverged model: its index, gamma, seed and step."""
    parts = [f"model {k} (gamma {gammas[k]:g}, seed {seeds[k]}) at step {int(diverged_at[k])}"
             for k in (diverged_at >= 0).nonzero().flatten().tolist()]
    return "; ".join(parts)


class DivergenceWatch:
    """Checks every loss a training loop computes, model by model, before the update it drives.

    A loss that is NaN, infinite or above ``EXPLOSION_FACTOR`` times max(its step-0 value, 1)
    marks its model as diverged at that step. ``raise``: stop with :class:`TrainingDiverged`
    naming the models; ``record``: freeze those models (the optimizer keeps their parameters,
    so they stop moving and their numbers never feed the others) and carry on.
    """

    def __init__(self, model: Ensemble, optimizer: Optimizer, mode: str) -> None:
        self.model, self.optimizer, self.mode = model, optimizer, mode
        self.diverged_at = torch.full((model.n_models,), -1, dtype=torch.long)
        self.limit: Tensor | None = None

    def check(self, step: int, loss: Tensor) -> None:
        loss = loss.detach()
        if self.limit is None:
            self.limit = EXPLOSION_FACTOR * torch.where(torch.isfinite(loss), loss, 0.0).clamp_min(1.0)
        bad = ~torch.isfinite(loss) | (loss > self.limit)
        frozen = self.optimizer.frozen
        if frozen is not None:
            bad &= ~frozen
        if not bool(bad.any()):
            return
        self.diverged_at[bad.cpu()] = step
        if self.mode == "raise":
            fresh = torch.where(bad.cpu(), self.diverged_at, -1)
            values = ", ".join(f"{float(v):.3g}" for v in loss[bad].cpu())
            raise TrainingDiverged(
                f"training diverged (loss {values}: NaN, infinite or over {EXPLOSION_FACTOR:g}x its start): "
                f"{describe_divergence(self.model.gammas, self.model.seeds, fresh)}; lower the learning rate"
            )
        self.optimizer.frozen = bad if frozen is None else frozen | bad


def progress_bar(steps: int, desc: str, progress: bool | None):
    """A bar over the ``steps`` updates that ends at steps/steps (a bar closed short is drawn red)."""
    from tqdm.auto import tqdm

    return tqdm(total=steps, desc=desc, disable=not progress_enabled(progress), leave=False)


def descend(model: Ensemble, optimizer: Optimizer, steps: int, step_loss: Callable[[int], Tensor],
            observe: Callable[[int, Tensor | None], bool | None], bar, after_backward: Callable[[], None] | None = None) -> None:
    """The one gradient-descent loop every trainer shares: ``steps`` updates, each from ``step_loss(step)``
    ([K] losses, checked for divergence by the caller), with ``observe(step, loss)`` called before each
    update and once after the last (``loss`` None there), so that what is recorded at step s is the state
    that step s's update starts from; an ``observe`` that returns True ends the run there (a reduced network
    that has come to rest). ``after_backward`` runs between backward and the update (e.g. to average
    gradients over processes). It trains with the course's CPU habits (:func:`ctxlab.cpu.prepare`)."""
    cpu.prepare()
    with bar:
        for step in range(steps + 1):
            loss = step_loss(step) if step < steps else None
            if observe(step, loss) or loss is None:
                return
            model.zero_grad(set_to_none=True)
            loss.sum().backward()
            if after_backward is not None:
                after_backward()
            optimizer.step()
            bar.update()


def _check_fit(model: Ensemble, data: Dataset, steps, optimizer: str, momentum, weight_decay, batch_size,
               on_divergence: str) -> None:
    """What :func:`train` checks before it starts: the settings, and that the data fits the model."""
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"unknown optimizer {optimizer!r}; choose one of {OPTIMIZERS}")
    check_training_settings(steps, momentum, weight_decay, on_divergence)
    if batch_size is not None:
        integer(batch_size, "batch_size", minimum=1)
    if data.vocab_size != model.vocab_size or data.seq_len != model.seq_len or data.n_labels != model.n_labels:
        raise ValueError(
            f"data (vocab {data.vocab_size}, length {data.seq_len}, labels {data.n_labels}) does not fit the "
            f"model (vocab {model.vocab_size}, length {model.seq_len}, labels {model.n_labels})"
        )
    if optimizer == "sgd" and not batch_size:
        raise ValueError("optimizer 'sgd' needs a batch_size")
    if optimizer == "gd" and batch_size:
        raise ValueError("optimizer 'gd' is full-batch; use 'sgd' (or 'momentum'/'adam') with a batch_size")


def train(
    model: Ensemble,
    data: Dataset,
    steps: int,
    *,
    optimizer: str = "gd",
    lr=1.0,
    momentum: float = 0.0,
    weight_decay=0.0,
    batch_size: int | None = None,
    record_every: int | None = None,
    record_steps: Sequence[int] | None = None,
    probes: dict[str, Probe] | None = None,
    seed: int = 0,
    device=None,
    progress: bool | None = None,
    desc: str = "training",
    on_divergence: str = "raise",
) -> Trajectory:
    """Train every model of the ensemble on ``data`` for ``steps`` updates.

    optimizer: ``gd`` (full batch), ``sgd`` (minibatches of ``batch_size`` drawn by weight),
    ``momentum`` or ``adam``; lr and weight_decay: one number or one per model. The loss recorded is always the
    loss on the whole of ``data``. ``probes`` map names to functions of the model returning
    [K, ...] tensors, recorded at the same steps (e.g. attention statistics).

    A NaN, infinite or exploding loss (see :class:`DivergenceWatch`) raises
    :class:`TrainingDiverged` naming the step and the models; ``on_divergence="record"`` instead
    freezes those models and notes the step in ``Trajectory.diverged_at`` (for sweeps that
    expect some runs to blow up).
    """
    _check_fit(model, data, steps, optimizer, momentum, weight_decay, batch_size, on_divergence)
    dev = pick_device(device)
    model = model.to(dev)
    data = data.to(dev)
    K = model.n_models
    rates = per_model(lr, K, "lr", dev)
    decays = per_model(weight_decay, K, "weight_decay", dev)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = Optimizer(optimizer, params, rates, momentum, float(decays[0]) if bool((decays == decays[0]).all()) else decays)
    watch = DivergenceWatch(model, opt, on_divergence)
    wanted = recorded_steps(steps, record_every, record_steps)
    probes = probes or {}
    batches = torch.Generator(device="cpu").manual_seed(seed)

    recorder = Recorder(len(wanted))
    wanted_set = set(wanted)
    full_batch = not batch_size

    def step_loss(step: int) -> Tensor:
        if full_batch:
            loss = cross_entropy(model(data.x), data)
        else:
            rows = torch.multinomial(data.weights.cpu(), batch_size, replacement=True, generator=batches).to(dev)
            batch = Dataset(data.x[rows], data.y[rows], data.vocab_size, data.n_labels,
                            torch.full((batch_size,), 1.0 / batch_size, device=dev))
            loss = cross_entropy(model(batch.x), batch)
        watch.check(step, loss)
        return loss

    def observe(step: int, loss: Tensor | None) -> None:
        if step not in wanted_set:
            return
        if loss is None or not full_batch:  # the last step, or a minibatch: the whole dataset's loss
            with torch.no_grad():
                loss = cross_entropy(model(data.x), data)
            watch.check(step, loss)
        recorder.put("loss", loss)
        recorder.put("embedding", model.embedding)
        with torch.no_grad():
            for name, fn in probes.items():
                recorder.put(name, fn(model))
        recorder.advance()

    descend(model, opt, steps, step_loss, observe, progress_bar(steps, desc, progress))
    config = {"optimizer": optimizer, "lr": rates.cpu().tolist(), "steps": steps, "batch_size": batch_size,
              "weight_decay": decays.cpu().tolist() if opt.per_model_decay else float(decays[0]), "momentum": momentum}
    return recorder.trajectory(wanted, model, watch.diverged_at, config)


def relative_gradient_rates(model: Ensemble, data: Dataset) -> dict[str, Tensor]:
    """||grad theta|| / ||theta|| per parameter and model at the current point: who moves first."""
    model.zero_grad(set_to_none=True)
    cross_entropy(model(data.x), data).sum().backward()
    rates = {}
    for name, p in model.named_parameters():
        dims = tuple(range(1, p.ndim))
        rates[name] = (p.grad.norm(dim=dims) / p.detach().norm(dim=dims).clamp_min(1e-30)).detach()
    model.zero_grad(set_to_none=True)
    return rates


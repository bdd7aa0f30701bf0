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

from ctxlab.env import device as pick_device
from ctxlab.env import progress_enabled
from ctxlab.models import Ensemble
from ctxlab.tasks import Dataset

OPTIMIZERS = ("gd", "sgd", "momentum", "adam")

Probe = Callable[[Ensemble], Tensor]


@dataclass
class Trajectory:
    """What a training run recorded, all on the CPU.

    steps: [T] recorded steps (0 = initialization); loss: [K, T] loss on the whole dataset;
    embeddings: [K, T, V, d]; extras: name -> [K, T, ...] from the probes.
    """

    steps: Tensor
    loss: Tensor
    embeddings: Tensor
    extras: dict[str, Tensor] = field(default_factory=dict)
    gammas: list[float] = field(default_factory=list)
    seeds: list[int] = field(default_factory=list)
    config: dict = field(default_factory=dict)

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


def cross_entropy(logits: Tensor, data: Dataset) -> Tensor:
    """Weighted cross-entropy of each model [K]: sum_n w_n * CE(logits[k, n], y_n)."""
    logp = torch.log_softmax(logits, dim=-1)
    if data.y.ndim == 1:
        per_row = -logp.gather(-1, data.y.long().expand(logits.shape[0], -1)[..., None]).squeeze(-1)
    else:
        per_row = -(logp * data.y.to(logp.dtype)).sum(-1)
    return per_row @ data.weights.to(logp.dtype)


def _per_model(value, k: int, name: str, device) -> Tensor:
    values = torch.as_tensor(value, dtype=torch.float32, device=device).reshape(-1)
    if values.numel() == 1:
        values = values.expand(k)
    if values.numel() != k:
        raise ValueError(f"{name} must be a number or one value per model ({k}), got {values.numel()} values")
    if bool((values < 0).any()) or not bool(torch.isfinite(values).all()):
        raise ValueError(f"{name} must be finite and non-negative, got {values.tolist()}")
    return values


class Optimizer:
    """Plain update rules with a per-model learning rate (torch.optim takes one lr per group)."""

    def __init__(self, name: str, params: list[Tensor], lr: Tensor, momentum: float, weight_decay: float,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8) -> None:
        self.name, self.params, self.lr = name, params, lr
        self.momentum, self.weight_decay, self.betas, self.eps = momentum, weight_decay, betas, eps
        self.state = [dict() for _ in params]
        self.t = 0

    @torch.no_grad()
    def step(self) -> None:
        self.t += 1
        for p, st in zip(self.params, self.state):
            if p.grad is None:
                continue
            lr = self.lr.reshape(-1, *([1] * (p.ndim - 1)))
            mask = getattr(p, "update_mask", None)  # per-model 0/1 from ctxlab.transplant.freeze_embedding
            if mask is not None:
                lr = lr * mask.to(lr).reshape(lr.shape)
            g = p.grad
            if self.name == "adam":
                b1, b2 = self.betas
                m = st.setdefault("m", torch.zeros_like(p)).mul_(b1).add_(g, alpha=1 - b1)
                v = st.setdefault("v", torch.zeros_like(p)).mul_(b2).addcmul_(g, g, value=1 - b2)
                m_hat, v_hat = m / (1 - b1**self.t), v / (1 - b2**self.t)
                p.mul_(1 - lr * self.weight_decay)  # decoupled (AdamW)
                p.sub_(lr * m_hat / (v_hat.sqrt() + self.eps))
            else:
                g = g + self.weight_decay * p if self.weight_decay else g
                if self.momentum:
                    g = st.setdefault("buf", torch.zeros_like(p)).mul_(self.momentum).add_(g)
                p.sub_(lr * g)


def _record_steps(steps: int, record_every: int | None, record_steps) -> list[int]:
    if record_steps is not None:
        chosen = sorted({int(s) for s in record_steps})
        if not chosen or chosen[0] < 0 or chosen[-1] > steps:
            raise ValueError(f"record_steps must lie in [0, {steps}]")
        return chosen
    every = record_every or max(1, steps // 500)
    return sorted(set(range(0, steps + 1, every)) | {steps})


def train(
    model: Ensemble,
    data: Dataset,
    steps: int,
    *,
    optimizer: str = "gd",
    lr=1.0,
    momentum: float = 0.0,
    weight_decay: float = 0.0,
    batch_size: int | None = None,
    record_every: int | None = None,
    record_steps: Sequence[int] | None = None,
    probes: dict[str, Probe] | None = None,
    seed: int = 0,
    device=None,
    progress: bool | None = None,
    desc: str = "training",
) -> Trajectory:
    """Train every model of the ensemble on ``data`` for ``steps`` updates.

    optimizer: ``gd`` (full batch), ``sgd`` (minibatches of ``batch_size`` drawn by weight),
    ``momentum`` or ``adam``; lr: one number or one per model. The loss recorded is always the
    loss on the whole of ``data``. ``probes`` map names to functions of the model returning
    [K, ...] tensors, recorded at the same steps (e.g. attention statistics).
    """
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"unknown optimizer {optimizer!r}; choose one of {OPTIMIZERS}")
    if not isinstance(steps, int) or steps < 0:
        raise ValueError(f"steps must be a non-negative integer, got {steps!r}")
    if data.vocab_size != model.vocab_size or data.seq_len != model.seq_len or data.n_labels != model.n_labels:
        raise ValueError(
            f"data (vocab {data.vocab_size}, length {data.seq_len}, labels {data.n_labels}) does not fit the "
            f"model (vocab {model.vocab_size}, length {model.seq_len}, labels {model.n_labels})"
        )
    if optimizer == "sgd" and not batch_size:
        raise ValueError("optimizer 'sgd' needs a batch_size")
    if optimizer == "gd" and batch_size:
        raise ValueError("optimizer 'gd' is full-batch; use 'sgd' (or 'momentum'/'adam') with a batch_size")
    dev = pick_device(device)
    model = model.to(dev)
    data = data.to(dev)
    K = model.n_models
    rates = _per_model(lr, K, "lr", dev)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = Optimizer(optimizer, params, rates, momentum, weight_decay)
    wanted = _record_steps(steps, record_every, record_steps)
    probes = probes or {}
    batches = torch.Generator(device="cpu").manual_seed(seed)

    recorder = Recorder(len(wanted))

    def record(full_loss: Tensor) -> None:
        recorder.put("loss", full_loss)
        recorder.put("embedding", model.embedding)
        with torch.no_grad():
            for name, fn in probes.items():
                recorder.put(name, fn(model))
        recorder.advance()

    from tqdm.auto import tqdm

    wanted_set = set(wanted)
    full_batch = not batch_size
    for step in tqdm(range(steps + 1), desc=desc, disable=not progress_enabled(progress), leave=False):
        recording, final = step in wanted_set, step == steps
        if full_batch and not final:
            loss = cross_entropy(model(data.x), data)
            if recording:
                record(loss)
        else:
            if recording:
                with torch.no_grad():
                    record(cross_entropy(model(data.x), data))
            if final:
                break
            rows = torch.multinomial(data.weights.cpu(), batch_size, replacement=True, generator=batches).to(dev)
            batch = Dataset(data.x[rows], data.y[rows], data.vocab_size, data.n_labels,
                            torch.full((batch_size,), 1.0 / batch_size, device=dev))
            loss = cross_entropy(model(batch.x), batch)
        model.zero_grad(set_to_none=True)
        loss.sum().backward()
        opt.step()
    return Trajectory(
        steps=torch.tensor(wanted),
        loss=recorder.buffers.pop("loss"),
        embeddings=recorder.buffers.pop("embedding"),
        extras=recorder.buffers,
        gammas=list(model.gammas),
        seeds=list(model.seeds),
        config={"optimizer": optimizer, "lr": rates.cpu().tolist(), "steps": steps, "batch_size": batch_size,
                "weight_decay": weight_decay, "momentum": momentum},
    )


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


"""A tiny GPT on real text, trained as an ensemble, with n-gram models as yardsticks.

The staircase on text shows as a sequence of n-gram phases: a small-init GPT first predicts like
the unigram model, then like the bigram, then like the trigram model. ``train_lm`` records, at
each chosen step, the held-out loss, the embedding, and the KL divergence from the model's
next-token distribution to each n-gram predictor (``NGramPredictor``, counted on the training text).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from contextlib import contextmanager

import torch
from torch import Tensor, nn

from ctxlab.env import device as pick_device
from ctxlab.models import Ensemble, check_sizes, one_hot_embed
from ctxlab.signatures import ngram_tables
from ctxlab.optimizer import Optimizer
from ctxlab.train import (
    OPTIMIZERS,
    DivergenceWatch,
    Recorder,
    Trajectory,
    per_model,
    recorded_steps,
    check_training_settings,
    descend,
    progress_bar,
)
from ctxlab.validate import integer, number, token_ids


class TinyGPT(Ensemble):
    """A causal transformer with the small-init knob: every weight ~ N(0, fan_in^(-2 gamma)).

    Pre-LayerNorm blocks (LayerNorm off by default: it would undo the small-init scaling),
    multi-head causal attention, a 4x GELU MLP, residual stream, untied unembedding by default.
    Logits [K, N, T, V] for tokens [N, T] with T <= context.
    """

    def __init__(self, vocab_size: int, context: int, d: int = 64, n_layers: int = 2, n_heads: int = 2,
                 gamma=1.0, seed=0, layernorm: bool = False, tie_embeddings: bool = False) -> None:
        super().__init__(gamma, seed)
        check_sizes(vocab_size=vocab_size, context=context, d=d, n_layers=n_layers, n_heads=n_heads)
        if d % n_heads:
            raise ValueError(f"d = {d} must be divisible by n_heads = {n_heads}")
        self.vocab_size, self.seq_len, self.n_labels = vocab_size, context, vocab_size
        self.d, self.n_heads, self.layernorm, self.tie_embeddings = d, n_heads, layernorm, tie_embeddings
        self.embedding = self._weight(vocab_size, d, fan_in=d)
        self.position = self._weight(context, d, fan_in=d)
        self.blocks = nn.ModuleList()
        for _ in range(n_layers):
            block = nn.Module()
            for name in ("w_q", "w_k", "w_v", "w_o"):
                setattr(block, name, self._weight(d, d, fan_in=d))
            block.w1 = self._weight(d, 4 * d, fan_in=d)
            block.w2 = self._weight(4 * d, d, fan_in=4 * d)
            self.blocks.append(block)
        if not tie_embeddings:
            self.w_out = self._weight(d, vocab_size, fan_in=d)

    def _norm(self, h: Tensor) -> Tensor:
        return nn.functional.layer_norm(h, (self.d,)) if self.layernorm else h

    def forward(self, x: Tensor) -> Tensor:
        token_ids(x, "tokens")
        if x.ndim != 2 or not 1 <= x.shape[1] <= self.seq_len:
            raise ValueError(f"tokens must be [N, T] with 1 <= T <= {self.seq_len}, got {tuple(x.shape)}")
        if int(x.min()) < 0 or int(x.max()) >= self.vocab_size:
            raise ValueError(f"token ids must lie in [0, {self.vocab_size})")
        return self.logits(x)

    def logits(self, x: Tensor) -> Tensor:
        """The forward pass on tokens ``forward`` has checked: [K, N, T, V]. Apart from the checks, whose
        host syncs would split a compiled graph (``benchmarks/cpu_efficiency.py`` compiles this)."""
        K, (N, T), H = self.n_models, x.shape, self.n_heads
        h = one_hot_embed(x, self.embedding) + self.position[:, None, :T]  # [K, N, T, d]
        mask = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        for block in self.blocks:
            a = self._norm(h)
            q, k, v = (
                _tokens_times(a, w).reshape(K, N, T, H, -1).transpose(2, 3) for w in (block.w_q, block.w_k, block.w_v)
            )
            scores = (q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])).masked_fill(~mask, float("-inf"))
            mixed = (torch.softmax(scores, dim=-1) @ v).transpose(2, 3).reshape(K, N, T, self.d)
            h = h + _tokens_times(mixed, block.w_o)
            h = h + _tokens_times(nn.functional.gelu(_tokens_times(self._norm(h), block.w1)), block.w2)
        out = self.embedding.transpose(-1, -2) if self.tie_embeddings else self.w_out
        return _tokens_times(self._norm(h), out)


def _tokens_times(h: Tensor, w: Tensor) -> Tensor:
    """h [K, N, T, d] @ w [K, d, e] as one [N*T, d] x [d, e] product per model: broadcasting w over the N
    sequences runs N products of T rows each, which took a third longer on a CPU."""
    K, N, T, d = h.shape
    return (h.reshape(K, N * T, d) @ w).reshape(K, N, T, w.shape[-1])


class NGramPredictor:
    """The smoothed n-gram model of a token stream (:func:`~ctxlab.signatures.ngram_tables`):
    P(next | previous n-1 tokens), as a dense table."""

    def __init__(self, tokens: Tensor, vocab_size: int, n: int, alpha: float = 0.1) -> None:
        integer(n, "n", minimum=1)
        number(alpha, "alpha", positive=True)
        self.vocab_size, self.n = vocab_size, n
        self.probs = ngram_tables(tokens, vocab_size, n, alpha)[-1].float()  # [V^(n-1), V]

    @classmethod
    def from_table(cls, table: Tensor, vocab_size: int) -> NGramPredictor:
        """The predictor of one table of :func:`~ctxlab.signatures.ngram_tables` ([V^(n-1), V]): count
        the tables once and serve every order from them."""
        n, rows = 1, 1
        while rows < table.shape[0]:
            n, rows = n + 1, rows * vocab_size
        if table.ndim != 2 or table.shape != (rows, vocab_size):
            raise ValueError(f"expected a [V^(n-1), V] table with V = {vocab_size}, got {tuple(table.shape)}")
        predictor = cls.__new__(cls)
        predictor.vocab_size, predictor.n, predictor.probs = vocab_size, n, table.float()
        return predictor

    def predict(self, x: Tensor) -> Tensor:
        """Next-token distributions [N, T - n + 2, V] for positions n-2 .. T-1 of x [N, T]."""
        T = x.shape[1]
        if T < self.n - 1:
            raise ValueError(f"a {self.n}-gram needs at least {self.n - 1} context tokens")
        index = torch.zeros(x.shape[0], T - self.n + 2, dtype=torch.long, device=x.device)
        for k in range(self.n - 1):
            index = index * self.vocab_size + x[:, k : T - self.n + 2 + k]
        if self.probs.device != x.device:  # move the table once, not at every evaluation
            self.probs = self.probs.to(x.device)
        return self.probs[index]


def kl_to(model_logits: Tensor, predictor: NGramPredictor, x: Tensor, first: int) -> Tensor:
    """Mean KL(model || n-gram) per model over positions ``first`` .. T-1: [K]."""
    target = predictor.predict(x)[:, first - (predictor.n - 2):]  # align to positions first..T-1
    logp = torch.log_softmax(model_logits[:, :, first:], dim=-1)
    return (logp.exp() * (logp - target.clamp_min(1e-30).log())).sum(-1).mean((1, 2))


PRECISIONS = ("fp32", "tf32", "bf16")


@contextmanager
def numerics(precision: str):
    """The float32 matrix-product precision for one training run, restored afterwards.

    ``fp32``: full float32 products (TF32 off), the regime the course's small-init numbers are measured in;
    ``tf32``: float32 products through TF32 tensor cores (10-bit mantissa; on a CPU nothing changes);
    ``bf16``: float32 products here, the forward pass itself runs under bfloat16 autocast (see train_lm).
    """
    before = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("high" if precision == "tf32" else "highest")
    try:
        yield
    finally:
        torch.set_float32_matmul_precision(before)


def next_token_loss(logits: Tensor, targets: Tensor) -> Tensor:
    """Mean next-token cross-entropy of each model [K]: logits [K, B, T, V], targets [B, T]."""
    logp = torch.log_softmax(logits, dim=-1)
    return -logp.gather(-1, targets.expand(logits.shape[0], -1, -1)[..., None]).squeeze(-1).mean((1, 2))


def random_windows(tokens: Tensor, n: int, length: int, generator: torch.Generator) -> Tensor:
    """n windows of ``length`` + 1 tokens (inputs and their next tokens) at random offsets."""
    starts = torch.randint(0, len(tokens) - length - 1, (n,), generator=generator)
    return tokens[starts[:, None] + torch.arange(length + 1)]


def _world() -> tuple[int, int]:
    """(rank, world size) of the torch.distributed group, or (0, 1) when not distributed."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def _worst_over_ranks(loss: Tensor, world: int) -> Tensor:
    """Each model's largest loss over the processes (NaN wins), so all ranks judge divergence alike."""
    if world == 1:
        return loss
    import torch.distributed as dist

    worst = torch.where(torch.isfinite(loss), loss, torch.inf).clone()
    dist.all_reduce(worst, op=dist.ReduceOp.MAX)
    return worst


def _average_gradients(params: list[Tensor], world: int) -> None:
    """Data parallelism by hand: sum every gradient over the ranks and divide by their number."""
    import torch.distributed as dist

    for p in params:
        if p.grad is not None:
            dist.all_reduce(p.grad)
            p.grad /= world


def _forward(model: TinyGPT, x: Tensor, precision: str) -> Tensor:
    """Logits in float32; under ``bf16`` the forward pass runs in bfloat16 autocast (weights stay fp32)."""
    with torch.autocast(x.device.type, dtype=torch.bfloat16, enabled=precision == "bf16"):
        return model(x).float()


def _check_lm_inputs(T: int, train_tokens: Tensor, eval_tokens: Tensor, steps, optimizer: str, weight_decay,
                     batch_size, eval_windows, sample_tokens, precision: str, on_divergence: str,
                     samples_without_prompt: bool) -> None:
    """What :func:`train_lm` checks before it starts: the settings, and streams long enough for a window."""
    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}; choose one of {PRECISIONS}")
    if optimizer not in OPTIMIZERS or optimizer == "gd":
        raise ValueError(f"unknown optimizer {optimizer!r} for minibatch training; choose one of {OPTIMIZERS[1:]}")
    check_training_settings(steps, 0.0, weight_decay, on_divergence)
    for name, stream in (("train_tokens", train_tokens), ("eval_tokens", eval_tokens)):
        if token_ids(stream, name).ndim != 1:
            raise ValueError(f"{name} must be a 1-d token stream, got shape {tuple(stream.shape)}")
    integer(batch_size, "batch_size", minimum=1)
    integer(eval_windows, "eval_windows", minimum=1)
    integer(sample_tokens, "sample_tokens", minimum=0)
    if len(train_tokens) <= T + 1 or len(eval_tokens) <= T + 1:
        raise ValueError(f"need more than {T + 1} tokens in both the training and the held-out stream")
    if batch_size % _world()[1]:
        raise ValueError(f"batch_size {batch_size} must be divisible by the number of processes ({_world()[1]})")
    if samples_without_prompt:
        raise ValueError("sample_at needs a prompt")


def train_lm(
    model: TinyGPT,
    train_tokens: Tensor,
    steps: int,
    *,
    eval_tokens: Tensor,
    yardsticks: dict[str, NGramPredictor] | None = None,
    batch_size: int = 32,
    optimizer: str = "adam",
    lr=1e-3,
    weight_decay: float = 0.0,
    eval_windows: int = 64,
    record_every: int | None = None,
    record_steps: Sequence[int] | None = None,
    probes: dict[str, Callable[[TinyGPT], Tensor]] | None = None,
    prompt: Tensor | None = None,
    sample_at: tuple[int, ...] = (),
    sample_tokens: int = 80,
    seed: int = 0,
    device=None,
    progress: bool | None = None,
    on_divergence: str = "raise",
    precision: str = "fp32",
) -> Trajectory:
    """Next-token training of every model in the ensemble on the same random batches.

    Records, every ``record_every`` steps or at ``record_steps``, the held-out loss on ``eval_windows`` fixed
    windows, the embedding, per yardstick ``kl_<name>`` = KL(model || n-gram) where all have their full context,
    and each of ``probes`` (name -> fn(model)). With a ``prompt``, ``sample_tokens`` tokens are sampled from
    every model at the ``sample_at`` steps (``extras["samples"]`` [K, len(sample_at), len(prompt) + sample_tokens]).

    Under ``torchrun`` (gloo on CPU, NCCL on GPUs) every rank draws the same global batch, trains on
    its slice and averages gradients, so N processes follow the path of one; a model diverges (as in
    :func:`ctxlab.train.train`) when its loss does on any process. ``precision`` (:func:`numerics`):
    ``fp32`` (the lessons' default), ``tf32`` or ``bf16``; weights and optimizer stay fp32.
    """
    T = model.seq_len
    _check_lm_inputs(T, train_tokens, eval_tokens, steps, optimizer, weight_decay, batch_size, eval_windows,
                     sample_tokens, precision, on_divergence, sample_at and prompt is None)
    dev = pick_device(device)
    model = model.to(dev)
    batches = torch.Generator().manual_seed(seed)
    held_out = random_windows(eval_tokens, eval_windows, T, torch.Generator().manual_seed(seed + 1)).to(dev)
    yardsticks = yardsticks or {}
    first = max([p.n - 2 for p in yardsticks.values()] + [0])
    rank, world = _world()
    params = [p for p in model.parameters() if p.requires_grad]
    opt = Optimizer(optimizer, params, per_model(lr, model.n_models, "lr", dev), 0.0, weight_decay)
    watch = DivergenceWatch(model, opt, on_divergence)
    wanted = set(recorded_steps(steps, record_every, record_steps))
    recorder, samples = Recorder(len(wanted)), []

    def step_loss(step: int) -> Tensor:
        batch = random_windows(train_tokens, batch_size, T, batches)[rank::world].to(dev)
        loss = next_token_loss(_forward(model, batch[:, :-1], precision), batch[:, 1:])
        watch.check(step, _worst_over_ranks(loss.detach(), world))
        return loss

    def observe(step: int, _loss: Tensor | None) -> None:
        if step in wanted:
            with torch.no_grad():
                logits = _forward(model, held_out[:, :-1], precision)
                recorder.put("loss", next_token_loss(logits, held_out[:, 1:]))
                recorder.put("embedding", model.embedding)
                for name, predictor in yardsticks.items():
                    recorder.put(f"kl_{name}", kl_to(logits, predictor, held_out[:, :-1], first))
                for name, fn in (probes or {}).items():
                    recorder.put(name, fn(model))
                recorder.advance()
        if step in sample_at:
            samples.append(generate(model, prompt, sample_tokens, seed=seed).cpu())

    with numerics(precision):
        descend(model, opt, steps, step_loss, observe, progress_bar(steps, "training GPT", progress),
                after_backward=(lambda: _average_gradients(params, world)) if world > 1 else None)
    config = {"optimizer": optimizer, "lr": lr, "steps": steps, "batch_size": batch_size, "context": T, "processes": world,
              "sample_steps": [s for s in sorted(set(sample_at)) if s <= steps], "precision": precision}
    return recorder.trajectory(sorted(wanted), model, watch.diverged_at, config,
                               blank=["loss", *(f"kl_{name}" for name in yardsticks)],
                               extras={"samples": torch.stack(samples, 1)} if samples else None)


@torch.no_grad()
def generate(model: TinyGPT, prompt: Tensor, n_new: int, seed: int = 0, temperature: float = 1.0) -> Tensor:
    """Sample ``n_new`` tokens after ``prompt`` [P] from every model of the ensemble: [K, P + n_new]."""
    number(temperature, "temperature", positive=True)
    integer(n_new, "n_new", minimum=0)
    if token_ids(prompt, "prompt").ndim != 1:
        raise ValueError(f"prompt must be a 1-d tensor of token ids, got shape {tuple(prompt.shape)}")
    g = torch.Generator().manual_seed(seed)
    dev = model.embedding.device
    out = prompt.to(dev)[None].expand(model.n_models, -1).clone()
    for _ in range(n_new):
        window = out[:, -model.seq_len:]
        logits = torch.stack([model(window[k : k + 1])[k, 0, -1] for k in range(model.n_models)])
        probs = torch.softmax(logits / temperature, dim=-1).cpu()
        out = torch.cat([out, torch.multinomial(probs, 1, generator=g).to(dev)], dim=1)
    return out

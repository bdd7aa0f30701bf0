"""Token identity at every layer (TIDE, Jaiswal et al., arXiv 2605.06216) and the rare-token problem.

TIDE adds K context-free embedding tables ("memory blocks") whose rows are injected into every
layer through a softmax router that may also pick a null bank. The paper motivates it with the
*rare-token problem*: a token's embedding gradient scales with its frequency. Equation E1 of
lesson 04 says the same at small init (dE_s/dt ∝ π(s) (q_s − u)), so the classroom version asks
what a re-injected table changes for rare tokens, measured on a task with Zipf-distributed keys:

* :class:`ReinjectedMLP`: a two-hidden-layer Emb-MLP (GELU) whose hidden layers also receive, per
  layer, a router-weighted sum of ``n_tables`` extra per-token vectors (``n_tables=0``: the plain
  two-layer Emb-MLP with the very same E, W1, W2, W3 at init);
* :func:`zipf_hierarchy`: the headline binary hierarchy task with Zipf-weighted keys;
* :func:`frequency_bins` / :func:`bin_losses` / :func:`bin_loss_probe`: loss per key-frequency bin;
* :func:`loglog_slope`, :func:`update_sizes`, :func:`rung_steps`: the three measurements.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch
from torch import Tensor, nn

from ctxlab.dataset import Dataset
from ctxlab.models import ACTIVATIONS, Ensemble, check_sizes, one_hot_embed
from ctxlab.rungs import crossing_step
from ctxlab.tasks import Task, hierarchy_task, with_token_frequencies, zipf
from ctxlab.theory import plateau_levels
from ctxlab.validate import finite, integer, number, token_ids

NEVER = math.inf  # the step at which a curve that never crosses its level crosses it


INJECT_INTO = {"every": 2, "first": 1}  # where the tables enter -> how many hidden layers they reach


class ReinjectedMLP(Ensemble):
    """z = σ(σ(concat(E[x]) W1 + m_1) W2 + m_2) W3 with m_l = Σ_j α_lj Σ_i T_j[x_i]; no biases.

    ``n_tables`` context-free tables T_j [V, hidden] (TIDE's memory blocks, K = n_tables) are read
    for every token of the sequence and summed over positions (the MLP has no per-position hidden
    state). Layer l mixes them with α_l = softmax(router_l) over n_tables + 1 options; the last
    option is a null bank (a zero vector), so a layer can switch re-injection off. The router
    starts at 0 (uniform α). ``inject_into="first"`` is the control: the tables are added to the first
    hidden layer only (to E W1's output, reaching the logits through W2 and W3), not re-injected into
    the second (which reaches them through W3 alone). Every table is small-initialised like E (fan-in = its width), and is
    drawn after W3, so model (γ, seed) starts from the same E, W1, W2, W3 for any ``n_tables``.
    Shapes: embedding [K, V, d], w1 [K, L*d, H], w2 [K, H, H], w3 [K, H, C],
    tables [K, n_tables, V, H], router [K, layers, n_tables + 1] (2 layers, or 1 for the control);
    logits [K, N, C].
    """

    def __init__(self, vocab_size: int, seq_len: int, n_labels: int, d: int = 32, hidden: int = 64,
                 n_tables: int = 1, activation: str = "gelu", gamma=1.0, seed=0, inject_into: str = "every") -> None:
        super().__init__(gamma, seed)
        if activation not in ACTIVATIONS:
            raise ValueError(f"unknown activation {activation!r}; choose one of {sorted(ACTIVATIONS)}")
        check_sizes(vocab_size=vocab_size, seq_len=seq_len, n_labels=n_labels, d=d, hidden=hidden)
        integer(n_tables, "n_tables", minimum=0)
        if inject_into not in INJECT_INTO:
            raise ValueError(f"inject_into must be one of {sorted(INJECT_INTO)}, got {inject_into!r}")
        self.vocab_size, self.seq_len, self.n_labels = vocab_size, seq_len, n_labels
        self.d, self.hidden, self.n_tables, self.activation = d, hidden, n_tables, activation
        self.inject_into = inject_into
        self.embedding = self._weight(vocab_size, d, fan_in=d)
        self.w1 = self._weight(seq_len * d, hidden, fan_in=seq_len * d)
        self.w2 = self._weight(hidden, hidden, fan_in=hidden)
        self.w3 = self._weight(hidden, n_labels, fan_in=hidden)
        if n_tables:
            self.tables = self._weight(n_tables, vocab_size, hidden, fan_in=hidden)
            self.router = nn.Parameter(torch.zeros(self.n_models, INJECT_INTO[inject_into], n_tables + 1))

    def routing(self) -> Tensor:
        """α [K, layers, n_tables + 1]: each injected layer's weights on the tables, the null bank last."""
        if not self.n_tables:
            raise ValueError("a model with n_tables=0 has no router")
        return torch.softmax(self.router, dim=-1)

    def forward(self, x: Tensor) -> Tensor:
        x = token_ids(x, "tokens")
        if x.ndim != 2 or x.shape[1] != self.seq_len:
            raise ValueError(f"tokens must be [N, {self.seq_len}], got shape {tuple(x.shape)}")
        if x.numel() and (int(x.min()) < 0 or int(x.max()) >= self.vocab_size):
            raise ValueError(f"token ids must lie in [0, {self.vocab_size}), got range [{int(x.min())}, {int(x.max())}]")
        act = ACTIVATIONS[self.activation]
        h = one_hot_embed(x, self.embedding)  # [K, N, L, d]
        u1 = h.reshape(h.shape[0], h.shape[1], -1) @ self.w1  # [K, N, H]
        if not self.n_tables:
            return act(act(u1) @ self.w2) @ self.w3
        mixed = torch.einsum("klt,ktvh->klvh", self.routing()[..., :-1], self.tables)  # each layer's table mix
        bag = nn.functional.one_hot(x.long(), self.vocab_size).sum(-2).to(mixed.dtype)  # [N, V] token counts
        inject = bag @ mixed  # [K, layers, N, H]
        h1 = act(u1 + inject[:, 0])
        u2 = h1 @ self.w2
        return act(u2 + inject[:, 1] if self.inject_into == "every" else u2) @ self.w3


def zipf_hierarchy(block: int = 8, exponent: float = 1.0) -> Task:
    """The headline binary hierarchy task (``hierarchy_task(block, n_values=2)``) with key frequencies
    ∝ 1/rank^exponent (key k_r has rank r + 1). Anchors stay uniform and every key keeps its label
    distribution, so H1 = H(Y | x1), H2 = H(Y | x1, x2) and H3 = H(Y | X) are unchanged, for the
    whole task and for the sequences of every key; only H0 = H(Y) moves with the key mix."""
    task = hierarchy_task(block=block, n_values=2)  # the keys are token ids 0 .. block - 1, zipf's first ids
    probs = zipf(len(task.role_tokens("key")), task.vocab_size, number(exponent, "exponent", positive=True))
    return with_token_frequencies(task, 0, probs)


def key_frequency(task: Task) -> Tensor:
    """π(s) = P(x_1 = s) of every key token [n_keys], in key order (float64)."""
    keys = task.role_tokens("key")
    pop = task.population
    counts = torch.zeros(pop.vocab_size, dtype=torch.float64).index_add_(0, pop.x[:, 0], pop.weights.double())
    return counts[keys]


def frequency_bins(frequency: Tensor, n_bins: int) -> list[Tensor]:
    """Split tokens into ``n_bins`` groups of (nearly) equal size by falling frequency: ids per bin,
    most frequent bin first (so bin 0 is the head of the Zipf curve and the last bin its tail)."""
    freq = finite(frequency, "frequency", nonnegative=True)
    if freq.ndim != 1:
        raise ValueError(f"frequency must be one number per token [V], got shape {tuple(freq.shape)}")
    if not 1 <= integer(n_bins, "n_bins") <= freq.numel():
        raise ValueError(f"n_bins must lie in [1, {freq.numel()}] (one token per bin at most), got {n_bins}")
    order = torch.sort(freq, descending=True, stable=True).indices
    return [chunk.clone() for chunk in torch.tensor_split(order, n_bins)]


def bin_losses(logits: Tensor, data: Dataset, bins: Sequence[Tensor], position: int = 0) -> Tensor:
    """Loss per bin [K, n_bins]: the weighted cross-entropy over the rows whose token at ``position``
    lies in the bin, the weights renormalised inside the bin (the loss of the bin's own population)."""
    if logits.ndim != 3 or logits.shape[1] != data.n or logits.shape[2] != data.n_labels:
        raise ValueError(f"logits must be [K, {data.n}, {data.n_labels}] for this data, got {tuple(logits.shape)}")
    if not 0 <= integer(position, "position") < data.seq_len:
        raise ValueError(f"position must lie in [0, {data.seq_len}), got {position}")
    per_row = -(torch.log_softmax(logits.double(), -1) * data.targets().double()).sum(-1)  # [K, N]
    w = data.weights.double()
    out = []
    for ids in bins:
        mask = torch.isin(data.x[:, position], torch.as_tensor(ids, dtype=data.x.dtype)).double() * w
        if not float(mask.sum()) > 0:
            raise ValueError(f"bin {torch.as_tensor(ids).tolist()} holds no row with weight at position {position}")
        out.append(per_row @ mask / mask.sum())
    return torch.stack(out, dim=-1)


def bin_data(data: Dataset, ids: Tensor, position: int = 0) -> Dataset:
    """The rows whose token at ``position`` lies in ``ids``, weights renormalised: the bin's own population."""
    rows = torch.isin(data.x[:, position], torch.as_tensor(ids, dtype=data.x.dtype)) & (data.weights > 0)
    if not bool(rows.any()):
        raise ValueError(f"bin {torch.as_tensor(ids).tolist()} holds no row with weight at position {position}")
    w = data.weights[rows].double()
    return Dataset(data.x[rows], data.y[rows], data.vocab_size, data.n_labels, (w / w.sum()).to(data.weights.dtype))


def bin_levels(data: Dataset, bins: Sequence[Tensor], position: int = 0) -> Tensor:
    """The exact ladder H_0 > H_1 > ... of every bin's own population [n_bins, n_levels]: the levels its
    loss curve is read against (on the Zipf task H_1..H_3 are the task's, H_0 depends on the bin)."""
    return torch.tensor([plateau_levels(bin_data(data, ids, position)) for ids in bins], dtype=torch.float64)


def bin_loss_probe(data: Dataset, bins: Sequence[Tensor], position: int = 0):
    """A probe for :func:`ctxlab.train.train`: the per-bin losses [K, n_bins] at each recorded step."""
    return lambda model: bin_losses(model(data.x), data, bins, position).float()


def loglog_slope(frequency: Tensor, size: Tensor) -> Tensor:
    """Least-squares slope of log ``size`` against log ``frequency`` (last axis): [...].

    ``size`` may carry leading axes (e.g. one row per model); 1 means size ∝ frequency."""
    x = finite(frequency, "frequency").double().log()
    y = finite(size, "size").double()
    if bool((torch.as_tensor(frequency) <= 0).any()) or bool((y <= 0).any()):
        raise ValueError("frequency and size must be positive to take logs")
    if x.ndim != 1 or y.shape[-1] != x.numel() or x.numel() < 2:
        raise ValueError(f"need frequency [n >= 2] and size [..., n], got {tuple(x.shape)} and {tuple(y.shape)}")
    y = y.log()
    xc = x - x.mean()
    return ((y - y.mean(-1, keepdim=True)) * xc).sum(-1) / (xc * xc).sum()


def update_sizes(embeddings: Tensor, step_index: int, tokens: Tensor) -> Tensor:
    """‖E_s(t) − E_s(0)‖ per model and token [K, n] from recorded embeddings [K, T, V, d]."""
    if embeddings.ndim != 4:
        raise ValueError(f"embeddings must be [K, T, V, d] (Trajectory.embeddings), got {tuple(embeddings.shape)}")
    if not 0 < integer(step_index, "step_index") < embeddings.shape[1]:
        raise ValueError(f"step_index must lie in [1, {embeddings.shape[1]}), got {step_index}")
    delta = embeddings[:, step_index] - embeddings[:, 0]
    return delta[:, torch.as_tensor(tokens)].double().norm(dim=-1)


def rung_steps(steps: Tensor, curves: Tensor, level: float) -> Tensor:
    """First recorded step at which each curve [..., T] is below ``level``: [...] floats, and
    ``inf`` (:data:`NEVER`) for a curve that never gets there: "later than anything we recorded",
    which sorts after every real step and never passes for step 0."""
    step = crossing_step(torch.as_tensor(steps), torch.as_tensor(curves), number(level, "level"))
    return torch.where(step >= 0, step.double(), torch.full(step.shape, NEVER, dtype=torch.float64))


@dataclass
class RareTokenRun:
    """One batched run per table count on the Zipf task: what lesson 16 plots and checks.

    steps [T]; frequency [n_keys]; bins: key ids per bin (head first); levels: the task's ladder;
    bin_levels [n_bins, n_levels]: each bin's own ladder; runs: n_tables -> dict with loss [S, T],
    bins [S, n_bins, T], key_updates [S, n_keys] at ``early_step``, table_updates [S, n_keys]
    (‖ΔT‖ summed over tables; absent for n_tables = 0) and routing [S, layers, n_tables + 1] at the
    end; first_layer_only: the same for the control runs whose tables enter the first hidden layer only.
    """

    steps: Tensor
    frequency: Tensor
    bins: list[Tensor]
    levels: list[float]
    bin_levels: Tensor
    early_step: int
    seeds: list[int]
    runs: dict[int, dict[str, Tensor]]
    first_layer_only: dict[int, dict[str, Tensor]] = field(default_factory=dict)

    def rung_steps(self, n_tables: int, first_layer_only: bool = False) -> Tensor:
        """[S, n_bins, n_rungs]: the step at which each seed's bin first comes down to rung k, i.e. below
        the midpoint (H_{k-1} + H_k) / 2 of the bin's own ladder (k = 1, 2, ...); ``inf``: never.
        ``first_layer_only``: of the control run with that many tables at the first hidden layer only."""
        runs = self.first_layer_only if first_layer_only else self.runs
        if n_tables not in runs:
            raise ValueError(f"no {'first-layer-only ' if first_layer_only else ''}run with n_tables={n_tables}; "
                             f"the runs have {sorted(runs)}")
        curves, mids = runs[n_tables]["bins"], (self.bin_levels[:, :-1] + self.bin_levels[:, 1:]) / 2
        return torch.stack([torch.stack([rung_steps(self.steps, curves[:, b], float(m)) for m in mids[b]], -1)
                            for b in range(len(self.bins))], 1)


def _train_tables(task: Task, bins: list[Tensor], n: int, inject_into: str, seeds: Sequence[int], gamma: float,
                  steps: int, lr: float, early_step: int, record_every: int, hidden: int, progress, device):
    """One ensemble over ``seeds`` with ``n`` tables injected as ``inject_into`` says: (its Trajectory,
    the dict a RareTokenRun keeps for it)."""
    from ctxlab.train import train

    data, keys = task.population, task.role_tokens("key")
    model = ReinjectedMLP(task.vocab_size, task.seq_len, task.n_labels, hidden=hidden, n_tables=n,
                          gamma=gamma, seed=list(seeds), inject_into=inject_into)
    probes = {"bins": bin_loss_probe(data, bins)}
    if n:
        probes["tables"] = lambda m: m.tables.detach().clone()
    where = "" if inject_into == "every" else ", first layer only"
    run = train(model, data, steps, lr=lr, record_every=record_every, probes=probes, progress=progress,
                device=device, desc=f"{n} re-injected tables{where}")
    t = int((run.steps == early_step).nonzero()[0, 0])
    out = {"loss": run.loss, "bins": run.extras["bins"].transpose(1, 2), "key_updates": update_sizes(run.embeddings, t, keys)}
    if n:
        delta = run.extras["tables"][:, t] - run.extras["tables"][:, 0]  # [S, n_tables, V, H]
        out["table_updates"] = delta[:, :, keys].double().norm(dim=-1).sum(1)
        out["routing"] = model.routing().detach().cpu()
    return run, out


def rare_token_experiment(tables: Sequence[int] = (0, 1, 2), seeds: Sequence[int] = (0, 1, 2), gamma: float = 0.75,
                          steps: int = 500, lr: float = 1.0, early_step: int = 10, n_bins: int = 4,
                          block: int = 8, exponent: float = 1.5, record_every: int = 5, hidden: int = 64,
                          first_layer_only: Sequence[int] = (), progress: bool | None = None, device=None) -> RareTokenRun:
    """Train a :class:`ReinjectedMLP` ensemble over ``seeds`` for each table count on the Zipf task
    (full-batch GD on the exact population), recording the loss of every key-frequency bin; for each
    count in ``first_layer_only``, also the control whose tables enter the first hidden layer only."""
    integer(early_step, "early_step", minimum=1)
    if early_step % integer(record_every, "record_every", minimum=1) or early_step > steps:
        raise ValueError(f"early_step must be a recorded step (a multiple of record_every <= steps), got {early_step}")
    for n in first_layer_only:
        integer(n, "first_layer_only table count", minimum=1)
    if not list(tables) + list(first_layer_only):
        raise ValueError("give at least one table count to train (tables or first_layer_only)")
    task = zipf_hierarchy(block, exponent)
    freq = key_frequency(task)
    bins = [task.role_tokens("key")[b] for b in frequency_bins(freq, n_bins)]
    settings = (seeds, gamma, steps, lr, early_step, record_every, hidden, progress, device)
    runs, controls = {}, {}
    for n in tables:
        run, runs[n] = _train_tables(task, bins, n, "every", *settings)
    for n in first_layer_only:
        run, controls[n] = _train_tables(task, bins, n, "first", *settings)
    return RareTokenRun(run.steps, freq, bins, task.plateau_levels(), bin_levels(task.population, bins), early_step,
                        list(seeds), runs, controls)

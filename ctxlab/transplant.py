"""Control the embedding of an ensemble: freeze it, transplant a table into it, build one from signatures.

"Does the embedding's structure matter?" is answered by holding everything else fixed and
swapping only the table: model k of an ensemble keeps its own (gamma, seed) for the rest of the
network, while its embedding is frozen at a chosen [V, d] table (random, signature-derived, or
learned in another run). Freezing works per model, so learners and frozen models train side by
side in one batched run, and each trains exactly as it would alone.

A frozen table's *scale* sets how fast the rest of the network learns (the gradient of W1 is
proportional to the embeddings it reads), so tables are compared at a matched Frobenius norm
(:func:`rescale`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from ctxlab.rungs import stair_onsets
from ctxlab.models import Ensemble, make_model, small_init
from ctxlab.signatures import label_signature
from ctxlab.tasks import Dataset, Task
from ctxlab.train import Trajectory, train
from ctxlab.validate import integer, number


def _model_mask(model: Ensemble, models: Sequence[int] | Sequence[bool]) -> Tensor:
    """A [K] bool mask from model indices or from one bool per model."""
    K = model.n_models
    items = list(models)
    if items and all(isinstance(m, bool) for m in items):
        if len(items) != K:
            raise ValueError(f"give one bool per model ({K}), got {len(items)}")
        return torch.tensor(items)
    mask = torch.zeros(K, dtype=torch.bool)
    for m in items:
        if isinstance(m, bool) or not 0 <= integer(m, "models (indices)") < K:
            raise ValueError(f"model indices must lie in [0, {K}), got {m!r}")
        mask[int(m)] = True
    return mask


def freeze_embedding(model: Ensemble, models: Sequence[int] | Sequence[bool]) -> Ensemble:
    """Freeze the embedding of the chosen models (indices, or one bool per model); unfreeze the rest.

    The optimizer of :func:`ctxlab.train.train` multiplies each model's step on ``model.embedding``
    by ``embedding.update_mask`` (0 = frozen), so a frozen table stays bit-identical under every
    update rule, weight decay included, while the other models' updates are untouched. When every
    model is frozen the embedding's gradient is not computed at all. Returns the model.
    """
    frozen = _model_mask(model, models)
    model.embedding.update_mask = (~frozen).float()
    model.embedding.requires_grad_(not bool(frozen.all()))
    return model


def transplant(model: Ensemble, tables: Mapping[int, Tensor]) -> Ensemble:
    """Overwrite model k's embedding with ``tables[k]`` ([V, d]); every other weight keeps its init.

    Build the ensemble fresh (``make_model(..., gamma, seed)``) and transplant into it: the rest of
    model k is then exactly the re-initialisation that its own (gamma, seed) gives. Returns the model.
    """
    V, d = model.embedding.shape[1:]
    with torch.no_grad():
        for k, table in tables.items():
            if not 0 <= int(k) < model.n_models:
                raise ValueError(f"model index {k} out of range [0, {model.n_models})")
            table = torch.as_tensor(table)
            if table.shape != (V, d):
                raise ValueError(f"table for model {k} must be [V, d] = [{V}, {d}], got {tuple(table.shape)}")
            if not bool(torch.isfinite(table).all()):
                raise ValueError(f"table for model {k} has non-finite entries")
            model.embedding[int(k)].copy_(table.to(model.embedding))
    return model


def frozen_ensemble(task: Task, tables: Mapping[str, Callable[[int], Tensor]], seeds: Sequence[int],
                    d: int = 32, gamma: float = 1.0, **model_kwargs) -> tuple[Ensemble, list[str]]:
    """One Emb-MLP per (condition, seed), its embedding frozen at ``tables[condition](seed)``.

    The rest of each model is the fresh init of its own (gamma, seed), so the conditions differ in
    the table alone. Returns the ensemble and each model's condition name (condition-major).
    """
    seeds = list(seeds)
    if not tables or not seeds:
        raise ValueError("need at least one table and one seed")
    names = [name for name in tables for _ in seeds]
    model = make_model("mlp", task, d=d, gamma=gamma, seed=seeds * len(tables), **model_kwargs)
    transplant(model, {k: tables[name](seeds[k % len(seeds)]) for k, name in enumerate(names)})
    return freeze_embedding(model, range(len(names))), names


def loss_by_condition(traj: Trajectory, names: Sequence[str]) -> dict[str, tuple[Tensor, Tensor]]:
    """Condition name -> (steps [T], loss [n_seeds, T]) of the models with that name."""
    if len(names) != traj.n_models:
        raise ValueError(f"need one name per model ({traj.n_models}), got {len(names)}")
    return {name: (traj.steps, traj.loss[[k for k, n in enumerate(names) if n == name]]) for name in dict.fromkeys(names)}


def random_embedding(vocab_size: int, d: int, gamma: float, seed: int) -> Tensor:
    """A [V, d] table with entries N(0, d^(-2 gamma)): the models' own embedding init at exponent gamma."""
    number(gamma, "gamma", positive=True)
    integer(vocab_size, "vocab_size", minimum=1)
    integer(d, "d", minimum=1)
    integer(seed, "seed")
    return small_init((vocab_size, d), d, gamma, torch.Generator().manual_seed(seed))


def rescale(table: Tensor, norm: float) -> Tensor:
    """The table multiplied to Frobenius norm ``norm`` (works on [..., V, d], one norm per table)."""
    number(norm, "norm", positive=True)
    current = torch.linalg.matrix_norm(table, keepdim=True)
    if bool((current <= 0).any()):
        raise ValueError("cannot rescale an all-zero table")
    return table * (norm / current)


def random_orthonormal(n: int, r: int, generator: torch.Generator, dtype: torch.dtype = torch.float32) -> Tensor:
    """[n, r] with orthonormal columns, uniformly distributed (Haar): QR of a Gaussian, signs fixed by R's diagonal."""
    q, upper = torch.linalg.qr(torch.randn(n, r, generator=generator, dtype=dtype))
    return q * torch.sign(torch.diagonal(upper))


def rank_matched_control(table: Tensor, seed: int) -> Tensor:
    """A random table with ``table``'s singular values (so its rank and norm) on random orthonormal bases of both
    sides, in its dtype: the control that tells a table's content from the concentration of its norm on few
    directions."""
    V, d = table.shape
    generator = torch.Generator().manual_seed(integer(seed, "seed"))
    left = random_orthonormal(V, min(V, d), generator, table.dtype)
    right = random_orthonormal(d, min(V, d), generator, table.dtype)
    return (left * torch.linalg.svdvals(table)) @ right.T


def signature_embedding(task: Task | Dataset, d: int, orders: Sequence[int] = (1, 2), norm: float | None = None) -> Tensor:
    """A [V, d] table whose rows are the tokens' label signatures, projected to width d.

    Concatenate the incremental label signatures of ``orders`` (rows = tokens), centre the rows
    (subtract the mean token row: what every token shares carries no information about which
    token it is), and keep the top-d principal components, i.e. U[:, :d] * S[:d] of the centred
    matrix's SVD (zero columns when its rank is below d). ``norm`` rescales the result to that
    Frobenius norm (None keeps the signature's own scale). Tokens whose signal lives only in
    orders not listed get (near-)identical rows: the table cannot tell them apart.
    """
    data = task.population if hasattr(task, "population") else task  # duck-typed: a re-imported ctxlab's Task too
    orders = list(orders)
    if not orders or len(set(orders)) != len(orders):
        raise ValueError(f"orders must be a non-empty list of distinct orders, got {orders}")
    integer(d, "d", minimum=1)
    S = torch.cat([label_signature(data, k, "incremental").matrix.double() for k in orders], dim=1)
    S = S - S.mean(0, keepdim=True)
    U, sv, _ = torch.linalg.svd(S, full_matrices=False)
    table = torch.zeros(data.vocab_size, d, dtype=torch.float64)
    r = min(d, sv.numel())
    table[:, :r] = U[:, :r] * sv[:r]
    table = table.float()
    return table if norm is None else rescale(table, norm)


def steps_to_plateaus(traj: Trajectory, levels: Sequence[float]) -> Tensor:
    """[K, len(levels) - 1]: the step at which each model is halfway down to level k = 1.. (-1: never).

    That is the first recorded step with loss below the midpoint of H_{k-1} and H_k, the stair
    onset of :func:`ctxlab.rungs.stair_onsets`.
    """
    return stair_onsets(traj.steps, traj.loss, list(levels))


def group_summary(values: Tensor, groups: Sequence[str]) -> dict[str, tuple[float, float, int]]:
    """Mean, sd and count of per-model ``values`` [K] within each group name, ignoring -1 (never reached).

    A group where no model got there has mean nan and count 0.
    """
    values = torch.as_tensor(values, dtype=torch.float64)
    if values.shape != (len(groups),):
        raise ValueError(f"need one value per model: {values.shape[0]} values, {len(groups)} groups")
    out = {}
    for name in dict.fromkeys(groups):
        v = values[[i for i, gname in enumerate(groups) if gname == name]]
        v = v[v >= 0]
        sd = float(v.std()) if v.numel() > 1 else 0.0
        out[name] = (float(v.mean()) if v.numel() else float("nan"), sd, int(v.numel()))
    return out


@dataclass(frozen=True)
class FrozenRace:
    """Frozen embedding tables racing down the staircase next to a learner (lesson 11's headline).

    names: the condition of each frozen model (condition-major); run: their trajectory (only W1, W2
    learn); onsets [K, n]: the step each drops onto plateau k = 1.. (-1: never); reference: the
    learner whose final tables were transplanted, with its own onsets; norm: the matched norm.
    """

    levels: list[float]
    norm: float
    names: list[str]
    run: Trajectory
    onsets: Tensor
    reference: Trajectory
    reference_onsets: Tensor

    def curves(self) -> dict[str, tuple[Tensor, Tensor]]:
        """Condition -> (steps, loss [n_seeds, T]), the learner first: what ``plateau_race_figure`` draws."""
        return {"learned (the learner)": (self.reference.steps, self.reference.loss), **loss_by_condition(self.run, self.names)}


def frozen_race(task: Task, reference: Trajectory, seeds: Sequence[int], d: int = 32, steps: int = 700,
                norm: float | None = None, device=None) -> FrozenRace:
    """Freeze six tables, all at the matched norm (default √V, a standard-init table's expected norm)
    except the first, and let only W1, W2 learn (full-batch GD, lr 1): a random table at small-init
    scale (γ = 1) and the same table at the matched norm, the signature tables ΔS¹⁺² and ΔS¹⁺²⁺³,
    the table ``reference`` (a learner's run over the same seeds) ended with, taken from another
    seed so that no W1 co-adapted with it, and a random table with ΔS¹⁺²⁺³'s singular values
    (:func:`rank_matched_control`)."""
    data = task.population
    V = data.vocab_size
    seeds = list(seeds)
    norm = math.sqrt(V) if norm is None else number(norm, "norm", positive=True)
    learned = reference.embeddings[:, -1]
    if learned.shape[0] != len(seeds) or learned.shape[-1] != d:
        raise ValueError(f"reference: need one learner per seed ({len(seeds)}) of width d = {d}, "
                         f"got {learned.shape[0]} of width {learned.shape[-1]}")
    sig12 = signature_embedding(task, d, orders=(1, 2), norm=norm)
    sig123 = signature_embedding(task, d, orders=(1, 2, 3), norm=norm)
    conditions = {
        "random γ=1 (small)": lambda s: random_embedding(V, d, 1.0, seed=100 + s),
        "random γ=0.5 (std)": lambda s: rescale(random_embedding(V, d, 1.0, seed=100 + s), norm),
        "ΔS¹⁺²": lambda s: sig12,
        "ΔS¹⁺²⁺³": lambda s: sig123,
        "learned (other seed)": lambda s: rescale(learned[(seeds.index(s) + 1) % len(seeds)], norm),
        "rank-matched random": lambda s: rank_matched_control(sig123, 100 + s),
    }
    frozen, names = frozen_ensemble(task, conditions, seeds, d=d)
    run = train(frozen, data, steps, lr=1.0, record_every=10, progress=False, device=device)
    levels = task.plateau_levels()
    return FrozenRace(levels, float(norm), names, run, steps_to_plateaus(run, levels), reference,
                      steps_to_plateaus(reference, levels))

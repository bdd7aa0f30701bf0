"""No trainable input embedding: the Emb-MLP and the small GPT reading fixed binary codes of the token ids (lesson 14).

Bochkov (arXiv 2605.09751) replaces the input table by fixed ⌈log₂V⌉-bit codes tiled to the model
width. Here the same swap is made in the course's Emb-MLP, so the staircase can be read with and
without a table that moves:

* :func:`binary_codes` builds the [V, d] code table (optionally of randomly relabelled ids, the
  classroom stand-in for the paper's affine recoding: it decides which bit patterns a task's
  attributes line up with);
* :func:`fixed_code_ensemble` trains learned tables and fixed codes side by side in one batched
  Emb-MLP (through :func:`fix_tables`), with the two controls that tell "the table cannot move"
  from "the table is large": codes that train, and codes at the learned table's init size;
* :func:`first_layer_rows` (:func:`first_layer_tokens` for a model) is where the token's structure
  can go once E cannot move: each token's row of its own position's first-layer table, E W1_l;
* :func:`code_reach` says how much of a signature a linear read of the codes can express at all;
* :func:`fixed_codes_experiment` runs the lesson's comparison and reads it rung by rung;
* :func:`fix_tables` fixes the input table of chosen models of any ensemble, and
  :func:`gpt_codes_experiment` makes the same swap (and the same two controls) in the small GPT of
  lesson 09, on text.
"""

from __future__ import annotations

import math
import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from ctxlab.align import order_shares, permutation_baseline, subspace_fraction
from ctxlab.dataset import Dataset
from ctxlab.experiments import HEADLINE_TASK
from ctxlab.models import EmbMLP, Ensemble, make_model
from ctxlab.rungs import Rungs, measure_runs
from ctxlab.signatures import Signature, label_signature
from ctxlab.tasks import Task, hierarchy_task
from ctxlab.theory import plateau_levels
from ctxlab.train import Trajectory, train
from ctxlab.transplant import freeze_embedding, transplant
from ctxlab.validate import integer, number

CONDITIONS = ("learned", "id codes", "shuffled codes")
# the controls that tell "the table cannot move" from "the table is large": shuffled codes that train
# from their ±1 start, and shuffled codes fixed at the learned table's init size d^(-γ)
CONTROLS = ("shuffled codes, trainable", "shuffled codes × d^(−γ)")


def code_width(vocab_size: int) -> int:
    """⌈log₂V⌉: the fewest bits that give every one of V tokens its own code (1 for V <= 2)."""
    integer(vocab_size, "vocab_size", minimum=1)
    return max(1, math.ceil(math.log2(vocab_size)))


def binary_codes(vocab_size: int, d: int, signed: bool = True, shuffle_seed: int | None = None) -> Tensor:
    """The fixed [V, d] input table: column c holds bit (c mod ⌈log₂V⌉) of each token's id.

    ``signed`` writes the bits as ±1 (every row has norm √d and every bit is centred over a full
    code book), else as 0/1 (token 0 is then the zero vector and reaches the first layer not at all).
    ``shuffle_seed`` codes a random relabelling of the ids instead of the ids themselves.
    """
    bits = code_width(vocab_size)
    integer(d, "d", minimum=1)
    if d < bits:
        raise ValueError(f"d must be at least ⌈log2 V⌉ = {bits} so that every bit appears, got d={d}")
    ids = torch.arange(vocab_size)
    if shuffle_seed is not None:
        ids = torch.randperm(vocab_size, generator=torch.Generator().manual_seed(integer(shuffle_seed, "shuffle_seed")))
    table = ((ids[:, None] >> torch.arange(bits)) & 1).float()[:, torch.arange(d) % bits]
    return 2 * table - 1 if signed else table


def fixed_code_ensemble(task: Task, tables: Mapping[str, Tensor | None], seeds: Sequence[int], gamma: float = 1.0,
                        d: int = 32, hidden: int = 128, trainable: Collection[str] = (),
                        small: Collection[str] = ()) -> tuple[EmbMLP, list[str]]:
    """One Emb-MLP per (condition, seed): ``tables[name]`` is a fixed [V, d] table, or None for a learned one.

    Small init with a fixed table: the codes have unit entries, so the factor d^(-γ) that a learned
    table's init carries moves to W1 (its init is multiplied by d^(-γ)). The first layer's
    pre-activations then start as small as the learned model's at the same γ. Every other weight is
    the fresh init of the model's own (γ, seed). Returns the ensemble and each model's condition
    name (condition-major).

    Two controls tell "the table cannot move" from "the table is large" (each names conditions of
    ``tables``): a ``trainable`` condition's table starts at its codes and then trains like a
    learned one (W1 still carries d^(-γ)); a ``small`` condition's codes are multiplied by d^(-γ),
    the learned table's init size, and its W1 keeps its own init.
    """
    seeds = [integer(s, "seeds") for s in seeds]
    if not tables or not seeds:
        raise ValueError("need at least one table (or None for a learned one) and one seed")
    number(gamma, "gamma", positive=True)
    for role, chosen in (("trainable", trainable), ("small", small)):
        if any(tables.get(name) is None for name in chosen):
            raise ValueError(f"{role} must name conditions of tables that have a table, got {sorted(chosen)}")
    names = [name for name in tables for _ in seeds]
    model = make_model("mlp", task, d=d, hidden=hidden, gamma=gamma, seed=seeds * len(tables))
    given = [k for k, name in enumerate(names) if tables[name] is not None]
    start = {k: tables[names[k]] * (d ** -gamma if names[k] in small else 1.0) for k in given}
    fixed = {k: table for k, table in start.items() if names[k] not in trainable}
    if fixed:
        fix_tables(model, fixed)
    transplant(model, {k: table for k, table in start.items() if names[k] in trainable})
    with torch.no_grad():
        for k in given:
            if names[k] not in small:
                model.w1[k] *= d ** (-gamma)
    return model, names


def fix_tables(model: Ensemble, tables: Mapping[int, Tensor]) -> Ensemble:
    """Model k's input table becomes ``tables[k]`` ([V, d], e.g. :func:`binary_codes`) and stays so;
    every other model of the ensemble keeps its learned table and every other weight its init.

    One call for every ensemble with an ``embedding`` (the Emb-MLP, the small GPT): the tables are
    written by :func:`ctxlab.transplant.transplant` and frozen by
    :func:`ctxlab.transplant.freeze_embedding`, which both training loops honour. Returns the model.
    """
    if not tables:
        raise ValueError("tables must give a fixed [V, d] table for at least one model index")
    transplant(model, tables)
    return freeze_embedding(model, [k in tables for k in range(model.n_models)])


def token_positions(data: Dataset) -> Tensor:
    """The one position at which each token occurs [V] (tasks whose positions have blocks of their own)."""
    V, L = data.vocab_size, data.seq_len
    seen = torch.zeros(V, L, dtype=torch.bool)
    seen[data.x.long(), torch.arange(L).expand_as(data.x)] = True
    if bool((seen.sum(1) != 1).any()):
        raise ValueError("every token must occur at exactly one position (e.g. hierarchy_task): "
                         "this task has tokens at several positions or at none")
    return seen.float().argmax(1)


def first_layer_rows(E: Tensor, w1: Tensor, positions: Tensor) -> Tensor:
    """Each token's first-layer representation: its row of E W1_l at its own position l.

    E [..., V, d], w1 [..., L*d, hidden] (the Emb-MLP's W1: one [d, hidden] block per position),
    positions [V] -> [..., V, hidden]. The concatenated input makes the first layer add
    (E W1_l)[x_l] over the positions, so with E fixed this is where a token's structure can grow.
    """
    E, w1, positions = torch.as_tensor(E), torch.as_tensor(w1), torch.as_tensor(positions).long()
    if E.ndim < 2 or w1.ndim != E.ndim or w1.shape[-2] % E.shape[-1]:
        raise ValueError(f"need E [..., V, d] and w1 [..., L*d, hidden], got {tuple(E.shape)} and {tuple(w1.shape)}")
    V, d = E.shape[-2:]
    L = w1.shape[-2] // d
    if positions.shape != (V,) or int(positions.min()) < 0 or int(positions.max()) >= L:
        raise ValueError(f"positions must give one position in [0, {L}) for each of the {V} tokens")
    blocks = w1.reshape(*w1.shape[:-2], L, d, w1.shape[-1])[..., positions.to(w1.device), :, :]  # [..., V, d, hidden]
    return torch.einsum("...vd,...vdh->...vh", E, blocks)


def first_layer_tokens(model: EmbMLP, positions: Tensor) -> Tensor:
    """:func:`first_layer_rows` of every model of an Emb-MLP ensemble: [K, V, hidden]."""
    if not isinstance(model, EmbMLP):
        raise TypeError(f"first_layer_tokens reads an EmbMLP, got {type(model).__name__}")
    return first_layer_rows(model.embedding, model.w1, positions)


def code_reach(codes: Tensor, positions: Tensor, signature: Signature | Tensor) -> float:
    """Share of a signature's (token-centred) ||S||² that a linear read of the codes can express.

    Per position l the first layer can give its tokens any linear function of their codes (plus a
    constant), so the reachable token directions are those functions, block by block. 1: the
    codes hold the signature linearly; below 1 the rest must be built by the nonlinearity.
    """
    codes = torch.as_tensor(codes).double()
    positions = torch.as_tensor(positions).long()
    if codes.ndim != 2 or positions.shape != (codes.shape[0],):
        raise ValueError(f"need codes [V, d] and positions [V], got {tuple(codes.shape)} and {tuple(positions.shape)}")
    block = torch.nn.functional.one_hot(positions).double()  # [V, L]
    with_constant = torch.cat([codes, torch.ones(len(codes), 1, dtype=torch.float64)], 1)  # [V, d + 1]
    basis = (block[:, :, None] * with_constant[:, None]).flatten(1)  # each position's codes, zero elsewhere
    S = signature.matrix if isinstance(signature, Signature) else torch.as_tensor(signature)
    return float(subspace_fraction(S.double(), basis))


@dataclass
class FixedCodesResult:
    """The lesson's run: learned tables and fixed codes at one γ, read rung by rung and order by order."""

    task: Task
    names: list[str]  # [K] condition of each model
    trajectory: Trajectory  # extras["first_layer"]: [K, T, V, hidden]
    levels: list[float]
    rungs: list[Rungs]
    signatures: list[Signature]  # ΔS^1 .. ΔS^L (incremental label signatures)
    shares: Tensor  # [K, T, L]: share of ||R - R0||^2 in the directions order k adds (R: first-layer tokens)
    chance: list[float]
    reach: dict[str, list[float]]  # condition -> code_reach of ΔS^1 .. ΔS^L (1.0 for a learned table)
    seconds: float

    def models(self, name: str) -> list[int]:
        """Indices of the models of one condition."""
        if name not in self.names:
            raise ValueError(f"unknown condition {name!r}; choose one of {list(dict.fromkeys(self.names))}")
        return [k for k, n in enumerate(self.names) if n == name]

    def moved(self) -> Tensor:
        """R(t) - R(0) [K, T, V, hidden]: what training added to the first-layer token representation."""
        rep = self.trajectory.extras["first_layer"]
        return rep - rep[:, :1]

    def r2_with_band(self, order: int = 1, step: int | None = None, n: int = 200, seed: int = 0) -> tuple[Tensor, Tensor]:
        """R² of R(t) - R(0) in span(ΔS^order) per model [K], and its 95th-percentile permutation level [K]."""
        if not 1 <= integer(order, "order") <= len(self.signatures):
            raise ValueError(f"order must lie in [1, {len(self.signatures)}], got {order}")
        t = -1 if step is None else self.trajectory.index(step)
        moved, S = self.moved()[:, t], self.signatures[order - 1]
        band = permutation_baseline("subspace", moved, S, n=n, seed=seed).quantile(0.95, dim=0)
        return subspace_fraction(moved, S), band

    def to_json(self) -> dict:
        """The numbers behind the lesson's figures, per model: rungs, end, R² in span(ΔS¹) and its shuffle level."""
        r2, band = self.r2_with_band(1)
        runs = [{"condition": name, "seed": seed, "dwell_steps": read.dwells(), "onset_steps": read.onsets(),
                 "max_rise": round(read.rise, 6), "final_loss": round(read.final, 6), "ends_on": read.ends_on,
                 "r2_order1": round(float(r2[k]), 6), "r2_order1_shuffle_95": round(float(band[k]), 6),
                 "final_shares": [round(float(v), 6) for v in self.shares[k, -1]]}
                for k, (name, seed, read) in enumerate(zip(self.names, self.trajectory.seeds, self.rungs))]
        return {"levels": [round(h, 6) for h in self.levels], "chance": [round(c, 6) for c in self.chance],
                "code_reach": {n: [round(v, 6) for v in r] for n, r in self.reach.items()},
                "runs": runs, "seconds": round(self.seconds, 2)}

def fixed_codes_experiment(gamma: float = 1.0, seeds: Sequence[int] = (0, 1, 2), steps: int = 1200, lr: float = 1.0,
                           d: int = 32, hidden: int = 128, record_every: int = 5, shuffle_seed: int = 0,
                           device=None, progress: bool | None = None,
                           conditions: Sequence[str] = CONDITIONS) -> FixedCodesResult:
    """Learned table, codes of the ids and codes of shuffled ids on the headline task, in one batched run.

    The headline task and settings of :func:`ctxlab.experiments.staircase` (binary hierarchy task,
    GELU, plain full-batch GD), at one γ. ``conditions`` may also name the :data:`CONTROLS`.
    """
    known = CONDITIONS + CONTROLS
    if not conditions or any(name not in known for name in conditions):
        raise ValueError(f"conditions must be drawn from {known}, got {list(conditions)}")
    task = hierarchy_task(block=HEADLINE_TASK["block"], n_values=HEADLINE_TASK["n_values"], mix=HEADLINE_TASK["mix"])
    V = task.vocab_size
    shuffled = binary_codes(V, d, shuffle_seed=shuffle_seed)
    table_of = dict(zip(known, (None, binary_codes(V, d), shuffled, shuffled, shuffled)))
    tables = {name: table_of[name] for name in conditions}
    model, names = fixed_code_ensemble(task, tables, seeds, gamma, d, hidden,
                                       trainable=[n for n in conditions if n == CONTROLS[0]],
                                       small=[n for n in conditions if n == CONTROLS[1]])
    positions = token_positions(task.population)
    start = time.perf_counter()
    traj = train(model, task.population, steps, lr=lr, record_every=record_every, device=device, progress=progress,
                 desc="fixed codes", probes={"first_layer": lambda m: first_layer_tokens(m, positions)})
    seconds = time.perf_counter() - start
    levels = plateau_levels(task.population)
    signatures = [label_signature(task.population, k, "incremental") for k in range(1, task.seq_len + 1)]
    rep = traj.extras["first_layer"]
    shares, chance = order_shares(rep - rep[:, :1], signatures)
    reach = {name: [1.0] * len(signatures) if table is None else [code_reach(table, positions, S) for S in signatures]
             for name, table in tables.items()}
    return FixedCodesResult(task, names, traj, levels, measure_runs(traj.steps, traj.loss, levels), signatures,
                            shares, chance, reach, seconds)


# --- the small GPT on text ------------------------------------------------------------------------

GPT_CONDITIONS = ("learned", "fixed codes")
# the controls that tell "fixed" from "large": a table started at the ±1 codes that then trains, and
# fixed codes at the learned table's init size d^(-γ)
GPT_CONTROLS = ("learned, from codes", "fixed codes × d^(−γ)")


@dataclass
class GPTCodesResult:
    """Small GPTs on text with a learned table and with fixed codes: held-out loss and KL to each
    n-gram model (``trajectory.extras["kl_<name>"]``), recorded at log-spaced steps."""

    names: list[str]  # [K] condition of each model
    trajectory: Trajectory
    entropies: dict[str, float]  # held-out cross-entropy of the unigram, bigram and trigram models
    config: dict
    seconds: float

    def models(self, name: str) -> list[int]:
        """Indices of the models of one condition."""
        if name not in self.names:
            raise ValueError(f"unknown condition {name!r}; choose one of {list(dict.fromkeys(self.names))}")
        return [k for k, n in enumerate(self.names) if n == name]

    def kl_minimum_steps(self) -> dict[str, list[int]]:
        """Per n-gram model, the recorded step where each GPT is closest to it."""
        traj = self.trajectory
        return {name: traj.steps[traj.extras[f"kl_{name}"].argmin(-1)].tolist() for name in self.entropies}

    def to_json(self) -> dict:
        traj = self.trajectory
        return {"config": self.config, "conditions": self.names, "seeds": traj.seeds, "steps": traj.steps.tolist(),
                "held_out_loss": traj.loss.round(decimals=5).tolist(),
                "kl": {name: traj.extras[f"kl_{name}"].round(decimals=5).tolist() for name in self.entropies},
                "ngram_entropies": {name: round(h, 5) for name, h in self.entropies.items()},
                "kl_minimum_steps": self.kl_minimum_steps(), "seconds": round(self.seconds, 2)}


def gpt_codes_experiment(seeds: Sequence[int] = (0, 1, 2), steps: int = 300, gamma: float = 1.0, context: int = 16,
                         d: int = 32, n_layers: int = 1, batch_size: int = 16, lr: float = 1e-2, records: int = 30,
                         device=None, progress: bool | None = None, source: str = "shakespeare",
                         conditions: Sequence[str] = GPT_CONDITIONS) -> GPTCodesResult:
    """The TinyGPT of lesson 09 on the shipped Shakespeare (or the UTF-8 file ``source`` names),
    characters, with a learned token table and
    with fixed ±1 codes of the ids (:func:`binary_codes`, tiled to d), same γ and seeds, one batched
    Adam run on the same batches (:func:`ctxlab.lm.train_lm`).

    The codes enter the residual stream at full size (±1): unlike the Emb-MLP there is no single
    first layer to move a small-init factor into, since every block and the read-out read the stream.
    So "fixed" and "32 times larger" come together; ``conditions`` may add :data:`GPT_CONTROLS`,
    which separate them: a learned table started at the codes, and fixed codes times d^(-γ).
    """
    from ctxlab.experiments.gpt import text_data
    from ctxlab.learning_times import log_spaced_steps
    from ctxlab.lm import TinyGPT, train_lm

    seeds = [integer(s, "seeds") for s in seeds]
    if not seeds:
        raise ValueError("seeds must name at least one seed")
    number(gamma, "gamma", positive=True)
    known = GPT_CONDITIONS + GPT_CONTROLS
    if not conditions or any(name not in known for name in conditions):
        raise ValueError(f"conditions must be drawn from {known}, got {list(conditions)}")
    data = text_data(source, "char")
    V = data.vocab_size
    names = [name for name in conditions for _ in seeds]
    model = TinyGPT(V, context, d=d, n_layers=n_layers, n_heads=2, gamma=[gamma] * len(names), seed=seeds * len(conditions))
    codes = binary_codes(V, d)
    fixed = {"fixed codes": codes, "fixed codes × d^(−γ)": codes * d ** -gamma}
    if any(name in fixed for name in names):
        fix_tables(model, {k: fixed[name] for k, name in enumerate(names) if name in fixed})
    transplant(model, {k: codes for k, name in enumerate(names) if name == "learned, from codes"})
    start_time = time.perf_counter()
    traj = train_lm(model, data.train, steps, eval_tokens=data.held_out, yardsticks=data.yardsticks,
                    batch_size=batch_size, optimizer="adam", lr=lr, record_steps=[0, *log_spaced_steps(steps, records)],
                    device=device, progress=progress)
    config = {"vocab": V, "bits": code_width(V), "context": context, "d": d, "n_layers": n_layers, "n_heads": 2,
              "batch_size": batch_size, "optimizer": "adam", "lr": lr, "steps": steps, "gamma": gamma}
    return GPTCodesResult(names, traj, data.entropies, config, time.perf_counter() - start_time)

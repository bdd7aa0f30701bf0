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

from ctxlab.dataset import Dataset
from ctxlab.signatures import conditional_entropy, entropy_ladder
from ctxlab.validate import finite, integer, number


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

        return [stair.entropy for stair in entropy_ladder(self.population)]

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
    if integer(block, "block") < 1 or integer(n_values, "n_values") < 2 or block % n_values:
        raise ValueError("need block >= 1, n_values >= 2 and block divisible by n_values")
    mix_t = finite(mix, "mix", nonnegative=True, dtype=torch.float64)
    if abs(float(mix_t.sum()) - 1.0) > 1e-9:
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
    if integer(groups, "groups") < 1 or integer(vocab, "vocab") % (2 * groups) or vocab < 4 or integer(seq_len, "seq_len") < 2:
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


# --- lessons 04-05: skewed frequencies and separated modes ---


def with_token_frequencies(task_or_data: Task | Dataset, position: int, probs) -> Task | Dataset:
    """Reweight rows so that ``P(x_position = s) = probs[s]``, keeping everything given that token.

    Each row's weight is multiplied by ``probs[s] / P_old(x_position = s)``: the label distribution
    and the other positions given the token are unchanged, so only token frequencies move (e.g.
    Zipf-like keys to show that rare tokens learn slowly). Returns the same type it was given.
    """
    data = task_or_data.population if isinstance(task_or_data, Task) else task_or_data
    if not 0 <= integer(position, "position") < data.seq_len:
        raise ValueError(f"position must lie in [0, {data.seq_len}), got {position}")
    p = finite(probs, "probs", nonnegative=True, dtype=torch.float64).reshape(-1)
    if p.numel() != data.vocab_size or bool((p < 0).any()) or abs(float(p.sum()) - 1.0) > 1e-6:
        raise ValueError(f"probs must be {data.vocab_size} non-negative numbers summing to 1")
    tokens = data.x[:, position]
    w = data.weights.to(torch.float64)
    old = torch.zeros(data.vocab_size, dtype=torch.float64).index_add_(0, tokens, w)
    if bool(((p > 0) & (old <= 0)).any()):
        raise ValueError(f"probs puts mass on tokens that never occur at position {position}")
    new_w = w * p[tokens] / old[tokens].clamp_min(1e-300)
    new = Dataset(data.x, data.y, data.vocab_size, data.n_labels, (new_w / new_w.sum()).to(data.weights.dtype))
    if isinstance(task_or_data, Task):
        info = {**task_or_data.info, "frequencies": (position, p)}
        return Task(task_or_data.name, new, task_or_data.token_names, task_or_data.roles,
                    task_or_data.description + f"; token frequencies at position {position} reweighted", info)
    return new


def modes_task(strengths: tuple[float, ...] = (0.5, 0.3, 0.15), fillers: int = 4) -> Task:
    """Eight key tokens announce three binary label features with different reliabilities.

    Key s carries bits b_k(s) = +-1 (k = 1, 2, 3; all 8 combinations); the label c in {0..3} has
    features h_1(c) = (-1)^{c_1}, h_2(c) = (-1)^{c_2}, h_3(c) = h_1 h_2, and
    ``P(c | s) = (1 + sum_k strengths[k] b_k(s) h_k(c)) / 4``. Position 2 holds a filler token
    that says nothing. The input-output correlation then has three singular values in the ratio
    of ``strengths`` (s_k = strengths[k] * sqrt(8) / 16): cleanly separated learning modes.
    """
    m = finite(strengths, "strengths", nonnegative=True, dtype=torch.float64)
    if m.numel() != 3 or float(m.sum()) > 1.0 + 1e-12 or integer(fillers, "fillers") < 1:
        raise ValueError("need three non-negative strengths with sum <= 1 and fillers >= 1")
    keys = torch.arange(8)
    bits = torch.stack([1 - 2 * (keys % 2), 1 - 2 * ((keys // 2) % 2), 1 - 2 * ((keys // 4) % 2)], dim=1)  # [8, 3]
    labels = torch.arange(4)
    h1, h2 = 1 - 2 * (labels % 2), 1 - 2 * (labels // 2)
    features = torch.stack([h1, h2, h1 * h2], dim=1)  # [4, 3]
    q = (1 + (bits.double() * m) @ features.double().T) / 4  # [8, 4]
    x = _all_sequences([list(range(8)), list(range(8, 8 + fillers))])
    pop = Dataset(x, q[x[:, 0]].float(), 8 + fillers, 4, torch.full((x.shape[0],), 1.0 / x.shape[0]))
    names = tuple(f"k{''.join('1' if b < 0 else '0' for b in row.tolist())}" for row in bits) + tuple(
        f"f{j}" for j in range(fillers))
    return Task(
        name="modes",
        population=pop,
        token_names=names,
        roles=("key",) * 8 + ("filler",) * fillers,
        description=f"key bits announce label features with reliabilities {tuple(strengths)}; filler is noise",
        info={"bits": bits, "features": features, "strengths": tuple(strengths)},
    )


TASKS["modes"] = modes_task


def zipf(n_tokens: int, vocab: int, exponent: float = 1.0) -> Tensor:
    """Zipf frequencies 1/rank^exponent on the first ``n_tokens`` ids, zero on the rest: [vocab]."""
    if not 1 <= integer(n_tokens, "n_tokens") <= integer(vocab, "vocab"):
        raise ValueError(f"n_tokens must lie in [1, vocab = {vocab}], got {n_tokens}")
    number(exponent, "exponent")
    p = torch.zeros(vocab, dtype=torch.float64)
    p[:n_tokens] = 1.0 / torch.arange(1, n_tokens + 1, dtype=torch.float64) ** exponent
    return p / p.sum()


# --- lesson 07: a partner at a random earlier position (attention) ---


def partner_task(n_keys: int = 9, n_partners: int = 9, n_fillers: int = 3, seq_len: int = 4, n_values: int = 3,
                 mix: tuple[float, float] = (0.5, 0.5)) -> Task:
    """The key sits last; one partner token sits at a random earlier position, fillers elsewhere.

    Keys, partners and fillers use disjoint vocabularies. Every key and partner carries an attribute
    ``index mod n_values``; the label is ``A(key)`` with probability ``mix[0]`` and
    ``A(key) + A(partner) (mod n_values)`` with probability ``mix[1]``. A model with a fixed
    read-out per position cannot find the partner, so the second stair needs attention to move.
    The population is exact (every key, partner, partner position and filler pattern, equally
    likely). ``info["levels"]`` holds the honest plateaus ln C, H(Y | key), H(Y | key, partner).
    """
    if min(n_keys, n_partners, n_fillers) < 1 or seq_len < 2 or n_values < 2:
        raise ValueError("need at least one key, partner and filler, seq_len >= 2 and n_values >= 2")
    if n_keys % n_values or n_partners % n_values:
        raise ValueError("n_keys and n_partners must be divisible by n_values (balanced attributes)")
    if finite(mix, "mix", nonnegative=True).numel() != 2 or abs(sum(mix) - 1.0) > 1e-9:
        raise ValueError(f"mix must be two non-negative probabilities summing to 1, got {mix}")
    n_ctx = seq_len - 1
    if n_keys * n_partners * n_ctx * n_fillers ** (n_ctx - 1) > 200_000:
        raise ValueError("population too large: use fewer fillers or a shorter sequence")
    P0, F0 = n_keys, n_keys + n_partners  # first partner id, first filler id
    rows, partners, keys = [], [], []
    for pos in range(n_ctx):
        fill = [[F0 + f for f in range(n_fillers)]] * (n_ctx - 1)
        for ctx in itertools.product(*fill):
            for p in range(n_partners):
                for k in range(n_keys):
                    seq = list(ctx[:pos]) + [P0 + p] + list(ctx[pos:]) + [k]
                    rows.append(seq)
                    partners.append(p)
                    keys.append(k)
    x = torch.tensor(rows, dtype=torch.long)
    a_key = torch.tensor(keys) % n_values
    a_par = torch.tensor(partners) % n_values
    y = torch.zeros(len(rows), n_values, dtype=torch.float64)
    idx = torch.arange(len(rows))
    y[idx, a_key] += mix[0]
    y[idx, (a_key + a_par) % n_values] += mix[1]
    V = n_keys + n_partners + n_fillers
    pop = Dataset(x, y.float(), V, n_values, torch.full((len(rows),), 1.0 / len(rows)))
    pairs = Dataset(torch.stack([torch.tensor(keys), torch.tensor(partners) + P0], dim=1), y.float(), V,
                    n_values, pop.weights)

    levels = [conditional_entropy(pairs, ()), conditional_entropy(pairs, (0,)), conditional_entropy(pairs, (0, 1))]
    roles = ("key",) * n_keys + ("partner",) * n_partners + ("filler",) * n_fillers
    names = tuple(f"k{j}" for j in range(n_keys)) + tuple(f"p{j}" for j in range(n_partners)) + tuple(
        f"f{j}" for j in range(n_fillers))
    return Task(
        name="partner",
        population=pop,
        token_names=names,
        roles=roles,
        description=(f"key last, one partner at a random earlier position; label = A(key) w.p. {mix[0]}, "
                     f"A(key) + A(partner) mod {n_values} w.p. {mix[1]}"),
        info={"levels": levels, "partner_position": ((x[:, :n_ctx] >= P0) & (x[:, :n_ctx] < F0)).long().argmax(1),
              "attribute": torch.arange(V) % n_values, "mix": tuple(mix)},
    )


TASKS["partner"] = partner_task


# --- lesson 12: anchor composition (reasoning vs memorising) ---


def anchor_composition_task(n_keys: int = 20, shifts: tuple[int, ...] = (5, 1, -2, -8),
                            held_out: tuple[int, int] = (4, 3), reverse_offset: int = 4) -> Task:
    """Sequences (key, anchor1, anchor2); each anchor a in 1..len(shifts) adds ``shifts[a-1]`` to the key.

    The label is ``key + shift(anchor1) + shift(anchor2)``, stored as a class index offset so the
    smallest possible label is 0. The key comes first, then the two anchors in the order they are
    applied, as in the group's anchor-function data (x, a1, a2 side by side); with a position-wise
    model (Emb-MLP) the order only fixes which weight slice reads which token.

    The pair ``held_out`` is never trained. Its reverse pair is trained with a label that is NOT the
    composition: it gets an extra ``reverse_offset`` (the group's design: (3, 4) -> x - 6, while
    composing gives x - 10 for (4, 3)). So on the held-out pair a model that *composes* the two
    shifts answers ``key + s4 + s3`` while one that treats the pair as the (memorised) reverse pair
    answers ``key + s4 + s3 + reverse_offset``. ``reverse_offset=0`` makes the reverse pair plain
    composition (then the two answers coincide).

    The population (uniform over keys and trained pairs) is the training set;
    ``info["held_out"]`` is the held-out pair's Dataset (compositional labels) and
    ``info["symmetric_labels"]`` the labels a model copying the reverse pair would give.
    Tokens: keys ``k0..``, then anchors ``a1..``; ``info["values"]`` holds each token's number
    (key value, or anchor shift).
    """
    n_anchors = len(shifts)
    if integer(n_keys, "n_keys") < 2 or n_anchors < 2:
        raise ValueError("need at least 2 keys and 2 anchors")
    for s in shifts:
        integer(s, "each of shifts")
    if len(held_out) != 2:
        raise ValueError(f"held_out must be a pair of anchors, got {held_out}")
    a, b = (integer(h, "held_out") for h in held_out)
    if not (1 <= a <= n_anchors and 1 <= b <= n_anchors) or a == b:
        raise ValueError(f"held_out must be two different anchors in 1..{n_anchors}, got {held_out}")
    sh = torch.tensor(shifts, dtype=torch.long)
    pairs = [(p, q) for p in range(1, n_anchors + 1) for q in range(1, n_anchors + 1)]
    keys = torch.arange(n_keys)

    def raw(p: int, q: int) -> Tensor:
        return keys + sh[p - 1] + sh[q - 1] + (reverse_offset if (p, q) == (b, a) else 0)

    low = min(int(raw(p, q).min()) for p, q in pairs)
    high = max(int(raw(p, q).max()) for p, q in pairs)

    def rows(p: int, q: int) -> Tensor:
        return torch.stack([keys, torch.full_like(keys, n_keys + p - 1), torch.full_like(keys, n_keys + q - 1)], 1)

    trained = [pq for pq in pairs if pq != (a, b)]
    x = torch.cat([rows(p, q) for p, q in trained])
    y = torch.cat([raw(p, q) for p, q in trained]) - low
    V, C = n_keys + n_anchors, high - low + 1
    pop = Dataset(x, y, V, C, torch.full((x.shape[0],), 1.0 / x.shape[0]))
    composed = keys + sh[a - 1] + sh[b - 1] - low
    test = Dataset(rows(a, b), composed, V, C, torch.full((n_keys,), 1.0 / n_keys))
    return Task(
        name="anchor_composition",
        population=pop,
        token_names=tuple(f"k{j}" for j in range(n_keys)) + tuple(f"a{p}" for p in range(1, n_anchors + 1)),
        roles=("key",) * n_keys + ("anchor",) * n_anchors,
        description=(f"label = key + shift(a1) + shift(a2), shifts {tuple(shifts)}; pair {held_out} held out, "
                     f"its reverse trained with +{reverse_offset}"),
        info={"shifts": tuple(shifts), "held_out": test, "held_out_pair": (a, b),
              "symmetric_labels": composed + reverse_offset, "reverse_offset": reverse_offset,
              "label_offset": -low, "label_range": (low, high), "n_keys": n_keys,
              "values": torch.cat([keys, sh]).to(torch.float64)},
    )


TASKS["anchor_composition"] = anchor_composition_task


# --- lesson 11: a second task on the hierarchy task's tokens (transfer) ---


def transfer_task(block: int = 9, n_values: int = 3, mix: tuple[float, ...] = (0.4, 0.3, 0.3),
                  coefficients: tuple[int, ...] = (1, 2, 1)) -> Task:
    """The tokens, positions and attributes of :func:`hierarchy_task`, with a different label rule.

    The label is ``c_1 A(x1) + ... + c_k A(x_k)  (mod n_values)`` with probability ``mix[k-1]``;
    the default ``coefficients=(1, 2, 1)`` with three values makes it ``A(x1) - A(x2) + A(x3)``.
    An embedding that groups tokens by attribute serves both tasks, while the label distribution
    differs on the two thirds of sequences with A(x2) != 0: a clean test of whether learned
    structure transfers. With coefficients that are invertible mod ``n_values`` the task is the
    hierarchy task with anchor attributes renamed, so its
    ladder ``info["levels"]`` (H(Y), H(Y | x1), H(Y | x1, x2), H(Y | X)) equals the hierarchy's.
    """
    base = hierarchy_task(block, n_values, mix)
    L = len(mix)
    coef = torch.tensor([integer(c, "each of coefficients") for c in coefficients], dtype=torch.long)
    if coef.numel() != L:
        raise ValueError(f"need one coefficient per position ({L}), got {len(coefficients)}")
    x = base.population.x
    attr = base.info["attribute"]
    partial = torch.cumsum(attr[x] * coef, dim=1) % n_values  # [N, L]: the first k weighted attributes
    y = torch.zeros(x.shape[0], n_values, dtype=torch.float64)
    for k in range(L):
        y[torch.arange(x.shape[0]), partial[:, k]] += mix[k]
    pop = Dataset(x, y.float(), base.vocab_size, n_values, base.population.weights)
    # local import: signatures imports this module

    levels = [conditional_entropy(pop, tuple(range(k))) for k in range(L + 1)]
    return Task(
        name="transfer",
        population=pop,
        token_names=base.token_names,
        roles=base.roles,
        description=(f"label = sum of the first k attributes weighted by {tuple(coefficients)} mod {n_values}, "
                     f"k drawn with probabilities {tuple(mix)}"),
        info={**base.info, "coefficients": tuple(coefficients), "levels": levels},
    )


TASKS["transfer"] = transfer_task


# --- lesson 07: a task that needs attention ---


def _entropy_given(groups: Tensor, y: Tensor, weights: Tensor) -> float:
    """H(Y | G) in nats for a group id per row [N], soft labels y [N, C] and row weights [N]."""
    ids = torch.unique(groups, return_inverse=True)[1]
    joint = torch.zeros(int(ids.max()) + 1, y.shape[1], dtype=torch.float64).index_add_(0, ids, y * weights[:, None])
    cond = joint / joint.sum(1, keepdim=True)
    return max(0.0, float(-(joint * torch.log(cond.clamp_min(1e-300))).sum()))


def pointer_task(n_ctx: int = 5, n_values: int = 2, tokens_per_value: int = 1, key_copies: int = 1,
                 mix: tuple[float, float] = (0.5, 0.5)) -> Task:
    """The key sits last and *names a position*; every earlier position holds a token of one shared vocabulary.

    Key token ``k`` points at context position ``k mod n_ctx`` and carries the attribute
    ``(k // n_ctx) mod n_values``; a context token ``t`` carries ``t mod n_values``. The label is
    ``A(key)`` with probability ``mix[0]`` and ``A(key) + A(x_p) (mod n_values)`` with probability
    ``mix[1]``, where ``p`` is the position the key names. Since every context position draws from
    the same tokens, a bag of context (uniform attention) knows how many tokens carry each
    attribute but not which one sits at ``p``: its best loss ``H(Y | key, bag)`` lies above
    ``H(Y | key, x_p)``, and only attention that moves to ``p`` reaches the last rung.

    ``info["levels"]`` is the ladder ln C, H(Y | key), H(Y | key, x_p); ``info["bag_level"]`` is
    H(Y | key, bag), the floor of any model that only sees the bag (computed from the population);
    ``info["target_position"]`` [N] is the position each sequence's key names.
    """
    for value, name, low in ((n_ctx, "n_ctx", 2), (n_values, "n_values", 2), (tokens_per_value, "tokens_per_value", 1),
                             (key_copies, "key_copies", 1)):
        integer(value, name, minimum=low)
    if finite(mix, "mix", nonnegative=True).numel() != 2 or abs(sum(mix) - 1.0) > 1e-9:
        raise ValueError(f"mix must be two non-negative probabilities summing to 1, got {mix}")
    n_tok, n_keys = n_values * tokens_per_value, n_ctx * n_values * key_copies
    if n_tok ** n_ctx * n_keys > 200_000:
        raise ValueError(f"population too large ({n_tok ** n_ctx * n_keys} sequences): use a smaller n_ctx, "
                         "tokens_per_value or key_copies")
    ctx = _all_sequences([list(range(n_tok))] * n_ctx)  # [M, n_ctx]
    keys = torch.arange(n_keys)
    x = torch.cat([ctx.repeat_interleave(n_keys, 0), (n_tok + keys).repeat(ctx.shape[0])[:, None]], dim=1)
    key = x[:, -1] - n_tok
    target = key % n_ctx
    a_key = (key // n_ctx) % n_values
    a_target = x[torch.arange(x.shape[0]), target] % n_values
    y = torch.zeros(x.shape[0], n_values, dtype=torch.float64)
    rows = torch.arange(x.shape[0])
    y[rows, a_key] += mix[0]
    y[rows, (a_key + a_target) % n_values] += mix[1]
    w = torch.full((x.shape[0],), 1.0 / x.shape[0], dtype=torch.float64)
    counts = torch.nn.functional.one_hot(x[:, :-1], n_tok).sum(1)  # the bag: token counts, not places
    bag_id = (counts * (n_ctx + 1) ** torch.arange(n_tok)).sum(1)
    levels = [_entropy_given(torch.zeros_like(key), y, w), _entropy_given(key, y, w),
              _entropy_given(key * n_tok + x[rows, target], y, w)]
    bag_level = _entropy_given(key * (n_ctx + 1) ** n_tok + bag_id, y, w)
    V = n_tok + n_keys
    pop = Dataset(x, y.float(), V, n_values, w.float() / w.float().sum())
    names = tuple(f"t{t}" for t in range(n_tok)) + tuple(f"k{k}→{k % n_ctx}" for k in range(n_keys))
    return Task(
        name="pointer",
        population=pop,
        token_names=names,
        roles=("context",) * n_tok + ("key",) * n_keys,
        description=(f"{n_ctx} context tokens from one vocabulary of {n_tok}, then a key naming a position p; "
                     f"label = A(key) w.p. {mix[0]}, A(key) + A(x_p) mod {n_values} w.p. {mix[1]}"),
        info={"levels": levels, "bag_level": bag_level, "target_position": target,
              "attribute": torch.cat([torch.arange(n_tok) % n_values, (keys // n_ctx) % n_values]), "mix": tuple(mix)},
    )


TASKS["pointer"] = pointer_task

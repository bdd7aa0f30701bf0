"""Tasks for attention (lesson 07): a partner at a random earlier position, and a pointer whose key names
the position that matters, so that a bag of context cannot solve it."""

from __future__ import annotations

import itertools

import torch
from torch import Tensor

from ctxlab.dataset import Dataset
from ctxlab.signatures import conditional_entropy
from ctxlab.validate import finite, integer

from ctxlab.tasks.core import Task, all_sequences


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
    ``info["partial_levels"][k - 1]`` is the loss when the keys naming k of the n_ctx positions read
    their target and the others only the bag (the same for any k positions, by symmetry);
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
    ctx = all_sequences([list(range(n_tok))] * n_ctx)  # [M, n_ctx]
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
    # part of the way: the keys naming positions 0..k-1 read their target, the others only the bag
    read = key * n_tok + x[rows, target]
    bag_only = n_keys * n_tok + key * (n_ctx + 1) ** n_tok + bag_id
    partial_levels = [_entropy_given(torch.where(target < k, read, bag_only), y, w) for k in range(1, n_ctx)]
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
        info={"levels": levels, "bag_level": bag_level, "partial_levels": partial_levels, "target_position": target,
              "attribute": torch.cat([torch.arange(n_tok) % n_values, (keys // n_ctx) % n_values]), "mix": tuple(mix)},
    )

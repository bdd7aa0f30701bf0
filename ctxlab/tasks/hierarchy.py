"""The hierarchy family: a label built order by order from token attributes (the headline staircase),
its xor variant, separated modes, skewed token frequencies and the transfer task on the same tokens."""

from __future__ import annotations


import torch
from torch import Tensor

from ctxlab.dataset import Dataset
from ctxlab.signatures import conditional_entropy
from ctxlab.validate import finite, integer, number

from ctxlab.tasks.core import Task, all_sequences


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
    x = all_sequences([[p * block + j for j in range(block)] for p in range(L)])
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
    x = all_sequences([list(range(vocab))] * seq_len)
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
    x = all_sequences([list(range(8)), list(range(8, 8 + fillers))])
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


def zipf(n_tokens: int, vocab: int, exponent: float = 1.0) -> Tensor:
    """Zipf frequencies 1/rank^exponent on the first ``n_tokens`` ids, zero on the rest: [vocab]."""
    if not 1 <= integer(n_tokens, "n_tokens") <= integer(vocab, "vocab"):
        raise ValueError(f"n_tokens must lie in [1, vocab = {vocab}], got {n_tokens}")
    number(exponent, "exponent")
    p = torch.zeros(vocab, dtype=torch.float64)
    p[:n_tokens] = 1.0 / torch.arange(1, n_tokens + 1, dtype=torch.float64) ** exponent
    return p / p.sum()


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

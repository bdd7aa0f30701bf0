"""How well an embedding matrix lines up with a signature.

All metrics compare token x token structure, so they ignore the (arbitrary) basis of the
embedding space. Each takes E [..., V, d] (any leading axes, e.g. models x steps) and a
signature S [V, m] (or a :class:`~ctxlab.signatures.Signature`) and returns [...]:

* :func:`cka` -- linear CKA of the centred Gram matrices (the standard metric).
* :func:`rsa` -- Spearman correlation of the off-diagonal cosine similarities.
* :func:`subspace_fraction` -- share of ||E||^2 inside the token-space span of S (chance:
  rank / (V - 1)); it separates the orders most sharply.
* :func:`ridge_r2` -- leave-one-token-out R^2 of predicting E from S with ridge regression.
* :func:`order_shares` -- share of ||E||^2 in the directions each order adds to the lower ones,
  with its chance level: the measure that shows the order of the stairs most plainly.

:func:`permutation_baseline` scores shuffled signatures, which is the level to beat.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from ctxlab.models import ensemble_grid, make_model
from ctxlab.rungs import stair_onsets
from ctxlab.signatures import Signature, label_signature
from ctxlab.theory import plateau_levels
from ctxlab.train import train
from ctxlab.validate import finite, integer, number, token_ids


def _matrix(S) -> Tensor:
    return S.matrix if isinstance(S, Signature) else torch.as_tensor(S)


def _prepare(E: Tensor, S, tokens) -> tuple[Tensor, Tensor]:
    E = finite(E, "E (embeddings)").to(torch.float64)
    S = finite(_matrix(S), "S (signature)").to(torch.float64)
    if E.ndim < 2 or S.ndim != 2:
        raise ValueError(f"expected E [..., V, d] and S [V, m], got {tuple(E.shape)} and {tuple(S.shape)}")
    if E.shape[-2] != S.shape[0]:
        raise ValueError(
            f"E has {E.shape[-2]} token rows but the signature has {S.shape[0]}: they must describe the same vocabulary"
        )
    if tokens is not None:
        idx = _token_index(tokens, S.shape[0])
        E, S = E[..., idx, :], S[idx]
    if E.shape[-2] < 3:
        raise ValueError("alignment needs at least 3 tokens")
    return E - E.mean(-2, keepdim=True), S - S.mean(0, keepdim=True)


def _token_index(tokens, n_tokens: int) -> Tensor:
    """``tokens`` as a long index into n_tokens rows: integer ids in range (no silent truncation)."""
    idx = token_ids(tokens, "tokens").long()
    if idx.numel() and (int(idx.min()) < 0 or int(idx.max()) >= n_tokens):
        raise ValueError(f"tokens must lie in [0, {n_tokens})")
    return idx


def _gram(M: Tensor) -> Tensor:
    return M @ M.transpose(-1, -2)


def cka(E, S, tokens=None) -> Tensor:
    """Linear CKA = <Gc_E, Gc_S> / (||Gc_E|| ||Gc_S||) with token-centred Gram matrices; in [0, 1]."""
    E, S = _prepare(E, S, tokens)
    ge, gs = _gram(E), _gram(S)
    num = (ge * gs).sum((-1, -2))
    den = torch.linalg.matrix_norm(ge) * torch.linalg.matrix_norm(gs)
    return (num / den.clamp_min(1e-300))


def _cosine(M: Tensor) -> Tensor:
    unit = M / M.norm(dim=-1, keepdim=True).clamp_min(1e-12)
    return _gram(unit)


def _ranks(v: Tensor) -> Tensor:
    """Average ranks along the last axis (ties share their mean rank, as Spearman's rho needs).

    Signatures have many exactly equal similarities; ranking ties arbitrarily would cap the RSA of
    a signature with itself far below 1. Values are rounded so that float noise does not split ties.
    """
    v = torch.round(v, decimals=9)
    ordered = v.sort(-1).values
    below = torch.searchsorted(ordered, v, right=False)
    up_to = torch.searchsorted(ordered, v, right=True)
    return (below + up_to - 1).to(v.dtype) / 2


def rsa(E, S, tokens=None) -> Tensor:
    """Spearman correlation between the off-diagonal cosine similarities of E and of S (raw rows)."""
    E = torch.as_tensor(E).to(torch.float64)
    S = _matrix(S).to(torch.float64)
    _prepare(E, S, tokens)  # validates shapes and values
    if tokens is not None:
        idx = _token_index(tokens, S.shape[0])
        E, S = E[..., idx, :], S[idx]
    V = S.shape[0]
    upper = torch.triu_indices(V, V, offset=1)
    ce = _cosine(E)[..., upper[0], upper[1]]
    cs = _cosine(S)[upper[0], upper[1]]
    re, rs = _ranks(ce), _ranks(cs)
    re, rs = re - re.mean(-1, keepdim=True), rs - rs.mean()
    return ((re * rs).sum(-1) / (re.norm(dim=-1) * rs.norm()).clamp_min(1e-300))


def signature_rank(S, tol: float = 1e-6) -> int:
    """Rank of the token-centred signature: the dimension of the token-space span it defines."""
    number(tol, "tol", minimum=0)
    _, Sc = _prepare(torch.zeros(_matrix(S).shape[0], 1), S, None)
    sv = torch.linalg.svdvals(Sc)
    return int((sv > tol * sv.max().clamp_min(1e-300)).sum())


def subspace_fraction(E, S, tokens=None, tol: float = 1e-6) -> Tensor:
    """||P_S E||^2 / ||E||^2 after centring, P_S projecting onto the token-space span of S.

    A random E scores rank(S) / (V - 1) on average.
    """
    number(tol, "tol", minimum=0)
    E, S = _prepare(E, S, tokens)
    U, sv, _ = torch.linalg.svd(S, full_matrices=False)
    U = U[:, sv > tol * sv.max().clamp_min(1e-300)]
    inside = (U.transpose(0, 1) @ E).pow(2).sum((-1, -2))
    return (inside / E.pow(2).sum((-1, -2)).clamp_min(1e-300))


def order_shares(E, signatures, tokens=None, tol: float = 1e-6) -> tuple[Tensor, list[float]]:
    """Share of ||E||^2 (token-centred) in the directions each order adds: ([..., K], chance [K]).

    The spans of ΔS^1, ΔS^1 + ΔS^2, ... grow order by order; share k is the part of E inside the
    k-th span but outside the (k-1)-th, i.e. the token directions that order k adds. Unlike CKA these
    shares separate the orders: an embedding that knows only order 1 has share 1 at order 1 and 0
    elsewhere. A random E scores each increment's dimension / (V - 1): the chance levels returned.
    """
    if not signatures:
        raise ValueError("give at least one signature")
    mats = [_matrix(S).to(torch.float64) for S in signatures]
    E, _ = _prepare(E, mats[0], tokens)
    shares, chance, below, dims = [], [], torch.zeros((), dtype=torch.float64), 0
    total = E.pow(2).sum((-1, -2)).clamp_min(1e-300)
    for k in range(1, len(mats) + 1):
        stacked = torch.cat(mats[:k], dim=1)
        _, S = _prepare(E, stacked, tokens)
        U, sv, _ = torch.linalg.svd(S, full_matrices=False)
        U = U[:, sv > tol * sv.max().clamp_min(1e-300)]
        inside = (U.transpose(0, 1) @ E).pow(2).sum((-1, -2)) / total
        shares.append(inside - below)
        chance.append((U.shape[1] - dims) / (E.shape[-2] - 1))
        below, dims = inside, U.shape[1]
    return torch.stack(shares, -1), chance


def ridge_r2(E, S, tokens=None, alpha: float = 1e-3) -> Tensor:
    """Leave-one-token-out R^2 of the ridge fit E ~ S A (kernel form, exact LOO residuals).

    alpha is relative to the mean eigenvalue of S S^T, so it does not depend on the scale of S.
    """
    number(alpha, "alpha", positive=True)
    E, S = _prepare(E, S, tokens)
    K = _gram(S)
    V = K.shape[0]
    lam = alpha * torch.trace(K) / V
    hat = K @ torch.linalg.inv(K + lam * torch.eye(V, dtype=K.dtype))
    resid = (torch.eye(V, dtype=K.dtype) - hat) @ E
    loo = resid / (1 - torch.diagonal(hat)).clamp_min(1e-12)[:, None]
    return (1 - loo.pow(2).sum((-1, -2)) / E.pow(2).sum((-1, -2)).clamp_min(1e-300))


METRICS: dict[str, Callable[..., Tensor]] = {
    "cka": cka,
    "rsa": rsa,
    "subspace": subspace_fraction,
    "ridge": ridge_r2,
}


def metric(name: str) -> Callable[..., Tensor]:
    if name not in METRICS:
        raise ValueError(f"unknown alignment metric {name!r}; choose one of {sorted(METRICS)}")
    return METRICS[name]


def permutation_baseline(name: str, E, S, n: int = 200, seed: int = 0, tokens=None) -> Tensor:
    """Scores of E against ``n`` row-shuffled copies of S: [n, ...]. Beat its upper quantiles."""
    fn = metric(name)
    integer(n, "n (number of shuffles)", minimum=1)
    S = _matrix(S)
    if tokens is not None:
        idx = _token_index(tokens, S.shape[0])
        E, S = torch.as_tensor(E)[..., idx, :], S[idx]
    g = torch.Generator().manual_seed(seed)
    return torch.stack([fn(E, S[torch.randperm(S.shape[0], generator=g)]) for _ in range(n)])


def cka_shuffle_range(E, S, n: int = 50, seed: int = 0) -> Tensor:
    """Lowest and highest CKA of E [..., V, d] against ``n`` row-shuffled copies of S: [..., 2].

    The range of ``permutation_baseline("cka", E, S, n, seed)`` (the same shuffles), at one Gram
    product per shuffle: shuffling S's rows permutes the rows and columns of its Gram matrix.
    """
    integer(n, "n (number of shuffles)", minimum=1)
    E, S = _prepare(E, S, None)
    ge, gs = _gram(E), _gram(S)
    norm = (torch.linalg.matrix_norm(ge) * torch.linalg.matrix_norm(gs)).clamp_min(1e-300)
    g = torch.Generator().manual_seed(seed)
    scores = []
    for _ in range(n):
        p = torch.randperm(gs.shape[0], generator=g)
        scores.append((ge * gs[p][:, p]).sum((-1, -2)) / norm)
    scores = torch.stack(scores)
    return torch.stack([scores.min(0).values, scores.max(0).values], -1)


def align_trajectory(traj, signatures, metric_name: str = "cka", tokens=None, relative_to_init: bool = False) -> dict[str, Tensor]:
    """Alignment of every recorded embedding with each signature: name -> [K, T].

    ``signatures`` is a list of Signature (keyed by ``.name``) or a dict name -> matrix.
    ``relative_to_init`` scores E(t) - E(0), which matters at standard init where E(0) is large.
    A model that diverged (``traj.diverged_at``) or holds non-finite embeddings scores NaN from
    the step where it diverged: its embedding there is no honest reading.
    """
    from ctxlab.train import blank_after_divergence

    fn = metric(metric_name)
    items = signatures.items() if isinstance(signatures, dict) else [(s.name, s) for s in signatures]
    E = traj.embeddings
    if relative_to_init:
        E = E - E[:, :1]
    usable = torch.isfinite(E).flatten(1).all(1)
    out = {}
    for name, S in items:
        if bool(usable.all()):
            score = fn(E, S, tokens=tokens)
        else:
            score = torch.full(E.shape[:2], float("nan"), dtype=torch.float64)
            if bool(usable.any()):
                score[usable] = fn(E[usable], S, tokens=tokens)
        diverged_at = getattr(traj, "diverged_at", None)
        out[name] = score if diverged_at is None else blank_after_divergence(score, traj.steps.tolist(), diverged_at)
    return out


def role_norms(traj, roles: Sequence[str]) -> dict[str, Tensor]:
    """Mean embedding norm of the tokens of each role over training: role -> [K, T]."""
    out = {}
    for role in dict.fromkeys(roles):
        idx = torch.tensor([i for i, r in enumerate(roles) if r == role])
        out[role] = traj.embeddings[:, :, idx].norm(dim=-1).mean(-1)
    return out


# --- helpers for lessons 02-03 ----------------------------------------------------------------


def pca_2d(E) -> Tensor:
    """Token-centred E [..., V, d] on its two leading principal axes: [..., V, 2].

    Each axis is signed so that its largest-magnitude coordinate is positive, so two runs that
    differ only by a sign flip draw the same picture.
    """
    E = finite(E, "E (embeddings)").to(torch.float64)
    if E.ndim < 2 or E.shape[-2] < 2 or E.shape[-1] < 2:
        raise ValueError(f"pca_2d needs E [..., V, d] with V >= 2 and d >= 2, got {tuple(E.shape)}")
    U, sv, _ = torch.linalg.svd(E - E.mean(-2, keepdim=True), full_matrices=False)
    coords = U[..., :2] * sv[..., None, :2]
    peak = torch.gather(coords, -2, coords.abs().argmax(-2, keepdim=True))
    return coords * torch.where(peak < 0, -1.0, 1.0).to(coords.dtype)


@dataclass
class NoiseSweep:
    """Scores of E = unit(S W) + sigma * unit(noise) against S: metric -> [levels, seeds] each."""

    noise: list[float]
    scores: dict[str, Tensor]
    baselines: dict[str, Tensor]  # mean score against row-shuffled S, same shape


def noise_sweep(S, noise: Sequence[float], seeds: Sequence[int], d: int = 32, n_shuffles: int = 50,
                metrics: Sequence[str] = ("cka", "rsa", "subspace", "ridge")) -> NoiseSweep:
    """How each metric falls as an embedding that copies S (through a random map W [m, d]) drowns in noise.

    Signal and noise are each scaled to unit Frobenius norm after centring, so sigma is the
    noise-to-signal ratio whatever the scale of S.
    """
    if integer(d, "d") < 1 or integer(n_shuffles, "n_shuffles") < 1 or not seeds or not noise:
        raise ValueError("noise_sweep needs d >= 1, n_shuffles >= 1 and at least one seed and noise level")
    finite(list(noise), "noise", nonnegative=True)
    Sm = _matrix(S).to(torch.float64)
    Sc = Sm - Sm.mean(0, keepdim=True)
    embeddings = []
    for seed in seeds:
        g = torch.Generator().manual_seed(int(seed))
        signal = Sc @ torch.randn(Sc.shape[1], d, generator=g, dtype=torch.float64)
        noisy = torch.randn(Sc.shape[0], d, generator=g, dtype=torch.float64)
        noisy = noisy - noisy.mean(0, keepdim=True)
        embeddings.append([signal / signal.norm() + s * noisy / noisy.norm() for s in noise])
    E = torch.stack([torch.stack(row) for row in embeddings], 1)  # [levels, seeds, V, d]
    scores = {m: metric(m)(E, Sm) for m in metrics}
    baselines = {m: permutation_baseline(m, E, Sm, n=n_shuffles, seed=0).mean(0) for m in metrics}
    return NoiseSweep([float(s) for s in noise], scores, baselines)


# --- lesson 13: semantic structure (neighbours and signature classes) ----------------------------


def _unit_cosines(M: Tensor) -> Tensor:
    """Cosine similarities between the rows of M [..., V, m], float64, with the diagonal at -inf."""
    M = torch.as_tensor(M).to(torch.float64)
    sims = _cosine(M)
    eye = torch.eye(M.shape[-2], dtype=torch.bool, device=M.device)
    return sims.masked_fill(eye, -float("inf"))


def nearest(M: Tensor, row: int, k: int = 5) -> list[int]:
    """The ``k`` rows of M [V, m] with the highest cosine similarity to row ``row`` (itself excluded)."""
    if not 0 <= integer(row, "row") < M.shape[0] or integer(k, "k") < 1:
        raise ValueError(f"row must lie in [0, {M.shape[0]}) and k >= 1")
    return _unit_cosines(M)[row].topk(min(k, M.shape[0] - 1)).indices.tolist()


def neighbour_overlap(A: Tensor, B: Tensor, k: int = 10) -> Tensor:
    """For each row, the fraction of its ``k`` cosine nearest neighbours under A that are also among
    its ``k`` nearest under B: [..., V] for A [..., V, m] and B [..., V, m'] (leading axes broadcast).

    A token never counts as its own neighbour, and the order within the top k does not matter.
    Chance level: :func:`overlap_chance`.
    """
    if A.ndim < 2 or B.ndim < 2 or A.shape[-2] != B.shape[-2] or not 1 <= integer(k, "k") < A.shape[-2]:
        raise ValueError(f"A and B need the same number of rows (> k), got {tuple(A.shape)}, {tuple(B.shape)}, k={k}")
    a, b = _unit_cosines(A).topk(k, dim=-1).indices, _unit_cosines(B).topk(k, dim=-1).indices
    return (a[..., :, None] == b[..., None, :]).any(-1).to(torch.float64).mean(-1)


def overlap_chance(n_tokens: int, k: int) -> float:
    """Expected :func:`neighbour_overlap` of two unrelated geometries: k random picks of n_tokens - 1."""
    if not 1 <= integer(k, "k") < integer(n_tokens, "n_tokens"):
        raise ValueError(f"need 1 <= k < n_tokens, got k={k}, n_tokens={n_tokens}")
    return k / (n_tokens - 1)


def overlap_trajectory(traj, S, k: int = 5, tokens=None, relative_to_init: bool = False) -> Tensor:
    """Mean neighbour overlap of every recorded embedding with the signature S [V, m]: [K, T].

    Neighbours are searched among ``tokens`` only (e.g. the most frequent ones), in E and in S.
    ``relative_to_init`` uses E(t) - E(0): what training added, without the random start; it is
    NaN at step 0, where the displacement is zero and has no neighbours.
    """
    E = torch.as_tensor(traj.embeddings if hasattr(traj, "embeddings") else traj).to(torch.float64)
    S = _matrix(S).to(torch.float64)
    if E.ndim != 4 or E.shape[-2] != S.shape[0]:
        raise ValueError(f"expected embeddings [K, T, V, d] and S [V, m], got {tuple(E.shape)} and {tuple(S.shape)}")
    if relative_to_init:
        E = E - E[:, :1]
    if tokens is not None:
        idx = _token_index(tokens, S.shape[0])
        E, S = E[..., idx, :], S[idx]
    out = neighbour_overlap(E, S, k).mean(-1)
    if relative_to_init:
        out[:, 0] = float("nan")
    return out


def signature_classes(*signatures, tol: float = 1e-6) -> Tensor:
    """Class id of every token [V]: tokens share a class iff their rows agree (within ``tol``) in
    every given signature. Classes are numbered in order of their first token.

    Passing order-1 only groups the hierarchy task's keys by attribute but lumps all anchors
    together; adding order 2 splits the first anchors by attribute, and so on.
    """
    if not signatures:
        raise ValueError("give at least one signature")
    number(tol, "tol", minimum=0)
    mats = [_matrix(S).to(torch.float64) for S in signatures]
    if any(m.ndim != 2 or m.shape[0] != mats[0].shape[0] for m in mats):
        raise ValueError("signatures must be [V, m] matrices over the same tokens")
    rows = torch.cat(mats, dim=1)
    V = rows.shape[0]
    close = (rows[:, None, :] - rows[None, :, :]).abs().amax(-1) <= tol  # [V, V]
    ids = torch.full((V,), -1, dtype=torch.long)
    n = 0
    for s in range(V):
        if ids[s] < 0:
            ids[close[s] & (ids < 0)] = n
            n += 1
    return ids


def class_cosines(E, classes, tokens=None) -> tuple[Tensor, Tensor]:
    """Mean cosine between distinct tokens of the same class and between tokens of different
    classes: (within [...], between [...]) for E [..., V, d] and class ids [V].

    ``tokens`` restricts both to a subset (e.g. one role), so "between" compares like with like.
    """
    E = finite(E, "E (embeddings)").to(torch.float64)
    classes = token_ids(classes, "classes").long()
    if E.ndim < 2 or classes.shape != (E.shape[-2],):
        raise ValueError(f"expected E [..., V, d] and classes [V], got {tuple(E.shape)} and {tuple(classes.shape)}")
    if tokens is not None:
        idx = _token_index(tokens, len(classes))
        E, classes = E[..., idx, :], classes[idx]
    same = classes[:, None] == classes[None, :]
    within_pairs = same & ~torch.eye(len(classes), dtype=torch.bool)
    if not within_pairs.any() or same.all():
        raise ValueError("need at least one class with two tokens and at least two classes")
    sims = _cosine(E)
    return sims[..., within_pairs].mean(-1), sims[..., ~same].mean(-1)


def hierarchy_class_groups(task) -> dict[str, tuple[Tensor, Tensor]]:
    """The hierarchy task's two groups with the signature classes that separate them:
    name -> (class ids [V], token ids): the keys by their order-1 classes, the first anchors by
    their order-1-and-2 classes (their order-1 rows are all uniform)."""
    data = task.population
    sig1, sig2 = label_signature(data, 1, "raw"), label_signature(data, 2, "raw")
    return {"keys (order-1 classes)": (signature_classes(sig1), task.role_tokens("key")),
            "first anchors (order-2 classes)": (signature_classes(sig1, sig2), task.role_tokens("anchor1"))}


@dataclass(frozen=True)
class ClassCollapse:
    """Within- and between-class cosines of an Emb-MLP ensemble over training (lesson 13's headline).

    gammas, seeds: per model; steps [T]; cosines: group name -> (within [K, T], between [K, T]);
    onsets [K, n]: stair onsets (-1 if not reached); mean_onsets: γ -> the mean onset of every stair
    that all of that γ's seeds reached; start, end [K, V, d]: the first and last embedding tables.
    """

    gammas: list[float]
    seeds: list[int]
    steps: Tensor
    cosines: dict
    onsets: Tensor
    mean_onsets: dict
    start: Tensor
    end: Tensor


def class_collapse(task, groups: dict, gammas: Sequence[float] = (1.0, 0.5), seeds: Sequence[int] = (0, 1, 2),
                   steps: int = 1200, lr: float = 1.0, d: int = 32, hidden: int = 128,
                   record_every: int = 10, device=None) -> ClassCollapse:
    """Train Emb-MLP (GELU, full-batch GD) per (γ, seed) and follow how close same-class tokens come,
    for every group name -> (class ids [V], token ids), e.g. :func:`hierarchy_class_groups`."""
    g, s = ensemble_grid(gammas, seeds)
    data = task.population
    model = make_model("mlp", task, d=d, hidden=hidden, activation="gelu", gamma=g, seed=s)
    run = train(model, data, steps, optimizer="gd", lr=lr, record_every=record_every, progress=False,
                device=device)
    cosines = {name: class_cosines(run.embeddings, cls, tokens=idx) for name, (cls, idx) in groups.items()}
    onsets = stair_onsets(run.steps, run.loss, plateau_levels(data))  # [K, n]
    mean_onsets = {}
    for gamma in dict.fromkeys(g):
        rows = onsets[torch.tensor(g) == gamma]
        mean_onsets[gamma] = [int(col[col >= 0].float().mean()) for col in rows.T if bool((col >= 0).all())]
    return ClassCollapse(g, s, run.steps, cosines, onsets, mean_onsets, run.embeddings[:, 0], run.embeddings[:, -1])

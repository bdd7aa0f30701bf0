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

import torch
from torch import Tensor

from ctxlab.signatures import Signature
from ctxlab.validate import finite, integer, number, token_ids


def as_matrix(S) -> Tensor:
    """A signature's [V, m] matrix, or ``S`` itself as a tensor."""
    return S.matrix if isinstance(S, Signature) else torch.as_tensor(S)


def _prepare(E: Tensor, S, tokens) -> tuple[Tensor, Tensor]:
    E = finite(E, "E (embeddings)").to(torch.float64)
    S = finite(as_matrix(S), "S (signature)").to(torch.float64)
    if E.ndim < 2 or S.ndim != 2:
        raise ValueError(f"expected E [..., V, d] and S [V, m], got {tuple(E.shape)} and {tuple(S.shape)}")
    if E.shape[-2] != S.shape[0]:
        raise ValueError(
            f"E has {E.shape[-2]} token rows but the signature has {S.shape[0]}: they must describe the same vocabulary"
        )
    if tokens is not None:
        idx = token_index(tokens, S.shape[0])
        E, S = E[..., idx, :], S[idx]
    if E.shape[-2] < 3:
        raise ValueError("alignment needs at least 3 tokens")
    return E - E.mean(-2, keepdim=True), S - S.mean(0, keepdim=True)


def token_index(tokens, n_tokens: int) -> Tensor:
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


def row_cosines(M: Tensor) -> Tensor:
    """[..., V, m] -> [..., V, V] cosine similarities of the rows (a zero row is similar to nothing)."""
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
    S = as_matrix(S).to(torch.float64)
    _prepare(E, S, tokens)  # validates shapes and values
    if tokens is not None:
        idx = token_index(tokens, S.shape[0])
        E, S = E[..., idx, :], S[idx]
    V = S.shape[0]
    upper = torch.triu_indices(V, V, offset=1)
    ce = row_cosines(E)[..., upper[0], upper[1]]
    cs = row_cosines(S)[upper[0], upper[1]]
    re, rs = _ranks(ce), _ranks(cs)
    re, rs = re - re.mean(-1, keepdim=True), rs - rs.mean()
    return ((re * rs).sum(-1) / (re.norm(dim=-1) * rs.norm()).clamp_min(1e-300))


def signature_rank(S, tol: float = 1e-6) -> int:
    """Rank of the token-centred signature: the dimension of the token-space span it defines."""
    number(tol, "tol", minimum=0)
    _, Sc = _prepare(torch.zeros(as_matrix(S).shape[0], 1), S, None)
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
    mats = [as_matrix(S).to(torch.float64) for S in signatures]
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
    S = as_matrix(S)
    if tokens is not None:
        idx = token_index(tokens, S.shape[0])
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

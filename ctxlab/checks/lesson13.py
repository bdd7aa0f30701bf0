"""Checks for the exercises of lesson 13 (semantic structure): the k-NN overlap and signature classes."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from ctxlab.align import neighbour_overlap, signature_classes
from ctxlab.checks.core import Case, Diagnosis, all_close, as_tensor, run_check, tensor_close
from ctxlab.signatures import label_signature
from ctxlab.tasks import hierarchy_task, xor_task

# --- exercise: the k-NN overlap ---------------------------------------------------------------------


def knn_overlap(A: Tensor, B: Tensor, k: int) -> Tensor:
    """Reference: per row, the share of its k cosine neighbours under A (itself excluded) that are
    also among its k cosine neighbours under B: [V]."""
    return neighbour_overlap(A, B, k)


def _overlap_inputs() -> list[tuple[str, tuple, bool]]:
    """B is a noisy linear image of A; row norms spread over two orders of magnitude."""
    out = []
    for seed, (V, m, n, k, hidden) in enumerate([(12, 4, 6, 3, False), (25, 6, 9, 5, True),
                                                 (40, 8, 5, 4, True), (18, 3, 12, 2, True)]):
        g = torch.Generator().manual_seed(110 + seed)
        A = torch.randn(V, m, generator=g, dtype=torch.float64)
        B = A @ torch.randn(m, n, generator=g, dtype=torch.float64) + 0.8 * torch.randn(V, n, generator=g, dtype=torch.float64)
        A = A * torch.exp(1.5 * torch.randn(V, 1, generator=g, dtype=torch.float64))
        B = B * torch.exp(1.5 * torch.randn(V, 1, generator=g, dtype=torch.float64))
        out.append((f"V={V}, k={k}", (A, B, k), hidden))
    g = torch.Generator().manual_seed(0)  # two equal rows of A: each is the other's nearest neighbour, tied with itself
    A, B = torch.randn(8, 3, generator=g, dtype=torch.float64), torch.randn(8, 4, generator=g, dtype=torch.float64)
    A[5] = A[2]
    out.append(("V=8, k=3, tokens 2 and 5 with equal rows in A", (A, B, 3), True))
    return out


def neighbours_by(M: Tensor, k: int, how: str) -> Tensor:
    """Top-k neighbour indices [V, k] of each row under one (possibly mistaken) rule."""
    M = M.double()
    if how == "euclidean":
        score = -torch.cdist(M, M)
    elif how == "dot":
        score = M @ M.T
    else:
        unit = M / M.norm(dim=1, keepdim=True)
        score = unit @ unit.T
    if how != "with itself":
        score = score.fill_diagonal_(-float("inf"))
    return score.topk(k, dim=1).indices


def shared_count(a: Tensor, b: Tensor) -> Tensor:
    """Per row, how many indices of a also appear in b (the order inside a row does not matter)."""
    return (a[:, :, None] == b[:, None, :]).any(-1).double().sum(1)


def check_13_knn_overlap(fn: Callable[[Tensor, Tensor, int], Tensor]) -> None:
    """fn(A [V, m], B [V, n], k) -> [V]: share of each token's k cosine neighbours shared by A and B."""
    cases = [Case(label, args, knn_overlap(*args), hidden) for label, args, hidden in _overlap_inputs()]

    def variant(rule: Callable[[Tensor, Tensor, int], Tensor]) -> Callable:
        return lambda g, e, c: all_close(g, rule(*c.args)) and not all_close(g, e)

    def with_itself(A, B, k):
        return shared_count(neighbours_by(A, k, "with itself"), neighbours_by(B, k, "with itself")) / k

    def by_rule(how: str):
        return lambda A, B, k: shared_count(neighbours_by(A, k, how), neighbours_by(B, k, how)) / k

    def by_position(A, B, k):
        return (neighbours_by(A, k, "cosine") == neighbours_by(B, k, "cosine")).double().mean(1)

    def over_V(A, B, k):
        return shared_count(neighbours_by(A, k, "cosine"), neighbours_by(B, k, "cosine")) / A.shape[0]

    def counts(A, B, k):
        return shared_count(neighbours_by(A, k, "cosine"), neighbours_by(B, k, "cosine"))

    def self_as_first_column(A, B, k):
        def top(M):
            unit = M.double() / M.double().norm(dim=1, keepdim=True)
            return (unit @ unit.T).topk(k + 1, dim=1).indices[:, 1:]
        return shared_count(top(A), top(B)) / k

    def is_mean(g, e, c) -> bool:
        got = as_tensor(g)
        return got is not None and got.numel() == 1 and abs(float(got) - float(e.mean())) < 1e-6

    diagnoses = [
        Diagnosis(variant(with_itself), "a token is not its own neighbour: exclude the diagonal (set it to -inf) before taking the top k"),
        Diagnosis(variant(self_as_first_column), "dropping the first column of a top-(k+1) assumes the token comes first: a token "
                                                 "with an equal row ties with itself and may come first instead; exclude the token "
                                                 "itself by its index (the diagonal)"),
        Diagnosis(variant(by_rule("euclidean")), "use cosine similarity, not Euclidean distance: rows have very different norms, and only directions should count"),
        Diagnosis(variant(by_rule("dot")), "normalise the rows first: plain dot products favour long rows, cosine similarity does not"),
        Diagnosis(variant(by_position), "the order inside the top k does not matter: count the neighbours that appear anywhere in both lists"),
        Diagnosis(variant(over_V), "divide the number of shared neighbours by k (the most there can be), not by the number of tokens"),
        Diagnosis(variant(counts), "return the share of shared neighbours (count / k), not the count"),
        Diagnosis(is_mean, "return one value per token, shape [V], not the mean over tokens"),
    ]  # fmt: skip
    run_check("check_13_knn_overlap", fn, cases, tensor_close(atol=1e-6), diagnoses)


# --- exercise: signature classes -------------------------------------------------------------------


def classes_of(S: Tensor, tol: float = 1e-6) -> Tensor:
    """Reference: class id per token, equal iff the signature rows agree within tol in every column."""
    return signature_classes(S, tol=tol)


def _same(labels: Tensor) -> Tensor:
    labels = torch.as_tensor(labels).reshape(-1)
    return labels[:, None] == labels[None, :]


def same_partition() -> Callable:
    """Two labelings agree if they group the tokens the same way, whatever the numbers."""

    def compare(got, expected: Tensor) -> str | None:
        g = as_tensor(got)
        if g is None or g.ndim != 1 or g.shape[0] != expected.shape[0]:
            return f"expected one class id per token, shape ({expected.shape[0]},), got {getattr(g, 'shape', type(got))}"
        diff = _same(g) != _same(expected)
        if diff.any():
            i, j = (int(v) for v in diff.nonzero()[0])
            together = bool(_same(expected)[i, j])
            return (f"tokens {i} and {j} should be in {'the same class' if together else 'different classes'}; "
                    f"expected {len(expected.unique())} classes, got {len(g.unique())}")
        return None

    return compare


def _class_inputs() -> list[tuple[str, tuple, bool]]:
    data = hierarchy_task().population
    s1 = label_signature(data, 1, "raw").matrix.double()
    s12 = torch.cat([s1, label_signature(data, 2, "raw").matrix.double()], 1)
    g = torch.Generator().manual_seed(7)
    xor = label_signature(xor_task().population, 1, "raw").matrix.double()
    noisy = xor + 1e-8 * torch.rand(xor.shape, generator=g, dtype=torch.float64)
    rows = torch.rand(5, 6, generator=g, dtype=torch.float64)
    rows = 0.5 * rows / rows.sum(1, keepdim=True)
    rows[:, :2] = torch.tensor([0.2, 0.3], dtype=torch.float64) + 0.1 * torch.arange(5, dtype=torch.float64)[:, None]
    rows = rows / rows.sum(1, keepdim=True)
    rows[1] = rows[0]
    rows[1, :2] += torch.tensor([0.001, -0.001], dtype=torch.float64)  # close, but a different row
    picks = torch.randint(0, 5, (20,), generator=g)
    # rows 2e-10 apart on either side of a grid line (0.25 + 0.5e-6 for rounding, 0.25 for flooring), and rows
    # 2e-4 apart that a grid 1000 times too coarse merges
    grid = torch.tensor([[0.25 + 0.5e-6 - 1e-10, 0.3, 0.45], [0.4, 0.25 - 1e-10, 0.35], [0.25 + 0.5e-6 + 1e-10, 0.3, 0.45],
                         [0.4, 0.25 + 1e-10, 0.35], [0.4, 0.2502, 0.35], [0.1, 0.1, 0.8], [0.1002, 0.1, 0.8]], dtype=torch.float64)
    return [
        ("hierarchy, order 1", (s1,), False),
        ("hierarchy, orders 1 and 2", (s12,), True),
        ("xor task with 1e-8 float noise", (noisy,), True),
        ("near-duplicate probability rows", (rows[picks],), True),
        ("rows 2e-10 apart on either side of a grid line, rows 2e-4 apart", (grid[[0, 1, 5, 2, 4, 3, 6, 0]],), True),
        ("rows 3e-6 apart near 0.5 (two classes)", (torch.tensor([[0.5, 0.2, 0.3], [0.500003, 0.2, 0.299997],
                                                                  [0.1, 0.1, 0.8]], dtype=torch.float64),), True),
    ]


def runs_of_equal_rows(S: Tensor, tol: float = 1e-6) -> Tensor:
    """Class ids that only look at neighbouring rows: a new id whenever a row differs from the one before."""
    new = (S[1:].double() - S[:-1].double()).abs().amax(1) > tol
    return torch.cat([torch.zeros(1, dtype=torch.long), new.long()]).cumsum(0)


def check_13_signature_classes(fn: Callable[[Tensor], Tensor]) -> None:
    """fn(S [V, m]) -> [V] class ids: tokens share a class iff their rows agree within 1e-6."""
    cases = [Case(label, args, classes_of(*args), hidden) for label, args, hidden in _class_inputs()]

    def grouped_by(key: Callable[[Tensor], Tensor]) -> Callable:
        def matches(g, e, c) -> bool:
            got = as_tensor(g)
            ref = torch.unique(key(c.args[0]), dim=0, return_inverse=True)[1]
            return got is not None and got.shape == e.shape and bool((_same(got) == _same(ref)).all()) \
                and not bool((_same(got) == _same(e)).all())

        return matches

    def on_a_grid(g, e, c) -> bool:
        grids = [lambda S, k=k: S.round(decimals=k) for k in range(3, 10)]
        grids += [lambda S, w=w, f=f: f(S / w) for w in (1e-6, 2e-6, 1e-5, 1e-4, 1e-3) for f in (torch.round, torch.floor)]
        return any(grouped_by(key)(g, e, c) for key in grids)

    def relative_tolerance(g, e, c) -> bool:  # torch.isclose's default rtol 1e-5 on top of atol 1e-6
        S = c.args[0].double()
        close = ((S[:, None] - S[None]).abs() <= 1e-6 + 1e-5 * S[None].abs()).all(-1)
        got = as_tensor(g)
        return got is not None and got.shape == e.shape and bool((_same(got) == close).all()) \
            and not bool((_same(got) == _same(e)).all())

    diagnoses = [
        Diagnosis(relative_tolerance, "a relative tolerance (torch.isclose's default rtol 1e-5) merges rows 3e-6 apart: "
                                      "'agree within 1e-6' is an absolute tolerance alone"),
        Diagnosis(grouped_by(lambda S: S), "rows that differ only by float noise (1e-8) belong together: compare with a tolerance, not exact equality"),
        Diagnosis(on_a_grid, "rounding to a grid is not 'agree within 1e-6': rows 1e-10 apart can fall on either side of a "
                             "grid line, and a coarse grid merges rows that differ; compare the rows pairwise"),
        Diagnosis(lambda g, e, c: as_tensor(g) is not None and as_tensor(g).shape == e.shape and bool(
                  (_same(as_tensor(g)) == _same(runs_of_equal_rows(c.args[0]))).all()),
                  "you compared each row only with the row just before it: equal rows need not be neighbours; "
                  "compare every pair of rows"),
        Diagnosis(grouped_by(lambda S: S.round(decimals=2)), "rounding to 2 decimals merges rows that really differ: compare within a small tolerance (1e-6)"),
        Diagnosis(grouped_by(lambda S: S.sum(1, keepdim=True).round(decimals=6)), "equal row sums do not make equal rows (probability rows all sum to the same): compare every column"),
        Diagnosis(grouped_by(lambda S: S.argmax(1, keepdim=True)), "the most likely label is not the whole signature: compare every column"),
    ]  # fmt: skip
    run_check("check_13_signature_classes", fn, cases, same_partition(), diagnoses)

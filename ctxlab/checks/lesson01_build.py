"""The build-it checks of lesson 01: every order's incremental term, their orthogonality, and what each rung
of the entropy ladder is made of.

The learner evaluates the inclusion-exclusion term Delta_S of any position set at every row, takes the inner
products of all of them under the data (the Gram matrix of the orders), and splits each rung of the ladder
into its entropy drop, its squared signal and the squared sizes of the increments inside it. Each answer is
first held to the lesson's facts (on independent positions the orders are orthogonal and the squared sizes
add up to the signal; the entropy drop always lies between half the squared signal, Pinsker, and the squared
signal over the smallest P(y), the chi-square bound), then compared with the library on data the check builds.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

import torch
from torch import Tensor

from ctxlab.checks.core import HARD_LABELS_HINT, Case, Diagnosis, all_close, as_tensor, hard_labels, reweighted, run_check
from ctxlab.dataset import Dataset
from ctxlab.signatures import conditional_entropy, entropy_ladder, interaction, joint
from ctxlab.tasks import hierarchy_task, with_token_frequencies, xor_task, zipf

TOL = 1e-5  # absolute, on every entry the three checks compare (float32 counting stays within 2e-6)


def nonempty_subsets(seq_len: int) -> list[tuple[int, ...]]:
    """The position sets of the Gram matrix, by size, then as ``itertools.combinations`` lists them."""
    return [S for k in range(1, seq_len + 1) for S in itertools.combinations(range(seq_len), k)]


def increment_on_rows_reference(data: Dataset, positions: tuple[int, ...]) -> Tensor:
    """Delta_S = sum over T subset of S of (-1)^{|S|-|T|} P(y | x_T) at every row [N, C] (float64);
    P(y) for the empty set, 0 at rows whose context x_S carries no mass."""
    S = tuple(positions)
    table = interaction(data, S)
    return table[tuple(data.x[:, q] for q in S)] if S else table.expand(data.n, -1)


def order_gram_reference(data: Dataset) -> Tensor:
    """<Delta_S, Delta_T> = sum_n w_n sum_y Delta_S Delta_T over the non-empty position sets: [M, M]."""
    terms = torch.stack([increment_on_rows_reference(data, S) for S in nonempty_subsets(data.seq_len)])
    return torch.einsum("anc,bnc,n->ab", terms, terms, data.weights.double())


def squared_signal(data: Dataset, positions: tuple[int, ...], row_weights: Tensor | None = None) -> float:
    """||P(y | x_S) - P(y)||^2 under the data (or summed with other ``row_weights``): the drop of the best
    squared-error loss that the positions S allow."""
    S, table = tuple(positions), joint(data, tuple(positions))
    cond = table / table.sum(-1, keepdim=True).clamp_min(1e-300)
    centred = (cond[tuple(data.x[:, q] for q in S)] if S else cond.expand(data.n, -1)) - joint(data, ())
    weights = data.weights if row_weights is None else row_weights
    return float(torch.einsum("nc,nc,n->", centred, centred, weights.double()))


def ladder_budget_reference(data: Dataset, rungs: list[tuple[int, ...]]) -> Tensor:
    """Per position set S: (H(Y) - H(Y | X_S), squared signal, sum of <Delta_T, Delta_T> over non-empty T in S)."""
    sizes = torch.diag(order_gram_reference(data))
    subsets = nonempty_subsets(data.seq_len)
    rows = []
    for S in rungs:
        pieces = sum(float(sizes[a]) for a, T in enumerate(subsets) if set(T) <= set(S))
        rows.append([conditional_entropy(data, ()) - conditional_entropy(data, tuple(S)), squared_signal(data, S), pieces])
    return torch.tensor(rows, dtype=torch.float64).reshape(len(rungs), 3)


# --- the data the checks use ----------------------------------------------------------------------------


def product_task(vocab: int, seq_len: int, n_labels: int, seed: int) -> Dataset:
    """Every sequence over ``vocab`` shared tokens, positions independent with random token frequencies,
    and a random label distribution per sequence: every position set carries an increment of its own."""
    g = torch.Generator().manual_seed(seed)
    x = torch.tensor(list(itertools.product(range(vocab), repeat=seq_len)), dtype=torch.long)
    freq = torch.rand(seq_len, vocab, generator=g, dtype=torch.float64) + 0.3
    freq = freq / freq.sum(1, keepdim=True)
    weights = freq[torch.arange(seq_len), x].prod(1)
    y = torch.softmax(1.5 * torch.randn(x.shape[0], n_labels, generator=g, dtype=torch.float64), dim=1)
    return Dataset(x, y, vocab, n_labels, weights / weights.sum())


def with_start_token(data: Dataset) -> Dataset:
    """The same rows behind a position 0 that always holds one new token (a start-of-sequence mark)."""
    start = torch.full((data.n, 1), data.vocab_size, dtype=torch.long)
    return Dataset(torch.cat([start, data.x], 1), data.y, data.vocab_size + 1, data.n_labels, data.weights)


def coupled_hierarchy() -> Dataset:
    """The lesson's coupled data: the hierarchy rows whose first anchor shares the key's attribute."""
    task = hierarchy_task()
    data, attr = task.population, task.info["attribute"]
    keep = attr[data.x[:, 0]] == attr[data.x[:, 1]]
    return Dataset(data.x[keep], data.y[keep], data.vocab_size, data.n_labels, data.weights[keep] / data.weights[keep].sum())


@cache
def check_data() -> tuple[tuple[str, Dataset, bool], ...]:
    """(label, data, positions independent) of every dataset the three checks use; the first one is shown."""
    h, b6 = hierarchy_task().population, hierarchy_task(6, 2, (0.5, 0.2, 0.3)).population
    return (
        ("hierarchy task, exact population", h, True),
        ("xor task, exact population", xor_task().population, True),
        ("pure xor, V 8, four positions", xor_task(vocab=8, groups=1, seq_len=4).population, True),
        ("hierarchy, block 6, two values, mix (0.5, 0.2, 0.3), float64", Dataset(b6.x, b6.y.double(), b6.vocab_size, b6.n_labels, b6.weights.double()), True),
        ("hierarchy, block 4, four values, mix (0.2, 0.5, 0.3)", hierarchy_task(4, 4, (0.2, 0.5, 0.3)).population, True),
        ("hierarchy with four orders, block 3", hierarchy_task(3, 3, (0.4, 0.3, 0.2, 0.1)).population, True),
        ("random label table, V 4, three positions, skewed frequencies", product_task(4, 3, 3, seed=1), True),
        ("random label table, V 3, five positions, two labels", product_task(3, 5, 2, seed=2), True),
        ("hierarchy (block 3) behind a position that always holds one token", with_start_token(hierarchy_task(3).population), True),
        ("hierarchy, Zipf keys (three keys never occur: rows of weight 0)", with_token_frequencies(h, 0, zipf(6, 27)), True),
        ("hierarchy with random row weights (positions no longer independent)", reweighted(h, seed=3), False),
        ("the lesson's coupled data (anchor 1 copies the key's attribute)", coupled_hierarchy(), False),
        ("hierarchy, 400 samples, integer labels", hierarchy_task().sample(400, seed=1), False),
    )  # fmt: skip


# --- what the typical mistakes compute --------------------------------------------------------------


def _conditional_rows(data: Dataset, T: tuple[int, ...], mass: Tensor) -> tuple[Tensor, Tensor]:
    """P(y | x_T) at every row [N, C] from per-row label masses [N, C], and whether x_T carries mass [N, 1]."""
    key = torch.unique(data.x[:, list(T)], dim=0, return_inverse=True)[1] if T else torch.zeros(data.n, dtype=torch.long)
    table = torch.zeros(int(key.max()) + 1, mass.shape[1], dtype=torch.float64).index_add_(0, key, mass)
    total = table.sum(1, keepdim=True)
    return (table / total.clamp_min(1e-300))[key], (total > 0)[key]


def increment_variant(data: Dataset, positions: tuple[int, ...], *, sign: Callable[[int, int], int] | None = None,
                      keep: Callable[[int, int], bool] | None = None, weighted: bool = True, masked: bool = True,
                      empty_is_zero: bool = False) -> Tensor:
    """Delta_S with one ingredient changed: ``sign(|S|, |T|)`` and which subsets enter (``keep(|S|, |T|)``),
    unweighted rows, no mask at rows without mass, the empty set's term taken as 0."""
    S = tuple(positions)
    if empty_is_zero and not S:
        return torch.zeros(data.n, data.n_labels, dtype=torch.float64)
    w = data.weights.double() if weighted else torch.full((data.n,), 1.0 / data.n, dtype=torch.float64)
    mass = w[:, None] * data.targets().double()
    sign = sign or (lambda k, r: (-1) ** (k - r))
    keep = keep or (lambda k, r: True)
    total = torch.zeros(data.n, data.n_labels, dtype=torch.float64)
    for r in range(len(S) + 1):
        for T in itertools.combinations(S, r):
            if keep(len(S), r):
                total = total + sign(len(S), r) * _conditional_rows(data, T, mass)[0]
    return total * _conditional_rows(data, S, mass)[1] if masked else total


def _increment_cases() -> list[Case]:
    sets = {0: [(0,), (0, 1), (0, 1, 2), ()], 1: [(1, 0), (0, 1, 2)], 2: [(0, 1), (3, 1, 0), (0, 1, 2, 3)],
            3: [(2, 0), (0, 1, 2)], 4: [(1,), (0, 1, 2)], 5: [(0, 1, 2, 3), (3, 1)], 6: [(2,), (1, 2), (2, 0, 1)],
            7: [(0, 1, 2, 3, 4), (4, 2), (0, 2, 3, 4)], 8: [(0, 1), (1, 2, 3), (0, 1, 2, 3)], 9: [(0,), (1, 2), (2, 0, 1)],
            10: [(0, 1, 2)], 11: [(1, 2), (0, 1, 2)], 12: [(0, 1, 2), ()]}
    data = check_data()
    return [Case(f"{data[i][0]}, positions {S}", (data[i][1], S), increment_on_rows_reference(data[i][1], S), hidden=i > 0)
            for i, many in sets.items() for S in many]


@dataclass(frozen=True)
class Reference:
    """The library's answer to a case, whether its positions are independent, the sets its rows stand for, min P(y) > 0."""

    value: Tensor
    independent: bool
    names: tuple[tuple[int, ...], ...]
    p_min: float = 1.0


def _matches(variant: Callable[[Case], Tensor]) -> Callable[[Any, Any, Case], bool]:
    """A diagnosis predicate: the answer is what ``variant`` computes, and that is not the library's answer."""

    def matches(got: Any, ref: Reference | Tensor, case: Case) -> bool:
        wrong, right = variant(case), ref.value if isinstance(ref, Reference) else ref
        return not all_close(wrong, right, atol=TOL) and all_close(got, wrong, atol=TOL)

    return matches


def _changed(**change) -> Callable[[Case], Tensor]:
    return lambda case: increment_variant(*case.args, **change)


def _nan_where_zero(got: Any, expected: Tensor, case: Case) -> bool:
    value = as_tensor(got)
    return value is not None and bool(value.isnan().any()) and all_close(value.double().nan_to_num(0.0), expected)


def _shape_problem(value: Tensor | None, expected: Tensor, what: str) -> str | None:
    if value is None or tuple(value.shape) != tuple(expected.shape):
        return f"expected a tensor {what} = {tuple(expected.shape)}, got {None if value is None else tuple(value.shape)}"
    return None


def _compare_rows(got: Any, expected: Tensor) -> str | None:
    value = as_tensor(got)
    if problem := _shape_problem(value, expected, "[N, C]"):
        return problem
    diff = (value.double() - expected).abs().nan_to_num(float("inf"))
    if float(diff.max()) > TOL:
        n, y = (int(i) for i in torch.unravel_index(diff.argmax(), diff.shape))
        return (f"row {n}, label {y}: expected {float(expected[n, y]):.6f}, got {float(value[n, y]):.6f} "
                f"(largest difference {float(diff.max()):.3g}, tolerance {TOL:g})")
    return None


def check_01_increment_on_rows(fn: Callable[[Dataset, tuple[int, ...]], Tensor]) -> None:
    """fn(data, positions) -> [N, C]: the inclusion-exclusion term of the positions at every row."""
    diagnoses = [
        Diagnosis(_matches(_changed(sign=lambda k, r: 1)), "every subset needs its sign: (-1)^(|S| - |T|), + for S itself, then alternating as the subsets shrink"),
        Diagnosis(_matches(_changed(sign=lambda k, r: (-1) ** r)), "sign of the whole term: S itself enters with +, so a subset T gets (-1)^(|S| - |T|), not (-1)^|T|"),
        Diagnosis(_matches(_changed(keep=lambda k, r: r in (0, 1, k))), "that generalises the pair's formula (S, the single tokens, P(y)) to every order: inclusion-exclusion runs over ALL subsets of S, the pairs of a triple included"),
        Diagnosis(_matches(_changed(keep=lambda k, r: r >= k - 1)), "you subtracted only the subsets one smaller than S: inclusion-exclusion runs over all 2^|S| subsets, down to the empty one"),
        Diagnosis(_matches(lambda c: raw_term(*c.args)), "P(y | x_S) - P(y) is the whole signal of x_S, lower orders included: the increment also takes away what every smaller subset already says"),
        Diagnosis(_matches(_changed(empty_is_zero=True)), "the empty set's term is P(y) itself (the one subset T of the empty set is empty), not 0"),
        Diagnosis(_matches(_changed(weighted=False)), "you ignored data.weights: each row counts with its weight in every conditional"),
        Diagnosis(_matches(lambda c: increment_on_rows_reference(hard_labels(c.args[0]), c.args[1])), HARD_LABELS_HINT),
        Diagnosis(_matches(_changed(masked=False)), "at a row whose context x_S carries no mass (weight 0) the term is 0: the lower-order terms are defined there, P(y | x_S) is not"),
        Diagnosis(_nan_where_zero, "NaN at rows whose context x_S carries no mass (0 / 0): the term is 0 there"),
        Diagnosis(_matches(lambda c: increment_on_rows_reference(*c.args) * (c.args[0].weights > 0)[:, None]), "a row of weight 0 whose tokens at S do occur in other rows gets the term of that context: zero only the rows whose context x_S carries no mass"),
        Diagnosis(lambda g, e, c: all_close(g, e[0]), "the empty set's term P(y) is one row per data row: return it as [N, C], the same distribution on every row"),
    ]  # fmt: skip
    run_check("check_01_increment_on_rows", fn, _increment_cases(), _compare_rows, diagnoses)


# --- the Gram matrix of the orders, and the ladder's budget ---------------------------------------------


def _compare_gram(got: Any, ref: Reference) -> str | None:
    """The lesson's fact first (orthogonal orders on independent positions, overlapping ones otherwise),
    then the library's matrix entry by entry."""
    value = as_tensor(got)
    if problem := _shape_problem(value, ref.value, "[M, M]"):
        return problem
    value, names = value.double().nan_to_num(float("inf")), ref.names
    off = (value - torch.diag(torch.diag(value))).abs()
    a, b = (int(i) for i in torch.unravel_index(off.argmax(), off.shape))
    if ref.independent and float(off.max()) > TOL:
        return (f"the positions are independent here, so the increments of different sets are orthogonal, but your "
                f"<Delta_{names[a]}, Delta_{names[b]}> = {float(value[a, b]):.3g} (tolerance {TOL:g})")
    if not ref.independent and float(off.max()) <= TOL:
        return "the positions are not independent here and the increments overlap, but all your off-diagonal entries are 0"
    diff = (value - ref.value).abs()
    a, b = (int(i) for i in torch.unravel_index(diff.argmax(), diff.shape))
    if float(diff[a, b]) > TOL:
        return (f"<Delta_{names[a]}, Delta_{names[b]}>: expected {float(ref.value[a, b]):.6f}, got {float(value[a, b]):.6f} "
                f"(tolerance {TOL:g})")
    return None


def _gram_of(terms: Tensor, weights: Tensor) -> Tensor:
    return torch.einsum("anc,bnc,n->ab", terms, terms, weights.double())


def raw_term(data: Dataset, positions: tuple[int, ...]) -> Tensor:
    """P(y | x_S) - P(y) at every row [N, C]: the raw (centred) term, which holds the lower orders too."""
    return increment_variant(data, positions, sign=lambda k, r: 1 if r == k else -1, keep=lambda k, r: r in (0, k))


def _gram_variant(case: Case, change: str) -> Tensor:
    """The Gram matrix as a typical mistake computes it."""
    data, ref, subsets = case.args[0], case.expected.value, nonempty_subsets(case.args[0].seq_len)
    if change in ("unweighted", "unweighted everywhere"):
        terms = torch.stack([increment_on_rows_reference(data, S) if change == "unweighted"
                             else increment_variant(data, S, weighted=False) for S in subsets])
        return _gram_of(terms, torch.full((data.n,), 1.0 / data.n))
    if change == "raw":
        return _gram_of(torch.stack([raw_term(data, S) for S in subsets]), data.weights)
    if change == "mean over labels":
        return ref / data.n_labels
    if change == "cosine":
        norm = torch.diag(ref).clamp_min(1e-300).sqrt()
        return ref / norm[:, None] / norm[None, :]
    order = {"lexicographic": sorted(subsets),
             "bit mask": sorted(subsets, key=lambda S: sum(2 ** p for p in S))}[change]
    perm = [subsets.index(S) for S in order]
    return ref[perm][:, perm]


def _gram_is(change: str) -> Callable[[Any, Reference, Case], bool]:
    return _matches(lambda case: _gram_variant(case, change))


def _sized(extra: int) -> Callable[[Any, Reference, Case], bool]:
    """A diagnosis predicate: the answer is square with ``extra`` more rows than the M non-empty sets."""
    return lambda got, ref, case: getattr(as_tensor(got), "shape", None) == (ref.value.shape[0] + extra,) * 2


def check_01_order_gram(fn: Callable[[Dataset], Tensor]) -> None:
    """fn(data) -> [M, M]: <Delta_S, Delta_T> under the data over the M = 2^L - 1 non-empty position sets."""
    cases = [Case(label, (data,), Reference(order_gram_reference(data), independent, tuple(nonempty_subsets(data.seq_len))), hidden=k > 0)
             for k, (label, data, independent) in enumerate(check_data())]
    diagnoses = [
        Diagnosis(_gram_is("unweighted"), "the inner product weighs each row by data.weights (a plain mean over rows only fits uniform weights)"),
        Diagnosis(_gram_is("unweighted everywhere"), "you ignored data.weights: each row counts with its weight, in the conditionals and in the inner product"),
        Diagnosis(_gram_is("raw"), "those are the raw terms P(y | x_S) - P(y), which overlap: take the inner products of the increments Delta_S"),
        Diagnosis(_gram_is("mean over labels"), "sum over the labels, do not average them: <f, g> = sum over rows of w_n times sum over y of f g"),
        Diagnosis(_gram_is("cosine"), "those are cosine similarities: return the inner products themselves (the diagonal holds the squared sizes)"),
        Diagnosis(_gram_is("lexicographic"), "sets in the wrong order: by size first, then within a size as itertools.combinations lists them"),
        Diagnosis(_gram_is("bit mask"), "sets in the wrong order: by size first, then within a size as itertools.combinations lists them"),
        Diagnosis(_sized(1), "non-empty sets only: the empty set's term P(y) is not part of the signal P(y | x) - P(y)"),
        Diagnosis(_sized(-1), "the sets run over every size from 1 to L: the set of all L positions is one of them"),
    ]  # fmt: skip
    run_check("check_01_order_gram", fn, cases, _compare_gram, diagnoses)


def _budget_cases() -> list[Case]:
    """On every dataset: the entropy ladder's position sets (order 0 up) and a few more, some unsorted."""
    extra = {0: [(1, 2), (2, 0)], 2: [(3, 1)], 4: [(2,)], 6: [(2, 1), (0, 2)], 7: [(4, 0, 2)], 8: [(0,), (3, 1)],
             10: [(1, 2)], 11: [(1, 0)], 12: [(2, 1)]}
    cases = []
    for k, (label, data, independent) in enumerate(check_data()):
        rungs = [stair.positions for stair in entropy_ladder(data)] + extra.get(k, [])
        p_y = joint(data, ())
        ref = Reference(ladder_budget_reference(data, rungs), independent, tuple(rungs), float(p_y[p_y > 0].min()))
        cases.append(Case(label, (data, rungs), ref, hidden=k > 0))
    return cases


def _compare_budget(got: Any, ref: Reference) -> str | None:
    """The lesson's facts first (Pythagoras on independent positions; Pinsker and the chi-square bound
    always), then the library's numbers."""
    value = as_tensor(got)
    if problem := _shape_problem(value, ref.value, "[R, 3]"):
        return problem
    value = value.double().nan_to_num(float("inf"))
    for r, (drop, signal, pieces) in enumerate(value.tolist()):
        S = ref.names[r]
        if ref.independent and abs(signal - pieces) > TOL:
            return (f"set {S}: the positions are independent here, so the squared signal ({signal:.6f}) must equal the "
                    f"sum of the squared sizes of the increments inside the set ({pieces:.6f}): Pythagoras")
        if not signal / 2 - TOL <= drop <= signal / ref.p_min + TOL:
            return (f"set {S}: an entropy drop of {drop:.6f} nats cannot come with a squared signal of {signal:.6f}: the drop "
                    f"lies between half the signal (Pinsker) and the signal over the smallest P(y) = {ref.p_min:.4f}")
    diff = (value - ref.value).abs()
    r, col = (int(i) for i in torch.unravel_index(diff.argmax(), diff.shape))
    if float(diff[r, col]) > TOL:
        what = ("the entropy drop H(Y) - H(Y | X_S)", "the squared signal", "the sum of the squared sizes")[col]
        return f"set {ref.names[r]}, {what}: expected {float(ref.value[r, col]):.6f}, got {float(value[r, col]):.6f} (tolerance {TOL:g})"
    return None


def _budget_variant(case: Case, change: str) -> Tensor:
    """The three columns as a typical mistake computes them: ``change`` rewrites one column of every row."""
    data, rungs = case.args
    gram, subsets = order_gram_reference(data), nonempty_subsets(data.seq_len)
    uniform = torch.full((data.n,), 1.0 / data.n, dtype=torch.float64)

    def pieces(inside: Callable[[tuple[int, ...]], bool]) -> float:
        return sum(float(gram[a, a]) for a, T in enumerate(subsets) if inside(T))

    column, value = {
        "bits": (0, lambda S, row: row[0] / math.log(2)),
        "entropy level": (0, lambda S, row: conditional_entropy(data, tuple(S))),
        "signal from the pieces": (1, lambda S, row: row[2]),
        "every inner product": (2, lambda S, row: row[1]),  # the whole block of the sets inside S: the signal itself
        "S itself": (2, lambda S, row: pieces(lambda T: set(T) == set(S))),
        "every order up to |S|": (2, lambda S, row: pieces(lambda T: len(T) <= len(S))),
        "unweighted": (1, lambda S, row: squared_signal(data, S, row_weights=uniform)),
        "unweighted everywhere": (1, lambda S, row: squared_signal(Dataset(data.x, data.y, data.vocab_size, data.n_labels, uniform), S)),
        "mean over labels": (1, lambda S, row: row[1] / data.n_labels),
        "not centred": (1, lambda S, row: row[1] + float((joint(data, ()) ** 2).sum())),
    }[change]
    wrong = case.expected.value.clone()
    for r, S in enumerate(rungs):
        wrong[r, column] = value(S, case.expected.value[r].tolist())
    return wrong


def _budget_is(change: str) -> Callable[[Any, Reference, Case], bool]:
    return _matches(lambda case: _budget_variant(case, change))


def check_01_ladder_budget(fn: Callable[[Dataset, list[tuple[int, ...]]], Tensor]) -> None:
    """fn(data, rungs) -> [R, 3]: per position set S, the entropy drop H(Y) - H(Y | X_S) in nats, the squared
    signal ||P(y | x_S) - P(y)||^2 and the sum of <Delta_T, Delta_T> over the non-empty T inside S."""
    diagnoses = [
        Diagnosis(_budget_is("bits"), "the entropy drop is in nats (natural logarithm), as the loss uses, not in bits"),
        Diagnosis(_budget_is("entropy level"), "column 0 is the DROP H(Y) - H(Y | X_S) from the top of the ladder, not the level H(Y | X_S)"),
        Diagnosis(_budget_is("signal from the pieces"), "the squared signal is the size of P(y | x_S) - P(y) itself (every inner product inside S, the whole block): it equals the sum of the pieces only when the positions are independent"),
        Diagnosis(_budget_is("every inner product"), "column 2 adds the squared sizes <Delta_T, Delta_T> (the diagonal), not every inner product between the sets inside S"),
        Diagnosis(_budget_is("S itself"), "column 2 adds the squared sizes of ALL non-empty sets T inside S, not only of S itself: a rung holds every lower order of its positions"),
        Diagnosis(_budget_is("every order up to |S|"), "column 2 adds only the sets T inside S, not every set of size up to |S|: a rung uses its own positions"),
        Diagnosis(_budget_is("unweighted"), "you ignored data.weights in the squared signal: each row counts with its weight"),
        Diagnosis(_budget_is("unweighted everywhere"), "you ignored data.weights in the squared signal: each row counts with its weight"),
        Diagnosis(_budget_is("mean over labels"), "sum the squared differences over the labels, do not average them"),
        Diagnosis(_budget_is("not centred"), "the squared signal is the size of P(y | x_S) - P(y): subtract P(y) before squaring"),
    ]  # fmt: skip
    run_check("check_01_ladder_budget", fn, _budget_cases(), _compare_budget, diagnoses)

"""Checks for the exercises of lesson 11 (task learning): the signature-derived embedding and the
plateau race of frozen tables."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor

from ctxlab.checks.core import Case, Diagnosis, as_tensor, reweighted, run_check
from ctxlab.rungs import stair_onsets
from ctxlab.signatures import label_signature
from ctxlab.tasks import Dataset, hierarchy_task, transfer_task, with_token_frequencies, xor_task, zipf
from ctxlab.transplant import signature_embedding

# --- exercise: build the signature-derived embedding --------------------------------------------


def _table_cases() -> list[Case]:
    h = hierarchy_task().population
    specs = [
        ("hierarchy task, orders (1, 2), d = 32, norm sqrt(27)", h, 32, (1, 2), 27**0.5, False),
        ("hierarchy task, orders (1, 2, 3), d = 32, norm 3", h, 32, (1, 2, 3), 3.0, True),
        ("hierarchy task, orders (1, 2, 3), d = 4 (fewer columns than the rank)", h, 4, (1, 2, 3), 2.0, True),
        ("hierarchy task with random row weights, orders (1, 2), d = 8", reweighted(h, 3), 8, (1, 2), 1.5, True),
        ("hierarchy task with Zipf keys (tokens far from equally frequent), orders (1, 2), d = 6",
         with_token_frequencies(h, 0, zipf(9, 27, 1.0)), 6, (1, 2), 2.0, True),
        ("xor task (vocab 8, 2 groups), order 2 only, d = 5", xor_task(vocab=8, groups=2).population, 5, (2,), 1.0, True),
        ("transfer task, orders (1, 2, 3), d = 16", transfer_task().population, 16, (1, 2, 3), 4.0, True),
    ]  # fmt: skip
    return [Case(label, (data, d, orders, norm), signature_embedding(data, d, orders, norm), hidden)
            for label, data, d, orders, norm, hidden in specs]


def _gram(E: Tensor) -> Tensor:
    E = E.double()
    return E @ E.T


def table_variant(data: Dataset, d: int, orders, norm: float, *, centre: bool = True, form: str = "incremental",
             scale_by_sv: bool = True) -> Tensor:
    """The table with one step changed: what a typical mistake computes."""
    S = torch.cat([label_signature(data, k, form).matrix.double() for k in orders], dim=1)
    if centre:
        S = S - S.mean(0, keepdim=True)
    U, sv, _ = torch.linalg.svd(S, full_matrices=False)
    r = min(d, sv.numel())
    E = torch.zeros(data.vocab_size, d, dtype=torch.float64)
    E[:, :r] = U[:, :r] * sv[:r] if scale_by_sv else U[:, :r]
    return E * (norm / E.norm())


def _same_table(got: Tensor, expected: Tensor, tol: float = 1e-3) -> bool:
    """Equal up to a rotation of the d columns: the Gram matrices (token x token) agree."""
    return got.shape[0] == expected.shape[0] and bool(
        (_gram(got) - _gram(expected)).abs().max() <= tol * max(1.0, float(expected.norm()) ** 2))


def check_11_signature_table(fn: Callable[[Dataset, int, Sequence[int], float], Tensor]) -> None:
    """fn(data, d, orders, norm) -> [V, d]: centred concatenated incremental signatures, top-d PCs, rescaled.

    Any rotation of the d columns is accepted (an SVD fixes the columns only up to sign and, for
    equal singular values, rotation): the check compares the token-by-token Gram matrix E E^T.
    """

    def compare(got: Any, expected: Tensor) -> str | None:
        g = as_tensor(got)
        if g is None:
            return f"expected a tensor of shape {tuple(expected.shape)}, got {type(got).__name__}"
        if tuple(g.shape) != tuple(expected.shape):
            return f"expected shape {tuple(expected.shape)} (one row per token, d columns), got {tuple(g.shape)}"
        if not bool(torch.isfinite(g).all()):
            return "the table has non-finite entries"
        if abs(float(g.double().norm()) - float(expected.norm())) > 1e-3 * float(expected.norm()):
            return f"Frobenius norm {float(g.double().norm()):.4f}, asked for {float(expected.norm()):.4f}"
        if not _same_table(g, expected):
            diff = float((_gram(g) - _gram(expected)).abs().max())
            return f"the rows' inner products E E^T differ from the reference by up to {diff:.3g}"
        return None

    def matches(**change) -> Callable[[Any, Any, Case], bool]:
        def test(g: Any, e: Tensor, c: Case) -> bool:
            g = as_tensor(g)
            alt = table_variant(*c.args, **change)
            return not _same_table(alt, e) and _same_table(g.double() * (alt.norm() / g.double().norm()), alt)
        return test

    def unscaled(g: Any, e: Tensor, c: Case) -> bool:
        g = as_tensor(g).double()
        return abs(float(g.norm()) - c.args[3]) > 1e-3 * c.args[3] and _same_table(g * (c.args[3] / g.norm()), e)

    def missing_order(g: Any, e: Tensor, c: Case) -> bool:
        data, d, orders, norm = c.args
        g = as_tensor(g).double()
        for subset in [orders[:-1], orders[1:], (orders[-1],)]:
            alt = signature_embedding(data, d, subset, norm) if subset else None
            if alt is not None and not _same_table(alt, e) and _same_table(g * (norm / g.norm()), alt):
                return True
        return False

    def transposed(g: Any, e: Tensor, c: Case) -> bool:
        g = as_tensor(g)
        return g.ndim == 2 and g.shape[0] != e.shape[0] and g.shape[-1] == e.shape[0]

    def unpadded(g: Any, e: Tensor, c: Case) -> bool:
        g = as_tensor(g)
        return g.ndim == 2 and g.shape[0] == e.shape[0] and g.shape[1] != e.shape[1]

    diagnoses = [
        Diagnosis(transposed, "rows are tokens: return a [V, d] table (did you take the columns of the wrong SVD factor, or transpose?)"),
        Diagnosis(unpadded, "the table must be exactly d columns wide: keep the first d principal components, "
                            "and pad with zero columns when the signature has fewer than d"),
        Diagnosis(unscaled, "right directions, wrong size: rescale the table to the asked Frobenius norm"),
        Diagnosis(matches(centre=False), "centre the rows first (subtract the mean token row) before the SVD"),
        Diagnosis(matches(scale_by_sv=False), "keep the singular values: the table is U[:, :d] * S[:d] "
                                              "(the principal-component scores), not the bare singular vectors U"),
        Diagnosis(matches(form="raw"), "use the incremental signatures (form='incremental'), not the raw P(y | ...)"),
        Diagnosis(matches(form="centered"), "use the incremental signatures (form='incremental'), not the centred ones"),
        Diagnosis(missing_order, "concatenate the signatures of *every* order in `orders` (columns side by side)"),
    ]  # fmt: skip
    run_check("check_11_signature_table", fn, _table_cases(), compare, diagnoses)


# --- exercise: who is halfway down the last stair first ------------------------------------------------


def finishing_order(runs: dict[str, tuple[Tensor, Tensor]], levels: Sequence[float]) -> list[str]:
    """Conditions halfway down the last stair in every seed, fastest (smallest mean step) first (reference).

    Reaching = first recorded step below the midpoint of the last two levels (``stair_onsets``);
    a condition with a seed that never gets there is left out; [] when no condition finishes.
    """
    finished = {}
    for name, (steps, loss) in runs.items():
        last = stair_onsets(torch.as_tensor(steps), torch.as_tensor(loss), list(levels))[:, -1]
        if bool((last >= 0).all()):
            finished[name] = float(last.double().mean())
    return sorted(finished, key=finished.get)


LEVELS = (1.0986, 0.9503, 0.8419, 0.6630)


def race_curves(steps: Tensor, drops: Sequence[Sequence[float]], levels=LEVELS, floor: float = 0.015) -> Tensor:
    """Loss curves [n, T] dropping from level to level at the given steps (inf: never), settling just above H_L."""
    out = []
    for seed_drops in drops:
        loss = torch.full_like(steps, levels[0], dtype=torch.float64)
        for k, at in enumerate(seed_drops, start=1):
            target = levels[k] + (floor if k == len(levels) - 1 else 0.0)
            loss = loss - (levels[k - 1] - (levels[k] if k < len(levels) - 1 else target)) * torch.sigmoid(
                (steps.double() - at) / 15.0)
        out.append(loss)
    return torch.stack(out)


def _race_cases() -> list[Case]:
    steps = torch.arange(0, 1001, 10)
    inf = float("inf")
    specs = [
        ("three conditions, three seeds each", {
            "random": [(80, 500, inf), (85, 520, 900), (70, 480, inf)],
            "signature": [(30, 190, 540), (30, 210, 585), (30, 160, 520)],
            "learned": [(30, 220, 560), (35, 230, 600), (30, 180, 610)],
        }, False),
        ("one seed of the fastest-looking condition never finishes", {
            "a": [(30, 100, 200), (30, 100, 250), (30, 100, inf)],
            "b": [(40, 200, 400), (40, 220, 420), (40, 210, 380)],
        }, True),
        ("best single seed vs best average", {
            "lucky": [(30, 100, 150), (30, 300, 700), (30, 300, 750)],
            "steady": [(30, 200, 400), (30, 210, 420), (30, 190, 410)],
        }, True),
        ("the lowest final loss is not the first to arrive", {
            "early": [(20, 100, 300), (20, 110, 320), (20, 120, 310)],
            "late": [(20, 150, 600), (20, 160, 620), (20, 140, 610)],
        }, True),
        ("nobody finishes", {
            "x": [(30, 200, inf)] * 3,
            "y": [(500, inf, inf)] * 3,
        }, True),
        ("two conditions tie on the mean step (listed zeta before alpha)", {
            "zeta": [(30, 100, 300), (30, 100, 500)],
            "fast": [(30, 100, 200), (30, 100, 220)],
            "alpha": [(30, 100, 400), (30, 100, 400)],
        }, True),
        ("mean and median disagree", {
            "one slow seed": [(30, 100, 200), (30, 100, 210), (30, 100, 800)],
            "even": [(30, 100, 300), (30, 100, 310), (30, 100, 320)],
        }, True),
        ("two seeds against three: fewer seeds is not faster", {
            "two seeds": [(30, 100, 500), (30, 100, 520)],
            "three seeds": [(30, 100, 400), (30, 100, 410), (30, 100, 390)],
        }, True),
        ("each condition on its own step grid (every 50 steps, every 10)", {
            "coarse": (torch.arange(0, 1001, 50), [(30, 100, 400), (30, 100, 420)]),
            "fine": (steps, [(30, 100, 300), (30, 100, 310)]),
        }, True),
    ]  # fmt: skip
    cases = []
    for label, spec, hidden in specs:
        grids = {name: drops if isinstance(drops, tuple) else (steps, drops) for name, drops in spec.items()}
        runs = {name: (grid, race_curves(grid, drops)) for name, (grid, drops) in grids.items()}
        if label.startswith("the lowest"):
            runs["late"] = (steps, runs["late"][1] - 0.03 * (steps.double() / 1000))  # ends lower, arrives later
        cases.append(Case(label, (runs, LEVELS), finishing_order(runs, LEVELS), hidden))
    return cases


def _last_onsets(run: tuple[Tensor, Tensor], levels: Sequence[float]) -> Tensor:
    return stair_onsets(torch.as_tensor(run[0]), torch.as_tensor(run[1]), list(levels))[:, -1]


def _mean_steps(c: Case, names: list[str]) -> list[float]:
    runs, levels = c.args
    return [float(_last_onsets(runs[n], levels).double().mean()) for n in names]


def _race_order(c: Case, summary) -> list[str]:
    """The finishing order under another summary of the seeds' last onsets (None: the mean record index)."""
    runs, levels = c.args
    done = {}
    for name, run in runs.items():
        last = _last_onsets(run, levels)
        if bool((last >= 0).all()):
            if summary is None:
                index = torch.searchsorted(torch.as_tensor(run[0]).contiguous(), last.contiguous())
                done[name] = float(index.double().mean())
            else:
                done[name] = summary(last)
    return sorted(done, key=done.get)


def _as_names(value: Any) -> list[str] | None:
    try:
        return [str(v) for v in value] if not isinstance(value, str) else None
    except TypeError:  # not iterable
        return None


def check_11_finishing_order(fn: Callable[[dict, Sequence[float]], list[str]]) -> None:
    """fn(runs, levels) -> condition names halfway down the last stair in every seed, fastest mean first."""

    def compare(got: Any, expected: list[str]) -> str | None:
        names = _as_names(got)
        if names is None:
            return f"expected a list of condition names, got {type(got).__name__}"
        if names != expected:
            return f"expected {expected}, got {names}"
        return None

    def by_final_loss(g: Any, e: Any, c: Case) -> bool:
        runs = c.args[0]
        order = sorted(runs, key=lambda n: float(runs[n][1][:, -1].mean()))
        return _as_names(g) == [n for n in order if n in (_as_names(g) or [])] and _as_names(g) != e

    def by_best_seed(g: Any, e: Any, c: Case) -> bool:
        runs, levels = c.args
        best = {n: float(_last_onsets(runs[n], levels).double().min()) for n in e}
        return _as_names(g) == sorted(e, key=best.get) and _as_names(g) != e

    def includes_unfinished(g: Any, e: Any, c: Case) -> bool:
        runs, levels = c.args
        return any(n in runs and bool((_last_onsets(runs[n], levels) < 0).any()) for n in _as_names(g) or [])

    def ties_reordered(g: Any, e: Any, c: Case) -> bool:
        names = _as_names(g)
        return names != e and names is not None and sorted(names) == sorted(e) and _mean_steps(c, names) == _mean_steps(c, e)

    def by_median(g: Any, e: Any, c: Case) -> bool:
        runs, levels = c.args
        median = {n: float(_last_onsets(runs[n], levels).double().median()) for n in e}
        return _as_names(g) == sorted(e, key=median.get) and _as_names(g) != e

    diagnoses = [
        Diagnosis(ties_reordered, "conditions with the same mean step keep the order in which `runs` lists them "
                                  "(Python's sorted is stable; do not break ties by name or reverse them)"),
        Diagnosis(by_median, "order by the MEAN step over seeds, not the median"),
        Diagnosis(lambda g, e, c: _as_names(g) == _race_order(c, lambda last: float(last.double().sum())) and _as_names(g) != e,
                  "that sums the seeds' steps; conditions may have different numbers of seeds: take the mean"),
        Diagnosis(lambda g, e, c: _as_names(g) == _race_order(c, None) and _as_names(g) != e,
                  "that compares record indices; each condition has its own step grid: read the STEP at which each "
                  "seed gets halfway down (stair_onsets returns steps)"),
        Diagnosis(lambda g, e, c: e and _as_names(g) == [],
                  "halfway down the last stair means dropping below the *midpoint* between the last two levels "
                  "(the loss approaches H_L from above and may never go below it)"),
        Diagnosis(includes_unfinished,
                  "a condition where some seed never gets halfway down the last stair is out of the race "
                  "(stair_onsets returns -1 for 'never': do not average it as a step)"),
        Diagnosis(by_final_loss, "the question is *when* each run is halfway down the last stair, not which run ends lowest"),
        Diagnosis(by_best_seed, "average over the seeds of a condition; the single luckiest seed does not decide"),
    ]  # fmt: skip
    run_check("check_11_finishing_order", fn, _race_cases(), compare, diagnoses)


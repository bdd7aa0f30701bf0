"""Checks for the exercises of lesson 11 (why the structure matters).

Part 1, task learning: the signature-derived embedding and the plateau race. Part 2, reasoning vs
memorising: held-out-pair accuracy and the line-up score. Part 3, semantic structure: the k-NN
overlap and signature classes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor

from ctxlab.align import neighbour_overlap, signature_classes
from ctxlab.checks.core import Case, Diagnosis, all_close, as_tensor, number_close, reweighted, run_check, tensor_close
from ctxlab.composition import accuracy, held_out_accuracy, held_out_outcomes, line_up
from ctxlab.rungs import stair_onsets
from ctxlab.signatures import label_signature
from ctxlab.tasks import (
    Dataset,
    Task,
    anchor_composition_task,
    hierarchy_task,
    transfer_task,
    xor_task,
)
from ctxlab.transplant import signature_embedding

# --- exercise: build the signature-derived embedding --------------------------------------------


def _table_cases() -> list[Case]:
    h = hierarchy_task().population
    specs = [
        ("hierarchy task, orders (1, 2), d = 32, norm sqrt(27)", h, 32, (1, 2), 27**0.5, False),
        ("hierarchy task, orders (1, 2, 3), d = 32, norm 3", h, 32, (1, 2, 3), 3.0, True),
        ("hierarchy task, orders (1, 2, 3), d = 4 (fewer columns than the rank)", h, 4, (1, 2, 3), 2.0, True),
        ("hierarchy task with random row weights, orders (1, 2), d = 8", reweighted(h, 3), 8, (1, 2), 1.5, True),
        ("xor task (vocab 8, 2 groups), order 2 only, d = 5", xor_task(vocab=8, groups=2).population, 5, (2,), 1.0, True),
        ("transfer task, orders (1, 2, 3), d = 16", transfer_task().population, 16, (1, 2, 3), 4.0, True),
    ]  # fmt: skip
    return [Case(label, (data, d, orders, norm), signature_embedding(data, d, orders, norm), hidden)
            for label, data, d, orders, norm, hidden in specs]


def _gram(E: Tensor) -> Tensor:
    E = E.double()
    return E @ E.T


def _variant(data: Dataset, d: int, orders, norm: float, *, centre: bool = True, form: str = "incremental",
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
            alt = _variant(*c.args, **change)
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


# --- exercise: who reaches the last plateau first ------------------------------------------------


def finishing_order(runs: dict[str, tuple[Tensor, Tensor]], levels: Sequence[float]) -> list[str]:
    """Conditions that reach the last plateau in every seed, fastest (smallest mean step) first (reference).

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


def _curves(steps: Tensor, drops: Sequence[Sequence[float]], levels=LEVELS, floor: float = 0.015) -> Tensor:
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
    ]  # fmt: skip
    cases = []
    for label, spec, hidden in specs:
        runs = {name: (steps, _curves(steps, drops)) for name, drops in spec.items()}
        if label.startswith("the lowest"):
            runs["late"] = (steps, runs["late"][1] - 0.03 * (steps.double() / 1000))  # ends lower, arrives later
        cases.append(Case(label, (runs, LEVELS), finishing_order(runs, LEVELS), hidden))
    return cases


def _last_onsets(run: tuple[Tensor, Tensor], levels: Sequence[float]) -> Tensor:
    return stair_onsets(torch.as_tensor(run[0]), torch.as_tensor(run[1]), list(levels))[:, -1]


def _mean_steps(c: Case, names: list[str]) -> list[float]:
    runs, levels = c.args
    return [float(_last_onsets(runs[n], levels).double().mean()) for n in names]


def _as_names(value: Any) -> list[str] | None:
    try:
        return [str(v) for v in value] if not isinstance(value, str) else None
    except TypeError:  # not iterable
        return None


def check_11_finishing_order(fn: Callable[[dict, Sequence[float]], list[str]]) -> None:
    """fn(runs, levels) -> condition names that reach the last plateau in every seed, fastest mean first."""

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
        Diagnosis(lambda g, e, c: e and _as_names(g) == [],
                  "reaching a plateau means dropping below the *midpoint* between the last two levels "
                  "(the loss approaches H_L from above and may never go below it)"),
        Diagnosis(includes_unfinished,
                  "a condition where some seed never reaches the last plateau is out of the race "
                  "(stair_onsets returns -1 for 'never': do not average it as a step)"),
        Diagnosis(by_final_loss, "the question is *when* the last plateau is reached, not which run ends lowest"),
        Diagnosis(by_best_seed, "average over the seeds of a condition; the single luckiest seed does not decide"),
    ]  # fmt: skip
    run_check("check_11_finishing_order", fn, _race_cases(), compare, diagnoses)


class ScriptedModel:
    """A stand-in for a trained ensemble: fixed logits per sequence, K models, no training.

    On the held-out pair model k answers a chosen share of keys with the composed label, another
    share with the reverse pair's label, and the rest with something else; on the trained pairs it
    is right with its own probability. So accuracy on the wrong rows, or counting the copied
    answer as right, gives a different number.
    """

    def __init__(self, task: Task, composed: list[float], copied: list[float], trained: list[float], seed: int) -> None:
        g = torch.Generator().manual_seed(seed)
        self.task, K, C = task, len(composed), task.n_labels
        self.table: dict[tuple[int, ...], Tensor] = {}
        test = task.info["held_out"]
        for data, is_test in ((task.population, False), (test, True)):
            labels = torch.zeros(K, data.n, dtype=torch.long)
            for k in range(K):
                order = torch.randperm(data.n, generator=g)
                wrong = (data.y + 1 + torch.randint(0, C - 2, (data.n,), generator=g)) % C
                if is_test:
                    n_comp, n_copy = round(composed[k] * data.n), round(copied[k] * data.n)
                    wrong = torch.where(wrong == task.info["symmetric_labels"], (wrong + 1) % C, wrong)
                    wrong = torch.where(wrong == data.y, (wrong + 1) % C, wrong)
                    pick = wrong.clone()
                    pick[order[:n_comp]] = data.y[order[:n_comp]]
                    pick[order[n_comp:n_comp + n_copy]] = task.info["symmetric_labels"][order[n_comp:n_comp + n_copy]]
                else:
                    right = order[: round(trained[k] * data.n)]
                    pick = wrong.clone()
                    pick[right] = data.y[right]
                labels[k] = pick
            logits = torch.randn(K, data.n, C, generator=g)
            logits.scatter_(-1, labels[..., None], 10.0)
            for n, row in enumerate(data.x.tolist()):
                self.table[tuple(row)] = logits[:, n]

    def __call__(self, x: Tensor) -> Tensor:
        """Logits [K, N, C] for token ids x [N, L], like an ensemble's forward."""
        return torch.stack([self.table[tuple(row)] for row in x.tolist()], dim=1)


def _held_out_cases() -> list[Case]:
    specs = [
        ("20 keys, 3 models", anchor_composition_task(), [0.5, 0.05, 0.2], [0.05, 0.1, 0.4], [1.0, 1.0, 0.9], 0, False),
        ("12 keys, held-out pair (1, 2)", anchor_composition_task(n_keys=12, held_out=(1, 2)), [0.25, 0.75],
         [0.5, 0.0], [0.5, 1.0], 1, True),
        ("30 keys, reverse offset 2, 4 models", anchor_composition_task(n_keys=30, reverse_offset=2),
         [0.1, 0.3, 0.6, 0.9], [0.3, 0.2, 0.1, 0.0], [1.0, 0.8, 1.0, 0.7], 2, True),
    ]  # fmt: skip
    cases = []
    for label, task, comp, copy, trained, seed, hidden in specs:
        model = ScriptedModel(task, comp, copy, trained, seed)
        expected = held_out_accuracy(model(task.info["held_out"].x), task)
        cases.append(Case(label, (model, task), expected, hidden))
    return cases


def check_11_held_out_accuracy(fn: Callable[[Callable, Task], Tensor]) -> None:
    """fn(model, task) -> [K]: per model, the share of held-out keys answered with the composed label."""

    def on_trained(g, e, c: Case) -> bool:
        model, task = c.args
        return all_close(g, accuracy(model(task.population.x), task.population))

    def counts_copy(g, e, c: Case) -> bool:
        model, task = c.args
        out = held_out_outcomes(model(task.info["held_out"].x), task)
        return all_close(g, out["composed"] + out["symmetric"])

    def only_copy(g, e, c: Case) -> bool:
        model, task = c.args
        return all_close(g, held_out_outcomes(model(task.info["held_out"].x), task)["symmetric"])

    diagnoses = [
        Diagnosis(lambda g, e, c: all_close(g, e.mean()) or all_close(g, e.mean().expand_as(e)),
                  "one number per model: average over the keys (last axis of the predictions), not over models"),
        Diagnosis(on_trained, "that is the accuracy on the training pairs: evaluate on task.info['held_out'] instead"),
        Diagnosis(counts_copy, "the reverse pair's label (task.info['symmetric_labels']) is a copy, not a composition: "
                               "count only predictions equal to task.info['held_out'].y"),
        Diagnosis(only_copy, "you compared with task.info['symmetric_labels']: the composed labels are task.info['held_out'].y"),
    ]  # fmt: skip
    run_check("check_11_held_out_accuracy", fn, _held_out_cases(), tensor_close(1e-6), diagnoses)


def _line_up_cases() -> list[Case]:
    g = torch.Generator().manual_seed(11)
    shifts = torch.tensor([5.0, 1.0, -2.0, -8.0])
    on_line = torch.randn(10, 8, generator=g)
    on_line[6:] = 0.3 + shifts[:, None] * torch.randn(8, generator=g) + 0.5 * torch.randn(4, 8, generator=g)
    keys = torch.randn(25, 6, generator=g) + torch.arange(25.0)[:, None] * torch.randn(6, generator=g) * 0.2
    specs = [
        ("4 anchors near a line", on_line, torch.arange(6, 10), shifts, False),
        ("random anchors", torch.randn(10, 8, generator=g), torch.arange(6, 10), shifts, False),
        ("20 keys on a noisy line (offset mean)", keys + 3.0, torch.arange(3, 23), torch.arange(20.0) + 7, True),
        ("5 tokens, shuffled ids, d = 3", torch.randn(12, 3, generator=g), torch.tensor([9, 2, 11, 0, 5]),
         torch.tensor([0.5, -1.0, 2.0, 3.5, 0.0]), True),
    ]  # fmt: skip
    return [Case(label, (E, t, v), float(line_up(E, t, v)), hidden) for label, E, t, v, hidden in specs]


def check_11_line_up(fn: Callable[[Tensor, Tensor, Tensor], float]) -> None:
    """fn(E [V, d], tokens [n], values [n]) -> share of the tokens' embedding variance on the value line."""

    def pc1_share(g, e, c: Case) -> bool:
        E, t, _ = c.args
        sv = torch.linalg.svdvals((E[t] - E[t].mean(0)).double())
        return all_close(g, float(sv[0] ** 2 / (sv**2).sum()), 1e-4)

    def uncentred(g, e, c: Case) -> bool:
        E, t, v = c.args
        X, vv = E[t].double(), v.double()
        return all_close(g, float((vv @ X).pow(2).sum() / (vv @ vv) / X.pow(2).sum()), 1e-4)

    def value_not_centred(g, e, c: Case) -> bool:
        E, t, v = c.args
        X, vv = (E[t] - E[t].mean(0)).double(), v.double()
        return all_close(g, float((vv @ X).pow(2).sum() / (vv @ vv) / X.pow(2).sum()), 1e-4)

    diagnoses = [
        Diagnosis(pc1_share, "that is the share of the first principal axis, which ignores the values: "
                             "project onto the direction the values pick out"),
        Diagnosis(uncentred, "centre the embeddings (over the chosen tokens) and the values before projecting"),
        Diagnosis(value_not_centred, "centre the values too: a line indexed by v and by v + 7 is the same line"),
        Diagnosis(lambda g, e, c: abs(float(g) - 1.0) < 1e-6 and abs(e - 1.0) > 1e-3,
                  "a read-out from embeddings to values fits 4 anchors perfectly in d >= 3: regress the "
                  "embeddings on the values, not the values on the embeddings"),
    ]  # fmt: skip
    run_check("check_11_line_up", fn, _line_up_cases(), number_close(1e-6), diagnoses)


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
    return out


def _neighbours(M: Tensor, k: int, how: str) -> Tensor:
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


def _shared(a: Tensor, b: Tensor) -> Tensor:
    return (a[:, :, None] == b[:, None, :]).any(-1).double().sum(1)


def check_11_knn_overlap(fn: Callable[[Tensor, Tensor, int], Tensor]) -> None:
    """fn(A [V, m], B [V, n], k) -> [V]: share of each token's k cosine neighbours shared by A and B."""
    cases = [Case(label, args, knn_overlap(*args), hidden) for label, args, hidden in _overlap_inputs()]

    def variant(rule: Callable[[Tensor, Tensor, int], Tensor]) -> Callable:
        return lambda g, e, c: all_close(g, rule(*c.args)) and not all_close(g, e)

    def with_itself(A, B, k):
        return _shared(_neighbours(A, k, "with itself"), _neighbours(B, k, "with itself")) / k

    def by_rule(how: str):
        return lambda A, B, k: _shared(_neighbours(A, k, how), _neighbours(B, k, how)) / k

    def by_position(A, B, k):
        return (_neighbours(A, k, "cosine") == _neighbours(B, k, "cosine")).double().mean(1)

    def over_V(A, B, k):
        return _shared(_neighbours(A, k, "cosine"), _neighbours(B, k, "cosine")) / A.shape[0]

    def counts(A, B, k):
        return _shared(_neighbours(A, k, "cosine"), _neighbours(B, k, "cosine"))

    def is_mean(g, e, c) -> bool:
        got = as_tensor(g)
        return got is not None and got.numel() == 1 and abs(float(got) - float(e.mean())) < 1e-6

    diagnoses = [
        Diagnosis(variant(with_itself), "a token is not its own neighbour: exclude the diagonal (set it to -inf) before taking the top k"),
        Diagnosis(variant(by_rule("euclidean")), "use cosine similarity, not Euclidean distance: rows have very different norms, and only directions should count"),
        Diagnosis(variant(by_rule("dot")), "normalise the rows first: plain dot products favour long rows, cosine similarity does not"),
        Diagnosis(variant(by_position), "the order inside the top k does not matter: count the neighbours that appear anywhere in both lists"),
        Diagnosis(variant(over_V), "divide the number of shared neighbours by k (the most there can be), not by the number of tokens"),
        Diagnosis(variant(counts), "return the share of shared neighbours (count / k), not the count"),
        Diagnosis(is_mean, "return one value per token, shape [V], not the mean over tokens"),
    ]  # fmt: skip
    run_check("check_11_knn_overlap", fn, cases, tensor_close(atol=1e-6), diagnoses)


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
    ]


def _runs_of_equal_rows(S: Tensor, tol: float = 1e-6) -> Tensor:
    """Class ids that only look at neighbouring rows: a new id whenever a row differs from the one before."""
    new = (S[1:].double() - S[:-1].double()).abs().amax(1) > tol
    return torch.cat([torch.zeros(1, dtype=torch.long), new.long()]).cumsum(0)


def check_11_signature_classes(fn: Callable[[Tensor], Tensor]) -> None:
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

    diagnoses = [
        Diagnosis(grouped_by(lambda S: S), "rows that differ only by float noise (1e-8) belong together: compare with a tolerance, not exact equality"),
        Diagnosis(on_a_grid, "rounding to a grid is not 'agree within 1e-6': rows 1e-10 apart can fall on either side of a "
                             "grid line, and a coarse grid merges rows that differ; compare the rows pairwise"),
        Diagnosis(lambda g, e, c: as_tensor(g) is not None and as_tensor(g).shape == e.shape and bool(
                  (_same(as_tensor(g)) == _same(_runs_of_equal_rows(c.args[0]))).all()),
                  "you compared each row only with the row just before it: equal rows need not be neighbours; "
                  "compare every pair of rows"),
        Diagnosis(grouped_by(lambda S: S.round(decimals=2)), "rounding to 2 decimals merges rows that really differ: compare within a small tolerance (1e-6)"),
        Diagnosis(grouped_by(lambda S: S.sum(1, keepdim=True).round(decimals=6)), "equal row sums do not make equal rows (probability rows all sum to the same): compare every column"),
        Diagnosis(grouped_by(lambda S: S.argmax(1, keepdim=True)), "the most likely label is not the whole signature: compare every column"),
    ]  # fmt: skip
    run_check("check_11_signature_classes", fn, cases, same_partition(), diagnoses)

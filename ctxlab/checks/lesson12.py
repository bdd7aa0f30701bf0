"""Checks for the exercises of lesson 12 (composition): accuracy on the held-out anchor pair and the
line-up score."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from ctxlab.checks.core import Case, Diagnosis, all_close, number_close, run_check, tensor_close
from ctxlab.composition import accuracy, held_out_accuracy, held_out_outcomes, line_up
from ctxlab.tasks import Task, anchor_composition_task

# --- exercise: accuracy on the held-out pair -------------------------------------------------------


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


def check_12_held_out_accuracy(fn: Callable[[Callable, Task], Tensor]) -> None:
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
    run_check("check_12_held_out_accuracy", fn, _held_out_cases(), tensor_close(1e-6), diagnoses)


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


def check_12_line_up(fn: Callable[[Tensor, Tensor, Tensor], float]) -> None:
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
    run_check("check_12_line_up", fn, _line_up_cases(), number_close(1e-6), diagnoses)


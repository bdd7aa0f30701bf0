"""Lesson 12 (composition): reference answers and typical mistakes for each check."""


from __future__ import annotations

import torch

from contracts import Contract, train_once
from ctxlab import checks
from ctxlab.composition import accuracy, held_out_accuracy, held_out_outcomes, line_up
from ctxlab.models import make_model


def on_training_pairs(model, task):
    return accuracy(model(task.population.x), task.population)


def argmax_wrong_axis(model, task):
    test = task.info["held_out"]
    return (model(test.x).argmax(1) == test.y).float().mean(-1)


def counts_copied_answer(model, task):
    out = held_out_outcomes(model(task.info["held_out"].x), task)
    return out["composed"] + out["symmetric"]


def reverse_pair_rows(model, task):
    test = task.info["held_out"]
    return (model(test.x[:, [0, 2, 1]]).argmax(-1) == test.y).float().mean(-1)


def pc1_share(E, tokens, values):
    sv = torch.linalg.svdvals((E[tokens] - E[tokens].mean(0)).double())
    return float(sv[0] ** 2 / (sv**2).sum())


def uncentred(E, tokens, values):
    X, v = E[tokens].double(), values.double()
    return float((v @ X).pow(2).sum() / (v @ v) / X.pow(2).sum())


def values_on_embeddings(E, tokens, values):
    X = torch.cat([E[tokens].double(), torch.ones(len(tokens), 1, dtype=torch.float64)], 1)
    v = values.double()
    fit = X @ torch.linalg.lstsq(X, v[:, None]).solution[:, 0]
    return float(1 - (v - fit).pow(2).sum() / (v - v.mean()).pow(2).sum())


CONTRACT = [
    Contract(
        checks.check_12_held_out_accuracy,
        reference=lambda model, task: held_out_accuracy(model(task.info["held_out"].x), task),
        wrong={
            "accuracy over the training pairs": on_training_pairs,
            "argmax over the wrong axis": argmax_wrong_axis,
            "counts the copied reverse answer as right": counts_copied_answer,
            "evaluates the reverse pair": reverse_pair_rows,
            "one number for the whole ensemble": lambda model, task: held_out_accuracy(
                model(task.info["held_out"].x), task).mean(),
        },
    ),
    Contract(
        checks.check_12_line_up,
        reference=lambda E, tokens, values: float(line_up(E, tokens, values)),
        wrong={
            "variance share of the first principal axis": pc1_share,
            "no centring": uncentred,
            "R² of values regressed on embeddings": values_on_embeddings,
        },
    ),
]


# --- exercises 3 and 4: the experiment over training, and its reading ---------------------------------------------


def timeline(task, gammas, seeds, steps, every, lr, d=16, hidden=64, *, order="gamma", at_lr=None, copies=False,
             swapped_rows=False, table="each", anchor_values="shifts", grid="loop", swap_line_ups=False):
    """The experiment as a learner writes it, one mistake switched on."""
    pairs = [(g, s) for g in gammas for s in seeds] if order == "gamma" else [(g, s) for s in seeds for g in gammas]
    if order == "zip":
        pairs = list(zip(gammas, seeds))
    model = make_model("mlp", task, gamma=[g for g, _ in pairs], seed=[s for _, s in pairs], d=d, hidden=hidden)
    data, test = task.population, task.info["held_out"]
    rows = test.x[:, [0, 2, 1]] if swapped_rows else test.x

    def composed(m):
        pred = m(rows).argmax(-1)
        hit = pred == test.y
        return (hit | (pred == task.info["symmetric_labels"]) if copies else hit).float().mean(-1)

    probes = {"train_acc": lambda m: (m(data.x).argmax(-1) == data.y).float().mean(-1), f"composed{copies}{swapped_rows}": composed}
    record = {"record_every": every} if grid == "loop" else {"record_steps": list(range(0, steps + 1, every))}
    run = train_once(model, data, steps, lr=lr if at_lr is None else at_lr, probes=probes, progress=False, **record)
    E = run.embeddings
    pick = {"each": E, "final": E[:, -1:].expand_as(E)}[table]

    def curve(tokens, values):
        return torch.stack([torch.stack([line_up(pick[k, t], tokens, values) for t in range(E.shape[1])])
                            for k in range(E.shape[0])])

    keys, anchors = task.role_tokens("key"), task.role_tokens("anchor")
    values = task.info["values"]
    anchor_numbers = values[anchors] if anchor_values == "shifts" else anchors.double()
    key_curve, anchor_curve = curve(keys, values[keys]), curve(anchors, anchor_numbers)
    if swap_line_ups:
        key_curve, anchor_curve = anchor_curve, key_curve
    steps_out = run.steps if grid != "positions" else torch.arange(len(run.steps))
    return {"steps": steps_out, "train_acc": run.extras["train_acc"], "composed": run.extras[f"composed{copies}{swapped_rows}"],
            "key_line_up": key_curve, "anchor_line_up": anchor_curve}


def report(tl, level, *, strict=False, for_good=False, positions=False, never=-1, fit_level=1.0, final="last",
           peak_of="key_line_up", ties="first"):
    """The reading as a learner writes it, one mistake switched on."""
    steps = torch.as_tensor(tl["steps"])

    def first(curve, threshold):
        met = curve > threshold if strict else curve >= threshold
        if for_good:
            met = met.flip(-1).int().cumprod(-1).flip(-1).bool()
        where = met.float().argmax(-1)
        found = where if positions else steps[where]
        return torch.where(met.any(-1), found, torch.tensor(int(steps[-1]) if never == "last" else never))

    line = tl[peak_of]
    best = line.argmax(-1) if ties == "first" else line.shape[-1] - 1 - line.flip(-1).argmax(-1)
    return {"fit": first(tl["train_acc"], level if fit_level == "level" else fit_level),
            "composed": first(tl["composed"], level),
            "final": tl["composed"][:, -1] if final == "last" else tl["composed"].max(-1).values,
            "peak": line[torch.arange(len(best)), best], "peak_step": best if positions else steps[best]}


CONTRACT += [
    Contract(
        checks.check_12_composition_timeline,
        reference=timeline,
        wrong={
            "γ and seeds zipped, not crossed": lambda *a: timeline(*a, order="zip"),
            "models seed-major": lambda *a: timeline(*a, order="seed"),
            "trained at learning rate 1": lambda *a: timeline(*a, at_lr=1.0),
            "counts the copied reverse answer": lambda *a: timeline(*a, copies=True),
            "held-out rows with the anchors swapped": lambda *a: timeline(*a, swapped_rows=True),
            "line-ups of the final table at every record": lambda *a: timeline(*a, table="final"),
            "anchors against their token ids": lambda *a: timeline(*a, anchor_values="ids"),
            "key and anchor line-ups swapped": lambda *a: timeline(*a, swap_line_ups=True),
            "last step not recorded": lambda *a: timeline(*a, grid="range"),
            "record positions for steps": lambda *a: timeline(*a, grid="positions"),
        },
        hints={
            "γ and seeds zipped, not crossed": "every γ with every seed", "models seed-major": "γ-major",
            "trained at learning rate 1": "learning rate you are given", "counts the copied reverse answer": "copy",
            "held-out rows with the anchors swapped": "reverse pair",
            "line-ups of the final table at every record": "not the final one",
            "anchors against their token ids": "token ids", "key and anchor line-ups swapped": "swapped",
            "last step not recorded": "last step", "record positions for steps": "positions",
        },
    ),
    Contract(
        checks.check_12_composition_report,
        reference=report,
        wrong={
            "strictly above the level": lambda t, lvl: report(t, lvl, strict=True),
            "the step from which it stays": lambda t, lvl: report(t, lvl, for_good=True),
            "record positions for steps": lambda t, lvl: report(t, lvl, positions=True),
            "never reached as 0": lambda t, lvl: report(t, lvl, never=0),
            "never reached as the last step": lambda t, lvl: report(t, lvl, never="last"),
            "fit read at the held-out level": lambda t, lvl: report(t, lvl, fit_level="level"),
            "final as the best share": lambda t, lvl: report(t, lvl, final="best"),
            "peak of the anchors' line-up": lambda t, lvl: report(t, lvl, peak_of="anchor_line_up"),
            "last of equal peaks": lambda t, lvl: report(t, lvl, ties="last"),
        },
        hints={
            "strictly above the level": "at or above", "the step from which it stays": "falls back",
            "record positions for steps": "positions", "never reached as 0": "not 0",
            "never reached as the last step": "not the last step", "fit read at the held-out level": "accuracy of 1",
            "final as the best share": "last record", "peak of the anchors' line-up": "key line-up",
            "last of equal peaks": "first of them",
        },
    ),
]

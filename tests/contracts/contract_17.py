"""Lesson 17: reference answers and typical mistakes for each check."""

from __future__ import annotations

import copy

import torch

from contracts import Contract
from ctxlab import checks
from ctxlab.signatures import plateau_levels
from ctxlab.train import train


def path(model, data, lr, steps, *, slope=0.5, mean=False, weights=True, row_sum=False, move=("E", "A", "B"), gelu=False, in_place=False,
         after_step=False):
    """The learner's path, written out in float32 with autograd over the whole population, one mistake switchable."""
    K, L, d = model.n_models, model.seq_len, model.d
    E = model.embedding if in_place else model.embedding.detach().clone()
    A = model.w1.reshape(K, L, d, -1)[:, 0] if in_place else model.w1.detach().reshape(K, L, d, -1)[:, 0].clone()
    B = model.w2 if in_place else model.w2.detach().clone()
    factors = {"E": E, "A": A, "B": B}
    params = [factors[n] for n in move]
    for p in params:
        p.requires_grad_(True)
    w = data.weights if weights else torch.full((data.n,), 1.0 if row_sum else 1.0 / data.n)
    out = []
    for _ in range(steps + 1 + after_step):
        u = E[:, data.x[:, 0]] @ A
        loss = -(torch.log_softmax((torch.nn.functional.gelu(u) if gelu else slope * u) @ B, -1) * data.targets()).sum(-1) @ w
        out.append(loss.detach())
        grads = torch.autograd.grad(loss.mean() if mean else loss.sum(), params)
        with torch.no_grad():
            for p, g in zip(params, grads):
                p -= lr * g
    curve = torch.stack(out, 1)
    return curve[:, 1:] if after_step else curve


def first_below(curve, mid):
    below = curve < mid
    return torch.where(below.any(1), below.float().argmax(1), torch.tensor(-1))


def onsets(model, data, lr, steps, *, rule="halfway", plus_one=False, never_last=False, swap=False, in_place=False,
           never=-1, floats=False, trained_steps=None, record_every=1):
    """The learner's forecast and measurement, one mistake switchable."""
    H0, H1 = plateau_levels(data)[:2]
    predicted_curve = path(model, data, lr, steps)
    trained_model = model if in_place else copy.deepcopy(model)
    trained_curve = train(trained_model, data, steps if trained_steps is None else trained_steps, lr=lr,
                          record_every=record_every, progress=False).loss

    def read(curve):
        if rule == "reach":
            step = first_below(curve - H1, 0.01)
        elif rule == "from init":
            step = first_below(curve, (curve[:, :1] + H1) / 2)
        else:
            step = first_below(curve, (H0 + H1) / 2)
        if plus_one:
            step = torch.where(step >= 0, step + 1, step)
        if never_last:
            step = torch.where(step >= 0, step, torch.tensor(steps))
        step = torch.where(step >= 0, step, torch.tensor(never))
        return step.double() if floats else step

    pair = (read(predicted_curve), read(trained_curve))
    return pair[::-1] if swap else pair


def forecast_after_training(model, data, lr, steps):
    trained = copy.deepcopy(model)
    measured = onsets(trained, data, lr, steps, in_place=True)[1]
    return onsets(trained, data, lr, steps)[0], measured


CONTRACT = [
    Contract(
        checks.check_17_first_stair_path,
        reference=path,
        wrong={
            "sigma'(0) = 1": lambda m, d, lr, n: path(m, d, lr, n, slope=1.0),
            "mean over the ensemble": lambda m, d, lr, n: path(m, d, lr, n, mean=True),
            "rows unweighted": lambda m, d, lr, n: path(m, d, lr, n, weights=False),
            "rows summed, unweighted": lambda m, d, lr, n: path(m, d, lr, n, weights=False, row_sum=True),
            "only E moves": lambda m, d, lr, n: path(m, d, lr, n, move=("E",)),
            "the GELU network": lambda m, d, lr, n: path(m, d, lr, n, gelu=True),
            "the model's own weights trained": lambda m, d, lr, n: path(m, d, lr, n, in_place=True),
            "loss recorded after each step": lambda m, d, lr, n: path(m, d, lr, n, after_step=True),
        },
        hints={"sigma'(0) = 1": "σ'(0) = 1/2", "mean over the ensemble": "sum the K models' losses",
               "rows unweighted": "data.weights", "rows summed, unweighted": "N times too large", "only E moves": "all three factors", "the GELU network": "GELU network itself",
               "the model's own weights trained": "changed the model's own weights", "loss recorded after each step": "at step 0"},
    ),
    Contract(
        checks.check_17_first_stair_onsets,
        reference=onsets,
        wrong={
            "reaches H1": lambda m, d, lr, n: onsets(m, d, lr, n, rule="reach"),
            "midpoint from the loss at init": lambda m, d, lr, n: onsets(m, d, lr, n, rule="from init"),
            "never read as steps + 1": lambda m, d, lr, n: onsets(m, d, lr, n, never=n + 1),
            "float steps": lambda m, d, lr, n: onsets(m, d, lr, n, floats=True),
            "trained one step short": lambda m, d, lr, n: onsets(m, d, lr, n, trained_steps=n - 1),
            "train's default recording": lambda m, d, lr, n: onsets(m, d, lr, n, record_every=None),
            "one step late": lambda m, d, lr, n: onsets(m, d, lr, n, plus_one=True),
            "never read as the last step": lambda m, d, lr, n: onsets(m, d, lr, n, never_last=True),
            "pair swapped": lambda m, d, lr, n: onsets(m, d, lr, n, swap=True),
            "the model itself trained": lambda m, d, lr, n: onsets(m, d, lr, n, in_place=True),
            "forecast from the trained weights": forecast_after_training,
        },
        hints={"midpoint from the loss at init": "not from the loss at init", "reaches H1": "reaches H1", "one step late": "not one more", "never read as the last step": "never comes halfway",
               "pair swapped": "the forecast first", "the model itself trained": "changed the model's own weights",
               "forecast from the trained weights": "read a trained model"},
    ),
]

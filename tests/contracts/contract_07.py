"""Lesson 07: reference answers and typical mistakes for each check."""

from __future__ import annotations

import copy
import math

import torch

from contracts import Contract, train_once
from ctxlab import checks
from ctxlab.checks.lesson07 import leaves_uniform
from ctxlab.theory import bag_of_context, target_attention
from ctxlab.train import cross_entropy


def summed(model, x):
    return bag_of_context(model, x) * x.shape[1]


def no_positions(model, x):
    return model.embedding.detach()[:, x].mean(2) @ model.w_v.detach()


def no_values(model, x):
    return (model.embedding.detach()[:, x] + model.position.detach()[:, None]).mean(2)


def w_v_transposed(model, x):
    h = model.embedding.detach()[:, x] + model.position.detach()[:, None]
    return h.mean(2) @ model.w_v.detach().transpose(-1, -2)


def as_index(steps, weights, L, tol=0.01):
    off = (weights.double() - 1.0 / L).abs() > tol
    first = off.int().argmax(-1)
    return torch.where(off.any(-1), first, torch.full_like(first, -1))


def one_sided(steps, weights, L, tol=0.01):
    off = (weights.double() - 1.0 / L) > tol
    first = off.int().argmax(-1)
    return torch.where(off.any(-1), steps[first], torch.full_like(first, -1))


def from_start(steps, weights, L, tol=0.01):
    w = weights.double()
    return leaves_uniform(steps, w - w[:, :1] + 1.0 / L, L, tol)


def leaves_for_good(steps, weights, L, tol=0.01):
    """The first record after which the weight stays outside the band."""
    off = (weights.double() - 1.0 / L).abs() > tol
    stays = off.flip(-1).int().cumprod(-1).flip(-1)
    first = stays.argmax(-1)
    return torch.where(stays.any(-1), steps[first], torch.full_like(first, -1))


def never_as_first_step(steps, weights, L, tol=0.01):
    """argmax of an all-False row is 0: a model that never leaves gets steps[0]."""
    off = (weights.double() - 1.0 / L).abs() > tol
    return steps[off.int().argmax(-1)]


def ignores_tol(steps, weights, L, tol=0.01):
    return leaves_uniform(steps, weights, L, 0.01)


CONTRACT = [
    Contract(
        checks.check_07_uniform_output,
        reference=bag_of_context,
        wrong={
            "sum instead of mean": summed,
            "forgot the positions": no_positions,
            "forgot W_V": no_values,
            "W_V transposed": w_v_transposed,
        },
    ),
    Contract(
        checks.check_07_leaves_uniform,
        reference=leaves_uniform,
        wrong={
            "index, not step": as_index,
            "only upward moves": one_sided,
            "distance from the first value": from_start,
            "fixed tolerance": ignores_tol,
            "the time it leaves for good": leaves_for_good,
            "never leaving encoded as steps[0]": never_as_first_step,
            "record index times the first spacing": lambda s, w, L, tol=0.01: torch.where(
                leaves_uniform(s, w, L, tol) >= 0, s[0] + ((w.double() - 1.0 / L).abs() > tol).int().argmax(-1) * (s[1] - s[0]), -1),
        },
    ),
]


# --- exercise 3: the force G on W_Q W_K^T (E3), and when it grows against when attention leaves uniform ---------


def force(model, data, *, sign=1.0, slope=0.5, per_length=True, root="d_head", transpose=False, centre=True,
          query="last", weighted=True, hard=False, with_key=True, w_v_t=False, own_prediction=False):
    """E3 as a learner writes it: -1/(L sqrt(d_head)) E[sum_j <g, (h_j - h_bar) W_V> h_L^T h_j], g = sigma'(0)(p - y) M^T, p = u."""
    E, P = model.embedding.detach().double(), model.position.detach().double()
    W_v = model.w_v.detach().double()
    M = model.w1.detach().double() @ model.w2.detach().double()  # [K, d, C]
    h = E[:, data.x] + P[:, None]  # [K, N, L, d]
    y = data.targets().double()
    if hard:
        y = torch.nn.functional.one_hot(y.argmax(-1), data.n_labels).double()
    with torch.no_grad():
        p = torch.softmax(model(data.x).double(), -1) if own_prediction else torch.full_like(y, 1.0 / data.n_labels)
    w = data.weights.double() if weighted else torch.ones(data.n, dtype=torch.float64) / data.n
    g = slope * (p - y) @ M.transpose(1, 2)  # [K, N, d]
    centred = h - h.mean(2, keepdim=True) if centre else h
    c = torch.einsum("knd,knld->knl", g, centred @ (W_v.transpose(1, 2) if w_v_t else W_v).unsqueeze(1))
    if not with_key:
        c[:, :, -1] = 0
    q = h[:, :, -1] if query == "last" else h.mean(2)
    G = -sign * torch.einsum("n,kni,knl,knlj->kij", w, q, c, h) / (h.shape[2] if per_length else 1)
    G = G / math.sqrt(model.d_head if root == "d_head" else model.d)
    return G.transpose(1, 2) if transpose else G


def exact_force(model, data):
    """-dR/dA by autograd through W_Q (dR/dW_Q = dR/dA W_K), exact instead of leading order."""
    twin = copy.deepcopy(model)
    cross_entropy(twin(data.x), data).sum().backward()
    return -twin.w_q.grad.double() @ torch.linalg.inv(twin.w_k.detach().double())


def steps_of(model, task, steps, lr, every, factor, tol, *, index=False, never=-1, swapped=False, norm="G",
             factor_as=None, tol_as=None, length_as=None, lr_as=None, increase=False):
    """Train in place with ||G|| and the key's attention as probes; (first step ||G|| >= factor ||G_0||, first step off 1/L)."""
    data = task.population
    G0 = torch.linalg.matrix_norm(force(model, data))
    probes = {"G": lambda m: torch.linalg.matrix_norm(force(m, data)), "A": lambda m: m.qk_norm(),
              "attention": target_attention(task)}
    run = train_once(model, data, steps, lr=lr if lr_as is None else lr_as, record_every=every, progress=False, probes=probes)
    measured = G0[:, None].expand_as(run.extras["G"]) if norm == "init" else run.extras[norm]
    start = measured[:, :1]
    grown = measured - (start if increase else 0) >= (factor if factor_as is None else factor_as) * start
    L = task.seq_len if length_as is None else length_as
    off = (run.extras["attention"].double() - 1.0 / L).abs() > (tol if tol_as is None else tol_as)
    pair = []
    for hit in (grown, off):
        first = hit.int().argmax(1)
        found = first if index else run.steps[first]
        pair.append(torch.where(hit.any(1), found, torch.tensor({-1: -1, 0: 0, "last": steps}[never])))
    return tuple(pair[::-1]) if swapped else tuple(pair)


CONTRACT += [
    Contract(
        checks.check_07_qk_force,
        reference=force,
        wrong={
            "the gradient dR/dA, not the force": lambda m, d: force(m, d, sign=-1.0),
            "sigma'(0) left out": lambda m, d: force(m, d, slope=1.0),
            "1/L left out": lambda m, d: force(m, d, per_length=False),
            "sqrt(d) for sqrt(d_head)": lambda m, d: force(m, d, root="d"),
            "G transposed (query and key swapped)": lambda m, d: force(m, d, transpose=True),
            "values not centred": lambda m, d: force(m, d, centre=False),
            "the mean query for h_L": lambda m, d: force(m, d, query="mean"),
            "the key's own position left out of the sum": lambda m, d: force(m, d, with_key=False),
            "W_V transposed": lambda m, d: force(m, d, w_v_t=True),
            "population weights dropped": lambda m, d: force(m, d, weighted=False),
            "one label per row (argmax)": lambda m, d: force(m, d, hard=True),
            "the model's own prediction for u": lambda m, d: force(m, d, own_prediction=True),
            "the exact force by autograd": exact_force,
        },
        hints={
            "the gradient dR/dA, not the force": "-dR/dA", "sigma'(0) left out": "sigma'(0) = 1/2",
            "1/L left out": "factor L", "sqrt(d) for sqrt(d_head)": "sqrt(d_head)",
            "G transposed (query and key swapped)": "transposed", "values not centred": "centre",
            "the mean query for h_L": "the query is h_L", "the key's own position left out of the sum": "all L positions",
            "W_V transposed": "not by its transpose", "population weights dropped": "data.weights",
            "one label per row (argmax)": "DISTRIBUTIONS", "the model's own prediction for u": "p = u",
            "the exact force by autograd": "exact",
        },
    ),
    Contract(
        checks.check_07_force_before_attention,
        reference=steps_of,
        wrong={
            "record index, not step": lambda *a: steps_of(*a, index=True),
            "never as step 0": lambda *a: steps_of(*a, never=0),
            "never as the last step": lambda *a: steps_of(*a, never="last"),
            "the pair swapped": lambda *a: steps_of(*a, swapped=True),
            "||W_Q W_K^T|| for ||G||": lambda *a: steps_of(*a, norm="A"),
            "G computed once, at init": lambda *a: steps_of(*a, norm="init"),
            "factor fixed at 100": lambda *a: steps_of(*a, factor_as=100.0),
            "waits for the increase to reach the factor": lambda *a: steps_of(*a, increase=True),
            "tol fixed at 0.02": lambda *a: steps_of(*a, tol_as=0.02),
            "1/L fixed at 1/4": lambda *a: steps_of(*a, length_as=4),
            "trained at the lesson's lr 0.08": lambda *a: steps_of(*a, lr_as=0.08),
        },
        hints={
            "record index, not step": "positions in the list of records", "never as step 0": "not 0",
            "never as the last step": "not the last step", "the pair swapped": "(force_step, attention_step)",
            "||W_Q W_K^T|| for ||G||": "A itself", "G computed once, at init": "computed at every recorded step",
            "factor fixed at 100": "factor you are given", "waits for the increase to reach the factor": "increase", "tol fixed at 0.02": "tol you are given",
            "1/L fixed at 1/4": "task.seq_len", "trained at the lesson's lr 0.08": "not the steps of the model you were given",
        },
    ),
]

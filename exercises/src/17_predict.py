# %% [markdown]
# # Exercises 17 — Predict, then train
#
# Two exercises on lesson 17 and a last cell that puts them together. You build the first piece of
# the staircase forecast yourself, the first stair from the init alone, and then train the same
# models to see whether it holds. Fill in each `# YOUR CODE HERE`, then run the check cell below
# it: it prints `PASS check_17_…` or stops with a hint. The checks also try *hidden* cases (three
# attribute values, four orders, weighted and sampled rows, other widths and learning rates), so
# write code for any input. Grade the whole notebook from a terminal:
#
# ```bash
# ctxlab grade exercises/17_predict.ipynb
# ```
#
# | # | exercise | difficulty | time |
# |---|---|---|---|
# | 1 | build it: the first stair, integrated from the init | ★★★ | 30 min |
# | 2 | build it: forecast the first onset, then train and measure it | ★★☆ | 20 min |
# | – | putting it together: the forecast against the runs | ★☆☆ | 5 min |

# %%
import copy

import torch

import ctxlab.checks
from ctxlab.models import make_model
from ctxlab.tasks import hierarchy_task
from ctxlab.theory import model_weights, plateau_levels, prefix_data
from ctxlab.train import train

task = hierarchy_task(block=8, n_values=2, mix=(0.4, 0.3, 0.3))  # lesson 17's (and lesson 03's) headline task
data = task.population
H0, H1 = plateau_levels(data)[:2]
print(f"H0 = {H0:.4f}, H1 = H(Y | x1) = {H1:.4f}: the first stair is halfway down below {(H0 + H1) / 2:.4f}")

# %% [markdown]
# ## Exercise 1 — build it: the first stair, integrated from the init (★★★, 30 min)
#
# Lesson 17's forecast starts with the first stair. At small init the anchors feel no order-1
# drive (lesson 04), so only the key moves, and the hidden layer is close to linear: GELU's
# u Φ(u) is σ'(0) u = u / 2 to first order. What is left is lesson 05's three-factor linear
# network on the key,
#
# $$z(x) = \sigma'(0)\, E[x_0]\, W_1^{(0)} W_2 ,$$
#
# where E [V, d] is the embedding table, W₁⁽⁰⁾ [d, h] the block of the first layer that position 0
# feeds and W₂ [h, C] the read-out. Its escape from the origin is a finite-time blow-up whose
# timing depends on all three factors' starting sizes, so the forecast does not use a closed form:
# it runs the path.
#
# Write `first_stair_path(model, data, lr, steps)` returning a tensor [K, steps + 1]: for each of
# the ensemble's K models, the population loss of this linear network at steps 0, 1, …, steps of
# plain full-batch gradient descent at learning rate `lr`, started from the model's own weights
# (step 0 is the loss before any update). The loss is the lesson's,
# R = Σₙ wₙ · (−Σ_y P(y | xₙ) ln softmax(z(xₙ))_y), and every step moves E, W₁⁽⁰⁾ and W₂.
#
# What you have: `model_weights(model)` returns float64 copies (E [K, V, d], W₁ [K, L, d, h],
# W₂ [K, h, C]), W₁'s second index being the position; `data.x` [N, L], `data.targets()` [N, C]
# (label distributions, one-hot rows for integer labels) and `data.weights` [N]. Use torch and
# autograd, not `ctxlab.theory`'s first-stair functions (that is what you are building). Leave the
# model as it was: the forecast comes before the training it forecasts.
#
# **Tolerance: 1e-4** on every loss value. The check draws the lesson's task with blocks of 4 tokens, and others: three
# attribute values, four orders, another mix with weighted rows, 400 sampled rows with integer
# labels, one model or several, widths 8 to 24, learning rates 0.5 to 2, and a path of no steps.
#
# <details><summary>Hint 1: the idea</summary>
#
# This is a training run of a much smaller network: three matrices per model instead of the whole
# Emb-MLP, the key's tokens as its only input, no nonlinearity, only a slope. Copy the three
# starting matrices out of the model, record the loss, take a gradient step, and repeat.
# </details>
#
# <details><summary>Hint 2: the approach</summary>
#
# Per model, the logits of every row are a chain of three products: the key token's embedding row,
# the first layer's block for position 0, the read-out, and GELU's slope at 0 in front. The loss is
# the weighted cross-entropy against the label distributions, one number per model. One backward
# pass can give every model its own gradients if the quantity you differentiate adds the models up
# (they share no weights). Record the loss before each update, so that the first value is the loss
# at init. Optional speed-up: a network that reads the key alone cannot tell apart rows with the
# same key, and `prefix_data(data, 1)` merges them exactly (weights summed, label distributions
# averaged).
# </details>
#
# <details><summary>Hint 3: the pitfalls</summary>
#
# σ'(0) of GELU is 1/2. All three factors move, each by its own gradient. A mean over the models
# instead of a sum divides every model's step by K. Rows carry weights, so the loss is not a plain
# mean over rows. Only position 0 feeds this network. Work on copies of the weights: the model
# itself must come out of your function unchanged. steps + 1 values, the first one before any
# update.
# </details>

# %%
def first_stair_path(model, data, lr: float, steps: int) -> torch.Tensor:
    """The loss [K, steps + 1] along plain GD on z = σ'(0) E[x_0] W1_0 W2, from the model's weights."""
    ### BEGIN SOLUTION
    E, W1, W2 = model_weights(model)
    factors = [t.clone().requires_grad_() for t in (E, W1[:, 0], W2)]  # copies: the model stays as it was
    keys = prefix_data(data, 1)  # one row per key: exact for a network that reads x_0 alone
    y, w = keys.targets().double(), keys.weights.double()
    losses = []
    for step in range(steps + 1):
        E_, A, B = factors
        loss = -(torch.log_softmax(0.5 * E_[:, keys.x[:, 0]] @ A @ B, -1) * y).sum(-1) @ w  # [K]
        losses.append(loss.detach())
        if step < steps:
            grads = torch.autograd.grad(loss.sum(), factors)  # the sum gives each model its own gradient
            with torch.no_grad():
                for p, g in zip(factors, grads):
                    p -= lr * g
    return torch.stack(losses, 1)
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_17_first_stair_path(first_stair_path)

# %% [markdown]
# ## Exercise 2 — build it: forecast the first onset, then train and measure it (★★☆, 20 min)
#
# Now make the forecast a number and test it. Write `first_stair_onsets(model, data, lr, steps)`
# returning a pair `(forecast, measured)` of integer tensors [K]:
#
# * `forecast`: per model, the first step at which your `first_stair_path(model, data, lr, steps)`
#   is below (H0 + H1) / 2, the step the lesson calls *halfway down* the first stair. H0 and H1
#   are the first two levels of `plateau_levels(data)`.
# * `measured`: the same step read off the real network: train a copy of the model (`copy.deepcopy`)
#   by `train(..., steps, lr=lr, record_every=1)`, whose `.loss` [K, steps + 1] holds the loss at
#   steps 0 … steps, and take the first step below the same midpoint.
#
# Either is −1 for a model that never comes halfway down within `steps`. The model you are given
# must come out unchanged. The check compares both tensors with the reference, to the step (or one
# step off where the curve passes within 1e-4 of the midpoint), on the settings of exercise 1 and
# others: weights that favour one label (so that H0 lies below the loss at init), a run of 1000 steps,
# and runs too short for some models to come halfway down, or that end on the step where one does.
#
# <details><summary>Hint 1: the idea</summary>
#
# Two curves of the same length, one from the forecast and one from training, read by one rule.
# The rule is a threshold between two levels; the answer is where each curve first goes below it.
# </details>
#
# <details><summary>Hint 2: the approach</summary>
#
# Compute the midpoint once from the data's levels. Write the reading as a small function of a
# curve [K, T]: a boolean table of the steps below the midpoint, whether any is true per model, and
# the index of the first true one. Call it on the path first, then on the loss of a trained copy.
# </details>
#
# <details><summary>Hint 3: the pitfalls</summary>
#
# *Halfway down* is not *reaching*: the midpoint of H0 and H1, not H1 itself nor a band around it,
# and not the midpoint from the loss at init (a little above H0). Steps count from 0, so the onset
# is the index itself. A model that never gets there is −1, not the last step. Forecast from the
# weights as given and train a copy; training the model itself changes what the next call sees.
# The pair is (forecast, measured), in that order.
# </details>

# %%
def first_stair_onsets(model, data, lr: float, steps: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(forecast, measured) first-stair onsets [K]: from the small-init path, then from a trained copy."""
    ### BEGIN SOLUTION
    H0, H1 = plateau_levels(data)[:2]

    def halfway(curve):
        below = curve < (H0 + H1) / 2
        return torch.where(below.any(1), below.long().argmax(1), -1)

    forecast = halfway(first_stair_path(model, data, lr, steps))
    run = train(copy.deepcopy(model), data, steps, lr=lr, record_every=1, progress=False)
    return forecast, halfway(run.loss)
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_17_first_stair_onsets(first_stair_onsets)

# %% [markdown]
# ## Putting it together — the forecast against the runs (★☆☆, 5 min)
#
# Run your `first_stair_onsets` on the lesson's task for six models, γ = 1 and 1.25 with three
# seeds each, Emb-MLP with d = 32 and 128 hidden units at lr 1, for 700 steps, and print each
# model's forecast and measured onset and the largest relative difference.

# %% tags=["exercise"]
# gammas, seeds = [1.0, 1.0, 1.0, 1.25, 1.25, 1.25], [0, 1, 2, 0, 1, 2]
# model = make_model("mlp", task, gamma=gammas, seed=seeds, d=32, hidden=128)
# forecast, measured = first_stair_onsets(model, data, 1.0, 700)
# ... print them side by side, and max |forecast - measured| / measured

# %% tags=["solution"]
gammas, seeds = [1.0, 1.0, 1.0, 1.25, 1.25, 1.25], [0, 1, 2, 0, 1, 2]
model = make_model("mlp", task, gamma=gammas, seed=seeds, d=32, hidden=128)
forecast, measured = first_stair_onsets(model, data, 1.0, 700)
for g, s, f, m in zip(gammas, seeds, forecast.tolist(), measured.tolist()):
    print(f"γ = {g:g}, seed {s}: forecast {f}, measured {m}")
gap = ((forecast - measured).abs() / measured).max()
print(f"every model halfway down within the run: {bool((measured >= 0).all())}; "
      f"every forecast within 5 % of its measurement: {bool(gap <= 0.05)}")

# %% [markdown]
# **Think.** (1) The forecast drops GELU's curvature, yet it lands within a step or two of the
# trained network here. Record the largest |u| = |E[x₀] W₁⁽⁰⁾| of a trained copy at the measured
# onset: is the hidden layer still in its linear range when the loss is halfway down? (2) Run the
# same six models on `hierarchy_task(block=9, n_values=3)`. Its first stair has a sub-level (lesson
# 17's rank-1 level): does (H0 + H1) / 2 fall above or below it, and does your forecast still hold?
# (3) Double the learning rate. By how much should the onset move if the escape were a pure
# exponential at a fixed rate, and by how much does it move?

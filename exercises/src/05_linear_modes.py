# %% [markdown]
# # Exercises 05 — Linear-network modes: which order-1 feature switches on first
#
# Five exercises on lesson 05 and a last cell that puts two of them together. Fill in each
# `# YOUR CODE HERE`, then run the check cell below it:
# it prints `PASS check_05_…` or stops with a hint. Checks also try *hidden* cases (other tasks,
# synthetic curves, real runs). Grade the whole notebook from a terminal:
#
# ```bash
# ctxlab grade exercises/05_linear_modes.ipynb
# ```
#
# | # | exercise | difficulty | time |
# |---|---|---|---|
# | 1 | the singular values that set the order | ★★☆ | 15 min |
# | 2 | the order in which modes switch on | ★★☆ | 15 min |
# | 3 | fit a growth rate | ★☆☆ | 10 min |
# | 4 | build it: predict every mode's switch-on step from the init alone | ★★★ | 25 min |
# | 5 | build it: train the model and measure the switch-on steps | ★★☆ | 20 min |
# | – | putting it together: the prediction against the measurement | ★★☆ | 10 min |

# %%
import torch

import ctxlab.checks
from ctxlab.models import make_model
from ctxlab.tasks import Dataset, modes_task
from ctxlab.theory import correlation_modes, mode_strengths, product_map
from ctxlab.train import train

task = modes_task(strengths=(0.2, 0.45, 0.3))
data = task.population
print(task.description)

# %% [markdown]
# ## Exercise 1 — the singular values that set the order (★★☆, 15 min)
#
# Write `singular_values(data)` returning all C singular values, in descending order, of the
# input–output correlation Σ_yx [C, L·V] whose column i·V + s is π_i(s) (P(y | x_i = s) − u),
# with u = 1/C. Use only torch and the fields of `data`.
#
# <details><summary>Hint 1: the idea</summary>
#
# Multiply out π_i(s)(P(y | x_i = s) − u): the conditional probability times its own marginal is a
# joint probability, so no division is needed. Each column of Σ_yx is then a joint probability
# minus a share of a marginal.
# </details>
#
# <details><summary>Hint 2: the approach</summary>
#
# For each position i, accumulate a V × C table of joint mass: every row of the population adds
# its weight times its label distribution to the row of the token it holds at position i. Centre
# each table's rows, put the positions' tables one under the other, and take singular values of
# the transpose (C × L·V).
# </details>
#
# <details><summary>Hint 3: the pitfalls</summary>
#
# The label distribution, not the argmax label; the population's weights, not a plain count; the
# centring subtracts the row's total divided by C (that is u), not the label marginal P(y). Work
# in float64.
# </details>

# %%
def singular_values(data: Dataset) -> torch.Tensor:
    """Singular values of Sigma_yx, descending: [C]."""
    ### BEGIN SOLUTION
    V, C = data.vocab_size, data.n_labels
    mass = data.weights[:, None].double() * data.targets().double()
    blocks = []
    for i in range(data.seq_len):
        table = torch.zeros(V, C, dtype=torch.float64).index_add_(0, data.x[:, i], mass)
        blocks.append(table - table.sum(1, keepdim=True) / C)
    return torch.linalg.svdvals(torch.cat(blocks, dim=0).T)
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_05_singular_values(singular_values)

# %% [markdown]
# ## Exercise 2 — the order in which modes switch on (★★☆, 15 min)
#
# Write `switch_on_order(steps, strengths, level)`: `strengths` is [T, r], the mode strengths
# a_k(t) at the recorded `steps` [T]. Return the list of mode indices sorted by the first recorded
# step at which |a_k| ≥ `level` (earliest first), with these conventions:
#
# * "first" means the first time: a mode that reaches the level and dips below it again later
#   still switched on at that first step;
# * modes that reach the level at the same recorded step keep index order (lower index first);
# * modes that never reach the level come last, in index order.
#
# Then use it on a run below and compare with the order the singular values predict.
#
# <details><summary>Hint 1: the idea</summary>
#
# Give every mode one number, the step at which it first reaches the level, and sort the modes by
# that number. A mode that never reaches it needs a number larger than any step.
# </details>
#
# <details><summary>Hint 2: the approach</summary>
#
# A boolean table "reached" per record and mode; for each mode, the first record where it is
# true, turned into a step through `steps`. Sorting must keep equal steps in index order.
# </details>
#
# <details><summary>Hint 3: the pitfalls</summary>
#
# The position of the first maximum of an all-False column is 0, the very first record: check
# whether the mode ever reached the level. Use |a_k|, and "at or above". Not the step after which
# a mode stays above for good.
# </details>

# %%
def switch_on_order(steps: torch.Tensor, strengths: torch.Tensor, level: float) -> list[int]:
    """Mode indices, earliest switch-on (first |a_k| >= level) first."""
    ### BEGIN SOLUTION
    reached = strengths.abs() >= level
    first = steps.double()[reached.float().argmax(0)]
    first = torch.where(reached.any(0), first, torch.full_like(first, float("inf")))
    return torch.argsort(first, stable=True).tolist()
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_05_switch_on_order(switch_on_order)

# %% tags=["exercise"]
# Once the check passes: train a LinearEmb on `data` and compare, e.g.
# modes = correlation_modes(data)
# run = train(make_model("linear", task, gamma=1.25, seed=0), data, 300, record_every=1, probes={"map": product_map})
# a = mode_strengths(run.extras["map"], modes)[0]
# print(switch_on_order(run.steps, a, 0.5), "vs singular values", modes.s)

# %% tags=["solution"]
modes = correlation_modes(data)
run = train(make_model("linear", task, gamma=1.25, seed=0), data, 300, record_every=1, probes={"map": product_map})
a = mode_strengths(run.extras["map"], modes)[0]
print("switch-on order:", switch_on_order(run.steps, a, 0.5), "| singular values:", [round(float(s), 4) for s in modes.s])

# %% [markdown]
# ## Exercise 3 — fit the growth rate (★☆☆, 10 min)
#
# Write `growth_rate(steps, a, start, stop)` returning the least-squares slope of ln|a(t)| against
# the step, using only the recorded steps with start ≤ step ≤ stop. For a two-factor model the
# lesson predicts 2 ln(1 + η s_k) per step while the mode is small.
#
# <details><summary>Hint 1: the idea</summary>
#
# While a mode is small it grows exponentially, so its logarithm is a straight line in the step:
# the rate is that line's slope.
# </details>
#
# <details><summary>Hint 2: the approach</summary>
#
# Keep the records inside the window (both ends included), take the natural log of |a|, and fit a
# line by least squares against the steps themselves (not the record numbers).
# </details>
#
# <details><summary>Hint 3: the pitfalls</summary>
#
# Natural log, not log10; the slope of the whole product a_k (not half of it per factor); the
# least-squares slope over every record in the window, not the slope between its two ends.
# </details>

# %%
def growth_rate(steps: torch.Tensor, a: torch.Tensor, start: float, stop: float) -> float:
    """Slope of ln|a| per step over [start, stop]."""
    ### BEGIN SOLUTION
    t = steps.double()
    inside = (t >= start) & (t <= stop)
    x = t[inside] - t[inside].mean()
    y = a.double()[inside].abs().log()
    return float(((y - y.mean()) * x).sum() / (x * x).sum())
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_05_growth_rate(growth_rate)

# %% [markdown]
# **Think.** Fit mode 1 of the run above between steps 15 and 40 and compare with
# `predicted_growth_rates(modes.s)[0]`. What goes wrong if you start the window at step 0?

# %% [markdown]
# ## Exercise 4 — build it: predict the switch-on steps from the init alone (★★★, 25 min)
#
# Lesson 05 says when each mode of a two-factor `LinearEmb` switches on, before any training. Now
# you make that prediction yourself. Write `predict_switch_on(model, data, level, lr)` returning a
# tensor [K, r]: for each of the ensemble's K models and each of the r modes of Σ_yx, the step at
# which gradient descent at learning rate `lr` brings the mode strength a_k = u_kᵀ A v_k to `level`.
#
# What you have: `correlation_modes(data)` gives Σ_yx's modes (`.u` [C, r], `.s` [r], `.v`
# [L·V, r], the column of v_k for position i and token s at row i·V + s). The model's embedding
# E is `model.embedding` [K, V, d] and its read-out `model.w` is [K, L·d, C], position-major: rows
# i·d to i·d + d − 1 are the read-out W^(i) [d, C] of position i. Use only these and torch (not
# `ctxlab.theory`'s amplitude and prediction functions: that is what you are building).
#
# The rule: a predicted step is never negative (a mode already at the level switches on at step 0).
#
# <details><summary>Hint 1: the idea</summary>
#
# Project both factors on the mode, as lesson 05 does: α_k from the read-out, β_k from the
# embedding, both d-vectors. While the mode is small, the sum α + β grows by a fixed factor per
# step and the difference α − β shrinks, so the part of a_k that grows starts at a₀ = |α + β|²/4
# and is multiplied by the same number each step. The prediction is how many such steps take a₀ to
# the level.
# </details>
#
# <details><summary>Hint 2: the approach</summary>
#
# First find where each mode lives: v_k has one block of V entries per position, and one block
# carries it (the largest norm). With that position i, take W^(i) and the block of v_k, project,
# and form a₀ per model. Then divide the log of level / a₀ by the per-step growth of the log of
# a_k, which comes from one GD step on the pair (α, β): write the step out for the linearised
# dynamics and see what each factor is multiplied by.
# </details>
#
# <details><summary>Hint 3: the pitfalls</summary>
#
# Gradient descent, not gradient flow: the per-step factor is not e^(lr·s). a_k is a product of two
# growing factors. The start is the growing amplitude, not α·β (that includes a part that decays).
# The mode's position is not always 0, and a reshape of the read-out must keep rows position-major.
# Use the learning rate you are given.
# </details>

# %%
def predict_switch_on(model, data: Dataset, level: float, lr: float) -> torch.Tensor:
    """Each mode's predicted switch-on step [K, r], from the weights at init."""
    ### BEGIN SOLUTION
    modes = correlation_modes(data)
    E = model.embedding.detach().double()  # [K, V, d]
    K, V, d = E.shape
    W = model.w.detach().double().reshape(K, data.seq_len, d, -1)  # [K, L, d, C]
    v = modes.v.reshape(data.seq_len, V, -1)  # [L, V, r]
    start = []
    for k, i in enumerate(v.norm(dim=1).argmax(0).tolist()):  # i: the position mode k lives at
        alpha = W[:, i] @ modes.u[:, k]
        beta = E.transpose(1, 2) @ v[i, :, k]
        start.append(((alpha + beta) ** 2).sum(-1) / 4)
    per_step = 2 * torch.log1p(lr * modes.s)
    return (torch.log(level / torch.stack(start, 1)) / per_step).clamp_min(0)
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_05_predict_switch_on(predict_switch_on)

# %% [markdown]
# ## Exercise 5 — build it: train and measure (★★☆, 20 min)
#
# Write `measure_switch_on(model, data, steps, level, lr, every)`: train `model` itself (in place)
# by full-batch gradient descent at learning rate `lr` for `steps` steps, recording at steps 0,
# `every`, 2·`every`, … and at the last step (as `train(..., record_every=every)` records), and
# return [K, r] integers: per model and mode, the first recorded step at which a_k ≥ `level`, or
# −1 if none. Here a_k is signed (a mode that is learned points along Σ_yx, a_k > 0), and step t
# means the model after t updates (step 0 is the model as given).
#
# <details><summary>Hint 1: the idea</summary>
#
# Watch a_k during training: record the product map A = E Wᵀ as the run goes, project it on every
# mode at every record, and read off when each mode first gets to the level.
# </details>
#
# <details><summary>Hint 2: the approach</summary>
#
# The course's training loop takes probes: a function of the model recorded at every recorded
# step (lesson 05 records `product_map` this way, and `mode_strengths` projects the records on
# the modes). From the [K, T, r] strengths, the first record per model and mode where the level is
# met, turned into a step.
# </details>
#
# <details><summary>Hint 3: the pitfalls</summary>
#
# Record before the update, as the loop does, and only at the recorded steps. Return steps, not
# positions in the list of records. A mode that never gets there is −1, not 0 and not the last
# step. Do not take |a_k| (a large init can start a mode below minus the level), and train at the
# given learning rate.
# </details>

# %%
def measure_switch_on(model, data: Dataset, steps: int, level: float, lr: float, every: int) -> torch.Tensor:
    """Train ``model`` in place and return each mode's first recorded step with a_k >= level [K, r] (-1: never)."""
    ### BEGIN SOLUTION
    run = train(model, data, steps, lr=lr, record_every=every, probes={"map": product_map}, progress=False)
    a = mode_strengths(run.extras["map"], correlation_modes(data))  # [K, T, r]
    on = a >= level
    first = run.steps[on.float().argmax(1)]
    return torch.where(on.any(1), first, torch.tensor(-1))
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_05_measure_switch_on(measure_switch_on)

# %% [markdown]
# ## Putting it together — does the prediction hold? (★★☆, 10 min)
#
# Write `predict_and_measure(model, data, steps, level, lr)` returning the pair (predicted,
# measured): your prediction from exercise 4 for the model as given, then your measurement from
# exercise 5 (recorded at every step) on the same model. The check runs it on models and tasks of
# its own (the key tokens at position 1, fillers, learning rate 0.5, γ from 1.25 to 1.75) and asks
# three things of the pair: every mode predicted to switch on well inside the run is measured
# within 20 % of its prediction (and none predicted well beyond it switches on), the modes switch
# on in the order of their singular values, and mode 1's switch-on step grows with γ by
# 2 ln d / rate₁ steps per unit of γ (lesson 05's slope, within 10 %).
#
# <details><summary>Hint</summary>
#
# Two calls; their order matters, because measuring trains the model in place.
# </details>

# %%
def predict_and_measure(model, data: Dataset, steps: int, level: float, lr: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(predicted, measured) switch-on steps [K, r] of the same model."""
    ### BEGIN SOLUTION
    predicted = predict_switch_on(model, data, level, lr)  # first: the measurement trains the model
    return predicted, measure_switch_on(model, data, steps, level, lr, 1)
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_05_switch_on_prediction(predict_and_measure)

# %% [markdown]
# **Think.** Run `predict_and_measure` on `make_model("linear", task, gamma=[1.0, 1.5, 2.0],
# seed=0)` for 400 steps at level 0.5 and lr 1. Which mode's prediction is furthest from its
# measurement, and is it early or late? Lesson 05's linearisation ignores how a mode slows down as
# it nears its end value: for which level (0.1, 0.5 or close to a mode's final strength) should the
# prediction be best?

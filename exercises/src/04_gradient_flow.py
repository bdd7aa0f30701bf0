# %% [markdown]
# # Exercises 04 — Gradient flow at small init
#
# Three exercises on lesson 04: write E1, use it to compare two tokens, then build the lesson's
# headline measurement yourself, the ε⁴ law of E1's error. Fill in each `# YOUR CODE HERE`, then run
# the check cell below it: it prints `PASS check_04_…` or stops with a hint. Checks also try *hidden*
# cases (other tasks, widths, activations, skewed frequencies, γ grids), so write code for any
# Emb-MLP ensemble and any `Dataset`. Grade the whole notebook from a terminal:
#
# ```bash
# ctxlab grade exercises/04_gradient_flow.ipynb
# ```
#
# | # | exercise | difficulty | time |
# |---|---|---|---|
# | 1 | the E1 velocity | ★★★ | 25 min |
# | 2 | which token moves faster | ★★☆ | 10 min |
# | 3 | build it: measure the ε⁴ law of E1 | ★★★ | 30 min |

# %%
import math

import torch

import ctxlab.checks
from ctxlab.models import EmbMLP, make_model
from ctxlab.tasks import Dataset, hierarchy_task
from ctxlab.theory import cosine_per_model, embedding_velocity

task = hierarchy_task()
data = task.population
model = make_model("mlp", task, gamma=1.0, seed=[0, 1])
print("embedding", tuple(model.embedding.shape), "w1", tuple(model.w1.shape), "w2", tuple(model.w2.shape))

# %% [markdown]
# ## Exercise 1 — the E1 velocity (★★★, 25 min)
#
# Write `e1_velocity(model, data)` returning the leading-order embedding velocity of an Emb-MLP
# ensemble, a tensor [K, V, d]:
#
# $$\frac{dE_s}{dt} \approx \sigma'(0) \sum_i M_i\,\big(P(x_i = s, \cdot) - \pi_i(s)\,u\big),\qquad M_i = W_1^{(i)} W_2 .$$
#
# * `model.w1` is [K, L·d, H]; rows `i*d : (i+1)*d` are W₁^{(i)}, the block reading position i.
#   `model.w2` is [K, H, C].
# * σ'(0) depends on `model.activation`: 1/2 for `"gelu"`, 1 for `"tanh"`.
# * P(x_i = s, y) is lesson 01's weighted joint table of position i and the label, [V, C];
#   π_i(s) is its row sum, u = 1/C.
#
# The check compares with the library's `mlp_embedding_velocity` and requires cosine ≥ 0.999 with
# the exact autograd gradient (`embedding_velocity`) at γ ≥ 1.
#
# <details><summary>Hint 1: the idea</summary>
#
# At small init the hidden layer is nearly linear (slope σ'(0)) and the model predicts u for every
# row, so the error a row sends back is its label distribution minus u. Gathered by the token at
# position i, that error is the drive P(x_i = s, ·) − π_i(s) u, a [V, C] table, and it reaches the
# embedding through the fixed map M_i = W₁^{(i)} W₂, transposed.
# </details>
#
# <details><summary>Hint 2: the approach</summary>
#
# Work in float64, one position at a time. First the drive: the joint table of that position,
# centred as Hint 1 says. Then the map: position i's block of W₁ times W₂, one map per model. The
# drive reaches E through the map's transpose; add what every position sends and scale by the
# activation's slope at 0.
# </details>
#
# <details><summary>Hint 3: the pitfalls</summary>
#
# σ'(0) is 1/2 for GELU and 1 for tanh: read it from the model, do not fix it. Centre the drive (the
# model at init already predicts u). The drive is the joint P(x_i = s, y) − π_i(s) u, weighted by the
# token's frequency, not the conditional P(y | x_i = s) − u. Sum over every position, each through
# its own block of W₁. Label distributions and row weights, not one label per row.
# </details>

# %%
def e1_velocity(model: EmbMLP, data: Dataset) -> torch.Tensor:
    """Leading-order dE/dt of an Emb-MLP ensemble at small init: [K, V, d]."""
    ### BEGIN SOLUTION
    K, V, d = model.embedding.shape
    L, C = model.seq_len, model.n_labels
    slope = {"gelu": 0.5, "tanh": 1.0}[model.activation]
    w1 = model.w1.detach().double().reshape(K, L, d, -1)
    w2 = model.w2.detach().double()
    mass = data.weights[:, None].double() * data.targets().double()
    velocity = torch.zeros(K, V, d, dtype=torch.float64)
    for i in range(L):
        table = torch.zeros(V, C, dtype=torch.float64).index_add_(0, data.x[:, i], mass)
        drive = table - table.sum(1, keepdim=True) / C
        velocity += drive[None] @ (w1[:, i] @ w2).transpose(-1, -2)
    return slope * velocity
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_04_e1_velocity(e1_velocity)

# %% tags=["exercise"]
# Once the check passes, compare with autograd yourself, e.g.:
# print(cosine_per_model(e1_velocity(model, data), embedding_velocity(model, data)))

# %% tags=["solution"]
print("cosine with autograd:", cosine_per_model(e1_velocity(model, data), embedding_velocity(model, data)))

# %% [markdown]
# ## Exercise 2 — which token moves faster? (★★☆, 10 min)
#
# Two tokens a and b sit at the same position, with frequencies π_a, π_b and order-1 signatures
# q_a, q_b (label distributions, tensors [C]) whose deviations from uniform point the **same
# way**: q_a − u = c (q_b − u) for some c > 0. Use E1 to write `update_ratio(pi_a, pi_b, q_a, q_b)`
# returning the predicted ‖dE_a/dt‖ / ‖dE_b/dt‖ at initialization, as a float. The check
# measures the ratio with autograd on small-init models and allows 1%.
#
# <details><summary>Hint 1: the idea</summary>
#
# By E1 a token's velocity is σ'(0) times the map M applied to its drive π (q − u). Two tokens at
# the same position share M, and when their vectors q − u point the same way, M stretches both by
# the same factor, whatever M is.
# </details>
#
# <details><summary>Hint 2: the approach</summary>
#
# Write each velocity's norm as σ'(0) π ‖M (q − u)‖, use q_a − u = c (q_b − u) to pull c out of the
# first one, and see what is left of the ratio: frequencies and the lengths of the two q − u. No
# model is needed to compute it.
# </details>
#
# <details><summary>Hint 3: the pitfalls</summary>
#
# The more frequent token moves faster, so π_a is in the numerator. Frequencies alone are not enough
# when the two deviations differ in length. Subtract u = 1/C before taking a length: q itself does
# not drive the update, q − u does. E1 is linear in the frequency, not quadratic.
# </details>

# %%
def update_ratio(pi_a: float, pi_b: float, q_a: torch.Tensor, q_b: torch.Tensor) -> float:
    """Predicted ||dE_a/dt|| / ||dE_b/dt|| at small init, for parallel q_a - u and q_b - u."""
    ### BEGIN SOLUTION
    u = 1.0 / len(q_a)
    return pi_a * float((q_a.double() - u).norm()) / (pi_b * float((q_b.double() - u).norm()))
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_04_update_ratio(update_ratio)

# %% [markdown]
# **Think.** In a language model's vocabulary under Zipf's law, a token of rank 1000 is about
# 1000 times rarer than the most frequent one. By E1, how many more steps does it need to move its
# embedding as far, all else equal? What could a training recipe do about it?

# %% [markdown]
# ## Exercise 3 — build it: measure the ε⁴ law of E1 (★★★, 30 min)
#
# Lesson 04 argues that E1 misses the exact velocity by a relative O(ε²) (GELU's curvature), and
# that 1 − cosine(E1, exact) is the square of that miss, so it falls like **ε⁴**. The lesson's figure
# shows it; now measure it yourself. Write `e1_law(data, gammas, d, hidden, seed)` returning a pair
# `(gaps, slope)`:
#
# * `gaps`, a float64 tensor [G]: for each γ of `gammas`, in the order given, 1 − cosine between E1
#   and the exact embedding velocity −∂R/∂E, both at the initial weights of a GELU Emb-MLP of width
#   `d` and hidden width `hidden`. Draw all the models as one ensemble, as the lesson does with
#   `make_model`: one model per γ, every one from the same `seed` (each γ then rescales the same
#   random draw). R is the lesson's population loss, Σₙ wₙ · (−Σ_y P(y | xₙ) ln softmax(z(xₙ))_y).
#   The cosine is the lesson's: one per model, between its two velocity tables [V, d] flattened.
# * `slope`, a float: the least-squares slope of ln(1 − cosine) against ln ε over all the γ given,
#   with the ε of the lesson's error estimate. There h = O(ε²) and h ∝ (L d²)^(−γ), so
#   ε = (L d²)^(−γ/2): the law predicts a slope of 4.
#
# For E1 use your `e1_velocity` of exercise 1 (or the library's `mlp_embedding_velocity`); the exact
# velocity you compute yourself, with autograd (not with `embedding_velocity`: that is what you
# are building).
#
# **Tolerance: 1 % relative**, for everything the check compares: each 1 − cosine against the
# library's reference, your slope against the least-squares slope, and, on settings of the check's
# own, your slope against the law's 4 (so within 0.04). The check draws other tasks (sampled rows with
# integer labels, non-uniform row weights, Zipf-distributed keys, the key at another position),
# widths from 8 to 64, other hidden widths and seeds, and γ grids of two to four values, not always in
# order, down to γ = 0.5.
#
# <details><summary>Hint 1: the idea</summary>
#
# Two velocity tables per model, read at the same untouched init: the one E1 predicts and the one
# the loss really gives. Their angle is E1's error. Plotted on log-log axes against ε, 1 − cosine
# should be a straight line, and its slope is the exponent of the law.
# </details>
#
# <details><summary>Hint 2: the approach</summary>
#
# One ensemble holds every γ. The population loss of each model, summed over the models, gives every
# model its own gradient in a single backward pass (the models share no weights); keep only the
# embedding table's gradient, with a minus sign. Flatten each model's two tables, take the cosine
# in float64 and subtract it from 1. For the slope, ln ε per γ on the x axis, ln(1 − cosine) on the
# y axis, and a least-squares line through all the points.
# </details>
#
# <details><summary>Hint 3: the pitfalls</summary>
#
# The velocity is minus the gradient. Only the embeddings' velocity is compared, not that of the
# other weights. No optimizer step before reading it. The whole table, not a cosine per token (the
# anchors' E1 rows are exactly zero). The rows of a population carry weights and label distributions.
# In float32, 1 − cosine cannot go below about 6e-8, and here it reaches 1e-9. Every γ from the same
# seed, and the values in the order of the γ given. The same logarithm on both axes, and ln ε, not γ,
# on the x axis; h is of size ε², so ε is the square root of (L d²)^(−γ), not that scale itself nor
# the scale of one layer alone.
# </details>

# %%
def e1_law(data: Dataset, gammas: list[float], d: int = 32, hidden: int = 128, seed: int = 0) -> tuple[torch.Tensor, float]:
    """1 - cosine(E1, exact velocity) at init per gamma [G], and its log-log slope against epsilon."""
    ### BEGIN SOLUTION
    model = make_model("mlp", data, gamma=list(gammas), seed=seed, d=d, hidden=hidden)
    logp = torch.log_softmax(model(data.x), dim=-1)  # [K, N, C]
    loss = -((logp * data.targets()).sum(-1) @ data.weights).sum()  # one population loss per model, summed
    exact = -torch.autograd.grad(loss, model.embedding)[0].double().flatten(1)
    predicted = e1_velocity(model, data).double().flatten(1)
    gaps = 1 - (predicted * exact).sum(1) / (predicted.norm(dim=1) * exact.norm(dim=1))
    log_eps = -torch.tensor(list(gammas), dtype=torch.float64) / 2 * math.log(data.seq_len * d * d)
    x, y = log_eps - log_eps.mean(), gaps.log() - gaps.log().mean()
    return gaps, float((x * y).sum() / (x * x).sum())
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_04_e1_law(e1_law)

# %% tags=["exercise"]
# Once the check passes, look at the law on the lesson's task, e.g.:
# gaps, slope = e1_law(data, [0.75, 1.0, 1.25, 1.5], 32, 128, 0)
# print([f"{float(g):.2e}" for g in gaps], f"slope {slope:.3f}")

# %% tags=["solution"]
gaps, slope = e1_law(data, [0.75, 1.0, 1.25, 1.5], 32, 128, 0)
print("1 - cosine:", [f"{float(g):.2e}" for g in gaps], f"| slope against ln eps: {slope:.2f}")

# %% [markdown]
# **Think.** (1) Run `e1_law(data, [1.0, 1.5, 2.0, 2.5], 64, 128, 0)`: where does the straight line
# stop, and why there? (The gradient is computed in float32: what is the square of its rounding
# error?) (2) Leave σ'(0) = 1/2 out of E1: which of the numbers above changes? (3) Draw the models with
# `activation="tanh"` instead: σ''(0) = 0 removes the curvature term, so which error term of the
# lesson's estimate is left, and what slope do you expect? Measure it.

# %% [markdown]
# # Exercises 06 — The next stair
#
# Three exercises on lesson 06: two on the residual pair statistic, then one you build in two parts,
# the next-stair equation computed from a trained model and held against autograd. Fill in each
# `# YOUR CODE HERE`, then run the check cell below it: it prints `PASS check_06_…` or stops with a
# hint. Checks also try *hidden* cases (other tasks, sampled data with integer labels, non-uniform
# weights, other positions, models the check trains itself), so write code for any `Dataset` and any
# model. Grade the whole notebook from a terminal:
#
# ```bash
# ctxlab grade exercises/06_next_stair.ipynb
# ```
#
# | # | exercise | difficulty | time |
# |---|---|---|---|
# | 1 | the residual pair statistic | ★★☆ | 15 min |
# | 2 | which pairs separate next | ★★☆ | 10 min |
# | 3 | build it: the residual predicts the anchors' velocity (two parts) | ★★★ | 40 min |

# %%
import copy
import itertools
import math

import torch

import ctxlab.checks
from ctxlab.models import make_model
from ctxlab.signatures import interaction, joint, plateau_levels
from ctxlab.tasks import Dataset, hierarchy_task
from ctxlab.train import train

task = hierarchy_task()
data = task.population
table = joint(data, (0,))
probs = (table / table.sum(-1, keepdim=True))[data.x[:, 0]]  # the order-1 optimum P(y | key), [N, C]
print("data", tuple(data.x.shape), "probs", tuple(probs.shape))

# %% [markdown]
# ## Exercise 1 — the residual pair statistic (★★☆, 15 min)
#
# Write `residual(data, probs, i, j)` returning the table [V, V, C]
#
# $$R_{ij}(s,t) = \mathbb E\big[e_y - p \mid x_i = s,\ x_j = t\big],$$
#
# where `probs` [N, C] holds the model's prediction p for each row of `data`, e_y is the label
# distribution `data.targets()` of the row, and the expectation uses `data.weights`. Put 0 where
# the pair (s, t) never occurs. On the order-1 optimum above the result should equal
# `interaction(data, (0, 1))` (lesson 06).
#
# <details><summary>Hint 1: the idea</summary>
#
# A conditional mean over the rows that hold the pair (s, t): the weighted sum of their errors
# e_y − p, divided by their total weight. Each pair of tokens is one cell of the table, and the
# cells are filled the way lesson 01's joint tables are.
# </details>
#
# <details><summary>Hint 2: the approach</summary>
#
# Work in float64. Give each row one cell number for its pair (the token at i, the token at j).
# Add every row's weighted error into its cell, and its weight into a second table, the cells'
# masses; divide where the mass is positive, and lay the cells back out as V × V × C with the token
# at i on the first axis.
# </details>
#
# <details><summary>Hint 3: the pitfalls</summary>
#
# The error is target minus prediction, e_y − p. Divide by the pair's mass P(x_i = s, x_j = t): a
# sum is not a mean. Weight by `data.weights`, not 1/N, and use the label distributions, not one
# label per row. Axis 0 is the token at i, axis 1 the token at j, also when i > j. A cell no row
# holds is 0: its zero mass must not turn into NaN.
# </details>

# %%
def residual(data: Dataset, probs: torch.Tensor, i: int, j: int) -> torch.Tensor:
    """E[e_y - p | x_i = s, x_j = t] as a [V, V, C] table (0 where the pair never occurs)."""
    ### BEGIN SOLUTION
    V, C = data.vocab_size, data.n_labels
    w = data.weights.double()
    cell = data.x[:, i] * V + data.x[:, j]
    mass = torch.zeros(V * V, dtype=torch.float64).index_add_(0, cell, w)
    err = w[:, None] * (data.targets().double() - probs.double())
    total = torch.zeros(V * V, C, dtype=torch.float64).index_add_(0, cell, err)
    return (total / mass.clamp_min(1e-300)[:, None]).reshape(V, V, C)
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_06_pair_residual(residual)

# %% tags=["solution"]
print("max |R - ΔS²| at the order-1 optimum:", float((residual(data, probs, 0, 1) - interaction(data, (0, 1))).abs().max()))

# %% [markdown]
# ## Exercise 2 — which pairs separate next? (★★☆, 10 min)
#
# Write `next_pairs(data)` returning the list of position pairs (i, j) with i < j whose tokens
# will split at the next stair: the pairs whose *incremental* order-2 signature ΔS²_ij is not
# zero (use a tolerance of about 1e-6). The check runs it on tasks with shuffled positions, more
# positions, the XOR task, a task with no order-2 term at all (where the answer is `[]`), a weak
# pair term next to a strong one, and two positions that are informative each on its own.
#
# <details><summary>Hint 1: the idea</summary>
#
# A pair of positions makes its tokens split at the next stair only if it says something about y
# that neither token says alone: that is its incremental signature ΔS², not its raw table.
# </details>
#
# <details><summary>Hint 2: the approach</summary>
#
# Go through every pair of positions i < j, compute the pair's incremental signature with the
# lesson's function, and keep the pair when its largest absolute entry is above the tolerance.
# </details>
#
# <details><summary>Hint 3: the pitfalls</summary>
#
# Test every pair, not only neighbouring positions, and not only the pairs with position 0: the
# positions may come in any order. A raw table P(y | x_i, x_j) that is informative only through one
# of its tokens (the key with any anchor) lets in too many pairs. A task may have no pair at all.
# </details>

# %%
def next_pairs(data: Dataset) -> list[tuple[int, int]]:
    """Position pairs (i < j) with a non-zero incremental pair signature."""
    ### BEGIN SOLUTION
    return [(i, j) for i, j in itertools.combinations(range(data.seq_len), 2)
            if float(interaction(data, (i, j)).abs().max()) > 1e-6]
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_06_next_pairs(next_pairs)

# %% [markdown]
# **Think.** On the hierarchy task with `mix=(0.5, 0.0, 0.5)` no pair carries new information,
# yet the label still depends on all three tokens. What does the staircase look like there, and
# why might gradient descent wait much longer on that plateau than on one where a pair is the next
# thing to learn?

# %% [markdown]
# ## Exercise 3 — build it: the residual predicts the anchors' velocity (★★★, 40 min)
#
# Lesson 06 derives how, on a plateau, the residual moves the tokens of the next position (the
# next-stair equation), and holds it against autograd. Now you build that prediction from a trained
# model, then hold it against autograd yourself. The model below is an ensemble of two Emb-MLPs
# (GELU, γ = 1, seeds 0 and 1) trained by full-batch GD on a smaller hierarchy task (over Z₃, 6
# tokens per position, 216 sequences) until it rests on H1: the key tokens have grown, the anchors
# are still near their init.
#
# What you have: `model.embedding` E [K, V, d]; `model.w1` [K, L·d, h], position-major: rows i·d to
# i·d + d − 1 are the block W1_i [d, h] through which the token at position i enters the hidden
# layer, so u(x) = Σ_i E[x_i] W1_i; `model.w2` [K, h, C], the read-out (logits = σ(u) W2; in the
# lesson's notation W2 R is the h-vector Σ_y W2[:, y] R_y); `model(data.x)`, the logits [K, N, C].
# σ is the exact (erf) GELU. Use torch and these weights, not `ctxlab.theory`'s
# `next_stair_velocity`, `stair_drive`, `gelu_slope` or `embedding_velocity`: that is what you build.
#
# **Part (a).** Write `predicted_velocity(model, data, position)` returning [K, V, d]: for every
# token t, v(t) = M(t) W1_positionᵀ with
#
# $$M(t) = \sum_{x:\ x_{\text{position}} = t} w(x)\, \sigma'\big(u_c(x)\big) \odot W_2\,\big(e_y - p(x)\big),$$
#
# where p(x) is the model's own prediction (the softmax of its logits), e_y the row's label
# distribution `data.targets()`, w(x) the row's weight `data.weights`, and
# u_c(x) = Σ_{i < position} E[x_i] W1_i the hidden pre-activation of the context alone. Grouped by
# the context c, this is the lesson's M(t) = Σ_c P(c, t) σ'(u_c) ⊙ W2 R(c, t) with the model's own
# residual R. Tokens that never sit at `position` get 0.
#
# **Part (b).** Write `velocity_cosines(model, data, position, tokens)` returning [K, len(tokens)]:
# for each model and each token of the list `tokens` (in that order), the cosine, over the d
# coordinates, between your predicted velocity and autograd's −∂ℒ/∂E_t. ℒ is the training loss, the
# population-weighted cross-entropy Σ_n w_n Σ_y e_y(n) ln(1 / p_y(x_n)) of each model, summed over
# the ensemble (its models share no weights, so each gets its own gradient). Write the loss yourself
# from the logits.
#
# **Tolerance: 1e-4.** Every entry of a velocity within 1e-4 × the reference's largest entry, every
# cosine within 1e-4.
# The checks run your functions on models they train themselves: the plateaus of other hierarchy
# tasks (binary attributes, the H2 plateau and position 2), other widths, an ensemble of several γ
# and seeds, an untrained large init over four positions in float64, sampled data (integer labels)
# and non-uniform weights. On a plateau model
# the second check also asks for the phenomenon: every token the equation moves (the tokens at
# `position`) reaches a cosine of 0.99 or more (the reference gives more than 0.9999 there).
#
# <details><summary>Hint 1: the idea</summary>
#
# Autograd's velocity of E_t is W1 of t's position applied to what reaches the hidden layer, summed
# over the rows where t sits there: each row sends its residual back through the read-out, gated by
# GELU's slope at that row's hidden state. The next-stair equation changes one thing: it takes the
# slope at the context's hidden state u_c, which the network has learned, instead of at the whole
# hidden state, to which the small anchors still add only a little. So the two differ only by how
# far the anchors have grown.
# </details>
#
# <details><summary>Hint 2: the approach</summary>
#
# Work in float64. (a) The residual of every row from the softmax of the logits; carried into the
# hidden space through the read-out (one product per model); u_c by adding up, over the positions
# before `position` only, each row's token embedding times its position's block of W1; GELU's slope
# at u_c from the standard normal distribution's CDF and density; per row, multiply the three and
# the row's weight; add every row into the slot of the token it holds at `position`; finish with
# that position's block of W1. (b) The loss from the log-softmax of the logits, the label
# distributions and the weights; autograd's gradient of its sum with respect to the embedding table,
# negated; one cosine per model and token, over the last axis.
# </details>
#
# <details><summary>Hint 3: the pitfalls</summary>
#
# Not σ'(0) = 1/2 (with a constant slope the drive cancels on the plateau, where the order-1 moments
# match), nor the lesson's leading-order σ''(0) u_c, nor the slope of GELU's tanh approximation:
# σ'(u) = Φ(u) + u φ(u). The residual is the model's own e_y − p(x), not the label's
# P(y | c, t) − P(y). Rows are weighted by `data.weights`, label distributions are not argmax labels.
# u_c adds up the positions before `position` only: with the token at `position` (or those after
# it) in it, σ'(u(x)) gives autograd's exact velocity, which the equation only approximates. The
# block of W1 is the one of `position`, not the key's; reading the residual out through W2 [h, C]
# takes W2 transposed; the answer is M(t) sent through that block, [K, V, d], not M(t) itself. A
# velocity is minus a gradient. In (b), one cosine per model and listed token, over the d
# coordinates, in the order of `tokens`.
# </details>

# %%
small_task = hierarchy_task(block=6)  # over Z3, 6 tokens per position: 216 sequences
small_data = small_task.population
plateau_model = make_model("mlp", small_task, gamma=1.0, seed=[0, 1], d=32, hidden=64)
run = train(plateau_model, small_data, 260, lr=1.0, record_every=260, progress=False)
print("loss at step 260 minus H1, per seed:", [round(float(v), 4) for v in run.loss[:, -1] - plateau_levels(small_data)[1]])


# %%
def predicted_velocity(model, data: Dataset, position: int) -> torch.Tensor:
    """M(t) W1_position^T for every token t, from the model's own residual: [K, V, d]."""
    ### BEGIN SOLUTION
    K, V, d = model.embedding.shape
    E = model.embedding.detach().double()
    W1 = model.w1.detach().double().reshape(K, data.seq_len, d, -1)  # [K, L, d, h]
    W2 = model.w2.detach().double()  # [K, h, C]
    with torch.no_grad():
        residual = data.targets().double() - torch.softmax(model(data.x), dim=-1).double()  # [K, N, C]
    u = torch.zeros(K, data.n, W1.shape[-1], dtype=torch.float64)
    for i in range(position):  # u_c: the context, the positions before `position`
        u += (E @ W1[:, i])[:, data.x[:, i]]
    slope = torch.special.ndtr(u) + u * torch.exp(-u * u / 2) / math.sqrt(2 * math.pi)  # exact GELU'
    per_row = slope * (residual @ W2.transpose(1, 2)) * data.weights.double()[None, :, None]  # [K, N, h]
    M = torch.zeros(K, V, W2.shape[1], dtype=torch.float64).index_add_(1, data.x[:, position], per_row)
    return M @ W1[:, position].transpose(1, 2)
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_06_stair_velocity(predicted_velocity)


# %%
def velocity_cosines(model, data: Dataset, position: int, tokens: list[int]) -> torch.Tensor:
    """cosine(predicted velocity, autograd's -dLoss/dE) per model and listed token: [K, len(tokens)]."""
    ### BEGIN SOLUTION
    logp = torch.log_softmax(model(data.x), dim=-1)  # [K, N, C]
    loss = -(logp * data.targets().to(logp.dtype)).sum(-1) @ data.weights.to(logp.dtype)  # [K]
    (grad,) = torch.autograd.grad(loss.sum(), model.embedding)
    exact = -grad.double()[:, tokens]
    predicted = predicted_velocity(model, data, position)[:, tokens]
    return (predicted * exact).sum(-1) / (predicted.norm(dim=-1) * exact.norm(dim=-1))
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_06_velocity_cosines(velocity_cosines)

# %% tags=["exercise"]
# Once both checks pass: the cosines on the plateau, then 190 steps later, e.g.
# anchors1 = small_task.role_tokens("anchor1").tolist()
# print(velocity_cosines(plateau_model, small_data, 1, anchors1).min(-1).values)
# later = copy.deepcopy(plateau_model)
# train(later, small_data, 190, lr=1.0, progress=False)
# print(velocity_cosines(later, small_data, 1, anchors1).min(-1).values)

# %% tags=["solution"]
anchors1 = small_task.role_tokens("anchor1").tolist()
later = copy.deepcopy(plateau_model)
train(later, small_data, 190, lr=1.0, record_every=190, progress=False)
for step, m in ((260, plateau_model), (450, later)):
    lowest = velocity_cosines(m, small_data, 1, anchors1).min(-1).values
    print(f"step {step}: lowest cosine over the anchor-1 tokens, per seed:", [round(float(c), 4) for c in lowest])

# %% [markdown]
# **Think.** At step 260 every anchor-1 token follows the equation (cosine above 0.9999); 190 steps
# later, with the loss on the *whether* sub-level, some tokens of one seed move almost against it.
# Which single approximation in M(t) has stopped holding, and what does the anchors' share
# ‖δ‖ / ‖u_c‖ of the lesson say about it there?

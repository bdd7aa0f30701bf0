# %% [markdown]
# # Exercises 07 — Self-attention at small init
#
# Three exercises on lesson 07: the bag of context, a detector for attention leaving uniform, and
# a build: the force E3 on W_Q W_Kᵀ, measured on a training run against the moment attention moves.
# Fill in each `# YOUR CODE HERE`, then run the check cell below it: it prints `PASS check_07_…` or
# stops with a hint. Checks also try *hidden* cases (other tasks, widths, curves that move away from
# the named position, runs of their own), so write general code. Grade the whole notebook from a
# terminal:
#
# ```bash
# ctxlab grade exercises/07_attention.ipynb
# ```
#
# | # | exercise | difficulty | time |
# |---|---|---|---|
# | 1 | the bag of context | ★☆☆ | 10 min |
# | 2 | when does attention leave uniform? | ★★☆ | 15 min |
# | 3 | build it: the force on W_Q W_Kᵀ (E3), and when it grows | ★★★ | 30 min |

# %%
import torch

import ctxlab.checks
from ctxlab.attention_exp import POINTER_TASK, attention_model
from ctxlab.models import EmbAttention
from ctxlab.tasks import Dataset, Task, pointer_task
from ctxlab.theory import target_attention
from ctxlab.train import train

task = pointer_task(**POINTER_TASK)  # lesson 07's task: the key names the position that matters
model = attention_model(task, gamma=1.0, seed=[0, 1])
x = task.population.x[:40]
print("embedding", tuple(model.embedding.shape), "position", tuple(model.position.shape),
      "w_v", tuple(model.w_v.shape))

# %% [markdown]
# ## Exercise 1 — the bag of context (★☆☆, 10 min)
#
# At small init every attention weight is 1/L. Write `uniform_output(model, x)` returning the
# attention output under exactly uniform weights, a tensor [K, N, d]:
#
# $$o = \frac1L \sum_{j=1}^{L} (E_{x_j} + P_j)\, W_V .$$
#
# `model.embedding` is [K, V, d], `model.position` [K, L, d], `model.w_v` [K, d, d]; `x` is [N, L].
#
# <details><summary>Hint 1: the idea</summary>
#
# With every weight equal, attention forgets the order of the context: it averages what each
# position offers, and the value map is applied once to that average.
# </details>
#
# <details><summary>Hint 2: the approach</summary>
#
# Look up every token of every sequence in each model's table, add each position's own vector,
# average over the positions of a sequence, and multiply by each model's value matrix.
# </details>
#
# <details><summary>Hint 3: the pitfalls</summary>
#
# Keep the K models apart (each has its own table, positions and W_V). Average over the
# positions, not over the sequences or the width, and add the position vectors before averaging.
# Return plain tensors, not ones that carry gradients.
# </details>

# %%
def uniform_output(model: EmbAttention, x: torch.Tensor) -> torch.Tensor:
    """Attention output with every weight 1/L: [K, N, d]."""
    ### BEGIN SOLUTION
    h = model.embedding.detach()[:, x] + model.position.detach()[:, None]
    return h.mean(2) @ model.w_v.detach()
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_07_uniform_output(uniform_output)

# %% [markdown]
# ## Exercise 2 — when does attention leave uniform? (★★☆, 15 min)
#
# A probe recorded the mean attention weight from the key to the position it names, `weights` [K, T], at the
# training steps `steps` [T]. Write `leaves_uniform(steps, weights, seq_len, tol=0.01)` returning,
# per model, the first recorded **step** at which |weight − 1/L| > tol, and −1 if that never
# happens: an integer tensor [K]. "First" means the first time, even if the weight comes back
# inside the band later. Attention can also move *away* from that position (below 1/L), and
# `steps` need not start at 0 nor be evenly spaced.
#
# <details><summary>Hint 1: the idea</summary>
#
# Attention has left uniform at the first record where its distance from 1/L exceeds the band,
# whichever side it leaves on.
# </details>
#
# <details><summary>Hint 2: the approach</summary>
#
# Per model and record, a yes/no "outside the band"; per model, the first record where it is yes,
# turned into a training step through `steps`.
# </details>
#
# <details><summary>Hint 3: the pitfalls</summary>
#
# A distance, so both directions count. The position of the first maximum of an all-no row is 0:
# check whether the weight ever left. Return steps, not record numbers (the grid need not start at
# 0 or be even), and the first time, not the last time it leaves.
# </details>

# %%
def leaves_uniform(steps: torch.Tensor, weights: torch.Tensor, seq_len: int, tol: float = 0.01) -> torch.Tensor:
    """First step where |weights - 1/L| > tol, per model; -1 if never."""
    ### BEGIN SOLUTION
    off = (weights.double() - 1.0 / seq_len).abs() > tol
    first = off.int().argmax(-1)
    return torch.where(off.any(-1), steps[first], torch.full_like(first, -1)).long()
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_07_leaves_uniform(leaves_uniform)

# %% [markdown]
# **Think.** Run your detector on the lesson's GD and Adam runs (`result.trained.extras["attention_to_target"]`,
# `adam.extras["attention"]`). Under GD attention leaves 1/L only after the loss has rested on
# H(Y | key); which order in ε of E3 sets that time scale, and why does Adam not feel it?

# %% [markdown]
# ## Exercise 3 — build it: the force on W_Q W_Kᵀ, and when it grows (★★★, 30 min)
#
# Lesson 07 explains why attention moves last with E3: the force G = −∂R/∂A on A = W_Q W_Kᵀ is
# O(ε⁶) at init and grows as E, W_V and M = W₁W₂ grow. The lesson's run records A, not G, so that
# step was read from the theory, not measured. Here you measure it: first write G (3a), then train
# the lesson's model with G as a probe and read when it grows and when attention leaves 1/L (3b).
#
# ### 3a. The force G (≈ 15 min)
#
# Write `qk_force_by_hand(model, data)` returning G, a tensor [K, d, d], for every model of the
# ensemble at its current weights, to leading order: every attention weight 1/L and the prediction
# p = u = 1/C. The model is lesson 07's: h_j = E[x_j] + P_j; the last position (the key) is the
# only query read, with scores s_Lj = h_L A h_jᵀ / √d_head; a GELU head, whose slope at 0 is
# σ'(0) = 1/2; with or without the residual (at this order it does not change G). In row vectors,
#
# $$G = -\frac{1}{L\sqrt{d_{head}}}\;\mathbb E\Big[\sum_{j=1}^{L} \big\langle g,\ (h_j - \bar h)\, W_V\big\rangle\; h_L^\top h_j\Big],\qquad g = \sigma'(0)\,(p - y)\,M^\top \text{ at } p = u,$$
#
# where, for one row, y is its label distribution and h̄ the mean of its L vectors h_j, and E is
# the mean over the rows weighted by their probability.
#
# What you have: `model.embedding` [K, V, d], `model.position` [K, L, d], `model.w_v` [K, d, d],
# `model.w1` [K, d, hidden], `model.w2` [K, hidden, C], `model.d_head`; `data.x` [N, L],
# `data.targets()` [N, C] (label distributions; one-hot rows for sampled data), `data.weights` [N].
# Use torch only, not `ctxlab.theory.qk_force`: that is what you are building.
#
# **Tolerance.** Model by model, your G must agree with the reference within 1e-4 of the largest
# |entry| of the reference's G (G is about 1e-7 at init, so a fixed absolute tolerance would say
# nothing). The check tries other pointer tasks (more positions, more attributes, copies of each
# key), another task, other widths and a head narrower than the width, seeds and ensembles, random
# row weights, sampled rows, a model after 100 training steps and float64 weights.
#
# <details><summary>Hint 1: the idea</summary>
#
# G is the chain rule through the scores at uniform attention. Each score s_Lj moves the key's
# output by (1/L) times the centred value of position j; the head turns an error in that output
# into g; and each score depends on A through the outer product of the query h_L with the h_j it
# attends to.
# Sum over positions, average over rows, and take minus the result.
# </details>
#
# <details><summary>Hint 2: the approach</summary>
#
# Build h for every model, row and position. From the head's two matrices and each row's p − y,
# form g for every model and row. Project every centred value on g: one number per model, row and
# position. Then accumulate, weighted by the row's probability, the outer product of the query with
# each position's h, scaled by that number; divide by L √d_head and change the sign.
# </details>
#
# <details><summary>Hint 3: the pitfalls</summary>
#
# The force is minus the gradient. σ'(0) and 1/L are easy to drop, and the root is of d_head, not
# of d. The only query is the last position's own h (not a mean), while the sum over j includes
# the last position. The row index of G belongs to the query, the column index to the key. Centre
# the values before projecting them, and the value is h_j times W_V as it is stored. p is u, not
# the model's current prediction; rows carry distributions and unequal weights. Work in float64.
# </details>

# %%
def qk_force_by_hand(model: EmbAttention, data: Dataset) -> torch.Tensor:
    """E3: the force -dR/dA on A = W_Q W_K^T at uniform attention and p = u, per model: [K, d, d]."""
    ### BEGIN SOLUTION
    E, P, W_v = model.embedding.detach().double(), model.position.detach().double(), model.w_v.detach().double()
    M = model.w1.detach().double() @ model.w2.detach().double()  # [K, d, C]
    h = E[:, data.x] + P[:, None]  # [K, N, L, d]
    y = data.targets().double()
    g = 0.5 * (1.0 / data.n_labels - y) @ M.transpose(1, 2)  # sigma'(0) (p - y) M^T at p = u: [K, N, d]
    centred_values = (h - h.mean(2, keepdim=True)) @ W_v[:, None]  # (h_j - h_bar) W_V: [K, N, L, d]
    pull = (centred_values * g[:, :, None]).sum(-1)  # <g, (h_j - h_bar) W_V>: [K, N, L]
    query = h[:, :, -1]  # [K, N, d]
    G = torch.einsum("n,kna,knl,knlb->kab", data.weights.double(), query, pull, h)
    return -G / (data.seq_len * model.d_head ** 0.5)
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_07_qk_force(qk_force_by_hand)

# %% [markdown]
# ### 3b. When does ‖G‖ grow, and when does attention move? (≈ 15 min)
#
# Write `force_and_attention_steps(model, task, steps, lr, every, factor, tol)` returning a pair
# `(force_step, attention_step)` of integer tensors [K]:
#
# * train `model` itself (in place) by full-batch gradient descent at learning rate `lr` (one number,
#   or one per model, as `train` takes it) for `steps` steps, recorded at steps 0, `every`,
#   2·`every`, … and the last step, as `train(..., record_every=every)` records;
# * at every record, take ‖G‖ (the Frobenius norm per model, with your 3a on `task.population`)
#   and the mean attention from the key to the position it names (`target_attention(task)`, the
#   lesson's probe);
# * `force_step`: the first recorded step at which ‖G‖ ≥ `factor` × ‖G‖ at step 0;
#   `attention_step`: the first recorded step at which |attention − 1/L| > `tol` (your exercise 2).
#   Either is −1 where it never happens.
#
# The check compares both steps with its own, step for step, on runs of its own. The first is on
# lesson 07's task: one ensemble with three seeds at γ = 1, the twin of seed 0 with attention frozen
# at 1/L, and a model at γ = 0.5, trained for 1100 steps at lr 0.8 (ten times the lesson's rate, so
# that attention moves within a couple of seconds of training; the γ = 0.5 model at 0.4, since at
# 0.8 it can blow up), with `factor` 100 and `tol` 0.02. On that run it then holds what lesson 07
# says, with margins:
#
# * at γ = 1, ‖G‖ is a hundred times its start at least 4 times earlier than attention leaves
#   1/L ± 0.02;
# * the frozen twin's force grows as well, but its attention never leaves 1/L;
# * at γ = 0.5 the gap is gone: attention leaves before ‖G‖ has grown a hundredfold.
#
# **Think** before you run it: why should the force grow first at γ = 1, and why should that stop
# at γ = 0.5? (The lesson's table of relative gradient rates is one way to see it.)
#
# <details><summary>Hint 1: the idea</summary>
#
# Two clocks on one run: record both quantities at the same recorded steps while the model trains,
# then read, for each, the first record where it crosses its line.
# </details>
#
# <details><summary>Hint 2: the approach</summary>
#
# The course's training loop takes probes: functions of the model that it records at every
# recorded step, one [K] value per model each. Give it one for the norm of your force and one for
# the attention. Compare the force curve with its first record times the factor; for the attention
# curve you already wrote the detector.
# </details>
#
# <details><summary>Hint 3: the pitfalls</summary>
#
# Return steps, not positions in the list of records, and −1 for "never", not 0 and not the last
# step. Record the force of 3a afresh at every record: not ‖W_Q W_Kᵀ‖ (that is A itself) and not
# a value computed once at init. Use the factor, tol and lr you are given and L = task.seq_len,
# and return the pair in the order asked.
# </details>

# %%
def force_and_attention_steps(model: EmbAttention, task: Task, steps: int, lr: float, every: int, factor: float,
                              tol: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Train ``model`` in place; (first step with ||G|| >= factor ||G_0||, first step with |attention - 1/L| > tol), -1: never."""
    ### BEGIN SOLUTION
    data = task.population
    probes = {"force": lambda m: torch.linalg.matrix_norm(qk_force_by_hand(m, data)), "attention": target_attention(task)}
    run = train(model, data, steps, lr=lr, record_every=every, probes=probes, progress=False)
    grown = run.extras["force"] >= factor * run.extras["force"][:, :1]
    first = run.steps[grown.int().argmax(1)]
    force_step = torch.where(grown.any(1), first, torch.tensor(-1))
    return force_step, leaves_uniform(run.steps, run.extras["attention"], task.seq_len, tol)
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_07_force_before_attention(force_and_attention_steps)

# %% [markdown]
# **Think.** Under gradient flow dA/dt = G W_K W_Kᵀ + W_Q W_Qᵀ G (lesson 07). On the check's run
# ‖G‖ is a hundred times its start within the first hundred steps, while the loss comes down to
# H(Y | key), yet A hardly moves for hundreds of steps more. What in that equation keeps A slow
# once G is large, and what does the frozen twin, whose force grows just the same, tell you about
# where the last stair comes from?

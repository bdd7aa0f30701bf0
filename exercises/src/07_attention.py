# %% [markdown]
# # Exercises 07 — Self-attention at small init
#
# Two exercises on lesson 07. Fill in each `# YOUR CODE HERE`, then run the check cell below it:
# it prints `PASS check_07_…` or stops with a hint. Checks also try *hidden* cases (other tasks,
# widths, curves that move away from the named position), so write general code. Grade the whole
# notebook from a terminal:
#
# ```bash
# ctxlab grade exercises/07_attention.ipynb
# ```
#
# | # | exercise | difficulty | time |
# |---|---|---|---|
# | 1 | the bag of context | ★☆☆ | 10 min |
# | 2 | when does attention leave uniform? | ★★☆ | 15 min |

# %%
import torch

import ctxlab.checks
from ctxlab.attention_exp import POINTER_TASK, attention_model
from ctxlab.models import EmbAttention
from ctxlab.tasks import pointer_task

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

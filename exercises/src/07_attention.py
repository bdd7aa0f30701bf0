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
# <details><summary>Hint</summary>
#
# `model.embedding.detach()[:, x]` is [K, N, L, d]; add `model.position[:, None]`, average over
# the position axis, then `@ model.w_v`.
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
# <details><summary>Hint</summary>
#
# Build a boolean [K, T] mask, find the first True per row with `mask.int().argmax(-1)`, and use
# `mask.any(-1)` to put −1 where no entry is True. Index `steps` with the position you found.
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

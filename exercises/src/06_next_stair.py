# %% [markdown]
# # Exercises 06 — The next stair
#
# Two exercises on lesson 06. Fill in each `# YOUR CODE HERE`, then run the check cell below it:
# it prints `PASS check_06_…` or stops with a hint. Checks also try *hidden* cases (other tasks,
# sampled data with integer labels, non-uniform weights, other positions), so write code for any
# `Dataset`. Grade the whole notebook from a terminal:
#
# ```bash
# ctxlab grade exercises/06_next_stair.ipynb
# ```
#
# | # | exercise | difficulty | time |
# |---|---|---|---|
# | 1 | the residual pair statistic | ★★☆ | 20 min |
# | 2 | which pairs separate next | ★★☆ | 15 min |

# %%
import itertools

import torch

import ctxlab.checks
from ctxlab.signatures import interaction, joint
from ctxlab.tasks import Dataset, hierarchy_task

task = hierarchy_task()
data = task.population
table = joint(data, (0,))
probs = (table / table.sum(-1, keepdim=True))[data.x[:, 0]]  # the order-1 optimum P(y | key), [N, C]
print("data", tuple(data.x.shape), "probs", tuple(probs.shape))

# %% [markdown]
# ## Exercise 1 — the residual pair statistic (★★☆, 20 min)
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
# <details><summary>Hint</summary>
#
# Work in float64. Give each row a cell id `data.x[:, i] * V + data.x[:, j]`; accumulate
# `weights[:, None] * (targets - probs)` and `weights` into V·V cells with `index_add_`, divide
# (clamp the mass away from 0), reshape to [V, V, C].
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
# ## Exercise 2 — which pairs separate next? (★★☆, 15 min)
#
# Write `next_pairs(data)` returning the list of position pairs (i, j) with i < j whose tokens
# will split at the next stair: the pairs whose *incremental* order-2 signature ΔS²_ij is not
# zero (use a tolerance of about 1e-6). The check runs it on tasks with shuffled positions, more
# positions, the XOR task, and a task with no order-2 term at all (where the answer is `[]`).
#
# <details><summary>Hint</summary>
#
# `interaction(data, (i, j))` is ΔS²_ij. A pair whose raw table P(y | x_i, x_j) is informative
# only because one of its tokens is (e.g. the key with any anchor) has ΔS² = 0.
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

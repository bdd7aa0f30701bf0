# %% [markdown]
# # Exercises 05 — Why stairs come in order
#
# Three exercises on lesson 05. Fill in each `# YOUR CODE HERE`, then run the check cell below it:
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
# <details><summary>Hint</summary>
#
# π_i(s)(P(y | x_i = s) − u) = P(x_i = s, y) − P(x_i = s)/C: no division needed. Build the [V, C]
# table P(x_i = s, y) with `index_add_` of `data.weights[:, None] * data.targets()`, subtract its
# row sums / C, stack the positions along the rows, transpose, and call `torch.linalg.svdvals`.
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
# <details><summary>Hint</summary>
#
# `reached = strengths.abs() >= level` is [T, r]; `reached.float().argmax(0)` is the index of the
# first True per column (and 0 for a column with no True at all: use `reached.any(0)` to give
# those modes the step +inf). `torch.argsort(..., stable=True)` keeps ties in index order.
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
# <details><summary>Hint</summary>
#
# Select with a boolean mask, take `a.abs().log()`, centre both x and y, and the slope is
# Σ x y / Σ x². (Or use `torch.linalg.lstsq` with a column of ones.)
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

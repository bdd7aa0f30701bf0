# %% [markdown]
# # Exercises 04 — Gradient flow at small init
#
# Two exercises on lesson 04. Fill in each `# YOUR CODE HERE`, then run the check cell below it:
# it prints `PASS check_04_…` or stops with a hint. Checks also try *hidden* cases (other tasks,
# widths, activations, skewed frequencies), so write code for any Emb-MLP ensemble and any
# `Dataset`. Grade the whole notebook from a terminal:
#
# ```bash
# ctxlab grade exercises/04_gradient_flow.ipynb
# ```
#
# | # | exercise | difficulty | time |
# |---|---|---|---|
# | 1 | the E1 velocity | ★★★ | 25 min |
# | 2 | which token moves faster | ★★☆ | 15 min |

# %%
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
# * P(x_i = s, y) is a weighted count: add `data.weights[:, None] * data.targets()` into row
#   `data.x[:, i]` of a [V, C] table. π_i(s) is that table's row sum, u = 1/C.
#
# The check compares with the library's `mlp_embedding_velocity` and requires cosine ≥ 0.999 with
# the exact autograd gradient (`embedding_velocity`) at γ ≥ 1.
#
# <details><summary>Hint</summary>
#
# Work in float64. `w1 = model.w1.detach().double().reshape(K, L, d, H)` splits the positions;
# `M = w1[:, i] @ w2` is [K, d, C]. For a drive table D [V, C], `D[None] @ M.transpose(-1, -2)`
# gives [K, V, d]. Sum over positions, multiply by σ'(0).
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
# ## Exercise 2 — which token moves faster? (★★☆, 15 min)
#
# Two tokens a and b sit at the same position, with frequencies π_a, π_b and order-1 signatures
# q_a, q_b (label distributions, tensors [C]) whose deviations from uniform point the **same
# way**: q_a − u = c (q_b − u) for some c > 0. Use E1 to write `update_ratio(pi_a, pi_b, q_a, q_b)`
# returning the predicted ‖dE_a/dt‖ / ‖dE_b/dt‖ at initialization, as a float. The check
# measures the ratio with autograd on small-init models and allows 1%.
#
# <details><summary>Hint</summary>
#
# Both velocities are σ'(0) π M (q − u) with the *same* M. When the two vectors q − u are
# parallel, the ratio of norms no longer depends on M.
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

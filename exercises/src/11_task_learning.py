# %% [markdown]
# # Exercises 11 — Task learning with a frozen embedding
#
# Two exercises on lesson 11: build the signature-derived embedding, then predict and verify which
# frozen table is halfway down the last stair first. Fill in each `# YOUR CODE HERE`, then run the check
# cell below it: it prints `PASS check_11_…` or stops with a hint. The checks also try *hidden*
# cases (other tasks, order sets, row weights, races), so write code for any input. Grade the
# whole notebook from a terminal:
#
# ```bash
# ctxlab grade exercises/11_task_learning.ipynb
# ```
#
# | # | exercise | difficulty | time |
# |---|---|---|---|
# | 1 | build the signature-derived embedding | ★★☆ | 20 min |
# | 2 | predict, then verify: who is halfway down the last stair first? | ★★☆ | 15 min |

# %%
import torch

import ctxlab.checks
from ctxlab.rungs import stair_onsets
from ctxlab.signatures import label_signature
from ctxlab.tasks import Dataset, hierarchy_task
from ctxlab.train import train
from ctxlab.transplant import frozen_ensemble, loss_by_condition, random_embedding, rescale

# %% [markdown]
# ## Exercise 1 — build the signature-derived embedding (★★☆, 20 min)
#
# Write `signature_table(data, d, orders, norm)` returning the [V, d] table of lesson 11:
#
# 1. concatenate the **incremental** label signatures of every order in `orders` side by side
#    (`label_signature(data, k, "incremental").matrix`, one row per token);
# 2. centre the rows (subtract the mean token row);
# 3. take the SVD of the centred matrix and keep the first d principal-component scores,
#    U[:, :d] · S[:d]; when the matrix has fewer than d singular values, pad with zero columns;
# 4. rescale the table to Frobenius norm `norm`.
#
# The check accepts any rotation of the d columns (it compares the token-by-token inner products
# E Eᵀ). Hidden cases use other tasks, other order sets, non-uniform row weights and d smaller
# than the signature's rank.
#
# <details><summary>Hint</summary>
#
# Work in float64: `S = torch.cat([...], dim=1).double()`, `S = S - S.mean(0)`,
# `U, sv, _ = torch.linalg.svd(S, full_matrices=False)`. Fill `torch.zeros(V, d)` with the first
# `r = min(d, len(sv))` columns of `U * sv`, then multiply by `norm / E.norm()`.
# </details>

# %%
def signature_table(data: Dataset, d: int, orders, norm: float) -> torch.Tensor:
    """[V, d]: centred, concatenated incremental signatures of `orders`, top-d PC scores, Frobenius norm `norm`."""
    ### BEGIN SOLUTION
    S = torch.cat([label_signature(data, k, "incremental").matrix.double() for k in orders], dim=1)
    S = S - S.mean(0, keepdim=True)
    U, sv, _ = torch.linalg.svd(S, full_matrices=False)
    r = min(d, sv.numel())
    E = torch.zeros(data.vocab_size, d, dtype=torch.float64)
    E[:, :r] = U[:, :r] * sv[:r]
    return (E * (norm / E.norm())).float()
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_11_signature_table(signature_table)

# %% [markdown]
# ## Exercise 2 — predict, then verify: who is halfway down the last stair first? (★★☆, 15 min)
#
# **Predict first** (write it down): frozen at the matched norm √V, which is halfway down the
# hierarchy task's last stair (from H2 towards H3) first — a random table, the ΔS¹⁺² table or the
# ΔS¹⁺²⁺³ table? Which never is?
#
# Then write `finishing_order(runs, levels)`: `runs` maps a condition name to `(steps [T],
# loss [n_seeds, T])`, `levels` is H0..HL. Return the names of the conditions in which **every**
# seed gets halfway down the last stair, fastest first by the **mean** step over seeds. "Halfway
# down" is the lesson's onset rule: the first recorded step below the midpoint of the last two levels
# (`stair_onsets(steps, loss, levels)[:, -1]`, which is -1 for "never"). Conditions with the same
# mean step keep the order in which `runs` lists them. Return `[]` if no condition finishes.
#
# <details><summary>Hint</summary>
#
# For each condition: `last = stair_onsets(steps, loss, list(levels))[:, -1]`; skip it if
# `(last < 0).any()`; otherwise remember `last.double().mean()`. Sort the names by that number.
# </details>

# %%
def finishing_order(runs: dict, levels) -> list[str]:
    """Conditions whose every seed is halfway down the last stair, ordered by the mean step (fastest first)."""
    ### BEGIN SOLUTION
    finished = {}
    for name, (steps, loss) in runs.items():
        last = stair_onsets(steps, loss, list(levels))[:, -1]
        if bool((last >= 0).all()):
            finished[name] = float(last.double().mean())
    return sorted(finished, key=finished.get)
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_11_finishing_order(finishing_order)

# %% [markdown]
# Now verify your prediction with a real (short) race: three frozen tables at the matched norm,
# three seeds each, one batched run of 700 steps (about 10 s).

# %%
task = hierarchy_task()
V, D, NORM, SEEDS = task.vocab_size, 32, task.vocab_size**0.5, [0, 1, 2]

# %% tags=["exercise"]
# Once both checks pass, run the race (about 10 s), e.g.:
# tables = {
#     "random": lambda s: rescale(random_embedding(V, D, 1.0, seed=100 + s), NORM),
#     "ΔS¹⁺²": lambda s: signature_table(task.population, D, (1, 2), NORM),
#     "ΔS¹⁺²⁺³": lambda s: signature_table(task.population, D, (1, 2, 3), NORM),
# }
# race, names = frozen_ensemble(task, tables, SEEDS, d=D)
# traj = train(race, task.population, 700, lr=1.0, record_every=10, progress=False)
# print("finishing order:", finishing_order(loss_by_condition(traj, names), task.plateau_levels()))

# %% tags=["solution"]
tables = {
    "random": lambda s: rescale(random_embedding(V, D, 1.0, seed=100 + s), NORM),
    "ΔS¹⁺²": lambda s: signature_table(task.population, D, (1, 2), NORM),
    "ΔS¹⁺²⁺³": lambda s: signature_table(task.population, D, (1, 2, 3), NORM),
}
race, names = frozen_ensemble(task, tables, SEEDS, d=D)
traj = train(race, task.population, 700, lr=1.0, record_every=10, progress=False)
print("finishing order:", finishing_order(loss_by_condition(traj, names), task.plateau_levels()))


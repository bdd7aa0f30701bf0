# %% [markdown]
# # Exercises 11 — Task learning with a frozen embedding
#
# Three exercises on lesson 11: build the signature-derived embedding, predict and verify which
# frozen table is halfway down the last stair first, then build the control the lesson asked for: a
# random table of the signature table's rank, raced against it. Fill in each `# YOUR CODE HERE`, then
# run the check cell below it: it prints `PASS check_11_…` or stops with a hint. The checks also try
# *hidden* cases (other tasks, order sets, row weights, races, tables of every shape), so write code
# for any input. Grade the whole notebook from a terminal:
#
# ```bash
# ctxlab grade exercises/11_task_learning.ipynb
# ```
#
# | # | exercise | difficulty | time |
# |---|---|---|---|
# | 1 | build the signature-derived embedding | ★★☆ | 20 min |
# | 2 | predict, then verify: who is halfway down the last stair first? | ★★☆ | 15 min |
# | 3 | build it: a random rank-matched table as a control, and the race against it | ★★★ | 25 min |

# %%
import torch

import ctxlab.checks
from ctxlab.rungs import stair_onsets
from ctxlab.signatures import label_signature
from ctxlab.tasks import Dataset, Task, hierarchy_task
from ctxlab.train import train
from ctxlab.transplant import (
    frozen_ensemble,
    loss_by_condition,
    random_embedding,
    rescale,
    signature_embedding,
    steps_to_plateaus,
)

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
# E Eᵀ). Hidden cases use other tasks, other order sets, non-uniform row weights, tokens of very
# different frequencies and d smaller than the signature's rank.
#
# <details><summary>Hint 1: the idea</summary>
#
# A token's row should say what the label signatures say about that token, and nothing they say
# about every token alike. So: put each token's signatures of all the asked orders in one long row,
# remove what all rows share, keep the d directions along which the rows differ most, and set the
# size last, so that tables can be compared at a matched norm.
# </details>
#
# <details><summary>Hint 2: the approach</summary>
#
# One matrix with a row per token, the signature matrices of the orders side by side. Subtract the
# mean row. Its SVD gives the principal-component scores: the left singular vectors, each scaled by
# its singular value; the first d of them are the table's columns, and zero columns fill the rest
# when there are fewer. Finally multiply the whole table by the asked norm over its current
# Frobenius norm. Do the SVD in float64 and return float32.
# </details>
#
# <details><summary>Hint 3: the pitfalls</summary>
#
# The check names each of these: the **incremental** signatures, not the raw or the centred ones;
# every order in `orders`, not only the highest; centre before the SVD; keep the singular values
# (bare singular vectors are a different table); exactly d columns, padded with zeros; rows are
# tokens (a [d, V] table is transposed); and rescale to the asked norm.
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
# loss [n_seeds, T])`, each condition with its own step grid and number of seeds; `levels` is
# H0..HL. Return the names of the conditions in which **every** seed gets halfway down the last
# stair, fastest first by the **mean** step over seeds. "Halfway down" is the lesson's onset rule:
# the first recorded step below the midpoint of the last two levels (lesson 03's onsets, with their
# own value for "never"). Conditions with the same mean step keep the order in which `runs` lists
# them. Return `[]` if no condition finishes.
#
# <details><summary>Hint 1: the idea</summary>
#
# A condition is in the race only if every one of its seeds gets halfway down the last stair; the
# finishers are then ranked by how late they get there on average.
# </details>
#
# <details><summary>Hint 2: the approach</summary>
#
# For each condition, read every seed's onset of the last stair with the lesson's rule (the last
# column of what `stair_onsets` returns), leave the condition out if any seed never got there, and
# otherwise remember the mean over its seeds. Sort the finishers by that number with a stable sort.
# </details>
#
# <details><summary>Hint 3: the pitfalls</summary>
#
# Halfway down is below the *midpoint* of the last two levels, not below the last level. −1 means
# never, not an early step: do not average it. Use the mean over seeds, not the median and not the
# best seed; rank by *when* a condition gets there, not by its final loss; and keep tied conditions
# in the order `runs` lists them.
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


# %% [markdown]
# ## Exercise 3 — build it: a random rank-matched table as a control (★★★, 25 min)
#
# Lesson 11 found the ΔS¹⁺²⁺³ table halfway down the last stair near step 540, while a random table
# of the same Frobenius norm never got there. But the two differ in more than content: the
# signature table puts all of its norm on **six** directions (rank 6), the random one spreads it over
# all of them. Is it *what* the signature table says that helps, or only that its norm is
# concentrated? The control that tells the two apart is a random table with the signature table's
# rank and scale. You build it, then race it.
#
# **(a)** Write `rank_matched_control(table, seed)` returning a [V, d] table that has
#
# * the same **singular values** as `table`, all min(V, d) of them — so the same rank and the same
#   Frobenius norm;
# * **random orthonormal bases on both sides**: its left singular vectors ([V, min(V, d)], how the
#   tokens share the directions) and its right ones ([d, min(V, d)]) are drawn at random, neither
#   taken from `table`;
# * one seed, one table: draw everything from a `torch.Generator` of your own seeded with `seed`
#   (the same seed gives the same table, another seed another one, and torch's global generator is
#   left alone);
# * the table's dtype (float32 or float64), computed in that dtype.
#
# Use torch only: `ctxlab.transplant.rank_matched_control`, which the lesson's race uses, is what you are
# building.
#
# Why the singular values, not only the Frobenius norm? The norm says how large a table is; the
# singular values also say how that size is spread over directions, and that spread is exactly the
# "concentration" the control must hold fixed. (For ΔS¹⁺²⁺³ the six are nearly equal, 2.04 to 2.17,
# so here the two choices barely differ; on other tables they do.)
#
# The check tries tables of rank 1, full rank (tall and wide), repeated singular values, V = 1,
# d = 1, a tiny scale, float32 and float64, and lesson 11's own tables. It counts the rank as the
# number of singular values above 1e-4 × the largest (float32) or 1e-10 × the largest (float64),
# and compares singular values within **1e-5 × the largest**; tables or Gram matrices closer than
# 1e-3 (relative) count as the same.
#
# <details><summary>Hint 1: the idea</summary>
#
# A table is its singular values times two bases: U (token side) and V (column side). Keep the
# values, throw both bases away, and put random orthonormal ones in their place. Everything that
# only depends on the values (rank, norm, how the norm is spread) stays; which tokens share which
# directions becomes random.
# </details>
#
# <details><summary>Hint 2: the approach</summary>
#
# Read the table's singular values. For each side, draw a Gaussian matrix with min(V, d) columns
# from your generator, in the table's dtype, and orthonormalise its columns (a QR decomposition
# does it; multiplying each column by the sign of R's diagonal entry makes the basis uniformly
# distributed). Then the control is the left basis, with its columns scaled by the singular values,
# times the transpose of the right basis.
# </details>
#
# <details><summary>Hint 3: the pitfalls</summary>
#
# The check names each of these. A full-rank random table rescaled to the same norm is not rank
# matched. Singular values scaled by a constant (unit singular values, a norm of 1) give the wrong
# scale; a flat spectrum with the right norm is not the same spectrum either. A permutation of the
# rows (or sign flips) keeps the signature's geometry: every token keeps a signature row. Rotating
# only one side keeps the other side's singular vectors, and the left ones *are* the token
# geometry. Drawing from torch's global generator makes the table nondeterministic; reseeding it
# changes every later draw; ignoring the seed gives every seed the same table. And float32
# arithmetic on a float64 table loses its small singular values (rank loss) or adds noise ones.
# </details>

# %%
def rank_matched_control(table: torch.Tensor, seed: int) -> torch.Tensor:
    """[V, d]: the table's singular values on random orthonormal bases of both sides, drawn with ``seed``."""
    ### BEGIN SOLUTION
    V, d = table.shape
    r = min(V, d)
    generator = torch.Generator().manual_seed(seed)
    bases = []
    for n in (V, d):
        q, upper = torch.linalg.qr(torch.randn(n, r, generator=generator, dtype=table.dtype))
        bases.append(q * torch.sign(torch.diagonal(upper)))
    return (bases[0] * torch.linalg.svdvals(table)) @ bases[1].T
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_11_rank_matched_control(rank_matched_control)

# %% [markdown]
# **(b)** Write `signature_vs_control(task, d, hidden, steps, seeds, make_control)`: lesson 11's
# frozen race with two conditions,
#
# * `"signature"`: the ΔS¹⁺²⁺³ table of `task` at width d and the matched norm √V — the library's
#   `signature_embedding`, handed `task.population` (the check compares onsets step for step, and a
#   table whose columns are rotated races slightly differently), the same table for every seed;
# * `"control"`: `make_control(signature, 100 + s)` for model seed s (100 + s, as lesson 11 draws
#   its random tables, so that a table never shares a random stream with the model's own init).
#
# Freeze each in a fresh Emb-MLP of width d with `hidden` hidden units, W1 and W2 at their γ = 1
# init of seed s (lesson 11's `frozen_ensemble`), train every model in one run by full-batch GD at
# lr 1 for `steps` steps, recording every 10, and return `{"signature": ..., "control": ...}`, each
# an integer tensor [n_seeds, n_stairs]: the step at which each seed is halfway down each stair
# (lesson 11's `steps_to_plateaus`, −1: never).
#
# The check hands in its own `make_control` and compares your onsets with the reference's, first on
# a small race, then on lesson 11's comparison scaled down to run in about a second (the hierarchy
# task with blocks of 6 tokens, V = 18, d = 16, 32 hidden units, 500 steps, seeds 0–2). On that one
# it also asks the lesson's question: the signature table must be halfway down the last stair in
# every seed at least 100 steps before its control (a control that never gets there counts as
# infinitely late).
#
# <details><summary>Hint 1: the idea</summary>
#
# Only the table differs between the two conditions: the rest of every model is the fresh init of
# its own seed, only W1 and W2 learn, and both conditions train side by side in one batched run.
# Read the onsets with the lesson's rule, then split them by condition.
# </details>
#
# <details><summary>Hint 2: the approach</summary>
#
# Build the signature table once. Give the frozen-ensemble builder one table-making function per
# condition (a function of the seed), with `hidden` passed on to the model; train; read every
# model's onsets; and pick each condition's rows using the names the builder returns.
# </details>
#
# <details><summary>Hint 3: the pitfalls</summary>
#
# The check names each of these: the control's seed is 100 + s, not s, and comes from the
# `make_control` you are handed; the signature table has orders 1, 2 **and** 3 and the norm √V; the
# tables stay frozen; W1 and W2 start at γ = 1; record every 10 steps; halfway down is below the
# midpoint, not below the lower level; and the builder lists its models condition-major (every
# seed of one table, then every seed of the next), so do not interleave the rows.
# </details>

# %%
def signature_vs_control(task: Task, d: int, hidden: int, steps: int, seeds, make_control) -> dict[str, torch.Tensor]:
    """Each seed's onset of every stair [n_seeds, n_stairs] for the frozen ΔS¹⁺²⁺³ table and for its control."""
    ### BEGIN SOLUTION
    signature = signature_embedding(task.population, d, (1, 2, 3), task.vocab_size**0.5)
    tables = {"signature": lambda s: signature, "control": lambda s: make_control(signature, 100 + s)}
    model, names = frozen_ensemble(task, tables, list(seeds), d=d, hidden=hidden)
    run = train(model, task.population, steps, lr=1.0, record_every=10, progress=False)
    onsets = steps_to_plateaus(run, task.plateau_levels())
    return {name: onsets[[k for k, n in enumerate(names) if n == name]] for name in tables}
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_11_signature_vs_control(signature_vs_control)

# %% [markdown]
# **Think, then run.** Your control keeps the signature table's rank, singular values and norm;
# only which tokens share which directions is random. Lesson 11's full-rank random table of the
# same norm got halfway down the second stair but never the last. Predict before you run the race
# below (the check's scaled-down task, your own control, then that full-rank random table handed in
# as the "control"): is the rank-matched control closer to the signature table, or to the full-rank
# random one — or behind both? Then explain what you see. If concentrating the norm on six
# directions were what made the signature table fast, what would the rank-matched control do? Your
# answer says where the signature table's head start comes from. (Why could six random directions
# shared by 18 tokens be *worse* than a random table of full rank?)

# %% tags=["exercise"]
# Once both checks pass, run the race (about 3 s), e.g.:
# small = hierarchy_task(block=6)
# full_rank = lambda table, seed: rescale(random_embedding(table.shape[0], table.shape[1], 1.0, seed), float(table.norm()))
# for name, control in [("rank-matched control", rank_matched_control), ("full-rank random", full_rank)]:
#     race = signature_vs_control(small, 16, 32, 500, [0, 1, 2], control)
#     print(f"{name:20s} halfway down stairs 2 and 3, per seed: signature {race['signature'][:, 1:].tolist()}, "
#           f"control {race['control'][:, 1:].tolist()}")

# %% tags=["solution"]
small = hierarchy_task(block=6)
full_rank = lambda table, seed: rescale(random_embedding(table.shape[0], table.shape[1], 1.0, seed), float(table.norm()))
for name, control in [("rank-matched control", rank_matched_control), ("full-rank random", full_rank)]:
    race = signature_vs_control(small, 16, 32, 500, [0, 1, 2], control)
    print(f"{name:20s} halfway down stairs 2 and 3, per seed: signature {race['signature'][:, 1:].tolist()}, "
          f"control {race['control'][:, 1:].tolist()}")

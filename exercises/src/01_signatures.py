# %% [markdown]
# # Exercises 01 — Probability signatures
#
# Four exercises on lesson 01. Fill in each `# YOUR CODE HERE`, then run the check cell below it:
# it prints `PASS check_01_…` or stops with a hint that says which case failed and how. Checks
# also try *hidden* cases (other tasks, sampled data, non-uniform weights), so write code for any
# `Dataset`, not just the example. When you are done, grade the whole notebook from a terminal:
#
# ```bash
# ctxlab grade exercises/01_signatures.ipynb      # or: pytest --nbval-lax exercises/01_signatures.ipynb
# ```
#
# | # | exercise | difficulty | time |
# |---|---|---|---|
# | 1 | the order-1 signature from counts | ★★☆ | 15 min |
# | 2 | a conditional entropy | ★★☆ | 10 min |
# | 3 | the incremental pair term | ★★★ | 20 min |
# | 4 | how many distinct rows | ★☆☆ | 10 min |
#
# Use only torch and the fields of a `Dataset` (`x`, `targets()`, `weights`, `vocab_size`,
# `seq_len`, `n_labels`); the library functions of `ctxlab.signatures` are what the checks compare
# with.

# %%
import torch

import ctxlab.checks
from ctxlab.tasks import Dataset, hierarchy_task

data = hierarchy_task().population
V, L, C = data.vocab_size, data.seq_len, data.n_labels
print(f"hierarchy task: N={data.n}, L={L}, V={V}, C={C}")

# %% [markdown]
# ## Exercise 1 — the order-1 signature from counts (★★☆, 15 min)
#
# Write `order1_signature(data)` returning the raw order-1 token→label signature, a float tensor of
# shape [V, L·C] whose column `i*C + y` of row `s` is P(y | x_i = s). Where token s never occurs
# at position i, put P(y) instead. Count with the row weights and the label distributions
# `data.targets()` [N, C]; do not loop over rows.
#
# <details><summary>Hint</summary>
#
# `mass = data.weights[:, None] * data.targets()` is the probability mass each row puts on each
# label. For one position i, `torch.zeros(V, C).index_add_(0, data.x[:, i], mass)` is the table
# P(x_i = s, y); divide each row by its sum P(x_i = s) where that sum is positive. `torch.where`
# picks P(y) = `mass.sum(0)` for the empty rows; `torch.cat(blocks, dim=1)` joins the positions.
# </details>

# %%
def order1_signature(data: Dataset) -> torch.Tensor:
    """P(y | x_i = s) for every token s (rows) and (position i, label y) (columns): [V, L*C]."""
    ### BEGIN SOLUTION
    V, L, C = data.vocab_size, data.seq_len, data.n_labels
    mass = data.weights[:, None].double() * data.targets().double()  # [N, C]
    p_y = mass.sum(0)
    blocks = []
    for i in range(L):
        table = torch.zeros(V, C, dtype=torch.float64).index_add_(0, data.x[:, i], mass)
        p_s = table.sum(1, keepdim=True)
        blocks.append(torch.where(p_s > 0, table / p_s.clamp_min(1e-300), p_y))
    return torch.cat(blocks, dim=1)
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_01_order1_signature(order1_signature)

# %% [markdown]
# ## Exercise 2 — a conditional entropy (★★☆, 10 min)
#
# Write `conditional_entropy_of(data, positions)` returning H(Y | X_S) in **nats** for the
# positions S in the tuple `positions` (possibly empty, in any order), as a Python float. On the
# hierarchy task, `positions=(0,)` should give 0.9503.
#
# <details><summary>Hint</summary>
#
# Give each row one integer for its context: start from zeros and, for each position p, do
# `key = key * V + data.x[:, p]`. Count the mass into a table [V**len(positions), C] with
# `index_add_`, so the table is P(x_S, y). Then
# H = −Σ P(x_S, y) ln P(y | x_S), summing only over entries with P(x_S, y) > 0.
# </details>

# %%
def conditional_entropy_of(data: Dataset, positions: tuple[int, ...]) -> float:
    """H(Y | X_positions) in nats: the best loss a model reaches from the tokens at ``positions``."""
    ### BEGIN SOLUTION
    V, C = data.vocab_size, data.n_labels
    mass = data.weights[:, None].double() * data.targets().double()
    key = torch.zeros(data.n, dtype=torch.long)
    for p in positions:
        key = key * V + data.x[:, p]
    table = torch.zeros(V ** len(positions), C, dtype=torch.float64).index_add_(0, key, mass)
    conditional = table / table.sum(1, keepdim=True).clamp_min(1e-300)
    seen = table > 0
    return float(-(table[seen] * conditional[seen].log()).sum())
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_01_conditional_entropy(conditional_entropy_of)

# %% [markdown]
# ## Exercise 3 — the incremental pair term (★★★, 20 min)
#
# Write `pair_interaction(data, i, j)` returning the order-2 interaction term of positions i ≠ j,
# a tensor [V, V, C] whose entry [s, t, y] is
#
# P(y | x_i = s, x_j = t) − P(y | x_i = s) − P(y | x_j = t) + P(y),
#
# and 0 for every pair (s, t) that never occurs at positions (i, j), i.e. no row holds both
# (on sampled data s may occur at i and t at j in different rows, yet never together). Axis 0 is
# the token at position i, axis 1 the token at position j. On the xor task
# (`ctxlab.tasks.xor_task()`), the whole label signal beyond the group lives in this term.
#
# <details><summary>Hint</summary>
#
# Build three conditional tables the way exercise 1 does: P(y | x_i = s) [V, C], P(y | x_j = t)
# [V, C] and, with the key `data.x[:, i] * V + data.x[:, j]`, P(y | x_i = s, x_j = t) reshaped to
# [V, V, C]. Combine them with broadcasting (`[:, None, :]` and `[None, :, :]`), then multiply by
# a mask [V, V, 1] that is 1 where P(x_i = s, x_j = t) > 0.
# </details>

# %%
def pair_interaction(data: Dataset, i: int, j: int) -> torch.Tensor:
    """What the pair (x_i, x_j) says about y beyond each token alone: [V, V, C]."""
    ### BEGIN SOLUTION
    V, C = data.vocab_size, data.n_labels
    mass = data.weights[:, None].double() * data.targets().double()

    def conditional(key: torch.Tensor, size: int) -> tuple[torch.Tensor, torch.Tensor]:
        table = torch.zeros(size, C, dtype=torch.float64).index_add_(0, key, mass)
        total = table.sum(1, keepdim=True)
        return table / total.clamp_min(1e-300), total > 0

    p_st, seen = conditional(data.x[:, i] * V + data.x[:, j], V * V)
    p_s, _ = conditional(data.x[:, i], V)
    p_t, _ = conditional(data.x[:, j], V)
    p_y = mass.sum(0)
    delta = p_st.reshape(V, V, C) - p_s[:, None, :] - p_t[None, :, :] + p_y
    return delta * seen.reshape(V, V, 1)
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_01_pair_interaction(pair_interaction)

# %% [markdown]
# ## Exercise 4 — how many distinct rows? (★☆☆, 10 min)
#
# Two tokens whose signature rows are equal look the same to a model that has learned only that
# signature. Write `n_distinct_rows(matrix, atol)` returning how many different rows `matrix`
# has, counting two rows as equal when every entry differs by at most `atol` (floating-point
# rows are rarely *exactly* equal). Use the `atol` you are given, and compare rows with each other:
# rounding to a grid is not the same relation (two rows 1e-10 apart can round to different grid
# points). The check's rows never chain (no a ≈ b ≈ c with a, c apart). Then use it: how many
# groups do the key tokens form under the order-1 signature, and the anchor-1 tokens under the
# order-1 and the order-2 terms?
#
# <details><summary>Hint</summary>
#
# Keep a list of representative rows. Walk over the rows; a row starts a new group unless
# `(row - rep).abs().max() <= atol` for some representative already kept. Return the length of
# the list. (`torch.unique` compares exactly, which is not what you want.)
# </details>

# %%
def n_distinct_rows(matrix: torch.Tensor, atol: float = 1e-6) -> int:
    """Number of rows that differ from every other kept row by more than ``atol`` somewhere."""
    ### BEGIN SOLUTION
    kept: list[torch.Tensor] = []
    for row in matrix.double():
        if all(float((row - rep).abs().max()) > atol for rep in kept):
            kept.append(row)
    return len(kept)
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_01_distinct_rows(n_distinct_rows)

# %% tags=["exercise"]
# Once the checks pass, count the groups, e.g.:
# sig1 = order1_signature(data)
# print("key tokens, order 1:", n_distinct_rows(sig1[:9]))

# %% tags=["solution"]
sig1 = order1_signature(data)
pair01 = pair_interaction(data, 1, 0)  # anchor-1 token s, key t: [V, V, C]
print("key tokens, order 1:     ", n_distinct_rows(sig1[:9]))
print("anchor-1 tokens, order 1:", n_distinct_rows(sig1[9:18]))
print("anchor-1 tokens, order 2:", n_distinct_rows(pair01[9:18].reshape(9, -1)))

# %% [markdown]
# **Think.** The keys form three groups at order 1 (one per attribute) while the anchor-1 tokens
# form one group at order 1 and three at order 2. What does that predict about *when* a model's
# embeddings of anchor-1 tokens start to move apart?

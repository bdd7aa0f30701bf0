# %% [markdown]
# # Exercises 01 — Probability signatures
#
# Five exercises on lesson 01, the last a build in three parts. Fill in each `# YOUR CODE HERE`,
# then run the check cell below it: it prints `PASS check_01_…` or stops with a hint that says which
# case failed and how. Checks also try *hidden* cases (other tasks, sampled data, non-uniform
# weights), so write code for any `Dataset`, not just the example. When you are done, grade the whole notebook from a terminal:
#
# ```bash
# ctxlab grade exercises/01_signatures.ipynb      # or: pytest --nbval-lax exercises/01_signatures.ipynb
# ```
#
# | # | exercise | difficulty | time |
# |---|---|---|---|
# | 1 | the order-1 signature from counts | ★★☆ | 15 min |
# | 2 | a conditional entropy | ★★☆ | 15 min |
# | 3 | the incremental pair term | ★★★ | 20 min |
# | 4 | how many distinct rows | ★☆☆ | 10 min |
# | 5 | build it: every order's increment, their Gram matrix, and what each rung of the ladder is made of | ★★★ | 45 min |
#
# Use only torch, `itertools`, the fields of a `Dataset` (`x`, `targets()`, `weights`, `vocab_size`,
# `seq_len`, `n_labels`) and your own earlier functions; the library functions of `ctxlab.signatures` are what the checks compare
# with.

# %%
import itertools

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
# <details><summary>Hint 1: the idea</summary>
#
# P(y | x_i = s) is a ratio of two probabilities: the mass of the rows that hold s at position i
# and carry label y, over the mass of all rows that hold s at position i. One table per position,
# the joint mass P(x_i = s, y) [V, C], gives both: its entries and its row sums.
# </details>
#
# <details><summary>Hint 2: the approach</summary>
#
# Give every row its mass per label: its weight times its label distribution. For each position,
# add all rows' masses at once into the table row of the token each row holds there (a scatter-add
# along the token axis, not a Python loop over rows). Divide each table row by its total where the
# total is positive; where it is zero, use the label marginal P(y), the mass summed over all rows.
# Put the positions' tables side by side, position 0 first.
# </details>
#
# <details><summary>Hint 3: the pitfalls</summary>
#
# Tokens are the rows and (position, label) the columns, with one position's labels kept together
# (column i·C + y, not y·L + i). Divide the joint by P(x_i = s): every (token, position) block sums
# to 1 over the labels. A token that never sits at a position gets P(y) there, not zeros. Use the
# label distributions of `targets()`, not one label per row, and the row weights, not a plain count.
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
# ## Exercise 2 — a conditional entropy (★★☆, 15 min)
#
# Write `conditional_entropy_of(data, positions)` returning H(Y | X_S) in **nats** for the
# positions S in the tuple `positions` (possibly empty, in any order), as a Python float. On the
# hierarchy task, `positions=(0,)` should give 0.9503.
#
# <details><summary>Hint 1: the idea</summary>
#
# H(Y | X_S) = −Σ P(x_S, y) ln P(y | x_S), summed over contexts x_S and labels y. It needs the same
# joint table as exercise 1, but keyed by the whole context x_S instead of one token: once every
# possible context has a number of its own, a context of several positions is one index.
# </details>
#
# <details><summary>Hint 2: the approach</summary>
#
# Number each row's context by reading its tokens at the positions of S as the digits of a number in
# base V (with no positions, every row gets the same number and the table is P(y) alone). Add the
# rows' weighted label masses into a table with one row per possible context; dividing each row by
# its total gives P(y | x_S). Sum the joint times the log of the conditional over the entries whose
# joint mass is positive, and change the sign.
# </details>
#
# <details><summary>Hint 3: the pitfalls</summary>
#
# Nats, as the loss uses: the natural logarithm, not log₂. The weight in front is the joint
# P(x_S, y) but the logarithm takes the conditional P(y | x_S); the joint in both places is the
# joint entropy H(Y, X_S). Condition on the positions you are given (not on none, which is H(Y)).
# Entries of zero mass add nothing: leave them out rather than meet 0 · log 0. Weighted label
# distributions, not one label per row or a plain count; and an entropy is never negative.
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
# <details><summary>Hint 1: the idea</summary>
#
# Inclusion–exclusion: what the pair says about y, minus what each token says alone, plus the
# marginal that the two subtractions took away twice. Each of the four terms is a conditional table
# of the kind exercise 1 builds; one of them is keyed by the pair of tokens.
# </details>
#
# <details><summary>Hint 2: the approach</summary>
#
# You need three conditional tables (by the token at i, by the token at j, by the pair) and the
# label marginal; the pair table is keyed by one number per (s, t). Once all four live on the same
# V × V × C grid, the increment is their signed sum, and cells of pairs that no row holds together
# must come out as zero.
# </details>
#
# <details><summary>Hint 3: the pitfalls</summary>
#
# Axis 0 is the token at i, axis 1 the token at j. There are four terms: P(y | s, t) on its own is
# not the increment, and leaving out the added-back P(y) is the usual slip. Zero a cell only where
# the pair never occurs: on sampled data s can occur at i and t at j, each in other rows, and still
# never together, so the mask comes from the pair's own mass, not from the two tokens' masses.
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
# <details><summary>Hint 1: the idea</summary>
#
# Two rows are the same when their largest entry-wise difference is at most `atol`. Count the
# groups by keeping one representative row per group: a row that matches no representative is
# the first of a new group.
# </details>
#
# <details><summary>Hint 2: the approach</summary>
#
# Two rows are equal when their largest entry-wise difference is at most `atol`. Count groups the
# way you would by hand with a pile of cards: a row either matches a group you already have or
# starts a new one. Decide what a group is represented by, and make sure a row is compared with
# every group, not only with its neighbour in the list.
# </details>
#
# <details><summary>Hint 3: the pitfalls</summary>
#
# Use the `atol` you are given. Count rows (tokens), not columns. An exact comparison counts
# floating-point near-copies as different rows; rounding to a grid splits two rows that straddle a
# grid line and merges rows more than `atol` apart. Equal rows need not be neighbours: comparing
# each row only with the one before it misses them.
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


# %% [markdown]
# ## Exercise 5 — build it: the orders are orthogonal, and what each rung is made of (★★★, 45 min)
#
# The lesson's last section made two claims and checked them once, on the hierarchy task, with the
# library's `interaction`: when the positions are independent, the incremental terms Δ_S of
# different position sets are orthogonal, and their squared sizes add up to the whole signal
# P(y | x) − P(y). Here you build that computation yourself, for any number of positions, test the
# claim where it should hold and where it should not, and use it to take the entropy ladder apart:
# which orders each rung is made of.
#
# Three parts, each with its check. All three use the lesson's inner product under the data
# distribution, for two functions f, g of a row n and a label y:
#
# $$\langle f, g \rangle = \sum_n w_n \sum_y f(n, y)\, g(n, y) \qquad (w_n = \text{data.weights; labels summed, not weighted}).$$
#
# Every check compares your numbers with the library's within **1e-5** (absolute) on other data
# too: the xor tasks, hierarchy tasks with other blocks, values and mixes (up to four positions),
# random label tables over up to five independent positions, a position that always holds the same
# token, skewed token frequencies with rows of weight 0, and three kinds of data whose positions
# are *not* independent (random row weights, the lesson's coupled data, a small sample).
#
# ### 5a — the increment of any set of positions (20 min)
#
# Write `increment_on_rows(data, positions)` returning Δ_S at every row of the data, a float tensor
# [N, C], where S is the tuple `positions` (distinct positions, in any order, possibly empty):
#
# $$\Delta_S(n, y) = \sum_{T \subseteq S} (-1)^{|S| - |T|}\, P(y \mid x_T = \text{the tokens of row } n \text{ at } T).$$
#
# T runs over all 2^|S| subsets of S, the empty one included, and P(y | x_∅) = P(y): so
# Δ_∅ = P(y), Δ_{i} = P(y | x_i) − P(y), and Δ_{i,j} is exercise 3's pair term read at the rows.
# At a row whose tokens at S carry no mass (a row of weight 0 whose context never occurs), put 0.
#
# <details><summary>Hint 1: the idea</summary>
#
# Each term of the sum is a conditional distribution of the kind exercises 1 and 2 count, keyed by
# the row's tokens at T instead of one token, and read back at every row. Inclusion–exclusion is
# then bookkeeping: one term per subset, with a sign fixed by how many positions the subset leaves
# out of S.
# </details>
#
# <details><summary>Hint 2: the approach</summary>
#
# Write one small routine that, for a tuple of positions T, numbers every row's context at T (the
# base-V digits of exercise 2; with no positions every row gets the same number), adds the rows'
# weighted label masses into one table row per context, divides each table row by its total, and
# hands back, for every data row, the table row of its own context. Walk over the subsets of S by
# size, add each one's conditional with its sign, and finally zero the rows whose context at S has
# no mass.
# </details>
#
# <details><summary>Hint 3: the pitfalls</summary>
#
# All the subsets, not only those one smaller than S, and not only the pair formula's four terms:
# a triple has three pairs too. S itself enters with +; a subset that leaves out m positions gets
# (−1)^m. The empty set is a subset: its term is P(y), and Δ of the empty set is P(y), not 0. Count
# with the row weights and the label distributions of `targets()`. At a row of weight 0 the
# conditional of the full context is 0 / 0: clamp the division and zero that row, do not leave a NaN.
# </details>

# %%
def increment_on_rows(data: Dataset, positions: tuple[int, ...]) -> torch.Tensor:
    """Delta_S at every row: what the tokens at ``positions`` say about y beyond every smaller set: [N, C]."""
    ### BEGIN SOLUTION
    V, C = data.vocab_size, data.n_labels
    mass = data.weights[:, None].double() * data.targets().double()
    S = tuple(positions)

    def conditional_at_rows(T: tuple[int, ...]) -> tuple[torch.Tensor, torch.Tensor]:
        key = torch.zeros(data.n, dtype=torch.long)
        for p in T:
            key = key * V + data.x[:, p]
        table = torch.zeros(V ** len(T), C, dtype=torch.float64).index_add_(0, key, mass)
        total = table.sum(1, keepdim=True)
        return (table / total.clamp_min(1e-300))[key], (total > 0)[key]

    delta = torch.zeros(data.n, C, dtype=torch.float64)
    for size in range(len(S) + 1):
        for T in itertools.combinations(S, size):
            delta = delta + (-1) ** (len(S) - size) * conditional_at_rows(T)[0]
    return delta * conditional_at_rows(S)[1]
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_01_increment_on_rows(increment_on_rows)

# %% [markdown]
# ### 5b — the Gram matrix of the orders (10 min)
#
# Write `order_gram(data)` returning the [M, M] matrix of inner products ⟨Δ_S, Δ_T⟩ over the
# M = 2^L − 1 non-empty position sets, ordered by size and, within a size, as
# `itertools.combinations(range(L), k)` lists them (the lesson's `subsets`). The check holds it to the
# lesson's claim first: where the positions are independent every off-diagonal entry is 0 (within
# the tolerance), and where they are not, some increments overlap.
#
# <details><summary>Hint 1: the idea</summary>
#
# A Gram matrix holds every inner product between a list of vectors. Here the vectors are the
# increments of 5a, each a function of (row, label), and the inner product weighs rows by their
# probability and simply adds over labels.
# </details>
#
# <details><summary>Hint 2: the approach</summary>
#
# List the non-empty sets in the stated order, evaluate each one's increment at the rows with 5a and
# stack them into one [M, N, C] tensor. Multiply every pair entry by entry, weigh each row by its
# weight, and sum over rows and labels: one contraction gives the whole matrix.
# </details>
#
# <details><summary>Hint 3: the pitfalls</summary>
#
# Inner products, not cosine similarities: the diagonal holds the squared sizes. Sum over labels,
# do not average them. Weigh rows by `data.weights`, not by 1/N (the two agree only on uniform
# weights, which the check does not always use). The sets run over every size from 1 to L, the empty
# set excluded, sorted by size first. Use the increments, not the raw P(y | x_S) − P(y).
# </details>

# %%
def order_gram(data: Dataset) -> torch.Tensor:
    """<Delta_S, Delta_T> under the data over the non-empty position sets, by size: [M, M]."""
    ### BEGIN SOLUTION
    L = data.seq_len
    sets = [S for k in range(1, L + 1) for S in itertools.combinations(range(L), k)]
    terms = torch.stack([increment_on_rows(data, S) for S in sets])  # [M, N, C]
    return torch.einsum("anc,bnc,n->ab", terms, terms, data.weights.double())
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_01_order_gram(order_gram)

# %% [markdown]
# ### 5c — what each rung of the ladder is made of (15 min)
#
# The **squared signal** of a position set S is ‖P(y | x_S) − P(y)‖², the inner product of
# P(y | x_S) − P(y) with itself: how far, on average, the tokens at S move the label distribution.
# (It is also how much the best squared-error loss drops when a model may use the positions S.)
# Write `ladder_budget(data, rungs)` returning a float tensor [R, 3] for a list `rungs` of R position
# sets (tuples; any order, possibly empty). Row r describes the set S = `rungs[r]`:
#
# 0. the entropy drop H(Y) − H(Y | X_S) in nats (exercise 2 computes both entropies);
# 1. the squared signal of S;
# 2. the sum of the squared sizes ⟨Δ_T, Δ_T⟩ over the non-empty sets T inside S.
#
# Two facts hold your numbers, and the check tests both before it compares them with the library:
# where the positions are independent, column 1 equals column 2 (Pythagoras: a rung's signal is
# paid for exactly by the orthogonal increments of its own positions); and always, the entropy drop
# lies between half the squared signal (Pinsker's inequality) and the squared signal divided by the
# smallest P(y) (the χ² bound).
#
# <details><summary>Hint 1: the idea</summary>
#
# Everything is already in the Gram matrix of 5b. Inclusion–exclusion inverts: adding Δ_T over all
# T inside S, the empty set included, gives back P(y | x_S). So P(y | x_S) − P(y) is the sum of the
# increments of the non-empty sets inside S, and its squared size is the sum of all their inner
# products with each other; the squared sizes alone are only the diagonal of that.
# </details>
#
# <details><summary>Hint 2: the approach</summary>
#
# Compute the Gram matrix once. For each set S of `rungs`, find the indices of the non-empty sets T
# that lie inside S (compare them as sets: S may come unsorted), and cut out the square block of
# the Gram matrix on those indices: the block's total is the squared signal, its trace the sum of
# the squared sizes. (You can also measure the squared signal straight from the conditional at the
# rows; the two agree on any data.) The entropy drop takes two calls of exercise 2's function.
# </details>
#
# <details><summary>Hint 3: the pitfalls</summary>
#
# Nats, and a drop from H(Y), not the level H(Y | X_S). Column 2 takes every non-empty T inside S
# (not only S itself, and not every set of size up to |S|, which brings in other positions), and only
# their squared sizes, not the inner products between them. Do not take the squared signal to be the
# sum of the pieces: that is the fact the check tests, and it fails when the positions are coupled.
# The empty set's row is all zeros. One row per set, three columns.
# </details>

# %%
def ladder_budget(data: Dataset, rungs: list[tuple[int, ...]]) -> torch.Tensor:
    """Per position set: (entropy drop in nats, squared signal, sum of its increments' squared sizes): [R, 3]."""
    ### BEGIN SOLUTION
    L = data.seq_len
    sets = [S for k in range(1, L + 1) for S in itertools.combinations(range(L), k)]
    gram = order_gram(data)
    top = conditional_entropy_of(data, ())
    rows = []
    for S in rungs:
        inside = [a for a, T in enumerate(sets) if set(T) <= set(S)]
        block = gram[inside][:, inside]
        rows.append([top - conditional_entropy_of(data, tuple(S)), float(block.sum()), float(block.diagonal().sum())])
    return torch.tensor(rows, dtype=torch.float64).reshape(len(rungs), 3)
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_01_ladder_budget(ladder_budget)

# %% [markdown]
# Once the checks pass, take the ladder apart on the hierarchy task and on the lesson's coupled data
# (the rows whose first anchor shares the key's attribute), rung by rung.

# %%
attr = hierarchy_task().info["attribute"]
same = attr[data.x[:, 0]] == attr[data.x[:, 1]]
coupled = Dataset(data.x[same], data.y[same], V, C, data.weights[same] / data.weights[same].sum())
ladder_sets = [(), (0,), (0, 1), (0, 1, 2)]

# %% tags=["exercise"]
# e.g. print(ladder_budget(data, ladder_sets)) and print(ladder_budget(coupled, ladder_sets))

# %% tags=["solution"]
for name, d in (("hierarchy task", data), ("coupled data", coupled)):
    print(name)
    for S, (drop, signal, pieces) in zip(ladder_sets, ladder_budget(d, ladder_sets).tolist()):
        ratio = f"{drop / signal:.2f}" if signal > 0 else "  - "
        print(f"  {str(S):10} entropy drop {drop:.4f}   squared signal {signal:.4f}   pieces {pieces:.4f}   drop / signal {ratio}")

# %% [markdown]
# **Think.** On the hierarchy task each rung's pieces add up to its signal, and the entropy drop is
# 1.4 to 1.9 times the squared signal. Why near C/2 = 1.5 when the signal is weak (expand
# H(Y) − H(Y | X_S) to second order around a uniform P(y)), and why more as a rung's predictions
# sharpen? On the coupled data the pieces of the full set add up to three times its signal: which
# increments overlap there, and what would an alignment score with "order 2" then measure?

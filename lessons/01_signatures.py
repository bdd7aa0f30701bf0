# %% [markdown]
# # Lesson 01 — Probability signatures
#
# **Learning goals.** After this lesson you can
# 1. say what a *probability signature* of order k is, for the label and for the context;
# 2. compute signatures of order 0, 1, 2 and 3 on a task whose label has a known ladder of orders;
# 3. read a signature heat map and its token-by-token cosine-similarity matrix;
# 4. compute the conditional entropies H(Y | X_S) and explain why they are the losses a model can
#    reach with order-k statistics;
# 5. explain why the course uses *incremental* signatures, and check numerically that their orders
#    are orthogonal.
#
# **Prerequisites.** Conditional probability, entropy and cross-entropy; PyTorch tensor indexing.
# No training happens in this lesson.
#
# **Run time.** About 5 s on a 2-core machine (measured by `benchmarks/notebook_budget.py`); nothing needs a GPU.

# %% [markdown]
# ## Why signatures?
#
# A language model turns each token into a vector, its *embedding*, and learns those vectors from
# data. Which structure do the vectors pick up, and in what order? The answer this course builds
# towards: from small initialization, embeddings first arrange themselves like the simplest
# statistic of a token (which labels follow it, whatever the context), and only later like
# statistics that involve one, two, more context tokens. To even state that, we need those
# statistics as objects we can compute and compare. A **probability signature** is such an object:
# a table with one row per token, built from conditional probabilities of the data.
#
# This lesson computes signatures on a small synthetic task where we know exactly how much of the
# label each order explains. Later lessons train models and compare their embeddings with these rows.

# %%
import itertools
import math

import matplotlib.pyplot as plt
import torch

from ctxlab import plots
from ctxlab.signatures import (
    conditional_entropy,
    context_signature,
    entropy_ladder,
    interaction,
    joint,
    label_signature,
)
from ctxlab.tasks import Dataset, hierarchy_task

torch.set_printoptions(precision=4, sci_mode=False)

# %% [markdown]
# ## The hierarchy task
#
# Sequences have three positions. Position 1 holds a **key** token `k0 … k8`, position 2 an
# **anchor** `a10 … a18`, position 3 a second anchor `a20 … a28`. Each token carries an
# *attribute* in {0, 1, 2} (its index within its block, mod 3). The label y ∈ {0, 1, 2} is drawn as
#
# * with probability 0.4: attribute(x1) — needs only the key (an **order-1** rule);
# * with probability 0.3: attribute(x1) + attribute(x2) mod 3 — needs key *and* first anchor (**order 2**);
# * with probability 0.3: attribute(x1) + attribute(x2) + attribute(x3) mod 3 — needs all three (**order 3**).
#
# Lesson 00 trained a binary version of this task (each token carried a bit, the labels were 0 and
# 1); here the attributes and the labels take three values, so the levels below are not lesson 00's.
# Lesson 03 explains why the course uses both.
#
# The task is small enough to hold its whole **population**: all 9³ = 729 sequences, each with
# probability 1/729 and an exact label distribution. Everything below is computed exactly, no sampling.

# %%
task = hierarchy_task()
data = task.population
print(task.description)
print(f"{data.n} sequences of length {data.seq_len}, vocabulary {data.vocab_size}, {data.n_labels} labels")
print("attribute of each token:", dict(zip(task.token_names, task.info["attribute"].tolist())))

# %% [markdown]
# A `Dataset` holds token ids `x` [N, L], labels `y` (here soft: a distribution per row, [N, C]) and
# row weights `weights` [N] summing to 1. `data.targets()` always returns label distributions
# [N, C], one-hot for integer labels, so the same counting code serves a population and a sample.

# %%
names = task.token_names
for row in (0, 1, 100):
    tokens = [names[t] for t in data.x[row].tolist()]
    print(tokens, "-> P(y) =", [round(p, 2) for p in data.targets()[row].tolist()], f"weight {data.weights[row]:.5f}")

# %% [markdown]
# > **Think.** Before reading on: if you could look at only *one* position, which would you pick?
# > How much would the second anchor alone tell you about y?

# %% [markdown]
# ## Order 0 and order 1: what a token says about the label on its own
#
# The **order-0 signature** is P(y), the label distribution knowing nothing. The **order-1
# token→label signature** gives token s the row
#
# $$S^1_{s,(i,y)} = P(y \mid x_i = s),$$
#
# one block of C columns per position i, so S¹ has shape [V, L·C]. It is computed by weighted
# counting: `joint(data, (i,))` is the table P(x_i = s, y) [V, C]; dividing each row by its sum
# P(x_i = s) gives the conditional. Token s never sits at position i for most (s, i) here (keys
# live only at position 1); there the conditional is undefined and the *raw* signature fills in the
# best guess without it, P(y).

# %%
p_y = joint(data, ())
print("order 0, P(y) =", p_y)
table = joint(data, (0,))  # P(x_1 = s, y), [V, C]
print("P(y | x1 = k0) =", table[0] / table[0].sum())
print("P(y | x1 = k1) =", table[1] / table[1].sum())

# %% [markdown]
# `label_signature(data, order=1, form="raw")` stacks these rows for every token and position.
# Its `matrix` has shape [V, L·C] = [27, 9].

# %%
sig1_raw = label_signature(data, order=1, form="raw", names=names)
print("shape:", tuple(sig1_raw.matrix.shape))
print("k0 :", sig1_raw.matrix[0])
print("a10:", sig1_raw.matrix[9])

# %% [markdown]
# Key `k0` has attribute 0: its first block says y = 0 with probability 0.4 + 0.3·⅓ + 0.3·⅓ = 0.6.
# Anchor `a10` gets a flat row: averaged over the key, attribute(x1) + attribute(x2) is uniform,
# so **on its own an anchor says nothing about y**. Its order-2 role is invisible at order 1.

# %% [markdown]
# ## Orders 2 and 3, and the *incremental* form
#
# The **order-2** signature conditions on one more context token: token s at position i gets the
# entries P(y | x_i = s, x_j = t) over every other position j, every token t and every label y.
# Order 3 conditions on two context tokens. Raw high-order rows repeat what lower orders already
# say: averaging the raw order-2 entries over the context token t gives back the order-1 row. The
# **incremental** form keeps only what is new, by inclusion–exclusion:
#
# $$\Delta S^2_{s,(i,j,t,y)} = P(y \mid x_i{=}s, x_j{=}t) - P(y \mid x_i{=}s) - P(y \mid x_j{=}t) + P(y).$$
#
# The incremental order-1 term is P(y | x_i = s) − P(y), and order k uses all 2ᵏ subsets with
# alternating signs. First, check the redundancy of the raw form:

# %%
sig2_raw = label_signature(data, order=2, form="raw", names=names)
V, L, C = data.vocab_size, data.seq_len, data.n_labels
# block (i=0, j=1): columns (t, y) -> reshape to [V, V, C] and average over t with P(x_2 = t)
block = sig2_raw.matrix[:, : V * C].reshape(V, V, C).double()
p_t = joint(data, (1,)).sum(-1)  # P(x_2 = t)
averaged = (block * p_t[None, :, None]).sum(1)
print("max |average over t of raw order 2 - raw order 1| on the keys:",
      f"{float((averaged[:9] - sig1_raw.matrix[:9, :C]).abs().max()):.1e}")

# %% [markdown]
# Now the incremental signatures of orders 0 to 3. Order 0 has one column block (P(y) − P(y) = 0
# after centring, so we show P(y) itself); order 3 has 3·V²·C = 6561 columns. Most columns are zero
# for every token (pairs that never occur, such as a key with another key, and at order 2 the pair
# terms of (x1, x3) and (x2, x3), which vanish on this task), so the figure leaves those out and
# gives order 3 a row of its own, with equal columns put side by side (in their given order its
# 729 columns alias into stripes at one pixel each).

# %%
sigs = [label_signature(data, order=k, form="raw" if k == 0 else "incremental", names=names) for k in range(4)]
for s in sigs:
    print(f"{s.name:>16}: shape {tuple(s.matrix.shape)}")
fig = plots.signature_heatmaps(sigs, titles=["order 0: P(y)", "order 1: ΔS¹", "order 2: ΔS²", "order 3: ΔS³"],
                               block_width=C, drop_zero_columns=True)
plt.show()

# %% [markdown]
# Read the panels row by row. In ΔS¹ only the key rows (top 9) are non-zero, with a pattern that
# repeats every three keys (the attribute). In ΔS² the anchor-1 rows light up (paired with a key,
# the first anchor now matters) and the key rows carry a pair term too; the anchor-2 rows stay
# zero. In ΔS³ all three blocks of tokens carry signal. As numbers:

# %%
# NBVAL_CHECK_OUTPUT
roles = {role: task.role_tokens(role) for role in ("key", "anchor1", "anchor2")}
for sig in sigs[1:]:
    live = [role for role, ids in roles.items() if float(sig.matrix[ids].double().norm(dim=1).min()) > 1e-3]
    dead = [role for role, ids in roles.items() if float(sig.matrix[ids].double().norm(dim=1).max()) < 1e-6]
    print(f"{sig.name:>16}: non-zero rows {live}, zero rows {dead}")

# %% [markdown]
# > **Think.** Which tokens will look alike to a model that has only learned order-1 statistics?
# > Which pairs of tokens does order 2 tell apart that order 1 cannot?

# %% [markdown]
# ## Which tokens look alike: cosine-similarity matrices
#
# An embedding only matters up to the similarities between tokens, so we compare signatures the same
# way: the cosine similarity between every two rows, a [V, V] matrix. Blocks of high similarity
# are groups of tokens the signature cannot tell apart. (A row of zeros is similar to nothing.)

# %%
fig = plots.cosine_matrices(
    [sig1_raw, sigs[1], sigs[2], sigs[3]],
    titles=["order 1, raw", "order 1, incremental", "order 2, incremental", "order 3, incremental"],
)
plt.show()

# %% [markdown]
# * **Raw order 1**: every anchor row is the same flat P(y), so all 18 anchors look identical, and
#   keys look fairly alike too: the shared P(y) part dominates the raw rows.
# * **Incremental order 1**: the keys fall into three groups, one per attribute; keys of different
#   attributes have cosine −1/2, i.e. 120° apart: three directions that sum to zero (three
#   centred label distributions). Anchors are zero rows: invisible.
# * **Incremental order 2**: anchor-1 tokens now form three attribute groups as well.
# * **Incremental order 3**: the anchor-2 tokens join.
#
# The cosines behind the order-1 panel, as a checked fact:

# %%
# NBVAL_CHECK_OUTPUT
key_cos = plots.cosine_similarity(sigs[1].matrix[roles["key"]])
same_attr = task.info["attribute"][roles["key"]][:, None] == task.info["attribute"][roles["key"]][None, :]
print("ΔS¹, keys of the same attribute: cosine within 1e-6 of 1:", bool(((key_cos[same_attr] - 1).abs() < 1e-6).all()))
print("ΔS¹, keys of different attributes: cosine within 1e-6 of -1/2:", bool(((key_cos[~same_attr] + 0.5).abs() < 1e-6).all()))

# %% [markdown]
# The staircase claim of the course, stated in these terms: a model trained from small init first
# builds embeddings whose similarities take on the structure of the second panel, then add that
# of the third, then that of the fourth (each order's tokens join in turn; the blocks already
# there stay).

# %% [markdown]
# ## The other kind: token→context signatures
#
# A token also predicts its *context*: the **token→context signature** of order 1 is
# K_ij(s, t) = P(x_j = t | x_i = s), one row per token. For real text (lesson 09) it holds the
# next-token and previous-token distributions of each token.
#
# > **Think.** On the hierarchy task, what does knowing x1 tell you about x2?

# %%
# NBVAL_CHECK_OUTPUT
ctx1 = context_signature(data, order=1, form="raw", names=names)
ctx1_centred = context_signature(data, order=1, form="centered", names=names)
rows_differ = float((ctx1.matrix - ctx1.matrix[0]).abs().max())
print("context signature shape:", tuple(ctx1.matrix.shape))
print("every row equals the first row (to 1e-6):", rows_differ < 1e-6)
print("centred, every row is zero (to 1e-6):", float(ctx1_centred.matrix.abs().max()) < 1e-6)

# %% [markdown]
# Every row is the same. The three positions are drawn **independently**, so
# P(x_j = t | x_i = s) = P(x_j = t) whatever s is: the context signature is uniform and carries
# no information on this task. Only the *label* depends on the tokens. To see a context signature
# that does, change the data so that positions are dependent: keep only the sequences in which
# the first anchor has the same attribute as the key.

# %%
# NBVAL_CHECK_OUTPUT
attr = task.info["attribute"]
same = attr[data.x[:, 0]] == attr[data.x[:, 1]]
coupled = Dataset(data.x[same], data.y[same], V, C, data.weights[same] / data.weights[same].sum())
ctx_coupled = context_signature(coupled, order=1, form="centered", names=names)
p_a10 = float(joint(coupled, (0, 1)).sum(-1)[0, 9] / joint(coupled, (0,)).sum(-1)[0])
print(f"{coupled.n} sequences kept; P(x2 = a10 | x1 = k0) within 1e-6 of 1/3 (3 anchors share k0's attribute):",
      abs(p_a10 - 1 / 3) < 1e-6)

# %%
fig = plots.cosine_matrices([ctx1_centred, ctx_coupled], titles=["hierarchy task (independent), centred rows",
                                                                   "anchor copies the key's attribute, centred rows"])
plt.show()

# %% [markdown]
# Both panels use the *centred* rows: each entry minus what it would be if the token said nothing
# about its context. On the left, the hierarchy task: every centred row is zero (printed above), a
# zero row is similar to nothing, and the panel is blank. On the right, the coupled data: keys and
# first anchors group by attribute through their context alone (the second anchors, still
# independent of everything, are zero rows here too). The blank cross block says nothing about keys
# and anchors: a key's row fills only the columns of the context of position 1, a first anchor's
# only those of position 2, so their cosine is 0 by construction. So a token→context signature has structure even when the label
# is not involved; whether it shapes embeddings, this figure does not show. On the hierarchy task only the token→label kind matters, and that
# is the kind the next lessons follow.

# %% [markdown]
# ## Try it yourself
#
# The signature explorer shows one signature at a time, for a smaller hierarchy task (6 tokens
# per block). Choose the order k, the kind (token→label or token→context), the form and a token.
# The left panel is that token's row, the middle panel the cosine-similarity matrix with the
# token's row and column boxed, and the right panel the entropy ladder with order k shaded.
#
# > **Think.** Which tokens share the same row at incremental order 1, and at which order do the
# > first anchors start to differ from each other? Step through the tokens to check.

# %%
# NBVAL_IGNORE_OUTPUT
from ctxlab.widgets import signature_explorer

signature_explorer()

# %% [markdown]
# ## Conditional entropies: the losses each order can reach
#
# A model that predicts y from the tokens at positions S, and uses them perfectly, reaches the
# cross-entropy
#
# $$H(Y \mid X_S) = -\sum_{x_S, y} P(x_S, y) \ln P(y \mid x_S)$$
#
# in nats, and no lower: that is the best loss with statistics of the positions in S. Here it is
# for every S.

# %%
for k in range(L + 1):
    for S in itertools.combinations(range(L), k):
        label = "{" + ", ".join(f"x{p + 1}" for p in S) + "}"
        print(f"H(Y | {label:<12}) = {conditional_entropy(data, S):.4f}")

# %% [markdown]
# The anchors alone are worth nothing (H stays at ln 3 = 1.0986). For one anchor that is what its
# flat order-1 row said. For the pair {x2, x3} flat rows are not enough, since two tokens that say
# nothing one by one can say something together (that is what ΔS² measures). Here the pair says
# nothing because every rule adds the key's attribute, which is uniform and independent of both
# anchors: given the anchors, each label stays equally likely. The best set of each size gives the
# **entropy ladder**: a model that learns order-1 statistics first, then order 2, then order 3
# should see its loss rest on these plateaus.

# %%
# NBVAL_CHECK_OUTPUT
ladder = entropy_ladder(data)
print(" -> ".join(f"{stair.entropy:.4f}" for stair in ladder))
anchors_alone = max(abs(conditional_entropy(data, S) - math.log(C)) for S in [(1,), (2,), (1, 2)])
print("the anchors alone leave H at ln 3 (within 1e-6):", anchors_alone < 1e-6)

# %%
fig = plots.entropy_ladder_figure(ladder, n_labels=C)
plt.show()

# %% [markdown]
# ## Why incremental signatures: the orders are orthogonal
#
# Write the label distribution of a sequence as a sum of one term per subset S of positions:
#
# $$P(y \mid x) = P(y) + \sum_i \Delta_{\{i\}} + \sum_{i<j} \Delta_{\{i,j\}} + \Delta_{\{1,2,3\}},$$
#
# where each Δ_S is the inclusion–exclusion term above. When the positions are independent these
# terms are **orthogonal** as functions of (x, y) under the data distribution: each order carries
# only what the lower ones do not, and their squared sizes add up like Pythagoras. Raw signatures
# do not have that property: raw order 2 contains order 1. Let us check both claims numerically.

# %%
def conditional_on_rows(data: Dataset, S: tuple[int, ...]) -> torch.Tensor:
    """P(y | x_S) evaluated at every row of the data: [N, C]."""
    p = joint(data, S)
    cond = p / p.sum(-1, keepdim=True).clamp_min(1e-300)
    return cond[tuple(data.x[:, q] for q in S)].expand(data.n, -1)


def interaction_on_rows(data: Dataset, S: tuple[int, ...]) -> torch.Tensor:
    """The inclusion-exclusion term Delta_S (``signatures.interaction``) at every row: [N, C]."""
    table = interaction(data, S)
    return table[tuple(data.x[:, q] for q in S)]


subsets = [S for k in range(1, L + 1) for S in itertools.combinations(range(L), k)]
terms = torch.stack([interaction_on_rows(data, S) for S in subsets])  # [7, N, C]
w = data.weights.double()
gram = torch.einsum("anc,bnc,n->ab", terms, terms, w)  # <Delta_S, Delta_T> under the data
off_diagonal = gram - torch.diag(torch.diag(gram))
print("subsets:", subsets)
print(f"largest |<Delta_S, Delta_T>| for S != T: {float(off_diagonal.abs().max()):.1e}")
print("squared size of each term:", [round(float(v), 4) for v in torch.diag(gram)])

# %%
# NBVAL_CHECK_OUTPUT
full = conditional_on_rows(data, (0, 1, 2)) - conditional_on_rows(data, ())
total = float(torch.einsum("nc,nc,n->", full, full, w))
overlap = float(torch.einsum("nc,nc,n->", conditional_on_rows(data, (0,)) - conditional_on_rows(data, ()),
                             conditional_on_rows(data, (0, 1)) - conditional_on_rows(data, ()), w))
sizes = torch.diag(gram)
print("incremental terms orthogonal (largest off-diagonal < 1e-6 of the largest term):",
      float(off_diagonal.abs().max()) < 1e-6 * float(sizes.max()))
print("their squared sizes add up to ||P(y|x) - P(y)||^2 (within 1e-6):", abs(total - float(sizes.sum())) < 1e-6)
print("raw order 1 and raw order 2 overlap (inner product > 0.01):", overlap > 0.01)
print("the order-1 term of the key is the largest single term:", int(sizes.argmax()) == subsets.index((0,)))

# %% [markdown]
# The incremental terms are orthogonal to within rounding, and their squared sizes add up to the
# whole signal; the raw ones overlap. So when a later lesson measures how much an embedding
# aligns with "order 2", the incremental ΔS² holds no order-1 term, as a function of (x, y). As a
# token × token table it still shares its key block with ΔS¹ (the figure above), so a metric that
# compares token similarities can score order 1 against it (lesson 02 shows CKA doing so). The squared sizes also say which piece is biggest: the key's order-1 term (0.107 against
# 0.060 for the pair term of key and first anchor, and 0.060 for the triple term). Size is not the
# reason order 1 comes first, though: at small initialization the embeddings' early gradient
# contains order-1 statistics only, whatever the sizes (lesson 04's equation E1). Among the order-1
# directions, the stronger ones come first (lesson 05).

# %% [markdown]
# > **Paper vs. this course.**
# > *From the paper's abstract* (Yao, Hang & Xu, *Context Staircase*, 2026), in our words: token
# > embeddings are closely related to token-conditioned label and context distributions, which the
# > authors call probability signatures; during training, embeddings align with low-order
# > signatures before high-order ones, first with the context-free token→label signature and then
# > with signatures involving more and more context tokens; a gradient-flow analysis under small
# > initialization explains this for feed-forward and self-attention models.
# >
# > *This course's reconstruction* (the paper's full text was not available to us): the exact
# > definitions used here (raw, centred and incremental signatures, their column layout, the
# > frequency conventions), the hierarchy task and its mixture weights, the use of conditional
# > entropies as predicted plateau losses, and the orthogonality argument for incremental
# > signatures. Treat them as one consistent way to make the abstract's statements precise, not as
# > the paper's own formulas.

# %% [markdown]
# ## Summary
#
# * A probability signature gives each token a row of conditional probabilities: order 0 is P(y),
#   order 1 is P(y | x_i = s), order k conditions on k − 1 further context tokens. Token→context
#   signatures do the same with a context token in place of the label.
# * On the hierarchy task the order-1 signature groups keys by attribute and cannot see anchors;
#   order 2 brings in the first anchor, order 3 the second.
# * The context signature is uniform there, because positions are independent.
# * The conditional entropies 1.0986 → 0.9503 → 0.8419 → 0.6630 are the losses reachable with
#   statistics of order 0, 1, 2, 3: the predicted staircase.
# * Incremental signatures split P(y | x) into orthogonal orders, so each order can be measured
#   on its own.
#
# **Next.** Open `exercises/01_signatures.ipynb`: you will compute the order-1 signature from counts,
# a conditional entropy, the pair interaction term and the number of distinct signature rows, then
# build the incremental term of every order, check that the orders are orthogonal and take the
# entropy ladder apart into them; grade your notebook with `ctxlab grade exercises/01_signatures.ipynb`. Lesson 02 turns to measuring
# how well an embedding matrix aligns with a signature.

# %% [markdown]
# # Lesson 03 — The staircase, observed
#
# **Learning goals.** After this lesson you can
# 1. train an ensemble of Emb-MLPs at three initialization scales γ in one call, and read its loss
#    curves against the predicted plateaus H(Y | X_S);
# 2. measure plateau levels and stair onsets from a loss curve, and say why a curve can have
#    more plateaus than the ladder has rungs;
# 3. follow the alignment of the embeddings with the order-1, 2 and 3 signatures during training,
#    with CKA, the subspace fraction and per-role embedding norms;
# 4. see the stairs in the embeddings themselves (2-D PCA at each plateau), reproducibly over seeds;
# 5. say how the initialization scale changes the first plateau.
#
# **Prerequisites.** Lesson 01 (signatures, the entropy ladder) and lesson 02 (CKA, subspace
# fraction, baselines, the CKA caveat). Gradient descent and cross-entropy.
#
# **Run time.** About 40 seconds on a laptop CPU (the one training call below trains 9 models
# for 4000 steps); a GPU is not needed.

# %% [markdown]
# ## What we expect to see
#
# Lesson 01 gave the hierarchy task a ladder of conditional entropies,
# ln 3 = 1.0986 → 0.9503 → 0.8419 → 0.6630: the best losses with statistics of order 0, 1, 2
# and 3. The staircase claim says that a model trained from **small initialization** does not
# slide down smoothly: it rests on each of these values in turn, and while it rests its embeddings
# line up with the signature of that order. With the standard initialization the picture should blur.
#
# The model is an **Emb-MLP**: each of the 3 tokens is embedded (d = 32), the three vectors are
# concatenated and fed to one GELU hidden layer (128 units) and a linear read-out to the 3
# labels. No biases. Every weight matrix starts as N(0, fan_in^(−2γ)): γ = 0.5 is the usual
# scale, γ = 1 and 1.5 are small. Training is plain full-batch gradient descent, learning rate 1,
# on the exact population of 729 sequences: the discretised gradient flow the theory describes.
#
# > **Think.** Before training: at γ = 1.5 every weight is about 32^(−1.5) ≈ 0.006. What loss does
# > the model have at step 0? What do you expect the gradient to look like?

# %%
import matplotlib.pyplot as plt
import torch

from ctxlab import align, plots
from ctxlab.experiments import staircase
from ctxlab.signatures import conditional_entropy, label_signature
from ctxlab.tasks import Dataset, hierarchy_task

task = hierarchy_task()
data = task.population

# %% [markdown]
# ## One call: 9 models, 3 scales × 3 seeds
#
# `staircase(...)` builds the 9 models as one batched ensemble, trains them together, and measures
# each run: the stair onsets, every plateau found, the plateau matched to each predicted level,
# and CKA(E − E₀, ΔSᵏ) for k = 1, 2, 3 at every recorded step (every 5 steps).

# %%
result = staircase(gammas=(0.5, 1.0, 1.5), seeds=(0, 1, 2))
traj = result.trajectory
print(result.table())

# %% [markdown]
# The table has one row per run: for each stair k, its **onset** (the first step where the loss
# falls below the midpoint (H_{k−1} + H_k)/2) and the **measured plateau loss** matched to H_k
# (the row `pred` holds the predictions). Now the picture: loss on top with the predicted plateaus
# dashed, CKA with the three incremental signatures below, one column per γ, all seeds overlaid.

# %%
fig = plots.staircase_figure(result)
plt.show()

# %% [markdown]
# Read the top row first.
#
# * **γ = 0.5** (standard): the loss leaves ln 3 at once, touches H1 only briefly and slides to
#   H2 and towards H3; the stairs are there but short and blurred.
# * **γ = 1**: a long rest at ln 3, then three clear treads at H1, H2 and H3.
# * **γ = 1.5**: the rest at ln 3 lasts well over a thousand steps; then H1 (after a short extra
#   level near 1.01), while the later stairs are squeezed into the remaining steps and are less
#   clean within 4000 steps.
#
# The short spikes are overshoots of gradient descent at learning rate 1; the loss recovers within
# a few steps and they do not affect the plateaus.
#
# Are the treads where the theory says? Here is each run at γ = 1, measured vs predicted:

# %%
# NBVAL_CHECK_OUTPUT
at_1 = [k for k, g in enumerate(result.gammas) if g == 1.0]
predicted = result.levels[1:]
for k in at_1:
    measured = [None if s is None else round(s.level, 2) for s in result.stairs[k]]
    print(f"γ = 1, seed {result.seeds[k]}: measured {measured}  predicted {[round(h, 2) for h in predicted]}")
close = all(s is not None and abs(s.level - h) < 0.02 for k in at_1 for s, h in zip(result.stairs[k], predicted))
print(f"each measured plateau within 0.02 nats of its predicted entropy at γ = 1: {close}")
in_order = [bool((result.onsets[k] > 0).all() and (result.onsets[k].diff() > 0).all()) for k in range(len(result.gammas))]
print(f"onsets in order: {all(in_order[k] for k in at_1)} (γ = 1, all seeds); {all(in_order)} (all 9 runs)")

# %% [markdown]
# Every tread at γ = 1 sits within 0.02 nats of its conditional entropy, and in every run the
# stairs come in the order 1, 2, 3. The largest gap is on the last stair, where the loss creeps
# down over several short flat stretches and has not quite settled on H3 after 4000 steps.

# %% [markdown]
# ## More plateaus than rungs
#
# `find_plateaus` reports every stretch where the loss moves by less than 3·10⁻⁴ nats per step
# for at least 30 steps. For one run at γ = 1 that gives more plateaus than the ladder has levels:

# %%
first = at_1[0]
for p in result.plateaus[first]:
    print(f"steps {p.start:>4}–{p.stop:<4} ({p.length:>4} steps) at loss {p.level:.4f}")

# %% [markdown]
# Between H1 and H2 there is an extra tread near 0.90. It has an explanation: the first anchor
# can shift the answer (attribute 1 or 2) or not (attribute 0). Knowing *whether* it shifts is
# easier than knowing *by how much*, and a model that knows the key plus only that bit of the
# anchor reaches H(Y | X1, [attribute(X2) = 0]). Compute it by replacing each first anchor with
# one of two tokens, "shifts" or "does not":

# %%
# NBVAL_CHECK_OUTPUT
attribute = task.info["attribute"]
x = data.x.clone()
x[:, 1] = torch.where(attribute[x[:, 1]] == 0, 9, 10)  # anchor1 -> "no shift" (a10) or "shift" (a11)
coarse = Dataset(x, data.y, data.vocab_size, data.n_labels, data.weights)
h_half = conditional_entropy(coarse, (0, 1))
print(f"H(Y | X1, [attribute(X2) = 0]) = {h_half:.2f}, between H1 = {result.levels[1]:.2f} and H2 = {result.levels[2]:.2f}")

# %%
for k in at_1:
    near = min(result.plateaus[k], key=lambda p: abs(p.level - h_half))
    print(f"seed {result.seeds[k]}: sub-level plateau at {near.level:.4f}, steps {near.start}–{near.stop}")
H0, H1, H2 = result.levels[:3]
print(f"band of H1: from {(H1 + H2) / 2:.3f} up to {(H0 + H1) / 2:.3f}")

# %% [markdown]
# Every seed rests there, for hundreds of steps: a half-stair of order "1.5". At γ = 1.5 the table
# of plateaus shows yet another short level near 1.01, before H1. So a tread cannot be assigned
# to a rung by its position in the list. `match_plateaus` assigns by **bands**: the band of H_k
# runs from the midpoint with H_{k−1} down to the midpoint with H_{k+1}, and within its band the
# plateau nearest H_k wins. A sub-level such as 0.906 lies in H1's band (0.896 to 1.024) but
# 0.947 is nearer to H1, so it is not mistaken for H1 or for H2. Exercise 1 asks you to
# implement this matching.

# %% [markdown]
# ## Alignment over training
#
# > **Think.** Lesson 02 showed that CKA with ΔS² is high (≈ 0.69) for an embedding that knows only
# > order 1. What should CKA(E − E₀, ΔS²) do during the H1 plateau, then? What would show the
# > second stair more clearly?
#
# Three views of the γ = 1 runs, the three seeds overlaid, stair onsets dotted:
# CKA of the *displacement* E − E₀ with each incremental signature; the share of ‖E − E₀‖² in the
# span of ΔS¹ with its chance level rank/(V − 1); and the mean embedding norm of each token role
# (keys, first anchors, second anchors).

# %%
runs = traj.select(at_1)
sig1 = label_signature(data, 1, "incremental")
share = align.align_trajectory(runs, [sig1], "subspace", relative_to_init=True)[sig1.name]
chance = align.signature_rank(sig1) / (data.vocab_size - 1)
norms = align.role_norms(runs, task.roles)
cka = {name: curves[at_1] for name, curves in result.alignment.items()}
fig = plots.alignment_panels(traj.steps, cka, share, chance, norms, onsets=result.onsets[at_1])
plt.show()

# %% [markdown]
# * **CKA** (left): on the first plateau CKA with ΔS¹ is ≈ 1, and the other orders sit at the
#   level lesson 02 predicted for an order-1 embedding. Each stair then hands the lead to the next
#   order.
# * **Subspace fraction** (middle): during the H1 plateau practically all of the displacement lies
#   in the 2-dimensional span of ΔS¹, where chance is 2/26; it falls when the anchors start to move.
# * **Role norms** (right): keys grow first, first anchors at the second stair, second anchors at
#   the third: the order of the stairs, token by token.
#
# In numbers, at the middle of each matched plateau of each run:

# %%
# NBVAL_CHECK_OUTPUT
names = list(result.alignment)
for j, k in enumerate(at_1):
    middles = [traj.index(align.middle_step(s)) for s in result.stairs[k]]
    best = [1 + int(torch.stack([result.alignment[n][k, i] for n in names]).argmax()) for i in middles]
    shares = [round(float(share[j, i]), 2) for i in middles]
    print(f"seed {result.seeds[k]}: best-aligned order on plateaus H1, H2, H3: {best}; share in span(ΔS¹): {shares}")
role_onsets = {role: align.onset_step(traj.steps, curve) for role, curve in norms.items()}
ordered = bool(((role_onsets["key"] < role_onsets["anchor1"]) & (role_onsets["anchor1"] < role_onsets["anchor2"])).all())
print(f"role norms grow in the order keys -> anchor1 -> anchor2 in every seed: {ordered}")

# %% [markdown]
# On each plateau the best-aligned signature is the one of that order, in every seed, and the
# share of the displacement in span(ΔS¹) is near 1 on the first plateau and falls with each stair.
# (The role-norm onset here is the step where a role's mean norm has covered half its way from
# start to end.)

# %% [markdown]
# ## The embeddings at each plateau
#
# Finally look at the embeddings themselves. For one run at γ = 1 take the step in the middle of
# each matched plateau and project E − E₀ onto its two leading principal axes. Colour is the token
# role, the marker shape its attribute.
#
# > **Think.** On the H1 plateau, how many clusters should the keys form? Where should the anchors be?

# %%
roles, attributes = task.roles, attribute.tolist()
titles = [f"plateau H{o} ≈ {h:.3f}" for o, h in enumerate(predicted, start=1)]


def plateau_pca(k: int) -> torch.Tensor:
    """2-D PCA of E - E0 at the middle of each matched plateau of run k: [plateaus, V, 2]."""
    steps = [traj.index(align.middle_step(s)) for s in result.stairs[k]]
    return torch.stack([align.pca_2d(traj.embeddings[k, i] - traj.embeddings[k, 0]) for i in steps])


fig = plots.embedding_pca_grid(plateau_pca(first)[None], roles, attributes,
                               [f"γ = 1, seed {result.seeds[first]}"], titles)
plt.show()

# %% [markdown]
# On the H1 plateau the keys form three tight clusters, one per attribute, at the corners of a
# triangle, and all anchors sit at the origin: exactly the geometry of ΔS¹ (lesson 01). On the
# H2 plateau the first anchors have split into their three attributes too; on H3 the second
# anchors have joined. The same for all three seeds:

# %%
fig = plots.embedding_pca_grid(torch.stack([plateau_pca(k) for k in at_1]), roles, attributes,
                               [f"seed {result.seeds[k]}" for k in at_1], titles)
plt.show()

# %% [markdown]
# The axes differ from seed to seed (the embedding basis is arbitrary, as lesson 02 stressed) but
# the cluster structure at each plateau is the same.

# %% [markdown]
# ## How γ sets the first plateau
#
# At small init the model first rests at ln 3, learning nothing visible, before the first stair.
# Its length is the onset of stair 1. Per γ, averaged over seeds:

# %%
gammas = sorted(set(result.gammas))
first_plateau = {g: float(result.onsets[[k for k, gk in enumerate(result.gammas) if gk == g], 0].float().mean()) for g in gammas}
for g, steps in first_plateau.items():
    print(f"γ = {g:g}: the loss stays above the first midpoint for {steps:.0f} steps")

# %%
# NBVAL_CHECK_OUTPUT
print(f"longest first plateau: γ = {max(first_plateau, key=first_plateau.get):g}; "
      f"grows with γ: {all(first_plateau[a] < first_plateau[b] for a, b in zip(gammas, gammas[1:]))}")

# %% [markdown]
# Smaller initialization means a longer wait: the gradient at the start is a product of several
# small weights, so escaping the starting point takes longer (lesson 05 makes this quantitative).
# The later plateaus do not follow so simple a rule, since each starts from wherever the previous
# stair left the weights.

# %% [markdown]
# ## Explore
#
# The staircase explorer below lets you move through training step by step and across γ, and
# watch the loss, the alignment and the embeddings together.

# %% [markdown]
# It explores `result`, the nine runs trained above, so it needs no training of its own.
#
# > **Think.** Pick γ = 1 and scrub to the end of the first plateau. Which order's alignment
# > curve is highest there, and which group of tokens has already split apart in the PCA panel?
# > Now do the same at γ = 0.5.

# %%
# NBVAL_IGNORE_OUTPUT
from ctxlab.widgets import staircase_explorer

staircase_explorer(result=result)

# %% [markdown]
# > **Paper vs. this course.**
# > *From the paper's abstract* (Yao, Hang & Xu, *Context Staircase*, 2026), in our words: under
# > small initialization, training shows a staircase; embeddings align first with the
# > context-free (order-1) token→label signature, then with signatures of more and more context
# > tokens.
# >
# > *This course's reconstruction*: the hierarchy task, the Emb-MLP with GELU and no biases, the
# > settings (d = 32, 128 hidden units, plain gradient descent at learning rate 1, 4000 steps), the
# > prediction that the plateaus sit at H(Y | X_S), the onset and plateau-matching rules, the
# > sub-level at H(Y | X1, [attribute(X2) = 0]), and the choice of metrics are ours. The
# > numbers above are measured in this notebook, not taken from the paper.

# %% [markdown]
# ## Summary
#
# * From small init (γ = 1) the loss of the Emb-MLP rests on H1, H2 and H3 in turn, each within
#   0.02 nats of the conditional entropy; the onsets come in order in every seed.
# * The curve also has sub-levels (e.g. H(Y | X1, [attribute(X2) = 0]) ≈ 0.906), so plateaus are
#   matched to rungs by bands, not by their position in the list.
# * While the loss rests on H_k, the embedding displacement aligns best with ΔS^k; keys, first
#   anchors and second anchors start to move one stair after another.
# * At each plateau the embeddings show the cluster structure of that order's signature, in every seed.
# * The first plateau grows quickly with γ; at the standard γ = 0.5 it all but disappears.
#
# **Next.** Open `exercises/03_staircase.ipynb`: read plateau values off a loss curve and match
# them to the ladder, detect stair onsets, and find the γ with the longest first plateau. Lesson 04
# derives why the embeddings move the way they do at the start.

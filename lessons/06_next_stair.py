# %% [markdown]
# # Lesson 06 — The next stair: the residual pair statistic
#
# **Learning goals.** After this lesson you can
# 1. explain why, at the end of the first plateau, the order-1 part of the gradient is zero;
# 2. compute the residual pair statistic R_ij(s, t) = E[e_y − p | x_i = s, x_j = t] from a model's
#    predictions, and show that it equals the incremental order-2 signature ΔS² there;
# 3. predict from ΔS² which tokens split apart at the next stair, and see the split in the
#    embeddings (cosines within and between groups, PCA).
#
# **Prerequisites.** Lesson 01 (incremental signatures ΔSᵏ), lesson 03 (the staircase),
# lesson 04 (E1).
#
# **Run time.** About 20 seconds on a laptop CPU.

# %% [markdown]
# ## Why look at what is left over?
#
# Lesson 04's E1 explains the first stair: at small init the embeddings follow the order-1
# signature. But E1 says nothing about *when the first plateau ends* or *what comes next*. On the
# plateau the model has learned everything order 1 can give, the loss sits at H(Y | key), and yet
# a few hundred steps later it drops again. Something must still push. This lesson finds that
# push: the part of the label the model still gets wrong, organised by pairs of tokens.

# %%
import matplotlib.pyplot as plt
import torch

from ctxlab.align import class_cosines
from ctxlab.models import make_model
from ctxlab.plots import embedding_split_figure, residual_increment_figure
from ctxlab.rungs import measure_runs
from ctxlab.signatures import conditional_entropy, interaction
from ctxlab.tasks import Dataset, hierarchy_task
from ctxlab.theory import (
    model_pair_residual,
    plateau_levels,
    residual_vs_increment,
)
from ctxlab.train import train

task = hierarchy_task()
data = task.population
V, L, C = data.vocab_size, data.seq_len, data.n_labels
levels = plateau_levels(data)
print("plateau levels ln C, H1, H2, H3:", [round(h, 3) for h in levels])

# %% [markdown]
# ## Stop the model on the first plateau
#
# We train three seeds of Emb-MLP (GELU, γ = 1, full-batch gradient descent, lr 1) for
# `PLATEAU = 400` steps: the first stair is done by then and the second has not started (the
# check below, and the full loss curve later in this lesson). We need the model's *parameters* at that step (to get its predictions p), so we stop
# training there, look, and later call `train` again to continue. `train` updates the model in
# place, and plain GD keeps no optimizer state (no momentum, no Adam moments), so two calls of
# 400 and 1600 steps give exactly the same parameters as one run of 2000 steps.

# %%
PLATEAU, REST = 400, 1600
model = make_model("mlp", task, gamma=1.0, seed=[0, 1, 2])
first = train(model, data, PLATEAU, lr=1.0, record_every=10, progress=False)

print("loss at the plateau step:", [round(float(v), 3) for v in first.loss[:, -1]], " H1 =", round(levels[1], 3))

# %%
# NBVAL_CHECK_OUTPUT
print("all seeds within 0.01 of H1:", bool(((first.loss[:, -1] - levels[1]).abs() < 0.01).all()))

# %% [markdown]
# ## Why the order-1 gradient vanishes on the plateau
#
# Write p(x) = softmax(z(x)). The gradient of the cross-entropy with respect to the logits is
# p − e_y, so every gradient is an average of p − e_y times some feature of x. Along the *linear*
# path of lesson 04 that feature is 1{x_i = s}: the order-1 drive is
#
# $$g_i(s) = \mathbb E\big[(e_y - p(x))\,\mathbf 1\{x_i = s\}\big] = \pi_i(s)\,\big(P(y \mid x_i = s) - \mathbb E[p \mid x_i = s]\big).$$
#
# The first plateau is the best model whose logits add up one contribution per token. Its
# optimality conditions are exactly g_i(s) = 0 for every position i and token s (moment
# matching: on average over the sequences with x_i = s the predictions equal the true label
# frequencies). So E1's drive is switched off. Let us check on the trained model.

# %%
with torch.no_grad():
    probs = torch.softmax(model(data.x), dim=-1).double()  # [K, N, C]
error = data.weights.double()[None, :, None] * (data.targets().double()[None] - probs)
order1 = torch.stack([torch.zeros(3, V, C, dtype=torch.float64).index_add_(1, data.x[:, i], error)
                      for i in range(L)])  # [L, K, V, C]: g_i(s)
scale = (data.weights.double()[None, :, None] * (data.targets().double()[None] - 1 / C)).abs().sum(1).max()
print("largest order-1 drive, relative to its size at init:", round(float(order1.abs().max() / scale), 3))

# %%
# NBVAL_CHECK_OUTPUT
print("order-1 drive below 1% of its size at init:", bool(order1.abs().max() / scale < 0.01))

# %% [markdown]
# **Think.** If every g_i(s) is (almost) zero, what can still move the embeddings? Which part of
# p − e_y survives an average over sequences with x_i = s, but not an average over sequences with
# x_i = s *and* x_j = t?

# %% [markdown]
# ## The residual pair statistic
#
# The next features the network can build are products of two tokens (through GELU's curvature
# and the softmax). Their drive is the residual averaged over pairs:
#
# $$R_{ij}(s,t) = \mathbb E\big[e_y - p(x) \,\big|\, x_i = s,\ x_j = t\big].$$
#
# On the order-1 optimum of this task, p depends on the key only and equals P(y | x₁) (the anchors
# alone say nothing about the label). Then
# R₁₂(s, t) = P(y | s, t) − P(y | s), and since P(y | t) = P(y) = u, this is exactly the Möbius
# increment of lesson 01:
#
# $$R_{12}(s,t) = P(y\mid s,t) - P(y\mid s) - P(y\mid t) + P(y) = \Delta S^2_{12}(s,t).$$
#
# `ctxlab.theory.residual_vs_increment(model, data, i, j)` computes R from the model's predictions
# (with `pair_residual`) and holds it against `interaction(data, (i, j))`.

# %%
check = residual_vs_increment(model, data, 0, 1)  # R [K, V, V, C] next to ΔS² [V, V, C]
cos, rel = check.cosine, check.relative
print("cosine(R_12, ΔS²_12) per seed:", [round(float(c), 4) for c in cos])
print("relative difference per seed: ", [round(float(r), 3) for r in rel])

# %%
# NBVAL_CHECK_OUTPUT
print("R equals ΔS² (cosine >= 0.99 for every seed):", bool((cos >= 0.99).all()))

# %% [markdown]
# Both tables side by side for seed 0: rows are the 9 key tokens, columns the 9 anchor-1 tokens ×
# 3 labels (one group of three columns per anchor). Only the key × anchor-1 block is shown: that
# is where both are non-zero.

# %%
keys, anchors1, anchors2 = (task.role_tokens(r) for r in ("key", "anchor1", "anchor2"))
names = task.token_names
fig = residual_increment_figure(check, keys, anchors1, names, model=0)
plt.show()

# %% [markdown]
# ## Which pairs split next?
#
# The same residual for the other two position pairs. By the argument above, a pair drives the
# next stair only if it carries label information beyond its single tokens, i.e. ΔS² ≠ 0.

# %%
pairs = [(0, 1), (0, 2), (1, 2)]
size = {p: model_pair_residual(model, data, *p).flatten(1).norm(dim=1).mean() for p in pairs}
truth = {p: interaction(data, p).norm() for p in pairs}
fig, ax = plt.subplots(figsize=(5.5, 3.0))
ax.bar([f"{p}" for p in pairs], [float(size[p]) for p in pairs], label="‖R_ij‖ on the plateau (mean of seeds)")
ax.plot([f"{p}" for p in pairs], [float(truth[p]) for p in pairs], "k_", markersize=30, mew=2, ls="none",
        label="‖ΔS²_ij‖ from data")
ax.set_xlabel("position pair (i, j), positions counted from 0")
ax.set_ylabel("norm of the table")
ax.set_ylim(0, 1.4 * float(max(max(size.values()), max(truth.values()))))  # room for the legend above the bars
ax.legend(fontsize=8, loc="upper right")
plt.show()

# %%
# NBVAL_CHECK_OUTPUT
print("the other two pairs' residuals are below 5% of the key-anchor1 pair's:",
      all(bool(size[p] < 0.05 * size[(0, 1)]) for p in pairs[1:]))

# %% [markdown]
# **Prediction.** ΔS²₁₂(s, t) depends on (A(s) + A(t)) mod 3 only. So the anchor-1 tokens, which
# sat still during stage 1 (their order-1 signature is uniform), should now separate into three
# groups by their attribute A(t); the keys keep their three order-1 groups. Anchor-2 tokens have
# no pair increment, so they wait for stage 3.
#
# **Think.** Before running on: what will the cosine between two anchor-1 embeddings with the same
# attribute be at the plateau, and after the second stair?

# %%
second = train(model, data, REST, lr=1.0, record_every=10, progress=False)
steps = torch.cat([first.steps, second.steps[1:] + PLATEAU])
loss = torch.cat([first.loss, second.loss[:, 1:]], dim=1)
embeddings = torch.cat([first.embeddings, second.embeddings[:, 1:]], dim=1)  # [K, T, V, d], every 10 steps
attr = task.info["attribute"]
coarse = data.x.clone()  # keep of the first anchor only whether its attribute is 0
coarse[:, 1] = torch.where(attr[data.x[:, 1]] == 0, anchors1[0], anchors1[1])
sub_level = conditional_entropy(Dataset(coarse, data.y, V, C, data.weights), (0, 1))
print(f"predicted sub-level H(Y | x1, [A(x2) = 0]) = {sub_level:.4f}")

fig, ax = plt.subplots(figsize=(8, 3.8), layout="constrained")
for k in range(3):
    ax.plot(steps, loss[k], lw=1, color=f"C{k}", label=f"seed {k}")
for name, h, style in [(f"H{o}", h, "--") for o, h in enumerate(levels)] + [("H(Y | x1, [A(x2)=0])", sub_level, ":")]:
    ax.axhline(h, color="gray", ls=style, lw=0.8)
    ax.annotate(f"{name} = {h:.3f}", (1.0, h), xycoords=("axes fraction", "data"), xytext=(3, 0),
                textcoords="offset points", va="center", fontsize=8, color="dimgrey")
ax.axvline(PLATEAU, color="black", lw=0.8, ls="-.", label="where we measured R")
ax.set_xlabel("GD step")
ax.set_ylabel("loss (nats)")
fig.legend(loc="outside lower center", ncol=4, fontsize=8)
plt.show()

# %% [markdown]
# The loss does not drop straight from H1 to H2. It first rests, for a few hundred steps, on a
# level no dashed line of the ladder marks: the dotted line, H(Y | x1, [A(x2) = 0]), the best loss
# for a model that knows the key and only *whether* the first anchor's attribute is 0. The net
# learns *whether* the anchor shifts the answer before *which* shift (the sub-rungs of lesson 03).
# Then it reaches H2 and moves on to the third stair, with jumps upward (lr 1 is at the edge of
# stability for this task) and still above H3 at step 2000.

# %%
# NBVAL_CHECK_OUTPUT
reads = measure_runs(steps, loss, [*levels[:2], sub_level, *levels[2:]], tol=0.005)  # lesson 03's rung reading
print("every seed rests >= 100 steps within 0.005 of the sub-level:", all(r.rungs[2].dwell >= 100 for r in reads))
print("every seed comes within 0.005 of H2:", bool(((loss - levels[2]).abs() < 0.005).any(-1).all()))
print("the loss climbs back by > 0.01 in some seed:", any(r.rise > 0.01 for r in reads))
print("every seed is still above H3 at step 2000:", bool((loss[:, -1] > levels[3]).all()))

# %% [markdown]
# Now the embeddings at four moments of each seed: the plateau (step 400), the middle of the
# sub-level stretch, the first recorded step on H2, and the end.

# %%
def stretch(k: int, level: float) -> tuple[int, int]:
    """First and last index of seed k's first stretch within 0.005 nats of ``level``."""
    near = ((loss[k] - level).abs() < 0.005).nonzero().flatten()
    end = int(near[0])
    while end + 1 < len(steps) and abs(float(loss[k, end + 1]) - level) < 0.005:
        end += 1
    return int(near[0]), end


moments = {"plateau": [first.steps.numel() - 1] * 3,
           "sub-level": [sum(stretch(k, sub_level)) // 2 for k in range(3)],
           "H2": [stretch(k, levels[2])[0] for k in range(3)],
           "end": [len(steps) - 1] * 3}
E_at = {when: torch.stack([embeddings[k, i] for k, i in enumerate(idx)]) for when, idx in moments.items()}
table = {}
for role, ids in (("key", keys), ("anchor1", anchors1), ("anchor2", anchors2)):
    for when, E in E_at.items():
        table[role, when] = class_cosines(E[:, ids], attr[ids])  # (within, between), one per seed
        print(f"{role:8s} {when:9s} cosine within attribute {float(table[role, when][0].mean()):5.2f}, "
              f"between {float(table[role, when][1].mean()):5.2f} (mean of seeds)")
zero_vs_rest = {when: class_cosines(E[:, anchors1], (attr[anchors1] == 0).long()) for when, E in E_at.items()}
moved = (E_at["plateau"] - embeddings[:, 0]).norm(dim=-1)  # [K, V]: how far each token has moved by step 400
still = moved[:, anchors1].mean(-1) / moved[:, keys].mean(-1)
print("anchor-1 displacement / key displacement on the plateau:", [round(float(r), 2) for r in still])
print("anchor-1, attribute 0 against the rest, at the sub-level: within "
      f"{float(zero_vs_rest['sub-level'][0].mean()):.2f}, between {float(zero_vs_rest['sub-level'][1].mean()):.2f}")

# %% [markdown]
# On the plateau the keys already form the regular simplex of three attribute groups (within
# ≈ 1, between ≈ −1/(3 − 1) = −0.5), while the anchor-1 embeddings have barely moved and are only
# weakly grouped. On the sub-level the anchor-1 tokens have split in **two**: attribute 0 against
# the other two attributes, pointing in opposite directions; that is the "whether" of the dotted
# line. On H2 they form three groups, as ΔS² predicts, and the anchor-2 tokens have started to
# organise; by step 2000, well into the third stair, they are grouped too.

# %%
# NBVAL_CHECK_OUTPUT
print("keys grouped on the plateau (within > 0.9, between < -0.4), every seed:",
      bool((table["key", "plateau"][0] > 0.9).all() and (table["key", "plateau"][1] < -0.4).all()))
print("anchor-1 weakly grouped on the plateau (within < 0.6) and moved < 0.3 as far as the keys, every seed:",
      bool((table["anchor1", "plateau"][0] < 0.6).all() and (still < 0.3).all()))
print("sub-level: anchor-1 attribute 0 against the rest (within > 0.85, between < -0.85), every seed:",
      bool((zero_vs_rest["sub-level"][0] > 0.85).all() and (zero_vs_rest["sub-level"][1] < -0.85).all()))
print("sub-level: anchor-2 not yet grouped (within < 0.3), every seed:", bool((table["anchor2", "sub-level"][0] < 0.3).all()))
print("H2: anchor-1 in three groups (within > 0.9, between < -0.4), every seed:",
      bool((table["anchor1", "H2"][0] > 0.9).all() and (table["anchor1", "H2"][1] < -0.4).all()))
print("step 2000: anchor-2 grouped (within > 0.8), every seed:", bool((table["anchor2", "end"][0] > 0.8).all()))

# %% [markdown]
# The split in pictures (seed 0, anchor-1 tokens, coloured by attribute): cosine matrices and the
# first two principal components on the plateau, on the sub-level and on H2.

# %%
fig = embedding_split_figure(E_at["plateau"][0, anchors1], E_at["H2"][0, anchors1], attr[anchors1],
                             middle=[E_at["sub-level"][0, anchors1]], names=[names[t] for t in anchors1],
                             group_label="attribute",
                             titles=[f"step {int(steps[moments[w][0]])} ({w})" for w in ("plateau", "sub-level", "H2")])
plt.show()

# %% [markdown]
# > **Paper vs. this course.**
# > *From the paper's abstract* (Yao, Hang & Xu, *Context Staircase*, 2026), in our words:
# > embeddings align with probability signatures of increasing order during training, and a
# > gradient-flow analysis at small init explains the order.
# >
# > *This course's reconstruction* (the paper's equations were not available to us): the
# > moment-matching argument that switches off the order-1 drive on the plateau, the residual
# > pair statistic R_ij and its equality with ΔS² at the order-1 optimum, and the predicted
# > anchor split (with its "whether before which" sub-level) are our derivation, checked
# > numerically on our hierarchy task with GELU and plain GD. The abstract does not say which mechanism starts the next stair.

# %% [markdown]
# ## Summary
#
# * On the first plateau the order-1 drive E[(e_y − p) 1{x_i = s}] is zero: the model matches
#   every single-token moment.
# * What is left is the residual pair statistic R_ij(s, t) = E[e_y − p | x_i = s, x_j = t]; at
#   the order-1 optimum it equals the incremental order-2 signature ΔS² (cosine ≥ 0.99 here).
# * Pairs with ΔS² ≠ 0 drive the next stair; their tokens split into groups given by ΔS², here
#   the anchor-1 tokens by attribute, while tokens without a pair increment wait.
# * Over Z_3 the split comes in two steps: first *whether* the anchor's attribute is 0 (a
#   sub-level, H(Y | x1, [A(x2) = 0]), that the ladder of lesson 01 does not list), then *which*.
#
# **Next.** Open `exercises/06_next_stair.ipynb`: compute the residual yourself, then predict which
# position pairs separate next on tasks you have not seen. Lesson 07 asks the same question for
# self-attention, where the pair residual is what finally makes attention move.

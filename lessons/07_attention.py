# %% [markdown]
# # Lesson 07 — Self-attention at small initialization
#
# **Learning goals.** After this lesson you can
# 1. explain why one attention layer at small init is a *bag of context*: its scores are O(ε⁴),
#    so every position gets weight 1/L, and write the embedding velocity that follows (E2);
# 2. write the force on the query–key product A = W_Q W_Kᵀ (E3) and the velocity of A that
#    gradient flow through W_Q and W_K actually produces, with their orders in ε;
# 3. watch, under plain gradient descent, the loss pass H(Y | key) and rest on the bag's floor while
#    attention stays at 1/L, then attention move towards the token that matters and ‖W_Q W_Kᵀ‖ grow
#    on the last stair, and see that the same model with attention frozen at 1/L cannot take it;
# 4. say what Adam does to this picture.
#
# **Prerequisites.** Lesson 04 (E1), lesson 06 (pair statistics); softmax attention.
#
# **Run time.** About 35 seconds on one CPU core; the gradient-descent run is most of it.

# %% [markdown]
# ## A task that needs attention
#
# A bag of context (the mean of the tokens, whatever their places) solves many tasks: if the
# informative token is the only one of its kind, the mean already names it. Here it does not.
# Each sequence holds n context tokens drawn from **one shared vocabulary**, then a key. The key
# *names a position* p and carries an attribute; the label is A(key) with probability 1/2 and
# A(key) + A(x_p) (mod 2) otherwise. The bag knows how many context tokens carry each attribute,
# but not which of them sits at p: its best loss H(Y | key, bag) lies above H(Y | key, x_p), and
# only attention that looks at p can get further.

# %%
import matplotlib.pyplot as plt
import torch

from ctxlab.attention_exp import (
    LEVEL_NAMES,
    POINTER_TASK,
    TOL,
    attention_experiment,
    attention_model,
    attention_on_rung,
)
from ctxlab.plots import SEED_COLORS, attention_figure, label_levels
from ctxlab.rungs import crossing_step, measure_rungs
from ctxlab.tasks import pointer_task
from ctxlab.theory import (
    attention_embedding_velocity,
    bag_of_context,
    cosine_per_model,
    embedding_velocity,
    qk_force,
    qk_velocity,
    target_attention,
)
from ctxlab.train import relative_gradient_rates, train

task = pointer_task(**POINTER_TASK)
data = task.population
L = data.seq_len
levels = task.plateau_levels()
bag_level = task.info["bag_level"]
print(task.description)
print(f"{data.n} sequences, L = {L}, 1/L = {1 / L:.3f}")
for name, level in zip(LEVEL_NAMES, levels):
    print(f"  {name:16s} = {level:.4f}")
print(f"  {'H(Y | key, bag)':16s} = {bag_level:.4f}   (the floor of uniform attention)")
for row, y in zip(data.x[[1, 6, 11]].tolist(), data.y[[1, 6, 11]].tolist()):
    print("  ", " ".join(task.token_names[t] for t in row), "  P(y = 0, 1) =", y)

# %% [markdown]
# (`k3→1` is key 3: it names position 1 and carries attribute 1; `t0`, `t1` are the context
# tokens, attributes 0 and 1; positions count from 0.) The levels are computed from the population.
#
# **The model.** `attention_model(task, ...)`: h_j = E[x_j] + P_j; scores
# s_ij = (h_i W_Q)·(h_j W_K)/√d; o_i = Σ_j softmax(s_i)_j h_j W_V; logits = mean over positions i of
# GELU(o_i W₁) W₂. No residual connection, no LayerNorm, every weight N(0, fan_in^(−2γ)).
# `uniform=True` gives the same model with every attention weight frozen at 1/L.

# %% [markdown]
# ## E2: at small init attention is a bag of context
#
# Write ε for the scale of every weight. A score hᵢ W_Q W_Kᵀ h_jᵀ/√d is a product of four O(ε)
# factors: O(ε⁴). So softmax(s_i) = 1/L + O(ε⁴), every query computes the same
# ō = (1/L) Σ_j h_j W_V, and the logits are z = GELU(ō W₁) W₂ ≈ σ'(0) ō M with M = W₁W₂ and
# σ'(0) = 1/2. With p ≈ u (uniform) at init, the embedding velocity under gradient flow is
# (row vectors)
#
# $$\frac{dE_s}{dt} = -\frac{\partial R}{\partial E_s} \approx \frac{\sigma'(0)}{L} \sum_{j=1}^{L} \pi_j(s)\,\big(P(y\mid x_j = s) - u\big)\, M^\top W_V^\top, \tag{E2}$$
#
# E1 of lesson 04 with one shared read-out W_V M for all positions: the position of a token is
# lost. `ctxlab.theory.attention_embedding_velocity` evaluates E2; we hold it against the exact
# gradient by autograd at init.

# %%
model = attention_model(task, gamma=1.0, seed=[0, 1, 2])
with torch.no_grad():
    attn0 = model.attention(data.x)
    h = model.embedding[:, data.x] + model.position[:, None]
    actual = attn0 @ (h @ model.w_v[:, None])  # [K, N, L, d]: the output at every query
bag = bag_of_context(model, data.x)
off_uniform = float((attn0 - 1 / L).abs().max())
off_bag = float((actual - bag[:, :, None]).abs().max() / bag.abs().max())
e2 = cosine_per_model(attention_embedding_velocity(model, data), embedding_velocity(model, data))
print(f"largest |attention weight - 1/L| at init: {off_uniform:.1e}")
print(f"largest |output - bag| relative to the bag: {off_bag:.1e}")
print("cosine(E2, exact -dR/dE) per seed:", [f"{c:.5f}" for c in e2.tolist()])

# %% tags=["NBVAL_CHECK_OUTPUT"]
print("attention within 1e-3 of 1/L at init:", off_uniform < 1e-3)
print("every query's output within 1% of the bag:", off_bag < 1e-2)
print("E2 matches the exact velocity, cosine > 0.999 in every seed:", bool((e2 > 0.999).all()))

# %% [markdown]
# ## E3: the force on A = W_Q W_Kᵀ, and how A actually moves
#
# At uniform attention ∂R/∂s_ij = (1/L)⟨g_i, (h_j − h̄) W_V⟩, with g_i = ∂R/∂o_i =
# (σ'(0)/L)(p − e_y) Mᵀ the same for every query. Since s_ij = h_i A h_jᵀ/√d, the *force* on A is
#
# $$G \equiv -\frac{\partial R}{\partial A} \approx -\frac{1}{L\sqrt d}\,\mathbb E\Big[\sum_{i,j} \langle g_i,\ (h_j - \bar h) W_V\rangle\; h_i^\top h_j\Big]. \tag{E3}$$
#
# This is a gradient, not a time derivative: A is not a parameter. Gradient flow moves W_Q and W_K,
# dW_Q/dt = G W_K and dW_K/dt = Gᵀ W_Q, so
#
# $$\frac{dA}{dt} = G\, W_K W_K^\top + W_Q W_Q^\top\, G .$$
#
# Orders in ε: G carries six weight factors (h̄, h_j, h_j − h̄, W_V, W₁, W₂), so G = O(ε⁶); dA/dt
# adds W_K W_Kᵀ or W_Q W_Qᵀ: O(ε⁸), while A itself is O(ε²). Its *relative* rate is O(ε⁶), against
# O(ε²) for E (E2: W_V M is O(ε³), E is O(ε)). And G needs h_j − h̄ to carry a token that
# matters *relative to the bag*. Below: E3 against autograd, and both orders measured by scaling
# every weight of one model by c.

# %%
predicted, exact = qk_velocity(model, data)
e3 = cosine_per_model(predicted, exact)
print("cosine(E3's dA/dt, exact dA/dt) per seed:", [f"{c:.5f}" for c in e3.tolist()])
scales = torch.tensor([1.0, 0.5, 0.25])
force_norm, velocity_norm = [], []
for c in scales.tolist():
    scaled = attention_model(task, gamma=1.0, seed=0)
    with torch.no_grad():
        for p in scaled.parameters():
            p.mul_(c)
    force_norm.append(float(qk_force(scaled, data).norm()))
    velocity_norm.append(float(qk_velocity(scaled, data)[1].norm()))
log_c = scales.log()
slope_force = float(torch.tensor(force_norm).log().diff().div(log_c.diff()).mean())
slope_velocity = float(torch.tensor(velocity_norm).log().diff().div(log_c.diff()).mean())
print(f"‖G‖ ∝ c^{slope_force:.3f},  ‖dA/dt‖ ∝ c^{slope_velocity:.3f}")

# %% tags=["NBVAL_CHECK_OUTPUT"]
print("E3 (through W_Q, W_K) matches the exact dA/dt, cosine > 0.999 in every seed:", bool((e3 > 0.999).all()))
print("the force G is O(ε⁶), slope within 6 ± 0.05:", abs(slope_force - 6) < 0.05)
print("dA/dt is O(ε⁸), slope within 8 ± 0.05:", abs(slope_velocity - 8) < 0.05)

# %% [markdown]
# **Think.** Rank the parameters E, W_V, W_Q, W_K by their relative gradient ‖∇θ‖/‖θ‖ at init.
# How does the gap change with γ?

# %%
gammas = [0.5, 1.0, 1.5]
names = ["embedding", "w_v", "w_q", "w_k"]
rates = {}
for g in gammas:
    r = relative_gradient_rates(attention_model(task, gamma=g, seed=0), data)
    rates[g] = {n: float(r[n][0]) for n in names}
print(f"{'γ':>4s}" + "".join(f"{n:>11s}" for n in names))
for g, r in rates.items():
    print(f"{g:4.1f}" + "".join(f"{r[n]:11.1e}" for n in names))

# %% tags=["NBVAL_CHECK_OUTPUT"]
gap = {g: min(r["embedding"], r["w_v"]) / max(r["w_q"], r["w_k"]) for g, r in rates.items()}
print("γ = 1 and 1.5: W_Q and W_K at least 1000x slower than E and W_V:", gap[1.0] > 1000 and gap[1.5] > 1000)
print("the gap widens with γ:", gap[0.5] < gap[1.0] < gap[1.5])

# %% [markdown]
# At γ = 0.5 the query–key weights are only about ten times slower; at γ = 1 thousands of times,
# at γ = 1.5 a million: the ε-hierarchy of E2 and E3.

# %% [markdown]
# ## Gradient descent: the bag first, attention on the next stair
#
# `attention_experiment` trains three seeds at γ = 1 with full-batch plain GD, and the same
# models with attention frozen at 1/L, in one batched run (the command `ctxlab attention` runs
# exactly this and writes the JSON). Probes record the attention from the key (the query at the last
# position) to the position it names, and ‖W_Q W_Kᵀ‖.

# %%
result = attention_experiment(gammas=[1.0], seeds=[0, 1, 2], progress=False)
steps = result.trained.steps
attention = result.trained.extras["attention_to_target"]
qk = result.trained.extras["qk_norm"]
print(result.table())

# %%
fig = attention_figure(result)
plt.show()

# %% [markdown]
# What the figure shows, seed by seed (each claim is checked in the next cells, with its margin):
#
# * **top**: the loss leaves ln 2, touches H(Y | key), slides on to the bag's floor
#   H(Y | key, bag) (dotted) and rests there for a long time; then it takes the last stair down to
#   H(Y | key, x_p). The same model with attention frozen at 1/L (pale) follows it exactly up to the
#   bag's floor and stays there, about 0.11 nats above the last level;
# * **middle**: while the loss is on H(Y | key) and all along the bag's floor, the attention from the
#   key to the position it names stays inside the band 1/L ± 0.02; it moves only on the last stair
#   and ends near 0.41–0.43: clearly above 1/L = 0.33, but below 0.5. A soft shift is enough here,
#   because the rest of the model reads the attribute out of a small difference in the mix;
# * **bottom**: ‖W_Q W_Kᵀ‖ creeps before the last stair and doubles only once the loss has reached
#   the bag's floor, growing on the last stair;
# * the loss never rises by more than 0.01 once it has left ln 2.

# %%
last = levels[-1]
trained_end = torch.tensor([r.final for r in result.reads]) - last
uniform_end = torch.tensor([r.final for r in result.baseline_reads]) - last
flat = [result.flat_on_key_rung(k) for k in range(result.trained.n_models)]
flat_bag = [attention_on_rung(result.trained.loss[k], attention[k], bag_level, L) for k in range(len(attention))]
rise = torch.tensor([r.rise for r in result.reads])
at_bag = crossing_step(steps, result.trained.loss, bag_level + TOL)  # first step within 0.02 above the bag's floor
qk_doubles = torch.stack([crossing_step(steps, qk[k], 2 * float(qk[k, 0]), below=False) for k in range(len(qk))])
print("trained end - H(Y|key,x_p):", [f"{v:+.4f}" for v in trained_end.tolist()])
print("uniform end - H(Y|key,x_p):", [f"{v:+.4f}" for v in uniform_end.tolist()])
print("largest |attention - 1/L| while on H(Y|key):", [f"{v:.4f}" for v in flat])
print("largest |attention - 1/L| while on H(Y|key, bag):", [f"{v:.4f}" for v in flat_bag])
print("attention to the target at the end:", [f"{v:.3f}" for v in attention[:, -1].tolist()])
print("largest rise after leaving ln 2:", [f"{v:.4f}" for v in rise.tolist()])
print("loss reaches the bag's floor at step:", at_bag.tolist(), " ‖W_Q W_Kᵀ‖ doubles at step:", qk_doubles.tolist())

# %% tags=["NBVAL_CHECK_OUTPUT"]
print("uniform attention ends at least 0.1 above the last level, every seed:", bool((uniform_end >= 0.1).all()))
print("learned attention ends within 0.01 of the last level, every seed:", bool((trained_end.abs() <= 0.01).all()))
print("attention within 1/L ± 0.02 while the loss is on H(Y|key), every seed:",
      all(v is not None and v <= 0.02 for v in flat))
print("... and while it is on H(Y|key, bag), every seed:", all(v is not None and v <= 0.02 for v in flat_bag))
print("attention to the target ends at least 0.05 above 1/L, every seed:", bool((attention[:, -1] >= 1 / L + 0.05).all()))
print("attention to the target ends below 0.5 (a soft shift, not a switch), every seed:",
      bool((attention[:, -1] < 0.5).all()))
print("the loss never rises by more than 0.01 after leaving ln 2, every seed:", bool((rise <= 0.01).all()))
print("‖W_Q W_Kᵀ‖ doubles only after the loss has reached the bag's floor, every seed:",
      bool(((at_bag >= 0) & (qk_doubles > at_bag)).all()))

# %% [markdown]
# As E3 says, the query–key product is the last thing to move: the bag first learns everything a
# bag can (the key, then the counts of the context attributes), and only then, with E, W_V and M
# grown and a force that was O(ε⁶) at init, does A grow and attention shift. The uniform twin shows
# what that growth buys: the last stair.

# %% [markdown]
# ## Adam: the same model, the same task
#
# **Think.** Adam divides each coordinate's update by a running estimate of its gradient size.
# What does that do to W_Q and W_K, whose relative gradients are far below the others'?

# %%
ADAM_STEPS = 400
adam_model = attention_model(task, gamma=1.0, seed=[0, 1, 2])
adam = train(adam_model, data, ADAM_STEPS, optimizer="adam", lr=0.01, record_every=2, progress=False,
             probes={"attention": target_attention(task), "qk": lambda m: m.qk_norm()})
fig, axes = plt.subplots(1, 3, figsize=(12, 3.2))
for k in range(adam.n_models):
    color = SEED_COLORS[k]
    axes[0].plot(adam.steps, adam.loss[k], color=color, lw=1.2, label=f"seed {k}")
    axes[1].plot(adam.steps, adam.extras["attention"][k], color=color, lw=1.2)
    axes[2].semilogy(adam.steps, adam.extras["qk"][k], color=color, lw=1.2)
label_levels(axes[0], levels, LEVEL_NAMES)
axes[0].axhline(bag_level, color="grey", ls=":", lw=1.0, zorder=0, label="H(Y | key, bag)")
axes[1].axhspan(1 / L - TOL, 1 / L + TOL, color="grey", alpha=0.2, lw=0, label=f"1/L ± {TOL:g}")
axes[0].set_ylabel("loss (nats)")
axes[1].set_ylabel("attention: key → the\nposition it names")
axes[2].set_ylabel("‖W_Q W_Kᵀ‖")
axes[0].legend(fontsize=7, loc="center right")
axes[1].legend(fontsize=7)
for ax in axes:
    ax.set_xlabel("Adam step (lr 0.01)")
fig.tight_layout()
plt.show()

# %%
adam_reads = [measure_rungs(adam.steps, adam.loss[k], levels, TOL) for k in range(adam.n_models)]
adam_qk = adam.extras["qk"]
adam_grown = adam_qk[:, adam.index(100)] / adam_qk[:, 0]
adam_h1_dwell = [r.dwells()[1] for r in adam_reads]
adam_reach = crossing_step(adam.steps, adam.loss, last + TOL)
adam_attention_end = adam.extras["attention"][:, -1]
gd_h1_dwell = [r.dwells()[1] for r in result.reads]
gd_reach = crossing_step(steps, result.trained.loss, last + TOL)
print("Adam: ‖W_Q W_Kᵀ‖ at step 100 / at init:", [f"{v:.0f}" for v in adam_grown.tolist()])
print("steps resting on H(Y|key): Adam", adam_h1_dwell, " GD", gd_h1_dwell)
print("first step within 0.02 of the last level (-1: never): Adam", adam_reach.tolist(), " GD", gd_reach.tolist())
print("Adam: final loss", [f"{r.final:.3f}" for r in adam_reads], " attention to the target at the end",
      [f"{v:.3f}" for v in adam_attention_end.tolist()])

# %% tags=["NBVAL_CHECK_OUTPUT"]
print("Adam: ‖W_Q W_Kᵀ‖ at least 20x its init by step 100, every seed:", bool((adam_grown >= 20).all()))
print("Adam rests on H(Y|key) for less than a tenth of GD's time, every seed:",
      all(a < 0.1 * g for a, g in zip(adam_h1_dwell, gd_h1_dwell)))
print("Adam: seeds 0 and 2 within 0.02 of the last level by step 150:", bool(((adam_reach[[0, 2]] >= 0) & (adam_reach[[0, 2]] <= 150)).all()))
print("Adam: seed 1 still at least 0.05 above it at the end:", adam_reads[1].final - last >= 0.05)
print("Adam: seeds 0 and 2 end with attention within 1/L + 0.05:", bool((adam_attention_end[[0, 2]] < 1 / L + 0.05).all()))

# %% [markdown]
# Under Adam every parameter moves by about lr per step from the start, whatever the size of its
# gradient: ‖W_Q W_Kᵀ‖ is tens of times its init size within 100 steps, and the loss does not rest
# on any rung — it falls from ln 2 straight through H(Y | key). Two seeds reach the last level within
# about 100 steps, with attention hardly off 1/L at the end (below 1/L + 0.05): Adam's large weights
# read the answer out of a tiny shift in the mix. The third seed stalls at about 0.41, between the
# bag's floor and the last level, for the rest of the run. So Adam is fast, but the order that E2/E3
# predict — the bag first, attention last — is not visible: the ε-hierarchy is a property of
# gradient *flow*, and Adam's per-coordinate normalisation erases it. This is why the course
# teaches the theory with plain GD and shows Adam as the contrast.

# %% [markdown]
# ## Explore
#
# The explorer shows the run above: scrub through training and watch the mean attention map, the
# loss and ‖W_Q W_Kᵀ‖. *Think:* in which row of the map does attention first move, and at which
# rung of the loss?

# %%
# NBVAL_IGNORE_OUTPUT
from ctxlab.widgets import attention_explorer_for

attention_explorer_for(result)

# %% [markdown]
# > **Paper vs. this course.**
# > *From the paper's abstract* (Yao, Hang & Xu, *Context Staircase*, 2026), in our words: the
# > gradient-flow analysis at small init covers self-attention models as well as feed-forward
# > ones; embeddings align with signatures of increasing order.
# >
# > *This course's reconstruction* (the paper's equations were not available to us): the
# > bag-of-context form E2, the force E3 and the velocity of A through W_Q and W_K with their orders
# > ε⁶ and ε⁸, the pointer task, the uniform-attention twin, the probes and the Adam contrast are
# > ours, checked numerically here with a no-residual attention block, GELU head and plain GD.

# %% [markdown]
# ## Summary
#
# * At small init attention scores are O(ε⁴): attention is uniform, a bag of context (E2).
# * The force on A = W_Q W_Kᵀ is O(ε⁶) (E3); through W_Q and W_K, A moves at O(ε⁸).
# * Under GD the loss passes H(Y | key) and rests on the bag's floor with attention at 1/L;
#   attention moves towards the named position, and ‖W_Q W_Kᵀ‖ grows, on the last stair, which the
#   same model with attention frozen at 1/L cannot take.
# * Adam grows W_Q W_Kᵀ from the first steps: the small-init hierarchy is a gradient-flow effect.

# %% [markdown]
# **Next.** Open `exercises/07_attention.ipynb`: compute the bag-of-context output by hand and
# write the detector that says when attention leaves uniform.

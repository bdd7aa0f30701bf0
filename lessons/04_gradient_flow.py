# %% [markdown]
# # Lesson 04 — Gradient flow at small initialization (Emb-MLP)
#
# **Learning goals.** After this lesson you can
# 1. derive the leading-order equation (E1) for how token embeddings move at small init, step by step;
# 2. check E1 against the exact (autograd) gradient and say when it holds: how the agreement
#    depends on the init exponent γ and on the width d;
# 3. say for how long during training E1 keeps describing the actual motion of the embeddings;
# 4. predict from E1 how fast a token's embedding moves: ∝ its frequency × ‖its signature − uniform‖,
#    and verify it on a task with Zipf-distributed tokens.
#
# **Prerequisites.** Lesson 01 (order-1 signatures P(y | x_i = s)); the chain rule; softmax and
# cross-entropy gradients.
#
# **Run time.** About 5 s on a 2-core machine (measured by `benchmarks/notebook_budget.py`).

# %% [markdown]
# ## Why a formula for the first steps?
#
# Lesson 03 showed the staircase: from small init the loss rests on plateaus at the conditional
# entropies. What happens to the embeddings *before* the first drop? Nothing seems to happen in
# the loss, yet the embeddings are already organising. At small init the network is nearly
# linear and its output nearly uniform, so the gradient has a closed form in terms of data
# statistics alone. That form, E1, is the reason the first structure embeddings take is the
# order-1 signature: it is literally the signature, pushed through a fixed linear map.

# %%
import matplotlib.pyplot as plt
import torch

from ctxlab.align import class_cosines
from ctxlab.rungs import stair_onsets
from ctxlab.models import make_model
from ctxlab.plots import e1_agreement_figure, label_sub_levels
from ctxlab.signatures import joint
from ctxlab.tasks import hierarchy_task, with_token_frequencies, zipf
from ctxlab.theory import (
    cosine_per_model,
    e1_agreement,
    embedding_velocity,
    mlp_embedding_velocity,
    plateau_levels,
    whether_levels,
)
from ctxlab.train import train

task = hierarchy_task()
data = task.population
V, L, C = data.vocab_size, data.seq_len, data.n_labels

# %% [markdown]
# ## Deriving E1
#
# **The model.** Emb-MLP maps a sequence x = (x₁, …, x_L) to logits
#
# $$z(x) = W_2^\top\, \sigma\Big(\sum_{i=1}^{L} W_1^{(i)\top} E_{x_i}\Big),$$
#
# where E_s ∈ ℝᵈ is the embedding of token s, W₁^{(i)} ∈ ℝ^{d×H} is the block of the first layer
# that reads position i, W₂ ∈ ℝ^{H×C}, and σ = GELU. No biases. Every weight starts at scale
# ε = fan_in^{−γ}. The loss is the cross-entropy R = E_{x,y}[−ln softmax(z(x))_y], and gradient
# flow moves E by dE_s/dt = −∂R/∂E_s (gradient descent with learning rate η is this flow sampled at
# t = η · step).
#
# **Step 1 — the gradient by the chain rule.** For one example, ∂(−ln p_y)/∂z = p − e_y with
# p = softmax(z). The embedding E_s enters through every position where x_i = s, so
#
# $$-\frac{\partial R}{\partial E_s} = \sum_i \mathbb{E}\Big[\mathbf 1\{x_i = s\}\; J_i(x)\,(e_y - p(x))\Big],
# \qquad J_i(x) = \frac{\partial z}{\partial E_{x_i}}^{\!\top} = W_1^{(i)}\,\mathrm{diag}\big(\sigma'(h(x))\big)\,W_2,$$
#
# with h(x) = Σᵢ W₁^{(i)⊤} E_{x_i} the hidden pre-activation.
#
# **Step 2 — the softmax is uniform.** Each factor is O(ε), so h = O(ε²) and z = O(ε³) (three
# factors: E, W₁, W₂). Then p = softmax(z) = u + O(ε³) with u = 𝟙/C, the uniform distribution.
#
# **Step 3 — the Jacobian is a product of weights.** Since h = O(ε²) is tiny, σ'(h) = σ'(0) + O(ε²),
# hence J_i(x) = σ'(0) W₁^{(i)} W₂ + O(ε⁴) — the same matrix for every x. Write
# M_i = W₁^{(i)} W₂ ∈ ℝ^{d×C}. For GELU, gelu(v) = v Φ(v), so σ'(0) = Φ(0) = **1/2**.
#
# **Step 4 — only order-1 statistics survive.** With J_i constant and p = u, the expectation only
# needs E[𝟙{x_i = s}(e_y − u)] = P(x_i = s, ·) − π_i(s) u, where π_i(s) = P(x_i = s) and
# P(x_i = s, ·) is the vector of P(x_i = s, y) over y. So
#
# $$\boxed{\;\frac{dE_s}{dt} \approx \sigma'(0) \sum_i M_i\,\big(P(x_i = s,\cdot) - \pi_i(s)\,u\big)
# = \sigma'(0)\sum_i \pi_i(s)\, M_i\,(q_{i,s} - u)\;}\qquad\text{(E1)}$$
#
# with q_{i,s} = P(y | x_i = s), the order-1 signature of lesson 01. Read it as: **token frequency ×
# (its label distribution − uniform), through a fixed linear map.** Nothing of order 2 or higher
# appears: pairs of tokens enter only through the neglected terms.
#
# **What the error terms are.** Relative to the leading term, the activation's curvature
# contributes σ''(0)·h = O(ε²) (GELU's σ''(0) = 2φ(0) ≈ 0.8 is not zero), and p − u = O(ε³)
# contributes O(ε³): the curvature term dominates. A relative error δ that points away from E1
# tilts it by an angle ≈ |δ|, and 1 − cos θ ≈ θ²/2 is *quadratic* in the angle, so
# **1 − cosine(E1, exact) falls like ε⁴**. With this model's scales (E: d^{−γ}, W₁: (L·d)^{−γ},
# summed over L·d inputs) the size of h is ∝ (L d²)^{−γ}, so log₁₀(1 − cosine) should fall by
# 2 log₁₀(L d²) per unit of γ. The errors shrink as γ grows and as the width grows.
# `ctxlab.theory.mlp_embedding_velocity` implements E1; the autograd gradient
# `embedding_velocity` is the truth to hold it against.

# %% [markdown]
# > **Think.** At γ = 0.5 (standard init) the weights are O(1/√fan_in). Is the output then still
# > close to uniform? Which of the steps above fails first?

# %% [markdown]
# ## E1 against autograd, one model at a time
#
# Take two models of width d = 32 at γ = 1 (small init) and γ = 0.5 (standard init), compute both
# velocities at initialization, and compare them entry by entry.

# %%
pair = make_model("mlp", task, gamma=[1.0, 0.5], seed=0, d=32)
predicted = mlp_embedding_velocity(pair, data)
exact = embedding_velocity(pair, data)
cosines = cosine_per_model(predicted, exact)

fig, axes = plt.subplots(1, 2, figsize=(8.5, 3.8))
for ax, k, g in zip(axes, range(2), pair.gammas):
    p, e = predicted[k].flatten(), exact[k].flatten()
    ax.scatter(e, p, s=4, alpha=0.5)
    lim = float(torch.cat([p, e]).abs().max())
    ax.plot([-lim, lim], [-lim, lim], color="grey", lw=0.8, ls="--")
    ax.set_title(f"γ = {g:g}: cosine {float(cosines[k]):.4f}")
    ax.set_xlabel("autograd  −∂R/∂E (entries)")
axes[0].set_ylabel("E1 prediction (entries)")
fig.tight_layout()
plt.show()

# %%
# NBVAL_CHECK_OUTPUT
print("gamma = 1:   1 - cosine(E1, autograd) < 1e-4:", bool(1 - cosines[0] < 1e-4))
print("gamma = 0.5: cosine(E1, autograd) between 0.9 and 0.99:", bool(0.9 < cosines[1] < 0.99))

# %% [markdown]
# At γ = 1 every entry lies on the diagonal: E1 *is* the gradient, to 1 − cosine < 10⁻⁴. At
# γ = 0.5 the points scatter: the corrections are no longer small. The horizontal row of points at
# prediction 0 shows them most plainly. It belongs to the anchors: their order-1 rows are uniform
# (lesson 01), so E1 gives them no velocity at all, yet autograd moves them (entries up to about
# ±0.001). Everything that moves them comes from the terms E1 drops.

# %% [markdown]
# ## How the agreement depends on γ and on the width
#
# One batched ensemble per width: 5 values of γ × 3 seeds, all evaluated at initialization
# (`ctxlab.theory.e1_agreement`; `ctxlab figures` redraws this figure from the command line).

# %%
agreement = e1_agreement(task, gammas=[0.5, 0.75, 1.0, 1.25, 1.5], widths=[16, 32, 128], seeds=[0, 1, 2])
fig = e1_agreement_figure(agreement)
plt.show()
for d, cos, fitted, predicted_slope in zip(agreement.widths, agreement.cosines.mean(-1), agreement.fitted_slope,
                                           agreement.predicted_slope):
    print(f"d = {d:>3}: mean cosine " + "  ".join(f"γ={g:g}: {float(c):.5f}" for g, c in zip(agreement.gammas, cos))
          + f"; slope of log10(1 - cos) for γ >= {agreement.fit_from:g}: {fitted:.2f}, predicted {predicted_slope:.2f}")

# %%
# NBVAL_CHECK_OUTPUT
print("fitted slope within 10% of -2 log10(L d^2) for every width:",
      bool(((agreement.fitted_slope / agreement.predicted_slope - 1).abs() < 0.1).all()))
at_half = agreement.cosines[:, agreement.gammas.index(0.5)].mean(-1)
print("gamma = 0.5: mean cosine between 0.9 and 0.995 at every width, and higher for wider models:",
      bool(((at_half > 0.9) & (at_half < 0.995)).all() and (at_half.diff() > 0).all()))
print("gamma >= 1: 1 - cosine < 1e-3 for every model and width:",
      bool((1 - agreement.cosines[:, agreement.gammas.index(1.0):] < 1e-3).all()))

# %% [markdown]
# On the log scale each width falls on a straight line in γ whose slope is the predicted
# −2 log₁₀(L d²): −5.8, −7.0 and −9.4 decades per unit of γ for d = 16, 32 and 128 (printed). The
# dotted lines have those slopes; each is drawn a fixed factor below its data, so that it does not
# hide under the points it predicts. That is
# the ε⁴ law: the error of E1 is O(ε²), and 1 − cosine is its square. At a fixed γ, wider models
# agree better, since their weights are smaller too. At γ = 0.5 the formula is only a rough guide
# (mean cosine 0.92 at d = 16 up to 0.99 at d = 128).

# %% [markdown]
# ## How long does E1 keep describing training?
#
# E1 is a statement about the *current* weights: it needs the softmax near uniform and the
# hidden layer near linear. Both hold until the logits become O(1); the run below shows when that
# is. We train a γ = 1 and a γ = 0.5 model with plain GD (lr 1) and record, at every
# step, (a) the cosine between E1 and the exact velocity, and (b) the cosine between the actual
# displacement E(t) − E(0) and the sum of E1's predictions along the way.
#
# > **Think.** Which will fail first: the instantaneous velocity, or the accumulated displacement?

# %%
def velocities(model):
    """Probe: E1 and the exact velocity, stacked: [K, 2, V, d]."""
    with torch.enable_grad():
        return torch.stack([mlp_embedding_velocity(model, data), embedding_velocity(model, data)], dim=1)


steps = 400
run = train(make_model("mlp", task, gamma=[1.0, 0.5], seed=0, d=32), data, steps, lr=1.0,
            record_every=1, probes={"v": velocities})
v = run.extras["v"]  # [K, T, 2, V, d]
instantaneous = torch.stack([cosine_per_model(v[k, :, 0], v[k, :, 1]) for k in range(2)])
integrated = torch.cumsum(v[:, :-1, 0], dim=1)  # lr = 1: the displacement E1 predicts after t steps
moved = run.embeddings[:, 1:] - run.embeddings[:, :1]
accumulated = torch.stack([cosine_per_model(integrated[k], moved[k]) for k in range(2)])
onsets = stair_onsets(run.steps, run.loss, plateau_levels(data))[:, 0]

# %%
fig, axes = plt.subplots(2, 1, figsize=(8, 5.8), sharex=True, layout="constrained")
for k, g in enumerate(run.gammas):
    axes[0].plot(run.steps, run.loss[k], color=f"C{k}", label=f"γ = {g:g}")
    axes[1].plot(run.steps, instantaneous[k], color=f"C{k}", label=f"γ = {g:g}: velocity")
    axes[1].plot(run.steps[1:], accumulated[k], color=f"C{k}", ls="--", label=f"γ = {g:g}: displacement")
for order, level in enumerate(plateau_levels(data)[:3]):
    axes[0].axhline(level, color="grey", ls=":", lw=0.8)
    axes[0].annotate(f"H{order} = {level:.3f}", (1.0, level), xycoords=("axes fraction", "data"), xytext=(3, 0),
                     textcoords="offset points", va="center", fontsize=8, color="dimgrey")
whether = whether_levels(task)[:1]  # lesson 03's sub-level of the first stair: of the key only whether A(x1) = 0
label_sub_levels(axes[0], whether)
for ax in axes:
    ax.axvline(int(onsets[0]), color="C0", lw=0.8, ls="-.", label="γ = 1: loss halfway to H1" if ax is axes[0] else None)
axes[0].set_ylabel("loss (nats)")
axes[1].set_ylabel("cosine with E1")
axes[1].set_xlabel("GD step")
for ax, ncol in zip(axes, (3, 4)):  # above each panel: inside, a legend would cover a curve or a level
    ax.legend(fontsize=8, loc="lower left", bbox_to_anchor=(0.0, 1.0), ncol=ncol, borderaxespad=0.2)
plt.show()
first_break = int(run.steps[(instantaneous[0] < 0.99).float().argmax()])
half_break = int(run.steps[(instantaneous[1] < 0.5).float().argmax()])
on_plateau = run.index(int(onsets[0]) + 60)
print(f"gamma = 1: loss halfway to H1 at step {int(onsets[0])}; E1 velocity cosine first < 0.99 at step {first_break}; "
      f"displacement cosine 60 steps later {float(accumulated[0, on_plateau - 1]):.2f}")
print(f"gamma = 0.5: velocity cosine {float(instantaneous[1, 0]):.2f} at step 0, first < 0.5 at step {half_break}")
print(f"sub-level of the first stair (dotted): {whether[0][0]} = {whether[0][1]:.4f}")

# %%
# NBVAL_CHECK_OUTPUT
print("gamma = 1: velocity cosine >= 0.99 until within 40 steps of the halfway point:", abs(first_break - int(onsets[0])) <= 40)
print("gamma = 1: displacement cosine > 0.95 from then to step 400:", bool((accumulated[0, run.index(int(onsets[0])) - 1:] > 0.95).all()))
print("gamma = 0.5: velocity cosine > 0.95 at step 0, below 0.5 within 60 steps:",
      bool(instantaneous[1, 0] > 0.95) and half_break <= 60)

# %% [markdown]
# At γ = 1 the velocity cosine stays at 1 through the whole initial plateau and breaks down only
# when the loss is about halfway down its first stair: by then the logits are O(1) and the other
# terms switch on. The *accumulated* displacement stays aligned with E1's sum much longer, through
# the H₁ plateau to the end of the run (cosine above 0.95, printed).
#
# The γ = 1 curve does not take its first stair in one drop: right at the halfway line it bends,
# and from about 1.02 it comes down more slowly on to H1. No level of the ladder lies there. The
# dotted line at the bend is the first stair's sub-level of lesson 03,
# H(Y | [A(x1) = 0]) = 1.020 (printed): the best loss when of the key only *whether* its attribute
# is 0 is known. The curve bends near it but does not rest on it; which of the key's attribute
# directions this seed learns first, E1 does not say (lesson 06 takes up *whether* before *which*).
#
# At γ = 0.5 there is no initial plateau at ln C: the loss leaves it at once. E1 describes the
# first few steps (cosine 0.97 at step 0); the velocity cosine then collapses, falling below 0.5
# (at the step printed above) when the loss is already close to H1. It climbs back to about 0.47
# near step 180, while the loss slides from H1 towards H2, and falls again as the loss comes to
# rest on H2. From the first few dozen steps on, E1 no longer describes this run.

# %% [markdown]
# ## Who moves fastest: frequency × ‖signature − uniform‖
#
# E1 says token s moves at speed ‖dE_s/dt‖ = σ'(0) π(s) ‖M (q_s − u)‖ (one position). If M acts on
# the label directions roughly like a multiple of an isometry (d ≫ C at random init), the speed
# is ∝ **π(s) · ‖q_s − u‖**: rare tokens and tokens whose label distribution is nearly uniform
# learn slowly. To test it, skew the key frequencies to Zipf's law (π ∝ 1/rank) with
# `with_token_frequencies`, on two versions of the hierarchy task whose keys differ in ‖q − u‖
# (order-1 weight 0.4 and 0.15), and measure the exact gradient norm of every key at init,
# averaged over 8 seeds.

# %%
keys = task.role_tokens("key")
probs = zipf(len(keys), V)
models = make_model("mlp", task, gamma=1.0, seed=list(range(8)), d=32)
drive, speed = [], []
for mix in [(0.4, 0.3, 0.3), (0.15, 0.45, 0.4)]:
    skewed = with_token_frequencies(hierarchy_task(mix=mix).population, 0, probs)
    table = joint(skewed, (0,))[keys]  # P(x1 = s, y) for the keys
    pi = table.sum(-1)
    drive.append(pi * (table / pi[:, None] - 1 / C).norm(dim=-1))
    speed.append(embedding_velocity(models, skewed)[:, keys].norm(dim=-1).mean(0).double())
x, y = torch.cat(drive).log(), torch.cat(speed).log()
slope = float(((x - x.mean()) * (y - y.mean())).sum() / ((x - x.mean()) ** 2).sum())

fig, ax = plt.subplots(figsize=(5, 4))
for (dr, sp), label in zip(zip(drive, speed), ["order-1 weight 0.4", "order-1 weight 0.15"]):
    ax.loglog(dr, sp, "o", label=label)
ax.set_xlabel("π(s) · ‖q_s − u‖  (frequency × distance from uniform)")
ax.set_ylabel("‖∂R/∂E_s‖ at init (autograd)")
ax.set_title(f"Zipf keys: log-log slope {slope:.2f}")
ax.legend()
plt.show()

# %%
# NBVAL_CHECK_OUTPUT
span = float(torch.cat(drive).max() / torch.cat(drive).min())
print("log-log slope of update size vs frequency x ||q - u|| within 0.05 of 1:", abs(slope - 1) < 0.05)
print("over more than a decade of frequency x ||q - u||:", span > 10)

# %% [markdown]
# A slope of 1 over more than a decade: doubling a token's frequency doubles its initial speed,
# and so does doubling how far its labels are from uniform. Two consequences worth keeping:
#
# * **Rare tokens lag.** Under Zipf statistics the tail's early updates are smaller in proportion to
#   its frequency (the slope above; nothing is trained on Zipf keys here). That the "rare-token problem" of real language models has the same root is a
#   hypothesis, not shown here; lesson 16 takes it up on a classroom task.
# * **Equal signatures, equal updates.** Tokens with the same q and frequency receive the same
#   velocity (same M, same drive). From a tiny init they move together and *condense*. The run
#   above shows it: at step 400 the keys with the same attribute point the same way at γ = 1,
#   while at γ = 0.5 the large random E(0) hides this, because equal updates are added to
#   unequal starting points (the displacements alone still agree).

# %%
# NBVAL_CHECK_OUTPUT
key_ids = task.role_tokens("key")
key_attr = task.info["attribute"][key_ids]
within_now, _ = class_cosines(run.embeddings[:, -1][:, key_ids], key_attr)
within_moved, _ = class_cosines((run.embeddings[:, -1] - run.embeddings[:, 0])[:, key_ids], key_attr)
print("step 400, keys of the same attribute: cosine > 0.9 at gamma = 1, < 0.7 at gamma = 0.5:",
      bool(within_now[0] > 0.9 and within_now[1] < 0.7))
print("their displacements E(400) - E(0) agree at both gammas (cosine > 0.85):", bool((within_moved > 0.85).all()))

# %% [markdown]
# > **Paper vs. this course.**
# > *From the paper's abstract* (Yao, Hang & Xu, *Context Staircase*, 2026), in our words: a
# > gradient-flow analysis under small initialization explains why embeddings align with
# > probability signatures, and why low-order signatures come first, for feed-forward and
# > self-attention models.
# >
# > *This course's reconstruction* (the paper's equations were not available to us): the
# > derivation above and its form E1 (uniform softmax + Jacobian = product of weights, with GELU's
# > σ'(0) = 1/2), the error estimate (relative O(ε²), so 1 − cosine ∝ ε⁴), the measurements of how long E1 holds, and the
# > frequency × ‖q − u‖ law with its Zipf test. They are one consistent way to make the abstract's
# > gradient-flow claim concrete, checked numerically here, not the paper's own statements.

# %% [markdown]
# ## Summary
#
# * At small init the softmax is uniform and the Jacobian of the logits with respect to an
#   embedding is the fixed matrix σ'(0) W₁^{(i)} W₂. This gives
#   **E1: dE_s/dt ≈ σ'(0) Σᵢ πᵢ(s) Mᵢ (q_{i,s} − u)**, driven by the order-1 signature only.
# * E1 matches the exact gradient to 1 − cosine < 10⁻³ at γ ≥ 1; the gap falls like ε⁴ (1 − cosine
#   is quadratic in E1's O(ε²) relative error). At γ = 0.5 E1 is visibly off, more so in narrow models.
# * During training E1 tracks the velocity until the loss is about halfway down the first stair,
#   and the displacement it accumulates stays aligned (cosine above 0.95) through the H₁ plateau
#   to the end of the run.
# * Update size ∝ frequency × ‖signature − uniform‖ (log-log slope ≈ 1 on Zipf keys): rare and
#   uninformative tokens learn slowly; tokens with equal signatures condense.
#
# **Next.** Open `exercises/04_gradient_flow.ipynb`: implement E1 yourself and pass the cosine
# check, predict how much faster one token moves than another, then measure the ε⁴ law of its error
# yourself across init scales. Lesson 05 follows E1 past the
# first steps: why the modes of the order-1 signature switch on one after another.

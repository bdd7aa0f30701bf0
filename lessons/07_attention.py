# %% [markdown]
# # Lesson 07 — Self-attention at small initialization
#
# **Learning goals.** After this lesson you can
# 1. explain why one attention layer at small init is a *bag of context*: its scores are O(ε⁴),
#    so every position gets weight 1/L (equation E2);
# 2. derive why the query–key product A = W_Q W_Kᵀ hardly moves until the pair residual of
#    lesson 06 appears (equation E3), and read that off per-parameter gradient rates;
# 3. watch, under gradient descent, attention on the informative token stay at 1/L through the
#    plateau and move only later, and ‖W_Q W_Kᵀ‖ grow only after the order-2 fit has begun;
# 4. say why Adam breaks this picture.
#
# **Prerequisites.** Lesson 04 (E1), lesson 06 (the residual pair statistic); softmax attention.
#
# **Run time.** About 40 seconds on a laptop CPU.

# %% [markdown]
# ## Why attention needs a lesson of its own
#
# In the Emb-MLP of lessons 03–06 every position has its own read-out, so a token's place in the
# sequence is known to the model. In a transformer the informative token can sit anywhere, and
# *attention* has to find it. At small init attention cannot find anything: its scores are a
# product of four small matrices. So what does a small-init attention layer compute first, and
# when does it start to look at the right token?

# %%
import matplotlib.pyplot as plt
import torch

from ctxlab.rungs import crossing_step
from ctxlab.models import make_model
from ctxlab.tasks import partner_task
from ctxlab.theory import bag_of_context, departure_step, partner_attention
from ctxlab.train import relative_gradient_rates, train

task = partner_task(n_keys=6, n_partners=6, n_fillers=1, seq_len=6)
data = task.population
L = data.seq_len
h0, h1, h2 = task.info["levels"]
print(task.description)
print(f"{data.n} sequences, L = {L}; plateaus ln C = {h0:.3f}, H(Y|key) = {h1:.3f}, H(Y|key, partner) = {h2:.3f}")
print("example sequences:", [" ".join(task.token_names[t] for t in row) for row in data.x[[0, 40, 150]].tolist()])

# %% [markdown]
# **The task.** The key sits last; one partner token sits at a random earlier position; the other
# positions hold a filler. The label is A(key) with probability 1/2 and A(key) + A(partner)
# (mod 3) otherwise, so the key alone gets the loss down to H(Y | key), and the pair to
# H(Y | key, partner). The levels are computed from the population.
#
# **The model.** `make_model("attention", ...)`: h_j = E[x_j] + P_j; scores
# s_ij = (h_i W_Q)·(h_j W_K)/√d; o_i = Σ_j softmax(s_i)_j h_j W_V; logits = mean over positions i of
# GELU(o_i W₁) W₂. No residual connection (the default), no LayerNorm.

# %% [markdown]
# ## E2: at small init attention is a bag of context
#
# Every weight has scale ε. A score is hᵢᵀ W_Q W_Kᵀ h_j / √d, a product of four O(ε) factors:
# O(ε⁴). So softmax(s_i) = 1/L + O(ε⁴), and
#
# $$o_i \approx \frac1L\sum_j h_j W_V \quad\text{(the same for every query } i).$$
#
# The attention layer is a bag of context: the head sees the *average* of the value vectors. The
# leading-order embedding velocity is then E1 with the bag in place of the positions,
#
# $$\frac{dE_s}{dt} \approx \sigma'(0)\,\frac1L \sum_j \pi_j(s)\; W_V M\,\big(P(y\mid x_j = s) - u\big), \qquad M = W_1 W_2, \tag{E2}$$
#
# (with a residual connection a direct term π_L(s) M (P(y | x_L = s) − u) without the factor W_V
# is added). `ctxlab.theory.bag_of_context` computes the bag; compare it with the model at init.

# %%
model = make_model("attention", task, gamma=1.0, seed=[0, 1], d=16, hidden=32)
with torch.no_grad():
    attn0 = model.attention(data.x)
    h = model.embedding[:, data.x] + model.position[:, None]
    actual = attn0 @ (h @ model.w_v[:, None])  # [K, N, L, d]: the output at every query
bag = bag_of_context(model, data.x)
print("largest |attention weight - 1/L| at init:", f"{float((attn0 - 1 / L).abs().max()):.1e}")
print("largest |output - bag| relative to the bag:", f"{float((actual - bag[:, :, None]).abs().max() / bag.abs().max()):.1e}")

# %% [markdown]
# ## E3: the query–key product waits for the pair residual
#
# At uniform attention the gradient of the loss with respect to a score is
# ∂R/∂s_ij = (1/L) ⟨W_V g_i, h_j − h̄⟩ with g_i = M(p − e_y)/L the back-propagated error. So
#
# $$\frac{dA}{dt} \approx -\frac{1}{L\sqrt d}\,\mathbb E\Big[\sum_{i,j} \langle W_V g_i,\ h_j - \bar h\rangle\; h_i h_j^\top\Big]. \tag{E3}$$
#
# Three things follow. (1) dA/dt carries factors E·E·W_V·M: it is O(ε⁵), much smaller than the
# gradients of E or W_V. (2) It needs h_j − h̄ to correlate with the error, i.e. a token that
# matters *relative to the bag*: on the first plateau the order-1 part of the error is averaged
# away (lesson 06), and what is left is the pair residual R(key, partner). (3) So A can only grow
# after E, W_V and M have grown and the pair residual is being fitted. Attention is the last to move.

# %% [markdown]
# **Think.** Rank the parameters E, W_V, W_Q, W_K by their relative gradient ‖∇θ‖/‖θ‖ at init.
# Does your ranking change if the attention block has a residual connection r = h + o?

# %%
gammas = [0.5, 1.0, 1.5]
names = ["embedding", "w_v", "w_q", "w_k"]
rates = {}
for residual in (False, True):
    for g in gammas:
        probe_model = make_model("attention", task, gamma=g, seed=0, d=16, hidden=32, residual=residual)
        r = relative_gradient_rates(probe_model, data)
        rates[residual, g] = {n: float(r[n][0]) for n in names}
print(f"{'residual':>9s} {'γ':>4s}" + "".join(f"{n:>11s}" for n in names) + f"{'E / W_V':>9s}")
for (residual, g), r in rates.items():
    print(f"{residual!s:>9s} {g:4.1f}" + "".join(f"{r[n]:11.1e}" for n in names) + f"{r['embedding'] / r['w_v']:9.1f}")

# %% tags=["NBVAL_CHECK_OUTPUT"]
slow = all(max(r["w_q"], r["w_k"]) < 0.1 * min(r["embedding"], r["w_v"]) for r in rates.values())
print("W_Q and W_K at least 10x slower than E and W_V everywhere:", slow)
print("no residual, γ >= 1: E and W_V within a factor 2:",
      all(0.5 < rates[False, g]["embedding"] / rates[False, g]["w_v"] < 2 for g in (1.0, 1.5)))
print("residual, γ >= 1: E at least 3x faster than W_V:", all(rates[True, g]["embedding"] > 3 * rates[True, g]["w_v"] for g in (1.0, 1.5)))

# %% [markdown]
# In our default block (no residual) a token reaches the head *only* through W_V, so E and W_V
# are two factors of the same product and move at comparable relative rates. With a residual
# connection E also has a direct path to the head (the E1 term without W_V) and moves faster than
# W_V, the ordering E ≫ W_V ≫ W_Q, W_K. In both, W_Q and W_K are orders of magnitude slower, and
# the gap widens with γ: the ε-hierarchy of E3.

# %% [markdown]
# ## Gradient descent: attention waits
#
# Two seeds, γ = 1, full-batch GD with lr 0.4 (lr 1 is unstable for this model once the weights
# have grown). A probe records the mean attention weight from the key (the last position, the
# query) to the partner's position, and `model.qk_norm()` records ‖W_Q W_Kᵀ‖.

# %%
STEPS = 3400
gd = train(model, data, STEPS, lr=0.4, record_every=25, progress=False,
           probes={"partner": partner_attention(task), "qk": lambda m: m.qk_norm()})
steps, loss = gd.steps, gd.loss
E = gd.embeddings.double()
partners = task.role_tokens("partner")
moved = (E[:, :, partners] - E[:, :1, partners]).flatten(2).norm(dim=-1) / E[:, :1, partners].flatten(2).norm(dim=-1)

# %%
fig, axes = plt.subplots(3, 1, figsize=(7, 7.5), sharex=True)
for k in range(gd.n_models):
    axes[0].plot(steps, loss[k], lw=1, label=f"seed {k}")
    axes[1].plot(steps, gd.extras["partner"][k], lw=1)
    axes[2].semilogy(steps, gd.extras["qk"][k], lw=1, label=f"‖W_Q W_Kᵀ‖ seed {k}")
    axes[2].semilogy(steps, moved[k], lw=1, ls="--", label=f"partner ‖ΔE‖ / ‖E(0)‖ seed {k}")
for level in (h0, h1, h2):
    axes[0].axhline(level, color="gray", ls="--", lw=0.7)
axes[1].axhspan(1 / L - 0.01, 1 / L + 0.01, color="gray", alpha=0.2, label="1/L ± 0.01")
axes[0].set_ylabel("loss")
axes[1].set_ylabel("attention key → partner")
axes[2].set_xlabel("GD step")
axes[0].legend(fontsize=8)
axes[1].legend(fontsize=8)
axes[2].legend(fontsize=7, ncol=2)
plt.show()

# %% [markdown]
# The loss rests at ln C for about two thousand steps, then falls, with a brief shoulder above
# H(Y | key) rather than a long plateau at it: in this small model the first two stairs partly
# merge. Late in the run the loss spikes: lr 0.4 is at the edge of stability once the weights have
# grown (plain GD, no schedule). Three onsets, per seed:
#
# * **order-2 onset**: the partner embeddings, which have no order-1 signal and sat still, start
#   to move (‖ΔE_partner‖ > 10 % of their init size);
# * **‖W_Q W_Kᵀ‖ growth**: the norm exceeds its init value by 10 %;
# * **attention leaves uniform**: the key → partner weight leaves 1/L ± 0.01.

# %%
order2 = departure_step(steps, moved, 0.1)
qk_grows = departure_step(steps, gd.extras["qk"], 0.1, relative=True)
leaves = departure_step(steps, gd.extras["partner"] - 1 / L, 0.01)
below_h1 = crossing_step(steps, loss, h1)
print("order-2 onset (partners move):", order2.tolist())
print("loss below H(Y|key):           ", below_h1.tolist())
print("‖W_Q W_Kᵀ‖ starts to grow:     ", qk_grows.tolist())
print("attention leaves 1/L ± 0.01:   ", leaves.tolist(), "(-1: not within the run)")
print(f"attention on the partner at step {STEPS}:", [round(float(a), 3) for a in gd.extras["partner"][:, -1]],
      f"(1/L = {1 / L:.3f})")

# %% tags=["NBVAL_CHECK_OUTPUT"]
plateau = steps[None, :] <= below_h1[:, None]  # the plateau and the first stair
flat = ((gd.extras["partner"] - 1 / L).abs() <= 0.01) | ~plateau
print("attention on the partner within 1/L ± 0.01 until the loss is below H(Y|key), all seeds:", bool(flat.all()))
print("‖W_Q W_Kᵀ‖ grows no earlier than the order-2 onset, all seeds:", bool((qk_grows >= order2).all()))

# %% [markdown]
# As E3 says, the query–key product is the last thing to move: first the bag learns the key,
# then the partner embeddings start to carry their attribute (the bag plus the GELU head can read
# a pair from the sum), and only then, with E, W_V and M grown and the pair residual present,
# does A grow and attention shift towards the partner.

# %% [markdown]
# ## Adam: the hierarchy disappears
#
# **Think.** Adam divides each coordinate's update by a running estimate of its gradient size.
# What does that do to a parameter whose gradient is 10⁴ times smaller than the others?

# %%
adam_model = make_model("attention", task, gamma=1.0, seed=[0, 1], d=16, hidden=32)
adam = train(adam_model, data, 300, optimizer="adam", lr=0.01, record_every=5, progress=False,
             probes={"partner": partner_attention(task), "qk": lambda m: m.qk_norm()})
fig, axes = plt.subplots(1, 3, figsize=(11, 3))
for k in range(adam.n_models):
    axes[0].plot(adam.steps, adam.loss[k], lw=1, label=f"seed {k}")
    axes[1].plot(adam.steps, adam.extras["partner"][k], lw=1)
    axes[2].semilogy(adam.steps, adam.extras["qk"][k], lw=1)
axes[0].set_title("loss (Adam)", fontsize=9)
axes[1].set_title("attention key → partner", fontsize=9)
axes[2].set_title("‖W_Q W_Kᵀ‖", fontsize=9)
axes[0].legend(fontsize=8)
for ax in axes:
    ax.set_xlabel("Adam step")
plt.show()

# %% tags=["NBVAL_CHECK_OUTPUT"]
adam_leave = crossing_step(adam.steps, adam.loss, (h0 + h1) / 2)
adam_qk = departure_step(adam.steps, adam.extras["qk"], 1.0, relative=True)
print("Adam: ‖W_Q W_Kᵀ‖ doubles before the loss is halfway to H(Y|key), all seeds:", bool((adam_qk <= adam_leave).all()))

# %% [markdown]
# Under Adam every parameter moves by about lr per step from the start, whatever the size of its
# gradient. W_Q and W_K grow right away, before the loss has even left ln C, so attention becomes
# token-dependent while the signal it follows is still order-1 noise, and it may drift away from the
# partner before it finds it. The ε-hierarchy that E2/E3 rely on is a property of gradient
# *flow*; Adam's per-coordinate normalisation erases it. This is why the course teaches the theory
# with plain GD and shows Adam as the contrast.

# %% [markdown]
# ## Explore
#
# The explorer below trains this lesson's model and task once more for three values of γ, all in
# one batched run of about 20 seconds. Then it lets you scrub through training: the mean attention
# map at the chosen step, and ‖W_Q W_Kᵀ‖ against the loss. *Think:* at which γ does the query–key
# product wake up last, and does it ever wake up before the loss has left ln C?

# %%
# NBVAL_IGNORE_OUTPUT
from ctxlab.widgets import AttentionSettings, attention_explorer

attention_explorer(AttentionSettings(
    task="partner", task_args=(("n_keys", 6), ("n_partners", 6), ("n_fillers", 1), ("seq_len", 6)),
    gammas=(0.75, 1.0, 1.25), seeds=(0,), lr=0.4, steps=STEPS, d=16, hidden=32, record_every=50,
))

# %% [markdown]
# > **Paper vs. this course.**
# > *From the paper's abstract* (Yao, Hang & Xu, *Context Staircase*, 2026), in our words: the
# > gradient-flow analysis at small init covers self-attention models as well as feed-forward
# > ones; embeddings align with signatures of increasing order.
# >
# > *This course's reconstruction* (the paper's equations were not available to us): the
# > bag-of-context form E2, the query–key equation E3 with its O(ε⁵) scale, the partner task, the
# > probes and onset definitions, and the Adam contrast are ours, checked numerically here with a
# > no-residual attention block, GELU head and plain GD. In this small model the stairs partly
# > merge, so we measure onsets rather than long flat plateaus.

# %% [markdown]
# ## Summary
#
# * At small init attention scores are O(ε⁴): attention is uniform, a bag of context (E2).
# * W_Q and W_K have relative gradients orders of magnitude below E and W_V; without a residual
#   E and W_V are comparable, with one E ≫ W_V.
# * Under GD, ‖W_Q W_Kᵀ‖ starts to grow only after the order-2 fit has begun, and attention on the
#   partner stays at 1/L until the loss is below H(Y | key) (E3: A waits for the pair residual).
# * Adam grows W_Q W_Kᵀ from the first steps: the small-init hierarchy is a gradient-flow effect.

# %% [markdown]
# **Next.** Open `exercises/07_attention.ipynb`: compute the bag-of-context output by hand and
# write the detector that says when attention leaves uniform.

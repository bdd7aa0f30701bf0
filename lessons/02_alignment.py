# %% [markdown]
# # Lesson 02 — Measuring alignment
#
# **Learning goals.** After this lesson you can
# 1. compute four scores of how well an embedding matrix E [V, d] lines up with a signature
#    S [V, m]: linear CKA, RSA, the subspace fraction and a ridge R²;
# 2. check numerically which changes of E leave each score unchanged (rotations, scaling) and why
#    that matters for embeddings, whose basis means nothing;
# 3. compute a permutation baseline, and explain why a *random* embedding scores well above zero
#    when the vocabulary is small;
# 4. read how each score falls as noise drowns the signal;
# 5. explain why CKA against a higher-order signature can be high for an embedding that learned
#    only order 1, and what to look at instead.
#
# **Prerequisites.** Lesson 01 (signatures, the hierarchy task); matrix products, the trace and
# the Frobenius norm; what an orthogonal matrix is.
#
# **Run time.** About 5 s on a 2-core machine (measured by `benchmarks/notebook_budget.py`). No training happens here: the embeddings are
# built by hand, so that we know the right answer before we measure it.

# %% [markdown]
# ## Why a score, and why a baseline?
#
# The claim this course follows is that from small initialization, embeddings first *align* with
# the order-1 signature and later with higher orders. "Align" needs a number. The number must not
# care about things that carry no meaning in an embedding: which axis is which, the overall
# scale, a shift of all tokens together. It also needs a reference point: a score of 0.3 means
# nothing until we know what an embedding that learned *nothing* scores. This lesson builds both.

# %%
import matplotlib.pyplot as plt
import torch

from ctxlab import align, plots
from ctxlab.signatures import label_signature
from ctxlab.tasks import hierarchy_task

task = hierarchy_task()
data = task.population
V = data.vocab_size
sigs = {k: label_signature(data, k, "incremental", names=task.token_names) for k in (1, 2, 3)}
S1 = sigs[1]
print(f"V = {V} tokens; ΔS¹ has shape {tuple(S1.matrix.shape)} and rank {align.signature_rank(S1)} after centring")

# %% [markdown]
# Three embeddings of the 27 tokens, d = 32 dimensions each, built so that we know the answer:
#
# * `E_order1` copies the order-1 signature through a random linear map W [9, 32]: the
#   embedding a model would have after learning order 1 perfectly;
# * `E_order2` does the same with the order-2 term ΔS²;
# * `E_random` is Gaussian noise: an embedding that learned nothing.

# %%
g = torch.Generator().manual_seed(0)
E_order1 = S1.matrix.double() @ torch.randn(S1.matrix.shape[1], 32, generator=g, dtype=torch.float64)
E_order2 = sigs[2].matrix.double() @ torch.randn(sigs[2].matrix.shape[1], 32, generator=g, dtype=torch.float64)
E_random = torch.randn(V, 32, generator=g, dtype=torch.float64)
examples = {"E_order1": E_order1, "E_order2": E_order2, "E_random": E_random}

# %% [markdown]
# ## Four scores
#
# All four compare *token × token* structure. Centre E and S over tokens (subtract the mean row),
# so that a shift of every token by the same vector does not count.
#
# * **Linear CKA** (centred kernel alignment) compares the Gram matrices K_E = E Eᵀ and
#   K_S = S Sᵀ (both [V, V], after centring):
#   $$\mathrm{CKA}(E, S) = \frac{\langle K_E, K_S\rangle_F}{\|K_E\|_F\,\|K_S\|_F} = \frac{\|S^\top E\|_F^2}{\|E^\top E\|_F\,\|S^\top S\|_F}.$$
#   It is a cosine between two Gram matrices, in [0, 1]: 1 when the two sets of token-to-token
#   inner products are proportional.
# * **RSA** (representational similarity analysis): the Spearman rank correlation between the
#   off-diagonal cosine similarities of E's rows and of S's rows.
# * **Subspace fraction**: the share of ‖E‖² that lies in the span of S's columns *in token
#   space*, ‖P_S E‖² / ‖E‖². It asks "is E a function of S?", not "is the geometry the same?".
# * **Ridge R²**: predict E from S with ridge regression, leaving each token out in turn; the R²
#   on the left-out tokens.
#
# `ctxlab.align` computes each for any E [..., V, d].

# %%
def score_table(embeddings: dict, signature) -> None:
    """Print the four scores of each embedding against one signature."""
    print(f"{'':>10}" + "".join(f"{name:>10}" for name in align.METRICS))
    for label, E in embeddings.items():
        print(f"{label:>10}" + "".join(f"{float(fn(E, signature)):>10.2f}" for fn in align.METRICS.values()))


score_table(examples, S1)

# %% [markdown]
# `E_order1` scores near 1 on the subspace fraction and ridge R² (it *is* a linear function of
# ΔS¹) and 0.98 on CKA (the random map W distorts the geometry slightly). RSA is low even for the
# perfect copy: 18 of the 27 rows of ΔS¹ (the anchors) are zero, a zero row has no direction, and
# its cosine similarities are meaningless. RSA needs every token to carry a signal; keep that in
# mind whenever a signature has empty rows. Note also that `E_random` scores about 0.2 on CKA,
# not 0. We come back to that.

# %%
# NBVAL_CHECK_OUTPUT
scores = {label: {name: float(fn(E, S1)) for name, fn in align.METRICS.items()} for label, E in examples.items()}
print("E_order1: subspace and ridge > 0.99, CKA > 0.95, RSA < 0.7:",
      scores["E_order1"]["subspace"] > 0.99 and scores["E_order1"]["ridge"] > 0.99
      and scores["E_order1"]["cka"] > 0.95 and scores["E_order1"]["rsa"] < 0.7)
print("E_random: CKA between 0.1 and 0.3:", 0.1 < scores["E_random"]["cka"] < 0.3)

# %% [markdown]
# ## Invariances: which changes of E should not matter
#
# A model can rotate its embedding space and compensate in the next layer; nothing it computes
# changes. It can also scale all embeddings up and scale the next layer down. So a score of
# alignment should not move under E → EQ for an orthogonal Q [d, d], nor under E → cE for c > 0.
#
# > **Think.** CKA is built from E Eᵀ. What happens to E Eᵀ under E → EQ? Under E → cE? And
# > under E → E·diag(a), stretching each axis by a different amount? Which of the four scores
# > would notice a shift E → E + b of every token by the same vector?

# %%
Q, _ = torch.linalg.qr(torch.randn(32, 32, generator=g, dtype=torch.float64))
stretch = torch.linspace(0.1, 3.0, 32, dtype=torch.float64)
changes = {
    "rotation E Q": lambda E: E @ Q,
    "scale 7.5 E": lambda E: 7.5 * E,
    "shift E + b": lambda E: E + torch.randn(1, 32, generator=g, dtype=torch.float64),
    "stretch E diag(a)": lambda E: E * stretch,
}
noisy = E_order1 / E_order1.norm() + 0.5 * E_random / E_random.norm()  # a partly aligned embedding
print(f"{'change':>18}" + "".join(f"{name:>10}" for name in align.METRICS) + "   (score after - before)")
for label, change in changes.items():
    diffs = [float(fn(change(noisy), S1) - fn(noisy, S1)) for fn in align.METRICS.values()]
    print(f"{label:>18}" + "".join(f"{d:>10.1e}" for d in diffs))

# %% [markdown]
# Rotation and scaling change none of the four scores beyond rounding (≈ 1e-16). A shift leaves
# CKA, the subspace fraction and ridge R² alone, because they centre E first, but it moves RSA:
# RSA compares cosines of the raw rows, measured from the origin, and a shift moves the origin.
# An uneven stretch of the axes changes all four: it is not an orthogonal change of basis, so it
# really does change which tokens look alike. As booleans, the facts we rely on later:

# %%
# NBVAL_CHECK_OUTPUT
for label in ("rotation E Q", "scale 7.5 E", "shift E + b"):
    same = [name for name, fn in align.METRICS.items() if abs(float(fn(changes[label](noisy), S1) - fn(noisy, S1))) < 1e-10]
    print(f"unchanged by {label}: {', '.join(same)}")
moved = abs(float(align.cka(changes["stretch E diag(a)"](noisy), S1) - align.cka(noisy, S1)))
print(f"CKA moves under an uneven stretch: {moved > 1e-3}")

# %% [markdown]
# ## Permutation baselines: what does "no alignment" score?
#
# To know whether a score is high, compare it with the scores E gets against *shuffled*
# signatures: the same rows of S, assigned to the wrong tokens. The shuffled S has the same
# spectrum and the same number of groups, but no relation to E's tokens. If E's real score does
# not stand clear of the shuffled ones, the alignment is not there.

# %%
shuffled = {name: align.permutation_baseline(name, noisy, S1, n=300, seed=1) for name in align.METRICS}
observed = {name: float(fn(noisy, S1)) for name, fn in align.METRICS.items()}
fig = plots.permutation_histograms(shuffled, observed)
plt.show()

# %% [markdown]
# For the partly aligned `noisy` embedding (the order-1 copy plus noise of half its norm), every
# real score stands to the right of all 300 shuffled scores. The four panels share one score axis,
# so the gaps can be compared by eye: for RSA the real score (about 0.33) clears the largest
# shuffled one (about 0.2) by a little; for CKA, the subspace fraction and ridge R² the gap is more
# than 0.4 (checked below).

# %%
# NBVAL_CHECK_OUTPUT
print("every real score above all 300 of its shuffled scores:",
      all(observed[name] > float(shuffled[name].max()) for name in align.METRICS))
print("CKA, subspace, ridge: real score > shuffled maximum + 0.4:",
      all(observed[name] > float(shuffled[name].max()) + 0.4 for name in ("cka", "subspace", "ridge")))

# %% [markdown]
# Now the random embedding. `E_random` scored about 0.2 on CKA in the first table.
#
# > **Think.** Before running the next cell: is that one lucky draw, or what every Gaussian
# > embedding of these 27 tokens scores? Would it be lower with more tokens?
#
# Score 200 Gaussian embeddings against ΔS¹:

# %%
random_E = torch.randn(200, V, 32, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
rank = align.signature_rank(S1)
random_cka = align.cka(random_E, S1)
random_sub = align.subspace_fraction(random_E, S1)
print(f"CKA(random E, ΔS¹): mean {float(random_cka.mean()):.3f}, sd {float(random_cka.std()):.3f}")
print(f"subspace fraction of random E: mean {float(random_sub.mean()):.3f}; rank/(V-1) = {rank}/{V - 1} = {rank / (V - 1):.3f}")

# %%
# NBVAL_CHECK_OUTPUT
print(f"random E vs ΔS¹ at V = {V}: mean CKA between 0.15 and 0.25:", 0.15 < float(random_cka.mean()) < 0.25)
print("mean subspace fraction within 0.01 of rank/(V-1):", abs(float(random_sub.mean()) - rank / (V - 1)) < 0.01)

# %% [markdown]
# ## Why a random embedding scores well above zero
#
# The subspace fraction is easy: a random E spreads its energy evenly over the V − 1 directions
# of (centred) token space, and rank(S) of them belong to S, so its expected score is
# rank / (V − 1) = 2/26 ≈ 0.08.
#
# CKA is less obvious. A Gaussian E with many more columns than tokens (d ≫ V) has E Eᵀ ≈ d·I:
# every token roughly orthogonal to every other. Take that to the limit, the *one-hot* embedding
# E = I_V. After centring, its Gram matrix is the centring matrix H itself, and
#
# $$\mathrm{CKA}(I_V, S) = \frac{\langle H, K_S\rangle}{\|H\|_F\,\|K_S\|_F} = \frac{\operatorname{tr} K_S}{\sqrt{V-1}\;\|K_S\|_F} = \sqrt{\frac{r}{V-1}}$$
#
# when K_S has r equal non-zero eigenvalues (ΔS¹ has r = 2 here). This limit shrinks like 1/√V.
#
# Why is the floor above 0 at all? The numerator of CKA, ‖SᵀE‖²_F, is never negative, and it is 0
# only when every column of E is orthogonal, in token space, to every column of S. A random E is
# almost never placed like that, so its CKA is positive, and so is the average over random
# embeddings.
#
# How close does a Gaussian E come to that limit? Here d = 32. At V = 9 the approximation
# E Eᵀ ≈ d·I is fair, but once V exceeds d, E Eᵀ has rank at most 32 and cannot be close to d·I.
# The figure uses the same task family at several block sizes (V = 3 × block), all with d = 32.

# %%
vocab, random_scores, one_hot = [], [], []
for block in (3, 6, 9, 18, 36):
    sig = label_signature(hierarchy_task(block=block).population, 1, "incremental")
    n_tokens = sig.matrix.shape[0]
    E = torch.randn(100, n_tokens, 32, generator=torch.Generator().manual_seed(block), dtype=torch.float64)
    vocab.append(n_tokens)
    random_scores.append(align.cka(E, sig))
    one_hot.append(float(align.cka(torch.eye(n_tokens), sig)))
    print(f"V = {n_tokens:>3}: random E {float(random_scores[-1].mean()):.3f}, one-hot {one_hot[-1]:.3f}, "
          f"sqrt(2/(V-1)) = {(2 / (n_tokens - 1)) ** 0.5:.3f}")
fig = plots.chance_vs_vocab_figure(vocab, torch.stack(random_scores), one_hot)
plt.show()

# %%
# NBVAL_CHECK_OUTPUT
mean_random = torch.stack(random_scores).mean(-1)
limit = torch.tensor([(2 / (n - 1)) ** 0.5 for n in vocab])
print("one-hot CKA equals sqrt(2/(V-1)) at every V (within 1e-6):", bool(((torch.tensor(one_hot) - limit).abs() < 1e-6).all()))
print("random E scores below the one-hot limit at every V:", bool((mean_random < limit).all()))
print("random E: above 0.35 at V = 9, below 0.1 at V = 108:", float(mean_random[0]) > 0.35 and float(mean_random[-1]) < 0.1)

# %% [markdown]
# At V = 9 a random embedding already scores ≈ 0.44, close to the one-hot 0.50; at V = 108 it is
# down to ≈ 0.06, less than half the one-hot 0.137. From V = 9 to V = 108 the random score drops
# almost sevenfold while √V grows only 3.5-fold: it falls faster than 1/√V, and in proportion it
# falls furthest below the limit where V exceeds d. The toy tasks of this course have small
# vocabularies, so **every CKA in it must be read against its baseline**, never against 0.
# (*An aside that this course does not show:* with many more tokens than dimensions, as in a
# language model's full vocabulary, the trend above suggests a baseline near 0, but other effects
# can dominate CKA there, for instance a few tokens of very large norm. Lesson 10 compares 100
# tokens at a time in 384 dimensions, so it reads its CKAs against shuffled baselines, as here.)

# %% [markdown]
# ## How the scores fall as noise grows
#
# Now the scores as a signal drowns. For each noise level σ build E = unit(ΔS¹ W) + σ·unit(N),
# both parts scaled to norm 1, so σ is the noise-to-signal ratio; 8 seeds for W and N. Each
# panel also shows that metric's permutation baseline for the same embeddings (dashed).
#
# > **Think.** Which score would you trust to tell "a little signal" from "none"?

# %%
sweep = align.noise_sweep(S1, noise=[0.0, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0], seeds=range(8))
fig = plots.noise_sweep_figure(sweep)
plt.show()

# %%
for name in sweep.scores:
    mean = sweep.scores[name].mean(-1)
    base = sweep.baselines[name].mean(-1)
    print(f"{name:>9}: at σ = 0 {float(mean[0]):.2f}, at σ = 0.1 {float(mean[2]):.2f}, at σ = 1 {float(mean[5]):.2f}, "
          f"at σ = 10 {float(mean[-1]):.2f} (baseline {float(base[-1]):.2f})")

# %% [markdown]
# What the figure shows:
#
# * **Subspace fraction and ridge R²** fall smoothly from 1 to their baselines (2/26 and slightly
#   below 0): they already lose ≈ 0.2 at σ = 0.5, where CKA has hardly moved, and at σ = 5 they
#   are only just above their baselines (by about 0.02, checked below).
# * **CKA** stays within 0.03 of its clean value up to σ = 0.5, has slipped to 0.88 at σ = 1, then
#   falls towards ≈ 0.2, the random-embedding level, not towards 0. Its shuffled baseline is lower
#   (≈ 0.08) when E is clean: shuffling S's rows leaves E's low rank alone, so two rank-2 structures that do not
#   match score little. A baseline belongs to *an embedding*; compute it for the E you have.
# * **RSA** starts low (about 0.5 for a clean copy) and drops to about 0.3 at the first bit of
#   noise (σ = 0.05): E's rows where ΔS¹ is zero (the anchors) pick up random directions. RSA is the hardest to read as
#   *how much* signal there is: after that drop it barely changes up to σ = 1, though it stays
#   visibly above its zero baseline out to σ ≈ 5.

# %%
# NBVAL_CHECK_OUTPUT
m = {name: sweep.scores[name].mean(-1) for name in sweep.scores}
b = {name: sweep.baselines[name].mean(-1) for name in sweep.scores}
at = {level: sweep.noise.index(level) for level in (0.0, 0.05, 0.5, 1.0, 5.0, 10.0)}
print("subspace and ridge: > 0.95 clean, lost > 0.1 by σ = 0.5, above baseline + 0.02 at σ = 5, within 0.05 of it at σ = 10:",
      all(float(m[n][at[0.0]]) > 0.95 and float(m[n][at[0.0]] - m[n][at[0.5]]) > 0.1
          and float(m[n][at[5.0]] - b[n][at[5.0]]) > 0.02 and abs(float(m[n][at[10.0]] - b[n][at[10.0]])) < 0.05
          for n in ("subspace", "ridge")))
print("CKA: within 0.03 of its clean value at σ = 0.5, between 0.15 and 0.3 at σ = 10:",
      abs(float(m["cka"][at[0.5]] - m["cka"][at[0.0]])) < 0.03 and 0.15 < float(m["cka"][at[10.0]]) < 0.3)
print("CKA's shuffled baseline below 0.12 for the clean E:", float(b["cka"][at[0.0]]) < 0.12)
print("RSA: 0.4-0.6 clean, 0.25-0.35 at σ = 0.05:", 0.4 < float(m["rsa"][at[0.0]]) < 0.6 and 0.25 < float(m["rsa"][at[0.05]]) < 0.35)

# %% [markdown]
# ## The caveat: CKA against order 2 is high after learning only order 1
#
# The staircase claim is about *order*: first ΔS¹, later ΔS². A natural test is to watch
# CKA(E, ΔS¹) and CKA(E, ΔS²) during training. But score `E_order1`, which contains order 1 and
# nothing else, against all three orders:
#
# > **Think.** ΔS¹ and ΔS² are orthogonal as functions of the data (lesson 01). Does that make
# > CKA(E_order1, ΔS²) zero?

# %%
cka_by_order = [float(align.cka(E_order1, sigs[k])) for k in (1, 2, 3)]
base_by_order = [float(align.permutation_baseline("cka", E_order1, sigs[k], n=200, seed=3).mean()) for k in (1, 2, 3)]
print("CKA(E_order1, ΔSᵏ) for k = 1, 2, 3:", [round(v, 2) for v in cka_by_order])
print("permutation baselines:             ", [round(v, 2) for v in base_by_order])
keys = task.role_tokens("key")
on_keys = float(align.cka(S1.matrix, sigs[2], tokens=keys))
print(f"CKA(ΔS¹, ΔS²) on the 9 key tokens only: {on_keys:.2f}")

# %%
# NBVAL_CHECK_OUTPUT
print("CKA(E_order1, ΔS²) and (E_order1, ΔS³) above 0.5, each > its baseline + 0.3:",
      all(cka_by_order[k] > 0.5 and cka_by_order[k] > base_by_order[k] + 0.3 for k in (1, 2)))
print("CKA(ΔS¹, ΔS²) on the keys within 1e-6 of 1:", abs(on_keys - 1) < 1e-6)

# %% [markdown]
# An embedding that knows only order 1 scores 0.69 against ΔS² and 0.56 against ΔS³, far above
# their baselines. The reason is in the last line: **restricted to the keys, ΔS² has exactly the
# geometry of ΔS¹** (CKA 1.00). A key's pair term P(y | key, anchor) − … still depends on the
# key only through its attribute, so ΔS² groups the keys into the same three groups as ΔS¹.
# Orthogonal as functions of (x, y) is not the same as different Gram matrices over tokens.
# With the *raw* signatures the overlap is worse:

# %%
# NBVAL_CHECK_OUTPUT
raw2 = label_signature(data, 2, "raw")
cka_raw2 = float(align.cka(E_order1, raw2))
print("CKA(E_order1, raw S²) above 0.9, and above CKA(E_order1, ΔS²) by > 0.1:",
      cka_raw2 > 0.9 and cka_raw2 > cka_by_order[1] + 0.1)

# %% [markdown]
# So CKA alone barely separates "learned order 1" from "learned order 2". Two cures, both used in
# lesson 03:
#
# 1. Look at the **tokens each order brings in**. Order 2 is what makes the first anchors move;
#    their embedding norms, or CKA restricted to them, say whether order 2 has been learned.
# 2. Track the **subspace fraction in span(ΔS¹)**: it is 1 for an embedding that knows only
#    order 1 and drops once something outside that span enters E (order 2's anchors, but also
#    noise: at σ = 0.5 it is about as low as for an embedding that knows both orders).

# %%
E_both = E_order1 / E_order1.norm() + E_order2 / E_order2.norm()
views = {}
for label, E in {"E_order1": E_order1, "E_order1 + E_order2": E_both}.items():
    anchors = E[task.role_tokens("anchor1")].norm(dim=1).mean() / E[keys].norm(dim=1).mean()
    views[label] = (float(anchors), float(align.subspace_fraction(E, S1)), float(align.cka(E, sigs[2])))
    print(f"{label:>20}: anchor-1/key norm ratio {views[label][0]:.2f}, "
          f"share in span(ΔS¹) {views[label][1]:.2f}, CKA with ΔS² {views[label][2]:.2f}")

# %%
# NBVAL_CHECK_OUTPUT
(r1, f1, c1), (r2, f2, c2) = views.values()
print("adding order 2: CKA with ΔS² rises by less than 0.25:", 0 < c2 - c1 < 0.25)
print("anchor-1/key norm ratio goes from < 1e-6 to > 0.5:", r1 < 1e-6 and r2 > 0.5)
print("share in span(ΔS¹) goes from > 0.999 to < 0.8:", f1 > 0.999 and f2 < 0.8)

# %% [markdown]
# Adding order 2 moves CKA with ΔS² only from 0.69 to 0.85, while the anchor-1 norms go from 0 to
# more than half the keys' and the share in span(ΔS¹) drops from 1.00 to 0.74: those two numbers
# have a known value before order 2 (0 and 1), so their change reads more plainly.

# %% [markdown]
# > **Paper vs. this course.**
# > *From the paper's abstract* (Yao, Hang & Xu, *Context Staircase*, 2026), in our words:
# > embeddings align with probability signatures, low orders before high orders.
# >
# > *This course's reconstruction*: how "align" is measured. The abstract does not say which
# > metric the authors use. Linear CKA (Kornblith et al., 2019) is our primary choice because it
# > ignores the basis and scale of the embedding space; RSA, the subspace fraction and ridge R²
# > are secondary views we chose. The permutation baselines, the one-hot limit √(r/(V−1)), the
# > noise sweep and the CKA caveat for higher orders are this course's own derivations and
# > measurements, not the paper's.

# %% [markdown]
# ## Summary
#
# * Linear CKA compares centred Gram matrices; it ignores rotations, scale and shifts of E, as an
#   alignment score must, but not uneven stretches of the axes.
# * The subspace fraction and ridge R² ask whether E is a (linear) function of S; they fall
#   smoothly with noise and have clear chance levels (rank/(V − 1) for the subspace fraction).
# * Every score needs a baseline. A random embedding scores CKA ≈ 0.2 against ΔS¹ at V = 27
#   (√(r/(V−1)) ≈ 0.28 in the one-hot limit), because CKA's numerator ‖SᵀE‖² is never negative and
#   a random E almost never makes it 0.
# * RSA is fragile when a signature has zero rows.
# * CKA against ΔS² is high even for an embedding that learned only order 1 (the keys' geometry
#   is the same at both orders). To see the order, also look at which tokens move and at the
#   share of E in span(ΔS¹).
#
# **Next.** Open `exercises/02_alignment.ipynb`: implement linear CKA, check its rotation
# invariance with a random orthogonal matrix, and compute a permutation baseline; then build an
# alignment test against shuffled signatures and find the noise level at which each score's test
# loses the signal. Lesson 03 trains
# models and watches these scores over training.

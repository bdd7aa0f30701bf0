# %% [markdown]
# # Exercises 02 — Measuring alignment
#
# Five exercises on lesson 02, the last two a build, and a last cell that puts them together. Fill in
# each `# YOUR CODE HERE`, then run the check cell below it:
# it prints `PASS check_02_…` or stops with a hint that says which case failed and how. Checks
# also try *hidden* cases (other sizes, shifted and scaled embeddings, other signatures), so
# write code for any E [V, d] and S [V, m]. When you are done, grade the whole notebook:
#
# ```bash
# ctxlab grade exercises/02_alignment.ipynb      # or: pytest --nbval-lax exercises/02_alignment.ipynb
# ```
#
# | # | exercise | difficulty | time |
# |---|---|---|---|
# | 1 | linear CKA from scratch | ★★☆ | 10 min |
# | 2 | a random rotation, and CKA's invariance | ★★☆ | 15 min |
# | 3 | a permutation baseline | ★★☆ | 10 min |
# | 4 | build it: an alignment test against shuffled signatures | ★★☆ | 20 min |
# | 5 | build it: the noise level at which the test loses the signal | ★★★ | 25 min |
# | – | putting it together: which score's test sees furthest into the noise | ★★☆ | 10 min |
#
# Use torch; `ctxlab.align.cka` is what exercise 1 is compared with (do not call it there; you may
# use it in exercises 2 and 3). Exercises 4 and 5 use the lesson's four score functions, but build
# the shuffles and the noise sweep themselves (not `align.permutation_baseline` or `align.noise_sweep`).

# %%
import math

import torch

import ctxlab.checks
from ctxlab import align
from ctxlab.signatures import label_signature
from ctxlab.tasks import hierarchy_task

data = hierarchy_task().population
S1 = label_signature(data, 1, "incremental").matrix.double()  # ΔS¹, [27, 9]
g = torch.Generator().manual_seed(0)
E_order1 = S1 @ torch.randn(9, 32, generator=g, dtype=torch.float64) + 0.3 * torch.randn(27, 32, generator=g, dtype=torch.float64)
E_random = torch.randn(27, 32, generator=g, dtype=torch.float64)
print("E_order1:", tuple(E_order1.shape), " S1:", tuple(S1.shape))

# %% [markdown]
# ## Exercise 1 — linear CKA from scratch (★★☆, 10 min)
#
# Write `linear_cka(E, S)` returning linear CKA as a Python float:
#
# $$\mathrm{CKA}(E, S) = \frac{\|S_c^\top E_c\|_F^2}{\|E_c^\top E_c\|_F\,\|S_c^\top S_c\|_F},$$
#
# where E_c and S_c are E and S with their mean row (the mean over tokens) subtracted. It must give
# the same number as `align.cka` to 1e-6, for any sizes.
#
# <details><summary>Hint 1: the idea</summary>
#
# CKA compares how the tokens sit relative to each other in E and in S, once each has lost its mean
# token: it is the cosine between the two centred token-by-token Gram matrices, written with the
# small feature-by-feature products so that no V × V matrix is needed.
# </details>
#
# <details><summary>Hint 2: the approach</summary>
#
# Centre E and S over the tokens (every row minus the mean row). Form the three products the
# formula names, take their Frobenius norms, square the numerator's, and divide by the product of
# the other two. Work in float64 and return a plain number.
# </details>
#
# <details><summary>Hint 3: the pitfalls</summary>
#
# Centre both matrices, over the tokens (the rows). The denominator holds the norms of the Gram
# matrices E_cᵀE_c and S_cᵀS_c, not the squared norms of E_c and S_c. Square the numerator's norm,
# and only it: a result that is CKA's square root has lost that square. Leave out any 1/V or
# 1/(V − 1): CKA is a ratio, and such a factor on one side only is wrong.
# </details>

# %%
def linear_cka(E: torch.Tensor, S: torch.Tensor) -> float:
    """Linear CKA between the token-centred Gram matrices of E [V, d] and S [V, m]."""
    ### BEGIN SOLUTION
    E = E.double() - E.double().mean(0)
    S = S.double() - S.double().mean(0)
    return float((S.T @ E).norm() ** 2 / ((E.T @ E).norm() * (S.T @ S).norm()))
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_02_linear_cka(linear_cka)

# %% [markdown]
# ## Exercise 2 — a random rotation, and CKA's invariance (★★☆, 15 min)
#
# Write `random_rotation(E, seed)` returning E @ Q, where Q [d, d] is a *random* orthogonal matrix
# (QᵀQ = I) drawn from the seed alone: the same seed must give the same Q, another seed another
# Q, and Q should really mix **all** the axes (a permutation of the axes, or a rotation in one
# plane that leaves the other axes alone, does not count). Then confirm the lesson's claim:
# CKA(EQ, S) = CKA(E, S).
#
# <details><summary>Hint 1: the idea</summary>
#
# An orthogonal Q keeps every inner product between token vectors, so EQ has the same token-by-token
# Gram matrix as E, and CKA looks at nothing else. A random orthogonal matrix comes from
# orthogonalising a matrix of independent Gaussian entries.
# </details>
#
# <details><summary>Hint 2: the approach</summary>
#
# Seed a random generator of your own with `seed` (not the global one), draw a d × d Gaussian
# matrix from it in float64, and keep the orthogonal factor of its QR decomposition. Multiply E by
# it on the right: the rows of E are the tokens, the columns the arbitrary basis that Q turns.
# </details>
#
# <details><summary>Hint 3: the pitfalls</summary>
#
# A matrix on the wrong side, or one that is not orthogonal, changes E Eᵀ. Without a generator
# seeded inside the function, two calls with the same seed disagree; Q must also change with the
# seed. A permutation or sign flip of the axes, or a rotation in one plane, is orthogonal but does
# not mix all the axes.
# </details>

# %%
def random_rotation(E: torch.Tensor, seed: int) -> torch.Tensor:
    """E [V, d] times a random orthogonal d x d matrix that depends only on ``seed``."""
    ### BEGIN SOLUTION
    d = E.shape[1]
    A = torch.randn(d, d, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    return E.double() @ torch.linalg.qr(A)[0]
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_02_random_rotation(random_rotation)

# %% tags=["exercise"]
# Once the check passes, compare CKA before and after, e.g.:
# print(align.cka(E_order1, S1), align.cka(random_rotation(E_order1, seed=1), S1))

# %% tags=["solution"]
before, after = float(align.cka(E_order1, S1)), float(align.cka(random_rotation(E_order1, seed=1), S1))
print(f"CKA(E, S) = {before:.6f}, CKA(EQ, S) = {after:.6f}, difference {abs(after - before):.1e}")

# %% [markdown]
# ## Exercise 3 — a permutation baseline (★★☆, 10 min)
#
# Write `shuffled_cka(E, S, n, seed)` returning the mean CKA of E against `n` copies of S whose
# **rows** (tokens) are shuffled, each copy with its own random permutation drawn from a
# generator seeded with `seed`. You may use `align.cka`. The check compares your mean with a
# reference computed from many more shuffles, within the spread a mean of `n` shuffles has,
# calls your function twice to make sure the seed fixes the answer, and with n = 2 checks that
# other seeds scatter as much as a mean of exactly two shuffles does.
#
# <details><summary>Hint 1: the idea</summary>
#
# Shuffling the tokens of S cuts the link between each token's embedding and its own signature row
# and keeps everything else about S. The CKA that is left is what "no alignment" scores for this E
# against this S; the mean over many shuffles estimates it.
# </details>
#
# <details><summary>Hint 2: the approach</summary>
#
# Seed one generator, once. Draw n permutations of the V tokens from it, one after the other; for
# each, reorder the rows of S, score CKA against E, and average the n scores.
# </details>
#
# <details><summary>Hint 3: the pitfalls</summary>
#
# Shuffle the rows (tokens), not the columns: permuting columns leaves S's Gram matrix, and so CKA,
# as it is; shuffling E and S with the same permutation changes nothing either. The generator is
# seeded from `seed` inside the function, so that the same seed gives the same mean. Use exactly n
# shuffles: the check reads from the scatter between seeds whether you averaged more.
# </details>

# %%
def shuffled_cka(E: torch.Tensor, S: torch.Tensor, n: int, seed: int) -> float:
    """Mean CKA of E against n row-shuffled copies of S: the score of 'no alignment' for this E."""
    ### BEGIN SOLUTION
    g = torch.Generator().manual_seed(seed)
    scores = [align.cka(E, S[torch.randperm(S.shape[0], generator=g)]) for _ in range(n)]
    return float(torch.stack(scores).mean())
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_02_permutation_baseline(shuffled_cka)

# %% tags=["solution"]
for label, E in {"E_order1": E_order1, "E_random": E_random}.items():
    print(f"{label}: CKA {float(align.cka(E, S1)):.3f}, shuffled baseline {shuffled_cka(E, S1, 500, seed=0):.3f}")

# %% [markdown]
# **Think.** The random embedding's real CKA and its shuffled baseline are about equal, and both
# are far from 0. The order-1 embedding's baseline is *lower* than the random one's. Why does
# shuffling the rows of S hurt an embedding that is itself low-rank more than a random one?

# %% [markdown]
# ## Exercise 4 — build it: an alignment test against shuffled signatures (★★☆, 20 min)
#
# The lesson reads every score against shuffled copies of the signature: an embedding shows
# alignment only where its real score stands clear of *all* its shuffled scores. Build that test.
# Write `alignment_test(E, S, score, n, seed)` for a batch of embeddings E [..., V, d] (any leading
# axes: one test per embedding), a signature S [V, m] and one of the lesson's score functions
# `score` (`align.cka`, `align.rsa`, `align.subspace_fraction` or `align.ridge_r2`; each is called as
# `score(E, S)` and returns [...]). Return a dict of four float64 tensors, each of shape [...]:
#
# * `"score"`: the real score of each embedding against S;
# * `"baseline"`: the mean of its n shuffled scores;
# * `"top"`: the highest of its n shuffled scores;
# * `"excess"`: score − top (above 0: the real score beats every shuffle).
#
# The shuffles: one `torch.Generator` seeded with `seed`, n permutations of the V tokens drawn from
# it one after another with `torch.randperm`, each reordering the **rows** of S; the same n shuffles
# for every embedding of the batch. Your numbers are compared with the check's within TOL = 1e-6,
# on batches, float32 inputs, rank-deficient signatures, tokens with equal signature rows and tiny
# and huge scales.
#
# <details><summary>Hint 1: the idea</summary>
#
# A shuffled copy gives every token another token's signature row: everything about S is kept
# except its link to E's tokens. What E scores against such copies is what "no alignment" scores
# for this very E, and the real score means something only where it clears the highest of them.
# </details>
#
# <details><summary>Hint 2: the approach</summary>
#
# Score E against S once. Then seed a generator and, n times, draw a permutation, reorder S with it
# and score E against the copy. Stack the n results along a new first axis: their mean and their
# maximum along that axis are the baseline and the top, one per embedding.
# </details>
#
# <details><summary>Hint 3: the pitfalls</summary>
#
# The rows (tokens) of S, not its columns, and not E and S together. One generator, seeded once,
# before the loop. The unshuffled S is not one of the shuffles. Reduce over the shuffle axis only,
# so that each embedding of a batch gets its own test. Exactly n shuffles.
# </details>

# %%
def alignment_test(E: torch.Tensor, S: torch.Tensor, score, n: int, seed: int) -> dict:
    """Real score, shuffled mean, shuffled top and excess over the top, each [...] for E [..., V, d]."""
    ### BEGIN SOLUTION
    g = torch.Generator().manual_seed(seed)
    shuffled = torch.stack([score(E, S[torch.randperm(S.shape[0], generator=g)]) for _ in range(n)])  # [n, ...]
    real, top = score(E, S), shuffled.max(0).values
    return {"score": real, "baseline": shuffled.mean(0), "top": top, "excess": real - top}
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_02_alignment_test(alignment_test)

# %% tags=["solution"]
for label, E in {"E_order1": E_order1, "E_random": E_random}.items():
    result = alignment_test(E, S1, align.cka, 200, seed=0)
    print(f"{label}: CKA {float(result['score']):.3f}, shuffled mean {float(result['baseline']):.3f}, "
          f"top {float(result['top']):.3f}, excess {float(result['excess']):+.3f}")

# %% [markdown]
# ## Exercise 5 — build it: the noise level at which the test loses the signal (★★★, 25 min)
#
# The lesson's noise sweep drowns an order-1 copy in noise. Find the noise level at which your test
# can no longer tell the copy from a random embedding. Write
# `detection_limit(S, W, N, noise, score, n, seed)`: S [V, m] is a signature, W [K, m, d] and
# N [K, V, d] are K draws of a random map and of noise, `noise` is an ascending list of L noise
# levels σ, and `score`, `n`, `seed` are as in exercise 4. For every σ and every draw k build
#
# $$E_{\sigma, k} = \mathrm{unit}(S_c W_k) + \sigma\, \mathrm{unit}(N_{k,c}),$$
#
# where S_c is S minus its mean row and N_k,c is N_k minus its mean row (means over the tokens), and
# unit(M) = M / ‖M‖_F scales the whole [V, d] matrix to Frobenius norm 1, so that σ is the
# noise-to-signal ratio, as in the lesson. Test all L × K embeddings with your `alignment_test` (one
# call, the same shuffles for all) and return the pair (excess, limit):
#
# * `excess` [L, K]: each embedding's excess over its shuffled top;
# * `limit`: the first σ of the list at which **fewer than half** of the K draws are detected, or
#   `math.inf` if there is none. A draw is detected when its excess is above TOL = 1e-6: an excess
#   of 0 is no detection (a shuffle that only swaps tokens with equal signature rows gives S back,
#   and ties the real score exactly).
#
# Work in float64 (the inputs may be float32). The check compares your pair with the reference's
# on signatures with equal rows, of low rank, with a mean row, at scales from 1e-12 to 1e12, for
# rank-1 copies and for each of the four scores.
#
# <details><summary>Hint 1: the idea</summary>
#
# At σ = 0 every E is an exact linear copy of S and clears every shuffle; as σ grows the copy's
# share of E shrinks, and at some level its real score no longer stands above the shuffled top. The
# limit reads off that level by a majority over the draws, so that no single lucky or unlucky draw
# decides it.
# </details>
#
# <details><summary>Hint 2: the approach</summary>
#
# Centre S once and every draw of the noise once. Form the K signal matrices from S_c and W, divide
# each signal and each noise matrix by its own norm, and stack signal + σ · noise over the levels
# into one [L, K, V, d] batch. One call of your test gives the [L, K] excesses; count the detected
# draws at each level and walk up the levels.
# </details>
#
# <details><summary>Hint 3: the pitfalls</summary>
#
# Centre before you scale, both parts, and scale each whole matrix, not each row and not the sum
# (the scores ignore an overall scale, so scaling the sum changes nothing). Draw k uses W[k] and
# N[k]. "Fewer than half" is strict: exactly half detected still counts as detected. Detected is
# an excess above the tolerance, not one of at least 0. The limit is the first level lost, not the
# last one seen, and infinity when none is lost.
# </details>

# %%
def detection_limit(S: torch.Tensor, W: torch.Tensor, N: torch.Tensor, noise: list, score, n: int,
                    seed: int) -> tuple[torch.Tensor, float]:
    """(excess [L, K] of every noisy copy over its shuffled top, the first noise level the test loses)."""
    ### BEGIN SOLUTION
    S, W, N = S.double(), W.double(), N.double()
    signal = (S - S.mean(0)) @ W  # [K, V, d]
    signal = signal / signal.norm(dim=(1, 2), keepdim=True)
    N = N - N.mean(1, keepdim=True)
    N = N / N.norm(dim=(1, 2), keepdim=True)
    E = torch.stack([signal + sigma * N for sigma in noise])  # [L, K, V, d]
    excess = alignment_test(E, S, score, n, seed)["excess"]
    for sigma, row in zip(noise, excess):
        if 2 * int((row > 1e-6).sum()) < W.shape[0]:
            return excess, float(sigma)
    return excess, math.inf
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_02_detection_limit(detection_limit)

# %% [markdown]
# ## Putting it together — which score's test sees furthest into the noise? (★★☆, 10 min)
#
# Write `limits_by_score(S, W, N, noise, n, seed)` returning a dict with the detection limit of each
# of the four scores of `align.METRICS`, keyed by its name. The check runs it on ΔS¹ with draws of
# its own (6 draws, d = 32, σ from 1 to 20, 60 shuffles) and asks what the lesson's sweep shows:
# every score's test still sees the signal while the noise is at most twice the signal (limit
# above 2), every one has lost it by σ = 20, CKA's and the subspace fraction's tests give the same
# limit, and RSA's gives out no later than CKA's.
#
# <details><summary>Hint</summary>
#
# One call of exercise 5 per score, with everything else as given.
# </details>

# %%
def limits_by_score(S: torch.Tensor, W: torch.Tensor, N: torch.Tensor, noise: list, n: int, seed: int) -> dict:
    """{score name: detection limit} for the four scores of align.METRICS."""
    ### BEGIN SOLUTION
    return {name: detection_limit(S, W, N, noise, score, n, seed)[1] for name, score in align.METRICS.items()}
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_02_noise_limits(limits_by_score)

# %% tags=["exercise"]
# Once the check passes, run it on draws of your own, e.g. 6 draws, 60 shuffles:
# g = torch.Generator().manual_seed(1)
# W, N = torch.randn(6, 9, 32, generator=g, dtype=torch.float64), torch.randn(6, 27, 32, generator=g, dtype=torch.float64)
# print(limits_by_score(S1, W, N, [1, 2, 3, 5, 7, 10, 20, 50], 60, seed=0))

# %% tags=["solution"]
noise = [1, 2, 3, 5, 7, 10, 20, 50]
g = torch.Generator().manual_seed(1)
W, N = torch.randn(6, 9, 32, generator=g, dtype=torch.float64), torch.randn(6, 27, 32, generator=g, dtype=torch.float64)
print("detection limits:", limits_by_score(S1, W, N, noise, 60, seed=0))
signal = (S1 - S1.mean(0)) @ W
signal = signal / signal.norm(dim=(1, 2), keepdim=True)
unit_noise = (N - N.mean(1, keepdim=True)) / (N - N.mean(1, keepdim=True)).norm(dim=(1, 2), keepdim=True)
test = alignment_test(torch.stack([signal + sigma * unit_noise for sigma in noise]), S1, align.cka, 60, seed=0)
for sigma, real, mean, top in zip(noise, test["score"].mean(1), test["baseline"].mean(1), test["top"].mean(1)):
    print(f"σ = {sigma:>2}: CKA {float(real):.3f}, shuffled mean {float(mean):.3f}, top {float(top):.3f}")

# %% [markdown]
# **Think.** Where the tests give up (σ ≈ 5 to 10), CKA still reads about 0.25, far from 0: only
# the shuffles say that this is no longer alignment. Compare the real CKA with the shuffled *mean*
# instead of the top: at which σ would that "test" give up, and why does pure noise beat the mean of
# its own shuffles about half the time? And why do CKA and the subspace fraction agree to the last
# grid point on ΔS¹? (The lesson's one-hot limit used that ΔS¹'s Gram matrix has two equal non-zero
# eigenvalues: what is CKA against a shuffled copy then, as a multiple of the subspace fraction?)

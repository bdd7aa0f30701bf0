# %% [markdown]
# # Exercises 02 — Measuring alignment
#
# Three exercises on lesson 02. Fill in each `# YOUR CODE HERE`, then run the check cell below it:
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
# | 1 | linear CKA from scratch | ★★☆ | 15 min |
# | 2 | a random rotation, and CKA's invariance | ★★☆ | 15 min |
# | 3 | a permutation baseline | ★★☆ | 15 min |
#
# Use torch; `ctxlab.align.cka` is what exercise 1 is compared with (do not call it there; you may
# use it in exercises 2 and 3).

# %%
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
# ## Exercise 1 — linear CKA from scratch (★★☆, 15 min)
#
# Write `linear_cka(E, S)` returning linear CKA as a Python float:
#
# $$\mathrm{CKA}(E, S) = \frac{\|S_c^\top E_c\|_F^2}{\|E_c^\top E_c\|_F\,\|S_c^\top S_c\|_F},$$
#
# where E_c and S_c are E and S with their mean row (the mean over tokens) subtracted. It must give
# the same number as `align.cka` to 1e-6, for any sizes.
#
# <details><summary>Hint</summary>
#
# `E - E.mean(0)` centres over tokens. `torch.linalg.matrix_norm(M)` (or `M.norm()`) is the
# Frobenius norm. The numerator is squared, the two norms in the denominator are not. Working in
# float64 (`E.double()`) avoids rounding trouble.
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
# <details><summary>Hint</summary>
#
# Draw a Gaussian d × d matrix with `torch.randn(d, d, generator=torch.Generator().manual_seed(seed),
# dtype=torch.float64)` and take the Q factor of its QR decomposition, `torch.linalg.qr(A)[0]`.
# Multiply E on the **right**: the rows of E are tokens, the columns are the arbitrary basis.
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
# ## Exercise 3 — a permutation baseline (★★☆, 15 min)
#
# Write `shuffled_cka(E, S, n, seed)` returning the mean CKA of E against `n` copies of S whose
# **rows** (tokens) are shuffled, each copy with its own random permutation drawn from a
# generator seeded with `seed`. You may use `align.cka`. The check compares your mean with a
# reference computed from many more shuffles, within the spread a mean of `n` shuffles has,
# calls your function twice to make sure the seed fixes the answer, and with n = 2 checks that
# other seeds scatter as much as a mean of exactly two shuffles does.
#
# <details><summary>Hint</summary>
#
# `g = torch.Generator().manual_seed(seed)` once, then `torch.randperm(V, generator=g)` for each
# of the n copies; `S[perm]` shuffles the rows. Shuffling the columns of S would change nothing
# (why?), and shuffling E and S with the same permutation neither.
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

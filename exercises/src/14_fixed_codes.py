# %% [markdown]
# # Exercises 14 — Fixed binary codes
#
# Three exercises on lesson 14: build the fixed code table that replaces the embedding, compute
# the first layer's token representation, and score it against a signature. Fill in each
# `# YOUR CODE HERE`, then run the check cell below it: it prints `PASS check_14_…` or stops with a
# hint. The checks also try *hidden* cases (other vocabularies, widths, shapes), so write code for
# any input. Grade the whole notebook from a terminal:
#
# ```bash
# ctxlab grade exercises/14_fixed_codes.ipynb
# ```
#
# | # | exercise | difficulty | time |
# |---|---|---|---|
# | 1 | the ⌈log₂V⌉-bit code table | ★☆☆ | 10 min |
# | 2 | the first layer's token representation | ★★☆ | 15 min |
# | 3 | R² in the span of a signature | ★★☆ | 15 min |

# %%
import math

import torch

import ctxlab.checks
from ctxlab.fixed_codes import fixed_code_ensemble, token_positions
from ctxlab.signatures import label_signature
from ctxlab.tasks import hierarchy_task
from ctxlab.train import train

task = hierarchy_task(block=8, n_values=2)
positions = token_positions(task.population)
print(f"V = {task.vocab_size} tokens, token positions {positions.tolist()}")

# %% [markdown]
# ## Exercise 1 — the ⌈log₂V⌉-bit code table (★☆☆, 10 min)
#
# Write `code_table(vocab_size, d)`: a float tensor [V, d] whose row s codes the token id s in
# K = ⌈log₂V⌉ bits, **lowest bit first**, written as **±1** (bit 1 → +1, bit 0 → −1), and tiled to
# the width d: column c holds bit c mod K. (For V ≤ 2 use K = 1.) Every token must get its own
# row.
#
# <details><summary>Hint</summary>
#
# `K = max(1, math.ceil(math.log2(vocab_size)))`; bit j of id s is `(s >> j) & 1`; the column of
# column c is `c % K`.
# </details>

# %%
def code_table(vocab_size: int, d: int) -> torch.Tensor:
    """[V, d]: column c holds bit (c mod ⌈log₂V⌉) of each token id, as ±1."""
    ### BEGIN SOLUTION
    K = max(1, math.ceil(math.log2(vocab_size)))
    ids = torch.arange(vocab_size)
    bits = (ids[:, None] >> torch.arange(K)) & 1
    return (2.0 * bits - 1)[:, torch.arange(d) % K]
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_14_code_table(code_table)

# %% tags=["solution"]
codes = code_table(task.vocab_size, 32)
attribute = task.info["attribute"]
print("the attribute equals the lowest bit of every token id:", bool(((codes[:, 0] > 0).long() == attribute).all()))

# %% [markdown]
# ## Exercise 2 — the first layer's token representation (★★☆, 15 min)
#
# The Emb-MLP's first layer reads concat(E[x₁], …, E[x_L]) W1, with W1 [L·d, hidden]: rows
# l·d … (l+1)·d − 1 of W1 are the block W1_l that reads position l. Write
# `first_layer_rows(E, W1, positions)` for one model: E [V, d], W1 [L·d, hidden] and
# `positions` [V] (the position at which each token occurs) → [V, hidden], whose row s is
# E[s] @ W1_l with l = positions[s].
#
# <details><summary>Hint</summary>
#
# `W1.reshape(L, d, hidden)` stacks the blocks (position first); pick each token's block with
# `[positions]` and multiply row by row (`torch.einsum("vd,vdh->vh", ...)`).
# </details>

# %%
def first_layer_rows(E: torch.Tensor, W1: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """Row s: E[s] times the block of W1 that reads token s's position."""
    ### BEGIN SOLUTION
    d = E.shape[1]
    blocks = W1.reshape(W1.shape[0] // d, d, W1.shape[1])[positions]
    return torch.einsum("vd,vdh->vh", E, blocks)
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_14_first_layer_rows(first_layer_rows)

# %% [markdown]
# ## Exercise 3 — R² in the span of a signature (★★☆, 15 min)
#
# Write `r2_in_span(M, S)`: for a token representation M [V, h] and a signature S [V, m], the
# share of M's squared norm that lies in the token-space span of S, **after centring both over the
# tokens** (subtract the mean row). With Mc, Sc the centred matrices and P the orthogonal projector
# onto the column span of Sc, return ‖P Mc‖²_F / ‖Mc‖²_F as a Python float.
#
# <details><summary>Hint</summary>
#
# An orthonormal basis of the span: the left singular vectors U of Sc whose singular values are
# not (numerically) zero; then ‖P Mc‖² = ‖Uᵀ Mc‖². Work in float64.
# </details>

# %%
def r2_in_span(M: torch.Tensor, S: torch.Tensor) -> float:
    """Share of the token-centred ||M||² inside the token-space span of the centred S."""
    ### BEGIN SOLUTION
    Mc = M.double() - M.double().mean(0)
    Sc = S.double() - S.double().mean(0)
    U, sv, _ = torch.linalg.svd(Sc, full_matrices=False)
    U = U[:, sv > 1e-6 * sv.max()]
    return float((U.T @ Mc).pow(2).sum() / Mc.pow(2).sum())
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_14_r2_in_span(r2_in_span)

# %% tags=["solution"]
tables = {"id codes": code_table(task.vocab_size, 32),
          "shuffled codes": code_table(task.vocab_size, 32)[torch.randperm(24, generator=torch.Generator().manual_seed(0))]}
model, names = fixed_code_ensemble(task, tables, seeds=[0])
start = [first_layer_rows(model.embedding[k].detach(), model.w1[k].detach(), positions) for k in range(2)]
run = train(model, task.population, 100, record_every=100, progress=False)
order1 = label_signature(task.population, 1, "incremental").matrix
for k, name in enumerate(names):
    moved = first_layer_rows(model.embedding[k].detach(), model.w1[k].detach(), positions) - start[k]
    print(f"{name}: loss {run.loss[k, -1]:.3f}, R² of R - R0 in span(ΔS¹) {r2_in_span(moved, order1):.3f}")

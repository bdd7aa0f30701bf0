# %% [markdown]
# # Exercises 14 — Fixed binary codes
#
# Four exercises on lesson 14: build the fixed code table that replaces the embedding, compute
# the first layer's token representation, score it against a signature, and build the lesson's
# control of scale (codes scaled to the learned table's size) and the run that reads it. Fill in
# each `# YOUR CODE HERE`, then run the check cell below it: it prints `PASS check_14_…` or stops
# with a hint. The checks also try *hidden* cases (other vocabularies, widths, shapes, runs), so
# write code for any input. Grade the whole notebook from a terminal:
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
# | 4 | build it: codes scaled to the learned table's size, (a) the scaling, (b) the run that reads it | ★★★ | 30 min |

# %%
import math

import torch

import ctxlab.checks
from ctxlab.fixed_codes import binary_codes, fix_tables, fixed_code_ensemble, token_positions
from ctxlab.models import make_model
from ctxlab.rungs import measure_runs
from ctxlab.signatures import label_signature
from ctxlab.tasks import hierarchy_task
from ctxlab.theory import plateau_levels
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
# <details><summary>Hint 1: the idea</summary>
#
# Each row is a token id written in binary, one column per bit, and the K bits are then repeated
# across the d columns. Only the sign convention (±1 instead of 0/1) and the order of the bits are
# choices, and the text fixes both.
# </details>
#
# <details><summary>Hint 2: the approach</summary>
#
# First the K × V table of bits: bit j of an id is what is left after shifting the id j places to
# the right, modulo 2. Then map 0 and 1 to −1 and +1, and pick for every column c the bit it
# repeats, c mod K.
# </details>
#
# <details><summary>Hint 3: the pitfalls</summary>
#
# The check names these: bits left as 0/1; the highest bit first; ⌊log₂V⌋ bits, too few when V is
# not a power of two; one bit too many when V is a power of two (32 tokens need 5 bits, not 6);
# the K bits written once and the rest of the row padded with zeros instead of tiled.
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
# <details><summary>Hint 1: the idea</summary>
#
# Token s is only ever read by the block of its own position: its first-layer row is its
# embedding row times that one d × hidden block, nothing from the other positions.
# </details>
#
# <details><summary>Hint 2: the approach</summary>
#
# View W1 as L blocks of d consecutive rows, one per position (a reshape that keeps the position
# first). Gather, for every token, the block of its position, and multiply each token's row of E
# by its own block (a batched product over the tokens).
# </details>
#
# <details><summary>Hint 3: the pitfalls</summary>
#
# The check names these: every token read by position 0's block; the blocks of all positions
# summed; the blocks taken as every L-th row of W1 (a reshape with d first) instead of
# consecutive rows. The number of positions is W1's row count divided by d.
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
# <details><summary>Hint 1: the idea</summary>
#
# The share is a Pythagoras: the squared norm of the part of Mc inside the span, over the squared
# norm of all of Mc. Projecting is easy once the span has an orthonormal basis.
# </details>
#
# <details><summary>Hint 2: the approach</summary>
#
# Centre both matrices over the tokens. A singular value decomposition of Sc gives an orthonormal
# basis of its column span: the left singular vectors whose singular values are not (numerically)
# zero. The squared norm of Mc's projection is then the squared norm of its coordinates in that
# basis. Work in float64.
# </details>
#
# <details><summary>Hint 3: the pitfalls</summary>
#
# The check names these: nothing centred; M centred but not S (its mean row adds the all-tokens
# direction to the span); the ratio of norms instead of squared norms; projecting onto each column
# of Sc on its own, which counts overlapping directions twice when the columns are not orthogonal.
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

# %% [markdown]
# ## Exercise 4 — build it: codes scaled to the learned table's size (★★★, 30 min)
#
# The lesson's codes are ±1, the learned table's entries about d^(−γ) (1/32 at γ = 1, d = 32), so
# "fixed codes vs learned table" is also "large vs small input". The lesson's control pulls the two
# apart: codes brought down to the learned table's size, fixed, with W1 at its own init. Here you
# build that control yourself and run it.
#
# **(a) The scaling.** The **size** of a table is its **RMS entry**: the square root of the mean of
# its squared entries, over the whole table (±1 codes have size 1; a learned table at γ = 1, about
# d^(−γ)). Write `scale_codes(codes, learned)`: `codes` is a code table [V, w] of any width w (tiled
# to d or not, bits ±1 or 0/1, so a row may be all zeros, but not the whole table), `learned` is
# one learned table [V, d] or an ensemble's tables [K, V, d]. Return the codes times **one factor
# per learned table**, so that their RMS entry is that table's: [V, w] for one table, [K, V, w]
# for K (model k's codes scaled to model k's table). Only rescale: no shift, no row-by-row factor,
# and leave both inputs as they were. Tolerance: 1e-5 of the result's largest entry.
#
# **(b) The run.** Write `scaled_codes_run(task, codes, seeds, gamma, steps, d, hidden)`, with
# `codes` the ±1 codes [V, d] (the check uses shuffled ones, as the lesson's controls do). Build
# the Emb-MLP of lesson 14 (`make_model("mlp", ...)` with this d, hidden and γ) for every seed in
# three conditions, every weight the seed's own init except these:
#
# * **"learned"**: nothing changed; the table trains.
# * **"codes"**: the ±1 codes as the table, fixed; W1's init multiplied by d^(−γ) (the lesson moves
#   the table's small factor into W1).
# * **"scaled codes"**: the codes scaled (part (a)) to that seed's learned table **at init**, fixed;
#   W1 keeps its own init.
#
# Train them by full-batch gradient descent at learning rate 1 on `task.population` for `steps`
# steps, recording every step, and read each curve against `plateau_levels(task.population)` in
# the lesson's words (`measure_runs`). Return a dict with the keys `"learned"`, `"codes"`,
# `"scaled codes"`, each a [len(seeds), 2] tensor of whole numbers, one row per seed in the order
# given: the steps the curve **rests on H0** (its dwell) and the step it is **halfway down the first
# stair** (its onset, −1 if never).
#
# The check runs your function on two runs of its own (the lesson's task with 4 tokens per position
# and with 6, d = 16, 32 hidden units, γ = 1, 300 steps, 2 or 3 seeds, about a second each) and
# compares every number with the reference within 2 steps. Then it asks your numbers for the
# lesson's reading, with the margins measured on these runs: the ±1 codes leave H0 at once (a rest
# under 10 steps; measured: 0) and are halfway down the first stair within half of every learned
# seed's onset (measured: 10–18 steps against 70–123); the scaled codes are halfway down it only
# after 1.5 times every learned onset, or not within the run (measured: 252–277 steps, or never);
# and with the lesson's codes (the first run) the scaled codes rest on H0 at least twice as long as
# every learned seed (measured: 238–283 steps against 32–46).
#
# <details><summary>Hint 1: the idea</summary>
#
# (a) Two numbers per table, the RMS entry of the learned table and of the codes; their ratio is
# the one factor that multiplies the codes. (b) Three copies of the same networks that differ only
# in their input table and in W1's scale; one batched ensemble trains them all, and the lesson's
# rung reader turns each curve into the two numbers.
# </details>
#
# <details><summary>Hint 2: the approach</summary>
#
# (a) Take each table's mean square over its own last two axes, keeping those axes so the factor
# broadcasts over an ensemble, and compute a new tensor rather than changing the codes. (b) Draw
# one ensemble of 3 × len(seeds) models, condition by condition, each condition with the seeds in
# the given order. The learned models' tables at init are the tables to scale to, before any
# training. Write the codes into the models that get them and freeze them (`fix_tables` does
# both), scale the W1 of the ±1-code models, train, and read the rest on H0 and the onset of the
# first stair off each curve's rungs.
# </details>
#
# <details><summary>Hint 3: the pitfalls</summary>
#
# The check names these. (a): a factor per row instead of per table (a zero row would give 0/0);
# one factor for a whole ensemble; the largest entry, the mean absolute entry or a standard
# deviation (which subtracts the mean) instead of the RMS entry; the codes' own RMS taken to be 1;
# matching norms, which ignores that the code table has w columns and the learned table d;
# scaling the learned table instead of the codes; re-centring the codes; scaling the codes in
# place. (b): the ±1 codes without d^(−γ) in their W1; the scaled codes with d^(−γ) in W1 as well;
# scaled codes that train; the learned table scaled up to the codes instead; codes × d^(−γ), the
# expected size, instead of each seed's own table; the onset read where the curve reaches H1
# instead of where it is halfway down; the rest read as the step it leaves H0 instead of its dwell;
# the two numbers in the other order; and ±1 codes that are no longer ±1 because part (a)
# changed them.
# </details>

# %%
def scale_codes(codes: torch.Tensor, learned: torch.Tensor) -> torch.Tensor:
    """The codes [V, w] times one factor per learned table [..., V, d], RMS entries matched: [..., V, w]."""
    ### BEGIN SOLUTION
    def rms(table: torch.Tensor) -> torch.Tensor:
        return table.double().pow(2).mean(dim=(-2, -1), keepdim=True).sqrt()

    return (codes.double() * rms(learned) / rms(codes)).to(codes.dtype)
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_14_scale_codes(scale_codes)


# %%
def scaled_codes_run(task, codes: torch.Tensor, seeds: list[int], gamma: float, steps: int, d: int,
                     hidden: int) -> dict[str, torch.Tensor]:
    """Per condition [len(seeds), 2]: each seed's rest on H0 and its onset of the first stair (-1: never)."""
    ### BEGIN SOLUTION
    n = len(seeds)
    model = make_model("mlp", task, d=d, hidden=hidden, gamma=gamma, seed=list(seeds) * 3)
    scaled = scale_codes(codes, model.embedding.detach()[:n])  # each seed's learned table at init
    fix_tables(model, {**{n + j: codes for j in range(n)}, **{2 * n + j: scaled[j] for j in range(n)}})
    with torch.no_grad():
        model.w1[n:2 * n] *= d ** -gamma
    run = train(model, task.population, steps, lr=1.0, record_every=1, progress=False)
    reads = measure_runs(run.steps, run.loss, plateau_levels(task.population))
    pairs = torch.tensor([[r.rungs[0].dwell, r.rungs[1].onset] for r in reads])
    return {name: pairs[i * n:(i + 1) * n] for i, name in enumerate(("learned", "codes", "scaled codes"))}
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_14_scaled_codes_run(scaled_codes_run)

# %% tags=["solution"]
small_task = hierarchy_task(block=4, n_values=2)
readings = scaled_codes_run(small_task, binary_codes(small_task.vocab_size, 16, shuffle_seed=0), [0, 1, 2], 1.0, 300, 16, 32)
for name, pairs in readings.items():
    print(f"{name:>12}: rest on H0 {pairs[:, 0].tolist()}, halfway down the first stair at {pairs[:, 1].tolist()}")

# %% [markdown]
# **Think.** The scaled codes are as small as the learned table and, like the learned table, start
# a product of three small factors; yet they wait far longer on H0. What can the learned table do
# in those first steps that the fixed codes cannot? And with the id codes of the lesson (which hand
# the attribute to the first layer) instead of shuffled ones, would you expect the wait to be as
# long? Try it with `binary_codes(small_task.vocab_size, 16)`: on this small task the scaled id codes
# rest on H0 for 65–88 steps and are halfway down the first stair at steps 151–179, about twice as
# late as the learned table (70–83), where the shuffled ones are not halfway down within 300 steps.

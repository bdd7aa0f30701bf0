# %% [markdown]
# # Exercises 08 — Knobs
#
# Three exercises on lesson 08. Fill in each `# YOUR CODE HERE`, then run the check cell below it:
# it prints `PASS check_08_…` or stops with a hint that says which case failed and how. The
# checks use phase maps, embedding tables, loss curves and sweeps you have not seen (other grids,
# axis orders, another knob, other widths and scales, another task). When you are done, grade the
# whole notebook:
#
# ```bash
# ctxlab grade exercises/08_knobs.ipynb      # or: pytest --nbval-lax exercises/08_knobs.ipynb
# ```
#
# | # | exercise | difficulty | time |
# |---|---|---|---|
# | 1 | which corner of a phase map has no first plateau? | ★★☆ | 15 min |
# | 2 | the norm of a LayerNorm'd embedding, with numbers | ★☆☆ | 10 min |
# | 3 | build it: a small γ × learning-rate phase map, and the weight-decay threshold | ★★★ | 25 min |

# %%
import math

import matplotlib.pyplot as plt
import torch

import ctxlab.checks
from ctxlab.models import make_model
from ctxlab.rungs import measure_rungs
from ctxlab.synthetic import small_init_table, staircase_curve, synthetic_phase_map
from ctxlab.tasks import hierarchy_task
from ctxlab.theory import plateau_levels
from ctxlab.train import train

# %% [markdown]
# ## Exercise 1 — the corner without a first plateau (★★☆, 15 min)
#
# First **predict**, from lesson 08: on a γ × learning-rate map of the rest at ln 3, in which corner
# does the rest vanish, and why? Then write `no_plateau_corner(gammas, lrs, plateau)` that reads it
# off a map:
#
# * `gammas` [G] and `lrs` [R] are the axis values (in the order of the rows and columns, not
#   necessarily increasing); `plateau` [G, R] holds the rest at ln 3 in steps, NaN where a run
#   diverged.
# * A learning rate at which **any** run diverged is unstable: drop its whole column first.
# * Along the γ axis, compare the mean rest of the first row with that of the last row and keep the
#   γ of the row with the **shorter** mean; do the same for the first and last remaining columns.
# * Return the pair `(gamma, lr)` of values.
#
# The map below mimics the lesson's (the lr = 8 column diverged, except one run that got stuck).
# Some hidden maps put the axes in another order, or replace the learning rate by another knob
# that lengthens the rest: read the map, do not assume the answer.
#
# <details><summary>Hint 1: the idea</summary>
#
# Clean the map first, then read each axis separately: along γ, which end row rests less on
# average; along the remaining learning rates, which end column.
# </details>
#
# <details><summary>Hint 2: the approach</summary>
#
# Work in two passes. The first decides which columns may be read at all and keeps only those;
# every later step sees the kept map only. The second makes two independent decisions, one per
# axis, each a comparison of two averages taken along the ends of that axis.
# </details>
#
# <details><summary>Hint 3: the pitfalls</summary>
#
# One diverged run makes the whole learning rate unstable. The axes need not be sorted, so take
# the end rows and columns as given, never the smallest or largest value, and do not assume the
# answer is (smallest γ, largest learning rate). The question asks where the rest is shortest, not
# longest. Return the values themselves in the order (γ, learning rate), not their positions, and
# for the learning rate the value of the kept column, not the column's position in the full map.
# </details>

# %%
gammas = [0.5, 0.75, 1.0, 1.25, 1.5]
lrs = [0.25, 0.5, 1.0, 2.0, 4.0, 8.0]
plateau = synthetic_phase_map(gammas, lrs, unstable=8.0, stuck=(2, 5))
plt.imshow(plateau.numpy(), origin="lower", aspect="auto", cmap="viridis")
plt.xticks(range(len(lrs)), lrs)
plt.yticks(range(len(gammas)), gammas)
plt.xlabel("learning rate")
plt.ylabel("γ")
plt.colorbar(label="rest at ln 3 (steps; blank = diverged)")
plt.show()


# %%
def no_plateau_corner(gammas: list[float], lrs: list[float], plateau: torch.Tensor) -> tuple[float, float]:
    """The (gamma, lr) corner of the stable map where the rest at ln 3 is shortest."""
    ### BEGIN SOLUTION
    stable = [j for j in range(len(lrs)) if not bool(plateau[:, j].isnan().any())]
    kept = plateau[:, stable]
    gamma = gammas[0] if float(kept[0].mean()) < float(kept[-1].mean()) else gammas[-1]
    lr = lrs[stable[0]] if float(kept[:, 0].mean()) < float(kept[:, -1].mean()) else lrs[stable[-1]]
    return float(gamma), float(lr)
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_08_no_plateau_corner(no_plateau_corner)

# %% [markdown]
# **Think.** The corner you found is a *stable* one. Why is the corner (smallest γ, largest
# learning rate) of the full map not the answer here, and what would training there look like?

# %% [markdown]
# ## Exercise 2 — why LayerNorm changes the small-init scaling, in numbers (★☆☆, 10 min)
#
# Write `layernorm_norms(E)`: for an embedding table `E` [V, d], return the Euclidean norm of every
# row after LayerNorm, a tensor [V]. Use the definition, not `torch.nn.functional.layer_norm`:
# LN(e) = (e − mean(e)) / √(var(e) + ε), with the mean and the **biased** variance (divide by d)
# over the d coordinates of the row, ε = 10⁻⁵, and no learned scale or shift.
#
# Then run the cell after the check: it prints the norms before and after LayerNorm for several γ
# and d. Which of them depends on γ? What does that mean for the product E → W₁ → W₂ at small init?
#
# <details><summary>Hint 1: the idea</summary>
#
# LayerNorm removes a row's mean and divides by its spread, with ε added under the square root.
# While the spread is large against ε the row's starting scale cancels; ask what happens to that
# cancellation when the entries are as small as d^(−γ) makes them.
# </details>
#
# <details><summary>Hint 2: the approach</summary>
#
# Per row: subtract the mean of its d entries, divide by the square root of (the mean of the
# squared centred entries + ε), and take the Euclidean norm of the result.
# </details>
#
# <details><summary>Hint 3: the pitfalls</summary>
#
# Centre each row before dividing (without it you compute RMSNorm), and return the norm after the
# normalisation, not before. The biased variance divides by d, not d − 1. ε is 10⁻⁵ and goes inside
# the square root; leaving it out gives √d, which is wrong exactly where the init is small.
# Normalise along the width of each row, not down the columns of the table.
# </details>

# %%
def layernorm_norms(E: torch.Tensor) -> torch.Tensor:
    """||LayerNorm(E_s)|| for every row s of E [V, d] (biased variance, eps = 1e-5, no affine)."""
    ### BEGIN SOLUTION
    centred = E - E.mean(-1, keepdim=True)
    return (centred / (centred.pow(2).mean(-1, keepdim=True) + 1e-5).sqrt()).norm(dim=-1)
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_08_layernorm_norms(layernorm_norms)

# %%
try:
    print(f"{'d':>3} {'γ':>5} {'‖E_s‖':>8} {'‖LN(E_s)‖':>10} {'√d':>6}")
    for d in (16, 64):
        for gamma in (0.5, 1.0, 1.5, 2.0):
            E = small_init_table(20, d, gamma, seed=0)
            print(f"{d:>3} {gamma:>5} {float(E.norm(dim=1).mean()):>8.4f} {float(layernorm_norms(E).mean()):>10.3f} {math.sqrt(d):>6.2f}")
except NotImplementedError:
    print("write layernorm_norms above first")

# %% [markdown]
# **Think.** Before LayerNorm the norm is √d · d^(−γ); after it, √d for every γ until the variance
# d^(−2γ) approaches ε = 10⁻⁵. At which (d, γ) does ε start to matter, and what does the model
# look like there? (Hint: then LN no longer undoes the small init completely.)


# %% [markdown]
# ## Exercise 3 — build it: a small γ × learning-rate phase map, and the weight-decay threshold (★★★, 25 min)
#
# Exercise 1 read a corner off a map someone else had made. Now you make the map, as lesson 08 does:
# (3a) label every run the way the lesson's map reads it, (3b) train a small grid of (γ, learning
# rate) cells as **one** batched ensemble and label it, and (3c) read the weight-decay threshold off a
# sweep. One tolerance throughout: **0.01 nats** (a loss is *on* a level when it is within 0.01 of it).
#
# **The labels**, tested in this order:
#
# 1. `"diverged"`: some recorded loss is NaN or infinite (a training loop that records divergence
#    freezes the run and records NaN after it);
# 2. `"dead"`: the run *ends on* H0 (its last loss within 0.01 of H0) although at some recorded step it
#    was more than 0.01 away from H0, above or below: it left H0 and came back, a dead network and not
#    a rest;
# 3. `"rest"`: it *rests on* H0 for at least `min_rest` steps. The rest is lesson 03's dwell: add up
#    the training steps of every recorded interval whose two ends lie within 0.01 of H0 and along
#    which the loss moves by at most 0.01 / 100 nats per step (`ctxlab.rungs` reads it off a curve).
#    A run that never leaves H0 rests there the whole run;
# 4. `"no rest"`: every other run.
#
# ### 3a — label a table of runs
#
# Write `classify_cells(steps, losses, levels, min_rest=50)`. `steps` [T] are the recorded training
# steps (increasing, not always evenly spaced); `losses` [G, R, T] (float32 or float64) holds one run
# per cell, row i for the i-th γ and column j for the j-th learning rate; `levels` is the ladder
# H0 > H1 > …. Return a list of G lists of R labels. The four runs below, laid out 2 × 2, are one of
# each kind.
#
# <details><summary>Hint 1: the idea</summary>
#
# One run at a time, in the order of the list: nothing can be read from a curve with NaN in it; a
# dead run may have spent many steps on H0 (before it left and after it came back), so it must be
# caught before the rest is measured, or it passes for a rest (the bug of an earlier version of the
# lesson's map).
# </details>
#
# <details><summary>Hint 2: the approach</summary>
#
# For each cell: check that every loss is finite; compare the last loss, and every loss, with H0
# against the tolerance; then measure the dwell on H0 with lesson 03's reading (the rung reader of
# `ctxlab.rungs`, or your own from set 03) and compare it with `min_rest`.
# </details>
#
# <details><summary>Hint 3: the pitfalls</summary>
#
# An infinite loss is a divergence too, not only NaN. Leaving H0 means more than 0.01 from it on
# either side: a jump above it counts. A run that never left H0 is not dead. The dwell counts only
# flat intervals (a slide through the band is no rest), in training steps rather than recorded
# points, and adds up every flat piece (a spike that interrupts a rest does not end it). At least
# `min_rest` is enough. The wait (the step halfway down the first stair) is not the rest. Rows are γ.
# </details>

# %%
steps = torch.arange(0, 401, 5)
levels = plateau_levels(hierarchy_task(block=6).population)
H0, H1, H2 = levels[:3]
examples = torch.stack([
    torch.stack([staircase_curve(steps, [(H0,), (H1, 180), (H2, 320)]),                 # rests, then a stair
                 staircase_curve(steps, [(H0 + 0.012,), (H1, 10), (H2, 120)], seed=1)]),  # standard init: no rest
    torch.stack([staircase_curve(steps, [(H0,), (H1, 100), (H0, 250)], seed=2),          # down the stair and back
                 torch.where(steps > 200, torch.nan, staircase_curve(steps, [(H0,), (H1, 60)], seed=3))]),
])
for curve, name in zip(examples.reshape(4, -1), ["rests, then a stair", "no rest", "left and came back", "diverged"]):
    plt.plot(steps, curve, label=name)
for k, h in enumerate(levels):
    plt.axhline(h, ls="--", lw=0.8, color="grey")
plt.xlabel("step")
plt.ylabel("loss (nats)")
plt.legend(fontsize=8)
plt.show()


# %%
def classify_cells(steps: torch.Tensor, losses: torch.Tensor, levels: list[float], min_rest: int = 50) -> list[list[str]]:
    """Label every run of losses [G, R, T]: 'diverged', 'dead', 'rest' or 'no rest' (a [G][R] table)."""
    ### BEGIN SOLUTION
    h0 = levels[0]
    table = []
    for row in losses:
        labels = []
        for loss in row.double():
            away = (loss - h0).abs() > 0.01
            if not bool(torch.isfinite(loss).all()):
                labels.append("diverged")
            elif bool(away.any()) and not bool(away[-1]):
                labels.append("dead")
            else:
                dwell = measure_rungs(steps, loss, levels).rungs[0].dwell
                labels.append("rest" if dwell >= min_rest else "no rest")
        table.append(labels)
    return table
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_08_classify_cells(classify_cells)

# %% [markdown]
# ### 3b — train the grid as one ensemble, and label it
#
# Write `phase_map_labels(task, gammas, lrs, steps, min_rest=50, seed=0)`: train lesson 08's Emb-MLP
# (`make_model("mlp", task, ...)` with `d=16`, `hidden=32`, every model drawn from the same `seed`) on
# every (γ, learning rate) cell **as one ensemble**: full-batch gradient descent for `steps` steps on
# `task.population`, the loss recorded every 5 steps. Lay the models out γ-major: model i·R + j has
# the i-th γ and the j-th learning rate. The largest learning rates blow up, so have the training
# loop record a diverged run and carry on. Return `classify_cells` of the runs against the task's
# ladder, `plateau_levels(task.population)`: a [G][R] table.
#
# The check trains grids of its own (the lesson's task, and one with H0 = ln 2, 4 γ × 3 learning rates
# and another seed) and first asks your map for the lesson's phenomenon: at the standard init γ = 0.5
# no stable learning rate rests on H0, the largest γ at the smallest learning rate rests, and the
# largest learning rate diverges at every γ; then every label must be the reference's. It takes a few
# seconds.
#
# <details><summary>Hint 1: the idea</summary>
#
# The lesson's map is a single training run: K = G·R models, each with its own γ and its own learning
# rate. What is left is bookkeeping: which model belongs to which cell, and back again.
# </details>
#
# <details><summary>Hint 2: the approach</summary>
#
# Build one list of γ and one list of learning rates, one entry per model, in the same γ-major order;
# build the ensemble from the first and train it once with the second, recording divergence; fold the
# [K, T] losses back into [G, R, T] and hand them to 3a.
# </details>
#
# <details><summary>Hint 3: the pitfalls</summary>
#
# Without recording, the first diverged run stops the whole grid. The order of the two lists and the
# order in which you fold the losses back must agree, or each label lands in another cell. Every model
# needs its own γ and its own learning rate (one number for all gives rows or columns that all look
# alike). Rows are γ, columns learning rates.
# </details>

# %%
def phase_map_labels(task, gammas: list[float], lrs: list[float], steps: int, min_rest: int = 50,
                     seed: int = 0) -> list[list[str]]:
    """Train every (gamma, lr) cell as one Emb-MLP ensemble (gamma-major) and label each run (a [G][R] table)."""
    ### BEGIN SOLUTION
    grid_gammas = [g for g in gammas for _ in lrs]
    grid_lrs = [r for _ in gammas for r in lrs]
    model = make_model("mlp", task, gamma=grid_gammas, seed=seed, d=16, hidden=32)
    run = train(model, task.population, steps, lr=grid_lrs, record_every=5, progress=False, on_divergence="record")
    losses = run.loss.reshape(len(gammas), len(lrs), -1)
    return classify_cells(run.steps, losses, plateau_levels(task.population), min_rest)
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_08_phase_map_labels(phase_map_labels)

# %% [markdown]
# Your map of the lesson's task, 3 γ × 4 learning rates, 300 steps:

# %%
try:
    grid_gammas, grid_lrs = [0.5, 1.0, 1.5], [0.5, 1.0, 2.0, 16.0]
    table = phase_map_labels(hierarchy_task(block=6), grid_gammas, grid_lrs, 300)
    print("γ \\ lr  " + "".join(f"{r:>10g}" for r in grid_lrs))
    for g, row in zip(grid_gammas, table):
        print(f"{g:<8g}" + "".join(f"{label:>10}" for label in row))
except NotImplementedError:
    print("write classify_cells and phase_map_labels above first")

# %% [markdown]
# **Think.** Which corner has no first plateau, and does it agree with what exercise 1 read off the
# synthetic map? Where would the dead cells of the lesson's figure appear if you added learning rates
# between 2 and 16, and why would the check not dare to ask for their labels?
#
# ### 3c — the weight-decay threshold
#
# Write `decay_threshold(decays, losses, levels)`. `decays` [D] is a list of weight decays in any order,
# possibly repeated (several seeds at one decay); `losses` [D, T] holds the run of each (finite). A run
# **leaves** H0 when it is halfway down the first stair, a recorded loss strictly below (H0 + H1) / 2,
# at any step. The **threshold** is the smallest decay at which no run leaves H0: a decay counts only
# when every run at it stays, and the smallest such decay is the answer even if a larger decay leaves
# again. When no decay of the sweep keeps its runs on H0, return `math.inf` (the "none" value). Return
# the decay itself, a float.
#
# The sweep below mimics the lesson's scan between 0.003 and 0.01: the larger the decay, the later the
# run is halfway down the first stair, until it no longer is.
#
# <details><summary>Hint 1: the idea</summary>
#
# Each run gets one yes-or-no: did it ever get halfway down the first stair? Each decay then gets a
# verdict from all of its runs, and the threshold is the smallest decay whose verdict is "stays".
# </details>
#
# <details><summary>Hint 2: the approach</summary>
#
# Compute the midpoint of H0 and H1, a "left" flag per run over all of its steps, group the flags by
# the value of the decay, keep the decays none of whose runs left, and take the smallest by value, or
# the none value when nothing is kept.
# </details>
#
# <details><summary>Hint 3: the pitfalls</summary>
#
# The smallest staying decay, not the largest, and not the largest decay that still leaves. The list
# is not sorted. One leaving seed rules out its decay. A drift a little below H0 is no stair, and a run
# that went halfway down and climbed back did leave: look at every step, not only the last. Return
# `math.inf` when none stays (not None or NaN), and the decay, not its position in the list.
# </details>

# %%
scan = [0.003, 0.004, 0.005, 0.006, 0.0065, 0.007, 0.0075, 0.008, 0.009, 0.01]
halfway_at = [165, 190, 230, 290, 340, 420, 610, None, None, None]  # None: never halfway down within 800 steps
sweep_steps = torch.arange(0, 801, 5)
sweep = torch.stack([staircase_curve(sweep_steps, [(H0,)] + ([(H1, at, 15), (H2, at + 150)] if at else []), seed=k)
                     for k, at in enumerate(halfway_at)])
for lam, curve in zip(scan, sweep):
    plt.plot(sweep_steps, curve, lw=1, label=f"λ = {lam:g}")
plt.axhline((H0 + H1) / 2, ls=":", color="grey")
plt.xlabel("step")
plt.ylabel("loss (nats)")
plt.legend(fontsize=7, ncol=2)
plt.show()


# %%
def decay_threshold(decays: list[float], losses: torch.Tensor, levels: list[float]) -> float:
    """The smallest decay at which no run gets halfway down the first stair; math.inf if there is none."""
    ### BEGIN SOLUTION
    mid = (levels[0] + levels[1]) / 2
    left = (torch.as_tensor(losses).double() < mid).any(-1).tolist()
    stays = {}
    for lam, gone in zip(decays, left):
        stays[float(lam)] = stays.get(float(lam), True) and not gone
    return min((lam for lam, ok in stays.items() if ok), default=math.inf)
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_08_decay_threshold(decay_threshold)

# %%
try:
    print(f"the synthetic scan's threshold: λ = {decay_threshold(scan, sweep, levels):g}")
except NotImplementedError:
    print("write decay_threshold above first")

# %% [markdown]
# **Think.** Lesson 08 compared the threshold with the fastest relative gradient rate at init. A
# sweep only brackets the threshold between its last leaving decay and its first staying one: how
# would you refine it without training every decay in between one after another?

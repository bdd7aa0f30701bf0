# %% [markdown]
# # Exercises 08 — Knobs
#
# Two exercises on lesson 08. Fill in each `# YOUR CODE HERE`, then run the check cell below it:
# it prints `PASS check_08_…` or stops with a hint that says which case failed and how. The
# checks use phase maps and embedding tables you have not seen (other grids, axis orders, another
# knob, other widths and scales). When you are done, grade the whole notebook:
#
# ```bash
# ctxlab grade exercises/08_knobs.ipynb      # or: pytest --nbval-lax exercises/08_knobs.ipynb
# ```
#
# | # | exercise | difficulty | time |
# |---|---|---|---|
# | 1 | which corner of a phase map has no first plateau? | ★★☆ | 15 min |
# | 2 | the norm of a LayerNorm'd embedding, with numbers | ★☆☆ | 10 min |

# %%
import math

import matplotlib.pyplot as plt
import torch

import ctxlab.checks
from ctxlab.synthetic import small_init_table, synthetic_phase_map

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
# Find the columns in which any run diverged and leave them out entirely. Of what is left, compare
# the means of the first and last rows, and of the first and last kept columns, and return the
# axis values that belong to the shorter ones.
# </details>
#
# <details><summary>Hint 3: the pitfalls</summary>
#
# One diverged run makes the whole learning rate unstable. The axes need not be sorted, so take
# the end rows and columns as given, never the smallest or largest value. Return the values
# themselves, not their positions, and for the learning rate the value of the kept column, not the
# column's position in the full map.
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
# The biased variance divides by d, not d − 1. ε goes inside the square root. Normalise along the
# width of each row, not down the columns of the table.
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

# %% [markdown]
# # Exercises 03 — The staircase, observed
#
# Three exercises on lesson 03. Fill in each `# YOUR CODE HERE`, then run the check cell below it:
# it prints `PASS check_03_…` or stops with a hint that says which case failed and how. The
# checks use synthetic loss curves with known answers: clean staircases, sub-levels, spikes,
# stairs never reached, irregular recording steps, other ladders. When you are done, grade the
# whole notebook:
#
# ```bash
# ctxlab grade exercises/03_staircase.ipynb      # or: pytest --nbval-lax exercises/03_staircase.ipynb
# ```
#
# | # | exercise | difficulty | time |
# |---|---|---|---|
# | 1 | read plateaus off a loss curve and match them to the ladder | ★★★ | 25 min |
# | 2 | detect stair onsets | ★★☆ | 10 min |
# | 3 | which γ gives the longest first plateau? | ★★☆ | 15 min |
#
# Inputs: `steps` [T] (the recorded training steps, not always evenly spaced), `loss` [T] (one
# run) or `losses` [K, T] (several runs), `levels` the predicted ladder H_0 > H_1 > … (a list of
# floats). You may use `ctxlab.align.find_plateaus` in exercise 1, but not `match_plateaus` or
# `stair_onsets`: those are what the checks compare with.

# %%
import math

import matplotlib.pyplot as plt
import torch

import ctxlab.checks
from ctxlab.align import find_plateaus
from ctxlab.checks.lesson03 import staircase_curve

levels = [math.log(3), 0.9503, 0.8419, 0.6630]  # the ladder of the hierarchy task
steps = torch.arange(0, 4001, 5)
loss = staircase_curve(steps, [(levels[0], 0), (0.955, 240), (0.906, 560), (0.839, 1100), (0.671, 1700)], seed=1)
plt.plot(steps, loss, color="black")
for h in levels:
    plt.axhline(h, ls="--", lw=0.8, color="grey")
plt.xlabel("step")
plt.ylabel("loss")
plt.show()

# %% [markdown]
# ## Exercise 1 — plateaus matched to the ladder (★★★, 25 min)
#
# Write `plateau_levels(steps, loss, levels)` returning a list with one entry per level H_k
# (H_0 included): the mean loss of the plateau matched to H_k, or `None` if no plateau matches.
#
# 1. Find the plateaus: `find_plateaus(steps, loss)` returns every stretch of ≥ 30 steps where the
#    loss moves by less than 3·10⁻⁴ nats per step, as `Plateau(start, stop, level)` (or write
#    your own).
# 2. Match, as the lesson did: the **band** of H_k runs from (H_{k−1} + H_k)/2 (exclusive) down to
#    (H_k + H_{k+1})/2 (inclusive); H_0's band is open upwards, the last level's downwards.
#    Among the plateaus whose level lies in the band, the one nearest to H_k wins. No plateau in
#    the band: `None`.
#
# The example curve above has a sub-level at 0.906 between H1 and H2. Which band is it in, and
# why does it not get matched?
#
# <details><summary>Hint</summary>
#
# For level k: `upper = (levels[k-1] + levels[k]) / 2 if k > 0 else math.inf` and
# `lower = (levels[k] + levels[k+1]) / 2 if k + 1 < len(levels) else -math.inf`; keep the plateaus
# with `lower <= p.level < upper`, then `min(inside, key=lambda p: abs(p.level - levels[k]))`.
# </details>

# %%
def plateau_levels(steps: torch.Tensor, loss: torch.Tensor, levels: list[float]) -> list[float | None]:
    """For each predicted level H_k, the measured loss of the plateau matched to it (None: no plateau)."""
    ### BEGIN SOLUTION
    found = find_plateaus(steps, loss)
    measured = []
    for k, level in enumerate(levels):
        upper = (levels[k - 1] + level) / 2 if k > 0 else math.inf
        lower = (level + levels[k + 1]) / 2 if k + 1 < len(levels) else -math.inf
        inside = [p for p in found if lower <= p.level < upper]
        measured.append(min(inside, key=lambda p: abs(p.level - level)).level if inside else None)
    return measured
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_03_plateau_levels(plateau_levels)

# %% [markdown]
# ## Exercise 2 — stair onsets (★★☆, 10 min)
#
# Write `stair_onsets(steps, loss, levels)` returning, for each stair k = 1 … L, the first
# **training step** (taken from `steps`) at which the loss is below the midpoint
# (H_{k−1} + H_k)/2, or −1 if it never gets there: a list of L integers.
#
# <details><summary>Hint</summary>
#
# `below = loss < mid` is a boolean tensor; `below.nonzero()` lists the positions where it is
# true. The first of them is a position in the arrays: turn it into a step with `steps[i]`.
# </details>

# %%
def stair_onsets(steps: torch.Tensor, loss: torch.Tensor, levels: list[float]) -> list[int]:
    """First step with loss < (H_(k-1) + H_k) / 2 for each stair k = 1..L; -1 where never reached."""
    ### BEGIN SOLUTION
    onsets = []
    for above, below in zip(levels[:-1], levels[1:]):
        hits = (loss < (above + below) / 2).nonzero().flatten()
        onsets.append(int(steps[hits[0]]) if len(hits) else -1)
    return onsets
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_03_stair_onsets(stair_onsets)

# %% [markdown]
# ## Exercise 3 — which γ gives the longest first plateau? (★★☆, 15 min)
#
# First **predict**: at γ = 0.5, 1 and 1.5, which run rests longest at ln 3 before its first
# stair, and why? Then write `longest_first_plateau(steps, losses, gammas, levels)`: `losses` is
# [K, T], one loss curve per run, and `gammas[k]` is the γ of run k (several runs, the seeds,
# share a γ; the list need not be sorted). The length of a run's first plateau is the onset of its
# first stair (exercise 2; a run that never gets there counts as `steps[-1] + 1`). Average it over
# the runs of each γ and return the γ with the longest average wait, as a number.
#
# Do not assume the answer: some hidden cases use other learning rates, where the largest γ
# does not wait longest.
#
# <details><summary>Hint</summary>
#
# `stair_onsets(steps, losses[k], levels)[0]` is run k's wait. Collect the waits in a dict
# γ → list, average each list, and return `max(means, key=means.get)`.
# </details>

# %%
def longest_first_plateau(steps: torch.Tensor, losses: torch.Tensor, gammas: list[float], levels: list[float]) -> float:
    """The γ whose runs wait longest, on average over seeds, before the first stair."""
    ### BEGIN SOLUTION
    waits: dict[float, list[int]] = {}
    for k, gamma in enumerate(gammas):
        onset = stair_onsets(steps, losses[k], levels)[0]
        waits.setdefault(gamma, []).append(onset if onset >= 0 else int(steps[-1]) + 1)
    means = {gamma: sum(w) / len(w) for gamma, w in waits.items()}
    return max(means, key=means.get)
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_03_longest_first_plateau(longest_first_plateau)

# %% [markdown]
# **Think.** In lesson 03 the wait grew from about 13 steps at γ = 0.5 to about 1700 at γ = 1.5.
# The initial weights shrink by a factor 32^(−0.5) ≈ 0.18 for each step of 0.5 in γ. Is the wait
# growing like 1/scale, like log(1/scale), or faster? Lesson 05 answers this for a linear model.

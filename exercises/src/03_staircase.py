# %% [markdown]
# # Exercises 03 — The staircase, observed
#
# Five exercises on lesson 03. Fill in each `# YOUR CODE HERE`, then run the check cell below it:
# it prints `PASS check_03_…` or stops with a hint that says which case failed and how. Exercises
# 1–4 read loss curves rung by rung, as lesson 03 does; their checks use synthetic curves with
# known answers (clean treads, a slide through a level, a tread at an unpredicted sub-level,
# spikes, a climb back onto H_0, stairs a curve is never halfway down, irregular recording steps,
# another ladder).
# Exercise 5 builds the headline model and its training loop from scratch and reads the curves it
# makes. When you are done, grade the whole notebook:
#
# ```bash
# ctxlab grade exercises/03_staircase.ipynb      # or: pytest --nbval-lax exercises/03_staircase.ipynb
# ```
#
# | # | exercise | difficulty | time |
# |---|---|---|---|
# | 1 | dwell: the steps a curve rests on each predicted level | ★★☆ | 20 min |
# | 2 | stair onsets | ★☆☆ | 10 min |
# | 3 | the largest rise, and the rung the curve ends on | ★★☆ | 15 min |
# | 4 | which γ waits longest before the first stair? | ★★☆ | 15 min |
# | 5 | build it: the headline model and its gradient descent in plain PyTorch | ★★★ | 45 min |
#
# Inputs of exercises 1–4: `steps` [T] (the recorded training steps, increasing, not always evenly
# spaced), `loss` [T] (one run, float64) or `losses` [K, T] (several runs), `levels` the predicted
# ladder H_0 > H_1 > … (a list of floats). The tolerance is `tol = 0.01` nats. Do not use
# `ctxlab.rungs` in your answers: it is what the checks compare with.

# %%
import math

import matplotlib.pyplot as plt
import torch

import ctxlab.checks
from ctxlab.synthetic import staircase_curve

levels = [math.log(2), 0.6109, 0.5554, 0.4737]  # the ladder of the headline task, hierarchy_task(block=8, n_values=2)
steps = torch.arange(0, 2501, 5)
# a curve that slides through H1 (drops centred at step 600, about 500 steps wide) to a sub-level 0.585 no
# level predicts, then drops to H2 (at step 1000) and to H3 (at step 1500)
loss = staircase_curve(steps, [(levels[0],), (0.585, 600, 120), (levels[2] + 0.002, 1000), (levels[3], 1500)], seed=2)
plt.plot(steps, loss, color="black")
for k, h in enumerate(levels):
    plt.axhline(h, ls="--", lw=0.8, color="grey")
    plt.text(2500, h, f" H{k}", va="center")
plt.xlabel("step")
plt.ylabel("loss (nats)")
plt.show()

# %% [markdown]
# ## Exercise 1 — dwell on each rung (★★☆, 20 min)
#
# Write `dwell_steps(steps, loss, levels, tol=0.01)` returning a list with one integer per level
# H_k (H_0 included): the number of **training steps** the curve rests on H_k. Read the curve
# interval by interval: the interval from `steps[i]` to `steps[i+1]` counts for H_k when
#
# 1. both ends are within the tolerance of the level: `|loss[i] − H_k| <= tol` and
#    `|loss[i+1] − H_k| <= tol`, and
# 2. the loss is **flat** there: `|loss[i+1] − loss[i]| / (steps[i+1] − steps[i]) <= tol / 100`
#    (at that slope the loss would need 100 steps to cross the band);
#
# and then it adds `steps[i+1] − steps[i]` steps to H_k's dwell.
#
# The curve above slides through H1 and rests on 0.585: what should H1's dwell be, and why does
# neither H1 nor H2 get the steps spent at 0.585?
#
# <details><summary>Hint 1: the idea</summary>
#
# A dwell adds up training time, not records: every interval between two recordings that lies on
# the level (both ends near it) and is flat contributes the number of training steps it spans. A
# slide passes near a level but is never flat there, so it rests on nothing.
# </details>
#
# <details><summary>Hint 2: the approach</summary>
#
# For every interval, its width in training steps and its slope, the change of the loss divided by
# that width. For each level, mark the recordings within the tolerance of it, then the intervals
# whose two ends are marked and whose slope is at most tol / 100, and add up those intervals'
# widths. One whole-array comparison per level does it; no loop over the points is needed.
# </details>
#
# <details><summary>Hint 3: the pitfalls</summary>
#
# One entry per level, H_0 included. Both ends of an interval near the level, not just one. Flatness
# is a slope per training step, so divide the change by the width. Count training steps (the widths),
# not recorded points: the recording is not always every step. Add up every flat stretch on a level,
# not only the longest. An interval near the level but steep is a slide through it: it does not count.
# </details>

# %%
def dwell_steps(steps: torch.Tensor, loss: torch.Tensor, levels: list[float], tol: float = 0.01) -> list[int]:
    """Training steps the curve rests (flat, within tol) on each level H_0, H_1, ..."""
    ### BEGIN SOLUTION
    width = steps.diff()
    slope = loss.diff().abs() / width
    dwell = []
    for h in levels:
        near = (loss - h).abs() <= tol
        on = near[1:] & near[:-1] & (slope <= tol / 100)
        dwell.append(int(width[on].sum()))
    return dwell
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_03_dwell(dwell_steps)

# %% [markdown]
# ## Exercise 2 — stair onsets (★☆☆, 10 min)
#
# Write `stair_onsets(steps, loss, levels)` returning, for each stair k = 1 … L, the first
# **training step** (taken from `steps`) at which the loss is strictly below the midpoint
# (H_{k−1} + H_k)/2, the step at which it is halfway down stair k, or **−1** if it never is: a
# list of L integers. The first time counts, even if the loss climbs back above the midpoint later.
#
# <details><summary>Hint 1: the idea</summary>
#
# A curve is halfway down stair k at the first step its loss is below the midpoint between H_{k−1}
# and H_k. The midpoint and not H_k itself: a tread often sits a little above its level, and the
# midpoint is crossed either way.
# </details>
#
# <details><summary>Hint 2: the approach</summary>
#
# For each pair of neighbouring levels: the midpoint, the records where the loss is strictly below
# it, and the first of those, turned from a position in the arrays into the training step recorded
# there; −1 when there is none.
# </details>
#
# <details><summary>Hint 3: the pitfalls</summary>
#
# Training steps, not positions in the arrays. Strictly below: a loss equal to the midpoint is not
# below it. The first time below counts, not the time after which the loss stays below for good.
# Waiting for the loss to get to H_k itself misses treads that sit a little above it. A stair the
# curve is never halfway down gets −1, not 0 (0 would mean halfway down at the very start).
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
# ## Exercise 3 — the largest rise, and where the curve ends (★★☆, 15 min)
#
# A staircase only goes down. Write `rise_and_end(steps, loss, levels, tol=0.01)` returning a pair:
#
# * **rise**: the curve **leaves H_0** at the first recorded point where `loss < H_0 − tol`. From
#   that point on (that point included), the rise at each point is how far the loss lies above the
#   lowest loss seen so far (from the leaving point on); return the largest, a float (0.0 if the
#   curve never leaves H_0). A climb back onto H_0 after leaving it counts; a wobble before leaving
#   does not.
# * **ends on**: the index k of the level nearest to the final loss `loss[-1]`, if it is within
#   `tol` of it; otherwise `None`.
#
# <details><summary>Hint 1: the idea</summary>
#
# Once the curve has left H_0, a staircase never climbs: the rise at a point is how far the loss
# lies above the lowest loss seen so far. Where the curve ends is a question of distance: it ends on
# a level only if its final loss is within the tolerance of it.
# </details>
#
# <details><summary>Hint 2: the approach</summary>
#
# Find the first record below H_0 − tol; if there is none, the rise is 0. From that record on, keep
# the running minimum of the loss (the library has a cumulative minimum); the largest gap between
# the loss and its running minimum is the rise. For the end: the distance of the final loss to every
# level, and the nearest level's index if that distance is within the tolerance.
# </details>
#
# <details><summary>Hint 3: the pitfalls</summary>
#
# Rises count only from the first time the loss is below H_0 − tol (wobbles on the starting rest
# are not rises), and from that first time, not from the time it leaves for good: a climb back onto
# H_0 is a rise. A rise is measured from the running minimum, not from the minimum of the whole curve,
# and it is not the largest one-step increase. A final loss on no level gives None: not −1, and not
# the nearest level anyway.
# </details>

# %%
def rise_and_end(steps: torch.Tensor, loss: torch.Tensor, levels: list[float], tol: float = 0.01) -> tuple[float, int | None]:
    """(largest climb above the running minimum after leaving H_0, index of the rung the curve ends on or None)."""
    ### BEGIN SOLUTION
    left = (loss < levels[0] - tol).nonzero().flatten()
    rise = 0.0
    if len(left):
        after = loss[int(left[0]):]
        rise = float((after - torch.cummin(after, 0).values).max())
    distance = [abs(float(loss[-1]) - h) for h in levels]
    nearest = min(range(len(levels)), key=distance.__getitem__)
    return rise, (nearest if distance[nearest] <= tol else None)
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_03_rise_and_end(rise_and_end)

# %% [markdown]
# ## Exercise 4 — which γ waits longest before the first stair? (★★☆, 15 min)
#
# First **predict**: at γ = 0.5, 1 and 1.5, which run rests longest on H_0 before its first
# stair, and why? Then write `longest_wait(steps, losses, gammas, levels)`: `losses` is [K, T],
# one loss curve per run, and `gammas[k]` is the γ of run k (several runs, the seeds, share a γ;
# the list need not be sorted). A run's wait is the onset of its first stair (exercise 2); a run
# that is never halfway down it has waited the whole run: count `steps[-1] + 1`. Average the wait
# over the runs of each γ and return the γ with the longest average wait, as a number; if several
# γ wait equally long, return the smallest of them.
#
# Do not assume the answer: some hidden cases use other learning rates, where the largest γ
# does not wait longest.
#
# <details><summary>Hint 1: the idea</summary>
#
# A run's wait is the step at which it is halfway down its first stair, which exercise 2 already
# finds; a run that is never halfway down has waited at least the whole run. The γ are compared by
# their mean wait over their seeds.
# </details>
#
# <details><summary>Hint 2: the approach</summary>
#
# Per run, its first onset, with "never" replaced by one step past the last recorded step. Group
# the waits by γ, average each group, and pick the γ with the largest mean, looking at the γ in
# increasing order so that a tie goes to the smaller.
# </details>
#
# <details><summary>Hint 3: the pitfalls</summary>
#
# Average over all the seeds of a γ, not the first run of each. "Never" counts as steps[-1] + 1,
# not as 0 or −1. Ties go to the smaller γ. The longest wait, not the shortest; and measure it in the
# curves rather than assume the largest γ waits longest. Return the value of γ, not its position in
# the list.
# </details>

# %%
def longest_wait(steps: torch.Tensor, losses: torch.Tensor, gammas: list[float], levels: list[float]) -> float:
    """The γ whose runs wait longest, on average over seeds, before the first stair (ties: the smaller γ)."""
    ### BEGIN SOLUTION
    waits: dict[float, list[int]] = {}
    for k, gamma in enumerate(gammas):
        onset = stair_onsets(steps, losses[k], levels)[0]
        waits.setdefault(gamma, []).append(onset if onset >= 0 else int(steps[-1]) + 1)
    means = {gamma: sum(w) / len(w) for gamma, w in waits.items()}
    return max(sorted(means), key=means.get)
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_03_longest_wait(longest_wait)

# %% [markdown]
# ## Exercise 5 — build it (★★★, 45 min)
#
# Everything so far read curves that someone else made. Now make them: write the headline model
# of lesson 03 and its training loop in plain PyTorch (no `ctxlab.models`, no `ctxlab.train`), as
# `train_staircase(gamma, seed, steps)`, returning `(steps, loss)`: the steps `0, 1, …, steps`
# (a tensor of `steps + 1` integers) and the population loss at each (a tensor of `steps + 1`
# floats; step 0 is the loss before any update, step t the loss after t updates).
#
# * **Data**: `task = hierarchy_task(block=8, n_values=2)` (from `ctxlab.tasks`) and its exact
#   population `data = task.population`: `data.x` [512, 3] token ids (vocabulary V = 24), `data.y`
#   [512, 2] label distributions, `data.weights` [512] the probability of each row.
# * **Model** (no biases anywhere): embedding table E [V, d] with d = 32; the three token vectors
#   E[x_1], E[x_2], E[x_3] concatenated into one vector of 3d = 96; a hidden layer of 128 units,
#   `gelu(h @ W1)` with W1 [96, 128]; a linear read-out `@ W2` with W2 [128, 2]: two logits.
# * **Initialisation**: every weight is N(0, fan_in^(−2γ)), i.e. `torch.randn(...)` times
#   fan_in^(−γ), with fan-in d = 32 for E (the embedding's fan-in is d, as in the paper), 96 for
#   W1 and 128 for W2. So that the check can recompute your start, draw with
#   `g = torch.Generator().manual_seed(seed)` and `torch.randn(shape, generator=g)` in the order
#   E, W1, W2, with the shapes above.
# * **Loss**: the population cross-entropy, `−Σ_n weights[n] Σ_c y[n, c] log softmax(z_n)_c`.
# * **Training**: plain full-batch gradient descent, `p ← p − 1.0 · ∂loss/∂p` for E, W1 and W2,
#   on the whole population at every step.
#
# The check calls your function at γ = 0.5 and γ = 1 on seeds it chooses. It compares your first
# 40 steps with ctxlab's own model trained from the same draws (within 10⁻⁴ nats), then reads the
# whole curve: at γ = 1 it must rest at least 100 steps on H1 and 50 on H2, never climb back by
# more than 0.01 and end on H3 within 1500 steps; at γ = 0.5 it may rest at most 20 steps on H1.
# The check trains for about 3500 steps in all: a few tens of seconds on a laptop.
#
# <details><summary>Hint 1: the idea</summary>
#
# The model is three weight tensors and a forward pass: look up the three tokens' vectors, join
# them into one, one GELU layer, one linear read-out. Training repeats one thing: the population
# loss, its gradient with respect to the three tensors, a step of each against its gradient. The
# check rebuilds your start, so the draws must follow the text exactly.
# </details>
#
# <details><summary>Hint 2: the approach</summary>
#
# Draw the three tensors from one seeded generator, in the order given, each scaled by its fan-in to
# the power −γ, and let autograd track them. In each pass of the loop: the logits of all 512 rows,
# the weighted cross-entropy against the label distributions, the loss recorded as a number; then,
# except after the last record, the gradients and an in-place update made outside autograd's
# tracking. n steps give n + 1 records.
# </details>
#
# <details><summary>Hint 3: the pitfalls</summary>
#
# Record before you update: step 0 is the untouched model. N(0, fan_in^(−2γ)) names the variance,
# so the factor on a standard normal draw is fan_in^(−γ) (not fan_in^(−2γ), not fan_in^(−γ²), not
# 1). GELU, not ReLU; no biases (a bias learns even from 0); the whole population at every step, no
# minibatches; plain gradient descent at learning rate 1, no Adam, no momentum. Return the curve your
# own loop recorded.
# </details>

# %%
from ctxlab.tasks import hierarchy_task


def train_staircase(gamma: float, seed: int, steps: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Train the headline Emb-MLP (d 32, hidden 128, GELU, no biases) by full-batch GD at lr 1; return (steps, loss)."""
    ### BEGIN SOLUTION
    data = hierarchy_task(block=8, n_values=2).population
    x, y, w = data.x, data.y, data.weights
    d, hidden, lr = 32, 128, 1.0
    g = torch.Generator().manual_seed(seed)
    shapes = [(data.vocab_size, d, d), (x.shape[1] * d, hidden, x.shape[1] * d), (hidden, data.n_labels, hidden)]
    E, W1, W2 = [(torch.randn(rows, cols, generator=g) * fan_in ** -gamma).requires_grad_() for rows, cols, fan_in in shapes]
    losses = []
    for t in range(steps + 1):
        z = torch.nn.functional.gelu(E[x].reshape(len(x), -1) @ W1) @ W2
        loss = -(w * (y * torch.log_softmax(z, -1)).sum(-1)).sum()
        losses.append(loss.item())
        if t == steps:
            break
        grads = torch.autograd.grad(loss, [E, W1, W2])
        with torch.no_grad():
            for p, grad in zip([E, W1, W2], grads):
                p -= lr * grad
    return torch.arange(steps + 1), torch.tensor(losses, dtype=torch.float64)
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_03_build_staircase(train_staircase)

# %% [markdown]
# Now read your own curves with your own functions. Once the checks pass, run this (about ten
# seconds): it trains seed 0 at each γ and prints the dwell on every rung (exercise 1), the stair
# onsets (exercise 2), the largest rise and the rung the curve ends on (exercise 3).
#
# ```python
# for gamma, n in ((1.0, 1500), (0.5, 300)):
#     s, l = train_staircase(gamma, 0, n)
#     print(f"γ = {gamma}: dwell {dwell_steps(s, l, levels)}, onsets {stair_onsets(s, l, levels)}, "
#           f"(rise, ends on) {rise_and_end(s, l, levels)}")
# ```

# %% tags=["solution"]
s, l = train_staircase(1.0, 0, 1500)
dwell, (rise, ends) = dwell_steps(s, l, levels), rise_and_end(s, l, levels)
print(f"γ = 1: rests >= 100 steps on H1: {dwell[1] >= 100}, >= 50 on H2: {dwell[2] >= 50}, "
      f"climbs back <= 0.01: {rise <= 0.01}, ends on H3: {ends == 3}")
s, l = train_staircase(0.5, 0, 300)
print(f"γ = 0.5: rests <= 20 steps on H1 (the stairs run together): {dwell_steps(s, l, levels)[1] <= 20}")

# %% [markdown]
# **Think.** At γ = 1 the dwell on H1 is over a hundred steps; at γ = 0.5 it is a handful. Which
# part of your model decides it: the embedding, W1, or W2? Rerun the training with only E at
# γ = 1 and W1, W2 at γ = 0.5 (and the other way round) and compare the dwells. Lesson 05 works
# out why for a linear model.

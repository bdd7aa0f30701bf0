# %% [markdown]
# # Exercises 16 — Rare tokens: update size, loss per bin, the step a bin is halfway down to its rung, what a table moves
#
# Four exercises on lesson 16, on the hierarchy task with Zipf-weighted keys; the last one is a build
# in three parts: how far *everything* a token owns moves, with and without re-injected tables, bin
# by frequency bin. Fill in each `# YOUR CODE HERE`, then run the check cell below it: it prints
# `PASS check_16_…` or stops with a hint. The checks also try *hidden* cases (other frequencies,
# weights, curves, models), so write code for any input. Grade the whole notebook from a terminal:
#
# ```bash
# ctxlab grade exercises/16_token_identity.ipynb
# ```
#
# | # | exercise | difficulty | time |
# |---|---|---|---|
# | 1 | the log-log slope of update size against frequency | ★☆☆ | 5 min |
# | 2 | the loss of one frequency bin | ★★☆ | 8 min |
# | 3 | the step at which a bin is halfway down to its rung, "never" included | ★★☆ | 5 min |
# | 4 | build it: the total update size of a token's parameters, with and without re-injected tables (three parts) | ★★★ | 20 min |

# %%
import copy
import math

import torch

import ctxlab.checks
from ctxlab.token_identity import (
    ReinjectedMLP,
    bin_loss_probe,
    frequency_bins,
    key_frequency,
    zipf_hierarchy,
)
from ctxlab.train import train

# %% [markdown]
# Exercises 1–3 use one small run, trained here once (a few seconds): the two-layer Emb-MLP
# of lesson 16 without extra tables (K = 0), three seeds at γ = 0.75, 300 full-batch steps on the
# Zipf hierarchy task, with the loss of each of 4 key-frequency bins recorded every 5 steps.

# %%
zipf_task = zipf_hierarchy(block=8, exponent=1.5)
data, keys = zipf_task.population, zipf_task.role_tokens("key")
freq = key_frequency(zipf_task)
bins = [keys[b] for b in frequency_bins(freq, 4)]
model = ReinjectedMLP(zipf_task.vocab_size, zipf_task.seq_len, zipf_task.n_labels, n_tables=0, gamma=0.75,
                      seed=[0, 1, 2])
run = train(model, data, 300, record_every=5, probes={"bins": bin_loss_probe(data, bins)}, progress=False)
print("key frequencies:", [round(p, 3) for p in freq.tolist()], "| bins:", [b.tolist() for b in bins])

# %% [markdown]
# ## Exercise 1 — the log-log slope of update size against frequency (★☆☆, 5 min)
#
# Write `loglog_slope(frequency, size)`: the least-squares slope b of the line
# log size ≈ a + b · log frequency, fitted over the n tokens (both tensors [n], all positive).
# Return a Python float. E1 predicts b = 1 for the update sizes of the first steps.
#
# <details><summary>Hint 1: the idea</summary>
#
# A power law, size ∝ frequency^b, is a straight line on log-log axes, and b is its slope: fit that
# line by least squares, with log size as what is predicted.
# </details>
#
# <details><summary>Hint 2: the approach</summary>
#
# Take the logarithm of both tensors in float64 and centre each over the tokens. The least-squares
# slope is the sum of their products over the sum of the centred log frequencies squared.
# </details>
#
# <details><summary>Hint 3: the pitfalls</summary>
#
# Logs of both: no log at all, or the log of the size only, is not a log-log fit. Regress log size
# (y) on log frequency (x), not the other way round, and do not return 1 / slope.
# </details>

# %%
def loglog_slope(frequency: torch.Tensor, size: torch.Tensor) -> float:
    """Least-squares slope of log size against log frequency."""
    ### BEGIN SOLUTION
    x, y = frequency.double().log(), size.double().log()
    x, y = x - x.mean(), y - y.mean()
    return float((x * y).sum() / (x * x).sum())
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_16_loglog_slope(loglog_slope)

# %% tags=["solution"]
moved = (run.embeddings[:, run.index(10)] - run.embeddings[:, 0])[:, keys].norm(dim=-1)  # [seeds, keys]
print("slope of ||ΔE_s|| at step 10 against π(s), per seed:", [round(loglog_slope(freq, m), 3) for m in moved])

# %% [markdown]
# ## Exercise 2 — the loss of one frequency bin (★★☆, 8 min)
#
# Write `bin_loss(logits, data, ids)`: for each model of the ensemble (logits [K, N, C]), the
# cross-entropy over the rows whose **first** token (`data.x[:, 0]`) is one of the token ids `ids`,
# each row weighted by `data.weights`, with the weights **renormalised to sum to 1 inside the bin**:
# the loss of the bin's own population. Rows carry label distributions: use `data.targets()`
# [N, C]. Return a tensor [K].
#
# <details><summary>Hint 1: the idea</summary>
#
# The loss of the bin's own population: only the bin's rows, their weights rescaled to sum to 1
# inside the bin, and each row's cross-entropy against its label distribution.
# </details>
#
# <details><summary>Hint 2: the approach</summary>
#
# Each row's cross-entropy from the log-softmax of the logits and the label distributions, [K, N].
# A mask of the rows whose first token is one of `ids`; the rows' weights with the others set to 0;
# per model, the weighted sum of the row losses divided by the bin's total weight.
# </details>
#
# <details><summary>Hint 3: the pitfalls</summary>
#
# Divide by the bin's total weight: inside the bin the weights sum to 1. Weight by `data.weights`
# (the rows of a Zipf population are not equally likely). Only the bin's rows, not all of them.
# Label distributions, not one label per row. One loss per model, [K], not the ensemble's mean.
# </details>

# %%
def bin_loss(logits: torch.Tensor, data, ids: torch.Tensor) -> torch.Tensor:
    """Per model [K]: the weighted cross-entropy of the rows whose first token lies in ``ids``."""
    ### BEGIN SOLUTION
    per_row = -(logits.double().log_softmax(-1) * data.targets().double()).sum(-1)
    w = data.weights.double() * torch.isin(data.x[:, 0], ids).double()
    return per_row @ w / w.sum()
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_16_bin_loss(bin_loss)

# %% tags=["solution"]
with torch.no_grad():
    logits = model(data.x)
for b, ids in enumerate(bins):
    print(f"bin {b} (keys {ids.tolist()}): loss at step 300 per seed", [round(v, 4) for v in bin_loss(logits, data, ids).tolist()])

# %% [markdown]
# ## Exercise 3 — the step at which a bin is halfway down to its rung (★★☆, 5 min)
#
# Write `rung_step(steps, curve, level)`: the first **recorded step** (a value of `steps`, not
# its index) at which the loss `curve` is strictly below `level`. A curve that dips below and
# comes back up has still got below it at its first dip. If the curve never gets below `level`,
# return `math.inf` ("later than anything recorded"): not −1 and not 0, which a comparison
# would read as "very early". `steps` and `curve` are 1-d tensors of the same length; return a
# Python float. Called with the midpoint (H_{k−1} + H_k)/2 as `level`, it gives the step at which
# the bin is halfway down to rung k, as in the lesson.
#
# <details><summary>Hint 1: the idea</summary>
#
# The first recorded step at which the curve is strictly below the level. If there is none, the
# answer must compare as later than any recorded step, and only infinity does.
# </details>
#
# <details><summary>Hint 2: the approach</summary>
#
# Mark the records that are strictly below the level. If any is marked, return the step recorded at
# the first mark, as a float; otherwise infinity.
# </details>
#
# <details><summary>Hint 3: the pitfalls</summary>
#
# The recorded step, not its index. The first time below counts, even if the curve comes back up.
# Strictly below: a curve that only touches the level is not below it. A curve never below gets
# `math.inf`: −1 and 0 read as "early", and any other finite number as a step that happened.
# </details>

# %%
def rung_step(steps: torch.Tensor, curve: torch.Tensor, level: float) -> float:
    """First recorded step with curve < level; math.inf if it never gets there."""
    ### BEGIN SOLUTION
    below = curve < level
    if not bool(below.any()):
        return math.inf
    return float(steps[below.nonzero()[0, 0]])
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_16_rung_step(rung_step)

# %% tags=["solution"]
levels = zipf_task.plateau_levels()
middle = (levels[2] + levels[3]) / 2  # rung 3 of the task's ladder
curves = run.extras["bins"]  # [seeds, T, bins]
for b in range(len(bins)):
    print(f"bin {b}: halfway down to rung 3 at step", [rung_step(run.steps, curves[s, :, b], middle) for s in range(3)])

# %% [markdown]
# ## Exercise 4 — build it: the total update size of a token's parameters, with and without re-injected tables (★★★, 20 min)
#
# Lesson 16 measured a key's embedding row and its table rows apart, ‖ΔE_s‖ and ‖ΔT_s‖ (the tables'
# lengths added up), and found the table rows moving 13–24 times further than the embedding rows of
# the same model. Here you measure *everything a token owns* as one vector, in two models trained
# from the same draws, one without tables and one with, and ask bin by frequency bin whether rare
# tokens gain more from the tables than frequent ones.
#
# **What a token owns.** In `ReinjectedMLP`, token s owns its embedding row E[s] (d numbers) and its
# row T_j[s] in each of the model's `n_tables` tables (H numbers each). W1, W2, W3 and the router are
# shared by all tokens: they belong to none. Together its parameters form one vector
# θ_s = (E[s], T_1[s], …, T_n[s]) of d + n·H numbers, and its **update size** is the length of that
# vector's change, ‖θ_s(after) − θ_s(before)‖: the Euclidean length, in which every changed number
# counts once. It is the absolute change (not relative to where θ_s started), and it is not the
# lesson's sum of lengths. Without tables, θ_s is E[s] alone.
#
# For an ensemble of M models, `model.embedding` is [M, V, d] and `model.tables` is
# [M, n_tables, V, H]; `model.n_tables` says how many tables there are, and a model with none has no
# `tables` at all.
#
# **Tolerance.** Every part is compared with the reference within a relative 1e-4.
#
# ### 4a — every token's update size (5 min)
#
# Write `token_update_sizes(before, after)`: two `ReinjectedMLP` ensembles of the same sizes and table
# count, the same models before and after a change (a few training steps, say). Return [M, V]: the
# update size of every token in every model, for models of any vocabulary (V = 1 included), with 0 to
# several tables, in float32 or float64. A token that never occurs in the training data keeps its rows:
# its size is 0.
#
# <details><summary>Hint 1: the idea</summary>
#
# The length of a vector made of pieces is the square root of the sum of the pieces' squared lengths.
# So collect, per model and token, the squared change of the embedding row and of each table row, add
# them, and take one square root at the end.
# </details>
#
# <details><summary>Hint 2: the approach</summary>
#
# Subtract the two embedding tables and sum the squares over the feature axis: one number per model
# and token. Do the same for the tables, summing over the feature axis and over the table axis, and add
# the two (only when the model has tables). Take the parameters out of autograd's graph first.
# </details>
#
# <details><summary>Hint 3: the pitfalls</summary>
#
# Every piece counts: the embedding row and the row of each table. The lengths of the pieces added
# up (the lesson's sum of lengths) is not the length of the whole, and the squared length is not the
# length. Adding the tables' row changes together before squaring them treats different parameters
# as one. Dividing by the starting length gives a relative change. Keep the model axis, and expect a
# model without tables.
# </details>

# %%
def token_update_sizes(before: ReinjectedMLP, after: ReinjectedMLP) -> torch.Tensor:
    """[M, V]: the length of the change of each token's embedding row and table rows, taken as one vector."""
    ### BEGIN SOLUTION
    squares = (after.embedding - before.embedding).detach().double().pow(2).sum(-1)
    if after.n_tables:
        squares = squares + (after.tables - before.tables).detach().double().pow(2).sum(-1).sum(1)
    return squares.sqrt()
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_16_token_update_sizes(token_update_sizes)

# %% [markdown]
# ### 4b — the two conditions, bin by frequency bin (8 min)
#
# Write `bin_gain(without, with_tables, data, edges, position)`. `without` and `with_tables` are [M, V]:
# the update sizes of the same tokens in models without and with tables. A token's frequency is
# π(s) = P(x_position = s), the total weight (`data.weights`) of the rows that hold s at `position`:
# its own position (the keys sit at position 0; a token seen only at other positions has π(s) = 0).
# The edges e_0 < e_1 < … < e_B (all ≥ 0) cut the frequencies into B bins: bin b holds the tokens with
# e_b < π(s) ≤ e_{b+1}, however many they are. So a token with π(s) = 0 is in no bin, and neither is one
# above the last edge. A bin's **gain** is the plain mean of its tokens' update sizes with tables (each
# token counts once) divided by the plain mean of their sizes without. Return [M, B]; a bin that holds
# no token gets nan.
#
# <details><summary>Hint 1: the idea</summary>
#
# Two steps: give every token a frequency, then give every bin its set of tokens. The gain compares
# the same tokens in the two conditions, one bin at a time.
# </details>
#
# <details><summary>Hint 2: the approach</summary>
#
# Add each row's weight into a vector of length V at the token the row holds at `position`. For each
# pair of neighbouring edges, mark the tokens strictly above the lower one and at or below the upper
# one; average each condition's sizes over the marked tokens, and divide.
# </details>
#
# <details><summary>Hint 3: the pitfalls</summary>
#
# The frequency is read at the position you are given (not always 0), as a total weight, not a count
# of rows; tokens at the other positions (the anchors) are not counted. Bins of equal size by rank are
# not bins of frequency, and a frequency equal to an edge belongs to the lower bin. The mean is not
# weighted by frequency, and the gain is a ratio of two means, with tables over without, not a mean of
# per-token ratios. The mean of an empty selection is already nan.
# </details>

# %%
def bin_gain(without: torch.Tensor, with_tables: torch.Tensor, data, edges, position: int) -> torch.Tensor:
    """[M, B]: per frequency bin, the mean update size with tables over the mean update size without."""
    ### BEGIN SOLUTION
    freq = torch.zeros(data.vocab_size, dtype=torch.float64).index_add_(0, data.x[:, position], data.weights.double())
    gains = []
    for lo, hi in zip(edges[:-1], edges[1:]):
        members = (freq > lo) & (freq <= hi)
        gains.append(with_tables[:, members].double().mean(-1) / without[:, members].double().mean(-1))
    return torch.stack(gains, -1)
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_16_bin_gain(bin_gain)

# %% [markdown]
# ### 4c — both conditions from the same draws (7 min)
#
# Write `table_gain(data, n_tables, edges, seeds, steps, gamma, lr)`. For 0 tables and for `n_tables`
# tables, build a `ReinjectedMLP` ensemble with one model per seed (the constructor's default sizes, as
# in the lesson, and the γ given), train it on `data` by full-batch gradient descent for `steps` updates at learning rate `lr`
# (on the CPU, `device="cpu"`, so that the models before and after live on one device), and measure
# every token's update size with 4a. For a given seed the two ensembles start from the same E, W1, W2,
# W3 (the tables are drawn last), so they differ only by the tables. Then compare them with 4b, binning
# the keys by their frequency at position 0. Return the triple (without [S, V], with_tables [S, V],
# gain [S, B]).
#
# The check runs your function on the Zipf task in two settings of its own (γ = 0.75, 10 and 15 steps)
# and asks for the lesson's reading as well: with tables, the tokens of every bin move more than 10
# times as far, and the gain is the same in every bin within 10% (largest over smallest bin of a seed).
#
# > **Think.** A rare key's table rows get a small share of the gradient, as its embedding row does.
# > Will the tail bin gain more from the tables than the head bin, less, or as much? And will a
# > token's parameters move further with two tables than with one?
#
# <details><summary>Hint 1: the idea</summary>
#
# An update size needs the parameters from before training, and training changes a model in place.
# Everything else is 4a and 4b.
# </details>
#
# <details><summary>Hint 2: the approach</summary>
#
# For each table count: build the ensemble from the seeds and γ, keep an independent copy of it, train
# the original, and measure the pair. Once both conditions are measured, bin them.
# </details>
#
# <details><summary>Hint 3: the pitfalls</summary>
#
# A second name for the same model is not a copy. Use the learning rate and the number of steps you
# are given, the same seeds for both ensembles, and train both the same way.
# </details>

# %%
def table_gain(data, n_tables: int, edges, seeds, steps: int, gamma: float, lr: float):
    """(without [S, V], with_tables [S, V], gain [S, B]): both conditions trained from the same draws."""
    ### BEGIN SOLUTION
    sizes = []
    for n in (0, n_tables):
        model = ReinjectedMLP(data.vocab_size, data.seq_len, data.n_labels, n_tables=n, gamma=gamma, seed=list(seeds))
        before = copy.deepcopy(model)
        train(model, data, steps, lr=lr, progress=False, device="cpu")
        sizes.append(token_update_sizes(before, model))
    return sizes[0], sizes[1], bin_gain(sizes[0], sizes[1], data, edges, 0)
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_16_table_gain(table_gain)

# %% tags=["solution"]
edges = [0.0, 0.05, 0.15, 1.0]  # bins from the tail up: 4 keys (π 0.02-0.05), 2 keys (0.06-0.10), the 2 commonest
for n in (1, 2):
    _, _, gain = table_gain(data, n, edges, [0, 1, 2], 10, 0.75, 1.0)
    print(f"{n} table(s), 10 steps, gain per bin (tail, middle, head) per seed:",
          [[round(v, 1) for v in row] for row in gain.tolist()])

# %% [markdown]
# **What it shows.** On the lesson's setting (seeds 0, 1, 2, 10 steps, edges (0, 0.05, 0.15, 1): the
# solution prints it above) the gain is about 14 to 18 in every bin, and within a seed the tail bin's
# gain is the head bin's within a few per cent: the tables raise every token's update by one factor, rare
# or frequent, as the lesson's slopes of 1 said. Counted as one vector, two tables move a token's
# parameters slightly *less* far than one (the router splits its weight three ways instead of two,
# and each table's row gets a smaller share), while the lesson's sum of lengths grew about 1.3-fold:
# how the pieces are added decides what "more tables, more update" means.

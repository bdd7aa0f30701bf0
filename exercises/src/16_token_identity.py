# %% [markdown]
# # Exercises 16 — Rare tokens: update size, loss per bin, the step a bin is halfway down to its rung
#
# Three exercises on lesson 16, on the hierarchy task with Zipf-weighted keys. Fill in each
# `# YOUR CODE HERE`, then run the check cell below it: it prints `PASS check_16_…` or stops with a
# hint. The checks also try *hidden* cases (other frequencies, weights, curves), so write code for
# any input. Grade the whole notebook from a terminal:
#
# ```bash
# ctxlab grade exercises/16_token_identity.ipynb
# ```
#
# | # | exercise | difficulty | time |
# |---|---|---|---|
# | 1 | the log-log slope of update size against frequency | ★☆☆ | 10 min |
# | 2 | the loss of one frequency bin | ★★☆ | 15 min |
# | 3 | the step at which a bin is halfway down to its rung, "never" included | ★★☆ | 15 min |

# %%
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
# All three exercises use one small run, trained here once (a few seconds): the two-layer Emb-MLP
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
# ## Exercise 1 — the log-log slope of update size against frequency (★☆☆, 10 min)
#
# Write `loglog_slope(frequency, size)`: the least-squares slope b of the line
# log size ≈ a + b · log frequency, fitted over the n tokens (both tensors [n], all positive).
# Return a Python float. E1 predicts b = 1 for the update sizes of the first steps.
#
# <details><summary>Hint</summary>
#
# With x = log frequency and y = log size (float64), the slope is
# Σ (x − x̄)(y − ȳ) / Σ (x − x̄)². Regress y on x, not x on y.
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
# ## Exercise 2 — the loss of one frequency bin (★★☆, 15 min)
#
# Write `bin_loss(logits, data, ids)`: for each model of the ensemble (logits [K, N, C]), the
# cross-entropy over the rows whose **first** token (`data.x[:, 0]`) is one of the token ids `ids`,
# each row weighted by `data.weights`, with the weights **renormalised to sum to 1 inside the bin**:
# the loss of the bin's own population. Rows carry label distributions: use `data.targets()`
# [N, C]. Return a tensor [K].
#
# <details><summary>Hint</summary>
#
# `per_row = -(logits.log_softmax(-1) * data.targets()).sum(-1)` is [K, N]. Build a mask
# `torch.isin(data.x[:, 0], ids)`, take `w = data.weights * mask`, and return
# `per_row @ w / w.sum()`.
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
# ## Exercise 3 — the step at which a bin is halfway down to its rung (★★☆, 15 min)
#
# Write `rung_step(steps, curve, level)`: the first **recorded step** (a value of `steps`, not
# its index) at which the loss `curve` is strictly below `level`. A curve that dips below and
# comes back up has still got below it at its first dip. If the curve never gets below `level`,
# return `math.inf` ("later than anything recorded"): not −1 and not 0, which a comparison
# would read as "very early". `steps` and `curve` are 1-d tensors of the same length; return a
# Python float. Called with the midpoint (H_{k−1} + H_k)/2 as `level`, it gives the step at which
# the bin is halfway down to rung k, as in the lesson.
#
# <details><summary>Hint</summary>
#
# `below = curve < level`; if `below.any()`, the answer is `steps[below.nonzero()[0, 0]]`.
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
    print(f"bin {b}: rung 3 reached at step", [rung_step(run.steps, curves[s, :, b], middle) for s in range(3)])

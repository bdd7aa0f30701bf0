# %% [markdown]
# # Exercises 13 — Semantic structure: neighbours and signature classes
#
# Three exercises on lesson 13: the k-NN overlap between an embedding and a signature, the
# signature classes of tokens with equal rows, and, to build, the comparison of the two inits at
# matched loss. Fill in each `# YOUR CODE HERE`, then run the check cell below it: it prints
# `PASS check_13_…` or stops with a hint. The checks also try *hidden* cases (other sizes, noisy and
# near-duplicate rows, other step grids, runs of the check's own), so write code for any input.
# Grade the whole notebook from a terminal:
#
# ```bash
# ctxlab grade exercises/13_semantic_structure.ipynb
# ```
#
# | # | exercise | difficulty | time |
# |---|---|---|---|
# | 1 | the k-NN overlap | ★★☆ | 15 min |
# | 2 | signature classes | ★☆☆ | 10 min |
# | 3 | build it: compare the inits at matched loss, not matched steps | ★★★ | 25 min |

# %%
import torch

import ctxlab.checks
from ctxlab.align import overlap_trajectory
from ctxlab.signatures import label_signature
from ctxlab.tasks import hierarchy_task

# %% [markdown]
# ## Exercise 1 — the k-NN overlap (★★☆, 15 min)
#
# Write `knn_overlap(A, B, k)` for two matrices over the same V tokens, A [V, m] and B [V, n]
# (e.g. an embedding and a signature). For every token s:
#
# 1. its k nearest neighbours under A: the k *other* tokens with the highest **cosine similarity**
#    to s (s itself never counts);
# 2. the same under B;
# 3. the share of the k neighbours under A that are also among the k under B (a number in
#    [0, 1]; the order inside each list does not matter).
#
# Return the V shares as a tensor of shape [V]. Two unrelated geometries score about
# k / (V − 1) on average. The check uses rows with very different lengths, so only cosine
# similarity gives the expected neighbours.
#
# <details><summary>Hint 1: the idea</summary>
#
# Neighbours by direction only: two rows are close when the angle between them is small, whatever
# their lengths. Find each token's k closest *other* tokens in each geometry, then ask how many names
# the two lists share.
# </details>
#
# <details><summary>Hint 2: the approach</summary>
#
# Scale every row to unit length, so that one matrix product gives all V × V cosines. Rule each token
# out as its own neighbour before taking the k largest cosines of its row. Then treat the two lists
# of a token as sets: count the entries of one list that appear anywhere in the other, and divide by k.
# </details>
#
# <details><summary>Hint 3: the pitfalls</summary>
#
# A token is not its own neighbour (its cosine with itself is 1, the largest). Cosine, not Euclidean
# distance and not raw dot products: the check's rows differ in length by two orders of magnitude.
# The order inside the top k does not matter, so do not compare the lists position by position.
# Divide by k (the most there can be), not by V, and return the share, not the count: one value per
# token, shape [V], not their mean.
# </details>

# %%
def knn_overlap(A: torch.Tensor, B: torch.Tensor, k: int) -> torch.Tensor:
    """Per token, the share of its k cosine nearest neighbours under A that are also among its k under B: [V]."""
    ### BEGIN SOLUTION
    def neighbours(M: torch.Tensor) -> torch.Tensor:
        unit = M.double() / M.double().norm(dim=1, keepdim=True)
        sims = (unit @ unit.T).fill_diagonal_(-float("inf"))
        return sims.topk(k, dim=1).indices

    a, b = neighbours(A), neighbours(B)
    return (a[:, :, None] == b[:, None, :]).any(-1).double().sum(1) / k
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_13_knn_overlap(knn_overlap)

# %% [markdown]
# ## Exercise 2 — signature classes (★☆☆, 10 min)
#
# Write `signature_classes(S)` for a signature matrix S [V, m]: return one integer class id per
# token (shape [V]) such that two tokens get the same id **exactly when their rows agree in every
# column within 1e-6**. Any numbering is fine. On the hierarchy task's order-1 signature you should
# find 4 classes: the keys by attribute (3 classes) and all anchors together. The check also feeds
# signatures with 1e-8 float noise, rows that differ by only 2e-4, and rows 1e-10 apart on either
# side of a multiple of 1e-6 (so compare rows with each other; rounding to a grid splits them).
# Its rows never chain (no a ≈ b ≈ c with a and c more than 1e-6 apart).
#
# <details><summary>Hint 1: the idea</summary>
#
# "Same row" is a relation between pairs of tokens: two rows are the same when their largest column
# difference is at most 1e-6. Because the rows never chain, the tokens that match one token are its
# whole class.
# </details>
#
# <details><summary>Hint 2: the approach</summary>
#
# Build the V × V table of "same row" from the largest absolute difference over the columns of every
# pair of rows. Walk through the tokens in order: a token that has no id yet opens a new class, and
# every token whose row matches it (and has no id yet) gets that id.
# </details>
#
# <details><summary>Hint 3: the pitfalls</summary>
#
# Exact equality splits rows that differ by 1e-8 of float noise. Rounding to a grid (any number of
# decimals, or multiples of 1e-6) is not "agree within 1e-6": rows 1e-10 apart can fall on either
# side of a grid line, and a coarse grid merges rows that differ. Comparing each row only with the
# row before it misses equal rows that are not next to each other. Row sums and the most likely label
# are not the whole row: compare every column.
# </details>

# %%
def signature_classes(S: torch.Tensor) -> torch.Tensor:
    """Class id per token: equal iff the rows of S agree within 1e-6 in every column."""
    ### BEGIN SOLUTION
    same = (S.double()[:, None, :] - S.double()[None, :, :]).abs().amax(-1) <= 1e-6
    ids = torch.full((S.shape[0],), -1, dtype=torch.long)
    for s in range(S.shape[0]):
        if ids[s] < 0:
            ids[same[s] & (ids < 0)] = int(ids.max()) + 1
    return ids
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_13_signature_classes(signature_classes)

# %% tags=["solution"]
order1 = label_signature(hierarchy_task().population, 1, "raw").matrix
print("hierarchy order-1 classes:", signature_classes(order1).tolist())


# %% [markdown]
# ## Exercise 3 — build it: compare the inits at matched loss, not matched steps (★★★, 25 min)
#
# Lesson 13 first compared the small-init (γ = 1) and standard-init (γ = 0.5) GPTs after the same
# number of steps. By then the standard-init models were about 0.2 nats further along, so that
# comparison mixes *which init* with *how far training has got*. The lesson then read every model at
# **matched loss**: at its own first recorded step with a held-out loss at or below a target. You
# build that comparison in two parts. In part (a) use only torch: `ctxlab.align.at_matched_loss`
# does what you are building.
#
# **(a)** Write `first_step_at_or_below(steps, loss, target)`. `steps` is [K, T]: row k holds model
# k's recorded steps, increasing, and each model may have its own grid (a run recorded every 10
# steps, another every 25, another log-spaced or resumed at step 100). `loss` [K, T] (float32 or
# float64) is each model's loss at those steps, `target` a number. Return a float64 tensor [K]: for
# each model, the first of its recorded steps at which its loss is **at or below** the target. The
# conventions:
#
# * a loss equal to the target counts;
# * *first* means the first time: a curve that gets there and spikes back above got there then;
# * the answer is a step, read from that model's own row of `steps`;
# * a model that never gets there gets **NaN** (`float("nan")`), the way `at_matched_loss` marks it:
#   not 0, not −1 and not its last step, which could all pass for a step; a NaN loss (a model that
#   diverged) never counts as at or below.
#
# The check compares the steps exactly.
#
# **(b)** Write `matched_loss_gap(run, S, tokens, small, target, k)`, the lesson's comparison at one
# target loss. `run` is a `Trajectory` from `train_lm` (`run.steps` [T], the held-out `run.loss`
# [K, T], `run.embeddings` [K, T, V, d]); `S` [V, m] is the centred bigram signature and `tokens` the
# ids of the tokens among which neighbours are searched (the lesson's 30 most frequent characters);
# `small` [K] is True for the small-init models; `k` is the number of neighbours. The measure is the
# lesson's: at a record, the k-NN overlap of the embedding rows with the signature rows, both taken
# over `tokens`, averaged over those tokens (`overlap_trajectory` gives it at every record, for E and
# for the displacement E − E₀). Read each model at its own step from part (a) and return a float64
# tensor [2]: the mean overlap of the small-init models minus that of the standard-init models, on E
# and on E − E₀. A model that never gets to the target is left out of its init's mean; when no model
# of an init gets there, the gap is NaN. The check compares within **0.01**, on short runs of its own
# (2 seeds per init, 160 steps), and then asks for the lesson's reading there at targets 3.0 and 2.92:
# a gap on E above 0.1, larger than the gap on E at the last record (the comparison at equal steps),
# and a smaller gap, in size, on E − E₀.
#
# <details><summary>Hint 1: the idea</summary>
#
# Matching the loss gives every model its own clock. For each model find the first record where its
# loss has got to the target, and read everything else at that record. A step is the *label* of a
# record, and every model's records carry their own labels.
# </details>
#
# <details><summary>Hint 2: the approach</summary>
#
# (a) A [K, T] table of "at or below the target"; per row, the position of the first true entry, and
# that row's step at that position; rows with no true entry become NaN. (b) The overlap at every
# record, once for E and once for E − E₀; part (a) on the run's steps repeated for every model; for
# each model its value at the record whose step is its matched step; per init a mean that skips the
# NaN of the models that never got there; small minus standard.
# </details>
#
# <details><summary>Hint 3: the pitfalls</summary>
#
# The position of the first maximum of an all-false row is 0, a real record: check whether the row
# has any true entry at all, and give NaN (not 0, −1, its first or its last step) when it has none.
# "At or below" (≤), not strictly below; a NaN loss is not at or below. The first record there, not
# the last one. The crossing index is a position, not a step, and each model's step comes from its
# own row, not the first row. In both parts, never the same step for every model (the last record,
# or the step the slowest model needs): that is the comparison at equal steps that the lesson
# replaced. In (b), a plain mean over a NaN is NaN; the sign is small minus standard; the second
# number is the displacement, not E again; neighbours among `tokens` only.
# </details>

# %%
def first_step_at_or_below(steps: torch.Tensor, loss: torch.Tensor, target: float) -> torch.Tensor:
    """Per model, the first of its recorded steps [K, T] with loss [K, T] <= target: [K] float64, NaN if never."""
    ### BEGIN SOLUTION
    there = loss <= target  # NaN compares False: a diverged model never counts
    first = there.to(torch.int8).argmax(1)  # the first True of each row (0 when there is none)
    found = steps.to(torch.float64).gather(1, first[:, None])[:, 0]
    return torch.where(there.any(1), found, torch.full_like(found, float("nan")))
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_13_first_step_at_or_below(first_step_at_or_below)


# %%
def matched_loss_gap(run, S: torch.Tensor, tokens: torch.Tensor, small: torch.Tensor, target: float, k: int) -> torch.Tensor:
    """Small-init minus standard-init mean overlap at matched loss, on E and on E - E0: [2] float64."""
    ### BEGIN SOLUTION
    matched = first_step_at_or_below(run.steps.expand_as(run.loss), run.loss, target)  # [K]
    gaps = []
    for displacement in (False, True):
        overlap = overlap_trajectory(run, S, k, tokens=tokens, relative_to_init=displacement)  # [K, T]
        at = torch.full((len(matched),), float("nan"), dtype=torch.float64)  # NaN: never got there
        for model in (~matched.isnan()).nonzero()[:, 0].tolist():
            record = int((run.steps == matched[model]).nonzero()[0])
            at[model] = overlap[model, record]
        gaps.append(at[small].nanmean() - at[~small].nanmean())
    return torch.stack(gaps)
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_13_matched_loss_gap(matched_loss_gap)

# %% [markdown]
# **Think.** On the lesson's own runs, read `matched_loss_gap` at a few targets between 3.0 and the
# highest final loss, and compare with the gaps after 400 steps. Which of the two gaps, on E or on
# E − E₀, changes more when you switch from equal steps to matched loss, and why does that support
# "most of the gap on E is the random start that standard init keeps"?

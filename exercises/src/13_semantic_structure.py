# %% [markdown]
# # Exercises 13 — Semantic structure: neighbours and signature classes
#
# Two exercises on lesson 13: the k-NN overlap between an embedding and a signature, and the
# signature classes of tokens with equal rows. Fill in each `# YOUR CODE HERE`, then run the check
# cell below it: it prints `PASS check_13_…` or stops with a hint. The checks also try *hidden*
# cases (other sizes, noisy and near-duplicate rows), so write code for any input. Grade the whole
# notebook from a terminal:
#
# ```bash
# ctxlab grade exercises/13_semantic_structure.ipynb
# ```
#
# | # | exercise | difficulty | time |
# |---|---|---|---|
# | 1 | the k-NN overlap | ★★☆ | 15 min |
# | 2 | signature classes | ★☆☆ | 10 min |

# %%
import torch

import ctxlab.checks
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
# <details><summary>Hint</summary>
#
# Normalise the rows (`M / M.norm(dim=1, keepdim=True)`), take `unit @ unit.T`, set the diagonal to
# `-inf` (`fill_diagonal_`), then `.topk(k, dim=1).indices`. For the shared neighbours, compare
# every neighbour of one list with every one of the other:
# `(a[:, :, None] == b[:, None, :]).any(-1)`, count per row, divide by k.
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
# <details><summary>Hint</summary>
#
# `(S[:, None, :] - S[None, :, :]).abs().amax(-1) <= 1e-6` is a [V, V] table of "same row". Walk
# over the tokens; a token without an id yet starts a new class and gives that id to every
# token its row matches.
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

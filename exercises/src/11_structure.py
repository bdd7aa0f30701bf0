# %% [markdown]
# # Exercises 11 — Why the structure matters
#
# Six exercises on lesson 11, two per part: the signature-derived embedding and the plateau race
# (part 1), the held-out pair and the line-up score (part 2), the k-NN overlap and signature
# classes (part 3). Fill in each `# YOUR CODE HERE`, then run the check cell below it: it prints
# `PASS check_11_…` or stops with a hint. The checks also try *hidden* cases (other tasks, order
# sets, weights, shapes), so write code for any input. Grade the whole notebook from a terminal:
#
# ```bash
# ctxlab grade exercises/11_structure.ipynb
# ```
#
# | # | exercise | difficulty | time |
# |---|---|---|---|
# | 1 | build the signature-derived embedding | ★★☆ | 20 min |
# | 2 | predict, then verify: who reaches the last plateau first? | ★★☆ | 15 min |
# | 3 | accuracy on the held-out pair | ★☆☆ | 10 min |
# | 4 | do the anchors line up with their shifts? | ★★☆ | 15 min |
# | 5 | the k-NN overlap | ★★☆ | 15 min |
# | 6 | signature classes | ★☆☆ | 10 min |

# %%
import torch

import ctxlab.checks
from ctxlab.rungs import stair_onsets
from ctxlab.models import make_model
from ctxlab.signatures import label_signature
from ctxlab.tasks import Dataset, anchor_composition_task, hierarchy_task
from ctxlab.train import train
from ctxlab.transplant import (
    frozen_ensemble,
    loss_by_condition,
    random_embedding,
    rescale,
)

# %% [markdown]
# ## Exercise 1 — build the signature-derived embedding (★★☆, 20 min)
#
# Write `signature_table(data, d, orders, norm)` returning the [V, d] table of part 1:
#
# 1. concatenate the **incremental** label signatures of every order in `orders` side by side
#    (`label_signature(data, k, "incremental").matrix`, one row per token);
# 2. centre the rows (subtract the mean token row);
# 3. take the SVD of the centred matrix and keep the first d principal-component scores,
#    U[:, :d] · S[:d]; when the matrix has fewer than d singular values, pad with zero columns;
# 4. rescale the table to Frobenius norm `norm`.
#
# The check accepts any rotation of the d columns (it compares the token-by-token inner products
# E Eᵀ). Hidden cases use other tasks, other order sets, non-uniform row weights and d smaller
# than the signature's rank.
#
# <details><summary>Hint</summary>
#
# Work in float64: `S = torch.cat([...], dim=1).double()`, `S = S - S.mean(0)`,
# `U, sv, _ = torch.linalg.svd(S, full_matrices=False)`. Fill `torch.zeros(V, d)` with the first
# `r = min(d, len(sv))` columns of `U * sv`, then multiply by `norm / E.norm()`.
# </details>

# %%
def signature_table(data: Dataset, d: int, orders, norm: float) -> torch.Tensor:
    """[V, d]: centred, concatenated incremental signatures of `orders`, top-d PC scores, Frobenius norm `norm`."""
    ### BEGIN SOLUTION
    S = torch.cat([label_signature(data, k, "incremental").matrix.double() for k in orders], dim=1)
    S = S - S.mean(0, keepdim=True)
    U, sv, _ = torch.linalg.svd(S, full_matrices=False)
    r = min(d, sv.numel())
    E = torch.zeros(data.vocab_size, d, dtype=torch.float64)
    E[:, :r] = U[:, :r] * sv[:r]
    return (E * (norm / E.norm())).float()
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_11_signature_table(signature_table)

# %% [markdown]
# ## Exercise 2 — predict, then verify: who reaches the last plateau first? (★★☆, 15 min)
#
# **Predict first** (write it down): frozen at the matched norm √V, which reaches the hierarchy
# task's last plateau H3 first — a random table, the ΔS¹⁺² table or the ΔS¹⁺²⁺³ table? Which
# never does?
#
# Then write `finishing_order(runs, levels)`: `runs` maps a condition name to `(steps [T],
# loss [n_seeds, T])`, `levels` is H0..HL. Return the names of the conditions in which **every**
# seed reaches the last plateau, fastest first by the **mean** step over seeds. "Reaching" is the
# lesson's convention: the first recorded step below the midpoint of the last two levels
# (`stair_onsets(steps, loss, levels)[:, -1]`, which is -1 for "never"). Conditions with the same
# mean step keep the order in which `runs` lists them. Return `[]` if no condition finishes.
#
# <details><summary>Hint</summary>
#
# For each condition: `last = stair_onsets(steps, loss, list(levels))[:, -1]`; skip it if
# `(last < 0).any()`; otherwise remember `last.double().mean()`. Sort the names by that number.
# </details>

# %%
def finishing_order(runs: dict, levels) -> list[str]:
    """Conditions whose every seed reaches the last plateau, ordered by the mean step (fastest first)."""
    ### BEGIN SOLUTION
    finished = {}
    for name, (steps, loss) in runs.items():
        last = stair_onsets(steps, loss, list(levels))[:, -1]
        if bool((last >= 0).all()):
            finished[name] = float(last.double().mean())
    return sorted(finished, key=finished.get)
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_11_finishing_order(finishing_order)

# %% [markdown]
# Now verify your prediction with a real (short) race: three frozen tables at the matched norm,
# three seeds each, one batched run of 700 steps (about 10 s).

# %%
task = hierarchy_task()
V, D, NORM, SEEDS = task.vocab_size, 32, task.vocab_size**0.5, [0, 1, 2]

# %% tags=["exercise"]
# Once both checks pass, run the race (about 10 s), e.g.:
# tables = {
#     "random": lambda s: rescale(random_embedding(V, D, 1.0, seed=100 + s), NORM),
#     "ΔS¹⁺²": lambda s: signature_table(task.population, D, (1, 2), NORM),
#     "ΔS¹⁺²⁺³": lambda s: signature_table(task.population, D, (1, 2, 3), NORM),
# }
# race, names = frozen_ensemble(task, tables, SEEDS, d=D)
# traj = train(race, task.population, 700, lr=1.0, record_every=10, progress=False)
# print("finishing order:", finishing_order(loss_by_condition(traj, names), task.plateau_levels()))

# %% tags=["solution"]
tables = {
    "random": lambda s: rescale(random_embedding(V, D, 1.0, seed=100 + s), NORM),
    "ΔS¹⁺²": lambda s: signature_table(task.population, D, (1, 2), NORM),
    "ΔS¹⁺²⁺³": lambda s: signature_table(task.population, D, (1, 2, 3), NORM),
}
race, names = frozen_ensemble(task, tables, SEEDS, d=D)
traj = train(race, task.population, 700, lr=1.0, record_every=10, progress=False)
print("finishing order:", finishing_order(loss_by_condition(traj, names), task.plateau_levels()))

# %% [markdown]
# The next two exercises use the anchor-composition task of part 2 and two trained Emb-MLPs
# (standard and small init), trained here once (about 5 s).

# %%
comp_task = anchor_composition_task(n_keys=20)
comp_model = make_model("mlp", comp_task, gamma=[0.5, 1.0], seed=[0, 0], d=16, hidden=64)
comp_run = train(comp_model, comp_task.population, 1000, lr=1.0, record_every=1000, progress=False)
print("held-out pair:", [comp_task.token_names[t] for t in comp_task.info["held_out"].x[0, 1:].tolist()],
      "| composed labels", comp_task.info["held_out"].y[:4].tolist(), "...",
      "| reverse-pair labels", comp_task.info["symmetric_labels"][:4].tolist(), "...")

# %% [markdown]
# ## Exercise 3 — accuracy on the held-out pair (★☆☆, 10 min)
#
# Write `held_out_accuracy(model, task)`: for each model of the ensemble, the share of the
# held-out sequences (`task.info["held_out"]`, one per key) on which the model's top class is the
# **composed** label `task.info["held_out"].y`. `model(x)` returns logits [K, N, C]; return a
# tensor [K]. A prediction equal to the reverse pair's label (`task.info["symmetric_labels"]`)
# does not count: copying that label is memorising, not composing.
#
# <details><summary>Hint</summary>
#
# Take the argmax over the class axis (the last one), compare with the composed labels, and
# average over the keys (axis 1), keeping the model axis.
# </details>

# %%
def held_out_accuracy(model, task) -> torch.Tensor:
    """Per model [K]: share of held-out keys answered with the composed label."""
    ### BEGIN SOLUTION
    test = task.info["held_out"]
    with torch.no_grad():
        pred = model(test.x).argmax(-1)
    return (pred == test.y).float().mean(-1)
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_11_held_out_accuracy(held_out_accuracy)

# %% tags=["solution"]
print("held-out accuracy, γ = 0.5 and γ = 1:", [round(v, 2) for v in held_out_accuracy(comp_model, comp_task).tolist()])

# %% [markdown]
# ## Exercise 4 — do the anchors line up with their shifts? (★★☆, 15 min)
#
# Write `line_up(E, tokens, values)` for one embedding table E [V, d]: take the rows `E[tokens]`
# (n tokens) and the n numbers `values`, centre both over the n tokens, and return the share of
# the rows' total variance that lies along the direction the values pick out. That is, with
# centred X [n, d] and centred v [n]:
#
# $$\text{line-up} = \frac{\lVert v^\top X\rVert^2}{\lVert v\rVert^2\,\lVert X\rVert_F^2}.$$
#
# It is the pooled R² of regressing every embedding coordinate on the value (1 = the tokens sit on
# a straight line, spaced like their values). Do not fit values *from* embeddings: with 4 anchors
# in d ≥ 3 dimensions that fit is always perfect. Return a Python float.
#
# <details><summary>Hint</summary>
#
# `X = E[tokens] - E[tokens].mean(0)`, `v = values - values.mean()`, then
# `(v @ X).pow(2).sum() / (v @ v) / X.pow(2).sum()`. Work in float64.
# </details>

# %%
def line_up(E: torch.Tensor, tokens: torch.Tensor, values: torch.Tensor) -> float:
    """Share of the tokens' embedding variance on the line indexed by their values."""
    ### BEGIN SOLUTION
    X = E[tokens].double()
    X = X - X.mean(0)
    v = values.double() - values.double().mean()
    return float((v @ X).pow(2).sum() / (v @ v) / X.pow(2).sum())
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_11_line_up(line_up)

# %% tags=["solution"]
anchor_ids = comp_task.role_tokens("anchor")
for k, g in enumerate(comp_run.gammas):
    score = line_up(comp_run.embeddings[k, -1], anchor_ids, comp_task.info["values"][anchor_ids])
    print(f"γ = {g:g}: anchor line-up {score:.2f} (chance 1/3)")

# %% [markdown]
# ## Exercise 5 — the k-NN overlap (★★☆, 15 min)
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
ctxlab.checks.check_11_knn_overlap(knn_overlap)

# %% [markdown]
# ## Exercise 6 — signature classes (★☆☆, 10 min)
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
ctxlab.checks.check_11_signature_classes(signature_classes)

# %% tags=["solution"]
order1 = label_signature(hierarchy_task().population, 1, "raw").matrix
print("hierarchy order-1 classes:", signature_classes(order1).tolist())

# %% [markdown]
# # Exercises 12 — Composing two anchors
#
# Two exercises on lesson 12, on the anchor-composition task: score a trained ensemble on the
# held-out anchor pair, and measure whether the anchors line up with their shifts. Fill in each
# `# YOUR CODE HERE`, then run the check cell below it: it prints `PASS check_12_…` or stops with a
# hint. The checks also try *hidden* cases (other key counts, held-out pairs, shapes), so write code
# for any input. Grade the whole notebook from a terminal:
#
# ```bash
# ctxlab grade exercises/12_composition.ipynb
# ```
#
# | # | exercise | difficulty | time |
# |---|---|---|---|
# | 1 | accuracy on the held-out pair | ★☆☆ | 10 min |
# | 2 | do the anchors line up with their shifts? | ★★☆ | 15 min |

# %%
import torch

import ctxlab.checks
from ctxlab.models import make_model
from ctxlab.tasks import anchor_composition_task
from ctxlab.train import train

# %% [markdown]
# Both exercises use the anchor-composition task of lesson 12 and two trained Emb-MLPs (standard
# and small init), trained here once (about 5 s).

# %%
comp_task = anchor_composition_task(n_keys=20)
comp_model = make_model("mlp", comp_task, gamma=[0.5, 1.0], seed=[0, 0], d=16, hidden=64)
comp_run = train(comp_model, comp_task.population, 1000, lr=1.0, record_every=1000, progress=False)
print("held-out pair:", [comp_task.token_names[t] for t in comp_task.info["held_out"].x[0, 1:].tolist()],
      "| composed labels", comp_task.info["held_out"].y[:4].tolist(), "...",
      "| reverse-pair labels", comp_task.info["symmetric_labels"][:4].tolist(), "...")

# %% [markdown]
# ## Exercise 1 — accuracy on the held-out pair (★☆☆, 10 min)
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
ctxlab.checks.check_12_held_out_accuracy(held_out_accuracy)

# %% tags=["solution"]
print("held-out accuracy, γ = 0.5 and γ = 1:", [round(v, 2) for v in held_out_accuracy(comp_model, comp_task).tolist()])

# %% [markdown]
# ## Exercise 2 — do the anchors line up with their shifts? (★★☆, 15 min)
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
ctxlab.checks.check_12_line_up(line_up)

# %% tags=["solution"]
anchor_ids = comp_task.role_tokens("anchor")
for k, g in enumerate(comp_run.gammas):
    score = line_up(comp_run.embeddings[k, -1], anchor_ids, comp_task.info["values"][anchor_ids])
    print(f"γ = {g:g}: anchor line-up {score:.2f} (chance 1/3)")


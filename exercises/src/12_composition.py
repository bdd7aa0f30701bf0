# %% [markdown]
# # Exercises 12 — Composing two anchors
#
# Four exercises on lesson 12, on the anchor-composition task: score a trained ensemble on the
# held-out anchor pair, measure whether the anchors line up with their shifts, then build the
# lesson's experiment yourself and read off *when* the held-out pair starts to be answered, and
# when the keys line up, against when the training pairs are fitted. Fill in each
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
# | 1 | accuracy on the held-out pair | ★☆☆ | 5 min |
# | 2 | do the anchors line up with their shifts? | ★★☆ | 8 min |
# | 3 | build it: the experiment, recorded over training | ★★★ | 25 min |
# | 4 | read it: when is the held-out pair answered? | ★★☆ | 15 min |

# %%
import torch

import ctxlab.checks
from ctxlab.models import ensemble_grid, make_model
from ctxlab.tasks import anchor_composition_task
from ctxlab.train import train

# %% [markdown]
# Exercises 1 and 2 use the anchor-composition task of lesson 12 and two trained Emb-MLPs (standard
# and small init), trained here once (about 5 s).

# %%
comp_task = anchor_composition_task(n_keys=20)
comp_model = make_model("mlp", comp_task, gamma=[0.5, 1.0], seed=[0, 0], d=16, hidden=64)
comp_run = train(comp_model, comp_task.population, 1000, lr=1.0, record_every=1000, progress=False)
print("held-out pair:", [comp_task.token_names[t] for t in comp_task.info["held_out"].x[0, 1:].tolist()],
      "| composed labels", comp_task.info["held_out"].y[:4].tolist(), "...",
      "| reverse-pair labels", comp_task.info["symmetric_labels"][:4].tolist(), "...")

# %% [markdown]
# ## Exercise 1 — accuracy on the held-out pair (★☆☆, 5 min)
#
# Write `held_out_accuracy(model, task)`: for each model of the ensemble, the share of the
# held-out sequences (`task.info["held_out"]`, one per key) on which the model's top class is the
# **composed** label `task.info["held_out"].y`. `model(x)` returns logits [K, N, C]; return a
# tensor [K]. A prediction equal to the reverse pair's label (`task.info["symmetric_labels"]`)
# does not count: copying that label is memorising, not composing.
#
# <details><summary>Hint 1: the idea</summary>
#
# Composing means answering the held-out pair with the label the two operations give one after the
# other. Answering with the reverse pair's label copies what training showed: that is memorising,
# so only the composed label counts.
# </details>
#
# <details><summary>Hint 2: the approach</summary>
#
# Run the ensemble on the held-out sequences without recording gradients, take each model's top
# class per sequence, compare it with the composed labels, and average the hits over the sequences,
# each model apart.
# </details>
#
# <details><summary>Hint 3: the pitfalls</summary>
#
# The held-out sequences, not the training pairs. Compare with the composed labels only: counting a
# match with the reverse pair's label as well, or comparing with those labels instead, measures
# copying. Average over the keys and keep one number per model, not one for the whole ensemble.
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
# ## Exercise 2 — do the anchors line up with their shifts? (★★☆, 8 min)
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
# <details><summary>Hint 1: the idea</summary>
#
# Regress the embeddings on the values: if the tokens sit on a line spaced like their values, the
# direction the centred values pick out in embedding space carries all of the tokens' variance. The
# score is the share of the variance it carries, between 0 and 1.
# </details>
#
# <details><summary>Hint 2: the approach</summary>
#
# Take the chosen rows and centre them over those tokens; centre the values. Combine the rows with
# the values as weights into one d-vector, and divide its squared length by the values' squared
# length and by the total squared size of the centred rows. Work in float64 and return a number.
# </details>
#
# <details><summary>Hint 3: the pitfalls</summary>
#
# The direction comes from the values: the share of the first principal axis ignores them. Centre
# the embeddings, over the chosen tokens, and centre the values too (a line indexed by v and by
# v + 7 is the same line). Regressing the values on the embeddings instead fits 4 anchors perfectly
# in d ≥ 3: a score of exactly 1 is the sign of that.
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


# %% [markdown]
# ## Exercise 3 — build it: the experiment, recorded over training (★★★, 25 min)
#
# The lesson looks at its runs at the end. Here you record them *as they train*, so that you can
# see when the held-out pair begins to be answered, and whether the keys and anchors line up
# before or after the training pairs are fitted (a question the lesson leaves open).
#
# Write `composition_timeline(task, gammas, seeds, steps, every, lr, d=16, hidden=64)`:
#
# * build one ensemble of Emb-MLPs (`make_model("mlp", ...)`, width `d`, `hidden` units) with
#   every γ of `gammas` crossed with every seed of `seeds`, **γ-major** (every seed of the first
#   γ, then every seed of the next): K = len(gammas) × len(seeds) models;
# * train it with the course's `train`, full batch on `task.population`, for `steps` steps at
#   learning rate `lr`, recording at steps 0, `every`, 2·`every`, … and at the last step (what
#   `record_every=every` records);
# * return a dict of tensors: `"steps"` [T], the recorded steps; `"train_acc"` [K, T], the share of
#   the training sequences whose top class is their label; `"composed"` [K, T], your
#   `held_out_accuracy` of exercise 1; `"key_line_up"` and `"anchor_line_up"` [K, T], your
#   `line_up` of exercise 2 on each model's embedding table at each record, for the keys against
#   their values and for the anchors against their shifts (`task.role_tokens(...)`,
#   `task.info["values"]`).
#
# The check runs your function on tasks of its own (other key counts, held-out pairs, shifts,
# reverse offsets, widths, learning rates, and record grids whose last step is no multiple of
# `every`) and compares every number with the reference within **1e-4** (the steps exactly).
#
# <details><summary>Hint 1: the idea</summary>
#
# The lesson's run reads three numbers per model at every checkpoint: the training accuracy and
# the held-out shares. Add the two line-ups, read off the embedding tables the run keeps. Read
# over training instead of only at the end, they show *when* each thing happens.
# </details>
#
# <details><summary>Hint 2: the approach</summary>
#
# Cross the γs with the seeds in the course's grid order, and build the model from that grid. The
# training loop records what you hand it: it takes functions of the model (probes) and calls
# them at every recorded step, and it keeps every recorded embedding table. Exercise 1's function
# is such a function once the task is fixed; the training accuracy is the same reading on the
# training rows against their labels. The line-ups come afterwards, one per model and record.
# </details>
#
# <details><summary>Hint 3: the pitfalls</summary>
#
# Every γ with every seed, γ-major, not the two lists zipped. Train at the learning rate you are
# given. The last step is recorded even when it is no multiple of `every`, and `"steps"` holds
# steps, not positions in the list of records. Each record's line-up comes from that record's
# table, not the final one. Keys against their values, anchors against their shifts (not their
# token ids), and do not swap the two.
# </details>

# %%
def composition_timeline(task, gammas, seeds, steps: int, every: int, lr: float, d: int = 16,
                         hidden: int = 64) -> dict[str, torch.Tensor]:
    """Train every (γ, seed) Emb-MLP, γ-major, and record accuracies and line-ups at the recorded steps."""
    ### BEGIN SOLUTION
    grid_gammas, grid_seeds = ensemble_grid(gammas, seeds)
    model = make_model("mlp", task, gamma=grid_gammas, seed=grid_seeds, d=d, hidden=hidden)
    data = task.population
    probes = {"train_acc": lambda m: (m(data.x).argmax(-1) == data.y).float().mean(-1),
              "composed": lambda m: held_out_accuracy(m, task)}
    run = train(model, data, steps, lr=lr, record_every=every, probes=probes, progress=False)
    E, values = run.embeddings, task.info["values"]  # E: [K, T, V, d]

    def curve(tokens: torch.Tensor) -> torch.Tensor:
        return torch.tensor([[line_up(E[k, t], tokens, values[tokens]) for t in range(E.shape[1])]
                             for k in range(E.shape[0])])

    return {"steps": run.steps, "train_acc": run.extras["train_acc"], "composed": run.extras["composed"],
            "key_line_up": curve(task.role_tokens("key")), "anchor_line_up": curve(task.role_tokens("anchor"))}
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_12_composition_timeline(composition_timeline)

# %% [markdown]
# ## Exercise 4 — read it: when is the held-out pair answered? (★★☆, 15 min)
#
# Write `composition_report(timeline, level)`: from a timeline of exercise 3, return a dict of [K]
# tensors, one value per model:
#
# * `"fit"`: the first recorded step at which the training accuracy is 1 (every training
#   sequence right), −1 if never;
# * `"composed"`: the first recorded step at which the held-out share `"composed"` is **at or
#   above** `level`, −1 if never;
# * `"final"`: the held-out share at the last record;
# * `"peak"`: the highest recorded key line-up, and `"peak_step"`: the step at which it is first
#   recorded.
#
# "First" means the first recorded step that gets there, even if the curve falls back later. The
# check compares with the reference within **1e-4** (steps exactly), on hand-made and generated
# timelines and on the reference timeline of the run below (12 keys, γ 0.5 and 1, seeds 0 and 1,
# 600 steps recorded every 20, level 0.25). On that run it also asks the report for the lesson's
# phenomenon: every model fits; each small-init model answers a quarter of the held-out keys
# before it fits; small init ends composing more of them, by 0.15 or more in the mean; small
# init's key line-up peaks above 0.4 before its fit, and standard init's stays below 0.4.
#
# <details><summary>Hint 1: the idea</summary>
#
# Every entry is a reading of one curve per model: a first time a threshold is met, a last value,
# a highest value and where it sits. Fitting is the same first-time reading as composing, with the
# threshold "every training sequence right".
# </details>
#
# <details><summary>Hint 2: the approach</summary>
#
# Mark, per model and record, whether the curve meets its threshold; the first marked record,
# turned into a step through the timeline's steps, is the answer, and a row with no mark is −1.
# For the peak, find the position of the highest record in each row and read the value and the
# step there.
# </details>
#
# <details><summary>Hint 3: the pitfalls</summary>
#
# At or above: a quarter of 12 keys is exactly 0.25, and it counts. Steps, not record positions.
# Never reached is −1, not 0 (0 means "already at step 0") and not the last step. The first
# crossing, not the step from which the curve stays. Fitting means a training accuracy of 1, not
# the held-out level. The final share is the last record, not the best one. When the highest
# line-up is recorded twice, its step is the first of the two; and it is the keys' line-up.
# </details>

# %%
def composition_report(timeline: dict[str, torch.Tensor], level: float) -> dict[str, torch.Tensor]:
    """Per model [K]: fit step, first step composing `level` of the held-out keys, final share, key line-up peak."""
    ### BEGIN SOLUTION
    steps = torch.as_tensor(timeline["steps"])

    def first_step(curve: torch.Tensor, threshold: float) -> torch.Tensor:
        met = curve >= threshold
        return torch.where(met.any(-1), steps[met.float().argmax(-1)], torch.tensor(-1))

    key = timeline["key_line_up"]
    best = key.argmax(-1)  # the first of equal highest records
    return {"fit": first_step(timeline["train_acc"], 1.0), "composed": first_step(timeline["composed"], level),
            "final": timeline["composed"][:, -1], "peak": key[torch.arange(len(best)), best],
            "peak_step": steps[best]}
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_12_composition_report(composition_report)

# %% [markdown]
# **Think, then run.** The run below is the lesson's experiment at 12 keys: standard init
# (γ = 0.5) and small init (γ = 1), two seeds each, 600 steps (about 3 s). Before you run it:
# which init fits the training pairs first? Does small init answer held-out keys only once it has
# fitted every training pair, or already on the way? Do its keys line up during the plateau,
# during the descent, or only at the end, and do they stay lined up? Then read the report, and
# say what it answers about the lesson's open question: does the structure that lets shifts add
# up form before the training pairs are fitted?

# %% tags=["exercise"]
# Once both checks pass, run the experiment, e.g.:
# run_task = anchor_composition_task(n_keys=12)
# timeline = composition_timeline(run_task, [0.5, 1.0], [0, 1], 600, 20, 1.0)
# report = composition_report(timeline, 0.25)
# for k, (g, s) in enumerate(zip(*ensemble_grid([0.5, 1.0], [0, 1]))):
#     print(f"γ = {g:g}, seed {s}: fits at step {int(report['fit'][k])}, composes a quarter of the "
#           f"held-out keys at step {int(report['composed'][k])} (-1: never), ends on "
#           f"{float(report['final'][k]):.2f}; key line-up peaks at {float(report['peak'][k]):.2f} "
#           f"(step {int(report['peak_step'][k])}), ends on {float(timeline['key_line_up'][k, -1]):.2f}")

# %% tags=["solution"]
run_task = anchor_composition_task(n_keys=12)
timeline = composition_timeline(run_task, [0.5, 1.0], [0, 1], 600, 20, 1.0)
report = composition_report(timeline, 0.25)
for k, (g, s) in enumerate(zip(*ensemble_grid([0.5, 1.0], [0, 1]))):
    print(f"γ = {g:g}, seed {s}: fits at step {int(report['fit'][k])}, composes a quarter of the "
          f"held-out keys at step {int(report['composed'][k])} (-1: never), ends on "
          f"{float(report['final'][k]):.2f}; key line-up peaks at {float(report['peak'][k]):.2f} "
          f"(step {int(report['peak_step'][k])}), ends on {float(timeline['key_line_up'][k, -1]):.2f}")

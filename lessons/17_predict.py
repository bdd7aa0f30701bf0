# %% [markdown]
# # Lesson 17 — Predict, then train
#
# **Learning goals.** After this lesson you can
# 1. say which parts of a staircase prediction are derived, which are approximated, and which are
#    fitted (none);
# 2. compute, from a task's data and a model's init alone, every level the loss will rest on and the
#    step at which it comes halfway down to each;
# 3. train the same models and read the measured onsets beside the predicted ones;
# 4. say where the prediction misses and why.
#
# **Prerequisites.** Lessons 03 (reading a staircase rung by rung), 04–05 (the first stair as a
# small-init linear network) and 06 (the next-stair equation). This lesson belongs right after
# lesson 06; it is numbered last because it was written last.
#
# **Run time.** About 25 seconds on a laptop CPU.

# %% [markdown]
# ## The recipe
#
# Lessons 04–06 explained each stair after seeing it. Here we turn the explanations into a
# forecast made before any training, and then check it. `ctxlab.theory.predict_staircase` does
# it in three steps, one per piece of theory:
#
# | piece | what it is | status |
# |---|---|---|
# | **first stair** | At small init only the key moves (lesson 04: the anchors' order-1 drive is zero). The network is expanded around 0 to second order, z = (σ'(0) u + σ''(0) u²/2) W₂, and plain GD on this small-init network is integrated from the model's own initial weights. The σ'(0) term alone is lesson 05's three-factor linear network. | derived; the flow is solved numerically |
# | **each later stair** | On the plateau before order k the new tokens and their first-layer block form a two-factor linear network driven by lesson 06's M. Each singular mode grows by (1 + η s)² per step from its size at init m₀, so the loss is halfway down after ln(m_half / m₀) / (2 ln(1 + η s)) steps, counted from the previous stair's onset. | derived |
# | **the plateau states** | M needs the hidden state and read-out on the plateau, and m_half needs the size the mode ends at. Both come from the network restricted to the positions already learned, run by GD until it rests on its level. m_half is 1 − 1/√2 ≈ 0.29 of the end size, where a quadratic loss is halfway down. | approximated |
# | **sub-levels** | Over Z_n, n ≥ 3, an order has n − 1 modes. The strongest comes first and leaves the loss on the best loss with that mode alone: a rank-1 logit map. | derived |
# | anything fitted to training runs | — | none |
#
# Two caveats. The prediction is deterministic for a given seed: it starts from the very weights
# the training run will start from. And it is not much cheaper than the training run it predicts,
# since the restricted networks still run through each stair (in the benchmark below it took from
# a third of the training time, on binary tasks, to twice it, on three values). What it adds is the
# *why*: a growth rate and a distance for every stair.

# %%
import json
from importlib.resources import files

import matplotlib.pyplot as plt
import torch

from ctxlab.experiments import staircase
from ctxlab.experiments.prediction import compare, measured, training_steps
from ctxlab.plots import prediction_figure
from ctxlab.tasks import hierarchy_task
from ctxlab.theory import predict_staircase

task = hierarchy_task(block=8, n_values=2, mix=(0.4, 0.3, 0.3))  # the headline task of lesson 03
GAMMAS, SEEDS, LR = (1.0, 1.25), (0, 1), 1.0

# %% [markdown]
# ## Step 1: predict
#
# Four models: γ = 1 and 1.25, two seeds each, Emb-MLP with d = 32 and 128 hidden units, plain GD at
# lr 1. The table lists each predicted level with its predicted onset (the step at which the loss is
# halfway down to it) and the predicted dwell (the steps the predicted curve rests within 0.01 of it).

# %%
prediction = predict_staircase(task, GAMMAS, SEEDS, lr=LR, d=32, hidden=128, progress=False)
print(prediction.table())

# %% [markdown]
# ## Step 2: where the numbers come from
#
# The first onset is read off the integrated small-init network. Each later onset is a growth rate
# and a distance. Let us recompute the order-2 onset of the first model from its parts.

# %%
stair = prediction.stairs[0]  # order 2, its only mode (binary attributes: one mode per order)
rate, start, half = (float(stair[key][0]) for key in ("rate", "start", "halfway_size"))
onset_1 = float(prediction.rungs[1].onset[0])
by_hand = onset_1 + torch.log(torch.tensor(half / start)).item() / rate
print(f"order-2 mode of γ = {prediction.gammas[0]:g}, seed {prediction.seeds[0]}: "
      f"growth rate 2 ln(1 + η s) = {rate:.4f} per step, size at init m0 = {start:.2e}, halfway size {half:.3f}")
print(f"onset = {onset_1:.0f} + ln({half:.3f} / {start:.2e}) / {rate:.4f} = {by_hand:.0f} "
      f"(the table: {int(prediction.rungs[2].onset[0])})")
for s in prediction.stairs:
    print(f"order {s['order']}: rate per γ and seed {[round(float(v), 4) for v in s['rate']]}, "
          f"ln(m_half / m0) {[round(float(v), 2) for v in (s['halfway_size'] / s['start']).log()]}")

# %% [markdown]
# The γ dependence sits in m₀. A smaller init makes the anchors start smaller, so ln(m_half / m₀)
# is larger at γ = 1.25, while the rate is set by the learned plateau and is about the same for
# both γ. That is why the later rests grow *linearly* in γ (lesson 03), while the first grows like
# a power of the init scale.
#
# **Think.** Before training: at which step does the prediction say each model comes halfway down
# to H(Y | x1, x2, x3)? How many steps apart are the two γ?

# %% [markdown]
# ## Step 3: train and compare
#
# Now the real thing: the same four models trained by `ctxlab.experiments.staircase` (the function
# behind `ctxlab staircase`), for enough steps to cover the predicted ladder.

# %%
result = staircase(GAMMAS, SEEDS, steps=training_steps(prediction), lr=LR, task=task, d=32, hidden=128,
                   progress=False)
print(compare(prediction, result))

# %%
fig = prediction_figure(prediction, result)
plt.show()

# %% [markdown]
# Thin lines are the trained losses, thick pale lines the predicted curves, and the triangles on
# the top edge the predicted onsets. The predicted curve is the integrated first stair followed by one
# smooth drop per mode. Its later drops are wider than the trained ones, so it leaves each middle
# level sooner: its dwells there are shorter than the measured ones (the table above). The onsets
# are the forecast; the shape between them is a sketch.

# %%
# NBVAL_CHECK_OUTPUT
reads = measured(prediction, result)
errors = torch.tensor([abs(int(rung.onset[k]) - reads[k].rungs[j].onset) / reads[k].rungs[j].onset
                       for k in range(len(prediction.gammas)) for j, rung in enumerate(prediction.rungs) if j])
print("every predicted onset within 25% of the measured one:", bool((errors <= 0.25).all()))
print("every run ends on the last predicted level:", all(r.ends_on == len(prediction.rungs) - 1 for r in reads))

# %%
print(f"largest onset error: {100 * float(errors.max()):.0f}% (mean {100 * float(errors.mean()):.0f}%)")

# %% [markdown]
# ## Where the prediction misses
#
# `benchmarks/staircase_prediction.py` runs the same comparison on seven settings, with three seeds
# and γ = 1, 1.25 and 1.5 each: the headline task, four orders, three attribute values, two other
# mixes and two other widths. Its last recorded report ships with the package
# (`ctxlab/data/staircase_prediction.json`); here is its summary, the largest onset error per
# setting and rung.

# %%
report = json.loads((files("ctxlab") / "data" / "staircase_prediction.json").read_text())
for setting in report:
    worst = {row["name"]: max(abs(r["onset_error"]) for r in row["runs"] if r["onset_error"] is not None)
             for row in setting["rungs"][1:]}
    print(f"{setting['setting']:<16} " + "  ".join(f"{name}: {100 * w:.0f}%" for name, w in worst.items()))

# %% [markdown]
# On binary attributes with three orders every onset is forecast within 15 %, and with four within
# 25 % (the last rung comes later than predicted). The first stair is within 2 % everywhere: at that
# stage the small-init network *is* the model. The later ones stay close because one growth mode per
# order is all there is. The misses are on three attribute values, from the *which* rung of order 2
# on: the second mode of an order, after *whether*. On the *whether* sub-level its drive is weak, so
# the prediction waits long; in training, *which* comes sooner for some seeds, by up to the
# percentages above, and the order-3 rungs, timed from it, inherit the delay. The linearisation
# treats the sub-level as a saddle left along the anchors' mode alone. Our guess, not checked here,
# is that training leaves it along a direction that also moves the keys and the read-out.

# %% [markdown]
# > **Paper vs. this course.**
# > *From the paper's abstract* (Yao, Hang & Xu, *Context Staircase*, 2026), in our words: the
# > gradient flow of the embeddings at small initialization explains the staircase.
# >
# > *This course's reconstruction*: the abstract gives no predictor. The recipe here (the small-init
# > network to second order for the first stair, the two-factor growth of lesson 06's modes for the
# > later ones, plateau states from restricted networks, the rank-1 sub-levels) is our own, and so
# > are its checks.

# %% [markdown]
# ## Summary
#
# * A staircase can be forecast from the data and the init: the first stair by integrating the
#   small-init network, every later stair as a growth rate 2 ln(1 + η s) and a distance
#   ln(m_half / m₀).
# * The γ dependence of the later stairs lives in m₀, which is why their rests grow linearly in γ.
# * On binary hierarchy tasks every onset lands within 15 % with three orders and 25 % with four;
#   the *which* rungs of three-valued tasks are the known miss (up to 81 % late).
# * `ctxlab predict --train` prints the same comparison for any hierarchy task from the command line.

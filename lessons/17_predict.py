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
# **Run time.** About 20 s on a 2-core machine (measured by `benchmarks/notebook_budget.py`).

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
# | **each later stair** | On the plateau before order k the new tokens and their first-layer block form a two-factor linear network driven by lesson 06's M. Each singular mode grows by (1 + η s)² per step from its size at init m₀, so the loss is halfway down after ln(m_half / m₀) / (2 ln(1 + η s)) steps, counted from the previous stair's onset. | derived, with the rate held at its plateau value (an approximation: see *Why which comes sooner*) |
# | **the plateau states** | M needs the hidden state and read-out on the plateau, and m_half needs the size the mode ends at. Both come from the network restricted to the positions already learned, run by GD until it rests on its level. m_half is 1 − 1/√2 ≈ 0.29 of the end size, where a quadratic loss is halfway down. | approximated |
# | **sub-levels** | Over Z_n, n ≥ 3, an order has n − 1 modes. The strongest comes first and leaves the loss on the best loss with that mode alone: a rank-1 logit map. | derived |
# | anything fitted to training runs | — | none |
#
# Two caveats. The prediction is deterministic for a given seed: it starts from the very weights
# the training run will start from. And it is not much cheaper than the training run it predicts,
# since the restricted networks still run through each stair (the benchmark below prints its time
# against the training time). What it adds is a reason for each onset: a growth rate and a distance
# for every stair.

# %%
import json
from importlib.resources import files

import matplotlib.pyplot as plt
import torch

from ctxlab.experiments import staircase
from ctxlab.experiments import sub_level_growth
from ctxlab.experiments.prediction import compare, measured, training_steps
from ctxlab.plots import prediction_figure, sub_level_growth_figure
from ctxlab.tasks import hierarchy_task
from ctxlab.theory import plateau_levels, predict_staircase

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
# is larger at γ = 1.25, while the rate is set by the learned plateau and changes much less (within
# a few percent for order 2, within about a quarter for order 3, printed). So in the forecast the
# later rests lengthen with γ through ln(1/m₀) (the first rest is integrated instead: lesson 05
# shows it growing like 1/ε); on the middle levels the forecast's dwells are shorter than the
# measured ones (below).
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
for setting in report:  # per rung, the signed error (predicted - measured) / measured of largest size
    worst = {row["name"]: max((r["onset_error"] for r in row["runs"] if r["onset_error"] is not None), key=abs)
             for row in setting["rungs"][1:]}
    print(f"{setting['setting']:<16} " + "  ".join(f"{name}: {100 * w:+.1f}%" for name, w in worst.items()))
missed = [(s["setting"], r["gamma"], r["seed"]) for s in report for r in
          {(r["gamma"], r["seed"]): r for row in s["rungs"] for r in row["runs"]
           if r["onset_error"] is not None and abs(r["onset_error"]) > 0.25}.values()]
print("runs with a rung more than 25% off:", ", ".join(f"{name} γ={g:g} seed {k}" for name, g, k in missed))
last_errors = [r["onset_error"] for r in report[1]["rungs"][-1]["runs"]]  # 4 orders, its last rung
print(f"{report[1]['setting']}: last rung forecast early in {sum(e < 0 for e in last_errors)} of {len(last_errors)} runs")
print("forecast time / training time:", ", ".join(f"{s['setting']} {s['predict_seconds'] / s['train_seconds']:.2f}" for s in report))

# %% [markdown]
# A positive error is a forecast too late. On binary attributes with three orders every onset is
# forecast within 15 %, and with four within 25.3 %: one four-order run misses 25 % by a hair, and
# there the last rung comes later than forecast in every run (printed). The first stair is within
# 2 % everywhere: at that stage the small-init network is well described by its second-order
# expansion, which the forecast integrates. The larger misses are on three attribute values, in
# three of its nine runs (printed), from order 2's *which* rung on (printed "H(Y | x1, x2)"; the
# rung before it, printed "H(Y | x1, x2) at rank 1", is *whether*, lesson 03's
# H(Y | x1, [A(x2)=0])). *Which* is the second mode of an order, after *whether*. There the
# forecast is late, and the order-3 rungs, timed from *which*, stay late.

# %% [markdown]
# The report also holds each rest's dwell at the three γ, and the slope of the seeds' mean dwell
# against γ (least squares, in steps per unit of γ), predicted and measured. It fits one on every
# rest but the last (which lasts to the end of the run) where the runs dwell at least 100 steps on
# average at every γ: 19 of the 25.

# %%
def mean_dwells(row: dict, key: str) -> str:
    """The seeds' mean dwell at each γ of the report, as "steps at γ" pairs."""
    gammas = sorted({r["gamma"] for r in row["runs"]})
    return ", ".join(f"{sum(r[key] for r in row['runs'] if r['gamma'] == g) / sum(r['gamma'] == g for r in row['runs']):.0f}"
                     f" at γ={g:g}" for g in gammas)


slopes = [(s["setting"], row) for s in report for row in s["rungs"][:-1] if "dwell_slope" in row]
within = [abs(row["dwell_slope"]["error"]) <= 0.25 for _, row in slopes]
later = [ok for (_, row), ok in zip(slopes, within) if row["name"] != "H(Y)"]
print(f"{len(slopes)} rests: the predicted dwell slope within 25% of the measured one in {sum(within)}; "
      f"after the first stair (the rests below H(Y)) in {sum(later)} of {len(later)}")
for name, row in slopes:
    d = row["dwell_slope"]
    if abs(d["error"]) > 0.25:
        print(f"  {name}, on {row['name']}: slope {d['predicted']:.0f} predicted, {d['measured']:.0f} measured "
              f"({100 * d['error']:+.0f}%); mean dwells predicted {mean_dwells(row, 'predicted_dwell')}; "
              f"measured {mean_dwells(row, 'measured_dwell')}")


# %% [markdown]
# Three slopes miss 25 % (printed), each for a reason the dwells beside it show:
#
# * **Four orders, on H(Y | x1, x2, x3):** the forecast barely rests there (2 to 93 steps against
#   233 to 420 measured); both dwells grow with γ, the forecast's at half the rate. Why its rest is
#   so short is not drawn here; on the headline task (the figure above) the forecast's drops are
#   wider than the trained ones, which shortens its rests.
# * **Three values, on H(Y | x1):** the dwell hardly depends on γ in either (384 to 418 steps
#   forecast, 388 to 442 measured, within 6 % of each other at every γ). A slope near zero makes a
#   large relative error out of 35 steps per unit of γ.
# * **Three values, on the sub-level:** both rests collapse at γ = 1.5 (to 178 and 215 steps), and
#   that drop sets both slopes. At γ = 1 the forecast rests 38 % longer than measured (1083
#   against 785 steps), which steepens its slope (with three evenly spaced γ, the fitted slope is
#   the difference of the two ends over 0.5); it is the same late forecast of *which* as above.

# %% [markdown]
# The same script's `--untuned` runs five tasks first run after the forecast was written (three
# attribute values with two orders, binary with blocks of 10 and an even mix, four values with two
# orders, width 24, and one five-valued run), with the forecast unchanged; its report ships beside
# the first (`ctxlab/data/staircase_prediction_untuned.json`):

# %%
untuned = json.loads((files("ctxlab") / "data" / "staircase_prediction_untuned.json").read_text())
off = [(s["setting"], row["name"], r["gamma"], r["onset_error"]) for s in untuned for row in s["rungs"][1:]
       for r in row["runs"] if r["onset_error"] is not None]
print(f"{len(off)} onsets: {sum(abs(e) <= 0.25 for *_, e in off)} within 25%, "
      f"the largest {100 * max(abs(e) for *_, e in off):.0f}% off")
for name, rung, g, e in off:
    if abs(e) > 0.25:
        print(f"  {name}, {rung}, γ = {g:g}: {100 * e:+.0f}%")
never = [(s["setting"], row["name"]) for s in untuned for row in s["rungs"][1:] for r in row["runs"]
         if r["measured_onset"] is None]
print("never halfway down in the run:", never)
for s in untuned:
    for note in s["stalls"]:
        print(f"{s['setting']}: {note}")

# %% [markdown]
# Every miss there is again on more than two attribute values at γ = 1, from order 2's *which*
# rung (the one after its sub-level) on; but here the forecast is early (negative errors), where on the
# three-valued setting of the first report it was late. The five-valued run's last flow gave up
# short of its level (printed), and its run, as long as the forecast asked, never got halfway down
# the last stair. So on more than two values, from order 2's *which* rung on, the forecast's timing
# is not reliable in either direction.

# %% [markdown]
# ## Why *which* comes sooner
#
# To see what the forecast misses, the next cell trains the three-valued setting of the first
# report (three orders, block 9) at γ = 1 and its learning rate η = 0.5, seeds 0 and 2, two of the
# three runs it missed, and follows *which*
# along the run: its size aᵀ E W₁ b along the top mode of the drive M of lesson 06 (a its pattern over
# the tokens at x2, b its hidden direction; the mode is taken in the middle of each run's rest on the
# sub-level), and at each recorded step the rate 2 ln(1 + η s) that the drive's top singular value s
# gives (printed in the middle and at the end of each rest, and averaged over that stretch). The
# forecast reads that rate once, on the sub-level of a restricted network, and holds it.

# %%
three_valued = hierarchy_task(n_values=3, block=9, mix=(0.4, 0.3, 0.3))
growth = sub_level_growth(three_valued, gammas=(1.0,), seeds=(0, 2), lr=0.5, steps=2250)  # the two seeds it missed
rate = growth.measured_rate()
print(f"the sub-level: {growth.name} = {growth.level:.4f}")
for k, seed in enumerate(growth.seeds):
    (first, last), mid = growth.rests[k], growth.middles[k]
    end = int((growth.steps == last).nonzero()[0, 0])
    held = float(growth.size[k, end] / growth.held_rate(k)[end])
    print(f"seed {seed}: rests from step {first} to {last}. From its middle (step {int(growth.steps[mid])}) to its end, "
          f"which grows at {float(rate[k, mid:end].mean()):.4f} per step; the drive gives {float(growth.drive_rate[k, mid]):.4f} "
          f"in the middle, {float(growth.drive_rate[k, end]):.4f} at the end, {float(growth.drive_rate[k, mid:end].mean()):.4f} "
          f"on average; at the end which is {held:.1f}x the size the middle's rate, held, gives")
which = next(row for s in report if s["setting"] == "three-valued" for row in s["rungs"] if row["name"] == "H(Y | x1, x2)")
for r in which["runs"]:
    if r["gamma"] == 1.0 and r["seed"] in growth.seeds:
        print(f"the report's run, seed {r['seed']}: halfway down to H(Y | x1, x2) forecast at step {r['predicted_onset']}, "
              f"measured at {r['measured_onset']}")

# %%
levels = plateau_levels(three_valued.population)
fig = sub_level_growth_figure(growth, [("H(Y | x1)", levels[1]), ("H(Y | x1, x2)", levels[2])])
plt.show()

# %% [markdown]
# Both runs rest on the sub-level for 750–800 steps (left). From the middle of the rest to its end,
# *which* grows 1.8 to 2.8 times faster than the rate its drive gives in the middle, and it ends the
# rest 2.3 to 4.9 times larger than that rate, held, would make it (right: each solid line above its
# dashed one). The rate does not hold still: as *which* grows, its drive grows with it, to three to
# four times the middle's value by the end of the rest. Read step by step and averaged over that
# stretch, the drive's rate accounts for 72–91 % of the measured growth (the printed numbers). So a
# rate read once and held falls short. The forecast holds a rate it reads once, on the sub-level of a
# restricted network (not the run's own, and not printed here), and it is late:
# its onsets for these two runs are 3703 and 3221 against 2150 and 2085 measured (printed). What
# strengthens the drive as *which* grows, and the rest of the growth, are not settled here.

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
# * The γ dependence of the later stairs lives mostly in m₀: on binary attributes the forecast's
#   later rests lengthen with γ through ln(1/m₀) and come out shorter than measured. The slopes of
#   the dwells in γ land within 25 % of the measured ones on 16 of the 19 rests with a slope (11 of
#   14 after the first stair).
# * In the benchmark's seven settings, every onset on binary attributes lands within 15 % with three
#   orders and 25.3 % with four; on the three-valued setting the rungs from order 2's *which* on are
#   the known miss (up to 81 % late, in three of nine runs). On the *whether* sub-level the drive of
#   *which* grows during the rest (to three to four times its value in the middle), so a rate read
#   once and held falls short; the forecast also holds a rate, read from a restricted network, and
#   is late there (two γ = 1 runs).
# * On five tasks first run after the forecast was written, no onset on two values is more than
#   25 % off; on three to five values some γ = 1 runs miss, early this time, from order 2's *which*
#   rung on.
# * `ctxlab predict --train` prints the same comparison for any hierarchy task from the command line.
#
# **Next.** Open `exercises/17_predict.ipynb`: integrate the first stair from the init yourself,
# forecast its onset, then train the same models and measure it.

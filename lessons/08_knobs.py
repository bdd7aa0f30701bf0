# %% [markdown]
# # Lesson 08 — Knobs: optimizer, LayerNorm, weight decay, and a γ × learning-rate phase map
#
# **Learning goals.** After this lesson you can
# 1. say why Adam compresses the stairs that plain gradient descent shows, from the size of its first
#    update;
# 2. compute the norm of a LayerNorm'd embedding and explain, with that number, why LayerNorm
#    removes the dependence of the first plateau on γ;
# 3. predict what weight decay does to a small-init run, and find the decay at which the model
#    never leaves ln 3;
# 4. build a γ × learning-rate phase map as **one batched ensemble run**, read it (rest at ln 3,
#    final loss, diverged cells), and measure how much faster it is than training the cells one
#    after another.
#
# **Prerequisites.** Lesson 03 (the staircase, plateaus and onsets) and lesson 04 (the
# leading-order gradient: why small weights move slowly and in order).
#
# **Run time.** About 20 s on a 2-core machine (measured by `benchmarks/notebook_budget.py`): six training cells, the largest trains
# 30 models at once. On a GPU the phase map uses a finer 9 × 9 grid.

# %% [markdown]
# ## Why knobs?
#
# Lessons 03–05 used one recipe: no normalisation, no weight decay, full-batch gradient descent
# at a learning rate of 1. That recipe was chosen because the theory describes it, not because
# practitioners train that way. Real models use Adam, LayerNorm and weight decay, with learning
# rates found by trial. Each of these knobs touches the mechanism behind the stairs:
# the weights are small (of order ε = d^(−γ)), so every gradient is a product of other small
# factors and the parameters wake up one after another. This lesson turns the knobs one at a time
# on the same task and model, then maps two of them (γ and the learning rate) at once.
#
# To fit all of this in half a minute, the runs are smaller than in lesson 03: the hierarchy task
# with 6 tokens per block (V = 18, 216 sequences, the same ladder of entropies), embeddings of
# width d = 16, 32 hidden units, 800 steps.

# %%
import math

import matplotlib.pyplot as plt
import torch

from ctxlab import plots
from ctxlab.env import profile
from ctxlab.experiments import phase_map, phase_map_one_by_one
from ctxlab.models import make_model
from ctxlab.rungs import measure_runs, stair_onsets
from ctxlab.tasks import hierarchy_task
from ctxlab.theory import plateau_levels, whether_levels
from ctxlab.train import relative_gradient_rates, train

task = hierarchy_task(block=6)
data = task.population
levels = plateau_levels(data)
whether = whether_levels(task)  # the sub-levels of lessons 03 and 06: of x_k only whether A(x_k) = 0
SIZE = {"d": 16, "hidden": 32}
STEPS = 800
print(f"V = {task.vocab_size}, {len(data.x)} sequences; ladder " + " → ".join(f"{h:.4f}" for h in levels))


# %%
def rest_at_ln3(traj) -> list[int]:
    """Per run: steps the loss rests on H_0 = ln 3 (its dwell there, lesson 03; 0 if it never rested)."""
    return [read.rungs[0].dwell for read in measure_runs(traj.steps, traj.loss, levels)]


def draw_ladder(ax, names=True):
    """The ladder H0-H3 dashed and the whether-levels dotted, each named at the right edge if ``names``."""
    for name, h, style in [(f"H{k}", h, "--") for k, h in enumerate(levels)] + [(n, h, ":") for n, h in whether]:
        ax.axhline(h, ls=style, lw=0.8, color="grey")
        if names:
            ax.annotate(f"{name} = {h:.3f}", (1.0, h), xycoords=("axes fraction", "data"), xytext=(3, 0),
                        textcoords="offset points", va="center", fontsize=7, color="dimgrey")


def draw_losses(ax, traj, labels, title, names=True):
    for loss, label in zip(traj.loss, labels):
        ax.plot(traj.steps, loss, lw=1.3, label=label)
    draw_ladder(ax, names)
    ax.set(title=title, xlabel="step", ylabel="loss (nats)")
    ax.legend(fontsize=8)


# %% [markdown]
# ## Knob 1 — the optimizer: gradient descent vs Adam
#
# Gradient descent moves each weight by lr × its gradient. At small init the embedding gradient is
# a product of the small weights W₁ and W₂, so the first steps are tiny and the loss rests at ln 3
# until the leading direction has grown. Adam instead divides each coordinate's gradient by a
# running estimate of its own size, √v.
#
# > **Think.** Adam's very first update of a coordinate is lr · g / √(g²) = lr · sign(g). How big is
# > that compared with the weights themselves at γ = 1? Will Adam rest at ln 3?
#
# Two seeds each, γ = 1: gradient descent at learning rate 1, Adam at 0.01.

# %%
gd_model = make_model("mlp", task, gamma=1.0, seed=[0, 1], **SIZE)
adam_model = make_model("mlp", task, gamma=1.0, seed=[0, 1], **SIZE)
gd = train(gd_model, data, STEPS, optimizer="gd", lr=1.0, record_every=5, progress=False)
adam = train(adam_model, data, STEPS, optimizer="adam", lr=0.01, record_every=5, progress=False)

fig, axes = plt.subplots(1, 2, figsize=(10, 3.6), sharey=True)
draw_losses(axes[0], gd, ["seed 0", "seed 1"], "gradient descent, lr 1", names=False)
draw_losses(axes[1], adam, ["seed 0", "seed 1"], "Adam, lr 0.01")
plt.show()

# %% [markdown]
# The dashed lines are the ladder printed above, H0 = ln 3, H1, H2 and H3; the dotted ones are the
# sub-levels of lessons 03 and 06; all are named on the right. Gradient descent rests at ln 3 and
# bends at H1 but barely rests there; it rests on H(Y | x1, [A(x2) = 0]) ≈ 0.906 for a hundred steps
# or more, and on H2 for 15 steps in seed 0 and 65 in seed 1, and ends below H2, on no level (the
# dwells printed below). Seed 1
# also bends on its first stair near the upper dotted line, H(Y | [A(x1) = 0]), without resting. Adam
# leaves ln 3 at once and reaches H3 within 200 steps, with only a brief shoulder near the 0.906
# sub-level and no rest on any level above H3. It then rests on H3 for most of the remaining steps,
# apart from small, brief upward spikes every hundred steps or so (not followed up here). Measured:

# %%
ladder = [levels[0], whether[0][1], levels[1], whether[1][1], levels[2], whether[2][1], levels[3]]
for name, traj in (("GD", gd), ("Adam", adam)):
    onsets = stair_onsets(traj.steps, traj.loss, levels)
    print(f"{name:>4}: rest at ln 3 = {rest_at_ln3(traj)} steps; onsets of stairs 1, 2 = {onsets[:, :2].tolist()}")
    for seed, read in enumerate(measure_runs(traj.steps, traj.loss, ladder)):
        print(f"      seed {seed}: dwell on H0, sub 1, H1, sub 2, H2, sub 3, H3 = {read.dwells()}; "
              f"first within 0.01 of H3 at step {read.rungs[-1].reached} (-1: never); final loss {read.final:.3f}")

# %%
# NBVAL_CHECK_OUTPUT
gd_rests, adam_rests = rest_at_ln3(gd), rest_at_ln3(adam)
print(f"GD rests ≥ 50 steps at ln 3 in every seed: {min(gd_rests) >= 50}; Adam never rests there: {max(adam_rests) == 0}")

# %% [markdown]
# Why? Compare the first update of each parameter with the parameter itself. For gradient descent
# it is lr · ‖∇θ‖ / ‖θ‖, the *relative gradient rate* (`train.relative_gradient_rates`). For Adam
# it is lr · sign(g) in every coordinate, so its size is lr · √(number of entries) / ‖θ‖ whatever
# the gradient is.

# %%
# NBVAL_CHECK_OUTPUT
probe = make_model("mlp", task, gamma=1.0, seed=0, **SIZE)
rates = relative_gradient_rates(probe, data)
print(f"{'parameter':>10} {'‖θ‖':>7} {'GD step / ‖θ‖':>14} {'Adam step / ‖θ‖':>16}")
for name, p in probe.named_parameters():
    size = float(p[0].detach().norm())
    adam_step = 0.01 * math.sqrt(p[0].numel()) / size
    print(f"{name:>10} {size:>7.2f} {float(rates[name][0]):>14.4f} {adam_step:>16.2f}")

# %% [markdown]
# Under gradient descent each parameter moves by one to seven thousandths of its size per step (the
# embedding least): the steps are set by products of small weights, the ε-hierarchy that makes the
# model wait near the origin and then wake its parameters up in order. Adam's first step moves
# **every** parameter by a sizeable fraction of itself, 40 to 160 times more (the table), and that size
# does not depend on how small the gradient is: per-coordinate normalisation erases the
# ε-hierarchy, so there is no long wait: the orders still come one after another (the onsets
# printed above), but with no rest at ln 3, where gradient descent rests 70 and 75 steps. Lesson
# 07 shows the same inside attention: under Adam, W_Q W_Kᵀ grows tens of times within 100 steps.

# %% [markdown]
# ## Knob 2 — LayerNorm on each token embedding
#
# `make_model(..., layernorm=True)` normalises every token's embedding before the MLP:
# LN(e) = (e − mean(e)) / √(var(e) + 10⁻⁵), with the mean and (biased) variance taken over the d
# coordinates.
#
# > **Think.** At init the entries of e are N(0, d^(−2γ)). What is ‖LN(e)‖? Does it depend on γ?

# %%
# NBVAL_CHECK_OUTPUT
print(f"{'d':>3} {'γ':>5} {'mean ‖E_s‖':>11} {'mean ‖LN(E_s)‖':>15} {'√d':>6}")
for d in (16, 32):
    for gamma in (0.5, 1.0, 1.5):
        E = make_model("mlp", task, gamma=gamma, seed=0, d=d, hidden=4).embedding[0].detach()
        normed = torch.nn.functional.layer_norm(E, (d,))
        print(f"{d:>3} {gamma:>5} {float(E.norm(dim=1).mean()):>11.3f} {float(normed.norm(dim=1).mean()):>15.3f} {math.sqrt(d):>6.2f}")

# %% [markdown]
# Without LayerNorm the embedding norm is √d · d^(−γ): 1, 0.25, 0.06 at d = 16. After LayerNorm it
# is √d — 4 at d = 16, 5.66 at d = 32 — for every γ ≤ 1. At the smallest scale the 10⁻⁵
# under the square root matters: at d = 32, γ = 1.5 the variance is 32⁻³ ≈ 3·10⁻⁵ and the norm
# comes out 14 % below √d (printed); at d = 16, the size the runs below use, 2.5 %.
# So the input the MLP sees is **of order one whatever γ is**: one of the three small factors in
# the product E → W₁ → W₂ is gone, and the effective init scale of the embedding no longer depends
# on γ. The gradient that reaches E is multiplied by the Jacobian of LN, about 1/σ = d^γ, so LN
# should also amplify the embedding's gradient about as much as the init shrank it. Measured at
# init, on the same E with and without LN (d = 16):

# %%
for gamma in (1.0, 1.5):
    plain, normed = (relative_gradient_rates(make_model("mlp", task, gamma=gamma, seed=0, layernorm=ln, **SIZE), data)
                     ["embedding"][0] for ln in (False, True))  # the same seed draws the same E, so rates compare gradients
    print(f"γ = {gamma}: LN multiplies the embedding's gradient by {float(normed / plain):.1f}; d^γ = {16 ** gamma:.0f}")

# %% [markdown]
# With LN the embedding's gradient is 16.6 and 61.1 times larger at γ = 1 and 1.5 (printed), close
# to d^γ = 16 and 64: LN gives back about as much as the init took away.
#
# Prediction: with LN the first stair should come early, nearly independently of γ. One batched
# run for each setting, five γ:

# %%
gammas = [0.5, 0.75, 1.0, 1.25, 1.5]
waits = {}
for ln in (False, True):
    model = make_model("mlp", task, gamma=gammas, seed=0, layernorm=ln, **SIZE)
    traj = train(model, data, STEPS, lr=1.0, record_every=5, progress=False)
    waits[ln] = stair_onsets(traj.steps, traj.loss, levels)[:, 0].tolist()

fig, ax = plt.subplots(figsize=(5, 3.4))
for ln, marker in ((False, "o"), (True, "s")):
    ax.plot(gammas, waits[ln], marker=marker, label="LayerNorm" if ln else "no LayerNorm")
ax.set(yscale="log", xlabel="γ", ylabel="step halfway down the first stair", title="halfway down the first stair, vs γ")
ax.legend()
plt.show()

# %%
# NBVAL_CHECK_OUTPUT
for ln in (False, True):
    print(f"{'with' if ln else 'without':>7} LayerNorm: halfway down the first stair at steps {waits[ln]}")
spread = {ln: max(waits[ln]) / max(min(waits[ln]), 1) for ln in waits}
print(f"γ = 0.5 → 1.5 multiplies that step ×{spread[False]:.0f} without LN; with LN it stays within {max(waits[True])} steps")

# %% [markdown]
# Without LayerNorm, going from γ = 0.5 to 1.5 makes the first stair come 64 times later; with
# LayerNorm it comes within 15 steps at every γ, three records at this recording step of 5. The small-init scaling (plateau length grows
# as ε shrinks) is a property of the *un-normalised* product of small weights. This is why the
# toy models of the course leave norms out, and also why lesson 09's GPT is built without
# LayerNorm.

# %% [markdown]
# ## Knob 3 — weight decay
#
# Weight decay adds λθ to every gradient: each step shrinks each weight by a factor (1 − lr·λ).
#
# > **Think.** Near small init, the gradient that pushes the embedding away from zero is itself
# > proportional to the product of the other small weights. The decay is proportional to the
# > weight. Which one wins when all weights are small?
#
# Four runs at γ = 1 (one seed), λ = 0, 10⁻³, 3·10⁻³, 10⁻²:

# %%
decays = [0.0, 1e-3, 3e-3, 1e-2]
decay_runs = []
for lam in decays:
    model = make_model("mlp", task, gamma=1.0, seed=0, **SIZE)
    decay_runs.append(train(model, data, STEPS, lr=1.0, weight_decay=lam, record_every=5, progress=False))

fig, ax = plt.subplots(figsize=(6, 3.6))
for lam, traj in zip(decays, decay_runs):
    ax.plot(traj.steps, traj.loss[0], lw=1.3, label=f"λ = {lam:g}")
draw_ladder(ax)
ax.set(xlabel="step", ylabel="loss (nats)", title="weight decay, γ = 1, GD lr 1")
ax.legend(fontsize=8)
plt.show()
for lam, traj in zip(decays, decay_runs):
    print(f"λ = {lam:<6g} dwell on H0, sub 1, H1, sub 2, H2, sub 3, H3: {measure_runs(traj.steps, traj.loss, ladder)[0].dwells()}")

# %%
# NBVAL_CHECK_OUTPUT
for lam, traj in zip(decays, decay_runs):
    onsets = stair_onsets(traj.steps, traj.loss, levels)[0].tolist()
    print(f"λ = {lam:<6g} onsets {onsets}  final loss {float(traj.loss[0, -1]):.2f}  final ‖E‖ {float(traj.embeddings[0, -1].norm()):.2f}")

# %% [markdown]
# A little decay delays the stairs (λ = 10⁻³ and 3·10⁻³ are halfway down the first stair later, at
# steps 135 and 165 against 125). They then rest on the 0.906 sub-level for over 400 steps, to the
# end of the run, and end on it (final losses 0.90 and 0.91, with smaller embeddings; λ = 3·10⁻³
# also rests on H1 for a few dozen steps on the way; dwells printed under the figure). At λ = 10⁻² the model **never leaves ln 3**: the embedding
# shrinks to almost nothing. Near the origin the push away from zero is a product of small
# weights, while the pull back is lr·λ times the weight, so for small enough weights the pull
# wins and the origin becomes attracting.
#
# A rule of thumb in numbers: per step, decay shrinks every parameter by the fraction lr·λ, and
# the gradient moves it by its relative gradient rate, at init the GD column of the table in
# knob 1. If the decay beats the gradient for *every* parameter, nothing can grow, and the
# shrinking weights make the gradients smaller still:

# %%
# NBVAL_CHECK_OUTPUT
fastest = max(float(r[0]) for r in rates.values())
for lam, traj in zip(decays, decay_runs):
    left = bool((traj.loss[0] < (levels[0] + levels[1]) / 2).any())
    print(f"λ = {lam:<6g} lr·λ = {1.0 * lam:.4f} > fastest gradient rate {fastest:.4f}: {1.0 * lam > fastest}; left ln 3: {left}")

# %% [markdown]
# The two columns disagree nowhere: the run whose decay beats every gradient rate at init is the
# one that stays at ln 3. Four decays do not pin a threshold, though: any threshold between 0.003
# and 0.01 agrees with them as well as the fastest rate does. So test the rule with more decays,
# between 0.003 and 0.01, in one batched run (`train` takes one decay per model, as it takes one
# learning rate per model):

# %%
scan = [0.003, 0.004, 0.005, 0.006, 0.0065, 0.007, 0.0075, 0.008, 0.009, 0.01]
scan_run = train(make_model("mlp", task, gamma=1.0, seed=[0] * len(scan), **SIZE), data, STEPS, lr=1.0,
                 weight_decay=scan, record_every=5, progress=False)
halfway = stair_onsets(scan_run.steps, scan_run.loss, levels)[:, 0]
for lam, step in zip(scan, halfway.tolist()):
    print(f"λ = {lam:<7g} = {lam / fastest:.2f} × the fastest rate: halfway down the first stair at step "
          f"{step if step >= 0 else 'never (within ' + str(STEPS) + ')'}")

# %%
# NBVAL_CHECK_OUTPUT
below, above = [h for lam, h in zip(scan, halfway) if lam <= 0.9 * fastest], [h for lam, h in zip(scan, halfway) if lam >= 1.2 * fastest]
print("every decay at most 0.9 × the fastest rate leaves ln 3:", all(h >= 0 for h in below), f"({len(below)} decays)")
print("every decay at least 1.2 × the fastest rate stays at ln 3:", all(h < 0 for h in above), f"({len(above)} decays)")

# %% [markdown]
# The scan bears the rule out with its margins: decays well below the fastest gradient rate at init
# leave ln 3, later the closer they come to it, and decays well above it never do. Near the rate
# itself the printed steps place this seed's threshold between 1.03 and 1.10 times the fastest
# rate: a decay a little above the rate still leaves ln 3, late (halfway down the first stair only
# at the step printed for it). The rule reads the gradient rates at
# init only, and they change as soon as the weights move, so it places the threshold only roughly.
# For this MLP the table above gives the gradient rates at γ = 1 only;
# lesson 07 tabulates them at several γ for the attention model, where they are smaller the
# smaller the init. If that holds here too, weight decay competes with small init itself: the
# smaller the init, the smaller the decay that kills the staircase.

# %% [markdown]
# ## Two knobs at once: the γ × learning-rate phase map
#
# The learning rate and γ both set how long the first plateau lasts: the escape from small init
# takes a number of steps that grows as ε shrinks and falls as lr grows. A **phase map** shows a
# grid of (γ, lr) cells with one measured quantity per cell as colour. Here: how many steps the
# loss rests on ln 3 (its dwell there), and the final loss.
#
# The whole grid is **one ensemble**: `make_model` takes one γ per model and `train` one learning
# rate per model, so `phase_map()` lays out the grid as K = (number of γ) × (number of lr) models
# and trains them in a single batched call. Runs whose loss becomes NaN or infinite are recorded
# as *diverged* and drawn as such, not dropped; runs that leave ln 3 and end back on it are marked
# *dead* and not coloured as rests.
#
# > **Think.** In which corner of the map do you expect no rest at ln 3? Where do you expect runs
# > to blow up?

# %%
# NBVAL_IGNORE_OUTPUT
pm = phase_map()  # the grid follows ctxlab.env.profile(): 5 × 6 on a CPU, 9 × 9 on a GPU
print(f"profile {profile()!r}: {len(pm.gammas)} γ × {len(pm.lrs)} learning rates = {pm.trajectory.n_models} models")
print(f"one batched run of all {pm.trajectory.n_models} cells: {pm.seconds:.1f} s")

# %%
fig = plots.phase_map_figure(pm)
plt.show()

# %% [markdown]
# How long would the same runs take one after another? Training all cells separately would double
# this lesson's run time, so we time **one cell per learning-rate column** (each trained on its
# own, same settings) and extrapolate to the full grid, taking the cost of a run to depend on its
# sizes only, not on γ or the learning rate.

# %%
# NBVAL_IGNORE_OUTPUT
cells = [(pm.gammas[j % len(pm.gammas)], lr) for j, lr in enumerate(pm.lrs)]
one_by_one = phase_map_one_by_one(cells)
per_cell = sum(one_by_one) / len(one_by_one)
sequential = per_cell * pm.trajectory.n_models
print(f"{len(cells)} cells trained one after another: {sum(one_by_one):.1f} s, {per_cell:.2f} s per cell")
print(f"extrapolated to all {pm.trajectory.n_models} cells: {sequential:.1f} s one after another "
      f"vs {pm.seconds:.1f} s batched (×{sequential / pm.seconds:.1f})")

# %% [markdown]
# On a CPU one batched run is many times faster than the same runs in a loop (the ratio printed
# above): a single small
# run pays the same fixed cost per step (the calls into torch around a few small products), and
# the ensemble pays it once for K models, turning K small matrix products into one large one. Now read the map; these are its key numbers:

# %%
# NBVAL_IGNORE_OUTPUT
fates = ["diverged" if pm.diverged[i, -1] else "dead" if pm.dead[i, -1] else f"trained, final {float(pm.final[i, -1]):.3f}"
         for i in range(len(pm.gammas))]
print(f"at the largest learning rate, {pm.lrs[-1]:g}:", "; ".join(f"γ = {g:g} {f}" for g, f in zip(pm.gammas, fates)))

# %%
# NBVAL_CHECK_OUTPUT
print(f"at least 5 × 5 cells: {len(pm.gammas) >= 5 and len(pm.lrs) >= 5}")
steady = torch.arange(len(pm.lrs)) < len(pm.lrs) - 1  # every learning rate below the largest
print(f"every γ trained at every learning rate below {pm.lrs[-1]:g}: {not bool(pm.diverged[:, steady].any())}")
print(f"no rest at ln 3 anywhere at γ = {pm.gammas[0]} below that: {bool((pm.plateau[0, steady] == 0).all())}")
rest_up_gamma = bool((pm.plateau[1:, steady] >= pm.plateau[:-1, steady]).all())
rest_down_lr = bool((pm.plateau[:, steady][:, 1:] <= pm.plateau[:, steady][:, :-1]).all())
print(f"rest grows with γ: {rest_up_gamma}; shrinks with the learning rate: {rest_down_lr}")

# %% [markdown]
# Reading the map:
#
# * The **rest at ln 3 grows with γ and shrinks with the learning rate** at every learning rate
#   below the largest: it about halves per doubling of lr at γ = 1.25, and at γ = 1.5 from lr 1
#   on, and falls faster than that at γ = 1 from lr 2 on.
#   At the largest γ and smallest learning rates the run never leaves ln 3 within the budget
#   (marked ≥).
# * At the **standard init γ = 0.5** there is no rest at ln 3 at any learning rate below the largest.
# * The **final loss** follows the learning rate more than the first rest: it is 0.67–0.72 at lr 2
#   and 4 in every row, while at lr 0.25 even γ = 0.5, with no rest at all, ends at 0.83.
# * At the **largest learning rate the runs sit at the edge of stability** (printed above for this
#   run): some γ diverge (grey "div" cells, no numbers), some end back on ln 3 (grey "dead" cells:
#   they left it and came back, a dead network, not a plateau), some still train. Gradient descent
#   is only stable below a curvature limit, and the plateau analysis says nothing beyond it, so the
#   figure greys the whole column ("unstable") and keeps its numbers only as text. Which γ blow up,
#   which die and which still train depends on the last bits of the arithmetic: multiplying every
#   initial weight by (1 + 10⁻⁶ z) is enough to change it (`benchmarks/portability.py` runs the
#   lesson so), so the checks above read only the learning rates below the largest.
#
# Exercise 1 asks you to turn this reading into a rule: which corner of a map has no first plateau?

# %% [markdown]
# > **Paper vs. this course.**
# > *From the paper's abstract* (Yao, Hang & Xu, *Context Staircase*, 2026), in our words: the
# > staircase appears under **small initialization**; the abstract does not discuss optimizers,
# > normalisation, weight decay or learning rates.
# >
# > *This course's reconstruction*: every experiment here is ours: Adam vs gradient descent, the
# > LayerNorm on each token embedding and the √d argument, the weight-decay sweep, the phase map
# > and its definitions (rest at ln 3 = the plateau matched to H₀; divergence = a NaN or infinite
# > loss), the reduced sizes (block 6, d = 16, 32 hidden units, 800 steps). All numbers above are
# > measured in this notebook. The conclusion that Adam and LayerNorm blur the stairs agrees with
# > the course's own prototype runs; it is not a claim of the paper.

# %% [markdown]
# ## Summary
#
# * **Adam compresses the stairs.** Its first update is lr · sign(g) in every coordinate, the same
#   relative size for every parameter: per-coordinate normalisation erases the ε-hierarchy that
#   makes gradient descent wait near the origin. Its stairs still come in order, with no rest
#   at ln 3 or on H1.
# * **LayerNorm nearly removes the γ-dependence of the first stair's timing** (its onset within 15
#   steps at every γ, printed, against a 64-fold spread without it). ‖LN(e)‖ = √d for every γ (up to
#   the 10⁻⁵ in the denominator), so the embedding enters the MLP at order one, and its gradient is
#   amplified by ≈ d^γ.
# * **Weight decay competes with small init.** A little delays the stairs; λ = 10⁻² keeps the γ = 1
#   model at ln 3 for the 800 steps run, its embedding shrunk to 0.
# * **The γ × lr phase map**, one batched ensemble run: the rest at ln 3 grows with γ, shrinks with
#   the learning rate, and vanishes at γ = 0.5 below the largest learning rate; at the largest, lr 8,
#   the runs are unstable: which of them diverge, die or still train changes from machine to
#   machine (printed for this run).
#
# **Next.** Open `exercises/08_knobs.ipynb`: find the corner of a phase map without a first
# plateau, compute the norm of a LayerNorm'd embedding on tables of several sizes and scales, then
# build a small γ × learning-rate phase map yourself and find a weight-decay threshold.

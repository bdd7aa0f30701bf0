# %% [markdown]
# # Lesson 00 — Welcome: the Context Staircase
#
# **Learning goals.** After this lesson you know
# 1. the question the course answers, and what a "staircase" in a loss curve is;
# 2. how lessons, exercises, grading and the `ctxlab` command fit together;
# 3. how to run any experiment at full scale on a GPU.
#
# **Prerequisites.** Python, a little PyTorch, cross-entropy. **Run time.** About 10 s on a 2-core machine (measured by `benchmarks/notebook_budget.py`); two cells train small models.

# %% [markdown]
# ## The question
#
# A language model turns every token into a vector, its *embedding*, and learns those vectors from
# scratch. Nobody tells the model that "queen" should sit near "king". Yet trained embeddings are full
# of structure. **Where does it come from, and in what order does it appear?**
#
# The paper behind this course (Yao, Hang and Xu, *Context Staircase: Signature-Aligned Dynamics of
# Token Embeddings under Small Initialization*, 2026) gives an answer for training that starts from
# **small initialization**. Embeddings first line up with the simplest statistic that links a token to
# its label. That statistic is the token's *probability signature* of order 1. Later the embeddings
# reflect signatures that involve one, then two, then more context tokens. The loss shows this as a
# staircase: it rests on a plateau, drops, rests again, and each plateau sits at the best loss that
# statistics of that order can reach.
#
# > **Paper vs. this course.** From the paper's abstract: embeddings learn low-order signatures before
# > high-order ones; early in training they align with the context-free token→label signature; a
# > gradient-flow analysis under small initialization explains this for feed-forward and
# > self-attention models; the picture extends to real language models; and the structure matters for
# > task learning. Only the abstract is public. The tasks, models, metrics and settings below are
# > **this course's reconstruction**, chosen because they show the effect cleanly on a CPU.

# %% [markdown]
# ## One experiment, the whole story
#
# The next cell trains a small network on a synthetic task (lesson 03 takes it apart; lesson 01
# builds its tools on a version with three-valued attributes, so its numbers differ from these). Each
# sequence has three tokens, each token carries a bit, and the label is a bit too: with probability
# 0.4 it is the first token's bit, with probability 0.3 the sum (mod 2) of the first two tokens' bits,
# and with probability 0.3 the sum of all three. The model is an embedding table followed by a
# one-layer MLP (GELU). Plain gradient descent updates it on the exact population. Every weight starts
# at scale fan_in^(−γ): **γ = 0.5 is the usual "standard" initialization, and γ = 1 is small
# initialization.**
#
# *Think first:* if the model learned everything at once, what would the loss curve look like? And
# what if it learned the one-token rule first, then the two-token rule, then the three-token rule?

# %%
import matplotlib.pyplot as plt

from ctxlab.experiments import staircase
from ctxlab.plots import staircase_figure

result = staircase(gammas=(0.5, 1.0), seeds=(0,), steps=1500)
staircase_figure(result)
plt.show()

# %% [markdown]
# **Top row:** the loss against gradient-descent steps. The dashed lines are *predicted* before any
# training: H0 = ln 2 is the loss of a uniform guess. H1, H2 and H3 are the conditional entropies of
# the label given the first one, two and three tokens: the lowest losses that statistics of order 1,
# 2 and 3 can reach. At small initialization (γ = 1) the loss rests on each dashed line in
# turn. At standard initialization (γ = 0.5) it does not rest on H1 at all, and this run (seed 0)
# climbs back in short spikes (six seeds below show how often that happens at the default learning
# rate). After the spikes it approaches H3 slowly, from about a hundredth above: the slow end of a
# descent, not a level of its own. At γ = 1 the loss settles on H3 at the end of its last drop.
#
# **Middle row:** which part of the embedding has changed. Each order of statistics names some
# directions in token space (lesson 01's signatures); the curves show the share of the change
# E(t) − E(0) that lies in the directions order 1, 2 and 3 add (dotted: what a random embedding
# would score). At γ = 1 order 1 holds almost all of the change from the first steps, through the
# rest on H0 and most of the rest on H1, and the higher orders arrive on their own rungs; at γ = 0.5 order 2 takes the
# lead within the first hundred steps and order 3's share stays low. Both runs end on H3, so a low order-3 share does not mean
# that the γ = 0.5 model lacks order 3: the share counts only how the embedding moved, and the layers
# after the embedding can hold part of what a model learns (lesson 14 trains a model whose
# embedding cannot move at all). Where the γ = 0.5 model holds its order-3 fit is a question this
# lesson leaves open. **Bottom row:** how far the three kinds of token (key = first position,
# anchor1 = second, anchor2 = third) have moved: at γ = 1 one kind after another.
#
# The run measures the same things in numbers, rung by rung (lesson 03 explains the measure): how
# many steps the loss rests on each predicted level (its *dwell*: within 0.01 of it and flat, a
# slope of at most 10⁻⁴ nats per step, so that a slide through a level is not a rest), the step where
# it is halfway down to each level from the one above (the *onset*), the most it ever climbs back,
# and the level it ends on. At γ = 0.5 the table shows no rest on H1 but a rest on H2 (its dwell).

# %%
print(result.table())

# %% [markdown]
# The figure's claims, checked:

# %%
# NBVAL_CHECK_OUTPUT
standard, small = result.rungs  # γ = 0.5 and γ = 1, as in result.gammas
print("γ = 1: rests ≥ 100 steps on H1 and on H2:", all(r.dwell >= 100 for r in small.rungs[1:3]),
      "| never climbs back by more than 0.01:", small.rise <= 0.01, "| ends on H3:", small.ends_on == 3)
print("γ = 0.5: rests on H1 for fewer than 20 steps:", standard.rungs[1].dwell < 20)

# %% [markdown]
# Are the spikes a property of standard initialization, or of this one run? A spike is *chaotic*:
# whether a run spikes, and how high, turns on the last bits of its arithmetic, so another CPU can
# draw another spike. The way to make a claim about them is to count over seeds. Six seeds of the
# γ = 0.5 run:

# %%
spiky = staircase(gammas=(0.5,), seeds=tuple(range(6)), steps=1500)
rises = [r.rise for r in spiky.rungs]
fig, ax = plt.subplots(figsize=(6, 2.6))
for k, seed in enumerate(spiky.seeds):
    ax.plot(spiky.trajectory.steps, spiky.trajectory.loss[k], lw=1, label=f"seed {seed}: rise {rises[k]:.3f}")
for name, level in zip(("H0", "H1", "H2", "H3"), spiky.levels):
    ax.axhline(level, ls="--", lw=0.7, color="grey")
    ax.annotate(name, (1, level), xycoords=("axes fraction", "data"), fontsize=7, va="bottom", ha="right")
ax.set(xlabel="step", ylabel="loss (nats)", title="γ = 0.5, six seeds: the most each climbs back (rise)")
ax.legend(fontsize=7, ncol=2, loc="upper right", bbox_to_anchor=(0.96, 0.92))
plt.show()

# %% [markdown]
# In this run two seeds spike (0 and 3), one wiggles (1) and three fall smoothly. Which seeds
# spike can change with the arithmetic, so the checked facts are the ones that hold whichever
# seed spikes:

# %%
# NBVAL_CHECK_OUTPUT
print("at least one of six seeds climbs back by more than 0.02:", max(rises) > 0.02,
      "| at least three never climb back (rise below 0.001):", sum(x < 0.001 for x in rises) >= 3)

# %% [markdown]
# Three things to take away, each a later lesson:
# * **The rests sit at conditional entropies** (lessons 01 and 03): a model that has learned order-k
#   statistics, and nothing more, comes within 0.01 of H(Y | the first k tokens) and rests there.
# * **Small initialization separates the stairs** (lessons 03 and 04; lesson 05 works out how long
#   the rest on H0 lasts): tiny weights make the early gradient a simple function of the order-1
#   signature. You can derive and check that. At standard initialization the rests on H0 and H1
#   disappear: the γ = 0.5 run above (and, by eye, all six seeds of the second figure) leaves H0
#   at once and passes H1 without resting, but still rests on H2.
# * **The embedding follows the signature of the rung it is on** (lessons 02, 03, 06): at small init
#   each order's share of the embedding's change arrives on its own rung.

# %% [markdown]
# ## Try it yourself
#
# The explorer below holds the two runs of the first cell, and every control only looks the
# results up (no training). Move **γ** from 1 to 0.5 and watch the rest on H1 vanish in the left
# panel while a shorter rest on H2 remains. Scrub **step** (or press play) to watch the embeddings in the right panel split into
# groups, one rung at a time. Untick orders to compare their shares.
# (`staircase_explorer()` without arguments trains a sweep of its own, with more seeds and five
# values of γ from 0.5 to 1.5, and can train values of γ that are not on the slider; lesson 03
# trains γ = 1.5 as well.)
#
# > **Think.** Before you touch the slider: if γ were 1.5, would the rest on H0 be longer or
# > shorter than at γ = 1? And which tokens (keys, first anchors or second anchors) should move
# > apart first in the PCA panel?

# %%
# NBVAL_IGNORE_OUTPUT
from ctxlab.widgets import staircase_explorer

staircase_explorer(result=result)

# %% [markdown]
# ## How the course works
#
# * **Lessons** (`lessons/NN_slug.ipynb`) read top to bottom. Each one states its goals and run time,
#   asks you to *think* before it shows a result, and backs every claim with a figure computed in the
#   notebook. Each `.ipynb` is built from a plain-text source `lessons/NN_slug.py`.
# * **Exercises** (`exercises/NN_slug.ipynb`) have cells marked `# YOUR CODE HERE`. Fill them in and
#   run the check cell below each one. It prints `PASS check_…`, or raises an error with a hint that
#   says what was expected and what came back. The checks also try hidden cases, so a hard-coded
#   answer will not pass.
# * **Grading** a whole notebook on a fresh kernel: `ctxlab grade exercises/01_signatures.ipynb`
#   prints a score table. `pytest --nbval-lax exercises/01_signatures.ipynb` gives the same verdict.
#   Worked solutions are in `solutions/`.
# * **The library** `ctxlab` holds everything the lessons call: `tasks`, `signatures`, `models`,
#   `train`, `align`, `theory`, `plots`, `widgets`. Read it when a lesson makes you curious.

# %% [markdown]
# ## Running at full scale on a GPU
#
# Every experiment picks its size from a *profile*: `quick` on a CPU (and always in CI) and `full` on
# a GPU. Set `CTXLAB_PROFILE=full` to override. The headline experiment also runs headless:
#
# ```bash
# ctxlab staircase --device cuda --profile full --seeds 5 --out figs/ --json figs/staircase.json
# ```
#
# It writes the figure above as `figs/staircase.png`, prints the table, and saves every number as JSON.
# `ctxlab doctor` (the first cell of every notebook runs it too) says which device and profile the
# course sees.

# %% [markdown]
# ## Summary
# * Small initialization makes embedding learning go **order by order**: order-1 signatures first,
#   then signatures with more and more context. The loss shows a staircase that rests on the
#   conditional entropies.
# * Next, **lesson 01** builds the signatures and the entropy ladder behind the dashed lines, on the
#   task's three-valued version.

# %% [markdown]
# # Lesson 11 — Why the structure matters
#
# **Learning goals.** After this lesson you can
# 1. separate what an embedding *contains* from how *large* it is, by freezing it, transplanting
#    it into a fresh network and comparing at a matched norm;
# 2. build an embedding table directly from the probability signatures and predict which plateaus
#    a network reading it can reach;
# 3. test "reasoning vs memorising" on an anchor-composition task with a held-out anchor pair,
#    and relate the answer to the geometry of the anchor and key embeddings;
# 4. measure semantic structure in two ways: how tokens with equal signatures collapse together,
#    and how far embedding neighbours agree with signature neighbours (the k-NN overlap) on real
#    text.
#
# **Prerequisites.** Lessons 01–03 (signatures, the staircase), 06 (the second stair) and 09 (the
# tiny GPT, the bigram signature). Lesson 10's neighbour lists help for part 3.
#
# **Run time.** About a minute on a laptop CPU: four batched Emb-MLP runs, one anchor-task
# ensemble and a one-layer GPT.
#
# ## The question
#
# Lessons 03–09 showed *that* small-init embeddings pick up the signatures, order by order. The
# paper's abstract goes one step further: this signature-aligned structure "plays an important
# role in both task learning and the incorporation of semantic structure into the embedding
# space". That is a causal claim, and a course should test it rather than repeat it. This lesson
# runs three experiments, each with at least three seeds, and states what it measured, including
# where the result is weaker than the claim or contradicts what we expected:
#
# * **Part 1, task learning.** Does a network learn faster when its embedding already holds the
#   signature structure, and does that structure carry over to a new task?
# * **Part 2, reasoning vs memorising.** Does small init let a network answer an anchor pair it
#   never saw, by composing what the anchors do?
# * **Part 3, semantic structure.** Do tokens with the same statistics end up with the same vector,
#   and on Shakespeare, do embedding neighbours agree with signature neighbours?

# %%
import math

import matplotlib.pyplot as plt
import torch

from ctxlab import plots
from ctxlab.align import (
    class_cosines,
    nearest,
    overlap_chance,
    overlap_trajectory,
    signature_classes,
    subspace_fraction,
)
from ctxlab.rungs import crossing_step, stair_onsets
from ctxlab.composition import anchor_line_up, composition_probes, key_line_up
from ctxlab.corpus import load_text, tokenizer, train_val_split
from ctxlab.lm import TinyGPT, train_lm
from ctxlab.models import ensemble_grid, make_model
from ctxlab.signatures import bigram_signature, label_signature
from ctxlab.tasks import anchor_composition_task, hierarchy_task, transfer_task
from ctxlab.theory import plateau_levels
from ctxlab.train import train
from ctxlab.transplant import (
    frozen_ensemble,
    group_summary,
    loss_by_condition,
    random_embedding,
    rescale,
    signature_embedding,
    steps_to_plateaus,
)

# %% [markdown]
# ## Part 1 — Task learning: freeze the embedding, transplant it, transfer it
#
# The staircase says *when* the embedding learns which signature. It does not yet say that this
# structure is what makes the task learnable. To test that we hold the rest of the network fixed
# and swap only the table: Emb-MLP (GELU, full-batch GD, lr 1, d = 32, hidden 128) with its
# embedding
#
# * **(a) learned** from small init (γ = 1), the usual staircase run;
# * **(b) frozen at random**: a random table at small scale (γ = 1) and the same table at standard
#   scale (γ = 0.5);
# * **(c) frozen at a signature-derived table**: each token's row is its incremental label
#   signatures ΔS¹, ΔS² (and, as a variant, ΔS³), centred and projected to width d by an SVD;
# * **(d) frozen at the table learned in (a)**, with every other weight re-initialised.
#
# Every frozen model keeps W1, W2 at its own fresh γ = 1 init and only W1, W2 learn. All frozen
# models are one batched ensemble: `frozen_ensemble` writes each condition's table into its
# models (`transplant`) and switches their embedding update off (`freeze_embedding`).

# %%
task = hierarchy_task()
data = task.population
V, D = data.vocab_size, 32
levels = task.plateau_levels()
SEEDS = [0, 1, 2]
print("plateau levels H0..H3:", [round(h, 3) for h in levels])

# %% [markdown]
# ### (a) The reference: learn E from small init
#
# Three seeds at γ = 1 for 1800 steps (long enough for the last stair), and three seeds at the
# standard γ = 0.5 for 600 steps (their staircase is done much earlier); we need the learned
# tables of both for transplants and transfer.

# %%
learner = make_model("mlp", task, d=D, gamma=1.0, seed=SEEDS)
learned = train(learner, data, 1800, lr=1.0, record_every=10, progress=False)
standard = make_model("mlp", task, d=D, gamma=0.5, seed=SEEDS)
learned_std = train(standard, data, 600, lr=1.0, record_every=10, progress=False)
E_small = learned.embeddings[:, -1]  # [3, V, d]: E learned from small init
E_std = learned_std.embeddings[:, -1]  # [3, V, d]: E learned from standard init
onsets_a = steps_to_plateaus(learned, levels)

# %% tags=["NBVAL_CHECK_OUTPUT"]
print("learned E reaches all three plateaus (every seed):", bool((onsets_a >= 0).all()))
print("plateau onsets in order (every seed):", bool((onsets_a.diff(dim=1) > 0).all()))

# %% [markdown]
# ### Which scale? The crux of a frozen-embedding comparison
#
# With E frozen, W1's gradient is proportional to the embedding rows it reads: multiply E by c and
# the first layer learns c times faster (and the pre-activations are c times larger). A
# comparison of *structure* is only fair at a matched scale. We rescale every frozen table to the
# same Frobenius norm, **√V ≈ 5.2, the expected norm of a standard-init (γ = 0.5) table**
# (E[‖E‖²] = V·d·d⁻¹ = V). It does not depend on any training run, and it is close to the norm
# the learned tables end at. The small-scale random table (γ = 1, norm ≈ √V/√d ≈ 0.9) is the same
# random table at 1/√d of that scale, so it shows what scale alone does.
#
# **Think.** The signature table built from ΔS¹ and ΔS² only: which tokens can it tell apart?
# Recall which order first sees the second anchor's attribute.

# %% tags=["NBVAL_CHECK_OUTPUT"]
NORM = math.sqrt(V)
sig12 = signature_embedding(task, D, orders=(1, 2), norm=NORM)
sig123 = signature_embedding(task, D, orders=(1, 2, 3), norm=NORM)
for name, table in [("ΔS¹+ΔS²", sig12), ("ΔS¹+ΔS²+ΔS³", sig123)]:
    rows = {role: round(float(table[task.role_tokens(role)].norm(dim=1).mean()), 2) for role in ("key", "anchor1", "anchor2")}
    print(f"{name:12s} rank {int(torch.linalg.matrix_rank(table, rtol=1e-4))}, mean row norm per role {rows}")

# %% [markdown]
# The order-1/2 table gives the second anchor's tokens (near-)zero rows: their attribute only
# enters the label together with both other tokens, an order-3 interaction, so ΔS¹ and ΔS² carry
# nothing about them. A model reading that table *cannot* get below H2. Adding ΔS³ gives every
# token a row, and the table has rank 6: two directions (the three attribute values, centred)
# per position — far fewer than d = 32, with all of the norm spent on what the label needs.
#
# **Think.** Rank the frozen conditions by the step at which they reach the last plateau H3:
# random (small), random (standard), ΔS¹⁺², ΔS¹⁺²⁺³, learned-in-(a). Then run the cell.

# %%
STEPS = 700
conditions = {
    "random γ=1 (small)": lambda s: random_embedding(V, D, 1.0, seed=100 + s),
    "random γ=0.5 (std)": lambda s: rescale(random_embedding(V, D, 1.0, seed=100 + s), NORM),
    "ΔS¹⁺²": lambda s: sig12,
    "ΔS¹⁺²⁺³": lambda s: sig123,
    "learned in (a)": lambda s: rescale(E_small[(s + 1) % 3], NORM),  # another seed's E: no co-adapted W1
}
frozen, names = frozen_ensemble(task, conditions, SEEDS, d=D)
run = train(frozen, data, STEPS, lr=1.0, record_every=10, progress=False)
onsets = steps_to_plateaus(run, levels)
print("embeddings unchanged by training:", bool((run.embeddings[:, -1] == run.embeddings[:, 0]).all()))

# %%
curves = {"learned (a)": (learned.steps, learned.loss)}
curves.update(loss_by_condition(run, names))
fig = plots.plateau_race_figure(curves, levels, at_step=STEPS)

# %%
groups = ["learned (a)"] * 3 + names
all_onsets = torch.cat([onsets_a, onsets])
at = learned.index(STEPS)
final = torch.cat([learned.loss[:, at], run.loss[:, -1]])
print(f"{'condition':20s} " + " ".join(f"{'to H' + str(k):>14s}" for k in (1, 2, 3)) + f" {'loss @' + str(STEPS):>14s}")
for name in dict.fromkeys(groups):
    cells = []
    for k in range(3):
        mean, sd, n = group_summary(all_onsets[:, k], groups)[name]
        cells.append(f"{'never':>14s}" if n == 0 else f"{f'{mean:.0f} ± {sd:.0f}' + ('' if n == 3 else f' ({n}/3)'):>14s}")
    mean, sd, _ = group_summary(final, groups)[name]
    print(f"{name:20s} " + " ".join(cells) + f" {f'{mean:.2f} ± {sd:.2f}':>14s}")

# %% [markdown]
# Mean ± sd over the three seeds. Steps are the first recorded step (every 10) below the midpoint
# between two plateau levels; "never" means not within the run (1800 steps for (a), `STEPS` = 700
# for the frozen ones). The cell below turns the comparisons the issue asks about into yes/no
# answers, seed by seed.

# %% tags=["NBVAL_CHECK_OUTPUT"]
def reached(name: str, k: int) -> torch.Tensor:
    """Step of plateau k+1 per seed, with 'never' counted as infinitely late."""
    v = onsets[[i for i, n in enumerate(names) if n == name], k].double()
    return torch.where(v >= 0, v, torch.inf)


print("ΔS¹⁺²⁺³ reaches H3 before random (std scale), every seed:",
      bool((reached("ΔS¹⁺²⁺³", 2) < reached("random γ=0.5 (std)", 2)).all()))
print("ΔS¹⁺² reaches H2 before random (std scale), every seed:",
      bool((reached("ΔS¹⁺²", 1) < reached("random γ=0.5 (std)", 1)).all()))
print("ΔS¹⁺² never reaches H3:", bool(torch.isinf(reached("ΔS¹⁺²", 2)).all()))
print("ΔS¹⁺² stuck within 0.01 of H2:",
      bool(((run.loss[[i for i, n in enumerate(names) if n == "ΔS¹⁺²"], -1] - levels[2]).abs() < 0.01).all()))
print("small random never leaves H1:", bool(torch.isinf(reached("random γ=1 (small)", 1)).all()))
print("learned-in-(a) table reaches H3 before the learner itself, every seed:",
      bool((reached("learned in (a)", 2) < onsets_a[:, 2].double()).all()))

# %% [markdown]
# What the run shows:
#
# * **Scale first.** The same random table frozen at small scale reaches H1 much later and never
#   leaves it within the run, while at standard scale it goes down two stairs: a frozen
#   embedding's norm sets the speed of everything downstream, so comparisons of structure must
#   match it.
# * **At matched scale, structure wins.** The signature-derived table with orders 1–3 reaches H3
#   well before the random table of the same norm (which has not reached it by the end of the
#   run), and the table learned in (a) — from a different seed — does about as well as it: what
#   the learner's embedding contains is, for this task, the signature geometry.
# * **The order-1/2 table is fast and then stuck.** It goes down the first two stairs fastest of
#   all (all its norm sits in four useful directions) and then stops exactly at H2: it is blind to
#   the second anchor, whose attribute only shows up in ΔS³. The rank and the order set of the
#   table decide which plateaus are reachable at all.
# * The occasional loss spikes (in the learner too) are plain GD at lr 1 near its stability
#   edge; each recovers within a few steps.

# %% [markdown]
# ### Transfer: does the learned geometry help on a new label rule?
#
# `transfer_task()` uses the same tokens and attributes, but the label is A(x1) − A(x2) + A(x3)
# (mod 3) with the same probabilities: the label distribution changes on two thirds of the
# sequences, while "which tokens share an attribute" is unchanged. We freeze the tables learned on
# the hierarchy task (from small init and from standard init, both rescaled to the matched norm
# √V) and let a fresh W1, W2 learn the new task. **Frozen, not fine-tuned**: a frozen table asks the
# clean question — how much of the new task does the old geometry already carry? — while a learning
# E would mix transfer with re-learning. The random standard-scale table of the first experiment
# is the baseline: a random table does not know which labels it is used for, and the new task is
# the old one with the second position's attribute values renamed, so its run there stands in for
# a run here.
#
# First, how much of each learned table lies in the signature subspace (the span of ΔS¹⁺²⁺³)?
# A random table puts rank/(V − 1) = 6/26 ≈ 0.23 of its energy there.

# %% tags=["NBVAL_CHECK_OUTPUT"]

for name, tables in [("from small init", E_small), ("from standard init", E_std)]:
    frac = subspace_fraction(tables, sig123)
    print(f"learned {name:20s} energy in the signature subspace: {float(frac.mean()):.2f} ± {float(frac.std()):.2f}")

# %% [markdown]
# Both learned tables are mostly signature structure; the one from standard init keeps a larger
# share of its random init (at γ = 0.5 the init is as large as what is learned).
#
# **Think.** Which transferred table learns the new task faster, and by how much, once both are
# at the same norm? And how do they compare with the random table?

# %%
new = transfer_task()
sources = {"from small init": E_small, "from standard init": E_std}
transferred = {name: (lambda s, E=E: rescale(E[(s + 1) % 3], NORM)) for name, E in sources.items()}
moved, t_names = frozen_ensemble(new, transferred, SEEDS, d=D)  # another seed's table, as in (d)
t_run = train(moved, new.population, STEPS, lr=1.0, record_every=10, progress=False)
t_onsets = steps_to_plateaus(t_run, new.plateau_levels())
t_curves = loss_by_condition(t_run, t_names)
t_curves["random γ=0.5 (std), hierarchy run"] = curves["random γ=0.5 (std)"]
fig = plots.plateau_race_figure(t_curves, new.plateau_levels(), at_step=STEPS)

# %%
for name in sources:
    cells = []
    for k in range(3):
        mean, sd, n = group_summary(t_onsets[:, k], t_names)[name]
        cells.append("never" if n == 0 else f"{mean:.0f} ± {sd:.0f}" + ("" if n == 3 else f" ({n}/3)"))
    mean, sd, _ = group_summary(t_run.loss[:, -1], t_names)[name]
    print(f"{name:20s} to H1, H2, H3: {cells}, loss @{STEPS}: {mean:.2f} ± {sd:.2f}")

# %% tags=["NBVAL_CHECK_OUTPUT"]
print("both transferred tables reach the new H3, every seed:", bool((t_onsets[:, 2] >= 0).all()))
print("random std-scale table reaches H3 in the same number of steps:", bool((reached("random γ=0.5 (std)", 2) < torch.inf).any()))

# %% [markdown]
# What this part showed:
#
# * Freezing and transplanting separate the embedding's *structure* from its *scale*; at matched
#   scale, a table built from the label signatures (orders 1–3) or learned from small init gets
#   down the staircase far faster than a random one.
# * A signature table that leaves out an order leaves out the tokens that only that order
#   explains: ΔS¹⁺² stops at H2. The signature picture predicts which plateaus a table can reach.
# * Learned tables carry over to a new label rule on the same attributes: frozen at the matched
#   norm, both the small-init and the standard-init table reach the new task's last plateau in
#   every seed, where a random table of the same norm has not left H2. At matched scale the two
#   transfer about equally well; the small-init table's edge (a larger share of its norm in the
#   signature subspace) is within the seed spread here. What small init buys in this experiment
#   is the staircase itself, not a better end table.

# %% [markdown]
# ## Part 2 — Reasoning or memorising? Composing two anchors
#
# Zhang et al. (NeurIPS 2024) and Yao, Zhang & Xu (ICML 2025) train transformers on *anchor
# functions*: a key number x followed by two anchor tokens, each anchor standing for a simple
# operation on x. The label is the two operations applied one after the other. One anchor pair is
# never shown in training. A model that learned the operations can still answer it: it
# **reasons** by composing what it knows. A model that stored each trained pair as its own
# look-up table has nothing to go on: it **memorises**. The papers report that the initialization
# scale decides which one happens. Small init composes, large init memorises, and the difference
# shows up in the embeddings. Here we rebuild the experiment at CPU scale with our Emb-MLP.

# %%
# %% [markdown]
# ### The task
#
# There are 20 key tokens `k0 … k19` (key value x = 0 … 19) and four anchors `a1 … a4`. Each anchor
# is a shift: a1 → +5, a2 → +1, a3 → −2, a4 → −8. A sequence is (key, anchor1, anchor2), and its
# label is x + shift(anchor1) + shift(anchor2), stored as a class index (an offset makes the
# smallest one 0). We use the same design as the group's own code:
#
# * the pair **(a4, a3)** is never trained. Composing its shifts gives **x − 10**;
# * its reverse **(a3, a4)** is trained, but with the label **x − 6**, not x − 10. So the reverse
#   pair does *not* give the composed answer away. A model that treats (a4, a3) like the pair it
#   has seen answers x − 6 (the "symmetric" answer); only a model that composes answers x − 10.
#
# The key comes first and the anchors follow in the order they are applied, as in the group's
# data, where x, a1, a2 stand side by side.

# %%
task = anchor_composition_task(n_keys=20)
data, held_out = task.population, task.info["held_out"]
names = task.token_names
for row in (0, 20 * 11, 20 * 14):
    x = data.x[row].tolist()
    print(" ".join(names[t] for t in x), "-> label", int(data.y[row]) - task.info["label_offset"])
print(f"{data.n} training sequences, {task.n_labels} classes; held-out pair:",
      " ".join(names[t] for t in held_out.x[0, 1:].tolist()), f"on all {held_out.n} keys")

# %% [markdown]
# > **Think.** All models below fit the 300 training sequences perfectly. On the 20 held-out
# > sequences (a4, a3), which answer do you expect from small init (γ = 1), from standard init
# > (γ = 0.5) and from large init (γ = 0.3): x − 10 (composed), x − 6 (copied from the reverse
# > pair), or something else?

# %% [markdown]
# ### The run
#
# One batched ensemble: Emb-MLP (d = 16, 64 GELU units) at γ ∈ {0.3, 0.5, 1} with 3 seeds each,
# full-batch gradient descent at lr 1 for 1000 steps. `composition_probes` records three
# numbers every 20 steps: the training accuracy, and the share of held-out keys answered with
# the composed label or with the reverse pair's label.

# %%
GAMMAS, SEEDS = (0.3, 0.5, 1.0), (0, 1, 2)
gammas = [g for g in GAMMAS for _ in SEEDS]
model = make_model("mlp", task, gamma=gammas, seed=list(SEEDS) * len(GAMMAS), d=16, hidden=64)
run = train(model, data, 1000, lr=1.0, record_every=20, probes=composition_probes(task), progress=False)
train_acc, composed, symmetric = (run.extras[k] for k in ("train_acc", "composed", "symmetric"))
for g in GAMMAS:
    idx = [k for k, gk in enumerate(gammas) if gk == g]
    c = composed[idx, -1]
    print(f"γ = {g:g}: training accuracy {train_acc[idx, -1].tolist()}, held-out composed "
          f"{[round(v, 2) for v in c.tolist()]} (mean {c.mean():.2f} ± {c.std():.2f}), "
          f"copied reverse {[round(v, 2) for v in symmetric[idx, -1].tolist()]}")

# %%
fig = plots.composition_curves_figure(run.steps, train_acc, composed, gammas, symmetric)

# %% [markdown]
# Every model fits the training pairs. The large and standard inits get there in 100–200 steps;
# small init sits on a plateau first and needs about 600. The held-out pair is where they
# differ. The cells below print the comparison as booleans. The mean composed accuracy rises with
# γ, and every small-init seed beats every standard-init seed. But no model composes on *all*
# keys: small init gets about half of them (printed above). Few models copy the reverse pair;
# most wrong answers are other labels. In this small model, "memorising" means "no answer"
# rather than "the symmetric answer".

# %%
# NBVAL_CHECK_OUTPUT
final = {g: composed[[k for k, gk in enumerate(gammas) if gk == g], -1] for g in GAMMAS}
print("all models fit the training pairs:", bool((train_acc[:, -1] == 1).all()))
print("mean held-out accuracy rises with γ:", bool(final[0.3].mean() < final[0.5].mean() < final[1.0].mean()))
print("every γ = 1 seed beats every γ = 0.5 seed:", bool(final[1.0].min() > final[0.5].max()))
print("γ = 1 composes on at least a third of the keys:", bool(final[1.0].min() >= 1 / 3))

# %% [markdown]
# > **Think.** To add a shift to a key, the network needs keys that sit on something like a
# > number line. It also helps if the anchors are spread out in proportion to their shifts.
# > Which init do you expect to build that structure into its embedding table?
#
# We measure it with `line_up(E, tokens, values)`. It regresses every embedding coordinate on the
# token's number (key value or anchor shift) and gives the share of the embedding variance that
# lies on that one straight line. 1 means the tokens sit on a line in the order and spacing of
# their numbers. Random embeddings score 1/(n − 1) on average: 1/3 for the 4 anchors and 1/19
# for the 20 keys.

# %%
E = run.embeddings[:, -1]
anchors, keys = anchor_line_up(E, task), key_line_up(E, task)
for g in GAMMAS:
    idx = [k for k, gk in enumerate(gammas) if gk == g]
    print(f"γ = {g:g}: anchor line-up {[round(v, 2) for v in anchors[idx].tolist()]}, "
          f"key line-up {[round(v, 2) for v in keys[idx].tolist()]}")
pictures = {f"γ = {gammas[k]:g}, seed {run.seeds[k]}: keys": E[k] for k in (0, 3, 6)}
fig = plots.anchor_embedding_figure(pictures, task, {"anchors": anchors, "keys": keys}, gammas)

# %%
# NBVAL_CHECK_OUTPUT
by_g = {g: [k for k, gk in enumerate(gammas) if gk == g] for g in GAMMAS}
print("key line-up rises with γ (every seed):",
      bool(keys[by_g[0.3]].max() < keys[by_g[0.5]].min() and keys[by_g[0.5]].max() < keys[by_g[1.0]].min()))
print("anchor line-up highest at γ = 1 (every seed):", bool(anchors[by_g[1.0]].min() > anchors[by_g[0.5]].max()))
print("γ = 0.3 anchors within 0.1 of chance (1/3):", bool((anchors[by_g[0.3]] - 1 / 3).abs().max() < 0.1))

# %% [markdown]
# At γ = 1 the keys lie on an ordered path (left): k0 at one end, k19 at the other, with a
# zig-zag across it. At γ = 0.3 the path is a tangle. The anchors line up with their shifts only
# at small init; at γ = 0.3 they stay at chance (right panel).
#
# ### Why the reverse pair carries a different label
#
# What if (a3, a4) were trained with its composed label x − 10? Then "the same answer as the
# reverse pair" and "the composed answer" are the same thing, and an Emb-MLP that simply reads
# the two anchors in either order can look like it composes. We check this with the same run at
# γ = 0.5 and γ = 1 on that easier task.

# %%
easy = anchor_composition_task(n_keys=20, reverse_offset=0)
easy_gammas = [g for g in (0.5, 1.0) for _ in SEEDS]
easy_run = train(make_model("mlp", easy, gamma=easy_gammas, seed=list(SEEDS) * 2, d=16, hidden=64),
                 easy.population, 1000, lr=1.0, record_every=1000, probes=composition_probes(easy),
                 progress=False)
for g in (0.5, 1.0):
    idx = [k for k, gk in enumerate(easy_gammas) if gk == g]
    print(f"reverse pair trained with x - 10, γ = {g:g}: held-out composed "
          f"{[round(v, 2) for v in easy_run.extras['composed'][idx, -1].tolist()]}")

# %%
# NBVAL_CHECK_OUTPUT
easy_final = easy_run.extras["composed"][:, -1]
print("with the give-away, standard init composes better than in the real test:",
      bool(easy_final[:3].mean() > final[0.5].mean() + 0.2))

# %% [markdown]
# With the give-away, standard init also "composes" on most keys. The held-out pair then measures
# symmetry between the two anchor slots, not reasoning. That is why the group's data gives the
# reverse pair a label of its own, and why we keep that design above.
#
# **What this part showed**
# - With the reverse pair trained on a different label, every model fits all 300 training
#   sequences, but the held-out pair separates the inits. Mean composed accuracy rises with γ
#   (0.3 < 0.5 < 1), and every γ = 1 seed beats every γ = 0.5 seed. Small init still composes
#   on only about half the keys.
# - Large and standard init memorise: on the held-out pair they give mostly neither the composed
#   answer nor the copied reverse-pair answer.
# - Composition goes with structure. At small init the keys lie on an ordered path and the
#   anchors line up with their shifts. At large init the anchors stay at chance and the keys
#   are only a little above it.
# - The test only means something when the held-out pair's answer cannot be copied from its
#   reverse. With the give-away, standard init "composes" too.

# %% [markdown]
# ## Part 3 — Semantic structure: do tokens with the same signature end up together?
#
# Lesson 04 showed that, while the embedding is small, the velocity of a token's embedding row
# depends on the token only through its signature: two tokens with **identical signature rows
# are pushed identically**. From small init they start almost at the origin, so they should
# move as one and end up pointing the same way. That is the sense in which the signature puts
# *semantic structure* into the embedding: tokens that mean the same thing for the task (same
# statistics) get the same vector. At standard init the same push is added to a large random
# starting vector, which it never fully overwrites.
#
# We test this twice: on the hierarchy task, where the signature classes are exact, and on
# Shakespeare, where "same signature" can only mean "nearby signature" and we count shared
# nearest neighbours.

# %%
# %% [markdown]
# ### Signature classes on the hierarchy task
#
# A **signature class** is a set of tokens whose signature rows are equal. Which tokens are equal
# depends on how many orders we look at: the order-1 signature P(y | x₁ = s) groups the 9 key
# tokens by their attribute (3 classes of 3), but every anchor has the same, uniform order-1 row.
# Order 2 splits the first anchors by attribute; the second anchors only split at order 3.

# %%
task = hierarchy_task()
data = task.population
sig = {k: label_signature(data, k, "raw") for k in (1, 2, 3)}
classes_1 = signature_classes(sig[1])
classes_12 = signature_classes(sig[1], sig[2])
classes_all = signature_classes(sig[1], sig[2], sig[3])
keys, anchors1 = task.role_tokens("key"), task.role_tokens("anchor1")
for name, cls in [("order 1", classes_1), ("orders 1-2", classes_12), ("orders 1-3", classes_all)]:
    print(f"{name:>10}: {len(cls.unique())} classes   keys {cls[keys].tolist()}   anchor-1 {cls[anchors1].tolist()}")

# %% [markdown]
# So we measure two groups with the classes that separate them: the **keys** by their order-1
# classes and the **first anchors** by their order-2 classes. For each group, the mean cosine
# between distinct tokens of the same class (*within*) and between tokens of different classes
# (*between*), at every recorded step, for 3 seeds at small (γ = 1) and standard (γ = 0.5) init,
# all six models in one ensemble (Emb-MLP, GELU, full-batch GD, lr 1.0, d = 32, hidden 128).
#
# > **Think.** At step 0 both cosines are about 0 (random vectors in 32 dimensions). Where should
# > *within* go for the keys at small init, and when? And for the anchors? What should differ at
# > standard init, where each row starts with a random part as large as what training adds?

# %%
SYN_STEPS = 1200
g_syn, s_syn = ensemble_grid([1.0, 0.5], [0, 1, 2])
mlp = make_model("mlp", task, d=32, hidden=128, activation="gelu", gamma=g_syn, seed=s_syn)
syn = train(mlp, data, SYN_STEPS, optimizer="gd", lr=1.0, record_every=10, progress=False)
E_syn = syn.embeddings
groups = {
    "keys (order-1 classes)": (classes_1, keys),
    "first anchors (order-2 classes)": (classes_12, anchors1),
}
cosines = {name: class_cosines(E_syn, cls, tokens=idx) for name, (cls, idx) in groups.items()}
onsets = stair_onsets(syn.steps, syn.loss, plateau_levels(data))  # [K, 3], -1 if not reached
mean_onsets = {}
for g in (1.0, 0.5):
    rows = onsets[torch.tensor(g_syn) == g]
    mean_onsets[g] = [int(col[col >= 0].float().mean()) for col in rows.T if bool((col >= 0).all())]
print("stair onsets (steps) per model:", onsets.tolist())
fig = plots.class_cosine_figure(syn.steps, cosines, g_syn, mean_onsets)
plt.show()

# %% [markdown]
# Read the figure with the stair onsets (dotted, mean over seeds; γ = 1 does not reach the third
# stair in 1200 steps). At small init the keys' *within* cosine jumps together with the first
# stair. The first anchors collapse much **earlier than the second stair** shows in the loss: the
# embedding takes its order-2 shape during the plateau, and the loss only drops once the rest of
# the network uses it. The steps where their within-class cosine passes 0.8, and the numbers at
# the end of training (mean ± sd over the 3 seeds):

# %%
small = torch.tensor(g_syn) == 1.0
collapse = crossing_step(syn.steps, cosines["first anchors (order-2 classes)"][0], 0.8, below=False)
print("γ = 1, first anchors within > 0.8 at step:", collapse[small].tolist(), " second-stair onset:", onsets[small, 1].tolist())
for name, (within, between) in cosines.items():
    for g, models in (("γ = 1  ", small), ("γ = 0.5", ~small)):
        w, b = within[models, -1], between[models, -1]
        print(f"{name:<32} {g}: within {w.mean():.2f} ± {w.std():.2f}   between {b.mean():.2f} ± {b.std():.2f}")

# %% tags=["NBVAL_CHECK_OUTPUT"]
print("first anchors: within > 0.8 before the second stair's onset, every small-init seed:",
      bool((collapse[small] < onsets[small, 1]).all()))
for name, (within, between) in cosines.items():
    print(f"{name}: small-init within > 0.9 for every seed: {bool((within[small, -1] > 0.9).all())}; "
          f"above every standard-init seed: {bool(within[small, -1].min() > within[~small, -1].max())}")

# %% [markdown]
# Under small init the tokens of a class **collapse**: within-class cosine close to 1, while
# different classes point apart. Under standard init, *within* stays far lower for every seed.
# The push is the same, so where did it go? Subtract the starting embedding and look at what
# training *added*, E − E₀:

# %%
moved = E_syn[:, -1] - E_syn[:, 0]
moved_within = {name: class_cosines(moved, cls, tokens=idx)[0] for name, (cls, idx) in groups.items()}
for name, w in moved_within.items():
    print(f"{name:<32} within, E - E0: γ = 1 {w[small].mean():.2f} ± {w[small].std():.2f}, "
          f"γ = 0.5 {w[~small].mean():.2f} ± {w[~small].std():.2f}")

# %% tags=["NBVAL_CHECK_OUTPUT"]
for name, w in moved_within.items():
    print(f"{name}: γ = 0.5 displacement more collapsed than its E, every seed: "
          f"{bool((w[~small] > cosines[name][0][~small, -1]).all())}")

# %% [markdown]
# The displacement is class-structured at both scales (its within-class cosine is high for
# standard init too). What standard init lacks is not the signal but the *collapse*: the random
# start E₀ stays in the embedding and keeps same-class tokens apart. Small init is what makes the
# signature structure the *whole* embedding rather than a part of it.

# %% [markdown]
# ### Real text: embedding neighbours vs signature neighbours
#
# Characters in Shakespeare never share a signature exactly, so instead of classes we ask about
# neighbours. For each of the 30 most frequent characters take its 5 nearest characters (cosine)
# by embedding and by the **bigram signature** (row s = [P(next | s), P(previous | s)], centred by
# its mean row so that similar means "unusual in the same way"). The **k-NN overlap** is the
# share of the 5 embedding neighbours that are also signature neighbours, averaged over the 30
# characters. Unrelated geometries share 5/29 ≈ 0.17 of them by chance.
#
# The GPT is kept tiny for the time budget: 1 layer, 1 head, d = 32, context 8 (a bigram signature
# needs only the previous character), batch 32, Adam lr 3·10⁻³, 400 steps; 3 seeds at γ = 1 and at
# γ = 0.5 in one ensemble.
#
# > **Think.** At step 0 the overlap sits at chance. Which init should reach the higher overlap,
# > if we look at the embedding E the model actually uses? And if we look at E − E₀?

# %%
text = load_text("shakespeare", max_chars=200_000).text
char_tok = tokenizer("char", text)
V = char_tok.vocab_size
lm_train, lm_val = train_val_split(char_tok.encode(text))
g_lm, s_lm = ensemble_grid([1.0, 0.5], [0, 1, 2])
gpt = TinyGPT(V, context=8, d=32, n_layers=1, n_heads=1, gamma=g_lm, seed=s_lm)
lm = train_lm(gpt, lm_train, 400, eval_tokens=lm_val, batch_size=32, lr=3e-3, record_every=20, progress=False)
print("held-out loss at the end:", [round(float(v), 2) for v in lm.loss[:, -1]])

# %%
N_TOP, K_NN = 30, 5
top = torch.bincount(lm_train, minlength=V).argsort(descending=True, stable=True)[:N_TOP]
S_text = bigram_signature(lm_train, V).matrix.double()
S_centred = S_text - S_text[top].mean(0)
chance = overlap_chance(N_TOP, K_NN)
overlap = {
    "embedding E": overlap_trajectory(lm, S_centred, K_NN, tokens=top),
    "displacement E − E₀": overlap_trajectory(lm, S_centred, K_NN, tokens=top, relative_to_init=True),
}
fig = plots.neighbour_overlap_figure(lm.steps, overlap, g_lm, chance, K_NN)
plt.show()

# %%
small_lm = torch.tensor(g_lm) == 1.0
for name, curve in overlap.items():
    for g, models in (("γ = 1  ", small_lm), ("γ = 0.5", ~small_lm)):
        end = curve[models, -1]
        print(f"{name:<20} {g}: step {int(lm.steps[1]):>2} {curve[models, 1].mean():.2f}, "
              f"end {end.mean():.2f} ± {end.std():.2f}")
print(f"chance {chance:.2f}; E at step 0: {overlap['embedding E'][:, 0].mean():.2f}")

# %% tags=["NBVAL_CHECK_OUTPUT"]
E_end = overlap["embedding E"][:, -1]
print("every model ends above twice chance:", bool((E_end > 2 * chance).all()))
print("E: small-init mean overlap > standard-init mean:", bool(E_end[small_lm].mean() > E_end[~small_lm].mean()))

# %% [markdown]
# The right panel answers the displacement question (it starts at the first recorded step: at
# step 0 there is no displacement). What Adam adds to the embedding is aligned with the bigram
# signature at both scales, and at standard init it aligns *sooner* (it passes the bigram phase
# earlier, lesson 09) and then drifts down for some seeds as the model moves on. The left panel is
# the embedding the model computes with: there standard init lags throughout, because its random
# start dilutes the neighbourhoods. We take E (left) as the main result, since "semantic structure
# in the embedding space" is a statement about E, not about its change; the two panels together
# say that the gap between the inits on E is partly the random start and partly a less
# bigram-like displacement late in training.
#
# Finally, the neighbours themselves for a few characters (seed 0, end of training, among the 30
# most frequent), next to their signature neighbours:

# %%
names = [{" ": "␠"}.get(n, n) for n in char_tok.token_names()]  # space made visible
rank = {int(t): i for i, t in enumerate(top)}
small_0, standard_0 = int(small_lm.nonzero()[0]), int((~small_lm).nonzero()[0])
for ch in ("e", "a", "t", ",", " "):
    row = rank[char_tok.encode(ch)[0].item()]
    cols = [lm.embeddings[small_0, -1, top], lm.embeddings[standard_0, -1, top], S_centred[top]]
    listed = [" ".join(names[int(top[i])] for i in nearest(M, row, 4)) for M in cols]
    print(f"{names[int(top[row])]:>2}  γ=1: {listed[0]:<12} γ=0.5: {listed[1]:<12} signature: {listed[2]}")

# %% [markdown]
# **What this part showed.**
#
# * Tokens with identical signatures collapse together under small init: within-class cosine
#   near 1 for the keys at the first stair, and for the first anchors already during the second
#   plateau, well before the loss takes the second stair.
# * Under standard init the same, class-structured push is added to a large random start, so
#   same-class tokens stay apart (within-class cosine clearly lower for every seed).
# * On Shakespeare, embedding neighbours of frequent characters agree with bigram-signature
#   neighbours far above chance within a hundred steps, more so for small init when we look at
#   E itself; the displacement E − E₀ is signature-aligned at both scales, earlier at standard init.
# * The neighbour lists make it concrete (read them above): vowels sit among vowels, and the comma
#   among the letters that end words, in the embedding as in the signature.

# %% [markdown]
# > **Paper vs. this course.**
# > *From the paper's abstract* (Yao, Hang & Xu, *Context Staircase*, 2026), in our words: the
# > signature-aligned embedding structure matters, both for learning the task and for carrying
# > semantic structure into the embedding space. The abstract describes no experiment for this
# > claim; the three experiments here are this course's reconstruction.
# >
# > **Task learning (part 1).** *Paper:* the signature-aligned structure of the embedding "plays an important role in task learning" (abstract only; no experiment is described). *This course:* we test it by freezing the embedding and letting only the MLP learn: at a matched Frobenius norm (√V, the standard-init norm) a table built from the tokens' incremental label signatures (orders 1–3), or learned from small init in another run, reaches the last plateau in a few hundred steps, while a random table of the same norm has not left H2 in the same time and the same random table at small-init scale barely leaves H1 — so both structure and scale matter, and a signature table missing order 3 stops exactly at H2. The transfer experiment (same tokens, new label rule) shows learned tables transfer, but at matched norm the small-init and standard-init tables transfer about equally well: our reconstruction supports "structure helps task learning", not "small init yields a better end table".
# >
# > **Reasoning vs memorising.** *Papers:* Zhang et al. (NeurIPS 2024) and Yao, Zhang & Xu (ICML 2025) train transformers on anchor functions: a key and two anchor "shift" tokens, one anchor pair held out and its reverse trained with a label of its own (x − 6 instead of the composed x − 10). They report that small initialization learns to *compose* the shifts, with structured embeddings, and so answers the held-out pair, while large/standard initialization memorises. *This course:* we rebuild the task from the group's published data recipe (our own code, 20 keys, shifts +5, +1, −2, −8). We train a one-hidden-layer Emb-MLP, not a transformer, with full-batch GD at γ = 0.3, 0.5 and 1 (3 seeds each), and measure embedding structure with our own "line-up" score (the share of the embedding variance on a line indexed by the key values or the anchor shifts). The direction matches: every model fits the training pairs, and held-out composed accuracy and line-up both rise with γ. The size does not: small init composes on only 40–50 % of held-out keys (the papers' transformers go much higher). The test also only separates the inits because the reverse pair's label is not the composed one.
# >
# > *Paper (abstract, in our words):* the signature-aligned embedding structure plays a role in "the incorporation of semantic structure into the embedding space". *Our reconstruction (part 3):* we read "semantic structure" as "tokens with the same statistics get the same vector" and test it two ways that are ours, not the paper's: on the hierarchy task, the within- vs between-class cosine of exact signature classes (small init collapses each class to cosine ≈ 1; standard init keeps its random start, within-class cosine ≈ 0.67), and on Shakespeare with a 1-layer character GPT, the share of shared top-5 neighbours between the embedding and the bigram signature (well above chance at both inits, higher for small init on E itself). The classes, the k-NN metric, the model sizes and the choice of E over E − E₀ are our choices, and every number is measured in the notebook.

# %% [markdown]
# ## Summary
#
# * **Task learning.** Frozen at a matched norm, an embedding built from the label signatures of
#   orders 1–3, or learned from small init in another run, takes the network down the staircase
#   far faster than a random table; a signature table that leaves out order 3 stops exactly at
#   H2. Scale matters as much as structure, so comparisons must match it. Learned tables transfer
#   to a new label rule on the same attributes, but at matched norm the small-init and
#   standard-init tables transfer about equally well.
# * **Reasoning vs memorising.** Every model fits the trained anchor pairs; on the held-out pair
#   the share of composed answers rises with γ (small init composes on about half the keys,
#   large init on almost none), together with how well keys and anchors line up with their values.
# * **Semantic structure.** Under small init, tokens with equal signatures collapse to cosine ≈ 1;
#   under standard init the same class-structured push is added to a random start that keeps
#   them apart. On Shakespeare, embedding neighbours of frequent characters agree with
#   bigram-signature neighbours far above chance, more so at small init.
# * The evidence supports "signature structure helps task learning and organises the embedding";
#   it is weaker for "small init makes a *better* end table" and for composition, where even
#   small init generalises only partly at this scale.
#
# **Next.** Open `exercises/11_structure.ipynb`: build the signature-derived table, race frozen
# tables, score the held-out pair and the line-up, and compute the k-NN overlap and signature
# classes yourself.

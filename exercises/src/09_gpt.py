# %% [markdown]
# # Exercises 09 — A small GPT on real text
#
# Four exercises on lesson 09: the yardsticks the lesson measured the GPT against, built by hand, and
# (exercise 4) the alignment reading on which SGD and Adam disagree, built and run on two small GPTs.
# Fill in each `# YOUR CODE HERE`, then run the check cell below it: it prints `PASS check_09_…`
# or stops with a hint that says which case failed and how. The checks also try *hidden* cases
# (other streams, vocabularies, shapes, recording steps), so write code for any input. Grade the
# whole notebook from a terminal with
#
# ```bash
# ctxlab grade exercises/09_gpt.ipynb
# ```
#
# | # | exercise | difficulty | time |
# |---|---|---|---|
# | 1 | the smoothed bigram predictor | ★★☆ | 10 min |
# | 2 | KL from the model to the bigram predictor | ★★☆ | 10 min |
# | 3 | the step where the model is closest | ★☆☆ | 5 min |
# | – | putting them together: the KL over training | ★★☆ | 15 min |
# | 4 | build it: the alignment order under SGD and under Adam (4a–4c) | ★★★ | 30 min |

# %%
import torch

import ctxlab.checks
from ctxlab.corpus import CharTokenizer, load_text

text = load_text("shakespeare", max_chars=50_000).text
tok = CharTokenizer(text)
tokens, V = tok.encode(text), tok.vocab_size
print(f"{len(tokens):,} character tokens, vocabulary {V}")

# %% [markdown]
# ## Exercise 1 — the smoothed bigram predictor (★★☆, 10 min)
#
# Write `bigram_predictor(tokens, V, alpha)` returning a [V, V] float tensor whose row a is the
# add-alpha estimate of P(next token = b | current token = a):
#
# (count(a, b) + alpha) / (count(a, ·) + V · alpha),
#
# where count(a, b) is how often b directly follows a in the stream. Every row sums to 1, also the
# row of a token that never occurs (it becomes uniform).
#
# <details><summary>Hint 1: the idea</summary>
#
# Count how often each ordered pair (current, next) occurs in the stream, add the same pseudo-count
# alpha to every cell, and turn each row into a distribution. The pseudo-count is what makes the row
# of a token that never occurs uniform.
# </details>
#
# <details><summary>Hint 2: the approach</summary>
#
# The stream's neighbouring pairs are the stream without its last token set beside the stream
# without its first. Add one into the [V, V] cell of every pair at once (with an indexed add that
# accumulates repeated cells, or by counting one number per pair), add alpha to every cell, and
# divide each row by its own sum. Work in float64.
# </details>
#
# <details><summary>Hint 3: the pitfalls</summary>
#
# Row a is the current token and column b the next one; each row sums to 1, not each column. Count
# only the len(tokens) − 1 pairs that are in the stream: shifting the stream by rolling it adds a
# pair (last, first) that is not there. Add alpha to all V · V cells before normalising, and use
# the alpha you are given.
# </details>

# %%
def bigram_predictor(tokens: torch.Tensor, V: int, alpha: float) -> torch.Tensor:
    """Add-alpha P(next | current): [V, V], rows sum to 1."""
    ### BEGIN SOLUTION
    counts = torch.zeros(V, V, dtype=torch.float64)
    counts.index_put_((tokens[:-1], tokens[1:]), torch.ones(len(tokens) - 1, dtype=torch.float64), accumulate=True)
    counts += alpha
    return counts / counts.sum(1, keepdim=True)
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_09_bigram_table(bigram_predictor)

# %% [markdown]
# ## Exercise 2 — KL from the model to the bigram predictor (★★☆, 10 min)
#
# A GPT gives logits [N, T, V] for token windows `x` [N, T]: at position t, a distribution p over
# the next token. The bigram predictor's guess at the same position is q = `table[x[n, t]]`. Write
# `kl_to_bigram(logits, table, x)` returning the mean over all N·T positions of
#
# KL(p ‖ q) = Σ_b p(b) (log p(b) − log q(b))
#
# in nats, as a float. This is the lesson's `kl_bigram` curve at one step.
#
# <details><summary>Hint 1: the idea</summary>
#
# KL(p ‖ q) weights the log-ratio by the model's own probabilities p: it is the model's
# cross-entropy against the bigram guess minus the model's own entropy. The bigram guess at a
# position is the table's row of the token that sits there.
# </details>
#
# <details><summary>Hint 2: the approach</summary>
#
# Turn the logits into log-probabilities over the vocabulary axis. Look up each position's bigram
# row by its current token, so that both are [N, T, V]. Multiply p by the difference of the two
# logs, sum over the vocabulary, and average over all N · T positions. Work in float64 and keep the
# log of the table away from zeros.
# </details>
#
# <details><summary>Hint 3: the pitfalls</summary>
#
# Logits are not log-probabilities: normalise them first. The weight is the model's p, not q (that
# is KL(bigram ‖ model)). The cross-entropy alone is not the KL: the model's entropy comes off.
# The guess after token a is row a of the table, not its column. The mean over all N · T positions:
# not a sum over them, nor a sum over each window's T positions averaged over windows. Natural
# logs, not bits.
# </details>

# %%
def kl_to_bigram(logits: torch.Tensor, table: torch.Tensor, x: torch.Tensor) -> float:
    """Mean KL(model || bigram) over every position of every window."""
    ### BEGIN SOLUTION
    logp = torch.log_softmax(logits.double(), dim=-1)
    logq = table.double()[x].clamp_min(1e-300).log()
    return float((logp.exp() * (logp - logq)).sum(-1).mean())
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_09_kl_to_bigram(kl_to_bigram)

# %% [markdown]
# ## Exercise 3 — the step where the model is closest (★☆☆, 5 min)
#
# Training records the KL at some steps only (`steps` [T], not necessarily evenly spaced) for K
# models at once (`kl` [K, T]). Write `closest_step(steps, kl)` returning a [K] tensor: for each
# model, the training step at which its KL was smallest. If the smallest value is recorded at
# several steps, return the earliest of them.
#
# <details><summary>Hint 1: the idea</summary>
#
# For each model, find where in the recording its KL is smallest, then read the training step that
# was recorded there.
# </details>
#
# <details><summary>Hint 2: the approach</summary>
#
# Per model, the position of the minimum along the recording axis (the usual minimum-position
# function returns the first on ties), then the entry of `steps` at that position: one step per
# model.
# </details>
#
# <details><summary>Hint 3: the pitfalls</summary>
#
# Training steps, not positions in the recording, and not the KL values themselves. The smallest
# KL, not the largest. On ties, the earliest step. One step per model, a [K] tensor, not one for the
# whole ensemble.
# </details>

# %%
def closest_step(steps: torch.Tensor, kl: torch.Tensor) -> torch.Tensor:
    """For each model, the recorded step of its smallest KL: [K]."""
    ### BEGIN SOLUTION
    return steps[kl.argmin(-1)]
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_09_closest_step(closest_step)

# %% [markdown]
# ## Putting them together — the KL over training (★★☆, 15 min)
#
# Write `kl_over_training(model, tokens, table, x_eval, steps, every, seed)` returning the pair
# `(recorded_steps [T], kl [K, T])` for a `TinyGPT` ensemble of K models (`model(x)` gives logits
# [K, N, T, V]). It trains `model` itself (in place) for `steps` updates of `torch.optim.Adam` at
# learning rate 1e-2: each update on 32 windows of `model.seq_len + 1` consecutive tokens at random
# offsets in `tokens` (drawn with a `torch.Generator` seeded with `seed`), on the next-token
# cross-entropy of every position, the models' losses summed. It records each model's KL to the
# bigram `table` on the fixed windows `x_eval` [N, model.seq_len] with your `kl_to_bigram`: before
# the first update (step 0), after every `every`-th update and after the last one, even when
# `steps` is no multiple of `every`.
#
# No two ways of drawing the batches train the same weights, so the check reads what your
# recording does, on tiny GPTs of its own (one model and a pair, other contexts, step counts and
# recording intervals): the recorded steps; the first column against the untrained model's KL and
# the last against the trained model's, within 1e-6; and every model's lowest KL below half its
# first (the tiny GPT comes close to the bigram model within a few hundred steps).
#
# <details><summary>Hint 1: the idea</summary>
#
# A training loop with a second job: at the chosen steps, before the update of that step, look at
# the model without changing it and write one number per model down.
# </details>
#
# <details><summary>Hint 2: the approach</summary>
#
# Make the generator and the optimizer once, before the loop. Loop over the steps from 0 to `steps`
# included; record first whenever the step is one of the recorded ones, then stop if it is the last
# step, else draw the windows, split them into inputs and next tokens, and take one optimizer step
# on the summed loss. Stack the records so that rows are models.
# </details>
#
# <details><summary>Hint 3: the pitfalls</summary>
#
# Record before the first update, and after the last (the last step need not be a multiple of
# `every`). Evaluate on `x_eval`, not on the training windows, and without gradients. The windows
# are one token longer than the context: inputs are all but the last token, targets all but the
# first. Every model's loss counts: sum them, do not train model 0 alone. Train the model you were
# given, not a copy.
# </details>

# %%
def kl_over_training(model, tokens: torch.Tensor, table: torch.Tensor, x_eval: torch.Tensor, steps: int,
                     every: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Train the ensemble in place; its KL to the bigram table on x_eval at the recorded steps: ([T], [K, T])."""
    ### BEGIN SOLUTION
    g = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    T, V = model.seq_len, table.shape[0]
    recorded, kls = [], []
    for step in range(steps + 1):
        if step % every == 0 or step == steps:
            with torch.no_grad():
                logits = model(x_eval)
            recorded.append(step)
            kls.append([kl_to_bigram(logits[k], table, x_eval) for k in range(logits.shape[0])])
        if step == steps:
            break
        batch = tokens[torch.randint(0, len(tokens) - T - 1, (32,), generator=g)[:, None] + torch.arange(T + 1)]
        logits = model(batch[:, :-1])
        loss = sum(torch.nn.functional.cross_entropy(lk.reshape(-1, V), batch[:, 1:].reshape(-1)) for lk in logits)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return torch.tensor(recorded), torch.tensor(kls, dtype=torch.float64).T
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_09_kl_over_training(kl_over_training)

# %% [markdown]
# With the checks passed, train a tiny GPT on the text and read the step where it is closest to your
# bigram predictor:

# %% tags=["exercise"]
# Once the check passes, e.g.:
# from ctxlab.lm import TinyGPT
# x_eval = tokens[torch.randint(0, len(tokens) - 9, (32,))[:, None] + torch.arange(8)]  # 32 fixed windows
# gpt = TinyGPT(V, 8, d=16, n_layers=1, n_heads=1, gamma=1.0, seed=0)
# recorded, kls = kl_over_training(gpt, tokens, bigram_predictor(tokens, V, 0.1), x_eval, 300, 20, 0)
# ...

# %% tags=["solution"]
from ctxlab.lm import TinyGPT

table = bigram_predictor(tokens, V, 0.1)
x_eval = tokens[torch.randint(0, len(tokens) - 9, (32,), generator=torch.Generator().manual_seed(0))[:, None] + torch.arange(8)]
gpt = TinyGPT(V, 8, d=16, n_layers=1, n_heads=1, gamma=1.0, seed=0)
recorded, kls = kl_over_training(gpt, tokens, table, x_eval, 300, 20, 0)
print("KL to the bigram predictor:", [round(k, 2) for k in kls[0].tolist()])
print("closest at step", int(closest_step(recorded, kls)[0]))

# %% [markdown]
# **Think.** Your tiny model has a context of 8 characters. If you trained it much longer, would its
# KL to the bigram predictor keep falling? What would the trigram KL do meanwhile?


# %% [markdown]
# ## Exercise 4 — build it: the alignment order under SGD and under Adam (★★★, 30 min)
#
# Lesson 09 read the alignment of the embedding's displacement E − E₀ with two text signatures, the
# bigram signature and the trigram increment, against each one's shuffled band, and found that the
# optimizers disagree: under plain SGD the trigram increment stands further above its band, under
# Adam the bigram signature. Build that reading in three parts. The last runs it on two tiny GPTs
# that the check trains itself (one block, width 16, context 8, seeds 0, 1 and 2, 150 steps on the
# shipped Shakespeare by plain SGD at lr 1.5 and by Adam at lr 0.01 on the same batches, the
# embedding recorded every 10 steps; about 3 s on one core, once).
#
# ### 4a — the margin over the shuffled band (15 min)
#
# Write `band_margins(embeddings, signature, perms)`. `embeddings` [K, T, V, d] holds the token
# embeddings of K models at T records, record 0 being the init E₀; `signature` S is [V, m]; `perms`
# [n, V] holds n permutations of the V tokens. Return a [K, T] tensor: at every record,
#
# margin = CKA(E_t − E₀, S) − max_j CKA(E_t − E₀, S[perms[j]]),
#
# where S[perm] is S with its rows shuffled (row i of the copy is row perm[i] of S), and CKA is lesson
# 02's linear CKA: centre each column of both matrices over the V tokens, then CKA(A, B) =
# ⟨G_A, G_B⟩ / (‖G_A‖ ‖G_B‖) with the Gram matrices G = A_c A_cᵀ and Frobenius norms. The subtracted
# term is the top of the shuffled band. At record 0 the displacement is zero and CKA is 0 / 0: take
# it, and the margin, as 0. The check compares your margins with its own within **1e-4**, on float32
# and float64 inputs, small and large inits, and a recorded GPT.
#
# <details><summary>Hint 1: the idea</summary>
#
# A CKA value means alignment only where it stands above what the same embedding scores against a
# signature that has nothing to do with the tokens. Shuffling S's rows keeps every column's values
# and cuts their tie to the tokens; the margin is how far the real score stands above the best of
# those chance scores. It is read on the displacement, because at small init E₀ is noise.
# </details>
#
# <details><summary>Hint 2: the approach</summary>
#
# Take the displacements of all records at once and centre them over the token axis; the same for
# S. Form the Gram matrices of the displacements, [K, T, V, V], and one of the signature, [V, V]. A
# CKA is then a sum of an elementwise product over the two token axes divided by two norms.
# Shuffling S's rows shuffles both the rows and the columns of its Gram matrix, so every shuffled
# copy's Gram matrix is an indexing of the one you have, with the same norm.
# </details>
#
# <details><summary>Hint 3: the pitfalls</summary>
#
# Centre each column over the tokens, not each row over its features. ⟨G_A, G_B⟩ is already the
# squared norm of A_cᵀ B_c: take no root. Subtract the band's top (the largest shuffled score), not
# its bottom or its mean, and subtract it from the CKA, not the other way round. Shuffle the
# signature's rows, not the embedding's. Guard the zero displacement at record 0 (a zero norm). The
# trigram increment has V² = 5,776 columns: form its Gram matrix once, not once per shuffle and
# record, or the check waits.
# </details>

# %%
def band_margins(embeddings: torch.Tensor, signature: torch.Tensor, perms: torch.Tensor) -> torch.Tensor:
    """CKA(E_t - E_0, S) minus the top of its shuffled band, per model and record: [K, T]."""
    ### BEGIN SOLUTION
    D = embeddings.double() - embeddings[:, :1].double()
    D = D - D.mean(-2, keepdim=True)
    S = signature.double() - signature.double().mean(0)
    G, H = D @ D.transpose(-1, -2), S @ S.T
    norms = torch.linalg.matrix_norm(G) * torch.linalg.matrix_norm(H)

    def cka(gram_s: torch.Tensor) -> torch.Tensor:
        return torch.where(norms > 0, (G * gram_s).sum((-1, -2)) / norms, torch.zeros_like(norms))

    band_top = torch.stack([cka(H[p][:, p]) for p in perms]).amax(0)
    return cka(H) - band_top
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_09_band_margins(band_margins)

# %% [markdown]
# ### 4b — which signature leads (10 min)
#
# Write `leading_signature(steps, margins, from_step, by)`. `steps` [T] are the recorded training
# steps (not always evenly spaced), `margins` maps each signature's name to its [K, T] margins (two
# signatures or more), `from_step` is a training step no later than the last record, and `by` ≥ 0.
# Return a list of K entries: for model k, the name of the signature whose margin exceeds every other
# signature's margin by more than `by` at every record at a step ≥ `from_step`, or None if no
# signature does. This is the lesson's reading: "the larger one by over 0.02 at every record from
# step 100 on".
#
# <details><summary>Hint 1: the idea</summary>
#
# A signature leads when, over the part of the run you read, it is ahead of every rival at every
# record, and clearly: not on average, not only at the end, not by a hair.
# </details>
#
# <details><summary>Hint 2: the approach</summary>
#
# Pick the records by their step (a mask on `steps`). Then, model by model and candidate by
# candidate, compare the candidate's margins with each other signature's over those records. At
# most one candidate can pass: name it, or give None.
# </details>
#
# <details><summary>Hint 3: the pitfalls</summary>
#
# `from_step` is a step, not a position in the records, and the record at `from_step` itself counts.
# "More than `by`" is strict: a lead equal to `by` is none. The leader beats every other signature
# (with three, beating one is not enough). One entry per model, each read on its own; names (the
# keys of `margins`), not positions. A margin below zero (under its band) still compares.
# </details>

# %%
def leading_signature(steps: torch.Tensor, margins: dict, from_step: float, by: float) -> list:
    """Per model, the signature ahead of every other by more than ``by`` at every record from ``from_step``, or None."""
    ### BEGIN SOLUTION
    late = steps >= from_step
    K = next(iter(margins.values())).shape[0]
    leaders = []
    for k in range(K):
        found = None
        for name in margins:
            rivals = [other for other in margins if other != name]
            if all(bool((margins[name][k, late] - margins[other][k, late] > by).all()) for other in rivals):
                found = name
        leaders.append(found)
    return leaders
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_09_leading_signature(leading_signature)

# %% [markdown]
# ### 4c — SGD against Adam (5 min)
#
# Write `alignment_leaders(run, signatures, perms, from_step, by)`: `run` is a recorded run (a
# `ctxlab.train.Trajectory`: `run.steps` [T], `run.embeddings` [K, T, V, d]) and `signatures` maps
# names to [V, m] matrices. Return the leading signature of each model (4b) read from each
# signature's margins (4a). The check runs it on its two GPTs with the training text's bigram
# signature [V, 2V] and trigram increment [V, V²] (lesson 09's, keyed "bigram" and "trigram"), 20
# shuffles, from step 100, by 0.02, and passes when your leaders are its own: the trigram increment
# in every SGD seed, the bigram signature in every Adam seed. Every lead that decides this is 0.04
# or more, twice `by` (measured over the seeds, a 1e-6 jitter of the init and one or two threads),
# so the arithmetic of another CPU cannot flip it.
#
# <details><summary>Hint</summary>
#
# Two steps: one margin curve per signature, kept under that signature's name, then the leaders.
# Pass `from_step` and `by` through.
# </details>

# %%
def alignment_leaders(run, signatures: dict, perms: torch.Tensor, from_step: float, by: float) -> list:
    """The leading signature of each model of a recorded run, read from the margins over the shuffled bands."""
    ### BEGIN SOLUTION
    margins = {name: band_margins(run.embeddings, S, perms) for name, S in signatures.items()}
    return leading_signature(run.steps, margins, from_step, by)
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_09_alignment_order(alignment_leaders)

# %% [markdown]
# The check's two runs are yours to read: `regime_runs()` from `ctxlab.checks.lesson09_build` maps
# each regime's name to its recorded run (`.trajectory`), the signatures and the shuffles.

# %% tags=["exercise"]
# Once the checks pass, e.g.:
# from ctxlab.checks.lesson09_build import regime_runs
# for name, run in regime_runs().items():
#     ...

# %% tags=["solution"]
from ctxlab.checks.lesson09_build import regime_runs

for name, run in regime_runs().items():
    traj = run.trajectory
    margins = {s: band_margins(traj.embeddings, S, run.perms) for s, S in run.signatures.items()}
    print(f"{name}: leaders {alignment_leaders(traj, run.signatures, run.perms, 100, 0.02)}")
    for s, m in margins.items():
        print(f"  {s} margin at steps {traj.steps[:6].tolist()} (seed 0): {[round(v, 2) for v in m[0, :6].tolist()]}; "
              f"at the end, every seed: {[round(v, 2) for v in m[:, -1].tolist()]}")

# %% [markdown]
# **Think.** Read the SGD margins of the first 50 steps: is either signature clearly ahead there?
# The lesson's KL curves put both regimes near the bigram model long before the trigram model. Does
# the larger trigram margin under SGD then say that SGD learned the trigram statistics first? What
# else can set one signature's margin above another's, when each is measured against a band drawn
# from its own columns?

# %% [markdown]
# # Exercises 09 — A small GPT on real text
#
# Three exercises on lesson 09: the yardsticks the lesson measured the GPT against, built by hand.
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
# | 1 | the smoothed bigram predictor | ★★☆ | 15 min |
# | 2 | KL from the model to the bigram predictor | ★★☆ | 15 min |
# | 3 | the step where the model is closest | ★☆☆ | 5 min |

# %%
import torch

import ctxlab.checks
from ctxlab.corpus import CharTokenizer, load_text

text = load_text("shakespeare", max_chars=50_000).text
tok = CharTokenizer(text)
tokens, V = tok.encode(text), tok.vocab_size
print(f"{len(tokens):,} character tokens, vocabulary {V}")

# %% [markdown]
# ## Exercise 1 — the smoothed bigram predictor (★★☆, 15 min)
#
# Write `bigram_predictor(tokens, V, alpha)` returning a [V, V] float tensor whose row a is the
# add-alpha estimate of P(next token = b | current token = a):
#
# (count(a, b) + alpha) / (count(a, ·) + V · alpha),
#
# where count(a, b) is how often b directly follows a in the stream. Every row sums to 1, also the
# row of a token that never occurs (it becomes uniform).
#
# <details><summary>Hint</summary>
#
# `torch.zeros(V, V).index_put_((tokens[:-1], tokens[1:]), torch.ones(len(tokens) - 1), accumulate=True)`
# counts all pairs at once. Add `alpha` to every entry, then divide each row by its sum.
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
# ## Exercise 2 — KL from the model to the bigram predictor (★★☆, 15 min)
#
# A GPT gives logits [N, T, V] for token windows `x` [N, T]: at position t, a distribution p over
# the next token. The bigram predictor's guess at the same position is q = `table[x[n, t]]`. Write
# `kl_to_bigram(logits, table, x)` returning the mean over all N·T positions of
#
# KL(p ‖ q) = Σ_b p(b) (log p(b) − log q(b))
#
# in nats, as a float. This is the lesson's `kl_bigram` curve at one step.
#
# <details><summary>Hint</summary>
#
# `logp = torch.log_softmax(logits, dim=-1)` turns logits into log-probabilities; `table[x]` has
# shape [N, T, V], the same as `logp`. Sum `logp.exp() * (logp - table[x].log())` over the last
# axis, then take the mean.
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
# <details><summary>Hint</summary>
#
# `kl.argmin(-1)` gives, per model, the *position* in the recording; index `steps` with it.
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
# ## Putting them together
#
# Train a very small GPT for 300 steps (a few seconds), record its logits on fixed windows, and
# find the step where it is closest to your bigram predictor.

# %% tags=["exercise"]
# Once the checks pass, e.g.:
# from ctxlab.lm import TinyGPT, train_lm
# table = bigram_predictor(tokens, V, 0.1)
# ...

# %% tags=["solution"]
from ctxlab.lm import TinyGPT

table = bigram_predictor(tokens, V, 0.1)
g = torch.Generator().manual_seed(0)
x_eval = tokens[torch.randint(0, len(tokens) - 9, (32,), generator=g)[:, None] + torch.arange(8)]
model = TinyGPT(V, 8, d=16, n_layers=1, n_heads=1, gamma=1.0, seed=0)
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
steps, kls = [], []
for step in range(301):
    if step % 20 == 0:
        with torch.no_grad():
            steps.append(step)
            kls.append(kl_to_bigram(model(x_eval)[0], table, x_eval))
    batch = tokens[torch.randint(0, len(tokens) - 9, (32,), generator=g)[:, None] + torch.arange(9)]
    loss = torch.nn.functional.cross_entropy(model(batch[:, :-1])[0].reshape(-1, V), batch[:, 1:].reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
print("KL to the bigram predictor:", [round(k, 2) for k in kls])
print("closest at step", int(closest_step(torch.tensor(steps), torch.tensor([kls]))[0]))

# %% [markdown]
# **Think.** Your tiny model has a context of 8 characters. If you trained it much longer, would its
# KL to the bigram predictor keep falling? What would the trigram KL do meanwhile?

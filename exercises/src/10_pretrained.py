# %% [markdown]
# # Exercises 10 — Probing a pretrained model
#
# Two exercises on lesson 10. Fill in each `# YOUR CODE HERE`, then run the check cell below it:
# it prints `PASS check_10_…` or stops with a hint that says which case failed and how. The checks
# also try *hidden* cases (other streams, other vocabularies, other embeddings), and none of them
# needs the pretrained model: you can do these exercises without installing it. Grade the whole
# notebook from a terminal with
#
# ```bash
# ctxlab grade exercises/10_pretrained.ipynb
# ```
#
# | # | exercise | difficulty | time |
# |---|---|---|---|
# | 1 | the bigram signature from counts | ★★☆ | 10 min |
# | 2 | alignment inside a frequency bin | ★★☆ | 10 min |
#
# Use torch and `ctxlab.align.cka`; `ctxlab.signatures.bigram_signature` is what the first check
# compares with, so don't call it there.

# %%
import torch

import ctxlab.checks
from ctxlab.align import cka
from ctxlab.corpus import CharTokenizer, load_text

text = load_text("shakespeare", max_chars=20_000).text
tok = CharTokenizer(text)
tokens, V = tok.encode(text), tok.vocab_size
print(f"{len(tokens):,} character tokens, vocabulary {V}")

# %% [markdown]
# ## Exercise 1 — the bigram signature from counts (★★☆, 10 min)
#
# Write `bigram_signature_of(tokens, V)` returning the order-1 text signature, a float tensor of
# shape [V, 2V]: row s holds P(next = b | s) in columns 0..V−1 and P(previous = a | s) in columns
# V..2V−1, both estimated by plain counting over the stream (no smoothing). A token that never has
# a successor (or never a predecessor) gets zeros in that half.
#
# <details><summary>Hint 1: the idea</summary>
#
# Both halves come from one table of pair counts, how often b follows a. P(next | s) takes s as the
# first token of a pair, P(previous | s) as the second: the same counts read along the other axis,
# each normalised by s's own total in that role.
# </details>
#
# <details><summary>Hint 2: the approach</summary>
#
# Count the stream's neighbouring pairs into a [V, V] table, as in set 09 but without smoothing.
# For the next-token half, divide each row by its sum; for the previous-token half, do the same to
# the transposed table. Keep the totals away from zero, so that a token with no successor (or no
# predecessor) keeps a zero row, and put the halves side by side, the next-token half first.
# </details>
#
# <details><summary>Hint 3: the pitfalls</summary>
#
# 0 / 0 gives NaN where a token has no successor or predecessor: that half of its row must be zeros.
# Count only the len(tokens) − 1 pairs in the stream, no pair that wraps around. The next-token half
# comes first. For P(previous | s) the normalising sum runs over the previous token with s fixed:
# the next-token half transposed is P(s | previous), the wrong conditional. Divide each row by its
# own total, not by the number of pairs (that gives joint probabilities). Both halves: 2V columns.
# </details>

# %%
def bigram_signature_of(tokens: torch.Tensor, V: int) -> torch.Tensor:
    """[P(next | s), P(previous | s)] for every token s: [V, 2V]."""
    ### BEGIN SOLUTION
    C = torch.zeros(V, V, dtype=torch.float64)
    C.index_put_((tokens[:-1], tokens[1:]), torch.ones(len(tokens) - 1, dtype=torch.float64), accumulate=True)

    def rows(M: torch.Tensor) -> torch.Tensor:
        return M / M.sum(1, keepdim=True).clamp_min(1e-300)

    return torch.cat([rows(C), rows(C.T)], dim=1)
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_10_bigram_signature(bigram_signature_of)

# %% [markdown]
# ## Exercise 2 — alignment inside a frequency bin (★★☆, 10 min)
#
# Write `bin_alignment(E, S, frequency, lo, hi)`: sort the tokens by falling `frequency` (rank 0 is
# the most frequent), keep the tokens of ranks lo, lo+1, …, hi−1, and return the linear CKA between
# their rows of the embedding `E` [V, d] and of the signature `S` [V, m] as a float. Tokens with
# equal frequency (counts often tie) keep id order: the lower id gets the lower rank.
#
# <details><summary>Hint 1: the idea</summary>
#
# A frequency bin is a range of ranks: line the tokens up from the most to the least frequent, take
# the ranks lo to hi − 1, and compute CKA on those tokens' rows alone. Tied frequencies need a rule,
# or the bin is not well defined.
# </details>
#
# <details><summary>Hint 2: the approach</summary>
#
# Order the token ids by falling frequency with a sort that keeps tied tokens in id order; the
# bin's ids are that order from rank lo up to, not including, rank hi. Take those rows of E and of S
# and score them with the lesson's CKA, which centres over the tokens it is given.
# </details>
#
# <details><summary>Hint 3: the pitfalls</summary>
#
# Ranks, not the token ids lo … hi − 1. Rank 0 is the most frequent token: sort descending. Tied
# tokens keep id order, lower id first: an unstable sort, or an ascending sort reversed, breaks
# that. Rank hi is not in the bin. Restrict both E and S to the bin (CKA over all tokens is not the
# bin's), and centre over the bin's tokens, not all of them.
# </details>

# %%
def bin_alignment(E: torch.Tensor, S: torch.Tensor, frequency: torch.Tensor, lo: int, hi: int) -> float:
    """CKA between E and S on the tokens of frequency ranks lo..hi-1."""
    ### BEGIN SOLUTION
    idx = frequency.argsort(descending=True, stable=True)[lo:hi]
    return float(cka(E[idx].double(), S[idx].double()))
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_10_bin_alignment(bin_alignment)

# %% [markdown]
# ## Putting them together
#
# With both functions you can redo the lesson's frequency analysis on any embedding. Here: a
# character-level embedding that *is* a noisy copy of the signature, noisier for rarer characters.
# Does your bin alignment fall with rarity, as it should?

# %% tags=["exercise"]
# Once the checks pass, e.g.:
# S = bigram_signature_of(tokens, V)
# frequency = torch.bincount(tokens, minlength=V).double()
# ...

# %% tags=["solution"]
S = bigram_signature_of(tokens, V)
frequency = torch.bincount(tokens, minlength=V).double()
g = torch.Generator().manual_seed(0)
rank = frequency.argsort(descending=True).argsort().double()
E = S @ torch.randn(2 * V, 16, generator=g, dtype=torch.float64) + (rank / V)[:, None] * torch.randn(V, 16, generator=g, dtype=torch.float64)
print("CKA, ranks 0-19:", round(bin_alignment(E, S, frequency, 0, 20), 2))
print("CKA, ranks 20-39:", round(bin_alignment(E, S, frequency, 20, 40), 2))

# %% [markdown]
# **Think.** In the lesson, the rarest bin of MiniLM's tokens aligned least. Name two reasons that
# have nothing to do with how the model was trained.

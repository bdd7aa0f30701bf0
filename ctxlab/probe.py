"""``ctxlab probe``: the input embeddings of any checkpoint series against a text's signatures of order 1 and 2.

Each checkpoint folder is read for its embedding table only (:mod:`ctxlab.checkpoints`). With that
checkpoint's own tokenizer, the text's ``top`` most frequent tokens are kept (the rest share one
bucket, as lesson 10 does) and two signatures are counted for them:

* order 1: [P(next | s), P(previous | s)] over all kept tokens (:func:`ctxlab.signatures.bigram_signature`);
* order 2: the interaction of s with the token before it, ΔS²(s; t, y) = P(y | t, s) − P(y | s) −
  P(y | t) + P(y), with t and y among the ``context`` most frequent tokens (the rest bucketed), so
  that its columns stay (context + 1)² however large the vocabulary.

Per frequency bin it reports CKA, its mean and spread over row shuffles and the excess over them
(lesson 10's measures), and RSA. Given several checkpoints of one run, the excess against the
training step is the staircase in somebody else's training run.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import Tensor

from ctxlab.checkpoints import PretrainedEmbedding, checkpoint_step, display_name, load_checkpoint
from ctxlab.pretrained import BinAlignment, alignment_by_bin, frequency_bins, kept_signature
from ctxlab.signatures import bucket_rare

ORDERS = (1, 2)


def pair_increment(kept_stream: Tensor, keep: int, context_stream: Tensor, context: int) -> Tensor:
    """Order-2 text signature rows of the ``keep`` kept tokens: [keep, (context + 1)²], 0 where a
    (token, previous token) pair never occurs.

    kept_stream: the text with kept tokens as 0..keep-1 and the rest as ``keep``; context_stream: the
    same text bucketed at ``context`` (0..context), for the previous token t and the next token y.
    """
    if len(kept_stream) != len(context_stream) or len(kept_stream) < 3:
        raise ValueError("need two bucketings of one text of at least 3 tokens")
    m = context + 1
    s, t, y = kept_stream[1:-1], context_stream[:-2], context_stream[2:]
    counts = torch.zeros((keep + 1) * m * m, dtype=torch.float64)
    counts.index_add_(0, (s * m + t) * m + y, torch.ones(len(s), dtype=torch.float64))
    N = counts.reshape(keep + 1, m, m)

    def given(table: Tensor) -> Tensor:  # P(y | the other indices), 0 where never seen
        mass = table.sum(-1, keepdim=True)
        return torch.where(mass > 0, table / mass.clamp_min(1e-300), torch.zeros_like(table))

    p_sty, p_sy, p_ty, p_y = given(N), given(N.sum(1)), given(N.sum(0)), given(N.sum((0, 1)))
    delta = p_sty - p_sy[:, None, :] - p_ty[None] + p_y
    return (delta * (N.sum(-1, keepdim=True) > 0))[:keep].reshape(keep, m * m)


@dataclass(frozen=True)
class CheckpointAlignment:
    """One checkpoint against the text: its table's size, and per order the alignment in each bin."""

    path: str
    step: int | None
    vocab: int
    width: int
    kept: int
    bucket_share: float  # share of the text's tokens in the rare bucket
    orders: dict[int, list[BinAlignment]]

    def to_json(self) -> dict:
        bins = {str(o): [{"ranks": list(b.ranks), "cka": round(b.cka, 6), "shuffled_cka": round(b.shuffled_cka, 6),
                          "shuffled_spread": round(b.shuffled_spread, 6), "excess": round(b.excess, 6),
                          "rsa": round(b.rsa, 6)} for b in by_bin] for o, by_bin in self.orders.items()}
        return {"path": self.path, "step": self.step, "vocab": self.vocab, "width": self.width, "kept": self.kept,
                "bucket_share": round(self.bucket_share, 6), "orders": bins}


@dataclass(frozen=True)
class ProbeResult:
    text: str
    tokens: int  # of the text, with the first checkpoint's tokenizer
    top: int
    context: int
    checkpoints: list[CheckpointAlignment]  # in training order (by step where the names give one)

    def to_json(self) -> dict:
        return {"text": self.text, "tokens": self.tokens, "top": self.top, "context": self.context,
                "checkpoints": [c.to_json() for c in self.checkpoints]}

    def table(self) -> str:
        """One line per checkpoint, order and bin: CKA, shuffled mean ± spread, excess."""
        lines = [f"{'checkpoint':<24} {'step':>8} {'order':>5} {'ranks':>11} {'CKA':>7} {'shuffled':>15} {'excess':>7}"]
        for c in self.checkpoints:
            for order, by_bin in c.orders.items():
                for b in by_bin:
                    lines.append(f"{display_name(c.path)[:24]:<24} {'-' if c.step is None else c.step:>8} {order:>5} "
                                 f"{f'{b.ranks[0]}-{b.ranks[1]}':>11} {b.cka:>7.3f} "
                                 f"{f'{b.shuffled_cka:.3f} ± {b.shuffled_spread:.3f}':>15} {b.excess:>7.3f}")
        return "\n".join(lines)


def _encode(model: PretrainedEmbedding, text: str, by_line: bool = True) -> Tensor:
    """The text's token ids with the model's tokenizer, its unknown-token id left out."""
    try:
        ids = model.encode(text, by_line)
    except Exception as err:  # a vocabulary without an unknown token meets a character it lacks
        raise ValueError(f"{model.name}'s tokenizer cannot encode the text ({str(err).splitlines()[0][:100]})") from None
    unknown = getattr(model.tokenizer.model, "unk_token", None)
    unk_id = model.tokenizer.token_to_id(unknown) if unknown else None
    if unk_id is not None:
        ids = ids[ids != unk_id]
    if len(ids) == 0:
        raise ValueError(f"the text has no token of {model.name}'s vocabulary (every token is unknown to it)")
    return ids


def _check_top(model: PretrainedEmbedding, ids: Tensor, top: int) -> None:
    distinct = int(torch.unique(ids).numel())
    if top > distinct:
        raise ValueError(f"the text has only {distinct} distinct tokens with {model.name}'s tokenizer; "
                         f"use --top {distinct} or fewer, or a longer text")
    if len(ids) < 3:
        raise ValueError("the text is too short: it gives fewer than 3 tokens")


def probe_one(model: PretrainedEmbedding, ids: Tensor, path: str, step: int | None, top: int, context: int,
              bin_size: int, n_shuffles: int = 50, reference: Tensor | None = None) -> CheckpointAlignment:
    """One embedding table against the order-1 and order-2 signatures of a token stream, bin by bin
    (of its change from ``reference`` [V, d] when one is given: lesson 09's E − E0)."""
    _check_top(model, ids, top)
    context = min(context, int(torch.unique(ids).numel()))  # a text with fewer distinct tokens: all of them
    stream, kept = bucket_rare(ids, model.vocab_size, top)
    ctx_stream, _ = bucket_rare(ids, model.vocab_size, context)
    signatures = {1: kept_signature(stream, top), 2: pair_increment(stream, top, ctx_stream, context)}
    E = (model.matrix if reference is None else model.matrix - reference)[kept].double()
    bins = frequency_bins(top, bin_size)
    orders = {o: alignment_by_bin(E, S, bins, n_shuffles=n_shuffles) for o, S in signatures.items()}
    return CheckpointAlignment(path, step, model.vocab_size, model.matrix.shape[1], top,
                               float((stream == top).double().mean()), orders)


def probe(checkpoints, text: str, text_name: str = "text", top: int = 400, context: int = 63, bins: int = 4,
          key: str | None = None, n_shuffles: int = 50, progress: bool | None = None, by_line: bool = True,
          relative_to_first: bool = False) -> ProbeResult:
    """Probe every checkpoint folder against ``text``; several folders of one run are put in step order.

    by_line: encode the text line by line (lesson 10, a sentence model) or as one running stream (a
    model trained on running text, line breaks being tokens). relative_to_first: measure each table's
    change from the first folder's (the series' initialization when it starts at step 0), as the
    training of ``ctxlab lm`` measures its own alignment."""
    from ctxlab.env import progress_enabled

    folders = [Path(c) for c in checkpoints]
    if not folders:
        raise ValueError("give at least one checkpoint folder")
    if top < 2 or context < 1 or bins < 1 or top // bins < 2:
        raise ValueError(f"need --top >= 2 tokens, at least 2 per bin, and --context >= 1; got top {top}, "
                         f"bins {bins}, context {context}")
    steps = [checkpoint_step(f) for f in folders]
    if all(s is not None for s in steps):  # a series: in training order
        order = sorted(range(len(folders)), key=steps.__getitem__)
        folders, steps = [folders[i] for i in order], [steps[i] for i in order]
    from tqdm.auto import tqdm

    encoded: dict[str, Tensor] = {}  # a series shares one tokenizer: encode the text once per tokenizer

    def read(folder: Path) -> tuple[PretrainedEmbedding, Tensor]:
        model = load_checkpoint(folder, key)
        digest = hashlib.sha1(model.tokenizer.to_str().encode()).hexdigest()
        if digest not in encoded:
            encoded[digest] = _encode(model, text, by_line)
        return model, encoded[digest]

    first = read(folders[0])  # a bad folder, key or text fails here, before the progress bar starts
    _check_top(first[0], first[1], top)
    if relative_to_first and len(folders) < 2:
        raise ValueError("--relative-to-first needs two or more checkpoints (the first is the reference)")
    reference = first[0].matrix if relative_to_first else None
    out = []
    for i, (folder, step) in enumerate(tqdm(list(zip(folders, steps)), desc="probe", disable=not progress_enabled(progress))):
        if relative_to_first and i == 0:
            continue  # its change from itself is zero
        model, ids = first if i == 0 else read(folder)
        if reference is not None and model.matrix.shape != reference.shape:
            raise ValueError(f"{folder}: table {tuple(model.matrix.shape)} differs from the first's {tuple(reference.shape)}")
        out.append(probe_one(model, ids, str(folder), step, top, context, top // bins, n_shuffles, reference))
    return ProbeResult(text_name, len(first[1]), top, context, out)

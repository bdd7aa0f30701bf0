"""Real text that works offline everywhere the course runs, tokenized into next-token data.

Two sources, both without a download: eight Shakespeare plays shipped inside the package
(``ctxlab/data/shakespeare.txt.gz``, provenance and licence in ``ctxlab/data/PROVENANCE.md``)
and, as a zero-install fallback, Python's own documentation topics (``pydoc_data``).
Tokenizers: characters (always), or a byte-level BPE trained locally with the optional
``tokenizers`` package (``pip install 'ctxlab[nlp]'``), cached on disk.
"""

from __future__ import annotations

import gzip
import hashlib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import torch
from torch import Tensor

from ctxlab.dataset import Dataset
from ctxlab.validate import integer, token_ids

SOURCES = ("shakespeare", "pydoc")


@dataclass(frozen=True)
class Corpus:
    """A text and where it came from."""

    name: str
    text: str
    provenance: str


def read_text_file(path: str | Path) -> Corpus:
    """Any UTF-8 text file as a corpus, or a one-line error (before any work) that says what is wrong
    with it: missing, empty, binary (NUL bytes) or not UTF-8 (with the first bad byte's offset)."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"--text: no file at {path}")
    raw = path.read_bytes()
    if not raw.strip():
        raise ValueError(f"--text: {path} is empty")
    if b"\x00" in raw[:65536]:
        raise ValueError(f"--text: {path} looks binary (it has NUL bytes); give a UTF-8 text file")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise ValueError(f"--text: {path} is not UTF-8 text (byte {err.start} is 0x{raw[err.start]:02x}); "
                         "convert it, e.g. with iconv -t utf-8") from None
    return Corpus(path.name, text, f"the file {path} ({len(raw)} bytes, sha256 {hashlib.sha256(raw).hexdigest()[:12]})")


def load_text(name: str = "shakespeare", max_chars: int | None = None) -> Corpus:
    """The text of a shipped source, ``shakespeare`` (1.0 M chars) or ``pydoc`` (Python's docs), or of a
    UTF-8 file when ``name`` is a path (:func:`read_text_file`)."""
    if isinstance(name, Path) or (name not in SOURCES and (Path(name).exists() or "/" in name or "." in name)):
        corpus = read_text_file(name)
        text, name, provenance = corpus.text, corpus.name, corpus.provenance
    elif name == "shakespeare":
        raw = resources.files("ctxlab").joinpath("data/shakespeare.txt.gz").read_bytes()
        text = gzip.decompress(raw).decode("utf-8")
        provenance = "Open Shakespeare (Open Knowledge Foundation), CC-BY 2.5; see ctxlab/data/PROVENANCE.md"
    elif name == "pydoc":
        from pydoc_data import topics

        text = "\n\n".join(topics.topics[key] for key in sorted(topics.topics))
        provenance = "Python's pydoc_data.topics (PSF licence), part of every Python install"
    else:
        raise ValueError(f"unknown text source {name!r}; choose one of {SOURCES}")
    if max_chars is not None:
        if integer(max_chars, "max_chars") < 2:
            raise ValueError("max_chars must be at least 2")
        text = text[:max_chars]
    return Corpus(name, text, provenance)


class CharTokenizer:
    """One token per character seen in the training text; unseen characters are refused."""

    def __init__(self, text: str) -> None:
        if not text:
            raise ValueError("cannot build a tokenizer from empty text")
        self.chars = sorted(set(text))
        self._ids = {c: i for i, c in enumerate(self.chars)}

    @property
    def vocab_size(self) -> int:
        return len(self.chars)

    def encode(self, text: str) -> Tensor:
        try:
            return torch.tensor([self._ids[c] for c in text], dtype=torch.long)
        except KeyError as err:
            raise ValueError(f"character {err.args[0]!r} is not in the tokenizer's vocabulary") from None

    def decode(self, ids) -> str:
        return "".join(self.chars[int(i)] for i in token_ids(ids, "ids").reshape(-1))

    def token_names(self) -> tuple[str, ...]:
        return tuple(repr(c)[1:-1] for c in self.chars)

    def to_tokenizers(self):
        """The same character vocabulary as a ``tokenizers.Tokenizer`` (one token per character, the
        same ids), to save as a checkpoint's ``tokenizer.json``."""
        from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers

        tok = Tokenizer(models.WordLevel(dict(self._ids), unk_token=None))
        tok.pre_tokenizer = pre_tokenizers.Split(Regex("[\\s\\S]"), behavior="isolated")
        tok.decoder = decoders.Fuse()
        return tok


class BPETokenizer:
    """A byte-level BPE trained on the text with the ``tokenizers`` package, cached by content hash."""

    def __init__(self, text: str, vocab_size: int = 512, cache_dir: str | Path | None = None) -> None:
        try:
            from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
        except ImportError:
            raise ImportError("BPE needs the 'tokenizers' package: pip install 'ctxlab[nlp]'") from None
        if integer(vocab_size, "vocab_size") < 260:
            raise ValueError("a byte-level BPE needs vocab_size >= 260 (256 bytes + merges)")
        key = hashlib.sha256(f"{vocab_size}:{text}".encode()).hexdigest()[:16]
        cache = Path(cache_dir or Path.home() / ".cache" / "ctxlab") / f"bpe-{key}.json"
        if cache.exists():
            self._tok = Tokenizer.from_file(str(cache))
        else:
            tok = Tokenizer(models.BPE())
            tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
            tok.decoder = decoders.ByteLevel()
            trainer = trainers.BpeTrainer(vocab_size=vocab_size, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                          show_progress=False)
            tok.train_from_iterator(text.splitlines(keepends=True), trainer=trainer)
            cache.parent.mkdir(parents=True, exist_ok=True)
            tok.save(str(cache))
            self._tok = tok

    @property
    def vocab_size(self) -> int:
        return self._tok.get_vocab_size()

    def encode(self, text: str) -> Tensor:
        lines = text.splitlines(keepends=True)
        ids = [i for enc in self._tok.encode_batch(lines) for i in enc.ids]
        return torch.tensor(ids, dtype=torch.long)

    def decode(self, ids) -> str:
        return self._tok.decode(token_ids(ids, "ids").reshape(-1).tolist())

    def token_names(self) -> tuple[str, ...]:
        return tuple(self._tok.id_to_token(i) for i in range(self.vocab_size))

    def to_tokenizers(self):
        """The trained ``tokenizers.Tokenizer`` itself (a checkpoint's ``tokenizer.json``)."""
        return self._tok


def tokenizer(kind: str, text: str, vocab_size: int = 512, cache_dir=None):
    """``char`` or ``bpe``."""
    if kind == "char":
        return CharTokenizer(text)
    if kind == "bpe":
        return BPETokenizer(text, vocab_size, cache_dir)
    raise ValueError(f"unknown tokenizer {kind!r}; choose 'char' or 'bpe'")


def train_val_split(tokens: Tensor, val_fraction: float = 0.1) -> tuple[Tensor, Tensor]:
    """A contiguous split: the last ``val_fraction`` of the stream is held out."""
    if not 0 < val_fraction < 1:
        raise ValueError("val_fraction must lie strictly between 0 and 1")
    cut = int(len(tokens) * (1 - val_fraction))
    if cut < 2 or len(tokens) - cut < 2:
        raise ValueError(f"{len(tokens)} tokens are too few to split")
    return tokens[:cut], tokens[cut:]


def next_token_windows(tokens: Tensor, context: int, vocab_size: int, stride: int = 1,
                       max_windows: int | None = None, seed: int = 0) -> Dataset:
    """Every window of ``context`` tokens with the token after it as the label: Dataset(x [N, context], y [N]).

    With ``max_windows`` a seeded random subset of the windows is kept (each weighted 1/N).
    """
    integer(context, "context", minimum=1)
    integer(stride, "stride", minimum=1)
    if token_ids(tokens, "tokens").ndim != 1:
        raise ValueError(f"tokens must be a 1-d stream, got shape {tuple(tokens.shape)}")
    if max_windows is not None:
        integer(max_windows, "max_windows", minimum=1)
    if len(tokens) <= context:
        raise ValueError(f"need more than {context} tokens for windows of length {context}, got {len(tokens)}")
    starts = torch.arange(0, len(tokens) - context, stride)
    if max_windows is not None and max_windows < len(starts):
        g = torch.Generator().manual_seed(seed)
        starts = starts[torch.randperm(len(starts), generator=g)[:max_windows]].sort().values
    x = tokens[starts[:, None] + torch.arange(context)]
    y = tokens[starts + context]
    return Dataset(x, y, vocab_size, vocab_size, torch.full((len(starts),), 1.0 / len(starts)))

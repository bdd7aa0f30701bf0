"""Any local checkpoint folder in the Hugging Face hub's layout, read for its input embedding table only.

A folder holds ``*.safetensors`` (one file, or shards listed by ``model.safetensors.index.json``),
``tokenizer.json`` and optionally ``config.json``. Only the headers are parsed to find the table (by
its name, or by its shape against the tokenizer's vocabulary), and only that one tensor is read
(``safe_open(...).get_tensor``, memory-mapped): a 7B model's folder costs one table's memory.
Nothing touches the network. ``ctxlab probe`` (:mod:`ctxlab.probe`) compares the table with
signatures counted on a text.
"""

from __future__ import annotations

import json
import re
import struct
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import Tensor


INDEX = "model.safetensors.index.json"
# the input embedding's name in common architectures (GPT-2, Llama/Mistral/Qwen, BERT, GPT-NeoX/Pythia,
# OPT, T5, the course's own TinyGPT), with and without the wrapper's prefix
KNOWN_KEYS = ("transformer.wte.weight", "wte.weight", "model.embed_tokens.weight", "embed_tokens.weight",
              "embeddings.word_embeddings.weight", "bert.embeddings.word_embeddings.weight",
              "gpt_neox.embed_in.weight", "embed_in.weight", "model.decoder.embed_tokens.weight",
              "shared.weight", "tok_embeddings.weight", "embedding.weight")
# a folder named by its training step: step1000, checkpoint-8000, global_step500, iter_20, 4000 (not gpt2-small)
_STEP = re.compile(r"^(?:.*?(?:step|checkpoint|ckpt|iter|epoch)[-_]?)?(\d+)$", re.IGNORECASE)


@dataclass
class PretrainedEmbedding:
    """A token embedding matrix [V, d] with the tokenizer that produced its token ids."""

    matrix: Tensor
    tokenizer: object  # tokenizers.Tokenizer, padding and truncation switched off
    name: str

    @property
    def vocab_size(self) -> int:
        return self.matrix.shape[0]

    def encode(self, text: str, by_line: bool = True) -> Tensor:
        """Token ids of ``text`` without [CLS]/[SEP], line by line (a stream for n-gram counts), or as
        one running stream, line breaks included (``by_line=False``: what a model of running text saw)."""
        lines = [line for line in text.splitlines() if line.strip()] if by_line else [text]
        encodings = self.tokenizer.encode_batch(lines, add_special_tokens=False)
        return torch.tensor([i for enc in encodings for i in enc.ids], dtype=torch.long)

    def token_names(self, ids) -> list[str]:
        return [self.tokenizer.id_to_token(int(i)) for i in ids]

    def token_id(self, token: str) -> int:
        found = self.tokenizer.token_to_id(token)
        if found is None:
            raise KeyError(f"{token!r} is not in the {self.name} vocabulary")
        return found


class CheckpointError(ValueError):
    """A checkpoint folder that cannot be read as asked; the message says what to do."""


@dataclass(frozen=True)
class TensorInfo:
    name: str
    shape: tuple[int, ...]
    dtype: str
    file: Path


def _header(path: Path) -> dict:
    """The JSON header of a safetensors file (8-byte little-endian length, then JSON), checked."""
    size = path.stat().st_size
    with open(path, "rb") as f:
        raw = f.read(8)
        if len(raw) < 8:
            raise CheckpointError(f"{path}: not a safetensors file (shorter than its 8-byte header length)")
        (n,) = struct.unpack("<Q", raw)
        if n < 2 or n > min(size - 8, 100 * 2**20):
            raise CheckpointError(f"{path}: corrupt safetensors header (it claims {n} bytes in a {size}-byte file)")
        try:
            header = json.loads(f.read(n))
        except (UnicodeDecodeError, json.JSONDecodeError) as err:
            raise CheckpointError(f"{path}: corrupt safetensors header ({err.__class__.__name__})") from None
    if not isinstance(header, dict):
        raise CheckpointError(f"{path}: corrupt safetensors header (not a JSON object)")
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        ok = isinstance(entry, dict) and isinstance(entry.get("shape"), list) and isinstance(entry.get("data_offsets"), list)
        if not ok or len(entry["data_offsets"]) != 2 or entry["data_offsets"][1] > size - 8 - n:
            raise CheckpointError(f"{path}: corrupt safetensors header (tensor {name!r} lies outside the file)")
    return header


def tensor_index(folder: str | Path) -> dict[str, TensorInfo]:
    """Every tensor's name, shape, dtype and file in a checkpoint folder, from the headers alone."""
    folder = Path(folder)
    if not folder.is_dir():
        raise CheckpointError(f"no checkpoint folder at {folder}")
    if (folder / INDEX).is_file():
        try:
            weight_map = json.loads((folder / INDEX).read_text(encoding="utf-8"))["weight_map"]
        except (UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError):
            raise CheckpointError(f"{folder / INDEX}: not a shard index (no 'weight_map')") from None
        files = sorted({folder / f for f in weight_map.values()})
        missing = [f.name for f in files if not f.is_file()]
        if missing:
            raise CheckpointError(f"{folder}: the shard index names files that are not there: {missing}")
    else:
        files = sorted(folder.glob("*.safetensors"))
        if not files:
            raise CheckpointError(f"{folder}: no *.safetensors file (PyTorch .bin checkpoints are not read: "
                                  "they are pickles; convert them to safetensors)")
    out = {}
    for file in files:
        for name, entry in _header(file).items():
            if name != "__metadata__":
                out[name] = TensorInfo(name, tuple(int(v) for v in entry["shape"]), str(entry.get("dtype")), file)
    return out


def find_embedding(tensors: dict[str, TensorInfo], vocab_size: int, key: str | None = None) -> TensorInfo:
    """The input embedding table: ``key`` if given; else a known name; else the one 2-D tensor whose
    rows match the tokenizer's vocabulary (a table may have a few padding rows more, never fewer)."""

    def fits(info: TensorInfo) -> bool:
        return len(info.shape) == 2 and vocab_size <= info.shape[0] <= vocab_size + 1024

    if key is not None:
        if key not in tensors:
            near = [n for n in tensors if len(tensors[n].shape) == 2][:8]
            raise CheckpointError(f"no tensor named {key!r}; 2-D tensors include: {near}")
        chosen = tensors[key]
    else:
        known = [tensors[k] for k in KNOWN_KEYS if k in tensors]
        candidates = known or [t for t in tensors.values() if fits(t) and re.search(r"emb|wte|tok", t.name)] \
            or [t for t in tensors.values() if fits(t)]
        if not candidates:
            shapes = {n: t.shape for n, t in list(tensors.items())[:8]}
            raise CheckpointError(f"no embedding table found: no 2-D tensor has {vocab_size} rows (the tokenizer's "
                                  f"vocabulary); tensors include {shapes}; name one with --key")
        if len(candidates) > 1:
            names = [t.name for t in candidates]
            raise CheckpointError(f"two or more embedding candidates {names}; choose one with --key")
        chosen = candidates[0]
    if len(chosen.shape) != 2:
        raise CheckpointError(f"{chosen.name} has shape {chosen.shape}, not [vocabulary, width]")
    if not fits(chosen):
        raise CheckpointError(f"{chosen.name} has {chosen.shape[0]} rows but the tokenizer has {vocab_size} tokens: "
                              "the tokenizer.json does not belong to this checkpoint")
    return chosen


def checkpoint_step(folder: str | Path) -> int | None:
    """The training step a folder's name gives (``step8000``, ``checkpoint-8000``), or None."""
    found = _STEP.search(Path(folder).name)
    return int(found.group(1)) if found else None


def load_tokenizer(folder: Path):
    try:
        from tokenizers import Tokenizer
    except ImportError:
        raise ImportError("reading a checkpoint needs 'tokenizers' and 'safetensors': pip install 'ctxlab[nlp]'") from None
    path = folder / "tokenizer.json"
    if not path.is_file():
        raise CheckpointError(f"{folder}: no tokenizer.json (the hub's tokenizer file is needed to count signatures)")
    try:
        tok = Tokenizer.from_file(str(path))
    except Exception as err:  # tokenizers raises its own Exception type for any malformed file
        raise CheckpointError(f"{path}: not a tokenizers file ({str(err).splitlines()[0][:120]})") from None
    tok.no_padding()
    tok.no_truncation()
    return tok


def load_checkpoint(folder: str | Path, key: str | None = None) -> PretrainedEmbedding:
    """The input embedding table [V, d] (float32, the tokenizer's V rows) and tokenizer of a folder."""
    folder = Path(folder)
    tensors = tensor_index(folder)
    tok = load_tokenizer(folder)
    info = find_embedding(tensors, tok.get_vocab_size(), key)
    try:
        from safetensors import safe_open
    except ImportError:
        raise ImportError("reading a checkpoint needs 'safetensors': pip install 'ctxlab[nlp]'") from None
    with safe_open(str(info.file), framework="pt") as f:
        matrix = f.get_tensor(info.name)[: tok.get_vocab_size()].to(torch.float32)
    return PretrainedEmbedding(matrix, tok, display_name(folder))


def display_name(folder: str | Path) -> str:
    """A checkpoint folder's name for tables: its own, or its parent's when it is only called "model"."""
    folder = Path(folder)
    return folder.parent.name if folder.name == "model" and folder.parent.name else folder.name

"""How much memory and time does ``ctxlab probe`` take on a GPT-2-sized table? Writes a checkpoint with
a 50,000-token, 768-wide input embedding (and an output head and a block of the same size, which
the probe must not read) beside a word-level tokenizer of 50,000 entries built from the shipped
Shakespeare, then runs ``ctxlab probe CHECKPOINT --top 2000`` on that text in a fresh process and
prints its peak resident memory and wall time. Goal: under 1.5 GB and 60 s on 2 cores.

    python benchmarks/probe_memory.py [--top 2000] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import torch


def make_checkpoint(folder: Path, vocab: int = 50_000, width: int = 768) -> Path:
    from safetensors.torch import save_file
    from tokenizers import Tokenizer, models, pre_tokenizers

    from ctxlab.corpus import load_text

    words = [w for w, _ in Counter(re.findall(r"\w+|[^\w\s]+", load_text("shakespeare").text)).most_common()]
    names = ["[UNK]", *words[: vocab - 1]]
    names += [f"<filler{i}>" for i in range(vocab - len(names))]
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(names)}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()  # words and runs of punctuation, as counted above
    folder.mkdir(parents=True, exist_ok=True)
    tok.save(str(folder / "tokenizer.json"))
    g = torch.Generator().manual_seed(0)
    tensors = {"transformer.wte.weight": torch.randn(vocab, width, generator=g),
               "lm_head.weight": torch.randn(vocab, width, generator=g),
               "transformer.h.0.mlp.c_fc.weight": torch.randn(width, 4 * width, generator=g)}
    save_file(tensors, str(folder / "model.safetensors"))
    (folder / "config.json").write_text(json.dumps({"vocab_size": vocab, "n_embd": width}))
    return folder


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=2000)
    parser.add_argument("--keep", type=Path, default=None, help="write the checkpoint here and keep it")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = make_checkpoint(args.keep or Path(tmp) / "gpt2-sized")
        size = (folder / "model.safetensors").stat().st_size / 2**20
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "ctxlab.cli", "probe", str(folder), "--top", str(args.top),
                               "--out", str(Path(tmp) / "figs"), "--json", str(Path(tmp) / "probe.json"), "--no-progress"],
                              capture_output=True, text=True)
        wall = time.perf_counter() - start
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # KiB on Linux
        if done.returncode:
            print(done.stdout[-2000:], done.stderr[-2000:])
            return 1
        print(done.stdout.strip().splitlines()[1])
        print(f"checkpoint {size:.0f} MiB (3 tensors, the table 147 MiB); ctxlab probe --top {args.top}: "
              f"{wall:.1f} s, peak RSS {peak:.0f} MiB (goal: under 1536 MiB and 60 s)")
        return 0 if peak < 1536 and wall < 60 else 1


if __name__ == "__main__":
    sys.exit(main())

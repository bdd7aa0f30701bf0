"""Does ``ctxlab probe`` read a training run back as the run saw itself? Trains ``ctxlab lm`` on a
text file with ``--checkpoints``, then probes three of its snapshots (the first, the middle and the
last) with ``--stream --relative-to-first`` over every token and one bin, on the training part of
the text, and prints that curve beside the run's own order-1 alignment (its JSON's
``alignment.bigram``: CKA(E − E0, bigram signature)). They should agree to 1e-5.

    python benchmarks/probe_series.py [--steps 300] [--chars 200000]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def ctxlab(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "ctxlab.cli", *args], check=True, stdout=subprocess.DEVNULL)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--chars", type=int, default=200_000, help="characters of the shipped Shakespeare")
    args = parser.parse_args()
    from ctxlab.corpus import CharTokenizer, load_text, train_val_split

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        text = load_text("shakespeare", max_chars=args.chars).text
        (tmp / "text.txt").write_text(text, encoding="utf-8")
        start = time.perf_counter()
        ctxlab("lm", "--text", str(tmp / "text.txt"), "--steps", str(args.steps), "--checkpoints", str(tmp / "run"),
               "--out", str(tmp / "figs"), "--json", str(tmp / "lm.json"), "--no-progress")
        trained = time.perf_counter() - start
        run = json.loads((tmp / "lm.json").read_text())
        steps = run["steps"]
        chosen = [steps[0], steps[len(steps) // 2], steps[-1]]
        tok = CharTokenizer(text)  # ctxlab lm's quick profile: characters
        train, _ = train_val_split(tok.encode(text))
        (tmp / "train.txt").write_text(tok.decode(train), encoding="utf-8")
        start = time.perf_counter()
        ctxlab("probe", *[str(tmp / "run" / f"step{s}") for s in chosen], "--text", str(tmp / "train.txt"),
               "--stream", "--relative-to-first", "--top", str(tok.vocab_size), "--bins", "1", "--shuffles", "2",
               "--out", str(tmp / "figs"), "--json", str(tmp / "probe.json"), "--no-progress")
        probed = time.perf_counter() - start
        probe = {c["step"]: c["orders"]["1"][0]["cka"] for c in json.loads((tmp / "probe.json").read_text())["checkpoints"]}
        own = dict(zip(steps, run["alignment"]["bigram"][0]))
        print(f"ctxlab lm --steps {args.steps}: {trained:.1f} s; ctxlab probe of 3 snapshots: {probed:.1f} s")
        print(f"{'step':>6} {'lm: CKA(E-E0, bigram)':>22} {'probe --relative-to-first':>26} {'difference':>11}")
        worst = 0.0
        for s in chosen[1:]:
            worst = max(worst, abs(own[s] - probe[s]))
            print(f"{s:>6} {own[s]:>22.6f} {probe[s]:>26.6f} {own[s] - probe[s]:>11.1e}")
        print(f"largest difference {worst:.1e} (goal: below 1e-5)")
        return 0 if worst < 1e-5 else 1


if __name__ == "__main__":
    sys.exit(main())

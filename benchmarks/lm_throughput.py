"""Training throughput of the tiny GPT: tokens per second of ``train_lm``, and on a GPU the model
FLOP utilisation (MFU) against a peak you supply.

Tokens per step = batch_size x context x models (every model of the ensemble trains on the batch).
Training FLOPs per token follow the usual estimate (Kaplan et al. 2020; PaLM's MFU definition):

    6 x N + 12 x n_layers x d x context

with N the parameters that take part in matrix products: every block weight (12 d^2 per layer)
and the unembedding (d x V); the token and position tables are lookups and are left out. 6 N is
2 FLOPs per multiply-add, times 3 for the forward and the two backward products; the second term
is the attention scores and the weighted sum of values over the context (causal masking is not
discounted). MFU = achieved FLOP/s / peak FLOP/s. The recording at the first and last step (64
held-out windows) is included in the timing, so short runs slightly underestimate throughput.

    python benchmarks/lm_throughput.py --profile quick --device cpu --steps 30
    python benchmarks/lm_throughput.py --profile full --device cuda --steps 200 --peak-tflops 989
"""

from __future__ import annotations

import argparse
import time

import torch

from ctxlab.corpus import load_text, tokenizer, train_val_split
from ctxlab.experiments import LM_PROFILES
from ctxlab.lm import TinyGPT, train_lm


def flops_per_token(cfg: dict, vocab: int) -> float:
    """Training FLOPs per token: 6 N (matmul parameters) + 12 n_layers d context (attention)."""
    d, layers, context = cfg["d"], cfg["n_layers"], cfg["context"]
    matmul_params = 12 * d * d * layers + d * vocab
    return 6 * matmul_params + 12 * layers * d * context


def measure(profile: str, device: str, steps: int, models: int, warmup: int = 3) -> dict:
    """Train ``models`` GPTs of a profile's size for ``steps`` steps; time it after a warm-up run."""
    cfg = LM_PROFILES[profile]
    text = load_text("shakespeare").text
    tok = tokenizer(cfg["tokenizer"], text, vocab_size=cfg["vocab_size"] or 512)
    train_tokens, held_out = train_val_split(tok.encode(text))
    V = tok.vocab_size
    model = TinyGPT(V, cfg["context"], d=cfg["d"], n_layers=cfg["n_layers"], n_heads=cfg["n_heads"],
                    gamma=[1.0] * models, seed=list(range(models)))

    def run(n: int) -> float:
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        start = time.perf_counter()
        train_lm(model, train_tokens, n, eval_tokens=held_out, batch_size=cfg["batch_size"], lr=cfg["lr"],
                 record_every=n, device=device, progress=False)
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        return time.perf_counter() - start

    run(warmup)
    seconds = run(steps)
    tokens = steps * cfg["batch_size"] * cfg["context"] * models
    return {"profile": profile, "device": device, "models": models, "steps": steps, "vocab": V,
            "seconds": seconds, "tokens_per_second": tokens / seconds,
            "flops_per_token": flops_per_token(cfg, V)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", choices=sorted(LM_PROFILES), nargs="+", default=["quick", "full"])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--models", type=int, default=1, help="ensemble size (models trained together)")
    parser.add_argument("--peak-tflops", type=float, default=None,
                        help="the device's peak dense TFLOP/s at the precision used (fp32 here), for MFU")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    print(f"{'profile':<7} {'device':<7} {'models':>6} {'steps':>5} {'tokens/s':>12} {'GFLOP/s':>9} {'MFU':>7}")
    for profile in args.profile:
        r = measure(profile, args.device, args.steps, args.models)
        gflops = r["tokens_per_second"] * r["flops_per_token"] / 1e9
        mfu = f"{gflops / (args.peak_tflops * 1e3):.1%}" if args.peak_tflops else "-"
        print(f"{profile:<7} {args.device:<7} {r['models']:>6} {r['steps']:>5} {r['tokens_per_second']:>12,.0f} "
              f"{gflops:>9.2f} {mfu:>7}")


if __name__ == "__main__":
    main()

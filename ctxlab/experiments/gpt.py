"""The small GPT on real text (lesson 09, ``ctxlab lm``): trained against n-gram yardsticks, with the
alignment of its embeddings to the text's signatures."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from ctxlab.align import align_trajectory
from ctxlab.env import profile as current_profile
from ctxlab.lm import PRECISIONS
from ctxlab.models import ensemble_grid
from ctxlab.train import Trajectory

LM_PROFILES = {
    "quick": {"context": 16, "d": 32, "n_layers": 1, "n_heads": 2, "steps": 800, "batch_size": 32, "lr": 1e-2,
              "record_every": 10, "tokenizer": "char", "vocab_size": None, "optimizer": "adam",
              "precision": "fp32"},
    "full": {"context": 128, "d": 256, "n_layers": 4, "n_heads": 4, "steps": 3000, "batch_size": 64, "lr": 1e-3,
             "record_every": 50, "tokenizer": "bpe", "vocab_size": 512, "optimizer": "adam",
             "precision": "fp32"},
}
NGRAM_ORDERS = {"unigram": 1, "bigram": 2, "trigram": 3}


@dataclass
class LMResult:
    """A GPT run: the trajectory (held-out loss, embeddings, KL to each n-gram), and the yardsticks."""

    trajectory: Trajectory
    entropies: dict[str, float]  # held-out cross-entropy of each n-gram model
    alignment: dict[str, torch.Tensor]  # CKA(E - E0, bigram signature / trigram increment): [K, T]
    samples: dict[int, list[str]]  # step -> one generated text per model
    config: dict
    seconds: float
    tokens_per_second: float
    # name -> [2, K, T]: lowest and highest CKA(E - E0, row-shuffled S) over the shuffles (lesson 02:
    # a CKA is read against its shuffled band); None for a recording that kept no band
    alignment_band: dict[str, torch.Tensor] | None = None
    tokenizer: object | None = None  # ctxlab.corpus.CharTokenizer or BPETokenizer; None for a recording

    def kl_minimum_steps(self) -> dict[str, list[int]]:
        """Per n-gram order, the step where each model is closest to that n-gram predictor."""
        steps = self.trajectory.steps  # NaN (after a divergence) never counts as the closest
        return {name: steps[self.trajectory.extras[f"kl_{name}"].nan_to_num(nan=torch.inf).argmin(-1)].tolist()
                for name in NGRAM_ORDERS}

    def alignment_peak_steps(self) -> dict[str, list[int]]:
        steps = self.trajectory.steps
        return {name: steps[curve.nan_to_num(nan=-torch.inf).argmax(-1)].tolist() for name, curve in self.alignment.items()}

    def to_json(self) -> dict:
        traj = self.trajectory
        return {
            "config": self.config,
            "gammas": traj.gammas,
            "seeds": traj.seeds,
            "processes": traj.config["processes"],
            "steps": traj.steps.tolist(),
            "held_out_loss": traj.loss.round(decimals=5).tolist(),
            "kl": {name: traj.extras[f"kl_{name}"].round(decimals=5).tolist() for name in NGRAM_ORDERS},
            "alignment": {name: curve.round(decimals=5).tolist() for name, curve in self.alignment.items()},
            "alignment_band": None if self.alignment_band is None else
            {name: band.round(decimals=5).tolist() for name, band in self.alignment_band.items()},
            "ngram_entropies": {name: round(h, 5) for name, h in self.entropies.items()},
            "kl_minimum_steps": self.kl_minimum_steps(),
            "alignment_peak_steps": self.alignment_peak_steps(),
            "samples": {str(step): texts for step, texts in self.samples.items()},
            "seconds": round(self.seconds, 2),
            "tokens_per_second": round(self.tokens_per_second, 1),
        }

    @classmethod
    def from_json(cls, numbers: dict, last_step: int | None = None) -> LMResult:
        """The result that ``to_json`` saved (curves only: embeddings are not saved), optionally cut
        at ``last_step``. Lets a lesson plot a run made elsewhere, e.g. the full profile on a GPU."""
        keep = [i for i, step in enumerate(numbers["steps"]) if last_step is None or step <= last_step]
        if not keep:
            raise ValueError(f"no recorded step at or before {last_step}")

        def curves(rows) -> torch.Tensor:
            return torch.tensor(rows, dtype=torch.float32)[:, keep]

        K = len(numbers["gammas"])
        traj = Trajectory(
            steps=torch.tensor(numbers["steps"])[keep],
            loss=curves(numbers["held_out_loss"]),
            embeddings=torch.empty(K, len(keep), 0, 0),
            extras={f"kl_{name}": curves(rows) for name, rows in numbers["kl"].items()},
            gammas=list(numbers["gammas"]),
            seeds=list(numbers["seeds"]),
            config={"processes": numbers["processes"]},
        )
        config = dict(numbers["config"], steps=int(traj.steps[-1]))
        samples = {int(step): texts for step, texts in numbers["samples"].items() if int(step) <= config["steps"]}
        alignment = {name: curves(rows) for name, rows in numbers["alignment"].items()}
        band = numbers.get("alignment_band")
        band = None if band is None else {name: torch.tensor(rows, dtype=torch.float32)[..., keep] for name, rows in band.items()}
        return cls(traj, dict(numbers["ngram_entropies"]), alignment, samples, config, numbers["seconds"],
                   numbers["tokens_per_second"], band)


def shuffled_alignment_band(traj: Trajectory, signatures: dict, n: int = 50, seed: int = 0) -> dict[str, torch.Tensor]:
    """Per signature, the lowest and highest CKA(E - E0, S with its rows shuffled) over ``n`` shuffles at
    every record: [2, K, T], the range of :func:`ctxlab.align.permutation_baseline` (same shuffles for the
    same seed). A CKA curve means alignment only where it stands above this band; NaN where the model
    diverged, as in :func:`ctxlab.align.align_trajectory`."""
    from ctxlab.align import cka_shuffle_range
    from ctxlab.train import blank_after_divergence

    E = traj.embeddings - traj.embeddings[:, :1]
    usable = torch.isfinite(E).flatten(1).all(1)
    band = {}
    for name, S in signatures.items():
        out = torch.full((*E.shape[:2], 2), float("nan"), dtype=torch.float64)
        if bool(usable.any()):
            out[usable] = cka_shuffle_range(E[usable], S, n, seed)
        band[name] = blank_after_divergence(out, traj.steps.tolist(), traj.diverged_at).permute(2, 0, 1)
    return band


def recorded_lm_run(name: str = "lm_full_h200") -> LMResult:
    """A full-profile run shipped with ctxlab (``ctxlab/data/<name>.json``, made by
    ``benchmarks/lm_gpu.sh``): the curves a CPU cannot produce in a lesson's time."""
    path = Path(__file__).parents[1] / "data" / f"{name}.json"
    if not path.exists():
        raise ValueError(f"no recorded run {name!r}; recorded runs: {sorted(p.stem for p in path.parent.glob('lm_*.json'))}")
    return LMResult.from_json(json.loads(path.read_text()))


def lm_settings(profile: str | None, overrides: dict) -> dict:
    """The profile's GPT settings with ``overrides`` (None: keep the profile's), checked."""
    from ctxlab.validate import integer, number

    cfg = dict(LM_PROFILES[profile or current_profile()])
    unknown = set(overrides) - set(cfg)
    if unknown:
        raise ValueError(f"unknown settings {sorted(unknown)}; choose from {sorted(cfg)}")
    if overrides.get("vocab_size") is not None and overrides.get("tokenizer", cfg["tokenizer"]) != "bpe":
        raise ValueError("vocab_size sets the size of a BPE vocabulary; use it with tokenizer 'bpe'")
    cfg.update({k: v for k, v in overrides.items() if v is not None})
    for name in ("context", "d", "n_layers", "n_heads", "steps", "batch_size", "record_every"):
        integer(cfg[name], name, minimum=1)
    number(cfg["lr"], "lr", positive=True)
    if cfg["d"] % cfg["n_heads"]:
        raise ValueError(f"the width d = {cfg['d']} must be divisible by the number of heads ({cfg['n_heads']})")
    if cfg["optimizer"] not in ("sgd", "adam"):
        raise ValueError(f"unknown optimizer {cfg['optimizer']!r} for the GPT; choose 'sgd' (plain minibatch steps) or 'adam'")
    if cfg["precision"] not in PRECISIONS:
        raise ValueError(f"unknown precision {cfg['precision']!r}; choose one of {PRECISIONS}")
    if cfg["tokenizer"] not in ("char", "bpe"):
        raise ValueError(f"unknown tokenizer {cfg['tokenizer']!r}; choose 'char' or 'bpe'")
    if cfg["tokenizer"] == "bpe" and integer(cfg["vocab_size"] or 512, "vocab_size") < 260:
        raise ValueError("a byte-level BPE needs vocab_size >= 260 (256 bytes + merges)")
    return cfg


@dataclass(frozen=True)
class TextData:
    """A shipped text, tokenized and split, with its n-gram yardsticks counted on the training part."""

    tokenizer: object  # ctxlab.corpus.CharTokenizer or BPETokenizer
    train: torch.Tensor
    held_out: torch.Tensor
    yardsticks: dict  # name (NGRAM_ORDERS) -> ctxlab.lm.NGramPredictor
    entropies: dict[str, float]  # held-out cross-entropy of each n-gram model

    @property
    def vocab_size(self) -> int:
        return self.tokenizer.vocab_size


def text_data(source: str = "shakespeare", tokenizer_kind: str = "char", vocab_size: int = 512,
              context: int = 1) -> TextData:
    """What every GPT experiment on text starts from (``source``: a shipped text or a UTF-8 file's path):
    tokens, the last 10 % held out, and the smoothed unigram/bigram/trigram models of the training part
    with their held-out cross-entropies. A text too short for windows of ``context`` tokens in its
    held-out tenth fails here, in one line, before anything is counted."""
    from ctxlab.corpus import load_text, tokenizer, train_val_split
    from ctxlab.lm import NGramPredictor
    from ctxlab.signatures import held_out_cross_entropies, ngram_tables

    text = load_text(source).text
    tok = tokenizer(tokenizer_kind, text, vocab_size=vocab_size)
    V = tok.vocab_size
    train_tokens, held_out = train_val_split(tok.encode(text))
    if len(held_out) < context + 2:
        raise ValueError(f"the text gives {len(train_tokens) + len(held_out)} tokens: too few for context {context} "
                         f"with 10 % held out; it needs at least {10 * (context + 2)}")
    tables = ngram_tables(train_tokens, V, max(NGRAM_ORDERS.values()))  # counted once for both uses
    yardsticks = {name: NGramPredictor.from_table(tables[n - 1], V) for name, n in NGRAM_ORDERS.items()}
    entropies = dict(zip(NGRAM_ORDERS, held_out_cross_entropies(tables, held_out, V)))
    return TextData(tok, train_tokens, held_out, yardsticks, entropies)  # the float64 tables (1 GB for a BPE trigram) are freed


def language_model(
    gammas=(1.0,),
    seeds=(0,),
    source: str = "shakespeare",
    profile: str | None = None,
    device=None,
    progress: bool | None = None,
    prompt: str = "\n",
    on_divergence: str = "raise",
    **overrides,
) -> LMResult:
    """Train TinyGPT on a shipped text (or a UTF-8 file: ``source`` is its path) for every (gamma, seed),
    measuring it against n-gram models."""
    from ctxlab.lm import TinyGPT, train_lm
    from ctxlab.signatures import bigram_signature, trigram_increment

    cfg = lm_settings(profile, overrides)
    data = text_data(source, cfg["tokenizer"], cfg["vocab_size"] or 512, context=cfg["context"])
    tok, V, train_tokens, held_out = data.tokenizer, data.vocab_size, data.train, data.held_out
    try:
        tok.encode(prompt)
    except ValueError:  # a character tokenizer of a text without the prompt's characters (say, no newline)
        prompt = tok.decode(train_tokens[:1])
    yardsticks, entropies = data.yardsticks, data.entropies
    g, s = ensemble_grid(gammas, seeds)
    model = TinyGPT(V, cfg["context"], d=cfg["d"], n_layers=cfg["n_layers"], n_heads=cfg["n_heads"], gamma=g, seed=s)
    sample_at = (0, cfg["steps"] // 10, cfg["steps"] // 3, cfg["steps"])
    start = time.perf_counter()
    traj = train_lm(model, train_tokens, cfg["steps"], eval_tokens=held_out, yardsticks=yardsticks,
                    batch_size=cfg["batch_size"], optimizer=cfg["optimizer"], lr=cfg["lr"], record_every=cfg["record_every"], device=device,
                    progress=progress, prompt=tok.encode(prompt), sample_at=sample_at, on_divergence=on_divergence,
                    precision=cfg["precision"])
    seconds = time.perf_counter() - start
    signatures = {"bigram": bigram_signature(train_tokens, V), "trigram": trigram_increment(train_tokens, V)}
    alignment = align_trajectory(traj, signatures, "cka", relative_to_init=True)
    band = shuffled_alignment_band(traj, signatures)
    samples = {step: [tok.decode(row) for row in traj.extras["samples"][:, i]] for i, step in enumerate(traj.config["sample_steps"])}
    tokens = cfg["steps"] * cfg["batch_size"] * cfg["context"] * len(g)
    cfg.update({"vocab": V, "source": source})
    return LMResult(traj, entropies, alignment, samples, cfg, seconds, tokens / seconds, band, tok)


def write_checkpoints(result: LMResult, folder: str | Path) -> list[Path]:
    """Every recorded embedding snapshot as a checkpoint folder in the Hugging Face layout, which
    ``ctxlab probe`` reads like anybody's: ``folder/step{N}/`` (``folder/g{γ}-s{seed}/step{N}/`` for
    several models) with ``model.safetensors`` (the table as ``embedding.weight``), ``tokenizer.json``
    and ``config.json``. Returns the folders written."""
    from safetensors.torch import save_file

    if result.tokenizer is None:
        raise ValueError("a recorded run keeps no tokenizer: train one with language_model() to write checkpoints")
    traj, folder = result.trajectory, Path(folder)
    tokenizer_json = result.tokenizer.to_tokenizers().to_str()
    written = []
    for k, (g, seed) in enumerate(zip(traj.gammas, traj.seeds)):
        base = folder if traj.n_models == 1 else folder / f"g{g:g}-s{seed}"
        for t, step in enumerate(traj.steps.tolist()):
            out = base / f"step{step}"
            out.mkdir(parents=True, exist_ok=True)
            save_file({"embedding.weight": traj.embeddings[k, t].contiguous().float()}, str(out / "model.safetensors"))
            (out / "tokenizer.json").write_text(tokenizer_json, encoding="utf-8")
            config = {"model_type": "ctxlab-tinygpt", "vocab_size": int(traj.embeddings.shape[2]),
                      "d": int(traj.embeddings.shape[3]), "gamma": g, "seed": seed, "step": step,
                      "source": result.config.get("source")}
            (out / "config.json").write_text(json.dumps(config, indent=1) + "\n", encoding="utf-8")
            written.append(out)
    return written

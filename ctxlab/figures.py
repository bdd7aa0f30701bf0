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


@register("00_welcome_staircase", "00_welcome", "The loss comes down in stairs, sooner at small γ")
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
        figure, numbers = entry.make(profile, device)
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

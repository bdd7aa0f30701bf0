"""``ctxlab figures``: the registry of headline figures, its outputs, and its command line."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

from ctxlab.cli import main
from ctxlab.figures import REGISTRY, FigureEntry, SkipFigure, jsonable, register, render_figures, select

ROOT = Path(__file__).resolve().parents[1]
CHEAP = "01_signatures_entropy_ladder"  # exact counts: no training


def test_every_entry_heads_a_lesson_and_makes_a_figure_and_numbers():
    lessons = {p.stem for p in (ROOT / "lessons").glob("*.py")}
    assert REGISTRY and all(e.lesson in lessons for e in REGISTRY.values())
    assert [e.lesson for e in select()] == sorted(e.lesson for e in REGISTRY.values())
    assert select(["03_staircase", "08_knobs"]) == [REGISTRY["03_staircase"], REGISTRY["08_knobs_phase_map"]]


def test_every_lesson_has_a_headline_figure():
    lessons = sorted(p.stem for p in (ROOT / "lessons").glob("*.py"))
    missing = [lesson for lesson in lessons if not any(e.lesson == lesson for e in REGISTRY.values())]
    assert not missing, f"lessons without a `ctxlab figures` entry (add one with @register in ctxlab/figures.py): {missing}"


def test_a_figure_that_cannot_run_here_is_skipped_with_its_reason(tmp_path, monkeypatch):
    def unavailable(profile, device):
        raise SkipFigure("install the thing")

    monkeypatch.setitem(REGISTRY, "01_zz_unavailable", FigureEntry("01_zz_unavailable", "01_signatures", "x", unavailable))
    lines = []
    done = render_figures(tmp_path, only=["01_signatures"], report=lines.append)
    assert [d["name"] for d in done] == [CHEAP]
    assert "[2/2] 01_zz_unavailable: skipped (install the thing)" in lines
    assert not (tmp_path / "01_zz_unavailable.png").exists() and "01_zz_unavailable" not in (tmp_path / "index.html").read_text()


def test_the_pretrained_figure_says_what_to_install_when_the_model_is_missing(monkeypatch):
    from ctxlab import pretrained

    monkeypatch.setattr(pretrained, "available", lambda: False)
    with pytest.raises(SkipFigure, match=pretrained.INSTALL):
        REGISTRY["10_pretrained_frequency_alignment"].make("quick", None)


def test_register_refuses_a_second_entry_or_a_bad_name():
    with pytest.raises(ValueError, match="registered already"):
        register(CHEAP, "01_signatures", "again")(lambda profile, device: None)
    with pytest.raises(ValueError, match="file stem"):
        register("a/b", "01_signatures", "bad")


def test_jsonable_writes_tensors_and_dataclasses():
    @dataclass
    class Run:
        loss: torch.Tensor
        levels: tuple

    assert jsonable({"run": Run(torch.tensor([1.0, 2.0]), (0.5,)), 3: [torch.tensor(2)]}) == \
        {"run": {"loss": [1.0, 2.0], "levels": [0.5]}, "3": [2]}


def test_a_figure_its_numbers_and_the_gallery(tmp_path):
    lines = []
    done = render_figures(tmp_path, only=[CHEAP], report=lines.append)
    assert [d["name"] for d in done] == [CHEAP]
    assert (tmp_path / f"{CHEAP}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    record = json.loads((tmp_path / f"{CHEAP}.json").read_text())  # strict: json.loads refuses nothing here
    ladder = record["numbers"]["ladder"]
    assert [s["order"] for s in ladder] == list(range(len(ladder)))
    assert all(a["entropy"] > b["entropy"] for a, b in zip(ladder, ladder[1:]))  # each order is worth something
    gallery = (tmp_path / "index.html").read_text()
    assert f'src="{CHEAP}.png"' in gallery and f'href="{CHEAP}.json"' in gallery and "http" not in gallery
    assert lines[0].startswith("[1/1] " + CHEAP) and "gallery" in lines[-1]


def test_the_command_names_an_unknown_figure_before_training(tmp_path, capsys):
    assert main(["figures", "--only", "no_such_figure", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("ctxlab figures: error: --only: no figure or lesson named ['no_such_figure']")
    assert not list(tmp_path.iterdir())


def test_the_command_writes_the_gallery(tmp_path, capsys):
    assert main(["figures", "--only", CHEAP, "--device", "cpu", "--out", str(tmp_path / "figs")]) == 0
    assert "[1/1]" in capsys.readouterr().out
    assert sorted(p.name for p in (tmp_path / "figs").iterdir()) == [f"{CHEAP}.json", f"{CHEAP}.png", "index.html"]


def test_every_thumbnail_was_made_by_the_current_code():
    from ctxlab.gallery import stale

    assert stale(ROOT / "gallery", REGISTRY, ROOT) == {}, "stale thumbnails: run `python site/thumbnails.py --only NAME ...`"


def test_a_changed_module_or_a_replaced_thumbnail_is_caught(tmp_path):
    from ctxlab.gallery import MANIFEST, file_sha, fingerprint, maker_source, stale

    registry = {"fig": REGISTRY[CHEAP], "other": REGISTRY[CHEAP]}
    (tmp_path / "ctxlab").mkdir()
    (tmp_path / "ctxlab" / "plot.py").write_text("x = 1\n")
    (tmp_path / "gallery").mkdir()
    (tmp_path / "gallery" / "fig.png").write_bytes(b"png")
    entry = {"code": fingerprint(["ctxlab/plot.py"], tmp_path, maker_source(REGISTRY[CHEAP])), "modules": ["ctxlab/plot.py"], "numbers": "",
             "thumbnail": file_sha(tmp_path / "gallery" / "fig.png")}
    (tmp_path / "gallery" / MANIFEST).write_text(json.dumps({"fig": entry}))
    assert stale(tmp_path / "gallery", {"fig": registry["fig"]}, tmp_path) == {}
    assert "no thumbnail" in stale(tmp_path / "gallery", registry, tmp_path)["other"]
    (tmp_path / "ctxlab" / "plot.py").write_text("x = 2\n")
    assert "changed" in stale(tmp_path / "gallery", {"fig": registry["fig"]}, tmp_path)["fig"]
    (tmp_path / "ctxlab" / "plot.py").write_text("x = 1\n")
    (tmp_path / "gallery" / "fig.png").write_bytes(b"other png")
    assert "not the one" in stale(tmp_path / "gallery", {"fig": registry["fig"]}, tmp_path)["fig"]


def test_the_readme_shows_every_figure():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for entry in REGISTRY.values():
        assert (ROOT / "gallery" / f"{entry.name}.png").is_file(), f"no thumbnail: run site/thumbnails.py ({entry.name})"
        assert f'src="gallery/{entry.name}.png"' in readme

"""The portability check's parts: the opt-in init jitter, and finding the checked cells that flipped."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
import torch
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from ctxlab.course.portability import MODES, Sanitizer, checked_outputs, flips
from ctxlab.env import JITTER_VARIABLE
from ctxlab.models import EmbMLP, small_init

SANITIZE = Sanitizer(Path(__file__).parent / "nbval_sanitize.cfg")


def _init(seed: int = 0) -> torch.Tensor:
    return small_init((64, 32), 32, 1.0, torch.Generator().manual_seed(seed))


def test_jitter_is_off_by_default_and_tiny_when_on(monkeypatch):
    plain = _init()
    torch.testing.assert_close(plain, torch.randn(64, 32, generator=torch.Generator().manual_seed(0)) / 32,
                               rtol=0, atol=0)
    monkeypatch.setenv(JITTER_VARIABLE, "1")
    jittered = _init()
    relative = (jittered / plain - 1).abs()
    assert 0 < relative.max() < 1e-5 and relative.mean() > 1e-7  # 1e-6 z: a few 1e-6 at most
    torch.testing.assert_close(_init(), jittered, rtol=0, atol=0)  # the same init, jittered alike
    monkeypatch.setenv(JITTER_VARIABLE, "2")
    assert not torch.equal(_init(), jittered)  # another seed, another jitter


def test_jitter_keeps_same_seed_same_model(monkeypatch):
    monkeypatch.setenv(JITTER_VARIABLE, "3")
    a, b = EmbMLP(8, 3, 4, d=8, hidden=16, gamma=1.0, seed=5), EmbMLP(8, 3, 4, d=8, hidden=16, gamma=1.0, seed=5)
    for (name, p), q in zip(a.named_parameters(), b.parameters()):
        torch.testing.assert_close(p, q, rtol=0, atol=0, msg=name)


def test_a_bad_jitter_value_is_explained(monkeypatch):
    monkeypatch.setenv(JITTER_VARIABLE, "yes")
    with pytest.raises(ValueError, match="CTXLAB_INIT_JITTER='yes': expected an integer seed"):
        _init()


def _notebook(*outputs: tuple[str, str]):
    """Code cells (source, printed text); the sources decide which are checked."""
    cells = [new_markdown_cell("# a lesson")]
    for source, text in outputs:
        cell = new_code_cell(source)
        cell.outputs = [new_output("stream", name="stdout", text=text)]
        cells.append(cell)
    return new_notebook(cells=cells)


def test_only_checked_cells_are_compared_after_sanitizing():
    stored = _notebook(("# NBVAL_CHECK_OUTPUT\nprint(x)", "loss 0.693147 at 0x7f00\n"),
                       ("print(y)", "took 3.2 s\n"), ("# NBVAL_CHECK_OUTPUT\nprint(z)", "ok: True\n"))
    expected = checked_outputs(stored, SANITIZE)
    assert expected == {1: "loss 0.6931 at 0xADDRESS\n", 3: "ok: True\n"}
    same = _notebook(("# NBVAL_CHECK_OUTPUT\nprint(x)", "loss 0.693149 at 0x7fff\n"),
                     ("print(y)", "took 9.9 s\n"), ("# NBVAL_CHECK_OUTPUT\nprint(z)", "ok: True\n"))
    assert flips(expected, same, {}, SANITIZE) == []
    flipped = _notebook(("# NBVAL_CHECK_OUTPUT\nprint(x)", "loss 0.693147 at 0x1\n"),
                        ("print(y)", "other\n"), ("# NBVAL_CHECK_OUTPUT\nprint(z)", "ok: False\n"))
    found = flips(expected, flipped, {2: "ValueError: boom"}, SANITIZE)
    assert [f.cell for f in found] == [2, 3]
    assert found[0].describe() == "cell 2 raised ValueError: boom"
    assert found[1].describe() == "cell 3: expected 'ok: True', got 'ok: False'"


def test_the_modes_are_the_issue_s_paths():
    assert MODES["compatible"] == {"MKL_CBWR": "COMPATIBLE", "ATEN_CPU_CAPABILITY": "default",
                                   "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    assert MODES["avx2-2t"]["MKL_CBWR"] == "AVX2" and MODES["avx2-2t"]["OMP_NUM_THREADS"] == "2"
    assert [MODES[f"jitter-{s}"][JITTER_VARIABLE] for s in (1, 2, 3)] == ["1", "2", "3"]


def test_the_benchmark_reads_a_real_lesson():
    nb = nbformat.read(Path(__file__).parents[1] / "lessons" / "00_welcome.ipynb", as_version=4)
    checked = checked_outputs(nb, SANITIZE)
    assert checked and all(text.strip() for text in checked.values())


def test_the_checked_cells_are_the_ones_nbval_checks():
    """What this module compares is what nbval compares under --nbval-lax, cell by cell, in every
    lesson; and no cell carries a marker nbval would silently ignore (a tag spelt like the comment)."""
    from nbval.plugin import find_comment_markers, find_metadata_tags, metadata_tags

    from ctxlab.course.portability import is_checked

    root = Path(__file__).parents[1]
    for path in sorted((root / "lessons").glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        for i, cell in enumerate(nb.cells):
            ignored = [t for t in cell.metadata.get("tags", []) if "nbval" in t.lower() and t not in metadata_tags]
            assert not ignored, f"{path.name} cell {i}: nbval ignores the tag(s) {ignored}"
            if cell.cell_type == "code":
                options = {**dict(find_metadata_tags(cell.metadata)), **dict(find_comment_markers(cell.source))}
                assert is_checked(cell) == (options.get("check") is True), f"{path.name} cell {i}"

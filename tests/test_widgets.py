"""Dashboards without a frontend: compute/draw functions, slider changes, the background path.

Traitlets fire observers synchronously, so setting ``.value`` runs the redraw; we compare the
last drawn Figure's data and PNG bytes (an ``Output`` captures nothing without a frontend).
"""

from __future__ import annotations

import base64
import dataclasses

import matplotlib

matplotlib.use("Agg")

from dataclasses import replace

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from ctxlab.widgets import (  # noqa: E402
    AttentionSettings,
    SignatureSettings,
    SweepSettings,
    attention_explorer,
    compute_attention_sweep,
    compute_signature,
    compute_sweep,
    draw_attention,
    draw_signature,
    draw_staircase,
    signature_explorer,
    staircase_explorer,
    staircase_sweep,
    sweep_settings,
)

TINY = SweepSettings(task_args=(("block", 3),), gammas=(0.75, 1.0), seeds=(0, 1), steps=60, d=8, hidden=16,
                     record_every=10)
TINY_ATTN = AttentionSettings(task_args=(("n_ctx", 2),), gammas=(0.75, 1.0), steps=40, d=8, hidden=16,
                              record_every=10)


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Tiny models on a shared 2-core box: one torch thread is ~100x faster than two under load."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def sweep():
    return staircase_sweep(TINY)


def _lines(fig):
    return [np.asarray(line.get_ydata(), dtype=float).copy() for ax in fig.axes for line in ax.get_lines()]


def _shown(dash) -> bytes:
    """The PNG the dashboard's Output holds (its state, which is what a frontend renders)."""
    import base64

    (bundle,) = dash.out.outputs
    return base64.b64decode(bundle["data"]["image/png"])


def _offsets(fig):
    return [c.get_offsets().copy() for ax in fig.axes for c in ax.collections]


def test_compute_sweep_shapes(sweep):
    G, S, T = 2, 2, 7
    assert sweep.loss.shape == (G, S, T)
    assert sweep.embeddings.shape == (G, S, T, 9, 8)
    assert sweep.alignment.shape == (G, S, 3, T)
    assert sweep.orders == [1, 2, 3]
    assert sweep.steps.tolist() == [0, 10, 20, 30, 40, 50, 60]
    assert len(sweep.levels) == 4 and sweep.levels[0] > sweep.levels[-1]
    assert bool(torch.isfinite(sweep.alignment).all())


def test_sweep_is_cached_and_deterministic(sweep):
    assert staircase_sweep(TINY) is sweep
    again = compute_sweep(TINY)
    torch.testing.assert_close(again.loss, sweep.loss)


def test_disk_cache_round_trip(tmp_path):
    settings = dataclasses.replace(TINY, steps=20, gammas=(1.0,), seeds=(0,))
    first = staircase_sweep(settings, cache_dir=tmp_path)
    assert len(list(tmp_path.glob("*.pt"))) == 1
    from ctxlab.widgets.staircase_sweep import _SWEEPS

    _SWEEPS.clear()
    loaded = staircase_sweep(settings, cache_dir=tmp_path)
    assert loaded is not first
    torch.testing.assert_close(loaded.loss, first.loss)


class _RunsCode:
    """What a planted cache file could hold: unpickling it would call ``os.system``."""

    def __reduce__(self):
        import os

        return os.system, ("touch ran-code",)


@pytest.mark.parametrize("legacy", [False, True], ids=["zip", "plain pickle"])
def test_a_planted_pickle_is_refused_not_run(tmp_path, monkeypatch, legacy):
    """A cache folder someone else can write to must never run code in the student's kernel."""
    import pickle

    from ctxlab.widgets._common import _disk_path
    from ctxlab.widgets.staircase_sweep import _SWEEPS

    monkeypatch.chdir(tmp_path)
    settings = dataclasses.replace(TINY, steps=20, gammas=(1.0,), seeds=(0,))
    path = _disk_path(settings, tmp_path)
    if legacy:
        path.write_bytes(pickle.dumps(_RunsCode()))
    else:
        torch.save(_RunsCode(), path)
    assert not (tmp_path / "ran-code").exists()  # writing it ran nothing
    _SWEEPS.clear()
    with pytest.raises(ValueError, match="refused to load .*not a data-only ctxlab sweep"):
        staircase_sweep(settings, cache_dir=tmp_path)
    assert not (tmp_path / "ran-code").exists()


def test_a_foreign_data_file_is_refused(tmp_path):
    from ctxlab.widgets._common import _disk_path
    from ctxlab.widgets.staircase_sweep import _SWEEPS

    settings = dataclasses.replace(TINY, steps=20, gammas=(1.0,), seeds=(0,))
    torch.save({"type": "AttentionSweep", "fields": {}}, _disk_path(settings, tmp_path))
    _SWEEPS.clear()
    with pytest.raises(ValueError, match="not a cached StaircaseSweep"):
        staircase_sweep(settings, cache_dir=tmp_path)


def test_bad_settings_are_explained():
    with pytest.raises(ValueError, match="toggles between"):
        sweep_settings(optimizer="lbfgs")
    with pytest.raises(ValueError, match="at least one"):
        compute_sweep(dataclasses.replace(TINY, gammas=()))


def test_draw_staircase_depends_on_selection(sweep):
    a = draw_staircase(sweep, 0, 0, 2)
    b = draw_staircase(sweep, 1, 0, 2)
    c = draw_staircase(sweep, 0, 0, 5)
    assert len(a.axes) == 3
    assert any(not np.allclose(x, y) for x, y in zip(_lines(a), _lines(b)))
    assert any(not np.allclose(x, y) for x, y in zip(_offsets(a), _offsets(c)))
    only_first = draw_staircase(sweep, 0, 0, 2, orders=[1])
    assert [line.get_label() for line in only_first.axes[1].get_lines() if line.get_visible()
            and line.get_label().startswith("order")] == ["order 1"]
    with pytest.raises(IndexError, match="step_index"):
        draw_staircase(sweep, 0, 0, 99)
    with pytest.raises(ValueError, match="orders"):
        draw_staircase(sweep, 0, 0, 0, orders=[4])


def test_staircase_explorer_sliders_redraw(sweep):
    dash = staircase_explorer(TINY)
    assert dash.redraws == 1 and dash.png.startswith(b"\x89PNG")
    before_lines, before_png = _lines(dash.figure), dash.png
    dash.gamma.value = 0.75 if dash.gamma.value != 0.75 else 1.0
    assert dash.redraws == 2 and _shown(dash) == dash.png
    assert any(not np.allclose(x, y) for x, y in zip(before_lines, _lines(dash.figure)))
    assert dash.png != before_png
    before_points, before_png = _offsets(dash.figure), dash.png
    dash.step.value = 60
    assert dash.png != before_png
    assert any(not np.allclose(x, y) for x, y in zip(before_points, _offsets(dash.figure)))
    dash.orders.value = (2,)
    assert [t.get_text() for t in dash.figure.axes[1].get_legend().get_texts()] == ["order 2"]
    before_lines, before_png = _lines(dash.figure), dash.png
    dash.seed.value = 1
    assert any(not np.allclose(x, y) for x, y in zip(before_lines, _lines(dash.figure)))
    assert dash.png != before_png
    bundle = dash._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert base64.b64decode(bundle["image/png"]) == dash.png  # the view shown now (at build time: the first)


def test_train_gamma_in_background_adds_it_to_the_slider(sweep):
    dash = staircase_explorer(TINY)
    redraws = dash.redraws
    job = dash.train_gamma(0.9)
    job.join(timeout=60)
    assert job.error is None and not job.running
    assert 0.9 in [v for _, v in dash.gamma.options]
    assert dash.gamma.value == 0.9 and dash.redraws > redraws
    assert dash.progress.value == 1.0 and "done" in dash.status.value
    assert dash.out.outputs and "image/png" in dash.out.outputs[0]["data"]  # the worker-thread redraw
    assert dash.train_gamma(0.9) is None  # already there: just selected
    with pytest.raises(ValueError, match="positive"):
        dash.train_gamma(-1.0)


def test_optimizer_toggle_trains_the_other_sweep_in_background(sweep):
    dash = staircase_explorer(TINY)
    dash.optimizer.value = "adam"
    dash.job.join(timeout=60)
    assert dash.job.error is None
    assert dash._current == "adam" and "adam" in dash.figure.axes[0].get_title()
    dash.optimizer.value = "gd"  # cached: switches at once, no job
    assert "gd" in dash.figure.axes[0].get_title()


def test_signature_compute_draw_and_explorer():
    view = compute_signature(SignatureSettings(task_args=(("block", 3),), order=2))
    assert view.signature.matrix.shape[0] == 9 and view.signature.order == 2
    fig = draw_signature(view, 4)
    assert len(fig.axes) == 4  # row, cosine matrix and its colour bar, ladder
    with pytest.raises(IndexError, match="token"):
        draw_signature(view, 9)
    assert draw_signature(view, 4).axes[0].patches[0].get_data().values.shape == (view.signature.matrix.shape[1],)
    dash = signature_explorer(SignatureSettings(task_args=(("block", 3),)))
    row = dash.figure.axes[0].patches[0].get_data().values.copy()
    png = dash.png
    dash.token.value = 4
    assert not np.array_equal(row, dash.figure.axes[0].patches[0].get_data().values)
    assert dash.png != png and _shown(dash) == dash.png
    before = dash.figure.axes[1].images[0].get_array().copy()
    dash.kind.value = "context"
    assert not np.array_equal(before, dash.figure.axes[1].images[0].get_array())
    redraws = dash.redraws
    dash.order.value = 3  # a context signature of order 3 needs 4 positions: explained, not raised
    assert "at most order 2" in dash.status.value and dash.redraws == redraws


def test_attention_compute_draw_and_explorer():
    result = compute_attention_sweep(TINY_ATTN, progress=False)
    # a pointer task: the key's attention over the 3 positions, one row per position it names (2)
    assert result.pointer and result.attention.shape == (2, 1, 5, 2, 3) and result.qk_norm.shape == (2, 1, 5)
    torch.testing.assert_close(result.attention.sum(-1), torch.ones(2, 1, 5, 2))
    fig = draw_attention(result, 1, 4)
    assert len(fig.axes) == 4 and fig.axes[0].get_ylabel() == "the key names"  # map, loss, qk, qk vs loss
    assert "seed 0 (red: step" in fig.axes[3].get_title()
    other = compute_attention_sweep(dataclasses.replace(TINY_ATTN, task="partner", task_args=(), gammas=(1.0,)), progress=False)
    assert not other.pointer and other.attention.shape[-2:] == (4, 4)  # every query, averaged over the data
    assert draw_attention(other, 0, 4).axes[0].get_ylabel() == "query position"
    dash = attention_explorer(TINY_ATTN)
    before = dash.figure.axes[0].images[0].get_array().copy()
    dash.step.value = 0
    assert not np.array_equal(before, dash.figure.axes[0].images[0].get_array())
    before = _lines(dash.figure)
    dash.gamma.value = 1
    assert any(not np.allclose(x, y) for x, y in zip(before, _lines(dash.figure)))


def _pixels(png: bytes) -> np.ndarray:
    import io

    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))


def test_partial_redraws_match_a_fresh_render(sweep):
    """The dashboards redraw only what changed; the pixels must equal a from-scratch render."""
    from ctxlab.widgets.signatures import SignatureFigure
    from ctxlab.widgets.staircase import StaircaseView

    dash = staircase_explorer(TINY)
    for orders, gamma, step in [((1,), 0.75, 30), ((2, 3), 1.0, 60), ((1, 2, 3), 0.75, 0)]:
        dash.orders.value, dash.gamma.value, dash.step.value = orders, gamma, step
        fresh = StaircaseView(sweep, blit=True)
        fresh.update(sweep, sweep.gammas.index(gamma), 0, step // 10, orders)
        np.testing.assert_array_equal(_pixels(fresh.render_png()), _pixels(dash.png))
    block3 = (("block", 3),)
    sig = signature_explorer(SignatureSettings(task_args=block3))
    for order, kind, form, token in [(2, "label", "raw", 4), (1, "context", "centered", 7), (3, "label", "incremental", 1)]:
        sig.order.value, sig.kind.value, sig.form.value, sig.token.value = order, kind, form, token
        fresh = SignatureFigure(sig.view.tokens, blit=True)
        fresh.update(compute_signature(SignatureSettings(task_args=block3, order=order, kind=kind, form=form)), token)
        np.testing.assert_array_equal(_pixels(fresh.render_png()), _pixels(sig.png))


def test_explorer_survives_the_build_kernel(tmp_path):
    """Regression: ``ctxlab build`` runs lessons with nbclient (store_widget_state=False), whose
    emulation of a capturing ``Output`` raised a KeyError and killed the kernel. The dashboards
    fill their Output by a state update instead, so a lesson cell showing one must just run."""
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook

    from ctxlab.course import execute

    nb = new_notebook(cells=[new_code_cell(
        "from ctxlab.widgets import SignatureSettings, SweepSettings, signature_explorer, staircase_explorer\n"
        f"dash = staircase_explorer({TINY!r})\n"
        "dash.gamma.value = 0.75\n"
        "dash"), new_code_cell("signature_explorer(SignatureSettings(task_args=(('block', 3),)))"),
        new_code_cell("print('still alive')")])
    execute(nb, tmp_path)
    assert nb.cells[-1].outputs[0]["text"] == "still alive\n"
    for cell in nb.cells[:2]:  # the widget for a live kernel; a picture and a note for everywhere else
        data = cell.outputs[0]["data"]
        assert "application/vnd.jupyter.widget-view+json" in data
        assert base64.b64decode(data["image/png"])[:8] == b"\x89PNG\r\n\x1a\n"
        assert data["image/png"] in data["text/html"] and "running Python kernel" in data["text/html"]
        assert "colab.research.google.com/github/" in data["text/html"] and "mybinder.org/v2/gh/" in data["text/html"]
    nbformat.validate(nb)


def test_explorer_of_a_finished_staircase_run():
    """A lesson's own staircase() result is explored as is (no training controls), and its settings
    train the same run again."""
    from ctxlab.experiments import staircase
    from ctxlab.widgets import sweep_from_result

    result = staircase(gammas=(0.75, 1.0), seeds=(0, 1), steps=20, profile="quick", progress=False)
    sweep = sweep_from_result(result)
    assert sweep.gammas == (0.75, 1.0) and sweep.seeds == (0, 1)
    torch.testing.assert_close(sweep.loss[1, 0], result.trajectory.loss[2])
    torch.testing.assert_close(sweep.alignment[0, 1, 2], result.shares[1, :, 2].float())
    again = compute_sweep(sweep.settings)  # one pipeline: the explorer's training is staircase()
    torch.testing.assert_close(again.loss, sweep.loss)
    torch.testing.assert_close(again.alignment, sweep.alignment)
    dash = staircase_explorer(result=result)
    assert dash.train_button.disabled and dash.optimizer.disabled
    png = dash.png
    dash.gamma.value = 0.75
    assert dash.png != png
    with pytest.raises(ValueError, match="finished run"):
        dash.train_gamma(0.9)
    with pytest.raises(ValueError, match="not both"):
        staircase_explorer(TINY, result=result)


def test_staircase_explorer_names_a_rest_at_no_drawn_level(sweep):
    from ctxlab.widgets.staircase import StaircaseView

    H0, H1 = sweep.levels[0], sweep.levels[1]
    between = H1 + 0.2 * (H0 - H1)  # a level nobody predicts: the chosen seed rests there for records 2-4
    assert all(abs(between - h) > 0.02 for h in [*sweep.levels, *(h for _, h in sweep.sub_levels)])
    T = sweep.steps.numel()
    assert T >= 6
    curve = torch.full((T,), H0, dtype=sweep.loss.dtype)
    curve[2:] = between
    curve[5:] = sweep.levels[-1]
    loss = sweep.loss.clone()
    loss[0, 0] = curve
    view = StaircaseView(replace(sweep, loss=loss))
    view.update(replace(sweep, loss=loss), 0, 0, 0)
    shown = [(float(line.get_ydata()[0]), label.get_text()) for line, label in zip(view.rest_lines, view.rest_labels)
             if line.get_visible()]
    assert shown == [(pytest.approx(between), f"rest (measured) = {between:.3f}")]
    view.update(replace(sweep, loss=loss), 0, 1, 0)  # another seed: its own curve's rests, the old line gone
    from ctxlab.plots import measured_rests

    expected = [level for level, _, _ in measured_rests(sweep.steps, loss[0, 1][None], view.named)]
    assert [float(line.get_ydata()[0]) for line in view.rest_lines if line.get_visible()] == pytest.approx(expected)

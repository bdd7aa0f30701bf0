"""The gamma x learning-rate phase map of lesson 08: one batched run, measured per cell."""

from __future__ import annotations

import math

import pytest
import torch

from ctxlab.experiments.phase_map import _phase_run, _phase_settings, phase_map, phase_map_one_by_one
from ctxlab.plots import phase_map_figure

SMALL = {"steps": 120, "record_every": 5, "d": 8, "hidden": 16, "block": 3}


@pytest.fixture(scope="module")
def small_map():
    torch.set_num_threads(1)
    return phase_map(profile="quick", gammas=(0.5, 1.0), lrs=(1.0, 4.0, 1e4), progress=False, **SMALL)


def test_shapes_and_cell_lookup(small_map):
    pm = small_map
    for grid in (pm.wait, pm.plateau, pm.final, pm.diverged):
        assert grid.shape == (2, 3)
    assert pm.trajectory.n_models == 6
    assert pm.cell(1.0, 4.0) == 4
    assert pm.trajectory.gammas[pm.cell(1.0, 4.0)] == 1.0
    assert pm.trajectory.config["lr"][pm.cell(1.0, 4.0)] == 4.0
    assert pm.seconds > 0


def test_divergent_cells_are_nan_not_errors(small_map):
    pm = small_map
    assert pm.diverged[:, 2].all() and not pm.diverged[:, :2].any()
    assert pm.final[:, 2].isnan().all() and pm.plateau[:, 2].isnan().all() and pm.wait[:, 2].isnan().all()
    assert torch.isfinite(pm.final[:, :2]).all()
    fig = phase_map_figure(pm)
    texts = [t.get_text() for ax in fig.axes for t in ax.texts]
    assert texts.count("div") == 4  # two diverged cells in each of the two panels


def test_small_init_rests_longer(small_map):
    pm = small_map
    assert pm.plateau[1, 0] > pm.plateau[0, 0]  # gamma 1 rests at ln 3, gamma 0.5 hardly
    assert math.isclose(pm.levels[0], math.log(3), abs_tol=1e-6)


def test_batched_cell_equals_a_run_on_its_own(small_map):
    cfg = _phase_settings("quick", dict(SMALL))
    alone = _phase_run(cfg, [1.0], [4.0], seed=0, device="cpu", progress=False)
    batched = small_map.trajectory.loss[small_map.cell(1.0, 4.0)]
    torch.testing.assert_close(alone.loss[0], batched, atol=1e-5, rtol=0)


def test_one_by_one_times_each_cell():
    seconds = phase_map_one_by_one([(1.0, 1.0), (0.5, 2.0)], profile="quick", steps=10, d=4, hidden=4, block=3)
    assert len(seconds) == 2 and all(s > 0 for s in seconds)


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="unknown settings"):
        phase_map(profile="quick", learning_rates=(1.0,))
    with pytest.raises(ValueError, match="at least one"):
        phase_map(profile="quick", gammas=())

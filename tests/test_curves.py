"""ctxlab.synthetic: synthetic curves put their treads, slides and spikes where they are asked to."""

from __future__ import annotations

import pytest
import torch

from ctxlab.synthetic import spike, staircase_curve
from ctxlab.rungs import measure_rungs

LEVELS = [0.6931, 0.6109, 0.5554, 0.4737]


def test_treads_sit_on_their_levels_and_drop_at_their_steps():
    steps = torch.arange(0, 2001, 5)
    loss = staircase_curve(steps, [(LEVELS[0],), (LEVELS[1], 300), (LEVELS[2], 800), (LEVELS[3], 1400)], noise=0.0)
    assert loss.dtype == torch.float64
    assert float(loss[0]) == pytest.approx(LEVELS[0], abs=1e-9)
    assert float(loss[steps == 550]) == pytest.approx(LEVELS[1], abs=1e-9)
    assert float(loss[steps == 300]) == pytest.approx((LEVELS[0] + LEVELS[1]) / 2, abs=1e-12)  # the drop's midpoint
    assert float(loss[-1]) == pytest.approx(LEVELS[3], abs=1e-9)
    assert bool((loss.diff() <= 0).all())
    read = measure_rungs(steps, loss, LEVELS)
    assert min(read.dwells()) >= 250 and read.rise == 0.0 and read.ends_on == 3


def test_a_wide_drop_slides_through_a_level_without_resting_on_it():
    steps = torch.arange(0, 2001, 5)
    loss = staircase_curve(steps, [(LEVELS[0],), (0.585, 600, 120)], noise=0.0)
    assert measure_rungs(steps, loss, LEVELS).dwells()[1] == 0


def test_noise_is_seeded_and_of_the_asked_size():
    steps = torch.arange(0, 1001)
    a = staircase_curve(steps, [(0.5,)], noise=1e-3, seed=3)
    assert torch.equal(a, staircase_curve(steps, [(0.5,)], noise=1e-3, seed=3))
    assert not torch.equal(a, staircase_curve(steps, [(0.5,)], noise=1e-3, seed=4))
    assert float((a - 0.5).std()) == pytest.approx(1e-3, rel=0.1)


def test_spike_adds_a_bump_of_the_asked_height_where_asked():
    steps = torch.arange(0, 501)
    flat = staircase_curve(steps, [(0.6,)], noise=0.0)
    bumped = spike(steps, flat, at=200, height=0.05)
    assert int((bumped - flat).argmax()) == 200
    assert float((bumped - flat).max()) == pytest.approx(0.05)
    assert float((bumped - flat)[0]) < 1e-12


@pytest.mark.parametrize(("treads", "message"), [
    ([], "start level"),
    ([(0.6,), (0.5,)], "level, at"),
    ([(0.6,), (0.5, 10, 0.0)], "width"),
])
def test_bad_treads_are_named(treads, message):
    with pytest.raises(ValueError, match=message):
        staircase_curve(torch.arange(10), treads)

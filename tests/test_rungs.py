"""Reading loss curves rung by rung (ctxlab.rungs) and the order shares of an embedding."""

from __future__ import annotations

import pytest
import torch

from ctxlab.align import order_shares
from ctxlab.rungs import longest_tread_at, measure_rungs, measure_runs, shelves, stair_onsets, treads, unnamed_rests
from ctxlab.signatures import label_signature
from ctxlab.tasks import hierarchy_task

LEVELS = [1.0, 0.6, 0.2]
STEPS = torch.arange(0, 1001, 5)


def steps_curve(*treads) -> torch.Tensor:
    """Flat treads (level, from_step), joined by instant drops."""
    loss = torch.full(STEPS.shape, treads[0][0], dtype=torch.float64)
    for level, start in treads[1:]:
        loss[STEPS >= start] = level
    return loss


def test_a_clean_staircase_rests_on_every_rung():
    read = measure_rungs(STEPS, steps_curve((1.0, 0), (0.6, 200), (0.2, 600)), LEVELS)
    assert read.dwells() == [195, 395, 400]
    assert read.onsets() == [0, 200, 600]
    assert [r.span for r in read.rungs] == [(0, 195), (200, 595), (600, 1000)]
    assert read.rungs[1].middle == 397 and read.rise == 0.0 and read.ends_on == 2


def test_a_slide_through_a_level_is_not_a_rest():
    slide = torch.linspace(1.0, 0.2, len(STEPS), dtype=torch.float64)  # 4e-3 nats per step: never flat
    read = measure_rungs(STEPS, slide, LEVELS)
    assert read.dwells() == [0, 0, 0]
    assert read.onsets()[1] > 0  # it still comes down past each midpoint
    slow = torch.linspace(0.65, 0.55, len(STEPS), dtype=torch.float64)  # 1e-4 per step: at the flatness limit
    assert measure_rungs(STEPS, slow, LEVELS, flat=5e-5).rungs[1].dwell == 0


def test_an_unpredicted_level_is_not_credited_to_its_neighbours():
    read = measure_rungs(STEPS, steps_curve((1.0, 0), (0.8, 200), (0.2, 600)), LEVELS)
    assert read.rungs[1].dwell == 0 and read.rungs[1].span is None
    assert read.onsets()[1] == 600  # 0.8 is the midpoint itself, not below it: the onset waits for 0.2


def test_rise_is_the_largest_climb_back_and_the_end_is_named():
    loss = steps_curve((1.0, 0), (0.6, 200), (0.3, 500), (0.45, 700))
    read = measure_rungs(STEPS, loss, LEVELS)
    assert read.rise == pytest.approx(0.15) and read.ends_on is None and read.final == pytest.approx(0.45)
    never = measure_rungs(STEPS, steps_curve((1.0, 0), (0.6, 300)), LEVELS)
    assert never.onsets() == [0, 300, -1] and never.ends_on == 1


def test_irregular_steps_count_training_steps_not_records():
    steps = torch.tensor([0, 10, 20, 100, 200, 210])
    loss = torch.tensor([1.0, 1.0, 1.0, 0.6, 0.6, 0.6], dtype=torch.float64)
    read = measure_rungs(steps, loss, LEVELS)
    assert read.dwells()[:2] == [20, 110]


def test_measure_runs_matches_one_by_one_and_onsets_agree():
    losses = torch.stack([steps_curve((1.0, 0), (0.6, 200), (0.2, 600)), steps_curve((1.0, 0), (0.6, 50))])
    reads = measure_runs(STEPS, losses, LEVELS)
    assert [r.onsets()[1:] for r in reads] == stair_onsets(STEPS, losses, LEVELS).tolist()


@pytest.mark.parametrize(("args", "match"), [
    ((STEPS, torch.ones(5), LEVELS), "recorded steps"),
    ((STEPS, steps_curve((1.0, 0)), [0.2, 0.6]), "decreasing"),
    ((STEPS.flip(0), steps_curve((1.0, 0)), LEVELS), "increasing"),
    ((STEPS, torch.full(STEPS.shape, float("nan")), LEVELS), "diverged"),
    ((STEPS, torch.ones(2, len(STEPS)), LEVELS), "one curve"),
])
def test_bad_input_is_named(args, match):
    with pytest.raises(ValueError, match=match):
        measure_rungs(*args)


def test_order_shares_separate_the_orders():
    data = hierarchy_task(block=8, n_values=2).population
    sigs = [label_signature(data, k, "incremental") for k in (1, 2, 3)]
    only_order_1 = sigs[0].matrix.double() @ torch.randn(sigs[0].matrix.shape[1], 6, dtype=torch.float64)
    shares, chance = order_shares(only_order_1, sigs)
    assert shares.tolist() == pytest.approx([1.0, 0.0, 0.0], abs=1e-9)
    assert chance == pytest.approx([1 / 23, 1 / 23, 1 / 23])
    random = torch.randn(200, 24, 16, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    assert order_shares(random, sigs)[0].mean(0).tolist() == pytest.approx(chance, abs=0.01)
    with pytest.raises(ValueError, match="at least one signature"):
        order_shares(only_order_1, [])


def test_treads_find_every_rest_predicted_or_not():
    steps = torch.arange(0, 1001, 5)
    # rests at 1.0 (steps 0-200), a quick drop, an unpredicted rest at 0.8 (300-600), a drop, rest at 0.5
    loss = torch.full((len(steps),), 0.5, dtype=torch.float64)
    loss[steps <= 200] = 1.0
    loss[(steps > 200) & (steps < 300)] = torch.linspace(1.0, 0.8, int(((steps > 200) & (steps < 300)).sum()),
                                                         dtype=torch.float64)
    loss[(steps >= 300) & (steps <= 600)] = 0.8
    loss[(steps > 600) & (steps < 700)] = torch.linspace(0.8, 0.5, int(((steps > 600) & (steps < 700)).sum()),
                                                         dtype=torch.float64)
    found = treads(steps, loss)
    assert [(t.first, t.last) for t in found] == [(0, 205), (295, 605), (695, 1000)]
    assert [round(t.level, 6) for t in found] == [1.0, 0.8, 0.5]
    assert treads(steps, loss, min_steps=308) == [found[1]]  # only the 310-step rest is that long
    with pytest.raises(ValueError, match="flat"):
        treads(steps, loss, flat=0.0)


def test_longest_tread_at_a_level():
    # two rests near 0.8 (100 and 300 steps) and one at 0.5; a level nobody rests on gives None
    loss = steps_curve((1.0, 0), (0.805, 200), (0.3, 300), (0.796, 400), (0.5, 700))
    found = longest_tread_at(STEPS, loss, 0.8)
    assert (found.first, found.last, found.level) == (400, 695, pytest.approx(0.796))
    assert longest_tread_at(STEPS, loss, 0.8, tol=0.001) is None
    assert longest_tread_at(STEPS, loss, 0.65) is None


def test_halfway_down_is_not_reaching_the_level():
    """A curve that crosses the midpoint but ends 0.04 above H_1 has an onset, has not reached H_1 and ends on nothing."""
    steps = torch.arange(0, 1000, 10)
    loss = torch.where(steps < 300, torch.tensor(1.0), torch.tensor(0.54, dtype=torch.float32)).double()
    read = measure_rungs(steps, loss, [1.0, 0.5])
    assert read.onsets() == [0, 300] and read.reached() == [0, -1] and read.ends_on is None
    closer = measure_rungs(steps, torch.where(steps < 600, loss, torch.tensor(0.505, dtype=torch.float64)), [1.0, 0.5])
    assert closer.reached() == [0, 600] and closer.onsets() == [0, 300] and closer.ends_on == 1


def test_shelves_find_slow_shelves_and_skip_slides_and_short_pauses():
    # a slow shelf (0.58 -> 0.575 over steps 300-600: not flat enough for treads), a 40-step pause at 0.4
    # (under a tenth of the run), a steady slide (0.5 -> 0.2 over 700 steps) and noise within 0.01
    loss = steps_curve((1.0, 0), (0.58, 300), (0.4, 600), (0.3, 640))
    shelf = (STEPS >= 300) & (STEPS < 600)
    loss[shelf] = torch.linspace(0.58, 0.575, int(shelf.sum()), dtype=torch.float64)
    loss[STEPS >= 640] = torch.linspace(0.5, 0.2, int((STEPS >= 640).sum()), dtype=torch.float64)
    loss += 0.004 * torch.sin(STEPS.double())
    found = shelves(STEPS, loss)
    assert [(s.first, s.last) for s in found] == [(0, 295), (300, 595)]
    assert found[1].level == pytest.approx(0.5775, abs=0.005)
    assert not [t for t in treads(STEPS, loss) if abs(t.level - 0.5775) < 0.01]  # treads ask for a slope
    # on a log axis a shelf must double its step count: 5 -> 295 does (step 0 is not drawn), 300 -> 595 not
    assert [(s.first, s.last) for s in shelves(STEPS, loss, log=True)] == [(5, 295)]


def test_unnamed_rests_skip_named_levels_and_where_a_curve_ends():
    # curve 0 rests at 0.8 (unnamed) and ends on 0.5 (named); curve 1 ends resting at 0.7 (unnamed:
    # where it ends, not a rest it leaves); curve 2 rests at 0.805, within 0.01 of 0.8 only if named
    losses = torch.stack([steps_curve((1.0, 0), (0.8, 200), (0.5, 600)),
                          steps_curve((1.0, 0), (0.7, 400)),
                          steps_curve((1.0, 0), (0.805, 300), (0.5, 600))])
    found = unnamed_rests(STEPS, losses, [1.0, 0.5])
    assert [(k, s.first, s.last, round(s.level, 3)) for k, s in found] == [(0, 200, 595, 0.8), (2, 300, 595, 0.805)]
    assert [k for k, _ in unnamed_rests(STEPS, losses, [1.0, 0.8, 0.5])] == []
    diverged = losses[0].clone()
    diverged[STEPS >= 800] = float("nan")  # read up to its divergence: the rest at 0.8 is still there
    assert [(k, s.first) for k, s in unnamed_rests(STEPS, diverged[None], [1.0, 0.5])] == [(0, 200)]
    with pytest.raises(ValueError, match=r"\[K, T\]"):
        unnamed_rests(STEPS, losses[0], [1.0])


def test_measured_rests_merge_curves_resting_together():
    from ctxlab.plots import measured_rests

    losses = torch.stack([steps_curve((1.0, 0), (0.8, 200), (0.5, 600)),
                          steps_curve((1.0, 0), (0.805, 300), (0.5, 600)),
                          steps_curve((1.0, 0), (0.65, 300), (0.5, 600))])
    assert measured_rests(STEPS, losses, [1.0, 0.5]) == [(pytest.approx(0.65), 300, 595), (pytest.approx(0.8025), 200, 595)]


def test_a_slow_slide_within_the_band_is_not_a_shelf():
    # 0.7 -> 0.68 over 150 steps: within 0.02 for 15 % of the run, but 1.3e-4 nats a step (a slide);
    # on a log axis 0.005 a doubling is a shelf, 0.015 is not
    loss = steps_curve((1.0, 0), (0.3, 450))
    slide = (STEPS >= 300) & (STEPS < 450)
    loss[STEPS < 300] = 0.9
    loss[slide] = torch.linspace(0.7, 0.68, int(slide.sum()), dtype=torch.float64)
    assert [(s.first, s.last) for s in shelves(STEPS, loss)] == [(0, 295), (450, 1000)]
    log_steps = torch.tensor([1, 2, 3, 4, 8, 16, 32, 48, 64])
    shelf = shelves(log_steps, torch.tensor([0.9, 0.9, 0.9, 0.5, 0.495, 0.49, 0.1, 0.1, 0.1]), log=True)
    assert [(s.first, s.last) for s in shelf] == [(1, 3), (4, 16), (32, 64)]
    slide = shelves(log_steps, torch.tensor([0.9, 0.9, 0.9, 0.5, 0.485, 0.47, 0.1, 0.1, 0.1]), log=True)
    assert [s.first for s in slide] == [1, 32]
    assert shelves(log_steps[:2], torch.tensor([0.9, 0.9]), log=True) == []  # two records are no stretch

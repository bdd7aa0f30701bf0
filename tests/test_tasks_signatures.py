"""Tasks and signatures: exact values, estimation from samples, orthogonality, entropies, errors."""

import itertools
import math

import pytest
import torch

from ctxlab.signatures import (
    conditional_entropy,
    context_signature,
    entropy_ladder,
    interaction,
    joint,
    label_signature,
    signature,
    token_frequency,
)
from ctxlab.tasks import Dataset, hierarchy_task, make_task, xor_task


@pytest.fixture(scope="module")
def hier():
    return hierarchy_task()


def test_hierarchy_population_is_exact(hier):
    pop = hier.population
    assert pop.x.shape == (729, 3) and pop.n_labels == 3 and pop.vocab_size == 27
    assert torch.allclose(pop.targets().sum(1), torch.ones(729))
    assert abs(float(pop.weights.sum()) - 1) < 1e-6


def test_entropy_ladder_matches_known_values(hier):
    got = [round(s.entropy, 4) for s in entropy_ladder(hier.population)]
    assert got == [1.0986, 0.9503, 0.8419, 0.6630]
    xor = [s.entropy for s in entropy_ladder(xor_task().population)]
    assert xor[0] == pytest.approx(math.log(8)) and xor[1] == pytest.approx(math.log(2)) and xor[2] == pytest.approx(0, abs=1e-9)


def _brute_force_entropy(data: Dataset, positions) -> float:
    """H(Y | X_S) by looping over contexts in plain Python: slow and obviously right."""
    groups: dict[tuple, list[float]] = {}
    for x, w, y in zip(data.x.tolist(), data.weights.tolist(), data.targets().tolist()):
        key = tuple(x[p] for p in positions)
        acc = groups.setdefault(key, [0.0] * data.n_labels)
        for c, yc in enumerate(y):
            acc[c] += w * yc
    total = 0.0
    for acc in groups.values():
        mass = sum(acc)
        total -= sum(a * math.log(a / mass) for a in acc if a > 0)
    return total


@pytest.mark.parametrize("positions", [(), (0,), (1,), (0, 1), (1, 2), (0, 1, 2)])
def test_conditional_entropy_matches_brute_force(hier, positions):
    sample = hier.sample(3000, seed=1)
    for data in (hier.population, sample):
        assert conditional_entropy(data, positions) == pytest.approx(_brute_force_entropy(data, positions), abs=1e-6)


def test_estimated_signatures_agree_with_exact(hier):
    sample = hier.sample(100_000, seed=0)
    for order in (0, 1):
        exact = label_signature(hier.population, order, "raw").matrix
        est = label_signature(sample, order, "raw").matrix
        assert float((exact - est).abs().max()) < 0.02
    exact2 = label_signature(hier.population, 2, "raw").matrix
    assert float((exact2 - label_signature(sample, 2, "raw").matrix).abs().max()) < 0.06


def test_incremental_terms_are_orthogonal_functions():
    """E_x sum_y Delta_S(x_S, y) Delta_T(x_T, y) = 0 for S != T under independent positions."""
    data = xor_task().population
    sets = [S for r in range(4) for S in itertools.combinations(range(3), r)]
    x = data.x
    values = {}
    for S in sets:
        table = interaction(data, S)  # [V]*|S| + [C]
        values[S] = table[tuple(x[:, p] for p in S)] if S else table.expand(x.shape[0], -1)
    w = data.weights.double()
    for S, T in itertools.combinations(sets, 2):
        inner = float((w[:, None] * values[S] * values[T]).sum())
        assert abs(inner) < 1e-9, (S, T, inner)
    assert float((w[:, None] * values[(0, 1)] ** 2).sum()) > 0.1


def test_incremental_pair_term_has_no_order_one_part():
    data = xor_task().population
    pair = interaction(data, (0, 1)).double()  # [V, V, C]
    pi = token_frequency(data).double()
    assert torch.allclose(torch.einsum("t,stc->sc", pi, pair), torch.zeros(16, 8, dtype=torch.float64), atol=1e-9)


def test_raw_signature_is_sum_of_incremental_terms(hier):
    data = hier.population
    raw = joint(data, (0, 1))
    cond = raw / raw.sum(-1, keepdim=True)
    total = interaction(data, ()) + interaction(data, (0,))[:, None] + interaction(data, (1,))[None] + interaction(data, (0, 1))
    mask = raw.sum(-1) > 0
    assert torch.allclose(total[mask], cond[mask], atol=1e-9)


def test_signature_shapes_and_forms(hier):
    data = hier.population
    assert label_signature(data, 1).matrix.shape == (27, 3 * 3)
    assert label_signature(data, 2).matrix.shape == (27, 3 * 2 * 27 * 3)
    assert context_signature(data, 1).matrix.shape == (27, 3 * 2 * 27)
    order1 = label_signature(data, 1, "centered").matrix
    keys = hier.role_tokens("key")
    assert float(order1[keys].abs().sum()) > 0
    assert float(order1[hier.role_tokens("anchor1")].abs().max()) < 1e-6  # anchors alone say nothing
    assert signature(data, 1, "context", "raw").kind == "context"


def test_distinct_order_one_rows_are_attribute_classes(hier):
    rows = label_signature(hier.population, 1, "raw").matrix[hier.role_tokens("key")]
    assert len({tuple(r.round(decimals=6).tolist()) for r in rows}) == 3


def test_sampling_is_seeded(hier):
    a, b = hier.sample(500, seed=3), hier.sample(500, seed=3)
    assert torch.equal(a.x, b.x) and torch.equal(a.y, b.y)
    assert not torch.equal(a.x, hier.sample(500, seed=4).x)


def test_bad_inputs_raise_clear_errors(hier):
    data = hier.population
    with pytest.raises(ValueError, match="order 4"):
        label_signature(data, 4)
    with pytest.raises(ValueError, match="form"):
        label_signature(data, 1, "weird")
    with pytest.raises(ValueError, match="kind"):
        signature(data, 1, "wrong")
    with pytest.raises(ValueError, match=r"token ids must lie in \[0, 5\)"):
        Dataset(torch.tensor([[0, 7]]), torch.tensor([0]), 5, 2, torch.ones(1))
    with pytest.raises(ValueError, match="shape mismatch"):
        Dataset(torch.zeros(3, 2, dtype=torch.long), torch.zeros(2, dtype=torch.long), 5, 2, torch.ones(2) / 2)
    with pytest.raises(ValueError, match="empty"):
        Dataset(torch.zeros(0, 2, dtype=torch.long), torch.zeros(0, dtype=torch.long), 5, 2, torch.zeros(0))
    with pytest.raises(ValueError, match="positions"):
        conditional_entropy(data, (0, 5))
    with pytest.raises(ValueError, match="unknown task"):
        make_task("nope")
    with pytest.raises(ValueError, match="mix"):
        hierarchy_task(mix=(0.5, 0.6))


def test_task_plateau_levels_prefer_the_tasks_own_ladder():
    from ctxlab.tasks import partner_task

    assert hierarchy_task().plateau_levels() == pytest.approx([1.0986, 0.9503, 0.8419, 0.6630], abs=1e-4)
    partner = partner_task(n_keys=6, n_partners=6, n_fillers=1, seq_len=6)
    assert partner.plateau_levels() == pytest.approx(list(partner.info["levels"]))


def test_group_equal_columns_puts_equal_columns_side_by_side_within_each_block():
    from ctxlab.plots import group_equal_columns

    # rows 0-1 are one block, row 2 another; columns 0 and 2 are equal, as are 1 and 3
    m = torch.tensor([[1.0, -1.0, 1.0, -1.0, 0.0], [2.0, 0.5, 2.0, 0.5, 0.0], [0.0, 0.0, 0.0, 0.0, 3.0]]).double()
    out = group_equal_columns(m)
    assert sorted(map(tuple, out.T.tolist())) == sorted(map(tuple, m.T.tolist()))  # a reordering only
    assert torch.equal(out[:, 0], out[:, 1]) and torch.equal(out[:, 2], out[:, 3])
    assert out[2, -1] == 3.0  # the block that starts lower stays to the right

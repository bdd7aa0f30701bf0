"""Offline text, tokenizers, next-token windows and the text signatures."""

import math

import pytest
import torch

from ctxlab.corpus import CharTokenizer, load_text, next_token_windows, tokenizer, train_val_split
from ctxlab.signatures import (
    bigram_signature,
    bucket_rare,
    ngram_cross_entropies,
    ngram_tables,
    token_frequency,
    trigram_increment,
)
from ctxlab.tasks import Dataset


def test_shipped_texts_load_offline(no_network):
    shakespeare = load_text("shakespeare")
    assert len(shakespeare.text) > 1_000_000 and "HAMLET" in shakespeare.text[:100]
    assert "CC-BY" in shakespeare.provenance
    assert len(load_text("pydoc").text) > 100_000
    assert len(load_text("shakespeare", max_chars=500).text) == 500
    with pytest.raises(ValueError, match="unknown text source"):
        load_text("wikipedia")


def test_char_tokenizer_round_trips():
    tok = CharTokenizer("to be or not to be")
    ids = tok.encode("not to be")
    assert tok.decode(ids) == "not to be" and tok.vocab_size == len(set("to be or not to be"))
    with pytest.raises(ValueError, match="not in the tokenizer"):
        tok.encode("zebra")
    with pytest.raises(ValueError, match="unknown tokenizer"):
        tokenizer("words", "abc")


def test_bpe_tokenizer_trains_locally_and_caches(tmp_path, no_network):
    pytest.importorskip("tokenizers", reason="BPE needs the optional 'tokenizers' package (pip install 'ctxlab[nlp]')")
    text = load_text("shakespeare", max_chars=200_000).text
    tok = tokenizer("bpe", text, vocab_size=300, cache_dir=tmp_path)
    assert tok.vocab_size == 300 and len(list(tmp_path.glob("bpe-*.json"))) == 1
    sample = text[1000:1400]
    assert tok.decode(tok.encode(sample)) == sample
    again = tokenizer("bpe", text, vocab_size=300, cache_dir=tmp_path)
    assert torch.equal(again.encode(sample), tok.encode(sample))


def test_windows_and_split():
    tokens = torch.arange(20) % 7
    train, val = train_val_split(tokens, 0.25)
    assert len(train) == 15 and len(val) == 5
    data = next_token_windows(tokens, context=3, vocab_size=7)
    assert data.x.shape == (17, 3)
    assert torch.equal(data.x[4], tokens[4:7]) and int(data.y[4]) == int(tokens[7])
    sub = next_token_windows(tokens, context=3, vocab_size=7, max_windows=5, seed=1)
    assert sub.x.shape == (5, 3) and abs(float(sub.weights.sum()) - 1) < 1e-6
    with pytest.raises(ValueError, match="need more than"):
        next_token_windows(tokens[:3], context=3, vocab_size=7)


def test_bigram_signature_matches_brute_force():
    g = torch.Generator().manual_seed(0)
    tokens = torch.randint(0, 5, (400,), generator=g)
    sig = bigram_signature(tokens, 5)
    assert sig.matrix.shape == (5, 10)
    for s in range(5):
        after = [int(tokens[i + 1]) for i in range(len(tokens) - 1) if tokens[i] == s]
        before = [int(tokens[i - 1]) for i in range(1, len(tokens)) if tokens[i] == s]
        for t in range(5):
            assert float(sig.matrix[s, t]) == pytest.approx(after.count(t) / len(after), abs=1e-6)
            assert float(sig.matrix[s, 5 + t]) == pytest.approx(before.count(t) / len(before), abs=1e-6)


def test_trigram_increment_carries_no_bigram_part():
    g = torch.Generator().manual_seed(1)
    tokens = torch.randint(0, 4, (5000,), generator=g)
    inc = trigram_increment(tokens, 4).matrix.double().reshape(4, 4, 4)  # [x_t, x_{t-1}, next]
    windows = Dataset(torch.stack([tokens[:-2], tokens[1:-1]], 1), tokens[2:], 4, 4, torch.full((4998,), 1 / 4998))
    prev_freq = token_frequency(Dataset(windows.x[:, :1], windows.y, 4, 4, windows.weights)).double()
    # averaging the interaction over the previous token leaves nothing (up to sampling dependence)
    assert float(torch.einsum("p,spc->sc", prev_freq, inc).abs().max()) < 0.02


def test_ngram_cross_entropies_on_shakespeare_fall_with_order():
    text = load_text("shakespeare", max_chars=300_000).text
    tok = CharTokenizer(text)
    train, val = train_val_split(tok.encode(text))
    h1, h2, h3 = ngram_cross_entropies(train, val, tok.vocab_size)
    assert math.log(tok.vocab_size) > h1 > h2 > h3 > 1.0


def test_ngram_cross_entropy_of_a_deterministic_stream_is_small():
    tokens = torch.arange(300) % 3
    h1, h2 = ngram_cross_entropies(tokens[:240], tokens[240:], 3, max_n=2, alpha=1e-3)
    assert h1 == pytest.approx(math.log(3), abs=1e-2) and h2 < 0.01


def test_bucket_rare_keeps_the_most_frequent():
    tokens = torch.tensor([0, 0, 0, 1, 1, 2, 3, 3, 3, 3])
    new, kept = bucket_rare(tokens, 4, keep=2)
    assert kept.tolist() == [3, 0] and new.tolist() == [1, 1, 1, 2, 2, 2, 0, 0, 0, 0]
    with pytest.raises(ValueError, match="keep"):
        bucket_rare(tokens, 4, keep=0)


def test_ngram_tables_are_distributions_that_fall_back_to_the_order_below():
    tokens = torch.tensor([0, 1, 2, 0, 1, 2, 0, 2, 1, 0])
    uni, bi, tri = ngram_tables(tokens, 3, max_n=3, alpha=0.5)
    for table in (uni, bi, tri):
        assert torch.allclose(table.sum(-1), torch.ones(table.shape[0], dtype=torch.float64))
    assert torch.allclose(uni[0], (torch.bincount(tokens, minlength=3).double() + 0.5) / (10 + 1.5))
    # context (2, 2) never occurs: its trigram row is exactly the bigram row of token 2
    assert torch.allclose(tri[2 * 3 + 2], bi[2])


def test_smoothed_bpe_trigram_beats_the_bigram_on_held_out_text():
    """With plain add-alpha smoothing the 512-token trigram model lost to the bigram (4.11 vs 3.94 nats)."""
    text = load_text("shakespeare", max_chars=400_000).text
    tok = tokenizer("bpe", text, vocab_size=512)
    train, val = train_val_split(tok.encode(text))
    h1, h2, h3 = ngram_cross_entropies(train, val, tok.vocab_size)
    assert h1 > h2 > h3

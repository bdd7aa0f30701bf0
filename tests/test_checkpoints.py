"""`ctxlab probe` and its checkpoint reader, on tiny checkpoints the tests write in every common layout.

Nothing is downloaded: each checkpoint is a few tensors saved with safetensors next to a word-level
tokenizer trained here on a generated text.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
import torch

pytest.importorskip("safetensors", reason="the nlp extra is missing (pip install 'ctxlab[nlp]')")
pytest.importorskip("tokenizers", reason="the nlp extra is missing (pip install 'ctxlab[nlp]')")

from safetensors.torch import save_file  # noqa: E402
from tokenizers import Tokenizer, models, pre_tokenizers, trainers  # noqa: E402

from ctxlab.checkpoints import CheckpointError, checkpoint_step, load_checkpoint, tensor_index  # noqa: E402
from ctxlab.cli import main  # noqa: E402
from ctxlab.probe import pair_increment, probe, probe_one  # noqa: E402

WORDS = [f"w{i}" for i in range(30)]
D = 12


def _text(n: int = 3000, seed: int = 0) -> str:
    """Lines of words with order-1 structure: each word tends to be followed by its neighbour."""
    rng = random.Random(seed)
    out, w = [], 0
    for _ in range(n):
        w = (w + 1) % len(WORDS) if rng.random() < 0.6 else rng.randrange(len(WORDS))
        out.append(WORDS[w])
    return "\n".join(" ".join(out[i:i + 12]) for i in range(0, n, 12))


@pytest.fixture(scope="module")
def text() -> str:
    return _text()


@pytest.fixture(scope="module")
def tokenizer_json(tmp_path_factory, text) -> str:
    tok = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator(text.splitlines(), trainers.WordLevelTrainer(special_tokens=["[UNK]"]))
    return tok.to_str()


def _vocab(tokenizer_json: str) -> int:
    return Tokenizer.from_str(tokenizer_json).get_vocab_size()


def _checkpoint(folder: Path, tensors: dict, tokenizer_json: str, shards: int = 1) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tokenizer.json").write_text(tokenizer_json)
    (folder / "config.json").write_text(json.dumps({"model_type": "test"}))
    if shards == 1:
        save_file(tensors, str(folder / "model.safetensors"))
        return folder
    names = sorted(tensors)
    weight_map = {}
    for i in range(shards):
        part = {n: tensors[n] for n in names[i::shards]}
        file = f"model-{i + 1:05d}-of-{shards:05d}.safetensors"
        save_file(part, str(folder / file))
        weight_map.update({n: file for n in part})
    (folder / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    return folder


def _table(rows: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(rows, D, generator=torch.Generator().manual_seed(seed))


LAYOUTS = {
    "gpt2": lambda V: {"transformer.wte.weight": _table(V), "transformer.wpe.weight": _table(16, 1),
                       "transformer.h.0.mlp.c_fc.weight": _table(D, 2)},
    "llama": lambda V: {"model.embed_tokens.weight": _table(V), "lm_head.weight": _table(V, 3),
                        "model.norm.weight": torch.ones(D)},
    "bert": lambda V: {"embeddings.word_embeddings.weight": _table(V), "embeddings.position_embeddings.weight": _table(8, 4)},
    "neox-padded": lambda V: {"gpt_neox.embed_in.weight": _table(V + 6), "embed_out.weight": _table(V + 6, 5)},
    "unknown-name": lambda V: {"encoder.tok_emb.w": _table(V), "encoder.proj.w": _table(D, 6)},
}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("shards", [1, 2], ids=["single", "sharded"])
def test_every_layout_gives_the_same_table(tmp_path, tokenizer_json, layout, shards):
    V = _vocab(tokenizer_json)
    folder = _checkpoint(tmp_path / layout, LAYOUTS[layout](V), tokenizer_json, shards)
    model = load_checkpoint(folder)
    torch.testing.assert_close(model.matrix, _table(V + 6)[:V] if layout == "neox-padded" else _table(V))
    assert model.vocab_size == V and model.matrix.dtype == torch.float32


def test_only_the_embedding_tensor_is_read(tmp_path, tokenizer_json, monkeypatch):
    import safetensors

    V = _vocab(tokenizer_json)
    folder = _checkpoint(tmp_path / "big", {**LAYOUTS["gpt2"](V), "huge": torch.zeros(512, 1024)}, tokenizer_json)
    read = []
    real_open = safetensors.safe_open

    class Spy:
        def __init__(self, *args, **kwargs):
            self._inner = real_open(*args, **kwargs)

        def __enter__(self):
            inner = self._inner.__enter__()

            class Handle:
                def get_tensor(self, name):
                    read.append(name)
                    return inner.get_tensor(name)

            return Handle()

        def __exit__(self, *exc):
            return self._inner.__exit__(*exc)

    monkeypatch.setattr(safetensors, "safe_open", Spy)
    load_checkpoint(folder)
    assert read == ["transformer.wte.weight"]


def test_the_probe_finds_order_one_structure(tmp_path, tokenizer_json, text):
    """A table built from the text's own bigram signature aligns with it far above its shuffles;
    a random table does not."""
    from ctxlab.pretrained import kept_signature
    from ctxlab.signatures import bucket_rare

    V = _vocab(tokenizer_json)
    random_folder = _checkpoint(tmp_path / "random", {"wte.weight": _table(V)}, tokenizer_json)
    model = load_checkpoint(random_folder)
    ids = model.encode(text)
    stream, kept = bucket_rare(ids, V, 20)
    S = kept_signature(stream, 20)
    structured = torch.zeros(V, S.shape[1])
    structured[kept] = S.float()
    aligned_folder = _checkpoint(tmp_path / "aligned", {"wte.weight": structured}, tokenizer_json)
    result = probe([random_folder, aligned_folder], text, top=20, context=10, bins=1, progress=False)
    rnd, aligned = (c.orders[1][0] for c in result.checkpoints)
    assert aligned.cka > 0.99 and aligned.excess > 10 * aligned.shuffled_spread
    assert abs(rnd.excess) < 4 * rnd.shuffled_spread + 0.05
    js = result.to_json()
    assert [c["path"] for c in js["checkpoints"]] == [str(random_folder), str(aligned_folder)]
    assert set(js["checkpoints"][0]["orders"]) == {"1", "2"}


def test_pair_increment_is_the_moebius_term():
    """Against the course's own interaction() on a stream whose kept and context vocabularies are whole."""
    from ctxlab.signatures import trigram_increment

    g = torch.Generator().manual_seed(0)
    stream = torch.randint(0, 5, (4000,), generator=g)
    stream[1::3] = (stream[0::3][: len(stream[1::3])] + stream[2::3][: len(stream[1::3])]) % 5  # pairs matter
    ours = pair_increment(stream, 5, stream, 4)  # buckets 5 and 4+1: no token is bucketed
    reference = trigram_increment(stream, 5).matrix.double()
    torch.testing.assert_close(ours, reference, atol=1e-6, rtol=0)


def test_a_series_is_put_in_step_order(tmp_path, tokenizer_json, text):
    V = _vocab(tokenizer_json)
    folders = [_checkpoint(tmp_path / f"step{s}", {"wte.weight": _table(V, s)}, tokenizer_json) for s in (8000, 100, 1000)]
    result = probe(folders, text, top=20, context=8, bins=2, progress=False, n_shuffles=5)
    assert [c.step for c in result.checkpoints] == [100, 1000, 8000]
    assert checkpoint_step("checkpoint-250") == 250 and checkpoint_step("global_step40") == 40
    assert checkpoint_step("1000") == 1000 and checkpoint_step("final") is None and checkpoint_step("gpt2-sized") is None


def _cli_error(capsys, *argv) -> str:
    assert main(list(argv)) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


def test_bad_checkpoints_end_in_one_line(tmp_path, tokenizer_json, text, capsys):
    V = _vocab(tokenizer_json)
    text_file = tmp_path / "text.txt"
    text_file.write_text(text)
    run = ["probe", "--text", str(text_file), "--out", str(tmp_path / "out"), "--no-progress"]
    none = _checkpoint(tmp_path / "none", {"proj": _table(D)}, tokenizer_json)
    assert "no embedding table found" in _cli_error(capsys, *run, str(none))
    two = _checkpoint(tmp_path / "two", {"a.tok.w": _table(V), "b.tok.w": _table(V, 1)}, tokenizer_json)
    assert "choose one with --key" in _cli_error(capsys, *run, str(two))
    assert main([*run, str(two), "--key", "b.tok.w", "--top", "10", "--bins", "1"]) == 0
    capsys.readouterr()
    small = _checkpoint(tmp_path / "mismatch", {"transformer.wte.weight": _table(V - 5)}, tokenizer_json)
    assert "does not belong to this checkpoint" in _cli_error(capsys, *run, str(small))
    corrupt = _checkpoint(tmp_path / "corrupt", {"wte.weight": _table(V)}, tokenizer_json)
    raw = (corrupt / "model.safetensors").read_bytes()
    (corrupt / "model.safetensors").write_bytes(raw[:8] + b"{not json" + raw[17:])
    assert "corrupt safetensors header" in _cli_error(capsys, *run, str(corrupt))
    (corrupt / "model.safetensors").write_bytes((10**9).to_bytes(8, "little") + raw[8:])
    assert "corrupt safetensors header" in _cli_error(capsys, *run, str(corrupt))
    assert "no checkpoint folder" in _cli_error(capsys, *run, str(tmp_path / "missing"))
    good = _checkpoint(tmp_path / "good", {"wte.weight": _table(V)}, tokenizer_json)
    foreign = tmp_path / "foreign.txt"
    foreign.write_text("zz yy xx " * 50)
    assert "no token of" in _cli_error(capsys, "probe", "--text", str(foreign), "--out", str(tmp_path), str(good))
    assert "distinct tokens" in _cli_error(capsys, *run, str(good), "--top", "500")


def test_a_series_written_by_ctxlab_lm_reads_back_the_same(tmp_path):
    """The checkpoints `ctxlab lm --checkpoints` writes are probed to exactly the numbers of the
    training's own embedding snapshots."""
    from ctxlab.corpus import load_text
    from ctxlab.experiments.gpt import language_model, write_checkpoints

    text = load_text("shakespeare", max_chars=30000).text
    text_file = tmp_path / "text.txt"
    text_file.write_text(text)
    result = language_model(source=str(text_file), profile="quick", steps=40, record_every=20, progress=False)
    folders = write_checkpoints(result, tmp_path / "run")
    assert [f.name for f in folders] == ["step0", "step20", "step40"]
    probed = probe(folders, text, top=30, context=15, bins=2, n_shuffles=10, progress=False)
    model = load_checkpoint(folders[-1])
    ids = model.encode(text)
    from ctxlab.checkpoints import PretrainedEmbedding

    for t, read in enumerate(probed.checkpoints):
        direct = probe_one(PretrainedEmbedding(result.trajectory.embeddings[0, t], model.tokenizer, "run"), ids,
                           read.path, read.step, 30, 15, 15, n_shuffles=10)
        for order in (1, 2):
            assert [b.cka for b in read.orders[order]] == pytest.approx([b.cka for b in direct.orders[order]], abs=1e-9)
    # and the training's own alignment curve (lesson 09's CKA(E - E0, bigram signature) over all tokens,
    # on the training part of the text) is what the probe measures relative to step 0, on that part
    from ctxlab.corpus import train_val_split

    tok = result.tokenizer
    train, _ = train_val_split(tok.encode(text))
    assert int(torch.unique(train).numel()) == tok.vocab_size  # every token occurs in the training part
    own = probe(folders, tok.decode(train), top=tok.vocab_size, bins=1, n_shuffles=2, by_line=False,
                relative_to_first=True, progress=False)
    assert [c.step for c in own.checkpoints] == [20, 40]
    probed_curve = [c.orders[1][0].cka for c in own.checkpoints]
    assert probed_curve == pytest.approx(result.alignment["bigram"][0, 1:].tolist(), abs=1e-5)
    assert main(["probe", *map(str, folders), "--text", str(text_file), "--top", "30", "--bins", "2",
                 "--out", str(tmp_path / "figs"), "--json", str(tmp_path / "p.json"), "--no-progress"]) == 0
    assert [c["step"] for c in json.loads((tmp_path / "p.json").read_text())["checkpoints"]] == [0, 20, 40]


def test_minilm_reads_through_the_general_reader():
    from ctxlab import pretrained

    if not pretrained.available():
        pytest.skip(f"the MiniLM package is not installed ({pretrained.INSTALL})")
    tensors = tensor_index(pretrained.model_dir())
    assert "embeddings.word_embeddings.weight" in tensors
    model = load_checkpoint(pretrained.model_dir())
    assert tuple(model.matrix.shape) == (30522, 384)


def test_a_missing_tokenizer_is_explained(tmp_path):
    folder = tmp_path / "ck"
    folder.mkdir()
    save_file({"wte.weight": _table(5)}, str(folder / "model.safetensors"))
    with pytest.raises(CheckpointError, match="no tokenizer.json"):
        load_checkpoint(folder)

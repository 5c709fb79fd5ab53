"""The e5 cross-encoder's GPU path (chatbot/training/reranker_export.py, chatbot/training/reranker_gpu.py): the
export's text tables and int8 word embeddings round-trip, the device script's rank fusion and metrics equal the
product's (chatbot/stages/rerank.py) and the CPU trainer's (reranker_examples), and the script runs end to end
on a tiny model, keeping the best epoch per layer count in a file ``unpack_model`` turns back into a
transformers folder that scores exactly like the trained model.

Needs the local e5 build's tokenizer (`chatbot models build-e5`, made by `make install`) for a real trimmed
tokenizer; the model itself is a tiny random BERT."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from chatbot.e5_build import default_out_dir
from chatbot.stages.rerank import rrf_scores
from chatbot.training import reranker_gpu
from chatbot.training.reranker_e5 import kept_ids, trimmed_tokenizer
from chatbot.training.reranker_examples import Example, ValItem, doc_metrics
from chatbot.training.reranker_export import (
    pack_base,
    quantise_rows,
    read_json_gz,
    unpack_model,
    write_examples,
    write_validation,
)

TEXTS = [
    "Posso bere caffè in gravidanza? In gravidanza limita la caffeina a circa 200 mg al giorno.",
    "How much caffeine can I drink during pregnancy? Limit caffeine to about 200 mg a day.",
    "Wash the car with warm water and a soft sponge, then rinse it.",
]


def test_quantise_rows_round_trip_is_within_half_a_step():
    rng = np.random.default_rng(0)
    m = rng.normal(size=(50, 16)).astype(np.float32)
    m[3] = 0.0  # an all-zero row keeps scale 1 and stays zero
    q, s = quantise_rows(m)
    assert q.dtype == np.int8 and s.dtype == np.float16 and q.shape == (50, 16) and s.shape == (50, 1)
    back = q.astype(np.float32) * s.astype(np.float32)
    assert np.all(np.abs(back - m) <= s.astype(np.float32) / 2 + 1e-6)
    assert np.all(back[3] == 0) and s[3, 0] == 1.0
    assert np.abs(q).max() == 127


def test_examples_and_validation_share_texts_once(tmp_path):
    ex = [
        Example("mediqa", "q1", "pos", ["n1", "n2", "pos2"], "easy"),
        Example("mediqa-it", "q2", "pos2", ["n1", "n2", "n3"], "easy"),
    ]
    assert write_examples(tmp_path / "e.json.gz", ex) == 7  # q1 pos n1 n2 pos2 q2 n3
    back = read_json_gz(tmp_path / "e.json.gz")
    t = back["texts"]
    assert [(r["g"], t[r["q"]], t[r["p"]], [t[i] for i in r["n"]]) for r in back["examples"]] == [
        ("mediqa", "q1", "pos", ["n1", "n2", "pos2"]),
        ("mediqa-it", "q2", "pos2", ["n1", "n2", "n3"]),
    ]
    item = ValItem("medquad", "q", ["a", "b", "a"], ["d1", "d2", "d3"], {"d2": 2}, np.array([0.9, 0.8, 0.7]))
    write_validation(tmp_path / "v.json.gz", [item])
    v = read_json_gz(tmp_path / "v.json.gz")
    assert v["texts"] == ["q", "a", "b"]
    assert v["items"] == [
        {
            "g": "medquad",
            "q": 0,
            "c": [1, 2, 1],
            "docs": ["d1", "d2", "d3"],
            "gains": {"d2": 2},
            "dense": [0.9, 0.8, 0.7],
        }
    ]


def test_rank_fusion_equals_the_product_rerank_stage():
    dense = [0.9, 0.8, 0.7, 0.6, 0.5]  # the first stage's order is the given order
    model = [0.1, 0.5, 0.5, 2.0, -1.0]  # a tie: the first stage's order decides it, as in rrf_scores
    ours = reranker_gpu.rrf(model, dense, k=60)
    theirs = rrf_scores(np.array(model), 60)
    assert np.allclose(ours, theirs, rtol=0, atol=1e-15)
    assert reranker_gpu.rrf([3.0, 2.0, 1.0], [0.1, 0.2, 0.3], k=1) == [1 / 4 + 1 / 2, 1 / 3 + 1 / 3, 1 / 2 + 1 / 4]


def test_document_metrics_equal_the_cpu_trainer_and_add_p_at_3():
    scores = [0.2, 0.9, 0.8, 0.1, 0.7]
    docs = ["a", "b", "b", "c", "d"]
    gains = {"a": 1, "d": 2, "x": 1}
    ours = reranker_gpu.doc_metrics(scores, docs, gains)
    theirs = doc_metrics(np.array(scores), docs, gains)
    assert {k: ours[k] for k in theirs} == pytest.approx(theirs, abs=1e-12)
    assert ours["p@3"] == pytest.approx(2 / 3)  # ranked b, d, a, c: d and a relevant
    assert ours["p@1"] == 0.0 and ours["mrr@10"] == 0.5


@pytest.fixture(scope="module")
def tiny_export(tmp_path_factory) -> Path:
    """A packed 2-layer tiny BERT with a real trimmed e5 tokenizer, 6 examples, 3 validation questions."""
    from transformers import BertConfig, BertForSequenceClassification, PreTrainedTokenizerFast

    path = default_out_dir() / "hf" / "tokenizer.json"
    if not path.is_file():
        pytest.fail(f"{path} is missing: run `chatbot models build-e5`")
    full = json.loads(path.read_text(encoding="utf-8"))
    keep = kept_ids(full, TEXTS * 2, min_count=2, log=lambda m: None)
    root = tmp_path_factory.mktemp("export")
    base = root / "base-src"
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(keep),
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=80,
        type_vocab_size=2,
        pad_token_id=1,
        num_labels=1,
    )
    BertForSequenceClassification(config).save_pretrained(str(base))
    (base / "tokenizer.json").write_text(json.dumps(trimmed_tokenizer(full, keep), ensure_ascii=False))
    PreTrainedTokenizerFast(tokenizer_file=str(base / "tokenizer.json"), pad_token="<pad>").save_pretrained(str(base))
    export = root / "export"
    sizes = pack_base(base, export / "base")
    assert {"config.json", "tokenizer.json", "weights.safetensors"} <= set(sizes)
    q_it, q_en, other = TEXTS
    examples = [
        Example("mediqa-it" if i % 2 else "mediqa", [q_it, q_en][i % 2], q_en, [other] * 3, "") for i in range(6)
    ]
    write_examples(export / "examples.json.gz", examples)
    items = [
        ValItem(g, q, [other, q_en], ["d0", "d1"], {"d1": 1}, np.array([0.9, 0.8]))
        for g, q in (("mediqa", q_en), ("mediqa-it", q_it), ("medquad", q_en))
    ]
    write_validation(export / "validation.json.gz", items)
    return export


def test_packed_base_loads_with_fewer_layers(tiny_export):
    from safetensors.numpy import load_file

    src = load_file(str(tiny_export.parent / "base-src" / "model.safetensors"))
    one = reranker_gpu.load_model(tiny_export / "base", 1, seed=0).state_dict()
    two = reranker_gpu.load_model(tiny_export / "base", 2, seed=0).state_dict()
    assert not any(".layer.1." in k for k in one) and any(".layer.1." in k for k in two)
    key = "bert.encoder.layer.0.attention.self.query.weight"
    assert torch.equal(one[key], two[key])
    assert torch.equal(one[key], torch.from_numpy(src[key].astype(np.float16).astype(np.float32)))
    word = one["bert.embeddings.word_embeddings.weight"].numpy()
    ref = src["bert.embeddings.word_embeddings.weight"]
    assert np.abs(word - ref).max() <= np.abs(ref).max(axis=1).max() / 127  # int8 rows: within a step


def test_device_script_end_to_end_on_cpu_and_unpack(tiny_export, tmp_path):
    out = tmp_path / "out"
    argv = ["--data", str(tiny_export), "--out", str(out), "--configs", "L1:32", "L2:32", "L2:32:5e-4"]
    rc = reranker_gpu.main([*argv, "--epochs", "2", "--groups", "3", "--max-steps", "1", "--eval-batch", "4"])
    assert rc == 0
    report = json.loads((out / "validation.json").read_text())
    assert [r["name"] for r in report["runs"]] == ["L1-32", "L2-32", "L2-32-lr0.0005"]
    for run in report["runs"]:
        assert [h["epoch"] for h in run["history"]] == [1, 2] and [h["steps"] for h in run["history"]] == [1, 2]
        for h in run["history"]:
            assert h["alone"]["mediqa_n"] == h["alone"]["mediqa-it_n"] == h["fused"]["medquad_n"] == 1
            assert np.isfinite(h["loss_mean"]) and h["loss_mean"] > 0
    assert report["first_stage"]["mediqa_ndcg@10"] == pytest.approx(1 / np.log2(3), abs=1e-4)  # relevant doc second
    assert set(report["kept"]) == {"L1", "L2"}
    assert sorted(p.name for p in out.iterdir()) == ["L1.safetensors", "L2.safetensors", "validation.json"]

    # the kept L2 file back as a transformers folder scores as the device script's own loader does
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    config = json.loads((tiny_export / "base" / "config.json").read_text())
    folder = unpack_model(out / "L2.safetensors", config, tiny_export / "base", tmp_path / "L2")
    hf = AutoModelForSequenceClassification.from_pretrained(str(folder)).eval()
    mine = reranker_gpu.load_model(tiny_export / "base", 2, seed=0)
    from safetensors.torch import load_file

    packed = load_file(str(out / "L2.safetensors"))
    state = {k: v.float() for k, v in packed.items() if not k.startswith("word_")}
    state["bert.embeddings.word_embeddings.weight"] = packed["word_int8"].float() * packed["word_scale"].float()
    mine.load_state_dict(state, strict=False)
    mine.eval()
    tok = AutoTokenizer.from_pretrained(str(folder))
    enc = tok([TEXTS[0]], [TEXTS[1]], return_tensors="pt", truncation=True, max_length=32)
    with torch.no_grad():
        assert torch.allclose(hf(**enc).logits, mine(**enc).logits, atol=1e-6)


def test_prune_vocabulary_keeps_the_rows_of_the_kept_pieces(tiny_export, tmp_path):
    from safetensors.numpy import load_file
    from tokenizers import Tokenizer

    from chatbot.training.reranker_e5 import prune_vocabulary

    full = json.loads((default_out_dir() / "hf" / "tokenizer.json").read_text(encoding="utf-8"))
    src = tiny_export.parent / "base-src"
    keep = kept_ids(full, TEXTS[:2] * 2, min_count=2, log=lambda m: None)  # the car-washing words go
    out = prune_vocabulary(src, tmp_path / "pruned", keep, full)
    big, small = load_file(str(src / "model.safetensors")), load_file(str(out / "model.safetensors"))
    key = "bert.embeddings.word_embeddings.weight"
    before = Tokenizer.from_file(str(src / "tokenizer.json"))
    after = Tokenizer.from_file(str(out / "tokenizer.json"))
    assert small[key].shape == (len(keep), 16) and big[key].shape[0] > len(keep)
    assert json.loads((out / "config.json").read_text())["vocab_size"] == len(keep)
    for piece in [*after.encode(TEXTS[0] + " " + TEXTS[1], add_special_tokens=False).tokens, "<s>", "<pad>"]:
        assert np.array_equal(small[key][after.token_to_id(piece)], big[key][before.token_to_id(piece)])
    text = TEXTS[1]  # covered by both vocabularies: the same pieces
    assert after.encode(text).tokens == before.encode(text).tokens
    assert "<unk>" not in after.encode(TEXTS[2]).tokens  # dropped words spelled with smaller pieces
    other = {k for k in big if k != key}
    assert all(np.array_equal(small[k], big[k]) for k in other)
    with pytest.raises(ValueError, match="not in"):
        prune_vocabulary(out, tmp_path / "again", kept_ids(full, TEXTS * 2, 2, log=lambda m: None), full)

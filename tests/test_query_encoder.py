"""The fine-tuned e5 query encoder (chatbot/query_encoder.py, chatbot/training/query_encoder.py): the shipped
folder's format and its clear errors, retrieval ordered by the tuned vectors while the gate reads raw e5
cosines, the language filter, the setting wiring, and the training loss on hand-computed numbers."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from chatbot.query_encoder import (
    LAYERS_FILE,
    MANIFEST,
    QueryEncoderError,
    TunedQueryEmbedder,
    read_manifest,
    save_encoder,
)
from chatbot.resources import shipped_model
from chatbot.stages.retrieve import DenseRetriever
from tests.test_query_adapter import FakeEmbedder, FakeIndex

LAYER = {"encoder.layer.11.output.dense.bias": np.array([0.5, -0.25, 1.0], dtype=np.float32)}


def test_save_and_read_back_the_tuned_layers(tmp_path: Path) -> None:
    from safetensors.numpy import load_file

    save_encoder(tmp_path, LAYER, {"command": "x"}, base_sha="ab" * 32)
    manifest = read_manifest(tmp_path)
    assert manifest["layers"] == [11]
    assert manifest["base_weights_sha256"] == "ab" * 32
    assert manifest["base_embedder"] == "multilingual-e5-small-onnx-int8"
    back = load_file(str(tmp_path / LAYERS_FILE))
    assert back["encoder.layer.11.output.dense.bias"].dtype == np.float16
    np.testing.assert_array_equal(back["encoder.layer.11.output.dense.bias"], [0.5, -0.25, 1.0])
    assert json.loads((tmp_path / "metrics.json").read_text())["command"] == "x"


def test_corrupt_or_missing_files_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(QueryEncoderError, match="encoder.json is missing"):
        read_manifest(tmp_path)
    save_encoder(tmp_path, LAYER, base_sha="ab" * 32)
    data = bytearray((tmp_path / LAYERS_FILE).read_bytes())
    data[-1] ^= 0xFF
    (tmp_path / LAYERS_FILE).write_bytes(bytes(data))
    with pytest.raises(QueryEncoderError, match="corrupt: its sha256 differs"):
        read_manifest(tmp_path)
    (tmp_path / MANIFEST).write_text("not json")
    with pytest.raises(QueryEncoderError, match="is not a query encoder manifest"):
        read_manifest(tmp_path)


def _swap(texts):
    """A stand-in tuned encoder: the raw table's vector with x and y swapped."""
    raw = FakeEmbedder({"q": [0.8, 0.6, 0.0], "Che cos'è l'influenza e come si cura?": [0.8, 0.6, 0.0]})
    return raw.embed_queries(texts)[:, [1, 0, 2]]


def test_retrieval_follows_the_tuned_vector_and_the_gate_keeps_the_raw_cosine() -> None:
    base = FakeEmbedder({"q": [0.8, 0.6, 0.0]})
    tuned = TunedQueryEmbedder(base, _swap)
    np.testing.assert_allclose(tuned.embed_queries(["q"]), [[0.6, 0.8, 0.0]], atol=1e-6)
    hits = DenseRetriever(FakeIndex(), tuned)("q", k=2)
    assert [h.segment.id for h in hits] == ["s1", "s0"]  # raw e5 puts s0 first
    assert [round(h.detail["dense"], 4) for h in hits] == [0.6, 0.8]  # raw cosines for the gate
    assert [round(h.detail["dense_adapted"], 4) for h in hits] == [0.8, 0.6]
    np.testing.assert_allclose(tuned.embed_passages(["q"]), [[0.8, 0.6, 0.0]], atol=1e-6)  # passages: raw e5


def test_languages_limit_which_questions_use_it() -> None:
    table = {
        "What is the flu and how is it treated?": [0.8, 0.6, 0.0],
        "Che cos'è l'influenza e come si cura?": [0.8, 0.6, 0.0],
    }
    base = FakeEmbedder(table)
    tuned = TunedQueryEmbedder(base, _swap, languages=["it"])
    got = tuned.embed_queries(list(table))
    np.testing.assert_allclose(got, [[0.8, 0.6, 0.0], [0.6, 0.8, 0.0]], atol=1e-6)


def test_refuses_an_embedder_it_was_not_tuned_for() -> None:
    minilm = FakeEmbedder({"q": [1.0, 0.0, 0.0]})
    minilm.name = "all-MiniLM-L6-v2"
    with pytest.raises(QueryEncoderError, match="not 'all-MiniLM-L6-v2'"):
        TunedQueryEmbedder(minilm, _swap)


def test_services_use_the_encoder_instead_of_the_adapter(tmp_path: Path, monkeypatch) -> None:
    import chatbot.query_encoder as qe
    from chatbot.pipeline import Services
    from chatbot.settings import Settings

    class Windows:
        def encode(self, texts):
            assert all(t.startswith("query: ") for t in texts)
            return _swap([t[len("query: ") :] for t in texts])

    seen = []
    monkeypatch.setattr(qe, "_windows", lambda folder, threads, int8_matmul: seen.append(folder) or Windows())
    settings = Settings()
    assert settings.embedding.query_encoder == "auto"  # the shipped one over e5-onnx, for Italian questions
    assert settings.embedding.query_encoder_languages == ["it"]
    settings.embedding.query_encoder = str(tmp_path)
    settings.embedding.query_encoder_languages = []  # every question, "q" included
    services = Services(settings)
    base = FakeEmbedder({"q": [0.8, 0.6, 0.0]})
    services.__dict__["embedder"] = base
    assert isinstance(services.query_embedder, TunedQueryEmbedder)
    assert seen == [str(tmp_path.resolve())]
    np.testing.assert_allclose(services.query_embedder.embed_queries(["q"]), [[0.6, 0.8, 0.0]], atol=1e-6)
    assert services.embedder is base  # red flags, gate, memory: raw e5


def test_loss_is_the_infonce_of_the_positive_against_the_negatives() -> None:
    import torch

    from chatbot.training.query_adapter_data import Example, Question
    from chatbot.training.query_encoder import loss_of

    seg = {"c": torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]])}
    q = Question("s/1", "1", "t", "g", "c", {"d0": 2}, {"d0": 2})
    ex = Example(q, np.zeros(2), positives=[0], weights=[2.0], negatives=[1, 2])
    vec = torch.tensor([[0.8, 0.6]])
    got = float(loss_of(vec, [ex], seg, tau=0.5))
    s = [0.8 / 0.5, 0.6 / 0.5, (0.48 + 0.48) / 0.5]  # positive, then the two hard negatives
    want = math.log(sum(math.exp(x) for x in s)) - s[0]
    assert got == pytest.approx(want, rel=1e-6)


SHIPPED = shipped_model("query_encoder")
QUESTIONS = {
    "en": "Can I drink coffee while I am pregnant?",
    "it": "Posso bere caffè in gravidanza?",
}
PASSAGES = [
    "During pregnancy, limit caffeine to about 200 mg a day, roughly two mugs of instant coffee.",
    "In gravidanza limita la caffeina a circa 200 mg al giorno, più o meno due tazzine di caffè.",
    "Knee replacement surgery replaces a damaged knee joint with an artificial one.",
    "La sostituzione del ginocchio sostituisce l'articolazione danneggiata con una protesi.",
]


def test_shipped_encoder_loads_offline_and_ranks_relevant_passages_first() -> None:
    """The shipped tuned layers (sha256-checked) on top of the local e5 build: both languages' coffee question
    put both caffeine passages above both knee passages (passage vectors: the shipped int8 e5 runtime)."""
    import torch
    from safetensors.numpy import load_file

    from chatbot.e5_runtime import E5StandardEmbedder
    from chatbot.training.query_encoder import TopEncoder
    from chatbot.training.reranker_e5 import e5_hf_dir

    manifest = read_manifest(SHIPPED)
    assert manifest["layers"] == [8, 9, 10, 11]
    raw = E5StandardEmbedder(threads=1)
    assert manifest["base_weights_sha256"] == raw.build_info["files"]["hf/model.safetensors"]["sha256"]
    enc = TopEncoder(e5_hf_dir(), layers=4)
    enc.load_top({k: torch.from_numpy(v.astype(np.float32)) for k, v in load_file(str(SHIPPED / LAYERS_FILE)).items()})
    enc.model.eval()
    with torch.no_grad():
        q = enc.encode(enc.cache(list(QUESTIONS.values()))).numpy()
    p = raw.embed_passages(PASSAGES)
    for row in q @ p.T:
        assert min(row[:2]) > max(row[2:]), row
    np.testing.assert_allclose(np.linalg.norm(q, axis=1), 1.0, atol=1e-5)

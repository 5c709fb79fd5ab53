"""The trained query-side adapter (chatbot/query_adapter.py): exact behaviour on hand-built vectors, clear
errors for bad files, the setting wiring (retrieval path only), and the shipped adapter loaded offline."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from chatbot.query_adapter import (
    AdaptedEmbedder,
    AdapterError,
    QueryAdapter,
    load_adapter,
    retrieval_embedder,
    save_adapter,
)
from chatbot.resources import shipped_model
from chatbot.stages.retrieve import DenseRetriever

SHIPPED = shipped_model("query_adapter")


class FakeEmbedder:
    """Fixed vectors per text: questions and passages from a table."""

    name = "multilingual-e5-small-onnx-int8"
    dim = 3

    def __init__(self, table: dict[str, list[float]]) -> None:
        self.table = table
        self.query_calls: list[str] = []

    def _vec(self, texts) -> np.ndarray:
        v = np.array([self.table[t] for t in texts], dtype=np.float32).reshape(len(texts), self.dim)
        return v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)

    def embed_queries(self, texts):
        self.query_calls.extend(texts)
        return self._vec(texts)

    def embed_passages(self, texts):
        return self._vec(texts)


def test_identity_adapter_changes_nothing() -> None:
    q = np.array([[0.6, 0.8, 0.0], [0.0, 0.0, 1.0]], dtype=np.float32)
    out = QueryAdapter(np.eye(3), np.zeros(3)).apply(q)
    np.testing.assert_allclose(out, q, atol=1e-7)


def test_known_weight_gives_known_ranking() -> None:
    passages = np.array([[1, 0, 0], [0, 1, 0]], dtype=np.float32)  # p0 on axis x, p1 on axis y
    q = np.array([[0.8, 0.6, 0.0]], dtype=np.float32)  # raw: p0 first (0.8 > 0.6)
    swap = np.array([[0, 1, 0], [1, 0, 0], [0, 0, 1]], dtype=np.float32)  # W swaps x and y
    adapted = QueryAdapter(swap, np.zeros(3)).apply(q)
    np.testing.assert_allclose(adapted, [[0.6, 0.8, 0.0]], atol=1e-6)
    assert list(np.argsort(-(passages @ q[0]))) == [0, 1]
    assert list(np.argsort(-(passages @ adapted[0]))) == [1, 0]
    # the bias moves the question too, and the result is re-normalised
    biased = QueryAdapter(np.eye(3), np.array([0.0, 0.0, 1.0])).apply(q)
    np.testing.assert_allclose(biased, [[0.8 / 2**0.5, 0.6 / 2**0.5, 1 / 2**0.5]], atol=1e-6)


def test_save_load_round_trip_and_sha256(tmp_path: Path) -> None:
    w = np.eye(3, dtype=np.float32) + 0.1 * np.arange(9, dtype=np.float32).reshape(3, 3)
    save_adapter(tmp_path, w, np.array([0.1, 0.0, -0.1], dtype=np.float32), {"note": 1})
    a = load_adapter(tmp_path, "multilingual-e5-small-onnx-int8")
    np.testing.assert_allclose(a.weight, w, atol=1e-6)
    np.testing.assert_allclose(a.bias, [0.1, 0.0, -0.1], atol=1e-7)
    assert json.loads((tmp_path / "metrics.json").read_text()) == {"note": 1}


def test_italian_part_applies_to_italian_rows_only(tmp_path: Path) -> None:
    swap = np.array([[0, 1, 0], [1, 0, 0], [0, 0, 1]], dtype=np.float32)
    u = np.array([[0.0], [0.0], [1.0]], dtype=np.float32)  # U V^T adds x to z for Italian rows
    v = np.array([[1.0], [0.0], [0.0]], dtype=np.float32)
    save_adapter(tmp_path, swap, np.zeros(3), italian=(u, v, np.zeros(3)))
    a = load_adapter(tmp_path)
    assert a.per_language
    q = np.array([[1.0, 0.0, 0.0], [1.0, 0.0, 0.0]], dtype=np.float32)
    out = a.apply(q, [False, True])
    np.testing.assert_allclose(out, [[0.0, 1.0, 0.0], [0.0, 1 / 2**0.5, 1 / 2**0.5]], atol=1e-6)
    np.testing.assert_allclose(a.apply(q), [[0.0, 1.0, 0.0], [0.0, 1.0, 0.0]], atol=1e-6)  # no flags: shared map
    table = {"What is the flu?": [1.0, 0.0, 0.0], "Che cos'è l'influenza e come si cura?": [1.0, 0.0, 0.0]}
    wrapped = AdaptedEmbedder(FakeEmbedder(table), a)
    got = wrapped.embed_queries(list(table))
    np.testing.assert_allclose(got, [[0.0, 1.0, 0.0], [0.0, 1 / 2**0.5, 1 / 2**0.5]], atol=1e-6)


def test_bad_files_give_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(AdapterError, match="adapter.json is missing"):
        load_adapter(tmp_path)
    save_adapter(tmp_path, np.eye(3), np.zeros(3))
    with pytest.raises(AdapterError, match="trained for 'multilingual-e5-small-onnx-int8', not for embedder 'minilm'"):
        load_adapter(tmp_path, "minilm")
    data = bytearray((tmp_path / "adapter.npz").read_bytes())
    data[-40] ^= 0xFF
    (tmp_path / "adapter.npz").write_bytes(bytes(data))
    with pytest.raises(AdapterError, match="adapter.npz is corrupt: sha256"):
        load_adapter(tmp_path)
    (tmp_path / "adapter.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(AdapterError, match="is not a query adapter manifest"):
        load_adapter(tmp_path)
    with pytest.raises(AdapterError, match="do not fit"):
        QueryAdapter(np.eye(3), np.zeros(2))
    with pytest.raises(AdapterError, match="NaN or infinite"):
        QueryAdapter(np.full((2, 2), np.nan), np.zeros(2))


def test_setting_none_keeps_the_embedder_and_a_folder_wraps_questions_only(tmp_path: Path) -> None:
    base = FakeEmbedder({"q": [0.8, 0.6, 0.0], "p": [1.0, 0.0, 0.0]})
    assert retrieval_embedder(base, "none") is base
    assert retrieval_embedder(base, "") is base
    save_adapter(tmp_path, np.array([[0, 1, 0], [1, 0, 0], [0, 0, 1]]), np.zeros(3))
    wrapped = retrieval_embedder(base, str(tmp_path))
    assert isinstance(wrapped, AdaptedEmbedder) and wrapped.name == base.name and wrapped.raw is base
    np.testing.assert_allclose(wrapped.embed_queries(["q"]), [[0.6, 0.8, 0.0]], atol=1e-6)
    np.testing.assert_allclose(wrapped.embed_passages(["p"]), [[1.0, 0.0, 0.0]], atol=1e-6)
    with pytest.raises(AdapterError, match="is missing"):
        retrieval_embedder(base, str(tmp_path / "nowhere"))


class FakeIndex:
    """Two stored passages searched exactly; ``vectors_of`` like SegmentIndex's."""

    def __init__(self) -> None:
        from corpus.model import Segment

        self.vectors = {"s0": np.array([1, 0, 0], np.float32), "s1": np.array([0, 1, 0], np.float32)}
        self.segments = {
            sid: Segment(id=sid, doc_id=sid, title=sid, heading="", text=sid, position=0, language="en", source_url="")
            for sid in self.vectors
        }

    def search_vectors(self, queries, k):
        from chatbot.index import Hit

        out = []
        for q in queries:
            scored = sorted(((float(q @ v), sid) for sid, v in self.vectors.items()), reverse=True)
            out.append([Hit(self.segments[sid], s) for s, sid in scored[:k]])
        return out

    def vectors_of(self, ids):
        return np.stack([self.vectors[i] for i in ids])


def test_dense_retriever_orders_by_the_adapter_but_reports_the_raw_cosine(tmp_path: Path) -> None:
    base = FakeEmbedder({"q": [0.8, 0.6, 0.0]})
    save_adapter(tmp_path, np.array([[0, 1, 0], [1, 0, 0], [0, 0, 1]]), np.zeros(3))
    hits = DenseRetriever(FakeIndex(), retrieval_embedder(base, str(tmp_path)))("q", k=2)
    assert [h.segment.id for h in hits] == ["s1", "s0"]  # raw e5 would put s0 first
    assert [round(h.detail["dense"], 4) for h in hits] == [0.6, 0.8]  # the gate's raw cosines
    assert [round(h.detail["dense_adapted"], 4) for h in hits] == [0.8, 0.6]
    plain = DenseRetriever(FakeIndex(), base)("q", k=2)
    assert [h.segment.id for h in plain] == ["s0", "s1"]


def test_services_wire_the_adapter_into_retrieval_not_into_the_red_flag_path(tmp_path: Path, monkeypatch) -> None:
    from chatbot.pipeline import Services
    from chatbot.settings import Settings

    base = FakeEmbedder({"q": [0.8, 0.6, 0.0]})
    save_adapter(tmp_path, np.array([[0, 1, 0], [1, 0, 0], [0, 0, 1]]), np.zeros(3))
    settings = Settings()
    settings.embedding.query_encoder = "none"  # the tuned encoder (default auto) replaces the adapter when on
    settings.embedding.query_adapter = str(tmp_path)
    services = Services(settings)
    services.__dict__["embedder"] = base  # the cached_property's slot
    services.__dict__["index"] = FakeIndex()
    assert isinstance(services.query_embedder, AdaptedEmbedder)
    assert services.dense.embedder is services.query_embedder
    assert services.embedder is base  # red flags, answer scorer, memory read services.embedder: raw e5
    np.testing.assert_allclose(services.embedder.embed_queries(["q"]), [[0.8, 0.6, 0.0]], atol=1e-6)
    # the default embedding.query_adapter_languages=["it"]: English questions keep raw e5, Italian ones move
    table = {
        "What is the flu and how is it treated?": [0.8, 0.6, 0.0],
        "Che cos'è l'influenza e come si cura?": [0.8, 0.6, 0.0],
    }
    base.table.update(table)
    assert settings.embedding.query_adapter_languages == ["it"]
    got = services.query_embedder.embed_queries(list(table))
    np.testing.assert_allclose(got, [[0.8, 0.6, 0.0], [0.6, 0.8, 0.0]], atol=1e-6)
    both = AdaptedEmbedder(base, services.query_embedder.adapter, ["en", "it"])
    np.testing.assert_allclose(both.embed_queries(list(table)), [[0.6, 0.8, 0.0], [0.6, 0.8, 0.0]], atol=1e-6)
    settings.embedding.query_adapter = "none"
    off = Services(settings)
    off.__dict__["embedder"] = base
    assert off.query_embedder is base


def test_auto_uses_the_shipped_adapter_with_the_embedder_it_was_trained_for_only() -> None:
    from chatbot.pipeline import Services
    from chatbot.settings import Settings

    settings = Settings()
    assert settings.embedding.query_adapter == "auto" and settings.embedding.model == "e5-onnx"  # the defaults
    settings.embedding.query_encoder = "none"  # the tuned encoder (default auto) replaces the adapter when on
    base = FakeEmbedder({"q": [0.8, 0.6, 0.0]})  # named as the e5-onnx embedder the adapter was trained for
    on = Services(settings)
    on.__dict__["embedder"] = base
    assert isinstance(on.query_embedder, AdaptedEmbedder) and on.query_embedder.languages == ("it",)
    np.testing.assert_array_equal(on.query_embedder.adapter.weight, load_adapter(SHIPPED).weight)
    minilm = FakeEmbedder({"q": [0.8, 0.6, 0.0]})
    minilm.name = "all-MiniLM-L6-v2"
    other = Services(settings)  # another embedder: no adapter rather than a mismatch error
    other.__dict__["embedder"] = minilm
    assert other.query_embedder is minilm
    settings.embedding.query_adapter = "shipped"  # asked for by name: the mismatch is an error
    forced = Services(settings)
    forced.__dict__["embedder"] = minilm
    with pytest.raises(AdapterError, match="was trained for 'multilingual-e5-small-onnx-int8', not for embedder"):
        _ = forced.query_embedder


# ------------------------------------------------------------------------------- the shipped adapter

EN_Q = "How much caffeine can I drink during pregnancy?"
IT_Q = "Quanta caffeina posso bere in gravidanza?"
RELEVANT = [
    "Caffeine in pregnancy\nDuring pregnancy, limit caffeine to about 200 mg a day: about two mugs of instant coffee.",
    "Blood pressure in pregnancy\nPre-eclampsia causes high blood pressure and protein in the urine after 20 weeks.",
]
IRRELEVANT = [
    "Car care\nWash the car with warm soapy water and dry it with a soft cloth to avoid streaks.",
    "Train timetable\nThe regional train to Milan leaves from platform three at a quarter past eight.",
    "Knee replacement\nAfter knee surgery, physiotherapy helps you bend and straighten the joint again.",
]


@pytest.mark.integration
def test_shipped_adapter_loads_offline_and_ranks_relevant_first_in_both_languages() -> None:
    from chatbot.embedders import load_embedder

    manifest = json.loads((SHIPPED / "adapter.json").read_text(encoding="utf-8"))
    assert (SHIPPED / "adapter.npz").stat().st_size < 1_000_000
    adapter = load_adapter(SHIPPED, "multilingual-e5-small-onnx-int8")  # verifies the sha256
    assert adapter.dim == manifest["dim"] == 384
    e5 = load_embedder("e5-onnx")
    wrapped = AdaptedEmbedder(e5, adapter)
    passages = e5.embed_passages(RELEVANT + IRRELEVANT)
    for question in (EN_Q, IT_Q):
        scores = passages @ wrapped.embed_queries([question])[0]
        assert int(np.argmax(scores)) == 0, (question, scores)
        assert scores[0] > max(scores[2:]) + 0.02, (question, scores)
    # it stays close to e5: the adapted question keeps most of its raw direction
    raw = e5.embed_queries([EN_Q, IT_Q])
    assert np.all(np.sum(raw * adapter.apply(raw), axis=1) > 0.7)


@pytest.mark.integration
def test_chatbot_models_lists_the_adapter_with_its_sha256_and_card_metrics() -> None:
    from chatbot.models_cli import list_models

    rows = [r for r in list_models() if r["path"] == str(SHIPPED)]
    assert len(rows) == 1
    manifest = json.loads((SHIPPED / "adapter.json").read_text(encoding="utf-8"))
    assert rows[0]["sha256"] == manifest["sha256"]
    assert rows[0]["bytes"] < 1_000_000
    assert any("MEDIQA-it" in m and "P@3" in m for m in rows[0]["metrics"])


def test_real_index_vectors_of_and_adapted_dense_retrieval(tmp_path: Path) -> None:
    """Over a real Chroma index (keyword vectors on the asthma, diabetes, fever, sleep, other axes): W swaps the
    asthma and fever axes, so an asthma question retrieves the fever card first, with the raw cosine kept."""
    from chatbot.index import SegmentIndex, make_client
    from corpus.model import Document
    from corpus.segmenter import segment_documents
    from tests.conftest import FakeEmbedder as KeywordEmbedder

    fake_embedder = KeywordEmbedder("multilingual-e5-small-onnx-int8")  # the name the adapter was made for
    docs = [
        Document(id=i, text=t, title=f"Card {i}", source_url=f"https://example.org/{i}")
        for i, t in (("a", "Asthma makes the airways narrow."), ("c", "A fever is 38C or more."))
    ]
    index = SegmentIndex(make_client(tmp_path / "db"), "qa-test", fake_embedder, exact=True)
    index.sync(segment_documents(docs))
    segments, stored = index.all_segments()
    ids = [s.id for s in segments]
    np.testing.assert_allclose(index.vectors_of(list(reversed(ids))), stored[::-1], atol=1e-6)
    assert index.vectors_of([]).shape == (0, fake_embedder.dim)
    swap = np.eye(fake_embedder.dim, dtype=np.float32)
    swap[[0, 2]] = swap[[2, 0]]
    save_adapter(tmp_path / "adapter", swap, np.zeros(fake_embedder.dim))
    retriever = DenseRetriever(index, retrieval_embedder(fake_embedder, str(tmp_path / "adapter")))
    hits = retriever("asthma", k=2)
    assert [h.segment.doc_id for h in hits] == ["c", "a"]
    assert [round(h.detail["dense"], 4) for h in hits] == [0.0, 1.0]  # raw e5-style cosines of those links
    assert [round(h.detail["dense_adapted"], 4) for h in hits] == [1.0, 0.0]
    assert [h.segment.doc_id for h in DenseRetriever(index, fake_embedder)("asthma", k=2)] == ["a", "c"]


def test_a_question_the_adapter_leaves_alone_keeps_the_search_cosine_without_refetching_vectors(tmp_path: Path) -> None:
    class CountingIndex(FakeIndex):
        fetched = 0

        def vectors_of(self, ids):
            CountingIndex.fetched += 1
            return super().vectors_of(ids)

    en_q, it_q = "What is the flu and how is it treated?", "Che cos'è l'influenza e come si cura?"
    base = FakeEmbedder({en_q: [0.8, 0.6, 0.0], it_q: [0.8, 0.6, 0.0]})
    save_adapter(tmp_path, np.array([[0, 1, 0], [1, 0, 0], [0, 0, 1]]), np.zeros(3))
    retriever = DenseRetriever(CountingIndex(), retrieval_embedder(base, str(tmp_path), languages=["it"]))
    english = retriever(en_q, k=2)
    assert [h.segment.id for h in english] == ["s0", "s1"] and CountingIndex.fetched == 0
    assert [(round(h.detail["dense"], 4), round(h.detail["dense_adapted"], 4)) for h in english] == [
        (0.8, 0.8),
        (0.6, 0.6),
    ]
    italian = retriever(it_q, k=2)
    assert [h.segment.id for h in italian] == ["s1", "s0"] and CountingIndex.fetched == 1
    assert [round(h.detail["dense"], 4) for h in italian] == [0.6, 0.8]  # the raw cosines, fetched once


def test_ranking_metrics_rank_documents_by_their_best_segment() -> None:
    from chatbot.training.query_adapter import ranking_metrics

    scores = np.array([0.9, 0.8, 0.7, 0.6, 0.5], dtype=np.float32)
    seg_doc = ["a", "a", "b", "c", "d"]  # documents a, b, c, d in that order (a's second segment is not a new one)
    got = ranking_metrics(scores, seg_doc, {"b": 2, "d": 1})
    ideal = 3 + 1 / np.log2(3)
    expected = {"nDCG@10": (3 / np.log2(3) + 1 / np.log2(5)) / ideal, "P@3": 1 / 3, "MRR@10": 0.5, "R@10": 1.0}
    assert got == pytest.approx(expected)
    assert ranking_metrics(scores, seg_doc, {"b": 2, "d": 1}, depth=3)["R@3"] == 0.5  # d ranks fourth

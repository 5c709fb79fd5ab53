from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from chatbot.index import MissingIndexError, ModelMismatchError, SegmentIndex, make_client
from corpus.model import Document
from corpus.segmenter import segment_document, segment_documents
from tests.conftest import FakeEmbedder, unit

COLLECTION = "test-certified"


def doc(doc_id: str, text: str, **fields) -> Document:
    defaults = {"title": f"Card {doc_id}", "source_url": f"https://example.org/{doc_id}"}
    return Document(id=doc_id, text=text, **{**defaults, **fields})


# Titles ("Card a" ...) hold no keyword, so each vector is fixed by the text alone:
#   a → asthma axis; b → (2 asthma, 1 fever)/√5; c → fever axis; d → diabetes axis.
DOCS = [
    doc("a", "Asthma makes the airways narrow."),
    doc("b", "Asthma attacks with fever: asthma needs a plan."),
    doc("c", "A fever is 38C or more."),
    doc("d", "Diabetes raises blood sugar."),
]


@pytest.fixture
def client(tmp_path):
    return make_client(tmp_path)


@pytest.fixture
def index(client, fake_embedder):
    return SegmentIndex(client, COLLECTION, fake_embedder)


def stored_ids(index: SegmentIndex) -> set[str]:
    return set(index.collection().get()["ids"])


def test_first_sync_embeds_every_segment(index, fake_embedder):
    segments = segment_documents(DOCS)

    report = index.sync(segments, batch_size=3)

    assert (report.documents, report.segments, report.embedded, report.deleted, report.unchanged) == (4, 4, 4, 0, 0)
    assert fake_embedder.passage_calls == 2  # batches of 3 + 1
    assert index.count() == 4
    assert stored_ids(index) == {s.id for s in segments}
    assert fake_embedder.passages[0] == "Card a\nAsthma makes the airways narrow."  # title is embedded too


def test_resync_of_the_same_segments_embeds_nothing(index, fake_embedder):
    segments = segment_documents(DOCS)
    index.sync(segments)
    calls = fake_embedder.passage_calls

    report = index.sync(segments)

    assert fake_embedder.passage_calls == calls
    assert (report.embedded, report.metadata_updated, report.deleted, report.unchanged) == (0, 0, 0, 4)


def test_resync_from_a_new_process_embeds_nothing(client, tmp_path):
    segments = segment_documents(DOCS)
    SegmentIndex(client, COLLECTION, FakeEmbedder()).sync(segments)
    fresh = FakeEmbedder()

    report = SegmentIndex(make_client(tmp_path), COLLECTION, fresh).sync(segments)

    assert report.embedded == 0
    assert fresh.passage_calls == 0


def test_changed_document_replaces_its_old_segments(index, fake_embedder):
    index.sync(segment_documents(DOCS))
    old_c = segment_document(DOCS[2])
    new_docs = [*DOCS[:2], doc("c", "A fever is 38C or more; see a doctor."), DOCS[3]]
    new_c = segment_document(new_docs[2])
    fake_embedder.passages.clear()

    report = index.sync(segment_documents(new_docs))

    assert (report.embedded, report.deleted, report.unchanged) == (1, 1, 3)
    assert fake_embedder.passages == ["Card c\nA fever is 38C or more; see a doctor."]
    ids = stored_ids(index)
    assert old_c[0].id not in ids
    assert new_c[0].id in ids
    assert len(ids) == 4


def test_removed_document_segments_are_deleted(index, fake_embedder):
    index.sync(segment_documents(DOCS))
    calls = fake_embedder.passage_calls

    report = index.sync(segment_documents(DOCS[:3]))

    assert (report.deleted, report.embedded, report.documents) == (1, 0, 3)
    assert fake_embedder.passage_calls == calls
    assert stored_ids(index) == {s.id for s in segment_documents(DOCS[:3])}


def test_metadata_only_change_updates_in_place_without_embedding(index, fake_embedder):
    index.sync(segment_documents(DOCS))
    calls = fake_embedder.passage_calls
    moved = doc("d", DOCS[3].text, source_url="https://example.org/new-d", certified_on="2025-02-02")

    report = index.sync(segment_documents([*DOCS[:3], moved]))

    assert (report.metadata_updated, report.embedded, report.deleted, report.unchanged) == (1, 0, 0, 3)
    assert fake_embedder.passage_calls == calls
    (hit,) = index.search_vectors(unit(0, 1)[None, :], 1)[0]
    assert hit.segment.doc_id == "d"
    assert hit.segment.source_url == "https://example.org/new-d"
    assert hit.segment.certified_on == "2025-02-02"
    assert hit.segment.doc_hash == moved.content_hash()
    assert hit.score == pytest.approx(1.0, abs=1e-5)


def test_title_change_re_embeds_because_the_title_is_part_of_the_embedded_text(index, fake_embedder):
    index.sync(segment_documents(DOCS))
    fake_embedder.passages.clear()
    retitled = doc("c", DOCS[2].text, title="Sleep and fever")  # same text → same segment id

    report = index.sync(segment_documents([*DOCS[:2], retitled, DOCS[3]]))

    assert (report.embedded, report.metadata_updated, report.unchanged) == (1, 0, 3)
    assert fake_embedder.passages == ["Sleep and fever\nA fever is 38C or more."]
    segs, matrix = index.all_segments()
    stored = matrix[[s.doc_id for s in segs].index("c")]
    np.testing.assert_allclose(stored, unit(0, 0, 2, 1), atol=1e-6)  # fever twice, sleep once


def test_opening_with_another_embedder_raises_model_mismatch(client, index):
    index.sync(segment_documents(DOCS))

    other = SegmentIndex(client, COLLECTION, FakeEmbedder(name="other-model"))

    with pytest.raises(
        ModelMismatchError, match="built with 'fake-keywords' but the configured embedder is 'other-model'"
    ):
        other.search_vectors(unit(1)[None, :], 3)
    with pytest.raises(ModelMismatchError, match=r"run `chatbot ingest PATH` \(it re-embeds the index"):
        other.count()
    with pytest.raises(ModelMismatchError, match="other-model"):  # nothing is added with the wrong model either
        other.add_segments(segment_documents(DOCS[:1]))


class ReversedEmbedder(FakeEmbedder):
    """Another model: the keyword axes in reverse order, one dimension fewer (the 'other' axis dropped)."""

    dim = 4

    def _embed(self, texts):
        vectors = super()._embed(texts)[:, :4][:, ::-1]
        return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)


def test_sync_with_another_embedder_re_embeds_everything_and_keeps_managed_segments(client, index):
    index.sync(segment_documents(DOCS))
    managed = dataclasses.replace(segment_document(doc("m", "Sleep well: sleep matters."))[0], content_version=7)
    index.add_segments([managed])
    wanted = segment_documents(DOCS[:3])  # d is gone from the corpus meanwhile
    other = ReversedEmbedder(name="other-model")
    heard: list[str] = []

    report = SegmentIndex(client, COLLECTION, other).sync(wanted, batch_size=2, log=heard.append)

    assert (report.embedded, report.deleted, report.replaced_model) == (4, 1, "fake-keywords")
    assert heard == [
        "index 'test-certified' was built with 'fake-keywords'; re-embedding 4 segments with 'other-model' "
        "(the old collection stays until the new one is complete)"
    ]
    assert sorted(other.passages) == sorted(["Card a\nAsthma makes the airways narrow.",
        "Card b\nAsthma attacks with fever: asthma needs a plan.", "Card c\nA fever is 38C or more.",
        "Card m\nSleep well: sleep matters."])  # fmt: skip
    reopened = SegmentIndex(client, COLLECTION, ReversedEmbedder(name="other-model"))
    meta = reopened.collection().metadata
    assert (meta["embedding_model"], meta["embedding_dim"]) == ("other-model", 4)
    segs, matrix = reopened.all_segments()
    assert sorted(s.id for s in segs) == sorted([s.id for s in wanted] + [managed.id])
    assert [s.content_version for s in segs if s.doc_id == "m"] == [7]
    np.testing.assert_allclose(matrix[[s.doc_id for s in segs].index("a")], [0, 0, 0, 1], atol=1e-6)
    assert reopened.search_vectors(np.array([[0, 0, 0, 1.0]]), 1)[0][0].segment.doc_id == "a"
    assert sorted(c.name if hasattr(c, "name") else c for c in client.list_collections()) == [COLLECTION]
    assert reopened.sync(wanted).embedded == 0  # now an ordinary incremental index


def test_an_interrupted_re_embed_leaves_the_old_index_and_the_next_sync_completes(client, index, fake_embedder):
    index.sync(segment_documents(DOCS))

    class Failing(ReversedEmbedder):
        def embed_passages(self, texts):
            if self.passage_calls >= 1:
                raise RuntimeError("killed")
            return super().embed_passages(texts)

    with pytest.raises(RuntimeError, match="killed"):
        SegmentIndex(client, COLLECTION, Failing(name="other-model")).sync(segment_documents(DOCS), batch_size=2)

    old = SegmentIndex(client, COLLECTION, FakeEmbedder())
    assert old.count() == 4 and old.search_vectors(unit(1)[None, :], 1)[0][0].segment.doc_id == "a"
    report = SegmentIndex(client, COLLECTION, ReversedEmbedder(name="other-model")).sync(segment_documents(DOCS))
    assert (report.embedded, report.replaced_model) == (4, "fake-keywords")
    assert sorted(c.name if hasattr(c, "name") else c for c in client.list_collections()) == [COLLECTION]


def test_querying_a_missing_collection_names_chatbot_ingest(client, fake_embedder):
    index = SegmentIndex(client, "never-built", fake_embedder)

    with pytest.raises(MissingIndexError, match=r"no index named 'never-built' yet; build it with `chatbot ingest"):
        index.search_vectors(unit(1)[None, :], 3)
    with pytest.raises(MissingIndexError, match="chatbot ingest"):
        index.count()


@pytest.mark.parametrize("exact", [False, True], ids=["hnsw", "exact"])
def test_search_vectors_exact_order_on_hand_made_vectors(client, fake_embedder, exact):
    index = SegmentIndex(client, COLLECTION, fake_embedder, exact=exact)
    index.sync(segment_documents(DOCS))
    # a=(1,0,0) b=(2,0,1)/√5 c=(0,0,1) d=(0,1,0) on the (asthma, diabetes, fever) axes
    queries = np.vstack([unit(0.8, 0, 0.6), unit(0.1, 1, 0.3), unit(0.2, 0, 1)])

    results = index.search_vectors(queries, 3)

    assert [[h.segment.doc_id for h in row] for row in results] == [["b", "a", "c"], ["d", "c", "b"], ["c", "b", "a"]]
    assert [h.score for h in results[0]] == pytest.approx([2.2 / np.sqrt(5), 0.8, 0.6], abs=1e-5)
    norm = np.sqrt(0.2**2 + 1)
    assert [h.score for h in results[2]] == pytest.approx([1 / norm, 1.4 / np.sqrt(5) / norm, 0.2 / norm], abs=1e-5)
    top = results[0][0].segment
    assert (top.text, top.source_url, top.title) == (DOCS[1].text, "https://example.org/b", "Card b")


@pytest.mark.parametrize("exact", [False, True], ids=["hnsw", "exact"])
def test_search_returns_at_most_what_the_index_holds(client, fake_embedder, exact):
    index = SegmentIndex(client, COLLECTION, fake_embedder, exact=exact)
    index.sync(segment_documents(DOCS[:2]))

    (row,) = index.search_vectors(unit(1)[None, :], 10)

    assert [h.segment.doc_id for h in row] == ["a", "b"]


def test_search_on_an_empty_collection_returns_no_hits(index):
    index.sync([])

    assert index.search_vectors(np.vstack([unit(1), unit(0, 1)]), 5) == [[], []]


def test_exact_search_sees_segments_synced_after_the_first_query(client, fake_embedder):
    index = SegmentIndex(client, COLLECTION, fake_embedder, exact=True)
    index.sync(segment_documents(DOCS[:1]))
    assert [h.segment.doc_id for h in index.search_vectors(unit(0, 1)[None, :], 5)[0]] == ["a"]

    index.sync(segment_documents(DOCS))

    assert index.search_vectors(unit(0, 1)[None, :], 1)[0][0].segment.doc_id == "d"


def test_collection_is_pinned_to_the_model_and_cosine(index):
    index.sync(segment_documents(DOCS))

    meta = index.collection().metadata

    assert meta["embedding_model"] == "fake-keywords"
    assert meta["embedding_dim"] == 5
    assert meta["hnsw:space"] == "cosine"


def test_chroma_never_uses_its_default_embedding_function(monkeypatch, client, fake_embedder):
    from chromadb.utils import embedding_functions

    def forbidden(*args, **kwargs):
        raise AssertionError("chromadb tried to use its default (downloaded) embedding model")

    for name in ("DefaultEmbeddingFunction", "ONNXMiniLM_L6_V2"):
        cls = getattr(embedding_functions, name, None)
        if cls is not None:
            monkeypatch.setattr(cls, "__init__", forbidden)
            monkeypatch.setattr(cls, "__call__", forbidden)

    index = SegmentIndex(client, COLLECTION, fake_embedder)
    index.sync(segment_documents(DOCS))
    assert index.search_vectors(unit(1)[None, :], 1)[0][0].segment.doc_id == "a"
    reopened = SegmentIndex(client, COLLECTION, fake_embedder)
    assert reopened.count() == 4

    coll = reopened.collection()
    with pytest.raises(Exception, match="precomputed embeddings only"):
        coll.add(ids=["raw"], documents=["text without a vector"])

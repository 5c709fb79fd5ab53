"""The cross-language pick's segment vectors embedded ahead of the question (chatbot.stages.crosslang_vectors): what
ingest stores, that a stored segment is never embedded at a question, that a changed card is embedded again and its
old rows dropped, and that the pick reads a changed document afresh."""

from __future__ import annotations

import types

import numpy as np
import pytest

from chatbot.stages.answer_units import MAX_SEGMENTS, UnitVectors, digest
from chatbot.stages.cross_language_pick import documents_for
from chatbot.stages.crosslang_vectors import (
    StoredEmbedder,
    pick_used,
    segment_text,
    store_path,
    stored_embedder,
    warm,
    warm_crosslang_vectors,
)
from corpus.model import Segment
from tests.conftest import FakeEmbedder


class CallLog(FakeEmbedder):
    """The keyword fake, recording each embed_passages call's texts."""

    def __init__(self) -> None:
        super().__init__("fake-use")
        self.calls: list[list[str]] = []

    def embed_passages(self, texts):
        self.calls.append(list(texts))
        return super().embed_passages(texts)


def _seg(sid: str, doc: str, text: str, heading: str = "") -> Segment:
    return Segment(sid, doc, text, f"Card {doc}", f"https://example.org/{doc}", 0, heading=heading, language="en")


FEVER = _seg("fever#0", "fever", "A fever in a baby under 3 months needs a doctor the same day.", "Fever")
SLEEP = _seg("sleep#0", "sleep", "Put your baby to sleep on the back.")


def _services(tmp_path, segments: list[Segment]):
    index = types.SimpleNamespace(
        all_segments=lambda: (list(segments), np.zeros((len(segments), 3))),
        count=lambda: len(segments),
        document_segments=lambda d: [s for s in segments if s.doc_id == d],
    )
    from chatbot.settings import load_settings

    return types.SimpleNamespace(settings=load_settings(), data_dir=tmp_path, collection_name="cards", index=index)


def test_segment_text_is_the_embedding_text_with_title_and_heading() -> None:
    assert segment_text(FEVER) == "Card fever: Fever\nA fever in a baby under 3 months needs a doctor the same day."
    assert segment_text(SLEEP) == "Card sleep\nPut your baby to sleep on the back."
    assert len(segment_text(_seg("x#0", "x", "word " * 400))) == 1200


def test_ingest_stores_every_segment_once_and_drops_a_changed_cards_old_rows(tmp_path) -> None:
    segments = [FEVER, SLEEP]
    services = _services(tmp_path, segments)
    encoder = CallLog()

    report = warm(services, encoder)
    assert report is not None and (report["segments"], report["embedded"]) == (2, 2)
    path = store_path(tmp_path, "cards")
    assert path == tmp_path / "crosslang-vectors" / "cards.npz" and path.is_file()
    store = UnitVectors.load(path, "fake-use")
    assert set(store.vectors) == {digest(segment_text(FEVER)), digest(segment_text(SLEEP))}
    np.testing.assert_array_equal(store.get(segment_text(SLEEP)), encoder._embed([segment_text(SLEEP)])[0])
    assert warm(services, encoder)["embedded"] == 0 and len(encoder.calls) == 1  # unchanged cards: nothing embedded

    changed = _seg("sleep#0", "sleep", "Put your baby to sleep on the back, in a cot in your room.")
    segments[1] = changed
    assert warm(services, encoder)["embedded"] == 1
    assert encoder.calls[-1] == [segment_text(changed)]
    store = UnitVectors.load(path, "fake-use")
    assert set(store.vectors) == {digest(segment_text(FEVER)), digest(segment_text(changed))}  # old row dropped
    assert UnitVectors.load(path, "another-encoder").vectors == {}  # another encoder's file is not read


def test_a_stored_segment_is_never_embedded_at_the_question(tmp_path) -> None:
    services = _services(tmp_path, [FEVER, SLEEP])
    encoder = CallLog()
    embedder = stored_embedder(services, encoder)  # no file yet: warmed whole and saved at first use
    assert store_path(tmp_path, "cards").is_file() and encoder.calls == [[segment_text(FEVER), segment_text(SLEEP)]]

    got = embedder.embed_passages([segment_text(SLEEP), segment_text(FEVER)])
    assert len(encoder.calls) == 1
    np.testing.assert_array_equal(got, encoder._embed([segment_text(SLEEP), segment_text(FEVER)]))

    fresh = StoredEmbedder(UnitVectors.load(store_path(tmp_path, "cards"), "fake-use"), encoder)
    new = "Card new\nA card published after the last ingest."
    fresh.embed_passages([new, segment_text(FEVER)])
    fresh.embed_passages([new])
    assert encoder.calls[1:] == [[new]]  # the missing text once, then from memory
    assert fresh.embed_passages([]).shape == (0, encoder.dim)


def test_the_pick_reads_a_republished_card_afresh(tmp_path) -> None:
    segments = [FEVER, SLEEP]
    services = _services(tmp_path, segments)
    encoder = CallLog()
    embedder = stored_embedder(services, encoder)
    cache: dict = {}
    first = documents_for(["fever", "sleep"], services.index.document_segments, embedder.embed_passages, cache)
    again = documents_for(["fever", "sleep"], services.index.document_segments, embedder.embed_passages, cache)
    assert [d.doc_id for d in first] == ["fever", "sleep"] and again[0] is first[0] and again[1] is first[1]
    assert len(encoder.calls) == 1

    segments[0] = _seg("fever#0", "fever", "Call 112 for a fever with a rash that does not fade.", "Fever")
    third = documents_for(["fever"], services.index.document_segments, embedder.embed_passages, cache)
    assert third[0] is not first[0] and third[0].segments == (("Fever", segments[0].text),)
    assert encoder.calls[1:] == [[segment_text(segments[0])]]
    np.testing.assert_array_equal(third[0].vectors, encoder._embed([segment_text(segments[0])]))


def test_nothing_is_warmed_when_the_pick_is_off_or_the_index_is_a_benchmark(tmp_path) -> None:
    services = _services(tmp_path, [FEVER])
    assert pick_used(services.settings)  # on by default (Italian)
    services.settings.retrieval.cross_language_pick = {}
    assert not pick_used(services.settings) and warm_crosslang_vectors(services) is None
    services.index.count = lambda: MAX_SEGMENTS + 1
    assert warm(services, CallLog()) is None and not store_path(tmp_path, "cards").exists()


@pytest.mark.integration
def test_a_stored_use_vector_is_the_one_the_question_time_batch_gives() -> None:
    """The store embeds segments in batches of 32 at ingest, the pick used to embed a document's segments together at
    the question: multilingual USE gives a text the same vector in any batch, so the stored vectors change no pick."""
    from chatbot.embedders import USEEmbedder

    texts = [segment_text(FEVER), segment_text(SLEEP), "Scheda\nIl caffè in gravidanza: al massimo 200 mg al giorno."]
    use = USEEmbedder(threads=1)
    together = use.embed_passages(texts)
    alone = np.stack([use.embed_passages([t])[0] for t in texts])
    assert together.shape == (3, 512) and float(np.abs(together - alone).max()) < 1e-5

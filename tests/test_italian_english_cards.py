"""An Italian question whose answer sits only in an English card: the other-language pool searched on its own
(DenseRetriever.other_language), its first document as the answer pool's candidate (retrieval.answer_pool_source
= separate) and the relevance gate's second look across languages (chatbot.stages.cross_language_gate)."""

from __future__ import annotations

import math

import numpy as np

from chatbot.index import Hit
from chatbot.pipeline import RetrievalResult
from chatbot.stages.answer_pool import separate_candidate
from chatbot.stages.cross_language_gate import cross_language_score, mixed_view, second_look
from corpus.segmenter import passage_key
from tests.segments import seg as make_seg
from tests.test_answer_pool import CAFFE, FEBBRE, FOLATO, SONNO, TEA, VITD, WINE, doc_ids, hit
from tests.test_cross_language_offset import BasisEmbedder, BasisIndex


class AdaptedBasis(BasisEmbedder):
    """A query adapter over BasisEmbedder: ``adapt`` adds ``shift`` to Italian-card components of the question."""

    def __init__(self, questions, shift) -> None:
        super().__init__(questions)
        self.raw = BasisEmbedder(questions)
        self.shift = np.asarray(shift, dtype=np.float32)

    def adapt(self, raw, texts):
        v = np.asarray(raw, dtype=np.float32) + self.shift
        return v / np.linalg.norm(v, axis=1, keepdims=True)


class VectorIndex(BasisIndex):
    def vectors_of(self, ids):
        return np.eye(len(self.segments), dtype=np.float32)[[int(i[1:]) for i in ids]]


Q = "Quando si fa l'ecografia?"
LANGS = ["it", "it", "it", "it", "en", "it", "en", "en"]
# raw cosines in that order: the English cards (4, 6, 7) rank 5th, 7th and 8th of the whole list
COMPONENTS = [0.9, 0.88, 0.86, 0.85, 0.84, 0.8, 0.7, 0.6]


def test_the_other_language_pool_is_searched_on_its_own_deeper_than_k_with_raw_cosines() -> None:
    from chatbot.stages.retrieve import DenseRetriever

    index = BasisIndex(LANGS)
    dense = DenseRetriever(index, BasisEmbedder({Q: COMPONENTS}))
    got = dense.other_language(Q, "it", k=2)
    assert doc_ids(got) == ["en-card-4", "en-card-6"]
    norm = float(np.linalg.norm(COMPONENTS))
    assert [round(h.detail["dense"], 4) for h in got] == [round(0.84 / norm, 4), round(0.7 / norm, 4)]
    assert index.fetches == [50]  # one search over the 8 passages found both
    assert dense.other_language(Q, "en", k=3) == dense.other_language(Q, "en", k=3)
    assert doc_ids(dense.other_language(Q, "en", k=3)) == ["it-card-0", "it-card-1", "it-card-2"]
    # a one-language index: nothing in another language
    assert DenseRetriever(BasisIndex(["it"] * 8), BasisEmbedder({Q: COMPONENTS})).other_language(Q, "it", 3) == []


def test_with_an_adapter_the_pool_is_ordered_by_the_adapted_vector_and_keeps_the_raw_cosine() -> None:
    from chatbot.stages.retrieve import DenseRetriever

    # the adapter lifts English card 7 above card 4 (0.6 + 0.3 > 0.84)
    shift = [0, 0, 0, 0, 0, 0, 0, 0.3]
    dense = DenseRetriever(VectorIndex(LANGS), AdaptedBasis({Q: COMPONENTS}, shift))
    got = dense.other_language(Q, "it", k=2)
    assert doc_ids(got) == ["en-card-7", "en-card-4"]
    norm = float(np.linalg.norm(COMPONENTS))
    assert round(got[0].detail["dense"], 4) == round(0.6 / norm, 4)  # the raw e5 cosine, for the gate
    assert got[0].detail["dense_adapted"] > got[1].detail["dense_adapted"]


def test_after_the_question_s_own_search_the_pool_reuses_its_vectors() -> None:
    """Through the encoder's query cache (chatbot.vector_cache, as the e5 runtime's embed_queries): the question is
    embedded once for its search and both pool lookups."""
    from chatbot.stages.retrieve import DenseRetriever
    from chatbot.vector_cache import VectorCache

    embedder = AdaptedBasis({Q: COMPONENTS}, [0, 0, 0, 0, 0, 0, 0, 0.3])
    calls: list[list[str]] = []
    embed = embedder.raw.embed_queries
    embedder.raw.embed_queries = VectorCache(lambda texts: (calls.append(list(texts)), embed(texts))[1]).embed
    dense = DenseRetriever(VectorIndex(LANGS), embedder)
    fresh = dense.other_language(Q, "it", k=2)  # never searched: embedded here
    assert calls == [[Q]]
    dense(Q, k=3)
    assert calls == [[Q]]
    again = dense.other_language(Q, "it", k=2)  # the search's vector, no second embedding
    assert calls == [[Q]]
    assert doc_ids(again) == doc_ids(fresh) == ["en-card-7", "en-card-4"]
    assert [h.detail["dense"] for h in again] == [h.detail["dense"] for h in fresh]


def test_the_separate_pool_offers_its_first_unlinked_card_whatever_its_cosine() -> None:
    top = [hit(FOLATO, 0.86), hit(SONNO, 0.85), hit(FEBBRE, 0.84)]
    far = [hit(VITD, 0.70), hit(TEA, 0.69)]  # far below the links: the candidate rule (delta 0.02) takes none
    asked: list[int] = []

    def search(k):
        asked.append(k)
        return far

    extra = separate_candidate(top, search, "it", {"it": 0.02})
    assert extra is not None and extra.segment.doc_id == "vitd" and asked == [6]
    assert separate_candidate(top, search, "it", {"it": 0.02}, urgent={"vitd"}).segment.doc_id == "tea"
    # an English question, no setting, or links not in the question's language: nothing
    assert separate_candidate(top, search, "en", {"it": 0.02}) is None
    assert separate_candidate(top, search, "it", {}) is None
    assert separate_candidate([hit(WINE, 0.9)], search, "it", {"it": 0.02}) is None
    assert separate_candidate(top, lambda k: [], "it", {"it": 0.02}) is None


def result_of(top: list[Hit], rest: list[Hit]) -> RetrievalResult:
    return RetrievalResult("q", [*top, *rest], [*top, *rest], list(top))


def test_the_mixed_view_links_the_other_language_card_first() -> None:
    top = [hit(FOLATO, 0.86), hit(SONNO, 0.85), hit(FEBBRE, 0.84)]
    view = mixed_view(result_of(top, [hit(CAFFE, 0.8)]), hit(VITD, 0.7), top_n=3)
    assert doc_ids(view.top) == ["vitd", "folato", "sonno"]
    assert doc_ids(view.ranked) == ["vitd", "folato", "sonno", "febbre", "caffe-it"]


def test_the_mixed_view_drops_a_copy_of_the_card_and_links_the_next_document() -> None:
    # "vitd-leaflet" publishes the Vitamin D card's passage again; it was ranked first, the card itself not at all
    leaflet = make_seg("vitd-leaflet", VITD.text.upper(), title="Vitamin D leaflet", language="en")
    top = [hit(leaflet, 0.9), hit(FOLATO, 0.86), hit(SONNO, 0.85)]
    result = result_of(top, [hit(FEBBRE, 0.84), hit(CAFFE, 0.8)])
    card = hit(VITD, 0.7)

    view = mixed_view(result, card, top_n=3)

    assert doc_ids(view.top) == ["vitd", "folato", "sonno"]
    assert doc_ids(view.ranked) == ["vitd", "folato", "sonno", "febbre", "caffe-it"]
    # a copy of another passage of the card's document, named in ``passages``
    other = make_seg("sonno-copy", SONNO.text, title="Sonno", language="it")
    result = result_of([hit(other, 0.9), hit(FOLATO, 0.86)], [hit(FEBBRE, 0.84)])
    assert doc_ids(mixed_view(result, card, 3, passages={passage_key(SONNO)}).top) == ["vitd", "folato", "febbre"]
    assert doc_ids(mixed_view(result, card, 3).top) == ["vitd", "sonno-copy", "folato"]


def test_the_cross_language_score_is_the_gate_logit_plus_the_slope_times_the_cosine_gap() -> None:
    assert round(cross_language_score(0.5, 0.84, 0.86, 50.0), 6) == -1.0
    assert round(cross_language_score(0.2, 0.86, 0.86, 50.0), 6) == round(math.log(0.25), 6)
    assert round(cross_language_score(0.0, 0.86, 0.86, 50.0), 4) == round(math.log(1e-4 / (1 - 1e-4)), 4)


def test_the_second_look_answers_only_when_the_score_reaches_the_languages_cut() -> None:
    top = [hit(FOLATO, 0.86), hit(SONNO, 0.85), hit(FEBBRE, 0.84)]
    result = result_of(top, [])
    pool = [hit(VITD, 0.84), hit(TEA, 0.83)]  # the pool's first document is the one looked at
    # logit(0.2) + 50 * (0.84 - 0.86) = -1.3863 - 1.0 = -2.3863
    doc, trace = second_look(result, "it", {"it": (50.0, -2.5)}, lambda k: pool, 0.2)
    assert doc is not None and doc.segment.doc_id == "vitd"
    assert trace == {
        "cross_language": {"doc_id": "vitd", "dense": 0.84, "score": -2.3863, "cut": -2.5, "relevant": True}
    }
    doc, trace = second_look(result, "it", {"it": (50.0, -2.3)}, lambda k: pool, 0.2)
    assert doc is None and trace["cross_language"]["relevant"] is False
    # a steeper slope punishes the same gap more
    assert second_look(result, "it", {"it": (100.0, -2.5)}, lambda k: pool, 0.2)[0] is None
    # no rule for the language (English questions by default), no probability, an urgent card, no candidate
    assert second_look(result, "en", {"it": (50.0, -2.5)}, lambda k: pool, 0.2) == (None, {})
    assert second_look(result, "it", {"it": (50.0, -2.5)}, lambda k: pool, None) == (None, {})
    assert second_look(result, "it", {"it": (50.0, -2.5)}, lambda k: pool, 0.2, urgent={"vitd"})[0] is None
    assert second_look(result, "it", {"it": (50.0, -2.5)}, lambda k: [], 0.2)[0] is None
    # the pool's first document already linked (third): the same score, and it is the one answered from
    linked = result_of([hit(FOLATO, 0.86), hit(SONNO, 0.85), hit(VITD, 0.84)], [])
    doc, trace = second_look(linked, "it", {"it": (50.0, -2.5)}, lambda k: pool, 0.2)
    assert doc is not None and doc.segment.doc_id == "vitd" and trace["cross_language"]["score"] == -2.3863
    assert doc_ids(mixed_view(linked, doc).top) == ["vitd", "folato", "sonno"]
    # links in another language than the question's: nothing to look across
    en_result = result_of([hit(WINE, 0.9)], [])
    assert second_look(en_result, "it", {"it": (50.0, -2.5)}, lambda k: [hit(VITD, 0.89)], 0.2) == (None, {})


def test_the_default_settings_look_across_for_italian_questions_only() -> None:
    from chatbot.settings import Settings

    rules = Settings().safety.cross_language_gate
    assert set(rules) == {"it"} and len(rules["it"]) == 2 and rules["it"][0] > 0
    assert Settings().retrieval.answer_pool_source == "separate"

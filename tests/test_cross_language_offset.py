"""retrieval.cross_language_offset: an Italian question's English passages get +δ on their cosine (so an English
card that answers it can be linked); an English question's order is untouched; the gate keeps the raw cosine."""

from __future__ import annotations

import numpy as np

from chatbot.index import Hit
from corpus.model import Segment


class BasisEmbedder:
    """Passage i is the unit vector e_i; a question is a fixed vector, so cosine_i = q_i / |q|."""

    name = "basis"

    def __init__(self, questions: dict[str, list[float]]) -> None:
        self.questions = questions
        self.dim = len(next(iter(questions.values())))

    def embed_queries(self, texts):
        v = np.array([self.questions[t] for t in texts], dtype=np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)


class BasisIndex:
    """Segments searched exactly over unit basis vectors; counts the depth of each search."""

    def __init__(self, languages: list[str]) -> None:
        self.segments = [
            Segment(id=f"s{i}", doc_id=f"{lang}-card-{i}", title="", text="", source_url="", position=0, language=lang)
            for i, lang in enumerate(languages)
        ]
        self.fetches: list[int] = []

    def search_vectors(self, queries, k):
        self.fetches.append(k)
        out = []
        for q in np.asarray(queries):
            order = np.argsort(-q, kind="stable")[:k]
            out.append([Hit(self.segments[i], float(q[i])) for i in order])
        return out

    def has_language_other_than(self, language: str) -> bool:
        return any(s.language != language for s in self.segments)


IT_Q = "Quando si fa l'ecografia morfologica in gravidanza?"
EN_Q = "When is the anomaly scan done in pregnancy?"
# cosines: it-card 0.6249, en-card 0.6110, it-other 0.4860 (|q| = 1.4404)
COMPONENTS = [0.90, 0.88, 0.70]
LANGS = ["it", "en", "it"]


def retriever(offsets, languages=LANGS, components=COMPONENTS):
    from chatbot.stages.retrieve import DenseRetriever

    embedder = BasisEmbedder({IT_Q: components, EN_Q: components})
    return DenseRetriever(BasisIndex(languages), embedder, offsets)


def test_italian_question_english_card_moves_first_with_the_raw_cosine_kept() -> None:
    plain = retriever({})(IT_Q, k=3)
    assert [h.segment.id for h in plain] == ["s0", "s1", "s2"]
    moved = retriever({"it": 0.03})(IT_Q, k=3)
    assert [h.segment.id for h in moved] == ["s1", "s0", "s2"]
    assert [round(h.score, 4) for h in moved] == [0.641, 0.6249, 0.486]
    assert [round(h.detail["dense"], 4) for h in moved] == [0.611, 0.6249, 0.486]  # the gate's raw cosine
    assert [h.detail.get("cross_language_offset") for h in moved] == [0.03, None, None]
    # δ below the gap (0.0139) changes nothing
    assert [h.segment.id for h in retriever({"it": 0.01})(IT_Q, k=3)] == ["s0", "s1", "s2"]


def test_english_question_is_unchanged() -> None:
    plain = retriever({})(EN_Q, k=3)
    hits = retriever({"it": 0.03})(EN_Q, k=3)
    assert [h.segment.id for h in hits] == [h.segment.id for h in plain] == ["s0", "s1", "s2"]
    assert [h.score for h in hits] == [h.score for h in plain]
    assert all("cross_language_offset" not in h.detail for h in hits)


def test_an_english_card_below_the_first_fetch_is_found_exactly() -> None:
    # 15 Italian passages just above the English one (cosine components 0.90 .. 0.76), the English one at 0.75:
    # +0.2 puts it first although the first fetch (k + 10 = 11 passages) does not reach it.
    components = [0.90 - 0.01 * i for i in range(15)] + [0.75]
    r = retriever({"it": 0.2}, languages=["it"] * 15 + ["en"], components=components)
    hits = r(IT_Q, k=1)
    assert [h.segment.id for h in hits] == ["s15"]
    assert r.index.fetches == [1, 11, 44]


def test_a_one_language_corpus_is_not_searched_again() -> None:
    r = retriever({"it": 0.03}, languages=["it", "it", "it"])
    assert [h.segment.id for h in r(IT_Q, k=2)] == ["s0", "s1"]
    assert r.index.fetches == [2]  # no deeper search: no passage in another language
    everything_english = retriever({"it": 0.03}, languages=["en", "en", "en"])
    hits = everything_english(IT_Q, k=2)  # MEDIQA-it: every passage gets +δ, so the order is the same
    assert [h.segment.id for h in hits] == ["s0", "s1"]
    assert [round(h.detail["dense"], 4) for h in hits] == [0.6249, 0.611]


def test_services_read_the_setting_at_each_search() -> None:
    from chatbot.pipeline import Services
    from chatbot.settings import Settings

    settings = Settings()
    assert settings.retrieval.cross_language_offset == {}  # off by default (italian-cross-language-s9.md)
    services = Services(settings)
    services.__dict__["query_embedder"] = BasisEmbedder({IT_Q: COMPONENTS, EN_Q: COMPONENTS})
    services.__dict__["index"] = BasisIndex(LANGS)
    settings.retrieval.cross_language_offset = {}
    assert [h.segment.id for h in services.dense(IT_Q, 3)] == ["s0", "s1", "s2"]
    settings.retrieval.cross_language_offset = {"it": 0.03}  # as `eval replies --versus` changes it
    assert [h.segment.id for h in services.dense(IT_Q, 3)] == ["s1", "s0", "s2"]
    assert [h.segment.id for h in services.dense(EN_Q, 3)] == ["s0", "s1", "s2"]


def test_real_index_language_check_and_offset(tmp_path) -> None:
    """Over a real Chroma index (keyword vectors): an Italian card equal to the question (cosine 1.0) and an
    English one at 0.949; +0.06 on the English card links it first, and the index reports its languages."""
    from chatbot.index import SegmentIndex, make_client
    from chatbot.stages.retrieve import DenseRetriever
    from corpus.model import Document
    from corpus.segmenter import segment_documents
    from tests.conftest import FakeEmbedder as KeywordEmbedder

    embedder = KeywordEmbedder()
    docs = [
        Document(id="it-card", text="asthma asthma fever", title="Scheda", source_url="https://x.it", language="it"),
        Document(id="en-card", text="asthma fever", title="Card", source_url="https://x.org/en", language="en"),
    ]
    index = SegmentIndex(make_client(tmp_path / "db"), "xl-test", embedder)
    index.sync(segment_documents(docs))
    assert index.has_language_other_than("it") and index.has_language_other_than("en")
    assert index.has_language_other_than("fr")  # both cards are in another language than French
    italian = lambda text: "it"  # noqa: E731 - the question's language, fixed for the test
    plain = DenseRetriever(index, embedder, {}, italian)("asthma asthma fever", k=2)
    assert [h.segment.doc_id for h in plain] == ["it-card", "en-card"]
    hits = DenseRetriever(index, embedder, {"it": 0.06}, italian)("asthma asthma fever", k=2)
    assert [h.segment.doc_id for h in hits] == ["en-card", "it-card"]
    assert [round(h.detail["dense"], 3) for h in hits] == [0.949, 1.0]
    english = DenseRetriever(index, embedder, {"it": 0.06}, lambda text: "en")("asthma asthma fever", k=2)
    assert [h.segment.doc_id for h in english] == ["it-card", "en-card"]


def test_the_gate_sees_the_raw_order_when_an_offset_moved_the_links() -> None:
    from chatbot.pipeline import RetrievalResult, Services
    from chatbot.settings import Settings
    from chatbot.stages.relevance import raw_order_view

    services = Services(Settings())
    index = BasisIndex(["it", "it", "en", "it", "it"])
    seg = index.segments

    def hit(i: int, dense: float, delta: float = 0.0) -> Hit:
        detail = {"dense": dense, **({"cross_language_offset": delta} if delta else {})}
        return Hit(seg[i], dense + delta, detail)

    # what the offset produced: the English card (raw 0.84) first, the third Italian card (0.846) fourth
    moved = [hit(2, 0.84, 0.02), hit(0, 0.849), hit(1, 0.848), hit(3, 0.846), hit(4, 0.838)]
    result = RetrievalResult(IT_Q, moved, moved, moved[:3])
    view = raw_order_view(result, services)
    assert [h.segment.id for h in view.top] == ["s0", "s1", "s3"]
    assert [h.score for h in view.top] == [0.849, 0.848, 0.846]
    assert [h.segment.id for h in result.top] == ["s2", "s0", "s1"]  # the links themselves are left as they are
    unmoved = [hit(0, 0.849), hit(1, 0.848), hit(3, 0.846)]
    plain = RetrievalResult(EN_Q, unmoved, unmoved, unmoved)
    assert raw_order_view(plain, services) is plain

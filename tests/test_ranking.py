from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from chatbot.index import Hit
from chatbot.stages.rerank import FusionReranker, best_per_document, rerank
from chatbot.stages.retrieve import BM25Retriever
from corpus.model import Segment


def seg(sid: str, doc_id: str, text: str = "") -> Segment:
    return Segment(
        id=sid,
        doc_id=doc_id,
        text=text or f"text of {sid}",
        title=f"Card {doc_id}",
        source_url=f"https://example.org/{doc_id}",
        position=0,
    )


def hit(sid: str, doc_id: str, score: float) -> Hit:
    return Hit(seg(sid, doc_id), score, {"dense": score})


def ids(hits: Sequence[Hit]) -> list[str]:
    return [h.segment.id for h in hits]


SEGMENTS = [
    seg("a1", "a", "Asthma inhaler technique for children."),
    seg("b1", "b", "Wheezing and asthma at night."),
    seg("c1", "c", "Montelukast tablets can prevent wheezing."),
    seg("d1", "d", "Fever and wheezing in babies."),
    seg("a2", "a", "Peak flow diary for asthma."),
]

# Bi-encoder candidates in dense order; min-max dense: a1 1.0, c1 0.8, d1 0.6, b1 0.1, a2 0.0.
DENSE = {"a1": 0.9, "c1": 0.8, "d1": 0.7, "b1": 0.45, "a2": 0.4}


@pytest.fixture(scope="module")
def bm25() -> BM25Retriever:
    return BM25Retriever(SEGMENTS)


@pytest.fixture
def candidates() -> list[Hit]:
    by_id = {s.id: s for s in SEGMENTS}
    return [Hit(by_id[sid], score, {"dense": score}) for sid, score in DENSE.items()]


# -- best_per_document --------------------------------------------------------


def test_best_per_document_keeps_each_documents_best_segment_in_score_order():
    hits = [hit("a1", "a", 0.3), hit("b1", "b", 0.9), hit("a2", "a", 0.8), hit("c1", "c", 0.5), hit("b2", "b", 0.95)]

    assert ids(best_per_document(hits)) == ["b2", "a2", "c1"]


def test_best_per_document_cuts_at_n():
    hits = [hit("a1", "a", 0.3), hit("b1", "b", 0.9), hit("a2", "a", 0.8), hit("c1", "c", 0.5), hit("d1", "d", 0.1)]

    assert ids(best_per_document(hits, 2)) == ["b1", "a2"]
    assert ids(best_per_document(hits, 10)) == ["b1", "a2", "c1", "d1"]
    assert best_per_document([], 3) == []


def test_best_per_document_breaks_ties_by_input_order():
    hits = [hit("x1", "x", 0.5), hit("y1", "y", 0.5), hit("x2", "x", 0.5)]

    assert ids(best_per_document(hits)) == ["x1", "y1"]


def test_best_per_document_shows_a_passage_published_under_two_documents_once():
    same = "Take  folic acid before pregnancy."
    hits = [
        Hit(seg("x1", "x", same), 0.9, {}),
        Hit(seg("y1", "y", "take folic acid before\npregnancy."), 0.9, {}),  # same words, other spaces and case
        Hit(seg("z1", "z", "Iron-rich foods."), 0.7, {}),
        Hit(seg("y2", "y", "Folate in green vegetables."), 0.6, {}),
    ]

    assert ids(best_per_document(hits)) == ["x1", "z1", "y2"]
    assert ids(best_per_document(hits, 2)) == ["x1", "z1"]


def test_best_per_document_skips_a_copy_of_any_listed_documents_passage():
    # y holds x's two passages; x is listed with x2, so y's copy of x1 is not a new passage either
    hits = [
        Hit(seg("x2", "x", "Folate in green vegetables."), 0.9, {}),
        Hit(seg("y1", "y", "Take folic acid before pregnancy."), 0.8, {}),
        Hit(seg("x1", "x", "Take folic acid before pregnancy."), 0.8, {}),
        Hit(seg("y2", "y", "Folate in green vegetables."), 0.9, {}),
        Hit(seg("z1", "z", "Iron-rich foods."), 0.7, {}),
    ]

    assert ids(best_per_document(hits)) == ["x2", "z1"]


def test_best_per_document_never_takes_segments_without_text_for_copies():
    empty = [Segment(id=f"{d}1", doc_id=d, text="", title=d, source_url="", position=0) for d in ("x", "y")]
    hits = [Hit(empty[0], 0.9, {}), Hit(empty[1], 0.8, {})]

    assert ids(best_per_document(hits)) == ["x1", "y1"]


# -- rerank -------------------------------------------------------------------


class FakeReranker:
    name = "fake"

    def __init__(self, scores: dict[str, float]) -> None:
        self.scores = scores
        self.calls: list[tuple[str, list[str]]] = []

    def score(self, question: str, hits: Sequence[Hit]) -> np.ndarray:
        self.calls.append((question, ids(hits)))
        return np.array([self.scores[h.segment.id] for h in hits], dtype=np.float32)


def test_rerank_reorders_exactly_by_the_rerankers_scores(candidates):
    reranker = FakeReranker({"a1": 0.1, "c1": 0.7, "d1": 0.9, "b1": 0.8, "a2": 0.5})

    top = rerank("asthma at night", candidates, reranker, n=3)

    assert ids(top) == ["d1", "b1", "c1"]
    assert [h.score for h in top] == pytest.approx([0.9, 0.8, 0.7])
    assert top[0].detail == pytest.approx({"dense": 0.7, "fake": 0.9})
    assert reranker.calls == [("asthma at night", ["a1", "c1", "d1", "b1", "a2"])]


def test_rerank_keeps_one_segment_per_document(candidates):
    reranker = FakeReranker({"a1": 0.1, "c1": 0.2, "d1": 0.3, "b1": 0.4, "a2": 0.9})

    assert ids(rerank("q", candidates, reranker, n=None)) == ["a2", "b1", "d1", "c1"]


def test_rerank_without_a_reranker_keeps_the_bi_encoder_order(candidates):
    top = rerank("asthma at night", candidates, None, n=3)

    assert ids(top) == ["a1", "c1", "d1"]
    assert [h.score for h in top] == pytest.approx([0.9, 0.8, 0.7])
    assert ids(rerank("q", candidates, None, n=None)) == ["a1", "c1", "d1", "b1"]


def test_rerank_scores_only_the_first_candidates_and_appends_the_rest_in_first_stage_order(candidates):
    reranker = FakeReranker({"a1": 0.1, "c1": 0.7})

    ranked = rerank("q", candidates, reranker, n=None, candidates=2)

    # head a1, c1 reordered by the reranker; then d1, b1 in dense order; a2's document (a) is already listed
    assert ids(ranked) == ["c1", "a1", "d1", "b1"]
    assert reranker.calls == [("q", ["a1", "c1"])]
    assert [h.score for h in ranked] == pytest.approx([0.7, 0.1, 0.7, 0.45])
    assert [sorted(h.detail) for h in ranked] == [["dense", "fake"], ["dense", "fake"], ["dense"], ["dense"]]
    assert ids(rerank("q", candidates, reranker, n=3, candidates=2)) == ["c1", "a1", "d1"]


def test_rerank_skips_a_tail_copy_of_a_reranked_passage():
    reranker = FakeReranker({"a1": 0.2, "c1": 0.7})
    hits = [
        Hit(seg("a1", "a", "Rest and fluids."), 0.9, {"dense": 0.9}),
        Hit(seg("c1", "c", "Antivirals within 48 hours."), 0.8, {"dense": 0.8}),
        Hit(seg("e1", "e", "Rest and  fluids."), 0.7, {"dense": 0.7}),  # a's passage under another document
        Hit(seg("d1", "d", "Fever above 38C."), 0.6, {"dense": 0.6}),
    ]

    assert ids(rerank("q", hits, reranker, n=None, candidates=2)) == ["c1", "a1", "d1"]


def test_rerank_with_rrf_fuses_first_stage_rank_and_reranker_rank(candidates):
    # first stage: a1 c1 d1 b1 a2 (positions 1-5); reranker ranks: d1 1, b1 2, c1 3, a2 4, a1 5
    reranker = FakeReranker({"a1": 0.1, "c1": 0.7, "d1": 0.9, "b1": 0.8, "a2": 0.5})

    top = rerank("q", candidates, reranker, n=None, rrf_k=1)

    # k=1: a1 1/2+1/6=.667, c1 1/3+1/4=.583, d1 1/4+1/2=.75, b1 1/5+1/3=.533, a2 1/6+1/5=.367 (document a: a1)
    assert ids(top) == ["d1", "a1", "c1", "b1"]
    assert [h.score for h in top] == pytest.approx([0.75, 2 / 3, 7 / 12, 8 / 15])
    assert top[0].detail == pytest.approx({"dense": 0.7, "fake": 0.9, "rrf": 0.75})  # the reranker's own score kept


def test_rerank_rrf_first_weight_scales_the_first_stage_term(candidates):
    # same ranks as above; first_weight 2, k=1: a1 2/2+1/6, c1 2/3+1/4, d1 2/4+1/2, b1 2/5+1/3 (a2 2/6+1/5 < a1)
    reranker = FakeReranker({"a1": 0.1, "c1": 0.7, "d1": 0.9, "b1": 0.8, "a2": 0.5})

    top = rerank("q", candidates, reranker, n=None, rrf_k=1, first_weight=2.0)

    assert ids(top) == ["a1", "d1", "c1", "b1"]  # plain RRF (weight 1) put d1 first
    assert [h.score for h in top] == pytest.approx([7 / 6, 1.0, 11 / 12, 11 / 15])


def test_rrf_scores_ties_keep_the_given_order():
    from chatbot.stages.rerank import rrf_scores

    fused = rrf_scores(np.array([0.2, 0.5, 0.5]), k=60)
    # score ranks: the two 0.5s rank 1 and 2 in given order, 0.2 ranks 3
    assert fused == pytest.approx([1 / 61 + 1 / 63, 1 / 62 + 1 / 61, 1 / 63 + 1 / 62])
    assert fused[1] > fused[0] > fused[2]


def test_rerank_with_more_candidates_allowed_than_hits_scores_them_all(candidates):
    reranker = FakeReranker({"a1": 0.1, "c1": 0.2, "d1": 0.3, "b1": 0.4, "a2": 0.9})

    assert ids(rerank("q", candidates, reranker, n=None, candidates=50)) == ["a2", "b1", "d1", "c1"]
    assert reranker.calls == [("q", ["a1", "c1", "d1", "b1", "a2"])]


def test_rerank_of_no_hits_does_not_call_the_reranker():
    reranker = FakeReranker({})

    assert rerank("q", [], reranker) == []
    assert reranker.calls == []


# -- BM25 ---------------------------------------------------------------------


def test_bm25_ranks_the_segment_sharing_rare_words_first(bm25):
    hits = bm25("Does montelukast help wheezing?", 5)

    assert ids(hits) == ["c1", "b1", "d1"]  # zero-score segments are dropped; b1/d1 tie in input order
    assert hits[0].score > hits[1].score == pytest.approx(hits[2].score)
    assert hits[0].detail == {"bm25": hits[0].score}


def test_bm25_exact_order_and_cut(bm25):
    assert ids(bm25("asthma at night", 5)) == ["b1", "a1", "a2"]
    assert ids(bm25("asthma at night", 1)) == ["b1"]
    assert [ids(row) for row in bm25.batch(["fever babies", "inhaler"], 5)] == [["d1"], ["a1"]]


def test_bm25_with_only_stopwords_or_unknown_words_finds_nothing(bm25):
    assert bm25("what is the", 5) == []
    assert bm25("zzzz qqqq", 5) == []
    assert bm25.scores("the").tolist() == [0.0] * 5


def test_bm25_reads_the_title_too():
    index = BM25Retriever([seg("x1", "preeclampsia", "Blood pressure checks."), seg("y1", "other", "Blood tests.")])

    assert ids(index("preeclampsia", 5)) == ["x1"]


# -- FusionReranker -------------------------------------------------------------


def minmax(values: np.ndarray) -> np.ndarray:
    return (values - values.min()) / (values.max() - values.min())


@pytest.mark.parametrize(
    ("weight", "expected"),
    [
        (1.0, ["a1", "c1", "d1", "b1"]),  # dense only: the bi-encoder order
        (0.0, ["b1", "a1", "c1", "d1"]),  # BM25 only: b1 holds both "asthma" and "night"
        (0.5, ["a1", "b1", "c1", "d1"]),  # a1 0.627, b1 0.55, c1 0.4, d1 0.3
    ],
)
def test_fusion_reranker_exact_orders(bm25, candidates, weight, expected):
    fusion = FusionReranker(bm25, weight=weight)

    assert ids(rerank("asthma at night", candidates, fusion, n=None)) == expected


def test_fusion_scores_are_the_weighted_sum_of_min_max_scores(bm25, candidates):
    question = "asthma at night"
    lexical = bm25.scores(question)[[bm25.position[h.segment.id] for h in candidates]]
    dense = np.array([h.score for h in candidates])

    scores = FusionReranker(bm25, weight=0.5).score(question, candidates)

    expected = 0.5 * minmax(dense) + 0.5 * minmax(lexical)
    np.testing.assert_allclose(scores, expected, atol=1e-6)
    np.testing.assert_allclose(scores[:2], [0.5 + 0.5 * lexical[0] / lexical.max(), 0.8 * 0.5], atol=1e-6)


def test_fusion_uses_the_dense_detail_not_an_earlier_stages_score(bm25, candidates):
    # A hit rescored by another stage still carries its bi-encoder score in detail["dense"].
    shuffled = [Hit(h.segment, -h.score, dict(h.detail)) for h in candidates]

    assert ids(rerank("asthma at night", shuffled, FusionReranker(bm25, weight=1.0), n=None)) == [
        "a1",
        "c1",
        "d1",
        "b1",
    ]


def test_fusion_gives_segments_outside_the_bm25_index_no_lexical_score(bm25, candidates):
    outsider = Hit(seg("z1", "z", "Asthma at night asthma at night."), 0.4, {"dense": 0.4})

    scores = FusionReranker(bm25, weight=0.0).score("asthma at night", [*candidates, outsider])

    assert scores[-1] == 0.0
    assert scores.max() == pytest.approx(1.0)


def test_fusion_with_a_second_embedder_uses_its_cosine(bm25, candidates, fake_embedder):
    # The fake embedder puts "fever" on its own axis: only d1 ("Fever and wheezing ...") matches.
    fusion = FusionReranker(bm25, weight=1.0, second_embedder=fake_embedder, max_chars=30)

    top = rerank("fever", candidates, fusion, n=1)

    assert ids(top) == ["d1"]
    assert fake_embedder.passages == [h.segment.text[:30] for h in candidates]

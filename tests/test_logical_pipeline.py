from __future__ import annotations

import pytest

from chatbot.logical import pipeline as logical
from chatbot.logical.compose import Calibration, Operators
from chatbot.logical.config import LogicalConfig
from chatbot.logical.llm import extract_query, llm_query
from chatbot.logical.query import QuerySyntaxError, parse
from chatbot.pipeline import Services, get_pipeline, naive_pipeline, run_pipeline
from chatbot.settings import Settings
from corpus.model import Document
from tests.conftest import indexed_services


def doc(doc_id: str, text: str) -> Document:
    # Titles hold no keyword, so each vector is fixed by the text alone (tests/conftest.py FakeEmbedder).
    return Document(id=doc_id, text=text, title=f"Card {doc_id}", source_url=f"https://example.org/{doc_id}")


# Vectors over the (asthma, diabetes, fever, sleep, other) axes:
#   positive   → (2 asthma, 1 sleep)/√5               (mentions asthma, never fever)
#   distractor → (4 asthma, 2 fever)/√20 = (2, 0, 1)/√5 (asthma AND the excluded fever)
#   Both score 2/√5 on the term "asthma"; only the distractor scores on "fever" (1/√5).
#   fever-only → fever axis; diabetes, sleep → their axes
DOCS = [
    doc("positive", "Asthma plans for school and sleep: asthma inhalers."),
    doc("distractor", "Asthma with fever: asthma attacks, fever at night, asthma review and asthma inhalers."),
    doc("fever", "A fever is 38C or more: fever in babies."),
    doc("diabetes", "Diabetes raises blood sugar."),
    doc("sleep", "Sleep hygiene for adults."),
]


def make_services(tmp_path, fake_embedder, rerank_kind: str = "none") -> Services:
    settings = Settings(
        paths={"data_dir": tmp_path / "data"},
        index={"collection": "logical-tests", "exact": True},
        rerank={"kind": rerank_kind, "fusion_weight": 0.5, "fusion_embedder": "minilm"},
        embedding={"model": "minilm"},
        retrieval={"top_k": 10, "top_n": 3},
    )
    return indexed_services(settings, fake_embedder, DOCS, max_chars=300, min_chars=10)


def docs_of(result) -> list[str]:
    return [h.segment.doc_id for h in result.ranked]


@pytest.mark.parametrize("rerank_kind", ["none", "fusion"])
def test_naive_ranks_the_distractor_first_logical_drops_it_below_the_positive(tmp_path, fake_embedder, rerank_kind):
    services = make_services(tmp_path, fake_embedder, rerank_kind)
    question = "asthma other than fever"

    naive = naive_pipeline(question, services)
    result = run_pipeline("logical", question, services)

    assert docs_of(naive)[0] == "distractor"  # the failure: the excluded thing wins on similarity
    assert docs_of(result)[0] == "positive"
    assert docs_of(result).index("positive") < docs_of(result).index("distractor")
    assert result.top[0].segment.doc_id == "positive"


def test_composed_scores_are_exact_on_hand_made_vectors(tmp_path, fake_embedder):
    services = make_services(tmp_path, fake_embedder)  # no reranker: final = composed
    result = logical.logical_retrieve("asthma other than fever", services)

    info = result.info["logical"]
    assert info["route"] == "logical"
    assert info["query"] == '"asthma" AND NOT "fever"'
    assert info["final"] == "composed"
    scores = {h.segment.doc_id: h.score for h in result.ranked}
    # positive: 2/√5 · (1 − 0); distractor: 2/√5 · (1 − 1/√5); the mention of "fever" is traced, not ranked on
    # (logical.mention_weight defaults to 0, chosen on NegConstraint's train split)
    assert scores["positive"] == pytest.approx(2 / 5**0.5)
    assert scores["distractor"] == pytest.approx(2 / 5**0.5 * (1 - 1 / 5**0.5))
    assert info["mention_weight"] == 0.0
    assert info["mentions"]["fever"]["candidates"][result.ranked[1].segment.id]["p"] > 0.5
    seg = result.ranked[0].segment.id
    assert info["term_scores"]["asthma"][seg] == pytest.approx(2 / 5**0.5, abs=1e-4)
    assert info["term_scores"]["fever"][seg] == pytest.approx(0.0)
    assert info["composed"][seg] == pytest.approx(2 / 5**0.5, abs=1e-4)
    assert set(info["term_scores"]) == {"asthma", "fever"}
    assert info["detection"] == {"positive": "asthma", "negatives": ["fever"], "cues": ["other than"], "language": "en"}


def test_candidates_come_from_positive_terms_and_vectors_are_not_re_embedded(tmp_path, fake_embedder):
    services = make_services(tmp_path, fake_embedder)
    calls = fake_embedder.passage_calls
    fake_embedder.queries.clear()

    result = logical.logical_retrieve("asthma other than fever", services)

    assert fake_embedder.passage_calls == calls  # stored vectors are fetched, never re-embedded
    assert fake_embedder.queries == ["asthma", "fever"]  # each distinct term embedded once
    assert {h.segment.doc_id for h in result.candidates} == {d.id for d in DOCS}  # top-10 of "asthma" = all 5


@pytest.mark.parametrize("rerank_kind", ["none", "fusion"])
@pytest.mark.parametrize(
    "question",
    ["Why is my asthma worse at night when I sleep?", "What are the symptoms of diabetes?", "fever in babies"],
)
def test_questions_without_logical_structure_get_exactly_the_naive_result(
    tmp_path, fake_embedder, rerank_kind, question
):
    services = make_services(tmp_path, fake_embedder, rerank_kind)

    naive = naive_pipeline(question, services)
    result = run_pipeline("logical", question, services)

    assert [(h.segment.id, h.score) for h in result.ranked] == [(h.segment.id, h.score) for h in naive.ranked]
    assert [h.segment.id for h in result.top] == [h.segment.id for h in naive.top]
    assert [h.segment.id for h in result.candidates] == [h.segment.id for h in naive.candidates]
    assert result.info["logical"]["route"] == "naive"


@pytest.mark.parametrize(
    "config",
    [
        {"ops": Operators("min", "max", "one_minus")},
        {"ops": Operators("sum", "sum", "one_minus")},
        {"ops": Operators("product", "sum", "inverse")},
        {"calibrate": True, "calibration": Calibration(0.5, 10.0)},
        {"mode": "probabilistic", "calibration": Calibration(0.5, 10.0)},
        {"final": "composed"},
    ],
)
def test_variants_keep_the_exclusion(tmp_path, fake_embedder, config):
    services = make_services(tmp_path, fake_embedder, "fusion")
    result = logical.logical_retrieve("asthma other than fever", services, LogicalConfig(**config))
    assert docs_of(result)[0] == "positive"
    assert docs_of(result).index("distractor") > docs_of(result).index("positive")


def test_probabilistic_score_is_the_exact_probability(tmp_path, fake_embedder):
    services = make_services(tmp_path, fake_embedder)
    cal = Calibration(0.5, 10.0)
    result = logical.logical_retrieve(
        "asthma other than fever", services, LogicalConfig(mode="probabilistic", calibration=cal, mention=False)
    )
    scores = {h.segment.doc_id: h.score for h in result.ranked}
    a, f = 2 / 5**0.5, 1 / 5**0.5
    assert scores["distractor"] == pytest.approx(float(cal(a)) * (1 - float(cal(f))))
    assert result.info["logical"]["calibration"] == {"tau": 0.5, "lam": 10.0}


def test_probabilistic_mode_without_a_fitted_calibration_says_how_to_fit_one(tmp_path, fake_embedder):
    services = make_services(tmp_path, fake_embedder)
    with pytest.raises(ValueError, match="chatbot.logical.calibrate"):
        logical.logical_retrieve("asthma other than fever", services, LogicalConfig(mode="probabilistic"))


def test_the_plain_rerank_final_mode_undoes_the_exclusion(tmp_path, fake_embedder):
    """Why the default reranks per positive term and keeps the NOT penalty: a plain rerank of the
    positive text ignores the exclusion (with fusion, the distractor's BM25 on "asthma" is higher)."""
    services = make_services(tmp_path, fake_embedder, "fusion")
    plain = logical.logical_retrieve("asthma other than fever", services, LogicalConfig(final="rerank"))
    kept = logical.logical_retrieve("asthma other than fever", services, LogicalConfig(final="rerank-terms"))
    assert docs_of(plain)[0] == "distractor"
    assert docs_of(kept)[0] == "positive"


def test_logical_is_registered_lazily():
    assert get_pipeline("logical") is logical.logical_pipeline


# -- optional LLM-written query ---------------------------------------------------------------------------------


class FakeLLM:
    def __init__(self, answer, fail: bool = False) -> None:
        self.answer = answer
        self.fail = fail
        self.calls: list[dict] = []

    def complete(self, messages, max_tokens=256, **kwargs):
        self.calls.append({"messages": messages, "max_tokens": max_tokens, **kwargs})
        if self.fail:
            raise TimeoutError("no server")
        return self.answer


class LLMServices(Services):
    llm = None


def llm_services(tmp_path, fake_embedder, llm) -> Services:
    base = make_services(tmp_path, fake_embedder)
    services = LLMServices(base.settings)
    services.__dict__.update(base.__dict__)
    services.llm = llm
    return services


def test_llm_query_is_used_when_valid(tmp_path, fake_embedder):
    llm = FakeLLM('```\nQuery: "asthma" AND NOT "fever"\n```')
    services = llm_services(tmp_path, fake_embedder, llm)
    result = logical.logical_retrieve(
        "asthma other than fever", services, LogicalConfig(query_source="auto", final="composed")
    )
    assert result.info["logical"]["query"] == '"asthma" AND NOT "fever"'
    assert result.info["logical"]["query_source"]["source"] == "llm"
    assert "asthma other than fever" in llm.calls[0]["messages"][0]["content"]
    assert "grammar" in llm.calls[0]
    assert docs_of(result)[0] == "positive"


@pytest.mark.parametrize("llm", [FakeLLM('"asthma" AND AND'), FakeLLM("", fail=True)])
def test_invalid_or_failing_llm_falls_back_to_the_detector(tmp_path, fake_embedder, llm):
    services = llm_services(tmp_path, fake_embedder, llm)
    result = logical.logical_retrieve("asthma other than fever", services, LogicalConfig(query_source="llm"))
    assert result.info["logical"]["query"] == '"asthma" AND NOT "fever"'
    assert result.info["logical"]["query_source"]["source"] == "detector"
    assert "error" in result.info["logical"]["query_source"]


def test_llm_query_that_lost_the_exclusion_is_repaired_with_the_detectors():
    from chatbot.logical.detect import analyse

    query, info = llm_query(
        "asthma other than fever", FakeLLM('"asthma in children"'), analyse("asthma other than fever")
    )
    assert query == parse('"asthma in children" AND NOT "fever"')
    assert info["repaired"] is True


def test_extract_query_repairs_mechanical_problems_only():
    assert extract_query('("a" OR "b") AND NOT "c"') == parse('("a" OR "b") AND NOT "c"')
    assert extract_query('Logical query: ("a" OR "b" AND NOT "c"') == parse('("a" OR "b" AND NOT "c")')
    assert extract_query('Here it is:\n"a" AND NOT "b"\nHope it helps') == parse('"a" AND NOT "b"')
    with pytest.raises(QuerySyntaxError):
        extract_query("vitamin D but not bones")


def test_orthogonal_negation_removes_the_positive_direction(fake_embedder):
    from chatbot.logical.scoring import orthogonal_negations

    query = parse('"asthma" AND NOT "asthma fever"')
    names = ["asthma", "asthma fever"]
    vecs = fake_embedder.embed_queries(names)
    out = orthogonal_negations(query, names, vecs)
    assert out[0] == pytest.approx(vecs[0])  # positive terms unchanged
    assert out[1] == pytest.approx([0, 0, 1, 0, 0])  # "asthma fever" minus its asthma part = fever


def test_orthogonal_not_keeps_on_topic_documents_that_skip_the_excluded_thing(tmp_path, fake_embedder):
    services = make_services(tmp_path, fake_embedder)
    config = LogicalConfig(final="composed", orthogonal_not=True, mention=False)
    result = logical.logical_retrieve("asthma other than asthma fever", services, config)
    scores = {h.segment.doc_id: h.score for h in result.ranked}
    assert result.info["logical"]["query"] == '"asthma" AND NOT "asthma fever"'
    # the NOT term now scores only the fever component: positive 2/√5 · (1 − 0), distractor 2/√5 · (1 − 1/√5)
    assert scores["positive"] == pytest.approx(2 / 5**0.5)
    assert scores["distractor"] == pytest.approx(2 / 5**0.5 * (1 - 1 / 5**0.5))


def test_question_candidates_are_added_when_asked(tmp_path, fake_embedder):
    services = make_services(tmp_path, fake_embedder)
    fake_embedder.queries.clear()
    logical.logical_retrieve("asthma other than fever", services, LogicalConfig(include_question=True))
    assert fake_embedder.queries == ["asthma", "fever", "asthma other than fever"]


def test_documents_add_a_share_of_their_second_best_segment():
    from chatbot.index import Hit
    from chatbot.logical.scoring import aggregate_documents
    from corpus.model import Segment

    def hit(sid: str, doc_id: str, score: float) -> Hit:
        seg = Segment(id=sid, doc_id=doc_id, text=sid, title="t", source_url="https://example.org/x", position=0)
        return Hit(seg, score, {})

    hits = [hit("a1", "a", 0.8), hit("b1", "b", 0.7), hit("b2", "b", 0.6), hit("a2", "a", 0.1), hit("c1", "c", 0.9)]
    assert [(h.segment.id, h.score) for h in aggregate_documents(hits, 0.0)] == [("c1", 0.9), ("a1", 0.8), ("b1", 0.7)]
    got = [(h.segment.id, round(h.score, 6)) for h in aggregate_documents(hits, 0.5)]
    assert got == [("b1", 1.0), ("c1", 0.9), ("a1", 0.85)]


def test_the_whole_question_rescore_is_off_by_default_and_a_large_weight_brings_the_excluded_back(
    tmp_path, fake_embedder
):
    """logical.question_ce_weight: the question's reranker reads the WHOLE question (excluded term included) on the
    composed top k; at 0 nothing runs, and a weight that outweighs the composition lets the excluded thing win
    again (why it is opt-in: evaluation/results/negation-s13.md, two-exclusion questions lost)."""
    services = make_services(tmp_path, fake_embedder, "fusion")
    off = logical.logical_retrieve("asthma other than fever", services, LogicalConfig())
    heavy = logical.logical_retrieve(
        "asthma other than fever", services, LogicalConfig(question_ce_weight=5.0, question_ce_top=5)
    )
    assert docs_of(off)[0] == "positive" and "question_rescore" not in off.timings_ms
    assert docs_of(heavy)[0] == "distractor" and "question_rescore" in heavy.timings_ms


def test_mention_knobs_carry_every_mention_setting_of_the_config():
    from dataclasses import fields

    config = LogicalConfig(mention_beta=7.0, mention_scorer="sentence", mention_sentence_orth=False, mention_lam=3.0)
    knobs = config.mention_knobs()
    assert {f.name: getattr(knobs, f.name) for f in fields(knobs)} == {
        f.name: getattr(config, "mention_" + f.name) for f in fields(knobs)
    }
    assert (knobs.beta, knobs.scorer, knobs.sentence_orth, knobs.lam) == (7.0, "sentence", False, 3.0)

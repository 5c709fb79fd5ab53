"""Which reranker a question gets (cross-encoder for English, none for Italian, fusion otherwise), how many
candidates the cross-encoder rescores, and the cross-encoder as a support scorer: fake models, exact expectations."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from chatbot.index import Hit
from chatbot.pipeline import Services, rerank_stage
from chatbot.settings import Settings
from chatbot.stages.rerank import CrossEncoderReranker
from chatbot.stages.support import CrossEncoderSupport
from corpus.model import Segment


class FakeCrossEncoder(CrossEncoderReranker):
    """A CrossEncoderReranker without a model: predict() looks scores up by passage text."""

    def __init__(self, scores: dict[str, float]) -> None:  # noqa: D107 - no model loaded on purpose
        self.model_path = Path("fake")
        self.max_chars = 900
        self.batch_size = 16
        self.with_title = False
        self.note = None
        self.onnx = None
        self.model = None
        self.runtime = "onnx-int8"
        self.scores = scores
        self.calls: list[list[tuple[str, str]]] = []

    def predict(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        self.calls.append(list(pairs))
        return np.array([self.scores.get(p, 0.0) for _, p in pairs], dtype=np.float32)


class FakeFusion:
    name = "fusion"
    note = None

    def __init__(self) -> None:
        self.questions: list[str] = []

    def score(self, question: str, hits: Sequence[Hit]) -> np.ndarray:
        self.questions.append(question)
        return np.array([h.score for h in hits], dtype=np.float32)


def _services(tmp_path, **rerank) -> tuple[Services, FakeCrossEncoder, FakeFusion]:
    services = Services(Settings(paths={"data_dir": tmp_path / "data"}, rerank=rerank))
    ce = FakeCrossEncoder({"text a": 0.2, "text b": 0.9, "text c": 0.5})
    fusion = FakeFusion()
    services.__dict__["reranker"] = ce
    services.__dict__["fusion_reranker"] = fusion
    return services, ce, fusion


def _hits() -> list[Hit]:
    return [
        Hit(Segment(id=f"{d}#0", doc_id=d, text=f"text {d}", title="", source_url="", position=0), s, {"dense": s})
        for d, s in (("a", 0.9), ("b", 0.8), ("c", 0.7))
    ]


def test_english_questions_get_the_cross_encoder(tmp_path):
    services, ce, _ = _services(tmp_path)

    assert services.reranker_for("What are the symptoms of asthma in children?") == (ce, None)
    # too few clues to name a language: read as English
    assert services.reranker_for("asthma inhaler") == (ce, None)


def test_without_a_language_entry_italian_questions_get_the_fusion_reranker_and_a_note(tmp_path):
    services, _, fusion = _services(tmp_path, language_models={})

    reranker, note = services.reranker_for("Quali sono i sintomi dell'asma nei bambini?")

    assert reranker is fusion
    assert note == (
        "question language it: the cross-encoder reranks en questions only (rerank.cross_encoder_languages); "
        "fusion reranker used"
    )


def test_a_multilingual_drop_in_model_can_take_italian_questions(tmp_path):
    services, ce, _ = _services(tmp_path, cross_encoder_languages=["en", "it"], language_models={})

    assert services.reranker_for("Quali sono i sintomi dell'asma nei bambini?") == (ce, None)


def test_rerank_stage_rescores_only_rerank_candidates_with_the_cross_encoder(tmp_path):
    services, ce, _ = _services(tmp_path, candidates=2, rrf_k=0)  # the cross-encoder's order alone
    timings: dict[str, float] = {}

    question = "What are the symptoms of asthma?"
    ranked = rerank_stage(question, _hits(), services, timings)

    assert [h.segment.doc_id for h in ranked] == ["b", "a", "c"]  # b 0.9 > a 0.2, then c in dense order
    assert ce.calls == [[(question, "text a"), (question, "text b")]]
    assert [h.detail.get("cross-encoder") for h in ranked[:2]] == pytest.approx([0.9, 0.2])
    assert "cross-encoder" not in ranked[2].detail
    assert set(timings) == {"rerank"}


def test_rerank_stage_fuses_the_first_stage_and_cross_encoder_ranks_by_default(tmp_path):
    services, ce, _ = _services(tmp_path)
    assert services.settings.rerank.rrf_k == 60

    ranked = rerank_stage("What are the symptoms of asthma?", _hits(), services, {})

    # first stage a, b, c; cross-encoder b (0.9), c (0.5), a (0.2)
    # a 1/61+1/63, b 1/62+1/61, c 1/63+1/62: b, a, c (the cross-encoder alone would say b, c, a)
    assert [h.segment.doc_id for h in ranked] == ["b", "a", "c"]
    assert [h.detail["rrf"] for h in ranked] == pytest.approx([1 / 62 + 1 / 61, 1 / 61 + 1 / 63, 1 / 63 + 1 / 62])
    assert [h.detail["cross-encoder"] for h in ranked] == pytest.approx([0.9, 0.2, 0.5])


def test_rerank_stage_weights_the_first_stage_rank_by_rrf_first_weight(tmp_path):
    services, _, _ = _services(tmp_path, rrf_k=5, rrf_first_weight=2.0)

    ranked = rerank_stage("What are the symptoms of asthma?", _hits(), services, {})

    # a 2/6+1/8, b 2/7+1/6, c 2/8+1/7: the first stage's a now leads (weight 1 gives b, a, c)
    assert [h.segment.doc_id for h in ranked] == ["a", "b", "c"]
    assert [h.detail["rrf"] for h in ranked] == pytest.approx([2 / 6 + 1 / 8, 2 / 7 + 1 / 6, 2 / 8 + 1 / 7])


def test_rerank_stage_gives_italian_questions_the_fusion_reranker_on_all_candidates(tmp_path):
    services, ce, fusion = _services(tmp_path, candidates=2, language_models={})

    ranked = rerank_stage("Quali sono i sintomi dell'asma?", _hits(), services, {})

    assert [h.segment.doc_id for h in ranked] == ["a", "b", "c"]
    assert [h.detail["fusion"] for h in ranked] == pytest.approx([0.9, 0.8, 0.7])
    assert ce.calls == []
    assert fusion.questions == ["Quali sono i sintomi dell'asma?"]


def test_a_language_model_reranks_its_language_alone_with_its_own_fusion_constant(tmp_path):
    services, ce, fusion = _services(
        tmp_path, language_models={"it": "reranker-it"}, language_passages={}, language_rrf_k=0
    )
    italian = FakeCrossEncoder({"text a": 0.1, "text b": 0.3, "text c": 0.8})
    italian.rrf_k = 0
    services.__dict__["_language_cross_encoders"] = {("reranker-it", None): italian}

    assert services.reranker_for("Quali sono i sintomi dell'asma nei bambini?") == (italian, None)
    assert services.reranker_for("What are the symptoms of asthma in children?") == (ce, None)
    ranked = rerank_stage("Quali sono i sintomi dell'asma?", _hits(), services, {})

    assert [h.segment.doc_id for h in ranked] == ["c", "b", "a"]  # its own order: rrf_k 0, no fusion
    assert "rrf" not in ranked[0].detail
    assert fusion.questions == [] and ce.calls == []


def test_a_language_model_is_loaded_from_models_by_name(tmp_path, monkeypatch):
    import chatbot.services as built

    made: list[tuple] = []

    def fake(path, settings, max_length=None, threads=None):
        made.append((path, max_length))
        return FakeCrossEncoder({})

    monkeypatch.setattr(built.CrossEncoderReranker, "from_settings", staticmethod(fake))
    services, _, _ = _services(tmp_path, language_models={"it": "reranker-e5"}, language_max_length=96)

    model = services.language_cross_encoder("it")
    assert services.language_cross_encoder("it") is model  # loaded once
    assert services.language_cross_encoder("en") is None
    assert made == [(built.SHIPPED_RERANKER.parent / "reranker-e5", 96)]
    assert model.rrf_k == 60


def test_the_patients_question_chooses_the_reranker_when_the_query_adds_an_english_hydoc(tmp_path):
    services, ce, fusion = _services(tmp_path, language_models={})
    question = "Quali sono i sintomi dell'asma nei bambini?"
    query = f"{question}\nAsthma in children causes wheezing, coughing at night and shortness of breath."

    ranked = rerank_stage(question, _hits(), services, {}, query=query)

    assert ce.calls == []  # an Italian question: the fusion reranker, as the trace says
    assert fusion.questions == [query]  # which scores against the query it was given
    assert [h.segment.doc_id for h in ranked] == ["a", "b", "c"]


def test_cross_encoder_support_scores_each_claim_against_every_sentence_and_whole_text():
    passage = "Take folic acid daily. It prevents birth defects."
    ce = FakeCrossEncoder({"Take folic acid daily.": 0.7, "It prevents birth defects.": 0.4, passage: 0.6})

    scores = CrossEncoderSupport(ce)(["Folic acid every day.", "Eat fish."], [passage])

    assert scores == pytest.approx([0.7, 0.7])  # the fake ignores the claim: best piece score per claim
    assert ce.calls == [
        [
            ("Folic acid every day.", "Take folic acid daily."),
            ("Folic acid every day.", "It prevents birth defects."),
            ("Folic acid every day.", passage),
            ("Eat fish.", "Take folic acid daily."),
            ("Eat fish.", "It prevents birth defects."),
            ("Eat fish.", passage),
        ]
    ]


def test_cross_encoder_support_without_evidence_scores_nothing_as_supported():
    ce = FakeCrossEncoder({})

    assert CrossEncoderSupport(ce)(["A claim."], []).tolist() == [-1e9]
    assert CrossEncoderSupport(ce)([], ["Some text."]).shape == (0,)
    assert ce.calls == []


def test_by_default_italian_questions_get_reranker_e5_on_their_english_candidates_only(tmp_path):
    services, ce, fusion = _services(tmp_path, candidates=5)
    r = services.settings.rerank  # evaluation/results/italian-s14.md
    assert (r.language_models, r.language_passages, r.language_max_length) == (
        {"it": "reranker-e5"},
        {"it": "other"},
        64,
    )
    real = services.language_cross_encoder("it")  # the shipped model, loaded from models/reranker-e5
    assert (real.model_path.name, real.own_language, real.rrf_k, real.runtime) == ("reranker-e5", "it", 60, "onnx-int8")
    italian = FakeCrossEncoder({"text b": 0.1, "text d": 0.2, "text e": 0.9})
    italian.rrf_k, italian.own_language = 0, "it"  # alone: its order shows
    services.__dict__["_language_cross_encoders"] = {("reranker-e5", "it"): italian}

    assert services.reranker_for("Quali sono i sintomi dell'asma nei bambini?") == (italian, None)
    assert services.reranker_for("What are the symptoms of asthma in children?") == (ce, None)
    ranked = rerank_stage("Quali sono i sintomi dell'asma?", _mixed_hits(), services, {})

    assert [h.segment.doc_id for h in ranked] == ["a", "e", "c", "d", "b"]  # Italian a, c where e5 put them
    assert italian.calls == [[("Quali sono i sintomi dell'asma?", f"text {d}") for d in "bde"]]
    assert ce.calls == [] and fusion.questions == []


def _mixed_hits() -> list[Hit]:
    """a, c Italian; b, d, e English; the first stage's order a..e."""
    out = []
    for d, lang, s in (("a", "it", 0.9), ("b", "en", 0.8), ("c", "it", 0.7), ("d", "en", 0.6), ("e", "en", 0.5)):
        seg = Segment(id=f"{d}#0", doc_id=d, text=f"text {d}", title="", source_url="", position=0, language=lang)
        out.append(Hit(seg, s, {"dense": s}))
    return out


def test_a_model_for_other_language_passages_reorders_only_them_within_their_positions():
    from chatbot.stages.rerank import rerank_other_language

    ce = FakeCrossEncoder({"text b": 0.5, "text d": 0.1, "text e": 0.9, "text a": 1.0, "text c": 1.0})
    ranked = rerank_other_language("q", _mixed_hits(), ce, "it", None)

    assert ce.calls == [[("q", "text b"), ("q", "text d"), ("q", "text e")]]  # the Italian passages are not read
    assert [h.segment.doc_id for h in ranked] == ["a", "e", "c", "b", "d"]  # Italian positions 1 and 3 kept
    assert [h.score for h in ranked] == [0.9, 0.8, 0.7, 0.6, 0.5]  # each position's first-stage score
    assert [h.detail.get("cross-encoder") for h in ranked] == [
        None,
        pytest.approx(0.9),
        None,
        pytest.approx(0.5),
        pytest.approx(0.1),
    ]
    # fused with their first-stage order (k=1): b 1/2 + 1/3, d 1/3 + 1/4, e 1/4 + 1/2: b, e, d
    fused = rerank_other_language("q", _mixed_hits(), ce, "it", None, rrf_k=1)
    assert [h.segment.doc_id for h in fused] == ["a", "b", "c", "e", "d"]
    # only the first 3 candidates are read: b alone moves nowhere, d and e keep the first stage's order
    assert [h.segment.doc_id for h in rerank_other_language("q", _mixed_hits(), ce, "it", 2, candidates=3)] == [
        "a",
        "b",
    ]
    assert ce.calls[-1] == [("q", "text b")]
    # no other-language passage: the first stage's order, no model call
    italian = [h for h in _mixed_hits() if h.segment.language == "it"]
    calls = len(ce.calls)
    assert [h.segment.doc_id for h in rerank_other_language("q", italian, ce, "it", None)] == ["a", "c"]
    assert len(ce.calls) == calls


def test_language_passages_other_routes_the_languages_model_to_its_other_language_passages_only(tmp_path):
    from chatbot.logical.config import LogicalConfig
    from chatbot.logical.positive_scores import positive_rerankers

    services, ce, fusion = _services(
        tmp_path, language_models={"it": "reranker-it"}, language_passages={"it": "other"}, language_rrf_k=0
    )
    italian = FakeCrossEncoder({"text b": 0.1, "text d": 0.2, "text e": 0.9})
    italian.rrf_k, italian.own_language = 0, "it"
    services.__dict__["_language_cross_encoders"] = {("reranker-it", "it"): italian}
    question = "Quali sono i sintomi dell'asma nei bambini?"

    assert services.reranker_for(question) == (italian, None)
    ranked = rerank_stage(question, _mixed_hits(), services, {})
    assert [h.segment.doc_id for h in ranked] == ["a", "e", "c", "d", "b"]  # its own order in the English positions
    assert ce.calls == [] and fusion.questions == []
    # the logical route's positive terms are not scored by a model that reads only some passages: cosines rank
    assert positive_rerankers(services, question, "it", LogicalConfig()) == []
    assert positive_rerankers(services, "What helps with nausea?", "en", LogicalConfig()) == [ce]


def test_language_passages_other_is_loaded_apart_from_the_same_model_for_all_passages(tmp_path, monkeypatch):
    import chatbot.services as built

    monkeypatch.setattr(built.CrossEncoderReranker, "from_settings", staticmethod(lambda *a, **k: FakeCrossEncoder({})))
    services, _, _ = _services(
        tmp_path, language_models={"it": "reranker-e5", "en": "reranker-e5"}, language_passages={"it": "other"}
    )
    it, en = services.language_cross_encoder("it"), services.language_cross_encoder("en")
    assert it is not en and (it.own_language, en.own_language) == ("it", None)


def test_answer_trace_names_the_first_stage_weight_only_when_it_is_not_one(tmp_path):
    from chatbot.answer_object import _reranker_details

    question = "What are the symptoms of asthma?"
    plain, _, _ = _services(tmp_path)
    weighted, _, _ = _services(tmp_path, rrf_k=5, rrf_first_weight=2.0)

    assert _reranker_details(question, "dense+rerank", plain)["reranker_fusion"] == "rrf k=60"
    assert _reranker_details(question, "dense+rerank", weighted)["reranker_fusion"] == "rrf k=5 first_weight=2"


def _staged_hits(stages: dict[str, str]) -> list[Hit]:
    hits = _hits()
    return [Hit(Segment(**{**h.segment.__dict__, "stage": stages[h.segment.doc_id]}), h.score, h.detail) for h in hits]


@pytest.mark.parametrize(("stage_order", "expected"), [(True, ["a", "c", "b"]), (False, ["b", "a", "c"])])
def test_rerank_stage_moves_a_pregnancy_card_below_baby_cards_for_a_baby_question(tmp_path, stage_order, expected):
    services, _, _ = _services(tmp_path, candidates=2, rrf_k=0)
    services.settings.retrieval.stage_order = stage_order
    hits = _staged_hits({"a": "baby", "b": "pregnancy", "c": "postnatal,baby"})

    ranked = rerank_stage("my 5 week old has a rash on her cheeks", hits, services, {})

    # the cross-encoder says b, a, c; b is for pregnancy only and the question is about a born baby
    assert [h.segment.doc_id for h in ranked] == expected
    assert [h.detail.get("stage_demoted") for h in ranked] == ([None, None, 1.0] if stage_order else [None] * 3)


def test_rerank_stage_keeps_the_order_for_a_question_without_a_stage(tmp_path):
    services, _, _ = _services(tmp_path, candidates=2, rrf_k=0)
    hits = _staged_hits({"a": "baby", "b": "pregnancy", "c": "postnatal,baby"})

    services.settings.retrieval.stage_order = True
    ranked = rerank_stage("what does a rash on the cheeks mean?", hits, services, {})

    assert [h.segment.doc_id for h in ranked] == ["b", "a", "c"]

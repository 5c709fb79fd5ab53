"""Cross-encoder term scores for the logical pipeline (term_scorer "cross-encoder", variants logical-ce*)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from chatbot.logical.config import VARIANTS, LogicalConfig, config_for
from chatbot.logical.rescore import cross_encoder_rescore
from chatbot.pipeline import Services, run_pipeline
from chatbot.settings import SHIPPED_RERANKER, Settings
from corpus.model import Document
from tests.conftest import indexed_services

# Our own cards (keyword axes of tests/conftest.py FakeEmbedder: asthma, diabetes, fever, sleep, other).
DOCS = [
    Document(id="calm", text="Asthma at school: asthma inhalers and a calm night.", title="Card calm",
             source_url="https://example.org/calm"),
    Document(id="feverish", text="Asthma with fever: asthma flare and fever at night.", title="Card feverish",
             source_url="https://example.org/feverish"),
    Document(id="sugar", text="Diabetes raises blood sugar.", title="Card sugar",
             source_url="https://example.org/sugar"),
]  # fmt: skip

# Hand-made cross-encoder probabilities: (term, document id) → score. Both asthma cards are about asthma;
# only "feverish" mentions the excluded fever.
CE_TABLE = {
    ("asthma", "calm"): 0.80,
    ("asthma", "feverish"): 0.90,
    ("asthma", "sugar"): 0.05,
    ("fever", "calm"): 0.10,
    ("fever", "feverish"): 0.70,
    ("fever", "sugar"): 0.02,
}


class FakeCrossEncoder:
    """The CrossEncoderReranker interface the scorer uses: name, passage(segment), predict(pairs)."""

    name = "cross-encoder"
    runtime = "fake"
    note = None

    def __init__(self, table: dict[tuple[str, str], float] | None = None, logits: bool = False) -> None:
        self.table = CE_TABLE if table is None else table
        self.logits = logits
        self.pairs: list[tuple[str, str]] = []
        self.calls = 0

    def passage(self, segment) -> str:
        return f"[{segment.doc_id}] {segment.text}"

    def score(self, question, hits):  # the rerank stage's call (used only when the CE path is not taken)
        return self.predict([(question, self.passage(h.segment)) for h in hits])

    def predict(self, pairs):
        self.calls += 1
        self.pairs.extend(pairs)
        out = [self.table[(term, passage[1 : passage.index("]")])] for term, passage in pairs]
        scores = np.asarray(out, dtype=np.float32)
        return np.log(scores / (1 - scores)) if self.logits else scores


def make_services(tmp_path, fake_embedder, cross_encoder=None, **logical_settings) -> Services:
    settings = Settings(
        paths={"data_dir": tmp_path / "data"},
        index={"collection": "logical-ce-tests", "exact": True},
        rerank={"kind": "cross-encoder"},
        embedding={"model": "minilm"},
        retrieval={"top_k": 10, "top_n": 3},
        logical=logical_settings,
    )
    services = indexed_services(settings, fake_embedder, DOCS, max_chars=300, min_chars=10)
    if cross_encoder is not None:  # the rerank stage and the term scorer share one model, as in the product
        services.__dict__["cross_encoder"] = services.__dict__["reranker"] = cross_encoder
    return services


def ranked_docs(result) -> list[str]:
    return [h.segment.doc_id for h in result.ranked]


def test_the_card_mentioning_the_excluded_thing_drops_below_the_positive_one(tmp_path, fake_embedder):
    ce = FakeCrossEncoder()
    services = make_services(tmp_path, fake_embedder, ce)

    result = run_pipeline("logical-ce", "asthma other than fever", services)

    # fuzzy product / one_minus: calm 0.8·(1−0.1)=0.72 > feverish 0.9·(1−0.7)=0.27 > sugar 0.05·0.98=0.049
    assert ranked_docs(result) == ["calm", "feverish", "sugar"]
    scores = {h.segment.doc_id: h.score for h in result.ranked}
    assert scores["calm"] == pytest.approx(0.72, abs=1e-6)
    assert scores["feverish"] == pytest.approx(0.27, abs=1e-6)
    assert scores["sugar"] == pytest.approx(0.05 * 0.98, abs=1e-6)
    # the CE alone prefers the excluded card on the positive term: the composition is what moves it down
    assert CE_TABLE[("asthma", "feverish")] > CE_TABLE[("asthma", "calm")]
    # one predict call, every (term, segment) pair, term in the question slot, passage as the CE reads it
    assert ce.calls == 1
    assert sorted(ce.pairs) == sorted((term, f"[{d.id}] {d.text}") for term in ("asthma", "fever") for d in DOCS)


def test_probabilistic_mode_composes_the_ce_probabilities_exactly(tmp_path, fake_embedder):
    services = make_services(tmp_path, fake_embedder, FakeCrossEncoder())

    result = run_pipeline("logical-ce-prob", "asthma other than fever", services)

    # P(asthma ∧ ¬fever) with independent terms = the same products here (two distinct terms)
    assert ranked_docs(result) == ["calm", "feverish", "sugar"]
    assert result.ranked[0].score == pytest.approx(0.72, abs=1e-6)
    assert result.info["logical"]["mode"] == "probabilistic"


def test_the_trace_records_the_scorer_and_skips_the_rerank_stage(tmp_path, fake_embedder):
    services = make_services(tmp_path, fake_embedder, FakeCrossEncoder())

    result = run_pipeline("logical-ce", "asthma other than fever", services)

    info = result.info["logical"]
    assert info["term_scorer"] == "cross-encoder"
    assert info["final"] == "composed"  # the reranker never scores the whole question
    assert "rerank" not in result.timings_ms and "ce_term_scores" in result.timings_ms
    ce = info["cross_encoder"]
    assert (ce["scorer"], ce["candidates"], ce["pairs"], ce["logits_squashed"]) == ("cross-encoder", 3, 6, False)
    calm = result.ranked[0].segment.id
    assert ce["scores"]["asthma"][calm] == pytest.approx(0.8, abs=1e-4)
    assert ce["scores"]["fever"][calm] == pytest.approx(0.1, abs=1e-4)
    assert result.ranked[0].detail["ce:fever"] == pytest.approx(0.1, abs=1e-6)


def test_logits_from_a_drop_in_model_are_squashed_to_probabilities(tmp_path, fake_embedder):
    services = make_services(tmp_path, fake_embedder, FakeCrossEncoder(logits=True))

    result = run_pipeline("logical-ce", "asthma other than fever", services)

    assert ranked_docs(result) == ["calm", "feverish", "sugar"]
    assert result.ranked[0].score == pytest.approx(0.72, abs=1e-5)
    assert result.info["logical"]["cross_encoder"]["logits_squashed"] is True


def test_candidates_beyond_ce_candidates_follow_in_the_embedding_order(tmp_path, fake_embedder):
    ce = FakeCrossEncoder()
    services = make_services(tmp_path, fake_embedder, ce, term_scorer="cross-encoder", ce_candidates=1)

    result = run_pipeline("logical", "asthma other than fever", services)

    # embedding order (orthogonal NOT): calm first; only it is CE-scored, the other two follow unscored
    assert result.info["logical"]["cross_encoder"]["candidates"] == 1
    assert len(ce.pairs) == 2
    assert ranked_docs(result)[0] == "calm"
    assert "ce:asthma" in result.ranked[0].detail
    assert all("ce:asthma" not in h.detail for h in result.ranked[1:])


def test_a_question_the_ce_cannot_read_keeps_the_embedding_scores(tmp_path, fake_embedder):
    ce = FakeCrossEncoder()
    services = make_services(tmp_path, fake_embedder, ce)

    result = run_pipeline("logical-ce", "asthma tranne fever", services)  # Italian cue: language "it"

    info = result.info["logical"]
    assert info["route"] == "logical"
    assert all(term != "fever" for term, _ in ce.pairs)  # only the rerank stage ran (positive term)
    assert "question language it" in info["cross_encoder"]["fallback"]
    assert ranked_docs(result)[0] == "calm"  # the embedding path still excludes fever


def test_no_shipped_model_falls_back_with_a_note(tmp_path, fake_embedder, monkeypatch):
    import chatbot.services

    monkeypatch.setattr(chatbot.services, "SHIPPED_RERANKER", tmp_path / "missing-model")
    services = make_services(tmp_path, fake_embedder, term_scorer="cross-encoder")
    services.__dict__["reranker"] = None  # as with rerank.kind=cross-encoder and no model (fusion stand-in)

    result = run_pipeline("logical", "asthma other than fever", services)

    assert "no cross-encoder model" in result.info["logical"]["cross_encoder"]["fallback"]
    assert ranked_docs(result)[0] == "calm"


def test_an_unknown_term_scorer_is_refused_everywhere():
    with pytest.raises(ValueError, match=r"term_scorer 'monobert': one of \(.*'cross-encoder'\)"):
        LogicalConfig(term_scorer="monobert")
    with pytest.raises(ValueError, match="term_scorer"):
        Settings(logical={"term_scorer": "monobert"})
    with pytest.raises(ValueError, match="ce_candidates 0: at least 1"):
        LogicalConfig(ce_candidates=0)
    with pytest.raises(ValueError, match="ce_candidates"):
        Settings(logical={"ce_candidates": 0})


def test_the_settings_reach_the_config():
    got = config_for(Settings(logical={"term_scorer": "cross-encoder", "ce_candidates": 7}))
    assert (got.term_scorer, got.ce_candidates) == ("cross-encoder", 7)
    assert VARIANTS["logical-ce"] == {"term_scorer": "cross-encoder"}
    assert VARIANTS["logical-ce-prob"] == {"term_scorer": "cross-encoder", "mode": "probabilistic"}


# -- the shipped model ------------------------------------------------------------------------------------

REAL_MODEL = Path(SHIPPED_RERANKER)


@pytest.mark.skipif(not (REAL_MODEL / "config.json").is_file(), reason="models/reranker is not shipped here")
def test_the_shipped_cross_encoder_puts_the_card_without_the_excluded_topic_first():
    from chatbot.index import Hit
    from chatbot.logical.query import parse
    from chatbot.stages.rerank import CrossEncoderReranker
    from corpus.model import Segment

    def seg(sid: str, title: str, text: str) -> Segment:
        return Segment(id=f"{sid}#0", doc_id=sid, title=title, heading="", text=text,
                       source_url=f"https://example.org/{sid}", position=0)  # fmt: skip

    # Written for this test: two cards on looking after a sprained ankle, one of them mostly about
    # painkillers (the excluded topic), and one unrelated card.
    cards = [
        seg("rest", "Sprained ankle care",
            "For a sprained ankle, rest the joint, keep it raised on a pillow, wrap it with a soft bandage and "
            "cool it with an ice pack for twenty minutes a few times a day. Gentle movement after two days helps "
            "the ligaments heal."),
        seg("pills", "Sprained ankle pain relief",
            "Painkillers for a sprained ankle: paracetamol or ibuprofen tablets ease the pain. Take ibuprofen "
            "with food, do not exceed the dose on the packet, and ask a pharmacist which painkiller suits you."),
        seg("teeth", "Brushing children's teeth",
            "Brush a child's teeth twice a day with a pea-sized amount of fluoride toothpaste and book regular "
            "dental check-ups."),
    ]  # fmt: skip
    model = CrossEncoderReranker(REAL_MODEL, threads=1, runtime="onnx", max_length=256)
    query = parse('"how to treat a sprained ankle" AND NOT "painkillers"')
    candidates = [Hit(s, 0.5, {}) for s in cards]
    order = np.arange(len(cards))
    config = LogicalConfig(term_scorer="cross-encoder")

    new_order, scores, n, info, probs = cross_encoder_rescore(
        query, ["how to treat a sprained ankle", "painkillers"], candidates, order, np.zeros(3), model, config
    )

    assert n == 3 and info["pairs"] == 6
    assert all(0.0 <= p <= 1.0 for t in probs.values() for p in t.values())
    assert probs["painkillers"][1] > probs["painkillers"][0]  # the excluded topic is recognised
    assert [cards[i].doc_id for i in new_order][0] == "rest"
    assert scores[1] < scores[0] and scores[2] < scores[0]

"""safety.gloss_second_look (chatbot.stages.gloss_look) with a hand-made glossary, hand-made hits and the gate's
probability given: which refused Italian questions are answered from the English cards found for their gloss."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

import chatbot.gloss
import chatbot.stages.gloss_look as gloss_look_module
import chatbot.stages.relevance
from chatbot.index import Hit
from chatbot.pipeline import RetrievalResult
from chatbot.settings import Settings
from chatbot.stages.gloss_look import gloss_look
from tests.test_answer_pool import SONNO, seg
from tests.test_gloss import TINY
from tests.test_italian_english_cards import hit

STUMP = seg("en-stump", "When", "It usually falls off between one and three weeks after birth.", "Cord", "en")
URGENT = seg("en-urgent-emergency", "Call 999", "Call an ambulance now.", "Emergency", "en")
QUESTION = "dopo quanto cade il moncone del cordone ombelicale?"


def run(
    monkeypatch: pytest.MonkeyPatch,
    top: list[Hit],
    probability: float | None,
    question: str = QUESTION,
    language: str = "it",
    **safety: Any,
) -> tuple[RetrievalResult | None, dict[str, Any], list[str]]:
    """gloss_look over a pipeline that returns ``top`` and a gate that gives ``probability``; also what was searched."""
    searched: list[str] = []

    def pipeline(name: str, text: str, services: Any) -> RetrievalResult:
        searched.append(text)
        return RetrievalResult(text, list(top), list(top), list(top))

    def gate(text: str, result: RetrievalResult, services: Any, language: str = "en", positive=None, memory=True):
        assert language == "en" and memory is False  # the gloss is judged by the English classifier alone
        return False, {} if probability is None else {"gate": "classifier", "probability": probability}

    settings = Settings()
    settings.safety = settings.safety.model_copy(update=safety)
    monkeypatch.setattr(chatbot.gloss, "load_glossary", lambda folder=None: TINY)
    monkeypatch.setattr(gloss_look_module, "run_pipeline", pipeline)
    monkeypatch.setattr(chatbot.stages.relevance, "gate", gate)
    result, trace, content = gloss_look(question, language, "dense+rerank", SimpleNamespace(settings=settings))
    assert content is None  # no managed (database) document among the hits: the content gate reads nothing
    return result, trace, searched


def test_a_confident_english_gate_on_the_gloss_answers_from_the_english_card(monkeypatch) -> None:
    result, trace, searched = run(monkeypatch, [hit(STUMP, 0.86), hit(SONNO, 0.80)], 0.93)
    assert searched == ["how long after falls off stump umbilical cord"]
    assert result is not None and result.top[0].segment.doc_id == "en-stump"
    assert trace == {
        "gloss": {
            "text": "how long after falls off stump umbilical cord",
            "coverage": 1.0,
            "relevant": True,
            "first": "en-stump",
            "probability": 0.93,
            "threshold": 0.8,
        }
    }


def test_below_the_gloss_threshold_the_refusal_stands(monkeypatch) -> None:
    result, trace, _ = run(monkeypatch, [hit(STUMP, 0.86)], 0.79)
    assert result is None and trace["gloss"]["relevant"] is False and trace["gloss"]["probability"] == 0.79
    result, trace, _ = run(monkeypatch, [hit(STUMP, 0.86)], 0.79, gloss_min_probability=0.75)
    assert result is not None and trace["gloss"]["threshold"] == 0.75
    result, trace, _ = run(monkeypatch, [hit(STUMP, 0.86)], None)  # the threshold gate in force: no second look
    assert result is None and trace["gloss"]["relevant"] is False


def test_a_question_the_glossary_barely_reads_is_not_searched(monkeypatch) -> None:
    result, trace, searched = run(monkeypatch, [hit(STUMP, 0.86)], 0.99, question="quanto costa il biglietto per roma")
    assert result is None and searched == []
    assert trace["gloss"]["coverage"] == 0.0 and trace["gloss"]["reason"] == "coverage below 0.6"


def test_an_italian_or_urgent_first_link_is_not_answered_from(monkeypatch) -> None:
    result, trace, _ = run(monkeypatch, [hit(SONNO, 0.88), hit(STUMP, 0.86)], 0.99)
    assert result is None and trace["gloss"]["reason"] == "first link sonno is not a en card for answers"
    result, trace, _ = run(monkeypatch, [hit(URGENT, 0.88), hit(STUMP, 0.86)], 0.99)
    assert result is None and trace["gloss"]["first"] == "en-urgent-emergency"


def test_off_or_for_an_english_question_nothing_is_looked_at(monkeypatch) -> None:
    assert run(monkeypatch, [hit(STUMP, 0.86)], 0.99, gloss_second_look=False) == (None, {}, [])
    assert run(monkeypatch, [hit(STUMP, 0.86)], 0.99, question="when does the stump fall off", language="en") == (
        None,
        {},
        [],
    )


def test_the_defaults_look_with_a_stricter_bar_than_the_english_gate() -> None:
    safety = Settings().safety
    assert (safety.gloss_second_look, safety.gloss_min_coverage, safety.gloss_min_probability) == (True, 0.6, 0.8)


def test_a_broken_glossary_leaves_the_refusal_and_says_why(monkeypatch, tmp_path) -> None:
    (tmp_path / "bad.tsv").write_text("moncone stump\n", encoding="utf-8")
    read = chatbot.gloss.load_glossary.__wrapped__  # the uncached reader
    monkeypatch.setattr(chatbot.gloss, "load_glossary", lambda folder=None: read(str(tmp_path)))
    result, trace, content = gloss_look(QUESTION, "it", "dense+rerank", SimpleNamespace(settings=Settings()))
    assert (result, content) == (None, None)
    assert trace["gloss"]["relevant"] is False
    assert trace["gloss"]["error"].endswith("bad.tsv:1: expected 'italian<TAB>english', got 'moncone stump'")

"""chatbot.patient_words with a hand-made list, and safety.words_second_look (chatbot.stages.words_look) over
hand-made hits with the gate's probability given: which refused English questions are answered in the cards' words."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

import chatbot.patient_words
import chatbot.stages.relevance
import chatbot.stages.search_again as search_again_module
from chatbot.index import Hit
from chatbot.patient_words import PatientWords, load_patient_words
from chatbot.pipeline import RetrievalResult
from chatbot.settings import Settings
from chatbot.stages.words_look import words_look
from tests.test_answer_pool import SONNO, seg
from tests.test_italian_english_cards import hit

TINY = PatientWords.from_pairs(
    [
        ("jab", "vaccinations"),
        ("prosecco", "alcohol"),
        ("glass of wine", "alcohol drink"),
        ("wine", "alcohol"),
        ("cot death", "sids"),
    ]
)
ALCOHOL = seg("en-alcohol", "Alcohol", "No amount of alcohol is known to be safe in pregnancy.", "Alcohol", "en")
URGENT = seg("en-urgent-emergency", "Call 999", "Call an ambulance now.", "Emergency", "en")


def test_the_longest_phrase_is_expanded_and_each_card_word_added_once() -> None:
    out = TINY.expand("is one glass of wine ok? and prosecco?")
    assert out.text == "is one glass of wine ok? and prosecco? alcohol drink"
    assert out.matched == (("glass of wine", "alcohol drink"), ("prosecco", "alcohol"))


def test_a_plural_finds_its_singular_and_words_the_question_has_are_not_added() -> None:
    assert TINY.expand("When are the first JABS?").text == "When are the first JABS? vaccinations"
    assert TINY.expand("wine or alcohol").text == "wine or alcohol"
    assert TINY.expand("wine or alcohol").matched == (("wine", "alcohol"),)
    assert TINY.expand("how long does labour last").matched == ()


def test_the_shipped_list_reads_and_maps_patient_words_to_card_words() -> None:
    words = load_patient_words()
    assert len(words.entries) > 300
    assert words.expand("when does my baby get her first jabs").text.endswith("jabs vaccines")


def run(
    monkeypatch: pytest.MonkeyPatch,
    top: list[Hit],
    probability: float | None,
    question: str = "is one glass of wine ok at the weekend?",
    language: str = "en",
    **safety: Any,
) -> tuple[RetrievalResult | None, dict[str, Any], list[str]]:
    searched: list[str] = []

    def pipeline(name: str, text: str, services: Any) -> RetrievalResult:
        searched.append(text)
        return RetrievalResult(text, list(top), list(top), list(top))

    def gate(text: str, result: RetrievalResult, services: Any, language: str = "en", positive=None):
        assert language == "en"
        return False, {} if probability is None else {"gate": "classifier", "probability": probability}

    settings = Settings()
    settings.safety = settings.safety.model_copy(update={"words_second_look": True, **safety})
    monkeypatch.setattr(chatbot.patient_words, "load_patient_words", lambda folder=None: TINY)
    monkeypatch.setattr(search_again_module, "run_pipeline", pipeline)
    monkeypatch.setattr(chatbot.stages.relevance, "gate", gate)
    result, trace, content = words_look(question, language, "dense+rerank", SimpleNamespace(settings=settings))
    assert content is None
    return result, trace, searched


def test_a_confident_gate_on_the_expanded_question_answers_from_its_first_card(monkeypatch) -> None:
    result, trace, searched = run(monkeypatch, [hit(ALCOHOL, 0.86), hit(SONNO, 0.8)], 0.91)
    assert searched == ["is one glass of wine ok at the weekend? alcohol drink"]
    assert result is not None and result.top[0].segment.doc_id == "en-alcohol"
    assert trace == {
        "patient_words": {
            "text": "is one glass of wine ok at the weekend? alcohol drink",
            "matched": [["glass of wine", "alcohol drink"]],
            "relevant": True,
            "first": "en-alcohol",
            "probability": 0.91,
            "threshold": 0.8,
        }
    }


def test_below_the_bar_or_without_a_patient_word_the_refusal_stands(monkeypatch) -> None:
    result, trace, _ = run(monkeypatch, [hit(ALCOHOL, 0.86)], 0.79)
    assert result is None and trace["patient_words"]["probability"] == 0.79
    result, trace, searched = run(monkeypatch, [hit(ALCOHOL, 0.86)], 0.99, question="how long does labour last?")
    assert (result, searched, trace["patient_words"]["reason"]) == (None, [], "no patient word")
    result, trace, _ = run(monkeypatch, [hit(URGENT, 0.9), hit(ALCOHOL, 0.86)], 0.99)
    assert (
        result is None
        and trace["patient_words"]["reason"] == "first link en-urgent-emergency is not a en card for answers"
    )


def test_off_by_default_and_for_an_italian_question_nothing_is_looked_at(monkeypatch) -> None:
    assert Settings().safety.words_second_look is False
    assert run(monkeypatch, [hit(ALCOHOL, 0.86)], 0.99, words_second_look=False) == (None, {}, [])
    assert run(monkeypatch, [hit(ALCOHOL, 0.86)], 0.99, question="un bicchiere di vino?", language="it") == (
        None,
        {},
        [],
    )


def test_a_broken_list_leaves_the_refusal_and_says_why(monkeypatch, tmp_path) -> None:
    (tmp_path / "bad.tsv").write_text("jabs vaccinations\n", encoding="utf-8")
    read = load_patient_words.__wrapped__
    monkeypatch.setattr(chatbot.patient_words, "load_patient_words", lambda folder=None: read(str(tmp_path)))
    settings = Settings()
    settings.safety = settings.safety.model_copy(update={"words_second_look": True})
    result, trace, content = words_look("first jabs?", "en", "dense+rerank", SimpleNamespace(settings=settings))
    assert (result, content) == (None, None)
    assert trace["patient_words"]["error"].endswith(
        "bad.tsv:1: expected 'patient words<TAB>card words', got 'jabs vaccinations'"
    )


def test_with_card_words_expands_english_questions_only(monkeypatch) -> None:
    from chatbot.answer import with_card_words

    monkeypatch.setattr(chatbot.patient_words, "load_patient_words", lambda folder=None: TINY)
    assert with_card_words("first jabs?", "en") == ("first jabs? vaccinations", {"matched": [["jabs", "vaccinations"]]})
    assert with_card_words("how long does labour last?", "en") == ("how long does labour last?", None)
    assert with_card_words("un bicchiere di vino?", "it") == ("un bicchiere di vino?", None)


def test_with_card_words_and_a_broken_list_keep_the_question_and_say_why(monkeypatch, tmp_path) -> None:
    from chatbot.answer import with_card_words

    (tmp_path / "bad.tsv").write_text("jabs\n", encoding="utf-8")
    read = load_patient_words.__wrapped__
    monkeypatch.setattr(chatbot.patient_words, "load_patient_words", lambda folder=None: read(str(tmp_path)))
    text, trace = with_card_words("first jabs?", "en")
    assert text == "first jabs?"
    assert trace["error"].endswith("bad.tsv:1: expected 'patient words<TAB>card words', got 'jabs'")


def test_the_setting_is_off_by_default() -> None:
    assert Settings().retrieval.patient_words is False

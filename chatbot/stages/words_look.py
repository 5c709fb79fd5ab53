"""A second look in the cards' own words (safety.words_second_look): an English question the gate refused because it
says what the cards call otherwise ("is one glass of prosecco ok at 20 weeks?": the alcohol card never says
"prosecco") is searched again with the cards' words for its patient words appended (chatbot.patient_words), and
answered from those links when the English gate's probability on that text reaches safety.words_min_probability
(stages.search_again). The reply is composed against that text; the patient sees only certified text."""

from __future__ import annotations

from typing import Any

from chatbot.pipeline import RetrievalResult, Services
from chatbot.stages.search_again import search_again

LANGUAGES = ("en",)  # the patient-word lists there are: English words for the English cards


def words_look(
    question: str, language: str, pipeline: str, services: Services
) -> tuple[RetrievalResult | None, dict[str, Any], dict[str, Any] | None]:
    """(the expanded question's result to answer from, or None; the trace under "patient_words"; the content
    gate's entry for that result)."""
    from chatbot.patient_words import load_patient_words

    safety = services.settings.safety
    if not safety.words_second_look or language not in LANGUAGES:
        return None, {}, None
    try:
        lexicon = load_patient_words()
    except (OSError, ValueError) as exc:  # a missing or malformed list: the refusal stands, the trace says why
        return None, {"patient_words": {"relevant": False, "error": str(exc)}}, None
    expansion = lexicon.expand(question)
    trace: dict[str, Any] = {"text": expansion.text, "matched": [list(m) for m in expansion.matched], "relevant": False}
    if expansion.text == question:  # no patient word, or the question already has the cards' words for it
        return None, {"patient_words": {**trace, "reason": "no patient word"}}, None
    result, judged, content = search_again(expansion.text, language, pipeline, services, safety.words_min_probability)
    return result, {"patient_words": {**trace, **judged}}, content

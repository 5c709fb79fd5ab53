"""A second look through the Italian → English gloss (safety.gloss_second_look): an Italian question the gate
refused, whose answer sits only in English cards ("dopo quanto cade il moncone?": no Italian card is about the cord
stump, and the multilingual bi-encoder ranks every Italian card above the English one), is searched again as its
English gloss (chatbot.gloss) and judged by the English gate on that gloss. It is answered from those English links
when the glossary read enough of it, the first link is an English card that is not an urgent one, and the English
gate's probability on the gloss reaches safety.gloss_min_probability; otherwise the refusal stands. The reply is
composed from that first card (the one judged), as the cross-language second look's is, its sentences scored against
the gloss. The patient sees the certified English text with the usual other-language note; never the gloss."""

from __future__ import annotations

from typing import Any

from chatbot.gloss import GLOSSED_LANGUAGES
from chatbot.pipeline import RetrievalResult, Services, run_pipeline


def gloss_look(
    question: str, language: str, pipeline: str, services: Services
) -> tuple[RetrievalResult | None, dict[str, Any], dict[str, Any] | None]:
    """(the gloss's retrieval result to answer from, or None; the trace under "gloss"; the content gate's entry
    for that result, as ``chatbot.content_gate.gate_result`` gives it: only versions patients may read are judged)."""
    from chatbot.content_gate import gate_result
    from chatbot.gloss import load_glossary
    from chatbot.stages.redflags import urgent_card_ids
    from chatbot.stages.relevance import gate, without_urgent_fillers

    safety = services.settings.safety
    target = GLOSSED_LANGUAGES.get(language)
    if not safety.gloss_second_look or target is None:
        return None, {}, None
    try:
        glossary = load_glossary()
    except (OSError, ValueError) as exc:  # a missing or malformed glossary: the refusal stands, the trace says why
        return None, {"gloss": {"relevant": False, "error": str(exc)}}, None
    glossed = glossary.gloss(question)
    trace: dict[str, Any] = {"text": glossed.text, "coverage": round(glossed.coverage, 3), "relevant": False}
    if glossed.coverage < safety.gloss_min_coverage or not glossed.text:
        return None, {"gloss": {**trace, "reason": f"coverage below {safety.gloss_min_coverage}"}}, None
    result = run_pipeline(pipeline, glossed.text, services)
    content = gate_result(result, services)
    result.top = without_urgent_fillers(result, services)
    first = result.top[0].segment if result.top else None
    if first is None or first.language != target or first.doc_id in urgent_card_ids(safety.urgent_cards):
        reason = "no link" if first is None else f"first link {first.doc_id} is not a {target} card for answers"
        return None, {"gloss": {**trace, "first": None if first is None else first.doc_id, "reason": reason}}, None
    _, judged = gate(glossed.text, result, services, target, memory=False)  # min_probability is on the gate's own P
    p = judged.get("probability")  # None: no classifier gate in force, so no second look
    relevant = p is not None and p >= safety.gloss_min_probability
    trace.update(first=first.doc_id, probability=p, threshold=safety.gloss_min_probability, relevant=relevant)
    return (result, {"gloss": trace}, content) if relevant else (None, {"gloss": trace}, None)

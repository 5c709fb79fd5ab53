"""A refused question searched again in other words (the Italian question's English gloss, stages.gloss_look; an
English question with the cards' words for its patient words, stages.words_look): the same pipeline runs on the
new text, and it is answered from that result only when its first link is a ``target``-language card that is not
an urgent one and the ``target`` gate's probability on the new text reaches ``min_probability``."""

from __future__ import annotations

from typing import Any

from chatbot.pipeline import RetrievalResult, Services, run_pipeline


def search_again(
    text: str, target: str, pipeline: str, services: Services, min_probability: float
) -> tuple[RetrievalResult | None, dict[str, Any], dict[str, Any] | None]:
    """(the result to answer from, or None; what was judged: first link, probability, threshold, relevant or the
    reason; the content gate's entry for that result, as ``chatbot.content_gate.gate_result`` gives it)."""
    from chatbot.content_gate import gate_result
    from chatbot.stages.redflags import urgent_card_ids
    from chatbot.stages.relevance import gate, without_urgent_fillers

    result = run_pipeline(pipeline, text, services)
    content = gate_result(result, services)
    result.top = without_urgent_fillers(result, services)
    first = result.top[0].segment if result.top else None
    if (
        first is None
        or first.language != target
        or first.doc_id in urgent_card_ids(services.settings.safety.urgent_cards)
    ):
        reason = "no link" if first is None else f"first link {first.doc_id} is not a {target} card for answers"
        return None, {"first": None if first is None else first.doc_id, "reason": reason, "relevant": False}, None
    _, judged = gate(text, result, services, target)
    p = judged.get("probability")  # None: no classifier gate in force, so no second look
    relevant = p is not None and p >= min_probability
    trace = {"first": first.doc_id, "probability": p, "threshold": min_probability, "relevant": relevant}
    return (result, trace, content) if relevant else (None, trace, None)

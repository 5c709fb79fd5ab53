"""Which English card an Italian question is answered from (retrieval.gloss_english_order): once an English card
is to be linked first for an Italian question (retrieval ranked it first, or a cross-language pick or second look
chose it), the English card linked first is the first document of a search of the English passages on the
question's word-by-word English gloss (chatbot.gloss), English against English for the multilingual bi-encoder.
Whether the answer is English is decided as before; only which English card. On the spent reply sets the gloss
search's first document was the answering English card for 312 of 332 Italian questions, the Italian question's own
search for 241 (evaluation/results/gloss-order-s24.md)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from chatbot.index import Hit


def gloss_first(
    hits: Sequence[Hit],
    language: str,
    search: Callable[[int], Sequence[Hit]],
    urgent: frozenset[str] | set[str] = frozenset(),
    top_n: int = 3,
) -> tuple[list[Hit], dict[str, Any] | None]:
    """(``hits`` with the gloss search's first document linked first, its trace entry): only when ``hits[0]`` is
    in another language than ``language`` (the question's). ``search(k)`` returns passages of the other language
    for the gloss, best first; urgent cards are never chosen. The chosen document's other hits leave, and the
    list keeps at most ``top_n`` links. Unchanged (trace None) when the first link is in ``language`` or the
    search finds no card; the trace says whether the first link changed."""
    if not hits or (hits[0].segment.language or language) == language:
        return list(hits), None
    first = next((h for h in search(top_n + 3) if h.segment.doc_id not in urgent), None)
    if first is None:
        return list(hits), None
    doc = first.segment.doc_id
    trace = {"was": hits[0].segment.doc_id, "first": doc, "dense": round(float(first.score), 4)}
    if doc == hits[0].segment.doc_id:
        return list(hits), {**trace, "changed": False}
    rest = [h for h in hits if h.segment.doc_id != doc]
    return [first, *rest][: max(top_n, 1)], {**trace, "changed": True}


def gloss_order_for(
    services: Any, gloss: str | None, language: str, excluded: bool, own_question: bool
) -> Callable[[Sequence[Hit]], tuple[list[Hit], dict[str, Any] | None]] | None:
    """``gloss_first`` bound to the services' dense retriever, urgent cards and settings, searching with ``gloss``
    (the question's, ``chatbot.gloss.gloss_text``), or None: the setting off, an exclusion question (its links keep
    the exclusion-aware order), a question already answered through its gloss (``own_question`` False:
    safety.gloss_second_look), no gloss (a language without one, or no glossary)."""
    from functools import partial

    from chatbot.stages.redflags import urgent_card_ids

    settings = services.settings
    dense = getattr(services, "dense", None)
    if not settings.retrieval.gloss_english_order or excluded or not own_question:
        return None
    if not hasattr(dense, "other_language"):
        return None
    if gloss is None:
        return None
    urgent = urgent_card_ids(settings.safety.urgent_cards)
    search = partial(dense.other_language, gloss, language)
    return partial(gloss_first, language=language, search=search, urgent=urgent, top_n=settings.retrieval.top_n)

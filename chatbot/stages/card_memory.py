"""Which card answers, by the labelled questions (retrieval.card_memory): the relevance gate's memory of labelled
questions (chatbot.stages.gate_memory) also knows which card answered each in-scope question. When the nearest such
question is within ``retrieval.card_memory_tau`` (cosine, raw e5) of the patient's, and one of its cards is among
the retrieved documents but not linked first, that card's best passage is linked first and answers (as a
cross-language pick does). Leave-one-set-out on the spent reply sets, the nearest labelled question's card was the
answering card for 93-99% of questions with a neighbour at >= 0.93, against 71-90% for today's first link
(evaluation/results/card-memory-s28.md)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from chatbot.index import Hit
from chatbot.stages.gate_memory import GateMemory


def card_memory_pick(
    cosines: np.ndarray, memory: GateMemory, ranked: Sequence[Hit], tau: float
) -> tuple[Hit | None, dict[str, Any]]:
    """(the ranked document to link first, or None; the trace) for one question's cosines to the memory. Nothing
    moves when no in-scope question with named cards is within ``tau``, when the first ranked document is one of
    its cards already, or when none of them was retrieved (a withdrawn card is never brought back)."""
    if not memory.named.any() or not ranked:
        return None, {}
    j = int(np.argmax(np.where(memory.named, cosines, -2.0)))
    cosine = float(cosines[j])
    if cosine < tau:
        return None, {}
    cards = memory.cards[j]
    trace: dict[str, Any] = {"id": memory.ids[j], "cosine": round(cosine, 4), "cards": sorted(cards), "tau": tau}
    if ranked[0].segment.doc_id in cards:
        return None, {"card_memory": {**trace, "picked": None, "reason": "linked first already"}}
    for rank, hit in enumerate(ranked, 1):
        if hit.segment.doc_id in cards:
            return hit, {"card_memory": {**trace, "picked": hit.segment.doc_id, "rank": rank}}
    return None, {"card_memory": {**trace, "picked": None, "reason": "not retrieved"}}


def card_memory_for(question: str, result: Any, services: Any) -> tuple[Hit | None, dict[str, Any]]:
    """retrieval.card_memory for one answer (``result``: its RetrievalResult): the ranked document to answer from
    and link first, or None, and the trace entry; nothing without the gate's memory in force for the services'
    embedder (safety.gate_memory)."""
    from chatbot.stages.gate_memory import memory_for

    memory, _ = memory_for(services.settings, services.embedder)
    if memory is None:
        return None, {}
    cosines = memory.neighbours(services.embedder.embed_queries([question])[0])
    return card_memory_pick(cosines, memory, result.ranked, services.settings.retrieval.card_memory_tau)

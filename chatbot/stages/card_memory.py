"""Which card answers, by the labelled questions (retrieval.card_memory): the relevance gate's memory of labelled
questions (chatbot.stages.gate_memory) also knows which card answered each in-scope question. When the nearest such
question is within ``retrieval.card_memory_tau`` (cosine, raw e5) of the patient's, and one of its cards is among
the retrieved documents but not linked first, that card's best passage is linked first and answers (as a
cross-language pick does). Leave-one-set-out on the spent reply sets, the nearest labelled question's card was the
answering card for 93-99% of questions with a neighbour at >= 0.93, against 71-90% for today's first link
(evaluation/results/card-memory-s28.md).

``retrieval.card_memory_fetch`` also brings the card when retrieval did not find it, read from the index through
the content gate (a withdrawn or not-yet-current card has no readable segment and is not brought), never an urgent
card; ``retrieval.card_memory_over_looks`` lets the card replace the document a second look (other-language card,
English gloss) chose for a question the classifier gate refused."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import Any

import numpy as np

from chatbot.index import Hit
from chatbot.stages.gate_memory import GateMemory

LINKED_FIRST = "linked first already"  # the trace's reason when a remembered card leads already (answer.py reads it)


def card_memory_pick(
    cosines: np.ndarray,
    memory: GateMemory,
    ranked: Sequence[Hit],
    tau: float,
    first: str | None = None,
    fetch: Callable[[str], Hit | None] | None = None,
    urgent: Collection[str] = (),
) -> tuple[Hit | None, dict[str, Any]]:
    """(the document to link first, or None; the trace) for one question's cosines to the memory. Nothing moves
    when no in-scope question with named cards is within ``tau`` or when one of its cards is linked first already
    (``first``: the document linked first, by default the first ranked one). A card ranked lower is brought from
    its rank; one not retrieved only through ``fetch(card)`` (None: not readable), else nothing moves. An
    ``urgent`` card ("call 112 now") is never brought: a calm question that resembles an emergency one must not
    get the emergency card's reply; the red-flag screen links it when the question is urgent."""
    if not memory.named.any() or not (ranked or fetch):
        return None, {}
    j = int(np.argmax(np.where(memory.named, cosines, -2.0)))
    cosine = float(cosines[j])
    if cosine < tau:
        return None, {}
    cards = memory.cards[j]
    trace: dict[str, Any] = {"id": memory.ids[j], "cosine": round(cosine, 4), "cards": sorted(cards), "tau": tau}
    lead = first if first is not None else (ranked[0].segment.doc_id if ranked else None)
    if lead in cards:
        return None, {"card_memory": {**trace, "picked": None, "reason": LINKED_FIRST}}
    allowed = cards - set(urgent)
    if not allowed:
        return None, {"card_memory": {**trace, "picked": None, "reason": "urgent card"}}
    for rank, hit in enumerate(ranked, 1):
        if hit.segment.doc_id in allowed:
            return hit, {"card_memory": {**trace, "picked": hit.segment.doc_id, "rank": rank}}
    for card in sorted(allowed) if fetch is not None else ():
        hit = fetch(card)
        if hit is not None:
            return hit, {"card_memory": {**trace, "picked": card, "rank": None, "fetched": True}}
    reason = "not retrieved" if fetch is None else "not retrieved, not readable"
    return None, {"card_memory": {**trace, "picked": None, "reason": reason}}


def readable_card(services: Any) -> Callable[[str], Hit | None]:
    """``fetch`` for card_memory_pick: a card's first segment patients may read now (content gate), or None for
    an urgent card (the red-flag screen brings those) or one with no readable segment (withdrawn, not in this
    library)."""
    from chatbot.content_gate import segments_filter
    from chatbot.stages.redflags import urgent_card_ids

    urgent = urgent_card_ids(services.settings.safety.urgent_cards)
    segments = segments_filter(services.index.document_segments, services)

    def fetch(card: str) -> Hit | None:
        if card in urgent:
            return None
        found = segments(card)
        return Hit(found[0], 0.0, {"card_memory": 1.0}) if found else None

    return fetch


def card_memory_for(
    question: str, result: Any, services: Any, first: str | None = None, urgent: bool = False
) -> tuple[Hit | None, dict[str, Any]]:
    """retrieval.card_memory for one answer (``result``: its RetrievalResult; ``first``: the document a second look
    chose, if any; ``urgent``: whether the red-flag screen fired): the document to answer from and link first, or
    None, and the trace entry; nothing without the gate's memory in force for the services' embedder
    (safety.gate_memory). Only an urgent question may be answered from a remembered urgent card."""
    from chatbot.stages.gate_memory import question_cosines
    from chatbot.stages.redflags import urgent_card_ids

    memory, cosines, _ = question_cosines(question, services)
    if memory is None or cosines is None:
        return None, {}
    retrieval = services.settings.retrieval
    fetch = readable_card(services) if retrieval.card_memory_fetch else None
    never = () if urgent else urgent_card_ids(services.settings.safety.urgent_cards)
    return card_memory_pick(cosines, memory, result.ranked, retrieval.card_memory_tau, first, fetch, never)

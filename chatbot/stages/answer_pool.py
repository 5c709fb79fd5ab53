"""The composer's answer pool across languages (retrieval.answer_pool): for a question whose links are in its own
language while the candidates also hold another language's passages, the best other-language document joins the
composer's candidates beside the links. It becomes a link only when its sentence wins the answer selection
(chatbot.stages.answer_select.by_language makes the other language pay a penalty); then it is linked first and
the lowest link not answering drops (still ``top_n`` links). Otherwise the reply and the links are those of the
links alone. The relevance gate has decided before, on the links as retrieved."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from chatbot.index import Hit


def pool_candidate(
    top: Sequence[Hit],
    candidates: Sequence[Hit],
    language: str,
    pool: Mapping[str, float],
    urgent: frozenset[str] | set[str] = frozenset(),
) -> Hit | None:
    """The best other-language candidate (bi-encoder cosine, ``detail["dense"]``) of a document not linked and
    not an urgent card, when ``pool`` has a margin δ for ``language`` and its cosine is within δ of the lowest
    link's; None otherwise (no setting, no link in ``language``, no other-language candidate close enough)."""
    delta = pool.get(language)
    if delta is None or not links_in(top, language):
        return None
    linked = {h.segment.doc_id for h in top}
    floor = min(raw_cosine(h) for h in top) - float(delta)
    best: Hit | None = None
    for h in candidates:
        lang = h.segment.language or ""
        if not lang or lang == language or h.segment.doc_id in linked or h.segment.doc_id in urgent:
            continue
        if raw_cosine(h) >= floor and (best is None or raw_cosine(h) > raw_cosine(best)):
            best = h
    return best


def separate_candidate(
    top: Sequence[Hit],
    search: Callable[[int], Sequence[Hit]],
    language: str,
    pool: Mapping[str, float],
    urgent: frozenset[str] | set[str] = frozenset(),
) -> Hit | None:
    """The first document of the other-language pool searched on its own (``search(k)``: the best passages not in
    ``language``, e.g. DenseRetriever.other_language) that is not linked and not an urgent card, when ``pool``
    names ``language`` and a link is in ``language``; its cosine is not compared with the links' (the two
    languages' pools are merged by rank: an Italian question's English card ranks below every Italian card)."""
    if language not in pool or not links_in(top, language):
        return None
    linked = {h.segment.doc_id for h in top}
    for h in search(len(top) + 3):
        if h.segment.doc_id not in linked and h.segment.doc_id not in urgent:
            return h
    return None


def raw_cosine(h: Hit) -> float:
    """The hit's raw bi-encoder cosine (``detail["dense"]``; its score when the search recorded none)."""
    return float(h.detail.get("dense", h.score))


def links_in(top: Sequence[Hit], language: str) -> bool:
    """Whether a link of ``top`` is in ``language`` (the only case an other-language document is offered)."""
    return any((h.segment.language or "") == language for h in top)


def answer_doc(compose_trace: Mapping[str, Any]) -> str | None:
    """The document of the reply's answering sentence (the last compose attempt's), or None."""
    attempts = compose_trace.get("attempts") or []
    return ((attempts[-1].get("answer") or {}).get("doc_id")) if attempts else None


def compose_with_pool(
    compose: Callable[[Sequence[Hit]], Any], top: Sequence[Hit], extra: Hit | None, top_n: int = 3
) -> tuple[Any, list[Hit]]:
    """(composed reply, links): with ``extra``, compose over the links plus it; when its sentence answers, the
    links are it then ``top`` (its last link dropped when that makes more than ``top_n``), else the reply is
    composed again over ``top`` alone (the reply without the pool, exactly). ``compose(hits)`` returns a
    ComposedReply (chatbot.stages.compose)."""
    if extra is None:
        return compose(top), list(top)
    pooled = compose([*top, extra])
    joined = answer_doc(pooled.trace) == extra.segment.doc_id
    note = {"doc_id": extra.segment.doc_id, "dense": round(raw_cosine(extra), 4), "joined": joined}
    if joined:
        pooled.trace["answer_pool"] = note
        return pooled, [extra, *top][: max(top_n, 1)]
    composed = compose(top)
    composed.trace["answer_pool"] = note
    return composed, list(top)

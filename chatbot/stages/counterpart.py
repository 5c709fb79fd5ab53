"""The patient's own-language card on the same topic (retrieval.own_language_counterpart): when a reply is about to
be answered from another language's card (an Italian question answered by "Caffeine limits in pregnancy"), and the
content team has a card in the patient's language on that topic (paired by source link, as ``chatbot content
coverage`` pairs them: ``content_coverage.topic_key``), the reply is composed again with that card beside the
other-language one. The answer-first composer then chooses between the two languages as it always does
(``answer_select.by_language``: the other language pays a penalty), so the own-language card answers when it holds
an answering sentence, and the other-language card keeps the reply when only it does."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from chatbot.content_coverage import topic_key
from chatbot.index import Hit
from chatbot.stages.answer_pool import answer_doc


def topic_documents(metadatas: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], list[str]]:
    """{(topic key, language): document ids, in first-seen order} of the indexed segments' metadata."""
    out: dict[tuple[str, str], list[str]] = {}
    for meta in metadatas:
        url, doc_id, lang = meta.get("source_url"), meta.get("doc_id"), meta.get("language") or ""
        if not url or not doc_id:
            continue
        docs = out.setdefault((topic_key(str(url)), str(lang)), [])
        if doc_id not in docs:
            docs.append(str(doc_id))
    return out


def counterpart_of(
    hit: Hit, language: str, topics: Mapping[tuple[str, str], Sequence[str]], excluded: frozenset[str] | set[str]
) -> str | None:
    """The first document in ``language`` on the topic of ``hit``'s document (its source link), other than the
    documents in ``excluded`` (urgent cards); None when ``hit`` is in ``language`` already or there is none."""
    seg = hit.segment
    if (seg.language or "") == language or not seg.source_url:
        return None
    for doc_id in topics.get((topic_key(seg.source_url), language), ()):
        if doc_id not in excluded:
            return doc_id
    return None


def with_counterpart(
    compose: Callable[[Sequence[Hit]], Any],
    composed: Any,
    top: Sequence[Hit],
    language: str,
    topics: Mapping[tuple[str, str], Sequence[str]],
    document_segments: Callable[[str], Sequence[Any]],
    candidates: Sequence[Hit] = (),
    excluded: frozenset[str] | set[str] = frozenset(),
    top_n: int = 3,
) -> tuple[Any, list[Hit], dict[str, Any] | None]:
    """(reply, links, trace note): when ``composed`` answers from a document in another language than
    ``language`` whose topic has a document in ``language``, the reply composed over that document's best passage
    (among ``candidates``, else its first readable segment) and the answering other-language passage; kept when the
    own-language document answers (linked first, ``top`` after it, ``top_n`` links), else ``composed`` and ``top``
    unchanged. No note when nothing applies."""
    answering = answer_doc(composed.trace)
    other = next((h for h in top if h.segment.doc_id == answering), None)
    if other is None:
        return composed, list(top), None
    own = counterpart_of(other, language, topics, excluded)
    if own is None:
        return composed, list(top), None
    best = max((h for h in candidates if h.segment.doc_id == own), key=lambda h: h.score, default=None)
    if best is None:
        segments = list(document_segments(own))
        if not segments:  # withdrawn, or not readable in this content generation
            return composed, list(top), {"from": answering, "to": own, "joined": False, "reason": "no readable segment"}
        best = Hit(segments[0], 0.0, {})
    again = compose([best, other])
    joined = bool(again.text) and answer_doc(again.trace) == own
    note = {"from": answering, "to": own, "joined": joined}
    if not joined:
        return composed, list(top), note
    links = [best, *[h for h in top if h.segment.doc_id != own]][: max(top_n, 1)]
    return again, links, note


def topic_documents_of(services: Any) -> dict[tuple[str, str], list[str]]:
    """``topic_documents`` of the services' index, read once per index size (content added or removed reads it
    again; withdrawn versions are filtered when their segments are read)."""
    count = services.index.count()
    cached = services.__dict__.get("_topic_documents")
    if cached is None or cached[0] != count:
        got = services.index.collection().get(include=["metadatas"])
        cached = (count, topic_documents(got.get("metadatas") or []))
        services.__dict__["_topic_documents"] = cached
    return cached[1]

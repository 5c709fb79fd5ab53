"""The content gate: retrieval sees only the current version of each managed document.

The index may hold, for a moment, the segments of two versions of a document (a new version is indexed
before it is certified; an old one is deleted after the switch) or of a withdrawn one (deleted just after
the withdrawal commits). Every segment of a managed document carries its version id (``content_version``);
the gate keeps only hits whose version is the document's current one in the database, read at each question
through the content generation (one small read; the map is reloaded only when it changed). The switch is one
database transaction (chatbot/store/content.py), so a question sees the old version or the new, never both
or neither. After composing, ``recheck`` reads the generation again: an answer whose links lost their
version meanwhile is answered again, so no answer finished after a withdrawal committed links it.

Segments of ``chatbot ingest`` (``content_version`` 0) are not managed and pass."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from chatbot.store import content as repo
from chatbot.store.db import Store

WARNING = {
    "en": "Note: a linked document is past its review date; check with your care team that it is still current.",
    "it": "Nota: un documento collegato ha superato la data di revisione; verifica con i tuoi curanti che sia "
    "ancora valido.",
}


@dataclass
class ContentView:
    """The documents patients may read at one generation, under one expiry policy."""

    generation: int
    docs: dict[str, repo.LiveDoc] = field(default_factory=dict)
    policy: str = "exclude"

    def allows(self, segment: Any) -> bool:
        version = int(getattr(segment, "content_version", 0) or 0)
        if not version:
            return True
        doc = self.docs.get(segment.doc_id)
        return doc is not None and doc.version_id == version and self.allows_status(doc.status)

    def allows_status(self, status: str) -> bool:
        """Certified, or expired while ``corpus.expired_content`` is ``warn``."""
        return status == "certified" or (status == "expired" and self.policy == "warn")

    def expired(self, segment: Any) -> bool:
        doc = self.docs.get(segment.doc_id)
        return bool(getattr(segment, "content_version", 0)) and doc is not None and doc.status == "expired"


class ContentGate:
    """Reads the live documents from the store, cached per content generation."""

    def __init__(self, store: Store, settings: Any, today: Callable[[], date] = date.today) -> None:
        self.store = store
        self.settings = settings
        self.today = today
        self._lock = threading.Lock()
        self._view: ContentView | None = None

    @property
    def policy(self) -> str:
        return self.settings.corpus.expired_content

    def view(self) -> ContentView:
        """The current view: one read of the generation; the documents reloaded when it moved; certified
        versions past their review date marked expired first (chatbot.store.content.expire_due)."""
        with self._lock:
            gen = repo.generation(self.store)
            if self._view is None or self._view.generation != gen:
                gen, docs = repo.live_documents(self.store)
                self._view = ContentView(gen, docs, self.policy)
            today = self.today()
            if any(d.status == "certified" and d.review_due and d.review_due < today for d in self._view.docs.values()):
                repo.expire_due(self.store, today, self.policy)
                gen, docs = repo.live_documents(self.store)
                self._view = ContentView(gen, docs, self.policy)
            self._view.policy = self.policy
            return self._view

    def generation(self) -> int:
        return repo.generation(self.store)


def managed(hits: list[Any]) -> bool:
    return any(getattr(h.segment, "content_version", 0) for h in hits)


def _forget_stale_caches(services: Any, generation: int) -> None:
    """BM25 and the exact-search matrix are built from the index once; a new generation rebuilds them so a
    newly certified document is found lexically too."""
    if getattr(services, "_content_generation", None) == generation:
        return
    if getattr(services, "_content_generation", None) is not None:
        for name in ("bm25", "fusion_reranker"):
            services.__dict__.pop(name, None)
        index = services.__dict__.get("index")
        if index is not None:
            index._matrix = None
    services._content_generation = generation


def refresh_caches(services: Any) -> None:
    """Before a question, where a content gate is open: rebuild BM25 and the exact-search matrix when the
    content generation moved (a document certified in this process since they were built)."""
    gate = services.__dict__.get("content_gate") if hasattr(services, "__dict__") else None
    if gate is not None:
        _forget_stale_caches(services, gate.generation())


def gate_result(result: Any, services: Any) -> dict[str, Any] | None:
    """Drop the hits whose document version patients may not read (in place) and refill the top from the
    ranked list; returns the trace's ``content`` entry (generation, linked versions, expired documents), or
    None when no managed document is among the hits (no database read)."""
    if not (managed(result.candidates) or managed(result.ranked) or managed(result.top)):
        return None
    view = services.content_gate.view()
    _forget_stale_caches(services, view.generation)
    n = len(result.top)
    removed = sorted({h.segment.doc_id for h in [*result.candidates, *result.ranked] if not view.allows(h.segment)})
    result.candidates = [h for h in result.candidates if view.allows(h.segment)]
    result.ranked = [h for h in result.ranked if view.allows(h.segment)]
    top = [h for h in result.top if view.allows(h.segment)]
    docs = {h.segment.doc_id for h in top}
    for h in result.ranked:
        if len(top) >= n:
            break
        if h.segment.doc_id not in docs:
            top.append(h)
            docs.add(h.segment.doc_id)
    result.top = top
    return {
        "generation": view.generation,
        "removed": removed,
        "versions": {h.segment.doc_id: h.segment.content_version for h in top if h.segment.content_version},
        "expired": sorted({h.segment.doc_id for h in top if view.expired(h.segment)}),
    }


def segments_filter(fetch: Callable[[str], list[Any]], services: Any) -> Callable[[str], list[Any]]:
    """``index.document_segments`` keeping only the segments the gate allows (the composer reads beside a
    retrieved segment: never from another version of its document)."""

    def filtered(doc_id: str) -> list[Any]:
        segs = fetch(doc_id)
        if not any(getattr(s, "content_version", 0) for s in segs):
            return segs
        view = services.content_gate.view()
        return [s for s in segs if view.allows(s)]

    return filtered


def links_still_live(versions: dict[str, int], services: Any, generation: int) -> bool:
    """True when every linked version is still readable: no generation change since, or none of them lost."""
    if not versions:
        return True
    gate = services.content_gate
    if gate.generation() == generation:
        return True
    view = gate.view()
    live = (view.docs.get(d) for d in versions)
    return all(doc is not None and doc.version_id == versions[d] and view.allows_status(doc.status)
               for d, doc in zip(versions, live, strict=True))  # fmt: skip


def with_warning(ans: dict[str, Any], content: dict[str, Any] | None) -> dict[str, Any]:
    """Under ``corpus.expired_content=warn`` an answer linking an expired document says so after the reply."""
    if content and content.get("expired") and ans.get("links"):
        note = WARNING.get(str(ans.get("language")), WARNING["en"])
        ans["reply"] = f"{ans['reply']}\n\n{note}" if ans.get("reply") else note
    return ans


def approved_links_content(links: list[dict[str, Any]], services: Any) -> dict[str, Any] | None:
    """The trace's ``content`` entry of an approved answer (versions of the managed documents it links, the
    expired ones among them), or None when one of them is no longer readable in the version the clinician
    approved (segment ids of managed documents end in ``@v<number>``)."""
    cited = {}
    for link in links:
        sid = str(link.get("segment_id", ""))
        if "@v" in sid:
            number = sid.rsplit("@v", 1)[1]
            cited[sid.split("#")[0]] = int(number) if number.isdigit() else -1
    if not cited:
        return {}
    view = services.content_gate.view()
    versions, expired = {}, []
    for doc_id, number in cited.items():
        doc = view.docs.get(doc_id)
        if doc is None or doc.number != number or not view.allows_status(doc.status):
            return None
        versions[doc_id] = doc.version_id
        if doc.status == "expired":
            expired.append(doc_id)
    return {"generation": view.generation, "versions": versions, "expired": sorted(expired)}

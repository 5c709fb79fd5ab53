"""The certified content lifecycle over the database and the index: import files as draft versions, preview
their segments, certify a version (its segments replace the old version's in one step), withdraw, diff.

Certifying: the new version's segments are embedded into the index first, tagged with its version id and
invisible (the content gate shows only the document's current version); then one database transaction makes
it current (chatbot/store/content.py); then the old version's segments are deleted. A failure before the
switch removes what it added and leaves the old version serving; a failure after it leaves old segments
that the gate already hides."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable
from dataclasses import replace
from datetime import date
from pathlib import Path
from typing import Any

from chatbot.store import content as repo
from chatbot.store.auth import Principal
from chatbot.store.db import Store
from corpus.file_importers import FORMATS, file_format, read_document_file
from corpus.importers import CorpusError
from corpus.model import Document, Segment
from corpus.segmenter import segment_document


def content_files(paths: Iterable[Path]) -> list[Path]:
    """The importable files under ``paths`` (folders searched recursively; sidecars and READMEs left out)."""
    out: list[Path] = []
    for path in map(Path, paths):
        if path.is_dir():
            out.extend(
                p
                for p in sorted(path.rglob("*"))
                if p.is_file() and p.suffix.lower() in FORMATS and p.name.lower() != "readme.md"
            )
        else:
            out.append(path)
    return out


def import_files(
    store: Store,
    paths: Iterable[Path],
    by: Principal | None,
    meta: dict[str, Any] | None = None,
    progress: Callable[[int], None] | None = None,
) -> dict[str, list[dict[str, Any]]]:
    """Read every file into a draft version. A file that cannot be read is reported in ``skipped`` with its
    reason and nothing else changes; a file whose content equals its document's latest version writes
    nothing (``unchanged``). Nothing is embedded here: a draft reaches the index only when certified."""
    report: dict[str, list[dict[str, Any]]] = {"imported": [], "unchanged": [], "skipped": []}
    username = by.username if by is not None else "cli"
    for path in content_files(paths):
        try:
            fmt = file_format(path)
            doc = read_document_file(path, meta)
            outcome = repo.record_version(store, doc, fmt, path.name, username, by)
        except CorpusError as exc:
            report["skipped"].append({"file": str(path), "reason": str(exc)})
        else:
            key = "unchanged" if outcome["status"] == "unchanged" else "imported"
            report[key].append({"file": str(path), **outcome})
        if progress is not None:
            progress(1)
    return report


def version_segments(version: Any, settings: Any, certified_by: str = "", certified_on: str = "") -> list[Segment]:
    """The segments a version produces (what the preview shows and certification indexes): ids carry the
    version number (``DOC#hash@vN``), so two versions never share a segment in the index."""
    doc = Document(
        id=version.document_id,
        title=version.title,
        source_url=version.source_url,
        text=version.text,
        publisher=version.publisher,
        language=version.language,
        certified_by=certified_by,
        certified_on=certified_on,
        version=str(version.number),
    )
    segments = segment_document(doc, settings.corpus.segment_max_chars, settings.corpus.segment_min_chars)
    return [replace(s, id=f"{s.id}@v{version.number}", content_version=version.id) for s in segments]


def preview(store: Store, settings: Any, doc_id: str, number: int | None = None) -> list[dict[str, Any]]:
    """The segments a version (the latest by default) will produce: heading and text, in reading order."""
    version = repo.get_version(store, doc_id, number)
    return [
        {"position": s.position, "heading": s.heading, "text": s.text, "segment_id": s.id}
        for s in version_segments(version, settings)
    ]


def diff(store: Store, doc_id: str, old: int, new: int) -> str:
    """Unified diff of two versions' texts (Markdown)."""
    a, b = repo.get_version(store, doc_id, old), repo.get_version(store, doc_id, new)
    lines = difflib.unified_diff(
        a.text.splitlines(), b.text.splitlines(), f"{doc_id} v{old}", f"{doc_id} v{new}", lineterm=""
    )
    return "\n".join(lines)


def default_review_due(settings: Any, today: date | None = None) -> date:
    """``corpus.review_months`` after today (clamped to the month's last day)."""
    import calendar

    today = today or date.today()
    month = today.month - 1 + settings.corpus.review_months
    year, month = today.year + month // 12, month % 12 + 1
    return date(year, month, min(today.day, calendar.monthrange(year, month)[1]))


def certify(
    services: Any,
    store: Store,
    who: Principal,
    doc_id: str,
    number: int | None = None,
    review_due: date | None = None,
) -> dict[str, Any]:
    """Certify a version (the latest by default) as ``who`` (a clinician): index its segments, switch, then
    delete the replaced version's segments. Certifying the current version again sets a new review date."""
    if not who.can(*repo.CERTIFIERS):
        raise repo.ContentError(f"{who.username} ({who.role}) cannot certify: only a clinician certifies content")
    version = repo.get_version(store, doc_id, number)
    review_due = review_due or default_review_due(services.settings)
    if review_due <= date.today():
        raise repo.ContentError(f"the review date {review_due.isoformat()} must be in the future")
    segments = version_segments(version, services.settings, who.username, date.today().isoformat())
    if not segments:
        raise repo.ContentError(f"{doc_id} v{version.number} has no text to certify")
    added = services.index.add_segments(segments, services.settings.index.batch_size)
    try:
        result = repo.certify_switch(store, version.id, who, review_due)
    except BaseException:
        services.index.delete_ids(added)  # never visible: the switch did not happen
        raise
    if result.get("replaced_version_id"):
        services.index.delete_version(result["replaced_version_id"])
    return {**result, "segments": len(segments), "embedded": len(added)}


def withdraw(services: Any, store: Store, who: Principal, doc_id: str, reason: str) -> dict[str, Any]:
    """Withdraw a document (reason required): committed first (the gate hides it from the next question and
    from answers still being composed), then its segments are deleted from the index."""
    result = repo.withdraw(store, doc_id, who, reason)
    services.index.delete_version(result["version_id"])
    return result


def recertify(
    services: Any, store: Store, who: Principal, doc_id: str, review_due: date | None = None, comment: str = ""
) -> dict[str, Any]:
    """A clinician puts a withdrawn document back: its withdrawn text becomes a new version (the withdrawn one
    stays on record) and is certified like any other (audited as ``content_recertify``, then certify)."""
    if not who.can(*repo.CERTIFIERS):
        raise repo.ContentError(f"{who.username} ({who.role}) cannot re-certify: only a clinician certifies content")
    if review_due is not None and review_due <= date.today():
        raise repo.ContentError(f"the review date {review_due.isoformat()} must be in the future")
    copy = repo.copy_withdrawn(store, doc_id, who, comment)
    return {**certify(services, store, who, doc_id, copy["version"], review_due), "from_version": copy["from_version"]}


def reindex(services: Any, store: Store) -> dict[str, int]:
    """Put the current version of every managed document back into the index (after `chatbot ingest
    --rebuild` dropped the collection, or a change of embedding model); segments already there stay."""
    from chatbot.store.content_list import current_versions

    versions = current_versions(store)
    embedded = 0
    for version in versions:
        certified_on = version.certified_at.date().isoformat() if version.certified_at else ""
        segments = version_segments(version, services.settings, version.certified_by or "", certified_on)
        embedded += len(services.index.add_segments(segments, services.settings.index.batch_size))
    return {"documents": len(versions), "embedded": embedded}

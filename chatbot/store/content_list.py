"""Read side of the managed documents: list and filter, one document with its versions, the approved answers
suspended for re-review (chatbot content list|show, the /content page)."""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

from sqlalchemy import select

from chatbot.store.content_models import ContentDocument, ContentVersion
from chatbot.store.db import Store
from chatbot.store.models import Approval


def _doc_of_segment(segment_id: str) -> str:
    return str(segment_id).split("#")[0]


def _version_row(v: ContentVersion) -> dict[str, Any]:
    def iso(x: datetime | date | None) -> str | None:
        return x.isoformat(timespec="seconds") if isinstance(x, datetime) else (x.isoformat() if x else None)

    return {
        "version": v.number,
        "version_id": v.id,
        "status": v.status,
        "format": v.format,
        "file": v.source_name,
        "sha256": v.content_hash,
        "title": v.title,
        "source_url": v.source_url,
        "language": v.language,
        "publisher": v.publisher,
        "imported_by": v.imported_by,
        "imported_at": iso(v.imported_at),
        "certified_by": v.certified_by,
        "certified_at": iso(v.certified_at),
        "review_due": iso(v.review_due),
        "withdrawn_by": v.withdrawn_by,
        "withdrawn_at": iso(v.withdrawn_at),
        "withdraw_reason": v.withdraw_reason,
    }


def list_documents(
    store: Store, status: str | None = None, language: str | None = None, due_before: date | None = None
) -> list[dict[str, Any]]:
    """One row per document: its current version (else its latest), filtered by that version's status,
    the language and a review date before ``due_before``."""
    out = []
    with store.session() as s:
        for document in s.scalars(select(ContentDocument).order_by(ContentDocument.id)):
            versions = document.versions
            shown = next((v for v in versions if v.id == document.current_version_id), None) or versions[-1]
            row = {
                "document": document.id,
                "current_version": shown.number if document.current_version_id else None,
                "latest_version": versions[-1].number,
                **_version_row(shown),
            }
            if status and row["status"] != status:
                continue
            if language and row["language"] != language:
                continue
            if due_before and not (shown.review_due and shown.review_due < due_before):
                continue
            out.append(row)
    return out


def show_document(store: Store, doc_id: str) -> dict[str, Any]:
    """A document with every version (newest first) and the approvals suspended because of it."""
    with store.session() as s:
        document = s.get(ContentDocument, doc_id)
        if document is None:
            raise LookupError(f"no document {doc_id!r}")
        current = next((v.number for v in document.versions if v.id == document.current_version_id), None)
        versions = [_version_row(v) for v in reversed(document.versions)]
    suspended = [a for a in suspended_approvals(store) if doc_id in a["documents"]]
    return {"document": doc_id, "current_version": current, "versions": versions, "suspended_approvals": suspended}


def suspended_approvals(store: Store) -> list[dict[str, Any]]:
    """Approved answers waiting for re-review because a document they cite changed status."""
    with store.session() as s:
        rows = s.scalars(
            select(Approval).where(Approval.active.is_(True), Approval.suspended_at.is_not(None)).order_by(Approval.id)
        ).all()
        return [
            {
                "id": a.id,
                "question": a.question,
                "suspended_at": a.suspended_at.isoformat(timespec="seconds"),
                "reason": a.suspended_reason,
                "documents": sorted({_doc_of_segment(x) for x in a.segment_ids or []}),
            }
            for a in rows
        ]


def current_versions(store: Store) -> list[ContentVersion]:
    """The version patients read of every managed document (certified or expired), by document id."""
    with store.session() as s:
        return list(
            s.scalars(
                select(ContentVersion)
                .join(ContentDocument, ContentDocument.current_version_id == ContentVersion.id)
                .order_by(ContentVersion.document_id)
            )
        )


def refused_questions(store: Store, since: datetime) -> list[dict[str, Any]]:
    """Recorded questions answered "no certified information" since ``since`` (oldest first): turn id, date,
    language and the question as the store keeps it (conversations past store.retention_days are gone)."""
    from chatbot.store.models import Turn

    with store.session() as s:
        rows = s.execute(
            select(Turn.id, Turn.created_at, Turn.language, Turn.question)
            .where(Turn.status == "no_certified_info", Turn.created_at >= since)
            .order_by(Turn.created_at, Turn.id)
        ).all()
    return [{"turn_id": i, "at": at, "language": lang or "", "question": q} for i, at, lang, q in rows]

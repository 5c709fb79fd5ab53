"""Managed documents and their versions in the database: import, certify, withdraw, expire, list, show.

Each change of what patients may read (certify, withdraw, expire) is one transaction that also bumps the
content generation (``content_state``), suspends the approved answers citing the document and writes the
audit record: the content gate (chatbot/content_gate.py) sees all of it at the next question, or none."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import date
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from chatbot.store.auth import Principal, audit
from chatbot.store.content_models import ContentDocument, ContentState, ContentVersion
from chatbot.store.db import Store
from chatbot.store.models import Approval, User, utcnow

CERTIFIERS = ("clinician",)  # a named clinician certifies; admins and editors prepare and withdraw
WITHDRAWERS = ("clinician", "admin", "editor")
IMPORTERS = ("clinician", "admin", "editor")


class ContentError(ValueError):
    """A lifecycle action that is not allowed (wrong status, role, missing reason...)."""


@dataclass(frozen=True)
class LiveDoc:
    """What patients may read of one document: its current version and that version's status."""

    version_id: int
    number: int
    status: str  # certified | expired
    review_due: date | None


def content_hash(doc: Any) -> str:
    """SHA-256 of what a version carries: text, title, link, language, publisher."""
    payload = "\x1f".join([doc.text, doc.title, doc.source_url, doc.language, doc.publisher])
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def _bump(s: Session) -> int:
    state = s.get(ContentState, 1)
    if state is None:
        state = ContentState(id=1, generation=0)
        s.add(state)
    state.generation += 1
    return state.generation


def generation(store: Store) -> int:
    """The content generation: one small read, done before every question."""
    with store.session() as s:
        return int(s.scalar(select(ContentState.generation).where(ContentState.id == 1)) or 0)


def live_documents(store: Store) -> tuple[int, dict[str, LiveDoc]]:
    """(generation, {doc_id: LiveDoc}) of every document with a current (certified or expired) version, read
    in one transaction so the generation matches the map."""
    with store.session() as s:
        gen = int(s.scalar(select(ContentState.generation).where(ContentState.id == 1)) or 0)
        rows = s.execute(
            select(
                ContentDocument.id,
                ContentVersion.id,
                ContentVersion.number,
                ContentVersion.status,
                ContentVersion.review_due,
            ).join(ContentVersion, ContentVersion.id == ContentDocument.current_version_id)
        ).all()
    return gen, {doc_id: LiveDoc(vid, num, status, due) for doc_id, vid, num, status, due in rows}


def _doc_of_segment(segment_id: str) -> str:
    return str(segment_id).split("#")[0]


def suspend_approvals(s: Session, doc_id: str, reason: str) -> list[int]:
    """Suspend every active approval that cites ``doc_id`` (memory stops serving it); returns their ids."""
    rows = s.scalars(select(Approval).where(Approval.active.is_(True), Approval.suspended_at.is_(None))).all()
    hit = [a for a in rows if any(_doc_of_segment(sid) == doc_id for sid in a.segment_ids or [])]
    now = utcnow()
    for a in hit:
        a.suspended_at = now
        a.suspended_reason = reason
    return [a.id for a in hit]


def record_version(store: Store, doc: Any, fmt: str, source_name: str, by: str, who: Principal | None) -> dict:
    """Store ``doc`` as a new draft version of its document, unless the latest version has the same content
    hash (then nothing is written: status ``unchanged``). Audited."""
    digest = content_hash(doc)
    with store.session() as s:
        document = s.get(ContentDocument, doc.id)
        latest = None
        if document is None:
            document = ContentDocument(
                id=doc.id, title=doc.title, language=doc.language, publisher=doc.publisher, source_url=doc.source_url
            )
            s.add(document)
        else:
            latest = s.scalars(
                select(ContentVersion)
                .where(ContentVersion.document_id == doc.id)
                .order_by(ContentVersion.number.desc())
            ).first()
        if latest is not None and latest.content_hash == digest:
            return {"document": doc.id, "version": latest.number, "version_id": latest.id, "status": "unchanged",
                    "version_status": latest.status}  # fmt: skip
        number = (latest.number + 1) if latest is not None else 1
        version = ContentVersion(
            document_id=doc.id,
            number=number,
            content_hash=digest,
            format=fmt,
            source_name=source_name,
            title=doc.title,
            source_url=doc.source_url,
            language=doc.language,
            publisher=doc.publisher,
            text=doc.text,
            status="draft",
            imported_by=by,
        )
        s.add(version)
        s.flush()
        audit(
            s,
            who,
            "content_import",
            "content_version",
            version.id,
            {"document": doc.id, "version": number, "format": fmt, "file": source_name, "sha256": digest},
            username=by,
        )
        return {"document": doc.id, "version": number, "version_id": version.id, "status": "new"}


def get_version(store: Store, doc_id: str, number: int | None = None) -> ContentVersion:
    """A version of ``doc_id`` (the latest when ``number`` is None); LookupError when there is none."""
    with store.session() as s:
        q = select(ContentVersion).where(ContentVersion.document_id == doc_id)
        q = q.where(ContentVersion.number == number) if number is not None else q.order_by(ContentVersion.number.desc())
        version = s.scalars(q).first()
        if version is None:
            raise LookupError(f"no document {doc_id!r}" + (f" version {number}" if number is not None else ""))
        return version


def certify_switch(store: Store, version_id: int, who: Principal, review_due: date) -> dict[str, Any]:
    """Make ``version_id`` the one version patients read, in one transaction: its status ``certified`` with
    the clinician, date and review date; the version it replaces ``superseded`` (approved answers citing the
    document suspended for re-review); the generation bumped; the audit record. The caller has already put
    the version's segments in the index (not yet visible: the gate reads the current version from here)."""
    if not who.can(*CERTIFIERS):
        raise ContentError(f"{who.username} ({who.role}) cannot certify: only a clinician certifies content")
    with store.session() as s:
        version = s.get(ContentVersion, version_id, with_for_update=True)
        if version is None:
            raise LookupError(f"no content version {version_id}")
        if version.status in ("withdrawn", "superseded"):
            raise ContentError(
                f"version {version.number} of {version.document_id!r} is {version.status}; "
                + ("re-certify the document" if version.status == "withdrawn" else "import it again")
            )
        document = s.get(ContentDocument, version.document_id, with_for_update=True)
        previous = s.get(ContentVersion, document.current_version_id) if document.current_version_id else None
        suspended: list[int] = []
        if previous is not None and previous.id != version.id:
            previous.status = "superseded"
            suspended = suspend_approvals(
                s, document.id, f"{document.id} v{version.number} replaced v{previous.number}"
            )
        version.status = "certified"
        version.certified_by_id = who.id
        version.certified_by = who.username
        version.certified_at = utcnow()
        version.review_due = review_due
        document.current_version_id = version.id
        document.title, document.language = version.title, version.language
        document.publisher, document.source_url = version.publisher, version.source_url
        gen = _bump(s)
        detail = {
            "document": document.id,
            "version": version.number,
            "review_due": review_due.isoformat(),
            "replaced": previous.number if previous is not None and previous.id != version.id else None,
            "suspended_approvals": suspended,
            "generation": gen,
        }
        audit(s, who, "content_certify", "content_version", version.id, detail)
        return {
            **detail,
            "replaced_version_id": previous.id if previous is not None and previous.id != version.id else None,
        }


def withdraw(store: Store, doc_id: str, who: Principal, reason: str) -> dict[str, Any]:
    """Take ``doc_id`` away from patients in one transaction: its current version ``withdrawn`` (who, when,
    why), no current version, approvals citing it suspended, generation bumped, audited. A reason is required."""
    reason = (reason or "").strip()
    if not reason:
        raise ContentError("say why the document is withdrawn")
    if not who.can(*WITHDRAWERS):
        raise ContentError(f"{who.username} ({who.role}) cannot withdraw content")
    with store.session() as s:
        document = s.get(ContentDocument, doc_id, with_for_update=True)
        if document is None:
            raise LookupError(f"no document {doc_id!r}")
        if document.current_version_id is None:
            raise ContentError(f"{doc_id!r} has no certified version to withdraw")
        version = s.get(ContentVersion, document.current_version_id)
        version.status = "withdrawn"
        version.withdrawn_at = utcnow()
        version.withdrawn_by = who.username
        version.withdraw_reason = reason
        document.current_version_id = None
        suspended = suspend_approvals(s, doc_id, f"{doc_id} withdrawn: {reason}")
        gen = _bump(s)
        detail = {
            "document": doc_id,
            "version": version.number,
            "reason": reason,
            "suspended_approvals": suspended,
            "generation": gen,
        }
        audit(s, who, "content_withdraw", "content_version", version.id, detail)
        return {**detail, "version_id": version.id}


def expire_due(store: Store, today: date, policy: str) -> list[dict[str, Any]]:
    """Mark every current certified version whose review date is before ``today`` ``expired`` (generation
    bumped, audited as ``system``); with policy ``exclude`` the approvals citing it are suspended too."""
    out = []
    with store.session() as s:
        rows = s.execute(
            select(ContentDocument, ContentVersion)
            .join(ContentVersion, ContentVersion.id == ContentDocument.current_version_id)
            .where(ContentVersion.status == "certified", ContentVersion.review_due < today)
            .with_for_update()
        ).all()
        for document, version in rows:
            version.status = "expired"
            suspended = (
                suspend_approvals(s, document.id, f"{document.id} past its review date") if policy == "exclude" else []
            )
            out.append(
                {
                    "document": document.id,
                    "version": version.number,
                    "review_due": version.review_due.isoformat(),
                    "policy": policy,
                    "suspended_approvals": suspended,
                }
            )
            audit(s, None, "content_expire", "content_version", version.id, out[-1], username="system")
        if out:
            _bump(s)
    return out


def copy_withdrawn(store: Store, doc_id: str, who: Principal, comment: str) -> dict[str, Any]:
    """A new draft version of ``doc_id`` holding its latest withdrawn version's text (that one stays withdrawn,
    on record), for a clinician to certify again; the document must have no current version. Audited."""
    if not who.can(*CERTIFIERS):
        raise ContentError(f"{who.username} ({who.role}) cannot re-certify: only a clinician certifies content")
    with store.session() as s:
        document = s.get(ContentDocument, doc_id, with_for_update=True)
        if document is None:
            raise LookupError(f"no document {doc_id!r}")
        withdrawn = [v for v in document.versions if v.status == "withdrawn"]
        if document.current_version_id is not None or not withdrawn:
            raise ContentError(f"{doc_id!r} is not withdrawn: nothing to re-certify")
        old, number = withdrawn[-1], document.versions[-1].number + 1
        fields = ("content_hash", "format", "source_name", "title", "source_url", "language", "publisher", "text")
        version = ContentVersion(document_id=doc_id, number=number, status="draft", imported_by=who.username,
                                 **{f: getattr(old, f) for f in fields})  # fmt: skip
        s.add(version)
        s.flush()
        detail = {"document": doc_id, "version": number, "from_version": old.number, "comment": comment}
        audit(s, who, "content_recertify", "content_version", version.id, detail)
        return {**detail, "version_id": version.id}


def reinstate_approval(store: Store, who: Principal, approval_id: int, comment: str) -> None:
    """A clinician re-reviewed a suspended approval and keeps it: memory serves it again. Audited."""
    if not who.can("clinician"):
        raise ContentError("only a clinician reinstates an approved answer")
    with store.session() as s:
        done = s.execute(
            update(Approval)
            .where(Approval.id == approval_id, Approval.suspended_at.is_not(None), Approval.active.is_(True))
            .values(suspended_at=None, suspended_reason=None)
        ).rowcount
        if not done:
            raise LookupError(f"no suspended approval {approval_id}")
        audit(s, who, "approval_reinstated", "approval", approval_id, {"comment": comment})


def principal(store: Store, username: str) -> Principal:
    """The Principal of an existing, enabled user (the command line's ``--as``)."""
    with store.session() as s:
        user = s.scalars(select(User).where(User.username == username)).first()
        if user is None or user.disabled:
            raise LookupError(f"no enabled user {username!r} (add one: chatbot users add NAME --role ROLE)")
        return Principal(user.id, user.username, user.role)

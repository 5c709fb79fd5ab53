"""Repositories for patient conversations and clinician reviews. Every write commits before returning."""

from __future__ import annotations

import re
import uuid
from datetime import timedelta
from typing import Any

from sqlalchemy import delete, func, select

from chatbot.store.auth import Principal, audit
from chatbot.store.db import Store
from chatbot.store.models import Approval, AuditLog, Conversation, LinkVerdict, Review, Turn, User, utcnow

QUEUE_FILTERS = ("unreviewed", "flagged", "thumbs_down", "all")
# A stored question is cut here (5 times the input limit): an over-long question is refused anyway, and an
# API caller must not fill the database; the trace keeps the original length.
STORED_QUESTION_MAX_CHARS = 10_000
# Escaped before storing: C0 controls but tab, newline and carriage return (PostgreSQL rejects NUL in text
# and JSON; the others would be stored invisibly), DEL and C1 controls, and lone surrogates (not encodable
# as UTF-8 by either driver).
_UNSTORABLE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")


def _escape(m: re.Match) -> str:
    code = ord(m.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def storable_text(text: str) -> tuple[str, int]:
    """(text, number of escapes): NUL, other control characters (not tab, newline, CR) and lone surrogates
    become visible escapes (``\\x00``, ``\\x1b``, ``\\ud800``) that SQLite and PostgreSQL both store."""
    return _UNSTORABLE.subn(_escape, text)


def _storable(value: Any) -> Any:
    """``value`` (JSON data: trace, links) with every string, key included, made storable."""
    if isinstance(value, str):
        return storable_text(value)[0]
    if isinstance(value, dict):
        return {_storable(k): _storable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_storable(v) for v in value]
    return value


def storable_question(question: Any) -> tuple[str, dict[str, Any] | None]:
    """(stored text, note): the question made storable and cut at STORED_QUESTION_MAX_CHARS; the note (for
    the trace) gives the original length and what was changed, or is None when nothing was."""
    raw = question if isinstance(question, str) else str(question)
    cut = raw[:STORED_QUESTION_MAX_CHARS]
    text, escaped = storable_text(cut)
    if escaped == 0 and len(cut) == len(raw):
        return text, None
    return text, {"chars": len(raw), "escaped": escaped, "truncated": len(cut) < len(raw)}


def new_conversation_id() -> str:
    return str(uuid.uuid4())


def is_conversation_id(value: str) -> bool:
    """Whether ``value`` has the form new_conversation_id() gives (a client may send back anything)."""
    try:
        return str(uuid.UUID(value)) == value
    except (ValueError, TypeError, AttributeError):
        return False


def record_turn(store: Store, conversation_id: str, ans: dict[str, Any], latency_ms: float | None = None) -> int:
    """Store one question (answered, refused or invalid) with its full trace; returns the turn id.

    Every text is made storable first (control characters and lone surrogates escaped, see storable_text);
    an over-long question is cut, and the trace's ``input`` then keeps its original length."""
    question, note = storable_question(ans.get("question", ""))
    trace = _storable(ans.get("trace") or {})
    if note is not None:
        trace["input"] = note
    memory = trace.get("memory") or {}
    with store.session() as s:
        conv = s.get(Conversation, conversation_id)
        now = utcnow()
        if conv is None:
            conv = Conversation(id=conversation_id, created_at=now)
            s.add(conv)
        conv.last_activity = now
        turn = Turn(
            conversation_id=conversation_id,
            created_at=now,
            question=question,
            reply=storable_text(str(ans.get("reply", "")))[0],
            links=_storable(list(ans.get("links") or [])),
            status=str(ans.get("status", "")),
            urgent=bool(ans.get("urgent")),
            demo_content=bool(ans.get("demo_content")),
            language=storable_text(str(ans["language"]))[0][:8] if ans.get("language") else None,
            pipeline=trace.get("pipeline"),
            answered_by=trace.get("answered_by", "pipeline"),
            approval_id=memory.get("approval_id") if memory.get("hit") else None,
            trace=trace,
            content_versions=(trace.get("content") or {}).get("versions") or None,
            latency_ms=latency_ms,
            flagged=bool(ans.get("urgent"))
            or ans.get("status") in ("no_certified_info", "safe_reply")
            or bool((ans.get("trace") or {}).get("fallback")),  # answered without the LLM its pipeline needs
        )
        s.add(turn)
        s.flush()
        return turn.id


def set_feedback(store: Store, conversation_id: str, turn_id: int, value: int | None) -> bool:
    """Thumbs up (+1), down (-1) or cleared (None) on a turn of this conversation only."""
    if value not in (1, -1, None):
        raise ValueError("feedback is +1, -1 or None")
    with store.session() as s:
        turn = s.get(Turn, turn_id)
        if turn is None or turn.conversation_id != conversation_id:
            return False
        turn.feedback = value
        turn.feedback_at = utcnow()
        return True


def _turn_row(t: Turn) -> dict[str, Any]:
    return {
        "id": t.id,
        "created_at": t.created_at.isoformat(timespec="seconds"),
        "question": t.question,
        "status": t.status,
        "urgent": t.urgent,
        "flagged": t.flagged,
        "feedback": t.feedback,
        "review_state": t.review_state,
        "answered_by": t.answered_by,
        "llm_fallback": bool((t.trace or {}).get("fallback")),
    }


def list_queue(store: Store, kind: str = "unreviewed", limit: int = 100) -> list[dict[str, Any]]:
    """Answered questions for review, newest first."""
    if kind not in QUEUE_FILTERS:
        raise ValueError(f"unknown queue filter {kind!r}")
    q = select(Turn).where(Turn.status != "invalid_input")
    if kind == "unreviewed":
        q = q.where(Turn.review_state == "unreviewed")
    elif kind == "flagged":
        q = q.where(Turn.flagged.is_(True))
    elif kind == "thumbs_down":
        q = q.where(Turn.feedback == -1)
    with store.session() as s:
        return [_turn_row(t) for t in s.scalars(q.order_by(Turn.id.desc()).limit(limit))]


def get_turn(store: Store, turn_id: int) -> dict[str, Any] | None:
    with store.session() as s:
        t = s.get(Turn, turn_id)
        if t is None:
            return None
        reviews = s.scalars(select(Review).where(Review.turn_id == turn_id).order_by(Review.id)).all()
        approvals = s.execute(
            select(Approval.id, Approval.active)
            .where(Approval.review_id.in_([r.id for r in reviews]))
            .order_by(Approval.id)
        ).all()
        return {
            **_turn_row(t),
            "reply": t.reply,
            "links": t.links,
            "demo_content": t.demo_content,
            "language": t.language,
            "pipeline": t.pipeline,
            "approval_id": t.approval_id,
            "trace": t.trace,
            "latency_ms": t.latency_ms,
            "reviews": [
                {"id": r.id, "decision": r.decision, "comment": r.comment, "at": r.created_at.isoformat()}
                for r in reviews
            ],
            "approvals": [{"id": a.id, "active": a.active} for a in approvals],  # made from this turn
        }


def record_review(
    store: Store,
    who: Principal,
    turn_id: int,
    decision: str,
    comment: str = "",
    verdicts: dict[str, bool] | None = None,
    picked: list[dict[str, Any]] | None = None,
    approval: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One review action, its link verdicts, its approval (if any) and its audit record, in one transaction.

    ``verdicts`` maps a shown link's segment_id to relevant/not; ``picked`` are better segments the clinician
    chose from the top-50 (each {segment_id, doc_id, title, url}); ``approval`` holds the certified answer to
    remember (reply, links, segment_ids, vector, embedding_model, ...)."""
    if decision not in ("approved", "rejected", "verdicts", "flagged"):
        raise ValueError(f"unknown decision {decision!r}")
    verdicts = verdicts or {}
    picked = picked or []
    with store.session() as s:
        turn = s.get(Turn, turn_id)
        if turn is None:
            raise LookupError(f"no turn {turn_id}")
        review = Review(
            turn_id=turn_id,
            user_id=who.id,
            decision=decision,
            comment=comment or "",
            question=turn.question,
            picked_segment_ids=[p["segment_id"] for p in picked],
        )
        s.add(review)
        s.flush()
        by_segment = {link["segment_id"]: link for link in turn.links}
        for segment_id, relevant in verdicts.items():
            link = by_segment.get(segment_id)
            if link is None:
                raise ValueError(f"segment {segment_id!r} is not one of the turn's links")
            s.add(
                LinkVerdict(
                    review_id=review.id,
                    question=turn.question,
                    segment_id=segment_id,
                    doc_id=_doc_of(turn, segment_id),
                    title=link.get("title", ""),
                    url=link.get("url", ""),
                    relevant=bool(relevant),
                    source="review",
                    user_id=who.id,
                )
            )
        for p in picked:
            s.add(
                LinkVerdict(
                    review_id=review.id,
                    question=turn.question,
                    segment_id=p["segment_id"],
                    doc_id=p.get("doc_id") or p["segment_id"].split("#")[0],
                    title=p.get("title", ""),
                    url=p.get("url", ""),
                    relevant=True,
                    source="picked",
                    user_id=who.id,
                )
            )
        approval_id = None
        if decision == "approved":
            if approval is None:
                raise ValueError("an approval needs the answer to remember")
            row = Approval(review_id=review.id, approved_by=who.id, question=turn.question, **approval)
            s.add(row)
            s.flush()
            approval_id = row.id
        if decision in ("approved", "rejected"):
            turn.review_state = decision
        elif decision == "flagged":
            turn.flagged = True
        elif turn.review_state == "unreviewed":
            turn.review_state = "verdicts"
        audit(
            s,
            who,
            f"review_{decision}",
            "turn",
            turn_id,
            {
                "review_id": review.id,
                "comment": comment,
                "verdicts": verdicts,
                "picked": [p["segment_id"] for p in picked],
                "approval_id": approval_id,
            },
        )
        return {"review_id": review.id, "approval_id": approval_id}


def revoke_approval(store: Store, who: Principal, approval_id: int, comment: str) -> dict[str, Any]:
    """Withdraw a certified answer: memory stops serving it at once. In one transaction: the approval marked
    inactive with who/when/why, a ``revoked`` review on the approved turn (its state becomes ``revoked``) and
    the audit record. A comment is required; an approval can be revoked once."""
    comment = (comment or "").strip()
    if not comment:
        raise ValueError("say why the approval is revoked")
    with store.session() as s:
        approval = s.get(Approval, approval_id)
        if approval is None:
            raise LookupError(f"no approval {approval_id}")
        if not approval.active:
            raise ValueError(f"approval #{approval_id} is already revoked")
        approval.active = False
        approval.revoked_at = utcnow()
        approval.revoked_by = who.id
        approval.revoke_comment = comment
        approved = s.get(Review, approval.review_id)
        turn = s.get(Turn, approved.turn_id) if approved is not None and approved.turn_id is not None else None
        review = Review(
            turn_id=turn.id if turn is not None else None,
            user_id=who.id,
            decision="revoked",
            comment=comment,
            question=approval.question,
            picked_segment_ids=[],
        )
        s.add(review)
        s.flush()
        if turn is not None and turn.review_state == "approved":
            turn.review_state = "revoked"
        audit(
            s,
            who,
            "approval_revoked",
            "approval",
            approval_id,
            {"review_id": review.id, "turn_id": review.turn_id, "comment": comment, "question": approval.question},
        )
        return {"review_id": review.id, "turn_id": review.turn_id}


def list_approvals(store: Store, include_revoked: bool = False, limit: int = 200) -> list[dict[str, Any]]:
    """Certified answers, newest first, with who approved them and how often memory served them."""
    q = select(Approval).order_by(Approval.id.desc()).limit(limit)
    if not include_revoked:
        q = q.where(Approval.active.is_(True))
    with store.session() as s:
        rows = s.scalars(q).all()
        names = dict(s.execute(select(User.id, User.username)).all())
        served = dict(
            s.execute(
                select(Turn.approval_id, func.count(Turn.id))
                .where(Turn.approval_id.in_([r.id for r in rows]))
                .group_by(Turn.approval_id)
            ).all()
        )
        return [
            {
                "id": r.id,
                "question": r.question,
                "reply": r.reply,
                "links": r.links,
                "language": r.language,
                "urgent": r.urgent,
                "approved_by": names.get(r.approved_by, "?"),
                "approved_at": r.created_at.isoformat(timespec="seconds"),
                "served": int(served.get(r.id, 0)),
                "active": r.active,
                "revoked_by": names.get(r.revoked_by) if r.revoked_by else None,
                "revoked_at": r.revoked_at.isoformat(timespec="seconds") if r.revoked_at else None,
                "revoke_comment": r.revoke_comment,
                # a document it cites was withdrawn, replaced or expired: not served until re-reviewed
                "suspended_at": r.suspended_at.isoformat(timespec="seconds") if r.suspended_at else None,
                "suspended_reason": r.suspended_reason,
            }
            for r in rows
        ]


def _doc_of(turn: Turn, segment_id: str) -> str:
    for item in (turn.trace or {}).get("top", []) + (turn.trace or {}).get("candidates", []):
        if item.get("segment_id") == segment_id and item.get("doc_id"):
            return item["doc_id"]
    return segment_id.split("#")[0]


def audit_action(store: Store, who: Principal | None, action: str, target_type=None, target_id=None, detail=None):
    with store.session() as s:
        audit(s, who, action, target_type, target_id, detail)


def audit_entries(store: Store, limit: int = 200) -> list[dict[str, Any]]:
    with store.session() as s:
        rows = s.scalars(select(AuditLog).order_by(AuditLog.id.desc()).limit(limit))
        return [
            {
                "id": r.id,
                "at": r.at.isoformat(timespec="seconds"),
                "user": r.username,
                "action": r.action,
                "target": f"{r.target_type or ''} {r.target_id or ''}".strip(),
                "detail": r.detail,
            }
            for r in rows
        ]


def link_verdicts(store: Store) -> list[dict[str, Any]]:
    with store.session() as s:
        rows = s.scalars(select(LinkVerdict).order_by(LinkVerdict.id))
        return [
            {
                "question": r.question,
                "segment_id": r.segment_id,
                "doc_id": r.doc_id,
                "title": r.title,
                "url": r.url,
                "relevant": r.relevant,
                "source": r.source,
                "user_id": r.user_id,
                "at": r.created_at.isoformat(),
            }
            for r in rows
        ]


def purge_expired(store: Store, retention_days: int) -> int:
    """Delete conversations (and their turns) idle for longer than the retention period; returns how many."""
    if retention_days <= 0:
        return 0
    cutoff = utcnow() - timedelta(days=retention_days)
    with store.session() as s:
        old = s.scalars(select(Conversation.id).where(Conversation.last_activity < cutoff)).all()
        if old:
            s.execute(delete(Turn).where(Turn.conversation_id.in_(old)))
            s.execute(delete(Conversation).where(Conversation.id.in_(old)))
            audit(s, None, "retention_purge", "conversation", None, {"deleted": len(old)}, username="system")
        return len(old)


def counts(store: Store) -> dict[str, int]:
    with store.session() as s:
        return {
            "turns": s.scalar(select(func.count(Turn.id))) or 0,
            "reviews": s.scalar(select(func.count(Review.id))) or 0,
            "approvals": s.scalar(select(func.count(Approval.id)).where(Approval.active.is_(True))) or 0,
        }

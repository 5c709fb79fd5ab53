"""Clinician reviews: the review queue, one turn with its reviews, review actions with their link verdicts
and approvals, revoking an approval, and the counts and verdicts the pages and exports read. Every write
commits before returning."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select

from chatbot.store.auth import Principal, audit
from chatbot.store.db import Store
from chatbot.store.models import Approval, LinkVerdict, Review, Turn, User, utcnow

QUEUE_FILTERS = ("unreviewed", "flagged", "thumbs_down", "all")


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


def counts(store: Store) -> dict[str, int]:
    with store.session() as s:
        return {
            "turns": s.scalar(select(func.count(Turn.id))) or 0,
            "reviews": s.scalar(select(func.count(Review.id))) or 0,
            "approvals": s.scalar(select(func.count(Approval.id)).where(Approval.active.is_(True))) or 0,
        }

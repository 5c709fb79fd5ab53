"""Patient conversations: their turns (question, reply, trace), feedback on a turn, and the retention purge.
Every write commits before returning."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

from sqlalchemy import delete, select

from chatbot.store.auth import audit
from chatbot.store.db import Store
from chatbot.store.models import Conversation, Turn, utcnow
from chatbot.store.storable import storable_json, storable_question, storable_text


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
    trace = storable_json(ans.get("trace") or {})
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
            links=storable_json(list(ans.get("links") or [])),
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

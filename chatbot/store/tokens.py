"""API tokens (created and revoked by an admin, stored as SHA-256), their rate limit and per-call audit rows.

The rate limit counts the token's rows in ``api_calls`` over the last minute, so every replica sharing the
database enforces the same limit."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import func, select

from chatbot.store.db import Store
from chatbot.store.models import ApiCall, ApiConversation, ApiToken, utcnow

WINDOW_S = 60
TOKEN_PREFIX = "cb_"


@dataclass(frozen=True)
class TokenInfo:
    id: int
    name: str
    rate_per_minute: int


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def create_token(store: Store, name: str, rate_per_minute: int = 60) -> str:
    """A new token for ``name`` (shown once, never stored in clear); ValueError for a taken name or bad rate."""
    name = name.strip()
    if not name or len(name) > 80:
        raise ValueError("a token name is 1 to 80 characters")
    if rate_per_minute < 1:
        raise ValueError("rate_per_minute must be at least 1")
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    with store.session() as s:
        if s.scalar(select(ApiToken.id).where(ApiToken.name == name)) is not None:
            raise ValueError(f"token {name!r} already exists")
        s.add(ApiToken(name=name, token_hash=token_hash(token), rate_per_minute=rate_per_minute))
    return token


def revoke_token(store: Store, name: str) -> bool:
    """Revoke the token called ``name``; False when there is no such active token."""
    with store.session() as s:
        row = s.scalar(select(ApiToken).where(ApiToken.name == name, ApiToken.revoked_at.is_(None)))
        if row is None:
            return False
        row.revoked_at = utcnow()
        return True


def list_tokens(store: Store) -> list[dict[str, Any]]:
    """Every token's name, limit, dates and calls in the last minute (never the hash)."""
    since = utcnow() - timedelta(seconds=WINDOW_S)
    with store.session() as s:
        rows = s.scalars(select(ApiToken).order_by(ApiToken.id)).all()
        out = []
        for r in rows:
            recent = s.scalar(select(func.count(ApiCall.id)).where(ApiCall.token_id == r.id, ApiCall.at >= since))
            out.append(
                {
                    "name": r.name,
                    "rate_per_minute": r.rate_per_minute,
                    "created_at": r.created_at.isoformat(timespec="seconds"),
                    "revoked_at": r.revoked_at.isoformat(timespec="seconds") if r.revoked_at else None,
                    "calls_last_minute": recent,
                }
            )
        return out


def authenticate(store: Store, token: str | None) -> TokenInfo | None:
    """The active token matching ``token``, else None."""
    if not token:
        return None
    with store.session() as s:
        row = s.scalar(select(ApiToken).where(ApiToken.token_hash == token_hash(token), ApiToken.revoked_at.is_(None)))
        return TokenInfo(row.id, row.name, row.rate_per_minute) if row else None


def admit_call(store: Store, who: TokenInfo, route: str) -> tuple[int | None, int]:
    """Record a call of ``route`` by ``who`` if under its limit: (call id, 0); else (None, seconds to wait)."""
    now = utcnow()
    since = now - timedelta(seconds=WINDOW_S)
    with store.session() as s:
        recent = select(ApiCall.at).where(ApiCall.token_id == who.id, ApiCall.at >= since)
        n = s.scalar(select(func.count()).select_from(recent.subquery()))
        if n >= who.rate_per_minute:
            oldest = s.scalar(select(func.min(ApiCall.at)).where(ApiCall.token_id == who.id, ApiCall.at >= since))
            wait = WINDOW_S - (now - oldest).total_seconds() if oldest else WINDOW_S
            return None, max(1, int(wait + 0.999))
        call = ApiCall(token_id=who.id, at=now, route=route[:64])
        s.add(call)
        s.flush()
        return call.id, 0


def finish_call(
    store: Store,
    call_id: int,
    status: int,
    latency_ms: float,
    trace_id: str | None = None,
    conversation_id: str | None = None,
) -> None:
    """Complete the audit row of a call: status, latency, trace and conversation ids (never the question)."""
    with store.session() as s:
        call = s.get(ApiCall, call_id)
        if call is not None:
            call.status, call.latency_ms = status, round(latency_ms, 1)
            call.trace_id, call.conversation_id = trace_id, conversation_id


def conversation_owner(store: Store, conversation_id: str) -> int | None:
    """The token that started this API conversation (None when the API never saw it)."""
    with store.session() as s:
        return s.scalar(select(ApiConversation.token_id).where(ApiConversation.conversation_id == conversation_id))


def claim_conversation(store: Store, conversation_id: str, token_id: int) -> None:
    """Mark an (already recorded) conversation as this token's, if nobody owns it yet."""
    with store.session() as s:
        if s.get(ApiConversation, conversation_id) is None:
            s.add(ApiConversation(conversation_id=conversation_id, token_id=token_id))


def calls(store: Store, limit: int = 100) -> list[dict[str, Any]]:
    """The newest audit rows (for admins and tests)."""
    with store.session() as s:
        rows = s.scalars(select(ApiCall).order_by(ApiCall.id.desc()).limit(limit)).all()
        return [
            {
                "token_id": r.token_id,
                "route": r.route,
                "status": r.status,
                "trace_id": r.trace_id,
                "conversation_id": r.conversation_id,
                "latency_ms": r.latency_ms,
            }
            for r in rows
        ]

"""SQLAlchemy 2 models of the app database. The schema is created by Alembic (chatbot/store/migrations),
never by ``create_all``: change a model here (or in ``eval_models`` / ``content_models``, whose tables this
module registers on ``Base`` too), then add a migration."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
)
from sqlalchemy.orm import Mapped, mapped_column, relationship

from chatbot.store import content_models, eval_models  # noqa: F401 - their tables belong to Base.metadata
from chatbot.store.base import NAMING, ROLES, Base, utcnow  # noqa: F401 - the names importers use


# -- people ------------------------------------------------------------------------------------------------------------
class User(Base):
    __tablename__ = "users"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    username: Mapped[str] = mapped_column(String(80), unique=True)
    password_hash: Mapped[str] = mapped_column(String(255))
    role: Mapped[str] = mapped_column(String(20))
    disabled: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class AuthSession(Base):
    """A logged-in browser. Only the SHA-256 of the cookie token is stored."""

    __tablename__ = "auth_sessions"

    token_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    last_seen: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(DateTime)

    user: Mapped[User] = relationship(lazy="joined")


class LoginAttempt(Base):
    """Failed logins, for the rate limit (kept in the database so a restart does not reset it)."""

    __tablename__ = "login_attempts"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    username: Mapped[str] = mapped_column(String(80), index=True)
    client: Mapped[str] = mapped_column(String(64), index=True)
    at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, index=True)


class AuditLog(Base):
    """Who did what, when: every clinician, evaluator and admin action."""

    __tablename__ = "audit_log"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, index=True)
    user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    username: Mapped[str] = mapped_column(String(80))
    action: Mapped[str] = mapped_column(String(40), index=True)
    target_type: Mapped[str | None] = mapped_column(String(40))
    target_id: Mapped[str | None] = mapped_column(String(64))
    detail: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)


# -- patient chat -------------------------------------------------------------------------------------------
class Conversation(Base):
    __tablename__ = "conversations"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    last_activity: Mapped[datetime] = mapped_column(DateTime, default=utcnow, index=True)

    turns: Mapped[list[Turn]] = relationship(
        back_populates="conversation", cascade="all, delete-orphan", passive_deletes=True, order_by="Turn.id"
    )


class Turn(Base):
    """One question and its answer, with the full pipeline trace."""

    __tablename__ = "turns"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    conversation_id: Mapped[str] = mapped_column(ForeignKey("conversations.id", ondelete="CASCADE"), index=True)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, index=True)
    question: Mapped[str] = mapped_column(Text)
    reply: Mapped[str] = mapped_column(Text)
    links: Mapped[list[Any]] = mapped_column(JSON, default=list)
    status: Mapped[str] = mapped_column(String(32))
    urgent: Mapped[bool] = mapped_column(Boolean, default=False)
    demo_content: Mapped[bool] = mapped_column(Boolean, default=False)
    language: Mapped[str | None] = mapped_column(String(8))
    pipeline: Mapped[str | None] = mapped_column(String(64))
    answered_by: Mapped[str] = mapped_column(String(16), default="pipeline")  # pipeline | memory
    approval_id: Mapped[int | None] = mapped_column(Integer)  # the Approval memory served (no FK: no cycle)
    trace: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    latency_ms: Mapped[float | None] = mapped_column(Float)
    feedback: Mapped[int | None] = mapped_column(Integer)  # +1 thumbs up, -1 thumbs down
    feedback_at: Mapped[datetime | None] = mapped_column(DateTime)
    flagged: Mapped[bool] = mapped_column(Boolean, default=False, index=True)
    review_state: Mapped[str] = mapped_column(String(16), default="unreviewed", index=True)
    # {doc_id: content version id} of the managed documents the answer linked: what the patient read that day
    content_versions: Mapped[dict[str, Any] | None] = mapped_column(JSON)

    conversation: Mapped[Conversation] = relationship(back_populates="turns")


# -- clinician review ---------------------------------------------------------------------------------------
class Review(Base):
    """A clinician's decision on a turn: approved, rejected, or link verdicts only."""

    __tablename__ = "reviews"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    turn_id: Mapped[int | None] = mapped_column(ForeignKey("turns.id", ondelete="SET NULL"), index=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    decision: Mapped[str] = mapped_column(String(16))  # approved | rejected | verdicts | flagged
    comment: Mapped[str] = mapped_column(Text, default="")
    question: Mapped[str] = mapped_column(Text)
    picked_segment_ids: Mapped[list[Any]] = mapped_column(JSON, default=list)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class LinkVerdict(Base):
    """Is this segment (document) relevant to this question? From reviews and from Likert Q2."""

    __tablename__ = "link_verdicts"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    review_id: Mapped[int | None] = mapped_column(ForeignKey("reviews.id", ondelete="CASCADE"), index=True)
    question: Mapped[str] = mapped_column(Text)
    segment_id: Mapped[str] = mapped_column(String(255))
    doc_id: Mapped[str] = mapped_column(String(255))
    title: Mapped[str] = mapped_column(Text, default="")
    url: Mapped[str] = mapped_column(Text, default="")
    relevant: Mapped[bool] = mapped_column(Boolean)
    source: Mapped[str] = mapped_column(String(16), default="review")  # review | picked
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class Approval(Base):
    """A certified answer a clinician approved: served again by the answer memory until revoked."""

    __tablename__ = "approvals"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    review_id: Mapped[int] = mapped_column(ForeignKey("reviews.id"))
    question: Mapped[str] = mapped_column(Text)
    reply: Mapped[str] = mapped_column(Text)
    links: Mapped[list[Any]] = mapped_column(JSON)
    segment_ids: Mapped[list[Any]] = mapped_column(JSON)
    urgent: Mapped[bool] = mapped_column(Boolean, default=False)
    demo_content: Mapped[bool] = mapped_column(Boolean, default=False)
    language: Mapped[str | None] = mapped_column(String(8))
    embedding_model: Mapped[str] = mapped_column(String(128))
    vector: Mapped[bytes] = mapped_column(LargeBinary)  # float32, L2-normalised
    approved_by: Mapped[int] = mapped_column(ForeignKey("users.id"))
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    active: Mapped[bool] = mapped_column(Boolean, default=True, index=True)  # False once revoked
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime)
    revoked_by: Mapped[int | None] = mapped_column(ForeignKey("users.id"))
    revoke_comment: Mapped[str | None] = mapped_column(Text)
    # set when a document it cites was withdrawn, expired or replaced: memory stops serving it until re-review
    suspended_at: Mapped[datetime | None] = mapped_column(DateTime)
    suspended_reason: Mapped[str | None] = mapped_column(Text)


# -- the JSON API (/api/v1) ---------------------------------------------------------------------------------
class ApiToken(Base):
    """A bearer token an admin created for another system. Only its SHA-256 is stored."""

    __tablename__ = "api_tokens"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(80), unique=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    rate_per_minute: Mapped[int] = mapped_column(Integer, default=60)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime)


class ApiCall(Base):
    """One API call, for the per-token rate limit (shared by every replica) and the audit: never the question."""

    __tablename__ = "api_calls"
    __table_args__ = (Index("ix_api_calls_token_at", "token_id", "at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    token_id: Mapped[int] = mapped_column(ForeignKey("api_tokens.id", ondelete="CASCADE"))
    at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, index=True)
    route: Mapped[str] = mapped_column(String(64))
    status: Mapped[int | None] = mapped_column(Integer)
    trace_id: Mapped[str | None] = mapped_column(String(36))
    conversation_id: Mapped[str | None] = mapped_column(String(36))
    latency_ms: Mapped[float | None] = mapped_column(Float)


class ApiConversation(Base):
    """Which token started a conversation: a token rates and continues only its own conversations."""

    __tablename__ = "api_conversations"

    conversation_id: Mapped[str] = mapped_column(ForeignKey("conversations.id", ondelete="CASCADE"), primary_key=True)
    token_id: Mapped[int] = mapped_column(ForeignKey("api_tokens.id", ondelete="CASCADE"), index=True)


class RateCounter(Base):
    """Fixed-window request counters (per client address, per surface), shared by every replica."""

    __tablename__ = "rate_counters"

    key: Mapped[str] = mapped_column(String(160), primary_key=True)
    window_start: Mapped[int] = mapped_column(Integer, primary_key=True)  # unix seconds
    count: Mapped[int] = mapped_column(Integer, default=0)

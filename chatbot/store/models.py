"""SQLAlchemy 2 models of the app database. The schema is created by Alembic (chatbot/store/migrations),
never by ``create_all``: change a model here, then add a migration."""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    Date,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

ROLES = ("clinician", "evaluator", "admin", "editor")

NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


def utcnow() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)
    type_annotation_map = {dict[str, Any]: JSON, list[Any]: JSON}


# -- people -------------------------------------------------------------------------------------------------
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


# -- Likert evaluation --------------------------------------------------------------------------------------
class QuestionSet(Base):
    __tablename__ = "question_sets"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    source: Mapped[str] = mapped_column(Text, default="")
    created_by: Mapped[int | None] = mapped_column(ForeignKey("users.id"))
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)

    questions: Mapped[list[EvalQuestion]] = relationship(order_by="EvalQuestion.position")


class EvalQuestion(Base):
    __tablename__ = "eval_questions"
    __table_args__ = (UniqueConstraint("set_id", "position"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    set_id: Mapped[int] = mapped_column(ForeignKey("question_sets.id", ondelete="CASCADE"), index=True)
    position: Mapped[int] = mapped_column(Integer)
    external_id: Mapped[str] = mapped_column(String(200))
    text: Mapped[str] = mapped_column(Text)
    qtype: Mapped[str | None] = mapped_column(String(64))


class EvalSession(Base):
    __tablename__ = "eval_sessions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    question_set_id: Mapped[int] = mapped_column(ForeignKey("question_sets.id"))
    pipelines: Mapped[list[Any]] = mapped_column(JSON)
    config: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)  # settings snapshot per pipeline
    status: Mapped[str] = mapped_column(String(16), default="generating")  # generating | open | closed
    created_by: Mapped[int | None] = mapped_column(ForeignKey("users.id"))
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)

    answers: Mapped[list[FrozenAnswer]] = relationship(order_by="FrozenAnswer.position")


class FrozenAnswer(Base):
    """An answer generated once when the session was created; evaluators rate exactly this text."""

    __tablename__ = "frozen_answers"
    __table_args__ = (UniqueConstraint("session_id", "position"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    session_id: Mapped[int] = mapped_column(ForeignKey("eval_sessions.id", ondelete="CASCADE"), index=True)
    question_id: Mapped[int] = mapped_column(ForeignKey("eval_questions.id"))
    position: Mapped[int] = mapped_column(Integer)  # shuffled order shown to evaluators (blind)
    pipeline: Mapped[str] = mapped_column(String(64))
    reply: Mapped[str] = mapped_column(Text)
    links: Mapped[list[Any]] = mapped_column(JSON)
    status: Mapped[str] = mapped_column(String(32))
    trace: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)

    question: Mapped[EvalQuestion] = relationship(lazy="joined")


class Rating(Base):
    """One evaluator's ratings of one frozen answer (Q1-Q7 of the seed paper's user study)."""

    __tablename__ = "ratings"
    __table_args__ = (UniqueConstraint("answer_id", "evaluator_id"), Index("ix_ratings_evaluator", "evaluator_id"))

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    answer_id: Mapped[int] = mapped_column(ForeignKey("frozen_answers.id", ondelete="CASCADE"), index=True)
    evaluator_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    q1_relevant: Mapped[bool] = mapped_column(Boolean)
    q2_links: Mapped[list[Any]] = mapped_column(JSON)  # one bool per shown link
    q3_quality: Mapped[int] = mapped_column(Integer)
    q4_reliability: Mapped[int] = mapped_column(Integer)
    q5_clarity: Mapped[int] = mapped_column(Integer)
    q6_completeness: Mapped[int] = mapped_column(Integer)
    q7_overall: Mapped[int] = mapped_column(Integer)
    comment: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


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


# -- certified content lifecycle (chatbot/content.py) --------------------------------------------------------
CONTENT_STATUSES = ("draft", "certified", "superseded", "withdrawn", "expired")


class ContentDocument(Base):
    """A managed document; ``current_version_id`` is the one version patients may read (None: none)."""

    __tablename__ = "content_documents"

    id: Mapped[str] = mapped_column(String(200), primary_key=True)  # the doc_id its segments carry
    title: Mapped[str] = mapped_column(Text)
    language: Mapped[str] = mapped_column(String(8), index=True)
    publisher: Mapped[str] = mapped_column(String(200), default="")
    source_url: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    current_version_id: Mapped[int | None] = mapped_column(Integer)  # no FK: versions point here (no cycle)

    versions: Mapped[list[ContentVersion]] = relationship(
        back_populates="document", order_by="ContentVersion.number", cascade="all, delete-orphan"
    )


class ContentVersion(Base):
    """One imported text of a document, with its certification: draft, certified, superseded (a newer version
    was certified), withdrawn or expired (its review date passed)."""

    __tablename__ = "content_versions"
    __table_args__ = (UniqueConstraint("document_id", "number"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    document_id: Mapped[str] = mapped_column(ForeignKey("content_documents.id", ondelete="CASCADE"), index=True)
    number: Mapped[int] = mapped_column(Integer)
    content_hash: Mapped[str] = mapped_column(String(64), index=True)
    format: Mapped[str] = mapped_column(String(16))
    source_name: Mapped[str] = mapped_column(Text, default="")
    title: Mapped[str] = mapped_column(Text)
    source_url: Mapped[str] = mapped_column(Text)
    language: Mapped[str] = mapped_column(String(8))
    publisher: Mapped[str] = mapped_column(String(200), default="")
    text: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(16), default="draft", index=True)
    imported_by: Mapped[str] = mapped_column(String(80))
    imported_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    certified_by_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    certified_by: Mapped[str | None] = mapped_column(String(80))
    certified_at: Mapped[datetime | None] = mapped_column(DateTime)
    review_due: Mapped[date | None] = mapped_column(Date, index=True)
    withdrawn_at: Mapped[datetime | None] = mapped_column(DateTime)
    withdrawn_by: Mapped[str | None] = mapped_column(String(80))
    withdraw_reason: Mapped[str | None] = mapped_column(Text)

    document: Mapped[ContentDocument] = relationship(back_populates="versions")


class ContentState(Base):
    """One row: a counter bumped by every change of what patients may read, so each question's content gate
    knows with one read whether its cached view is current."""

    __tablename__ = "content_state"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    generation: Mapped[int] = mapped_column(Integer, default=0)

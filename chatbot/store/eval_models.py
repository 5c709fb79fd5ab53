"""Models of the Likert evaluation sessions (question sets, frozen answers, ratings); tables on ``Base``."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column, relationship

from chatbot.store.base import Base, utcnow


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

"""Models of the certified content lifecycle (documents, versions, the visibility counter); tables on ``Base``."""

from __future__ import annotations

from datetime import date, datetime

from sqlalchemy import (
    Date,
    DateTime,
    ForeignKey,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column, relationship

from chatbot.store.base import Base, utcnow

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

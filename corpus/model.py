"""Certified documents and their segments."""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field
from typing import Any

# Who a card is for, along a pregnancy: the values a card's ``stage`` front matter may take (several allowed; none =
# everyone). Retrieval demotes a card whose stages contradict the question's (chatbot/stages/life_stage.py).
STAGES = ("trying", "pregnancy", "birth", "postnatal", "baby", "general")


@dataclass(frozen=True)
class Document:
    """A certified text with its fixed source link."""

    id: str
    title: str
    source_url: str
    text: str
    publisher: str = ""
    language: str = "en"
    certified_by: str = ""
    certified_on: str = ""
    version: str = ""
    demo: bool = False
    stage: tuple[str, ...] = ()  # values of STAGES; () = not said

    def content_hash(self) -> str:
        """Hash of everything a segment inherits: text and metadata."""
        fields = asdict(self)
        if not fields["stage"]:  # a document without stages keeps the hash it had before the field existed
            del fields["stage"]
        payload = "\x1f".join(str(v) for v in fields.values())
        return hashlib.sha1(payload.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class Segment:
    """A piece of a document; carries the document's link, title and certification fields."""

    id: str
    doc_id: str
    text: str
    title: str
    source_url: str
    position: int
    heading: str = ""
    publisher: str = ""
    language: str = "en"
    certified_by: str = ""
    certified_on: str = ""
    version: str = ""
    demo: bool = False
    doc_hash: str = ""
    content_version: int = 0  # the managed document version (chatbot content); 0 for `chatbot ingest` segments
    stage: str = ""  # the document's stages, comma-separated (index metadata holds scalars only)
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    def metadata(self) -> dict[str, Any]:
        """Flat metadata as stored in the vector index (scalars only)."""
        meta = asdict(self)
        del meta["id"], meta["text"], meta["extra"]
        return meta

    @classmethod
    def from_metadata(cls, segment_id: str, text: str, meta: dict[str, Any]) -> Segment:
        known = {k: meta[k] for k in cls.__dataclass_fields__ if k in meta and k not in ("id", "text", "extra")}
        return cls(id=segment_id, text=text, **known)


def stage_set(stage: str) -> frozenset[str]:
    """A segment's ``stage`` metadata as a set ("trying,pregnancy" → {"trying", "pregnancy"})."""
    return frozenset(s for s in stage.split(",") if s)


def segment_id(doc_id: str, text: str, occurrence: int = 0) -> str:
    """Deterministic id: same document and text give the same id."""
    digest = hashlib.sha1(f"{doc_id}\x1f{text}".encode()).hexdigest()[:16]
    return f"{doc_id}#{digest}" + (f"-{occurrence}" if occurrence else "")

"""Split documents into meaningful segments: by headings, then paragraphs, within a size bound."""

from __future__ import annotations

from collections.abc import Iterable

from langchain_text_splitters import MarkdownHeaderTextSplitter, RecursiveCharacterTextSplitter

from corpus.model import Document, Segment, segment_id

_HEADERS = [("#", "h1"), ("##", "h2"), ("###", "h3")]


def _sections(text: str) -> list[tuple[str, str]]:
    """(heading, body) pairs; plain text without Markdown headings is one section."""
    if not any(line.lstrip().startswith("#") for line in text.splitlines()):
        return [("", text)]
    splitter = MarkdownHeaderTextSplitter(headers_to_split_on=_HEADERS, strip_headers=True)
    out = []
    for part in splitter.split_text(text):
        heading = part.metadata.get("h3") or part.metadata.get("h2") or part.metadata.get("h1") or ""
        out.append((heading, part.page_content))
    return out


def split_text(text: str, max_chars: int, min_chars: int) -> list[tuple[str, str]]:
    """(heading, chunk) pieces, each at most ``max_chars`` long; fragments under ``min_chars`` merged."""
    splitter = RecursiveCharacterTextSplitter(
        chunk_size=max_chars,
        chunk_overlap=0,
        separators=["\n\n", "\n", ". ", "; ", ", ", " ", ""],
        keep_separator="end",
    )
    pieces: list[tuple[str, str]] = []
    for heading, body in _sections(text):
        for chunk in splitter.split_text(body):
            chunk = " ".join(chunk.split())
            if not chunk:
                continue
            if (
                pieces
                and pieces[-1][0] == heading
                and (len(chunk) < min_chars or len(pieces[-1][1]) < min_chars)
                and len(pieces[-1][1]) + 1 + len(chunk) <= max_chars
            ):
                pieces[-1] = (heading, pieces[-1][1] + " " + chunk)
            else:
                pieces.append((heading, chunk))
    return pieces


def segment_document(doc: Document, max_chars: int = 900, min_chars: int = 120) -> list[Segment]:
    """Segments of one document, in reading order, with deterministic ids."""
    doc_hash = doc.content_hash()
    seen: dict[str, int] = {}
    segments = []
    for position, (heading, chunk) in enumerate(split_text(doc.text, max_chars, min_chars)):
        base = segment_id(doc.id, chunk)
        occurrence = seen.get(base, 0)
        seen[base] = occurrence + 1
        segments.append(
            Segment(
                id=segment_id(doc.id, chunk, occurrence),
                doc_id=doc.id,
                text=chunk,
                title=doc.title,
                source_url=doc.source_url,
                position=position,
                heading=heading,
                publisher=doc.publisher,
                language=doc.language,
                certified_by=doc.certified_by,
                certified_on=doc.certified_on,
                version=doc.version,
                demo=doc.demo,
                doc_hash=doc_hash,
                stage=",".join(doc.stage),
            )
        )
    return segments


def segment_documents(docs: Iterable[Document], max_chars: int = 900, min_chars: int = 120) -> list[Segment]:
    return [seg for doc in docs for seg in segment_document(doc, max_chars, min_chars)]


def embedding_text(segment: Segment) -> str:
    """What the bi-encoder reads: the title and heading give a short segment its context."""
    head = (
        segment.title
        if not segment.heading or segment.heading == segment.title
        else f"{segment.title}: {segment.heading}"
    )
    return f"{head}\n{segment.text}" if head else segment.text


def text_key(text: str) -> str:
    """What makes two texts the same passage for a patient: their words, spaces and case aside."""
    return " ".join(text.split()).casefold()


def passage_key(segment: Segment) -> str:
    """``text_key`` of a segment's text."""
    return text_key(segment.text)


def shared_passages(segments: Iterable[Segment]) -> list[list[Segment]]:
    """Groups of segments of different documents that hold the same passage (``passage_key``), in input order;
    a library should hold each passage once, and the links list it once (``chatbot.stages.rerank``)."""
    groups: dict[str, list[Segment]] = {}
    for s in segments:
        groups.setdefault(passage_key(s), []).append(s)
    return [g for g in groups.values() if len({s.doc_id for s in g}) > 1]

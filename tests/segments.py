"""Hand-made certified segments for unit tests: one segment per document, its link on example.org."""

from __future__ import annotations

from corpus.model import Segment


def seg(doc_id: str, text: str, title: str = "", language: str = "en", heading: str = "") -> Segment:
    return Segment(
        id=f"{doc_id}#1",
        doc_id=doc_id,
        text=text,
        title=title,
        source_url=f"https://example.org/{doc_id}",
        position=0,
        heading=heading,
        language=language,
    )

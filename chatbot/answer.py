"""One question → one answer object (the shape `chatbot ask --json` prints)."""

from __future__ import annotations

import time
import unicodedata
from typing import Any

from chatbot.index import Hit
from chatbot.pipeline import RetrievalResult, Services, run_pipeline

MAX_QUESTION_CHARS = 2000


class InvalidQuestion(ValueError):
    pass


def validate_question(question: Any) -> str:
    """Normalise a question or raise InvalidQuestion with a message fit for the patient."""
    if not isinstance(question, str):
        raise InvalidQuestion("The question must be text.")
    text = unicodedata.normalize("NFC", question)
    text = "".join(ch for ch in text if ch in "\n\t" or unicodedata.category(ch)[0] != "C")
    text = " ".join(text.split())
    if not text:
        raise InvalidQuestion("Please type a question.")
    if len(text) > MAX_QUESTION_CHARS:
        raise InvalidQuestion(
            f"Your question is too long ({len(text)} characters); please keep it under {MAX_QUESTION_CHARS}."
        )
    if not any(ch.isalnum() for ch in text):
        raise InvalidQuestion("Please type your question in words.")
    return text


def certified_links(top: list[Hit]) -> list[dict[str, str]]:
    """The fixed source links, taken from segment metadata (never from generated text)."""
    return [{"title": h.segment.title, "url": h.segment.source_url, "segment_id": h.segment.id} for h in top]


def _trace(result: RetrievalResult, pipeline: str, services: Services, total_ms: float) -> dict[str, Any]:
    return {
        "pipeline": pipeline,
        "embedding_model": services.embedder.name,
        "reranker": getattr(services.reranker, "name", None) if pipeline not in ("bm25", "dense") else None,
        "candidates": [
            {"segment_id": h.segment.id, "doc_id": h.segment.doc_id, **{k: round(v, 4) for k, v in h.detail.items()}}
            for h in result.candidates
        ],
        "top": [
            {
                "segment_id": h.segment.id,
                "doc_id": h.segment.doc_id,
                "score": round(h.score, 4),
                **{k: round(v, 4) for k, v in h.detail.items()},
            }
            for h in result.top
        ],
        "timings_ms": {**{k: round(v, 1) for k, v in result.timings_ms.items()}, "total": round(total_ms, 1)},
    }


def answer(question: Any, services: Services, pipeline: str | None = None) -> dict[str, Any]:
    """Answer with certified text only: the best segment verbatim plus the top-3 documents' links."""
    start = time.perf_counter()
    pipeline = pipeline or services.settings.retrieval.pipeline
    try:
        text = validate_question(question)
    except InvalidQuestion as exc:
        return {
            "question": question if isinstance(question, str) else repr(question),
            "reply": str(exc),
            "links": [],
            "status": "invalid_input",
            "urgent": False,
            "trace": {"error": str(exc)},
        }
    result = run_pipeline(pipeline, text, services)
    total = (time.perf_counter() - start) * 1000
    if not result.top:
        return {
            "question": text,
            "reply": "I have no certified information on that.",
            "links": [],
            "status": "no_certified_info",
            "urgent": False,
            "trace": _trace(result, pipeline, services, total),
        }
    best = result.top[0].segment
    return {
        "question": text,
        "reply": best.text,
        "links": certified_links(result.top),
        "status": "answered",
        "urgent": False,
        "demo_content": any(h.segment.demo for h in result.top),
        "trace": _trace(result, pipeline, services, total),
    }

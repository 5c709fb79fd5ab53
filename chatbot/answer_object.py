"""The answer object (the shape `chatbot ask --json` prints): the reply with the urgent-care text first, the
certified links from segment metadata, the trace of the retrieval, and the LLM-fallback warning."""

from __future__ import annotations

from typing import Any

from chatbot.index import Hit
from chatbot.pipeline import RetrievalResult, Services


def certified_links(top: list[Hit]) -> list[dict[str, str]]:
    """The fixed source links, taken from segment metadata (never from generated text)."""
    return [{"title": h.segment.title, "url": h.segment.source_url, "segment_id": h.segment.id} for h in top]


def answer_first_links(
    links: list[dict[str, str]], top: list[Hit], compose_trace: dict[str, Any]
) -> list[dict[str, str]]:
    """The links with the document that gave the reply's answering sentence first (the others keep their
    order); unchanged when the composer named no answer or its document is not linked."""
    attempts = compose_trace.get("attempts") or []
    doc_id = ((attempts[-1].get("answer") or {}).get("doc_id")) if attempts else None
    at = next((i for i, h in enumerate(top) if h.segment.doc_id == doc_id), None)
    if not at:
        return links
    return [links[at], *links[:at], *links[at + 1 :]]


def urgent_first_links(
    links: list[dict[str, str]], urgent: dict[str, Any] | None, segment_of: Any = None
) -> list[dict[str, str]]:
    """An urgent reply's links: the certified urgent card(s) its message comes from first (title and
    source_url from the card's metadata; ``segment_of(doc_id)`` gives the card's indexed segment id, else
    the doc id), then the answer's own links that are not one of those cards; ``links`` unchanged otherwise."""
    cards = (urgent or {}).get("urgent_cards") or [] if (urgent or {}).get("urgent") else []
    if not cards:
        return links
    first = []
    for card in cards:
        sid = (segment_of(card["doc_id"]) if segment_of else None) or card["doc_id"]
        first.append({"title": card["title"], "url": card["url"], "segment_id": sid})
    docs = {card["doc_id"] for card in cards}
    rest = [x for x in links if x.get("segment_id", "").split("#")[0] not in docs]
    return first + rest


def answer_trace(result: RetrievalResult, pipeline: str, services: Services, total_ms: float) -> dict[str, Any]:
    trace = {
        "pipeline": pipeline,
        "embedding_model": services.embedder.name,
        **_reranker_details(result.question, pipeline, services),
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
    stage = life_stage_trace(result)
    if stage:
        trace["life_stage"] = stage
    # What the pipeline itself reports (question type, HyDoc, fallback, model...): copied in; a key that
    # collides with the fields above keeps the pipeline's value under "pipeline_<key>".
    for key, value in result.info.items():
        trace[key if key not in trace else f"pipeline_{key}"] = value
    return trace


def life_stage_trace(result: RetrievalResult) -> dict[str, Any] | None:
    """The stages the question names and the documents retrieval.stage_order moved down (chatbot/stages/
    life_stage.py); None when the question names none or nothing was reordered by stage."""
    from chatbot.stages.life_stage import question_stages

    moved = [h for h in result.ranked if h.detail.get("stage_demoted")]
    if not moved:
        return None
    return {
        "question": sorted(question_stages(result.question)),
        "demoted": [h.segment.doc_id for h in moved],
        "from_ranks": [int(h.detail["stage_demoted"]) for h in moved],
    }


def _reranker_details(question: str, pipeline: str, services: Services) -> dict[str, Any]:
    """The reranker this question got (``Services.reranker_for``), the cross-encoder's runtime (onnx-int8 or
    torch) and why it is not the configured one when it is not."""
    if pipeline in ("bm25", "dense"):
        return {"reranker": None}
    reranker, note = services.reranker_for(question)
    out: dict[str, Any] = {"reranker": getattr(reranker, "name", None)}
    if getattr(reranker, "runtime", None):
        out["reranker_runtime"] = reranker.runtime
        cfg = services.settings.rerank
        if cfg.rrf_k:
            weight = "" if cfg.rrf_first_weight == 1.0 else f" first_weight={cfg.rrf_first_weight:g}"
            out["reranker_fusion"] = f"rrf k={cfg.rrf_k}{weight}"
    if note:
        out["reranker_note"] = note
    return out


def outcome(
    question: str,
    reply: str,
    status: str,
    *,
    urgent: dict[str, Any] | None,
    language: str,
    links: list[dict[str, str]] | None = None,
    trace: dict[str, Any],
    demo: bool | None = None,
) -> dict[str, Any]:
    """The answer object: the urgent-care text (a certified urgent card) always comes first in the reply."""
    urgent_text = (urgent or {}).get("urgent_message") if (urgent or {}).get("urgent") else None
    out: dict[str, Any] = {
        "question": question,
        "reply": (f"{urgent_text}\n\n{reply}" if reply else urgent_text) if urgent_text else reply,
        "links": links or [],
        "status": status,
        "urgent": urgent_text is not None,
        "language": language,
    }
    if urgent_text:
        out.update({k: v for k, v in (urgent or {}).items() if k != "urgent"})
    if demo is not None:
        out["demo_content"] = demo
    out["trace"] = trace
    return out


def fallback_warning(ans: dict[str, Any]) -> str | None:
    """One line for a person when the pipeline that needed the LLM answered without it (None otherwise)."""
    trace = ans.get("trace") or {}
    fallback = trace.get("fallback")
    if not isinstance(fallback, dict) or not fallback.get("to"):
        return None
    return (
        f"the {trace.get('pipeline', 'LLM')} pipeline could not use the LLM ({fallback.get('kind', 'error')}: "
        f"{fallback.get('reason', 'no reason recorded')}); this answer comes from {fallback['to']} retrieval"
    )

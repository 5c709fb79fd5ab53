"""One question → one answer object (the shape `chatbot ask --json` prints)."""

from __future__ import annotations

import time
import unicodedata
from typing import Any

from chatbot.content_gate import gate_result, links_still_live, refresh_caches, segments_filter, with_warning
from chatbot.index import Hit
from chatbot.pipeline import RetrievalResult, Services, run_pipeline, stage_event
from chatbot.stages.route import route

MAX_QUESTION_CHARS = 2000


class InvalidQuestion(ValueError):
    """A question the bot cannot take; ``str(exc)`` is the English message, ``italian`` its translation."""

    def __init__(self, message: str, italian: str = "") -> None:
        super().__init__(message)
        self.italian = italian

    @property
    def bilingual(self) -> str:
        return f"{self}\n{self.italian}" if self.italian else str(self)


def _unreadable_share(text: str) -> tuple[int, float]:
    """Control, private-use, unassigned and U+FFFD characters: how many, and their share of the non-blank ones."""
    visible = [ch for ch in text if not ch.isspace()]
    bad = sum(1 for ch in visible if ch == "\ufffd" or unicodedata.category(ch) in ("Cc", "Co", "Cn", "Cs"))
    return bad, (bad / len(visible) if visible else 0.0)


def validate_question(question: Any, max_chars: int = MAX_QUESTION_CHARS) -> str:
    """Normalise a question or raise InvalidQuestion with a message fit for the patient."""
    if not isinstance(question, str):
        raise InvalidQuestion("The question must be text.", "La domanda deve essere un testo.")
    text = unicodedata.normalize("NFC", question)
    bad, share = _unreadable_share(text)
    text = "".join(ch for ch in text if ch in "\n\t" or unicodedata.category(ch)[0] != "C")
    text = text.replace("\ufffd", " ")
    text = " ".join(text.split())
    if not text:
        raise InvalidQuestion("Please type a question.", "Scrivi una domanda.")
    if bad >= 3 and share >= 0.2:
        raise InvalidQuestion(
            "Your message contains unreadable characters (binary data?). Please type your question in words.",
            "Il messaggio contiene caratteri illeggibili (dati binari?). Scrivi la tua domanda a parole.",
        )
    if len(text) > max_chars:
        raise InvalidQuestion(
            f"Your question is too long ({len(text)} characters); please keep it under {max_chars}.",
            f"La domanda è troppo lunga ({len(text)} caratteri); resta sotto i {max_chars}.",
        )
    if not any(ch.isalnum() for ch in text):
        raise InvalidQuestion("Please type your question in words.", "Scrivi la tua domanda a parole.")
    return text


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


def _trace(result: RetrievalResult, pipeline: str, services: Services, total_ms: float) -> dict[str, Any]:
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
    # What the pipeline itself reports (question type, HyDoc, fallback, model...): copied in; a key that
    # collides with the fields above keeps the pipeline's value under "pipeline_<key>".
    for key, value in result.info.items():
        trace[key if key not in trace else f"pipeline_{key}"] = value
    return trace


def _reranker_details(question: str, pipeline: str, services: Services) -> dict[str, Any]:
    """The reranker this question got (``Services.reranker_for``), the cross-encoder's runtime (onnx-int8 or
    torch) and why it is not the configured one when it is not."""
    if pipeline in ("bm25", "dense"):
        return {"reranker": None}
    reranker, note = services.reranker_for(question)
    out: dict[str, Any] = {"reranker": getattr(reranker, "name", None)}
    if getattr(reranker, "runtime", None):
        out["reranker_runtime"] = reranker.runtime
        if services.settings.rerank.rrf_k:
            out["reranker_fusion"] = f"rrf k={services.settings.rerank.rrf_k}"
    if note:
        out["reranker_note"] = note
    return out


def _without_urgent_fillers(result: RetrievalResult, services: Services) -> list[Hit]:
    """The top documents without an urgent card ("call 999 now") as a filler link: an urgent card is linked
    only when it is the best match, or by the red-flag screen (urgent_links), never third on a coffee question."""
    from chatbot.stages.redflags import urgent_card_ids

    urgent = urgent_card_ids(services.settings.safety.urgent_cards)
    if not urgent or not any(h.segment.doc_id in urgent for h in result.top[1:]):
        return result.top
    kept = [h for i, h in enumerate(result.ranked) if i == 0 or h.segment.doc_id not in urgent]
    return kept[: services.settings.retrieval.top_n]


def _relevance(
    top: list[Hit], services: Services, language: str = "en", positive: str | None = None
) -> tuple[str | None, float | None, float | None]:
    """(score name, best score among the top hits, threshold): the bi-encoder cosine (by default, also after
    a cross-encoder reranked: it separates answerable from off-topic questions better, see
    evaluation/results/redteam-thresholds-crossencoder.md), or the cross-encoder's score with
    safety.relevance_score=cross-encoder. Fused scores are relative to the candidate list, never a level."""
    safety = services.settings.safety
    # with safety.relevance_score=cross-encoder; a document found only past rerank.candidates has no score
    if safety.relevance_score == "cross-encoder" and top and "cross-encoder" in top[0].detail:
        best = max(h.detail["cross-encoder"] for h in top if "cross-encoder" in h.detail)
        return "cross-encoder", best, safety.min_relevance_cross_encoder
    table = safety.min_relevance_dense_it if language == "it" else safety.min_relevance_dense
    if positive is not None and top and all(f"term:{positive}" in h.detail for h in top):
        # an exclusion question is judged by its positive part: the excluded thing would only lower the score
        best = max(h.detail[f"term:{positive}"] for h in top)
        return "dense:positive", best, threshold_for(table, services, "safety.min_relevance")
    if top and all("dense" in h.detail for h in top):
        return "dense", max(h.detail["dense"] for h in top), threshold_for(table, services, "safety.min_relevance")
    return None, None, None


def threshold_for(table: dict[str, float], services: Services, name: str) -> float:
    """The threshold measured for the configured embedder (cosine scales differ between models)."""
    kind = services.settings.embedding.model
    if kind not in table:
        raise ValueError(f"{name} has no threshold for embedder {kind!r}; measure one (evaluation/redteam)")
    return table[kind]


def _llm_for(services: Services):
    """The LLM client for generative replies, or None (no Services.llm, or it cannot be built)."""
    try:
        return getattr(services, "llm", None)
    except Exception:  # noqa: BLE001 - a missing endpoint means extractive replies
        return None


def _outcome(
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


def answer(question: Any, services: Services, pipeline: str | None = None) -> dict[str, Any]:
    """The red-flag screen first, on the raw text (chatbot.stages.redflags), then ``_answer``. Whatever the
    outcome (invalid, unsupported language, no certified info, a pipeline or LLM failure), an urgent message
    gets the certified urgent card first: ``urgent``, ``urgent_message``, ``urgent_action``, ``urgent_links``."""
    from chatbot.stages import redflags, safety

    screen = redflags.screen(question, services.redflag_classifier)
    text = redflags.raw_text(question)
    language = safety.detect_language(text, services.settings.safety.language_min_evidence).reply_language
    urgent = redflags.urgent_fields(screen, language, services.settings.safety.urgent_cards)
    try:
        ans = _answer(question, services, pipeline, screen, urgent)
        for _ in range(2):  # a document linked here was withdrawn while answering: answer again without it
            content = (ans.get("trace") or {}).get("content")
            if not content or links_still_live(content["versions"], services, content["generation"]):
                break
            ans = _answer(question, services, pipeline, screen, urgent)
    except Exception as exc:
        if not screen.urgent:
            raise
        ans = _outcome(
            text, "", "error", urgent=urgent, language=language, trace={"error": f"{type(exc).__name__}: {exc}"}
        )
    ans.setdefault("trace", {}).setdefault("safety", {})["red_flag_screen"] = screen.trace()
    return ans


def _answer(
    question: Any, services: Services, pipeline: str | None, screen: Any, urgent: dict[str, Any]
) -> dict[str, Any]:
    """Answer with certified text only, the top-3 documents' fixed links, and a safety screen.

    status: answered (composed certified reply + links), no_certified_info (nothing relevant enough: no
    links), safe_reply (personal diagnosis/dosage: fixed text + relevant links), invalid_input. ``urgent``
    puts the urgent-care message first whatever else is shown.
    """
    from chatbot.stages import safety as sf

    start = time.perf_counter()
    cfg = services.settings.safety
    try:
        text = validate_question(question, cfg.max_question_chars)
    except InvalidQuestion as exc:
        raw = question if isinstance(question, str) else repr(question)
        return _outcome(
            raw,
            exc.bilingual,
            "invalid_input",
            urgent=urgent,
            language="unknown",
            trace={"error": str(exc), "safety": {"input": "invalid"}},
        )
    t0 = time.perf_counter()
    lang = sf.detect_language(text, cfg.language_min_evidence)
    request = sf.detect_personal_request(text)
    signals = sf.injection_signals(text)
    query = sf.retrieval_text(text)
    reply_lang = lang.reply_language
    safety_trace: dict[str, Any] = {
        "language": lang.language,
        "language_scores": {k: v for k, v in lang.scores.items() if v},
        "red_flags": [{"category": f.category, "evidence": list(f.evidence)} for f in screen.rule_flags],
        "personal_request": request,
        "injection_signals": signals,
        "retrieval_text": query if query != text else None,
        "ms": round((time.perf_counter() - t0) * 1000, 2),
    }
    if not lang.supported:
        return _outcome(
            text,
            sf.UNSUPPORTED_LANGUAGE,
            "invalid_input",
            urgent=urgent,
            language=lang.language,
            trace={"error": "unsupported language", "safety": safety_trace},
        )
    if not query:
        return _outcome(
            text,
            sf.NO_CERTIFIED_INFO[reply_lang],
            "no_certified_info",
            urgent=urgent,
            language=reply_lang,
            trace={"safety": {**safety_trace, "relevance": "nothing left to search after removing links/markup"}},
        )
    chosen = route(query, pipeline, services.settings)
    pipeline = chosen.pipeline
    refresh_caches(services)
    result = run_pipeline(pipeline, query, services)
    content = gate_result(result, services)  # only the current version of a managed document (content_gate)
    result.top = _without_urgent_fillers(result, services)
    name, score, threshold = _relevance(result.top, services, lang.language, positive=chosen.positive)
    relevant = bool(result.top) and (score is None or threshold is None or score >= threshold)
    safety_trace["relevance"] = {
        "score": None if score is None else round(score, 4),
        "scorer": name,
        "threshold": threshold,
        "relevant": relevant,
    }

    def finish(reply: str, status: str, links=None, demo=None, compose_trace=None) -> dict[str, Any]:
        total = (time.perf_counter() - start) * 1000
        trace = {**_trace(result, pipeline, services, total), "route": chosen.trace(), "safety": safety_trace}
        if content is not None:
            trace["content"] = content
        if compose_trace is not None:
            trace["compose"] = compose_trace
            trace["validators"] = [
                {"mode": a["mode"], **v} for a in compose_trace.get("attempts", []) for v in a.get("validators", [])
            ]
        out = _outcome(text, reply, status, urgent=urgent, language=reply_lang, links=links, trace=trace, demo=demo)
        return with_warning(out, content)

    if request is not None:
        links = certified_links(result.top) if relevant else []
        demo = any(h.segment.demo for h in result.top) if relevant else None
        return finish(sf.SAFE_REPLY[(request, reply_lang)], "safe_reply", links, demo)
    if not relevant:
        return finish(sf.NO_CERTIFIED_INFO[reply_lang], "no_certified_info")

    from chatbot.stages.answer_first import answer_model_for
    from chatbot.stages.compose import compose_reply
    from chatbot.stages.generative import pragmatic_context
    from chatbot.stages.support import support_scorer

    ccfg = services.settings.compose
    stage_event("compose")
    t1 = time.perf_counter()
    llm = scorer = None
    kind = "bi-encoder"
    support_threshold = 0.0
    if ccfg.mode == "generative":
        llm = _llm_for(services)
        scorer, kind = support_scorer(services, ccfg.support_scorer)
        support_threshold = (
            ccfg.support_threshold_cross_encoder
            if kind == "cross-encoder"
            else threshold_for(ccfg.support_threshold, services, "compose.support_threshold")
        )
    composed = compose_reply(
        query,  # links, addresses and markup removed: the composer and the LLM never see them
        result.top,
        embedder=services.embedder,
        settings=ccfg,
        language=reply_lang,
        llm=llm,
        scorer=scorer,
        scorer_kind=kind,
        support_threshold=support_threshold,
        context=pragmatic_context(result.info),  # the cot pipeline's analysis of the question, if any
        document_segments=segments_filter(
            services.index.document_segments, services
        ),  # the answer may sit beside the retrieved segment
        answer_model=answer_model_for(services, ccfg.answer_scorer, reply_lang),
        # an exclusion question's reply leaves out the sentences that name what the patient excluded
        exclude=chosen.mentions_excluded if chosen.excluded else None,
    )
    result.timings_ms["compose"] = (time.perf_counter() - t1) * 1000
    stage_event("compose", result.timings_ms["compose"])
    if not composed.text:
        return finish(sf.NO_CERTIFIED_INFO[reply_lang], "no_certified_info", compose_trace=composed.trace)
    reply = f"{composed.language_note}\n\n{composed.text}" if composed.language_note else composed.text
    return finish(
        reply,
        "answered",
        # an exclusion question keeps the exclusion-aware order of its links
        certified_links(result.top)
        if chosen.excluded
        else answer_first_links(certified_links(result.top), result.top, composed.trace),
        any(h.segment.demo for h in result.top),
        composed.trace,
    )


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

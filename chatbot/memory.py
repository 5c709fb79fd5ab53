"""Certified-answer memory: a clinician-approved answer is served again for equivalent later questions.

Equivalence is the bi-encoder's cosine between the new question and the approved question, at or above
``settings.store.memory_threshold`` (measured on paraphrases and near misses: ``python -m evaluation.memory_threshold``
writes evaluation/results/memory-threshold-MODEL.md). The pipeline is still called through
``chatbot.answer.answer`` (by default even on a hit, so urgency detection stays current); the trace says
``answered_by: memory`` with the approval, its question and the similarity.

Memory is per language: a question is compared only with approvals in its own language (the reply language
of the safety screen's guess), and only in ``settings.store.memory_languages``. A bi-encoder puts an Italian
question close to its English translation (multilingual-e5-small: cosine 0.85-0.94), so without this an
Italian patient could be served an English approved answer."""

from __future__ import annotations

import re
import threading
import time
from typing import Any

import numpy as np
from sqlalchemy import func, select

from chatbot.answer import answer, first_segment, links_live
from chatbot.answer_object import urgent_first_links
from chatbot.content_gate import approved_links_content, with_warning
from chatbot.store.db import Store
from chatbot.store.models import Approval

# pipeline outcomes a certified memory answer may replace (never invalid_input or safe_reply)
OVERRIDABLE = ("answered", "no_certified_info")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)?")


def same_numbers(a: str, b: str) -> bool:
    """Questions that differ only in a number ("vaccines at 8 weeks" / "at 1 year") embed almost alike but
    need different answers: memory never matches questions whose numbers differ."""
    return sorted(_NUMBER.findall(a)) == sorted(_NUMBER.findall(b))


class CertifiedMemory:
    """Approved answers with their question vectors, cached in memory and refreshed when approvals change."""

    def __init__(self, store: Store, services: Any, embedder: Any = None) -> None:
        self.store = store
        self.services = services
        self._embedder = embedder
        self._lock = threading.Lock()
        self._version: tuple[int, int] | None = None
        self._rows: list[dict[str, Any]] = []
        self._matrix = np.zeros((0, 1), dtype=np.float32)

    @property
    def threshold(self) -> float:
        return self.services.settings.store.memory_threshold

    @property
    def embedder(self) -> Any:
        """settings.store.memory_embedder (loaded on first use), or the one given to the constructor."""
        if self._embedder is None:
            from chatbot.embedders import load_embedder

            s = self.services.settings
            self._embedder = load_embedder(s.store.memory_embedder, s.embedding.threads)
        return self._embedder

    def vector(self, question: str) -> np.ndarray:
        return np.asarray(self.embedder.embed_queries([question])[0], dtype=np.float32)

    def approval_fields(self, question: str) -> dict[str, Any]:
        """Vector and model name to store with a new approval."""
        return {"vector": self.vector(question).tobytes(), "embedding_model": self.embedder.name}

    def _refresh(self) -> None:
        model = self.embedder.name
        with self.store.session() as s:
            version = s.execute(
                select(func.count(Approval.id), func.coalesce(func.max(Approval.id), 0)).where(
                    Approval.active.is_(True), Approval.suspended_at.is_(None), Approval.embedding_model == model
                )
            ).one()
            version = (int(version[0]), int(version[1]))
            if version == self._version:
                return
            rows = s.scalars(
                select(Approval)
                .where(Approval.active.is_(True), Approval.suspended_at.is_(None), Approval.embedding_model == model)
                .order_by(Approval.id)
            ).all()
            self._rows = [
                {
                    "id": r.id,
                    "question": r.question,
                    "reply": r.reply,
                    "links": r.links,
                    "urgent": r.urgent,
                    "demo_content": r.demo_content,
                    "language": r.language,
                }
                for r in rows
            ]
            vecs = [np.frombuffer(r.vector, dtype=np.float32) for r in rows]
            self._matrix = np.vstack(vecs) if vecs else np.zeros((0, 1), dtype=np.float32)
            self._version = version

    def lookup(self, question: str, language: str) -> tuple[dict[str, Any] | None, float, dict[str, Any] | None]:
        """(best approval in ``language`` at or above the threshold or None, its similarity, the best approval
        in ``language`` overall). Approvals in other languages are never candidates."""
        with self._lock:
            self._refresh()
            same_language = [i for i, row in enumerate(self._rows) if row["language"] == language]
            if not same_language:
                return None, 0.0, None
            sims = self._matrix[same_language] @ self.vector(question)
            for j in np.argsort(-sims):
                row = self._rows[same_language[int(j)]]
                if same_numbers(question, row["question"]):
                    score = float(sims[int(j)])
                    return (row if score >= self.threshold else None), score, row
            return None, 0.0, None


def question_language(text: str, services: Any) -> str | None:
    """The language memory files a question under: the reply language of the safety screen's guess ("en"
    or "it", the language an approval records), None for an unsupported language."""
    from chatbot.language import detect_language

    guess = detect_language(text, min_confidence=services.settings.safety.language_min_confidence)
    return guess.reply_language if guess.supported else None


def _urgent_keys(question: Any, base: dict[str, Any], language: str, services: Any) -> dict[str, Any]:
    """The urgent keys of a memory hit: the pipeline's (memory_checks_urgency), else the red-flag screen's
    own (it never depends on the pipeline running)."""
    keys = ("urgent", "urgent_message", "urgent_action", "urgent_links", "urgent_cards")
    if base:
        return {k: base[k] for k in keys if k in base}
    from chatbot.stages import redflags

    result = redflags.screen(question, services.redflag_classifier, services.redflag_context)
    return redflags.urgent_fields(result, language, services.settings.safety.urgent_cards)


def answer_with_memory(
    question: Any, services: Any, memory: CertifiedMemory | None, pipeline: str | None = None
) -> dict[str, Any]:
    """``answer()`` with certified-answer memory in front; same output shape, trace says who answered."""
    settings = services.settings.store
    if memory is None or not settings.memory_enabled or not isinstance(question, str) or not question.strip():
        return answer(question, services, pipeline)
    start = time.perf_counter()
    text = " ".join(question.split())
    language = question_language(text, services)
    if language not in settings.memory_languages:  # not measured there (or unsupported): the pipeline answers
        ans = answer(question, services, pipeline)
        ans.setdefault("trace", {})["memory"] = {"hit": False, "skipped": "language", "language": language}
        return ans
    hit, similarity, nearest = memory.lookup(text, language)
    lookup_ms = (time.perf_counter() - start) * 1000
    info = {
        "hit": hit is not None,
        "similarity": round(similarity, 4),
        "threshold": memory.threshold,
        "language": language,
        "approval_id": (hit or nearest or {}).get("id"),
        "approved_question": (hit or nearest or {}).get("question"),
        "lookup_ms": round(lookup_ms, 1),
    }
    if hit is None:
        ans = answer(question, services, pipeline)
        ans.setdefault("trace", {})["memory"] = info
        return ans
    base: dict[str, Any] = {}
    if settings.memory_checks_urgency:
        base = answer(question, services, pipeline)
        # the safety screen wins: invalid input, unsupported language or a personal diagnosis/dosage request
        # keep the pipeline's own outcome; so does a reply in another language than the approved one
        other_language = base.get("language") != hit["language"]
        if base.get("status") not in OVERRIDABLE or other_language:
            base.setdefault("trace", {})["memory"] = {
                **info,
                "hit": False,
                "skipped": base.get("status") if base.get("status") not in OVERRIDABLE else "language",
            }
            return base
    # checked last: a document the approval cites, withdrawn, replaced or expired meanwhile, sends the pipeline's
    # answer instead (the suspension takes the approval out of memory for the next question)
    content = approved_links_content(hit["links"], services)
    if content is None:  # the pipeline's answer, unless a document it links went meanwhile too
        ans = base if base and links_live(base, services) else answer(question, services, pipeline)
        ans.setdefault("trace", {})["memory"] = {**info, "hit": False, "skipped": "content withdrawn"}
        return ans
    pipeline_trace = base.get("trace", {})
    urgent = _urgent_keys(question, base, hit["language"], services)
    total = (time.perf_counter() - start) * 1000
    reply = hit["reply"]
    if urgent.get("urgent_message") and not reply.startswith(urgent["urgent_message"]):
        reply = f"{urgent['urgent_message']}\n\n{reply}"
    out = {
        "question": base.get("question", text),
        "reply": reply,
        # an urgent question: the certified urgent card(s) first, then the approved answer's links
        "links": urgent_first_links(hit["links"], urgent, lambda doc_id: first_segment(doc_id, services)),
        "status": "answered",
        **urgent,
        "urgent": bool(urgent.get("urgent")) or bool(hit["urgent"]),
        "demo_content": bool(hit["demo_content"]),
        "language": hit["language"],
        "trace": {
            "answered_by": "memory",
            "pipeline": "memory",
            "memory": info,
            "pipeline_trace": pipeline_trace,
            "top": [{"segment_id": link["segment_id"]} for link in hit["links"]],
            "timings_ms": {"memory_lookup": round(lookup_ms, 1), "total": round(total, 1)},
            **({"content": content} if content else {}),
        },
    }
    return with_warning(out, content)  # an expired document kept under corpus.expired_content=warn


# -- threshold measurement ----------------------------------------------------------------------------------


def measure_threshold(pairs: list[dict[str, Any]], embedder: Any) -> dict[str, Any]:
    """Cosines of paraphrase pairs (same=True) and near misses (same=False); the threshold that keeps every
    near miss out with the most paraphrases in, and the counts at a grid of thresholds."""
    a = embedder.embed_queries([p["a"] for p in pairs])
    b = embedder.embed_queries([p["b"] for p in pairs])
    sims = np.sum(np.asarray(a) * np.asarray(b), axis=1)
    # the number guard of CertifiedMemory.lookup: such a pair can never match, whatever its cosine
    sims = np.where([same_numbers(p["a"], p["b"]) for p in pairs], sims, -1.0)
    same = np.array([bool(p["same"]) for p in pairs])
    grid = []
    for t in np.round(np.arange(0.50, 1.0001, 0.01), 2):
        grid.append(
            {
                "threshold": float(t),
                "paraphrases_reused": int(np.sum(sims[same] >= t)),
                "near_misses_reused": int(np.sum(sims[~same] >= t)),
            }
        )
    max_neg = float(np.max(sims[~same])) if (~same).any() else 0.0
    pos, neg = sims[same], sims[~same]
    # share of (paraphrase, near miss) couples where the paraphrase scores higher: 1 separates, 0.5 is chance
    auc = float(np.mean((pos[:, None] > neg[None, :]) + 0.5 * (pos[:, None] == neg[None, :])))
    safe = next((row for row in grid if row["near_misses_reused"] == 0), None)
    return {
        "pairs": [{**p, "cosine": round(float(s), 4)} for p, s in zip(pairs, sims, strict=True)],
        "paraphrase_cosine": {"min": float(np.min(pos)), "median": float(np.median(pos))},
        "near_miss_cosine": {"max": max_neg, "median": float(np.median(neg))},
        "auc": round(auc, 4),
        "safe_threshold": safe,
        "grid": grid,
    }

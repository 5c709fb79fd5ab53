"""Compose the reply from the top-3 certified segments, then validate it (chatbot.guard).

- ``extractive``: certified sentences taken verbatim from the top-3 segments, chosen by bi-encoder
  similarity to the question, in reading order (segment rank, then position), within the length limit,
  from segments in the patient's language when the top-3 has any.
- ``generative``: an LLM (anything with ``complete(messages, max_tokens) -> str``) writes a short reply
  from the question, the pipeline's pragmatic analysis of it (cot) and the top-3 segments only (prompt:
  ``prompts/compose_generative.txt``); validators remove unsupported sentences and uncertified contacts,
  or the reply falls back to ``extractive`` (also when it is not in the patient's language). Within
  ``draft_listener`` the LLM's draft is streamed to the listener (masked preview) while it is written; the
  validated reply replaces it.

The source links are never composed here: the caller attaches them from segment metadata.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from chatbot.index import Hit
from chatbot.stages.answer_first import AnswerModel, compose_answer_first
from chatbot.stages.answer_weights import unit_weights_for
from chatbot.stages.extractive import Composition, compose_extractive
from chatbot.stages.generative import LLM, compose_generative

# -- compose + validate --------------------------------------------------------------------------------


def answer_room(max_chars: int, reserved_chars: int = 0) -> int:
    """The characters left to the composed text when ``reserved_chars`` of the reply come before it (an urgent
    message): ``max_chars`` less them, at least 0. The urgent message is certified safety text and is never cut;
    the composer always keeps its answering unit (alone when even that does not fit: a false alarm must not cost
    the patient the answer), and adds the rest only within the room."""
    return max(0, max_chars - max(0, reserved_chars))


def within_room(text: str, room: int) -> str:
    """A validated generative reply held to ``room``: whole sentences within it, and never less than its first
    sentence (the answer; the reply-length validator already held it to max_chars)."""
    from chatbot.sentences import split_sentences, truncate_to_sentences

    if len(text) <= room:
        return text
    sentences = split_sentences(text)
    return truncate_to_sentences(text, max(room, len(sentences[0]) if sentences else 0))


@dataclass
class ComposedReply:
    """The validated reply text, the mode that produced it, and the trace of every attempt."""

    text: str
    mode: str
    language_note: str | None
    trace: dict[str, Any]


def _validate(composition: Composition, hits: Sequence[Hit], mode: str, cfg, scorer=None, threshold=0.0, language="en"):
    from chatbot.guard import run_guard

    return run_guard(
        composition.text,
        mode=mode,
        certified_texts=[h.segment.text for h in hits]
        + [h.segment.heading for h in hits if h.segment.heading]
        + list(composition.certified_extra),
        certified_urls=[h.segment.source_url for h in hits],
        max_chars=cfg.max_chars,
        support_threshold=threshold,
        support_scorer=scorer,
        language=language,
    )


def compose_reply(
    question: str,
    hits: Sequence[Hit],
    *,
    embedder,
    settings,
    language: str = "en",
    llm: LLM | None = None,
    scorer=None,
    scorer_kind: str = "bi-encoder",
    support_threshold: float = 0.0,
    context: str = "",
    document_segments: Callable[[str], Sequence[Any]] | None = None,
    answer_model: AnswerModel | None = None,
    exclude: Callable[[str], bool] | None = None,
    reserved_chars: int = 0,
    kind: str | None = None,
    readings: Mapping[str, str] | None = None,
    urgent: bool = False,
    lead: Any | None = None,
) -> ComposedReply:
    """Compose in the configured mode, validate, and fall back to extractive when generative fails.

    ``settings`` is the ComposeSettings group; ``scorer`` the support scorer for generative replies and
    ``support_threshold`` its threshold (measured per scorer/embedder, see relevance.threshold_for);
    ``context`` the pipeline's pragmatic analysis of the question for the generative prompt (or empty);
    ``document_segments(doc_id)`` the segments of a document (the answer may sit just outside the retrieved
    segment) and ``answer_model`` the model term of compose.answer_scorer (see answer_model_for);
    ``exclude(sentence)`` keeps sentences out of the answer-first reply (what an exclusion question excluded).
    ``kind``: the answer type when the caller knows better than ``question_type`` (an exclusion question's
    ``options``, chatbot.stages.answer_options); None: typed from the question. ``readings``: the question's words
    per unit language for the answer-first composer's shared-word terms (an Italian question's English gloss).
    ``reserved_chars``: characters the reply already holds in front of the composed text (the urgent message and
    the blank line after it); the composed text gets the rest of ``max_chars`` (``answer_room``). ``urgent``: the
    red-flag screen found an alarm in the question (the answer-first composer's get-help instructions answer it).
    ``lead``: the answer memory's labelled neighbour (chatbot.stages.answer_memory), for the answer-first composer.
    """
    cfg = settings
    trace: dict[str, Any] = {"mode_requested": cfg.mode, "attempts": []}
    room = answer_room(cfg.max_chars, reserved_chars)
    if reserved_chars:
        trace["room"] = {"reserved": reserved_chars, "chars": room}
    if cfg.mode == "generative":
        reason = None
        if llm is None:
            reason = "no LLM available"
        else:
            start = time.perf_counter()
            try:
                comp = compose_generative(question, hits, llm, language, cfg.generative_max_tokens, context)
            except Exception as exc:  # noqa: BLE001 - any LLM failure falls back to certified sentences
                comp, reason = None, f"LLM error: {type(exc).__name__}: {str(exc)[:200]}"
            ms = (time.perf_counter() - start) * 1000
            if comp is None or not comp.text:  # the LLM call is traced even when it gave nothing to validate
                reason = reason or "LLM found no answer in the passages"
                detail = comp.detail if comp is not None else {}
                trace["attempts"].append(
                    {"mode": "generative", "draft": "", "validators": [], "ms": {"compose": round(ms, 1)}, **detail}
                )
            else:
                start = time.perf_counter()
                result = _validate(comp, hits, "generative", cfg, scorer, support_threshold, language)
                attempt = {
                    "mode": "generative",
                    "draft": comp.text,
                    "support_scorer": scorer_kind,
                    "validators": result.validators,
                    "ms": {"compose": round(ms, 1), "validate": round((time.perf_counter() - start) * 1000, 1)},
                    **comp.detail,
                }
                trace["attempts"].append(attempt)
                grounded = result.outcome("grounded-sentences") or {}
                total = grounded.get("total") or 0
                share = (grounded.get("supported", 0) / total) if total else 0.0
                wrong_language = result.outcome("reply-language") or {}
                if not result.text:
                    reason = "no sentence survived validation"
                elif wrong_language.get("outcome") == "fail":
                    reason = f"reply in {wrong_language['detected']}, not in the patient's {language}"
                elif cfg.on_unsupported == "fallback" and grounded.get("outcome") == "fail":
                    reason = "unsupported sentence(s) and compose.on_unsupported=fallback"
                elif share < cfg.min_supported_share:
                    reason = f"only {share:.0%} of sentences supported (< {cfg.min_supported_share:.0%})"
                else:
                    trace["mode_used"] = "generative"
                    return ComposedReply(within_room(result.text, room), "generative", comp.language_note, trace)
        trace["fallback"] = reason
    start = time.perf_counter()
    if getattr(cfg, "answer_scorer", "similarity") == "similarity":
        comp = compose_extractive(
            question, hits, embedder, language, room, cfg.max_sentences, cfg.min_sentence_score_ratio
        )
    else:
        try:
            weights = unit_weights_for(cfg)
        except (OSError, ValueError) as exc:  # a missing or stale weights file: the hand weights still answer
            weights = None
            trace["unit_weights_error"] = f"{type(exc).__name__}: {exc}"[:300]
        comp = compose_answer_first(
            question,
            hits,
            language,
            room,
            cfg.max_sentences,
            document_segments,
            answer_model,
            cfg.answer_scorer,
            exclude,
            kind,
            readings,
            urgent,
            lead,
            weights,
        )
    ms = (time.perf_counter() - start) * 1000
    start = time.perf_counter()
    result = _validate(comp, hits, "extractive", cfg) if comp.text else None
    trace["attempts"].append(
        {
            "mode": "extractive",
            "pieces": comp.pieces,
            "validators": result.validators if result else [],
            "ms": {"compose": round(ms, 1), "validate": round((time.perf_counter() - start) * 1000, 1)},
            **comp.detail,
        }
    )
    trace["mode_used"] = "extractive"
    return ComposedReply(result.text if result else "", "extractive", comp.language_note, trace)

"""One service layer for a patient's turn: the patient page and the JSON API both answer through it
(certified memory, then the pipeline), record the turn with a trace id, and screen red flags early."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from chatbot import language
from chatbot import observability as obs
from chatbot.memory import answer_with_memory
from chatbot.stages.generative import draft_listener
from chatbot.store import conversations

log = logging.getLogger(__name__)


@dataclass
class TurnResult:
    """An answer (every key answer() returned, passed through), its recorded turn and its trace id."""

    answer: dict[str, Any]
    conversation_id: str
    turn_id: int | None
    trace_id: str
    latency_ms: float
    extra: dict[str, Any] = field(default_factory=dict)


class ChatService:
    """Answers and records patient turns over shared services, store and memory (see ui.app.AppState)."""

    def __init__(self, settings: Any, services: Any, store: Any, memory: Any) -> None:
        self.settings = settings
        self.services = services
        self.store = store
        self.memory = memory

    def early_urgent(self, message: Any, fallback_language: str | None = None) -> dict[str, Any] | None:
        """The urgent keys (urgent, urgent_message, urgent_links...) of a red-flag message, known in
        milliseconds before the answer; None when the screen finds no red flag."""
        from chatbot.stages import redflags

        result = redflags.screen(message, self.services.redflag_classifier, self.services.redflag_context)
        if not result.urgent:
            return None
        text = redflags.raw_text(message)
        guess = language.detect_language(text, fallback_language, self.settings.safety.language_min_confidence)
        return redflags.urgent_fields(result, guess.reply_language, self.settings.safety.urgent_cards)

    def answer_turn(
        self,
        question: Any,
        conversation_id: str | None = None,
        on_draft: Callable[[str], None] | None = None,
        route: str = "page",
        fallback_language: str | None = None,
    ) -> TurnResult:
        """Answer ``question`` (memory, then the configured pipeline) and record the turn. Raises what the
        answer raises; a failure to record is logged and gives ``turn_id`` None (the reply still goes out).
        ``fallback_language``: the reply language of a question too short to tell (chatbot.language)."""
        conversation_id = conversation_id or conversations.new_conversation_id()
        trace_id = str(uuid.uuid4())
        start = time.perf_counter()
        stream = on_draft if self.settings.compose.stream_draft else None
        obs.IN_PROGRESS.inc()
        try:
            with draft_listener(stream), language.fallback_language(fallback_language):
                # no pipeline named: the router sends exclusion questions to the decomposition, the rest to
                # retrieval.pipeline (chatbot.stages.route)
                ans = answer_with_memory(question, self.services, self.memory)
        except Exception:
            obs.ERRORS.labels(route).inc()
            obs.REQUEST_LOG.error("answer failed", extra={"fields": {"trace_id": trace_id, "route": route}})
            raise
        finally:
            obs.IN_PROGRESS.dec()
        latency = (time.perf_counter() - start) * 1000
        trace = ans.setdefault("trace", {})
        if isinstance(trace, dict):
            trace["trace_id"] = trace_id
        try:
            obs.record_answer(ans, route, trace_id, latency, self.settings.server.log_questions)
        except Exception:  # noqa: BLE001 - logging never fails an answer
            log.exception("answer log failed")
        try:
            turn_id = conversations.record_turn(self.store, conversation_id, ans, latency)
        except Exception:  # the patient still gets the reply; the operator sees the traceback
            log.exception("recording the turn failed")
            turn_id = None
        return TurnResult(ans, conversation_id, turn_id, trace_id, latency)

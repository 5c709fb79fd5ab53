"""Structured JSON logs and Prometheus metrics of the served product.

One JSON object per log line (``JsonFormatter``); each answer logs one ``answer`` line (``log_answer``) with
its trace id (the id the review page shows), route, status, per-stage latency, fallback, refusal and urgency,
never the question's text unless ``server.log_questions`` allows it. The metrics live in this process's own
registry (``REGISTRY``), served at /metrics to token holders only."""

from __future__ import annotations

import json
import logging
import sys
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

REQUEST_LOG = logging.getLogger("chatbot.requests")
REGISTRY = CollectorRegistry(auto_describe=True)
_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 40, 80)

ANSWERS = Counter(
    "chatbot_answers", "Answers given, by route and answer status", ["route", "status"], registry=REGISTRY
)
REFUSALS = Counter(
    "chatbot_refusals", "Answers that are not a certified reply, by status", ["status"], registry=REGISTRY
)
FALLBACKS = Counter("chatbot_fallbacks", "Answers given without the LLM their pipeline needs", registry=REGISTRY)
URGENT = Counter("chatbot_urgent_answers", "Answers carrying the urgent banner", registry=REGISTRY)
ERRORS = Counter(
    "chatbot_answer_errors", "Answers that failed (the patient saw an error)", ["route"], registry=REGISTRY
)
ANSWER_SECONDS = Histogram(
    "chatbot_answer_seconds", "Whole answer latency, by route", ["route"], buckets=_BUCKETS, registry=REGISTRY
)
STAGE_SECONDS = Histogram(
    "chatbot_stage_seconds", "Latency of each pipeline stage", ["stage"], buckets=_BUCKETS, registry=REGISTRY
)
IN_PROGRESS = Gauge("chatbot_answers_in_progress", "Answers being computed now (queue depth)", registry=REGISTRY)
RATE_LIMITED = Counter("chatbot_rate_limited", "Requests refused by a rate limit, by surface", ["surface"],
                       registry=REGISTRY)  # fmt: skip


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, and any ``extra={"fields": {...}}``."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": self.formatTime(record, "%Y-%m-%dT%H:%M:%S") + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            out.update(fields)
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, ensure_ascii=False, default=str)


def configure_logging(fmt: str = "json", level: int = logging.INFO) -> None:
    """Log to stderr, one JSON object a line (``fmt`` "json") or plain text; uvicorn's loggers included."""
    import logging.config  # noqa: F401 - keeps the handlers module loaded

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        JsonFormatter() if fmt == "json" else logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s")
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    logging.getLogger("alembic").setLevel(logging.WARNING)  # migration chatter at every start
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        lg = logging.getLogger(name)
        lg.handlers[:] = []
        lg.propagate = True


def answer_fields(
    ans: dict[str, Any], route: str, trace_id: str, latency_ms: float, log_question: bool = False
) -> dict[str, Any]:
    """The fields of an answer's log line (no question text unless ``log_question``)."""
    trace = ans.get("trace") if isinstance(ans.get("trace"), dict) else {}
    timings = trace.get("timings_ms") or {}
    fallback = trace.get("fallback")
    fields: dict[str, Any] = {
        "event": "answer",
        "trace_id": trace_id,
        "route": route,
        "status": ans.get("status"),
        "urgent": bool(ans.get("urgent")),
        "refusal": ans.get("status") != "answered",
        "fallback": (fallback.get("to") or True) if isinstance(fallback, dict) else bool(fallback),
        "answered_by": trace.get("answered_by", "pipeline"),
        "pipeline": trace.get("pipeline"),
        "language": ans.get("language"),
        "latency_ms": round(latency_ms, 1),
        "stages_ms": {k: v for k, v in timings.items() if isinstance(v, int | float)},
    }
    if log_question:
        fields["question"] = ans.get("question")
    return fields


def record_answer(
    ans: dict[str, Any], route: str, trace_id: str, latency_ms: float, log_question: bool = False
) -> dict[str, Any]:
    """Log the answer's line and count it in the metrics; returns the logged fields."""
    fields = answer_fields(ans, route, trace_id, latency_ms, log_question)
    status = str(fields["status"])
    ANSWERS.labels(route, status).inc()
    ANSWER_SECONDS.labels(route).observe(latency_ms / 1000)
    if fields["refusal"]:
        REFUSALS.labels(status).inc()
    if fields["fallback"]:
        FALLBACKS.inc()
    if fields["urgent"]:
        URGENT.inc()
    for stage, ms in fields["stages_ms"].items():
        if stage != "total":
            STAGE_SECONDS.labels(stage).observe(ms / 1000)
    REQUEST_LOG.info("answer", extra={"fields": fields})
    return fields


def metrics_text() -> bytes:
    """The Prometheus exposition of this process's metrics."""
    return generate_latest(REGISTRY)

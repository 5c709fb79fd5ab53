"""The versioned JSON API (/api/v1) for other systems (a portal, an app, a call-centre tool).

Bearer tokens an admin creates (`chatbot tokens create`), a per-token rate limit kept in the database (429 with
Retry-After, the same on every replica), an audit row per call without the question's text. Answers go
through the same service layer as the patient page (chatbot.service.ChatService). Its own OpenAPI document:
/api/v1/openapi.json (the pages are not in it)."""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
from collections.abc import Iterator
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, FastAPI, HTTPException, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from chatbot import observability as obs
from chatbot.store import ratelimit, tokens

log = logging.getLogger(__name__)

API_PREFIX = "/api/v1"
MAX_QUESTION_CHARS = 20_000  # answer() refuses over-long questions politely; this only bounds the body


class AnswerRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: str = Field(max_length=MAX_QUESTION_CHARS, description="the patient's question")
    language: str | None = Field(
        default=None,
        max_length=8,
        description="the caller's language (en, it): the reply follows the question, in this language when the "
        "question is too short to tell (chatbot.language)",
    )
    conversation_id: str | None = Field(
        default=None, max_length=36, description="continue a conversation this token started; none: a new one"
    )
    stream: bool = Field(default=False, description="server-sent events: urgent, stage, draft, then answer")


class Link(BaseModel):
    model_config = ConfigDict(extra="allow")

    title: str
    url: str


class AnswerResponse(BaseModel):
    """Every key answer() returns (urgent_message, urgent_links, ...) except the internal trace."""

    model_config = ConfigDict(extra="allow")

    reply: str
    links: list[Link]
    status: str
    urgent: bool
    language: str | None = None
    conversation_id: str
    turn_id: int | None
    trace_id: str


class FeedbackRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    conversation_id: str = Field(max_length=36)
    turn_id: int
    value: Literal[1, -1] | None = Field(description="+1 thumbs up, -1 thumbs down, null clears")


class FeedbackResponse(BaseModel):
    ok: bool


class Health(BaseModel):
    status: Literal["ok"]


class Ready(BaseModel):
    ready: bool
    checks: dict[str, bool]


def bearer_token(request: Request) -> str | None:
    value = request.headers.get("authorization", "")
    scheme, _, token = value.partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def _state(request: Request) -> Any:
    return request.app.state.chatbot


def require_token(request: Request) -> tokens.TokenInfo:
    """The caller's active token (401 otherwise), admitted under its rate limit (429 + Retry-After otherwise);
    the call's audit row id goes to ``request.state.api_call``."""
    state = _state(request)
    client = request.client.host if request.client else "unknown"
    wait = ratelimit.hit(state.store, f"api|{client}", state.settings.server.api_client_rate_per_minute)
    if wait:  # per client address, before the token is even checked (slows token guessing too)
        obs.RATE_LIMITED.labels("api_client").inc()
        raise HTTPException(429, "rate limit exceeded for this client", headers={"Retry-After": str(wait)})
    who = tokens.authenticate(state.store, bearer_token(request))
    if who is None:
        raise HTTPException(401, "a valid API token is required", headers={"WWW-Authenticate": "Bearer"})
    call_id, wait = tokens.admit_call(state.store, who, request.url.path)
    if call_id is None:
        obs.RATE_LIMITED.labels("api_token").inc()
        raise HTTPException(429, "rate limit exceeded", headers={"Retry-After": str(wait)})
    request.state.api_call = call_id
    request.state.api_started = time.perf_counter()
    return who


Caller = Annotated[tokens.TokenInfo, Depends(require_token)]


def _finish(request: Request, status: int, trace_id: str | None = None, conversation_id: str | None = None) -> None:
    call_id = getattr(request.state, "api_call", None)
    if call_id is None:
        return
    latency = (time.perf_counter() - request.state.api_started) * 1000
    try:
        tokens.finish_call(_state(request).store, call_id, status, latency, trace_id, conversation_id)
    except Exception:  # the caller still gets its answer; the operator sees the traceback
        log.exception("api audit failed")


def _own_conversation(state: Any, who: tokens.TokenInfo, conversation_id: str) -> bool:
    return tokens.conversation_owner(state.store, conversation_id) == who.id


def _public(turn: Any) -> dict[str, Any]:
    ans = {k: v for k, v in turn.answer.items() if k not in ("trace", "question")}
    return {**ans, "conversation_id": turn.conversation_id, "turn_id": turn.turn_id, "trace_id": turn.trace_id}


def _sse(event: str, data: Any) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


def build_router() -> APIRouter:
    router = APIRouter()

    @router.get("/health", response_model=Health)
    def health() -> Health:
        """Liveness: the process answers."""
        return Health(status="ok")

    @router.get("/ready", response_model=Ready, responses={503: {"model": Ready}})
    def ready(request: Request) -> JSONResponse:
        """Readiness: index and database (503 when either is down); the LLM is reported but not required
        (extractive replies still answer without it)."""
        state = _state(request)
        checks = {"database": False, "index": False, "llm": False}
        try:
            from sqlalchemy import text

            with state.store.engine.connect() as conn:
                conn.execute(text("SELECT 1"))
            checks["database"] = True
        except Exception:  # noqa: BLE001 - any failure is "down"
            log.exception("ready: the database does not answer")
        try:
            checks["index"] = state.services.index.count() > 0
        except Exception:  # noqa: BLE001
            log.exception("ready: the index does not answer")
        try:
            from chatbot.llm_server import health as llm_health

            checks["llm"] = llm_health(state.settings.llm.base_url, timeout=1.0)
        except Exception:  # noqa: BLE001
            checks["llm"] = False
        ok = checks["database"] and checks["index"]
        return JSONResponse({"ready": ok, "checks": checks}, status_code=200 if ok else 503)

    @router.post(
        "/answer",
        response_model=AnswerResponse,
        responses={401: {}, 404: {}, 429: {}},
        description="A certified answer. With stream=true (or Accept: text/event-stream) the reply comes as "
        "server-sent events: `urgent` first (a red flag, before any answering), `stage` as stages end, "
        "`draft` previews of a generative reply (never the reply), then `answer` (this response's JSON) "
        "or `error`.",
    )
    def answer(body: AnswerRequest, request: Request, who: Caller):
        state = _state(request)
        if body.conversation_id and not _own_conversation(state, who, body.conversation_id):
            _finish(request, 404)
            raise HTTPException(404, "unknown conversation")
        wants_stream = body.stream or "text/event-stream" in request.headers.get("accept", "")
        if not wants_stream:
            try:
                with request.app.state.slots:
                    turn = state.chat.answer_turn(
                        body.question, body.conversation_id, route="api", fallback_language=body.language
                    )
            except Exception:
                log.exception("api answer failed")
                _finish(request, 500)
                raise HTTPException(500, "the answer failed") from None
            _claim(state, who, turn)
            _finish(request, 200, turn.trace_id, turn.conversation_id)
            return _public(turn)
        return StreamingResponse(
            _stream(state, who, body, request), media_type="text/event-stream", headers={"cache-control": "no-store"}
        )

    @router.post("/feedback", response_model=FeedbackResponse, responses={401: {}, 404: {}, 429: {}})
    async def feedback(body: FeedbackRequest, request: Request, who: Caller):
        """Thumbs up/down on a turn of a conversation this token started (404 for any other)."""
        from chatbot.store import conversations

        state = _state(request)

        def work() -> bool:
            if not _own_conversation(state, who, body.conversation_id):
                return False
            return conversations.set_feedback(state.store, body.conversation_id, body.turn_id, body.value)

        ok = await run_in_threadpool(work)
        _finish(request, 200 if ok else 404, conversation_id=body.conversation_id)
        if not ok:
            raise HTTPException(404, "unknown conversation or turn")
        return FeedbackResponse(ok=True)

    return router


def _claim(state: Any, who: tokens.TokenInfo, turn: Any) -> None:
    if turn.turn_id is not None:
        tokens.claim_conversation(state.store, turn.conversation_id, who.id)


def _stream(state: Any, who: tokens.TokenInfo, body: AnswerRequest, request: Request) -> Iterator[bytes]:
    """The events of one streamed answer (a sync generator: Starlette runs it in a worker thread)."""
    from chatbot.stage_progress import stage_listener

    try:
        urgent = state.chat.early_urgent(body.question, body.language)
    except Exception:  # the answer's own screen still runs
        log.exception("early red-flag screen failed")
        urgent = None
    if urgent:
        yield _sse("urgent", urgent)
    events: queue.Queue[tuple[str, Any] | None] = queue.Queue()
    outcome: dict[str, Any] = {}

    def work() -> None:
        def on_stage(stage: str, ms: float | None) -> None:
            events.put(("stage", {"stage": stage, "ms": None if ms is None else round(ms, 1)}))

        try:
            with request.app.state.slots, stage_listener(on_stage):
                outcome["turn"] = state.chat.answer_turn(
                    body.question,
                    body.conversation_id,
                    on_draft=lambda d: events.put(("draft", {"text": d})),
                    route="api-stream",
                    fallback_language=body.language,
                )
        except Exception:
            log.exception("api answer failed")
        finally:
            events.put(None)

    threading.Thread(target=work, name="api-answer", daemon=True).start()
    while (item := events.get()) is not None:
        yield _sse(*item)
    turn = outcome.get("turn")
    if turn is None:
        _finish(request, 500)
        yield _sse("error", {"detail": "the answer failed"})
        return
    _claim(state, who, turn)
    _finish(request, 200, turn.trace_id, turn.conversation_id)
    yield _sse("answer", _public(turn))


def build_api() -> FastAPI:
    """The API as its own app (mounted at /api/v1), so its OpenAPI document lists these endpoints only.
    It reads the shared state from the parent app's ``state.chatbot`` (set by ``attach``)."""
    api = FastAPI(
        title="Certified chatbot API",
        version="1",
        openapi_url="/openapi.json",
        docs_url=None,
        redoc_url=None,
    )
    api.include_router(build_router())
    return api


def attach(app: Any, state: Any) -> FastAPI:
    """Mount the API on ``app`` at /api/v1 sharing ``state`` (call before mounting a page at /)."""
    api = build_api()
    api.state.chatbot = state
    # answers are CPU-bound: at most server.answer_concurrency at a time, the rest wait (as on the page)
    api.state.slots = threading.BoundedSemaphore(state.settings.server.answer_concurrency)
    app.mount(API_PREFIX, api)
    return api

"""One FastAPI app on 127.0.0.1: `/` patient chat, `/review` clinician review, `/evaluate` Likert evaluation,
`/login` and `/logout`, `/healthz`, and the JSON API under `/api/v1` (chatbot.api). Built by `chatbot serve`
(and by the tests, in-process)."""

from __future__ import annotations

import logging
import threading
from typing import Any

from fastapi import Request

from chatbot.memory import CertifiedMemory
from chatbot.service import ChatService
from chatbot.store import auth, conversations, evals, ratelimit, reviews
from chatbot.store.db import Store, open_store

log = logging.getLogger(__name__)


class AppState:
    """What every page shares: settings, pipeline services, the database and the answer memory."""

    def __init__(
        self, settings: Any, services: Any = None, store: Store | None = None, memory_embedder: Any = None
    ) -> None:
        from chatbot.pipeline import Services

        self.settings = settings
        self.services = services or Services(settings)
        self.store = store or open_store(settings)
        if "content_gate" not in getattr(self.services, "__dict__", {}):  # the gate reads this app's database
            from chatbot.content_gate import ContentGate

            self.services.content_gate = ContentGate(self.store, settings)
        self.memory = CertifiedMemory(self.store, self.services, memory_embedder)
        self.chat = ChatService(settings, self.services, self.store, self.memory)

    def pipeline_choices(self) -> list[str]:
        from chatbot.pipeline import pipeline_names

        return pipeline_names()

    def pipeline_config(self, pipeline: str) -> dict[str, Any]:
        s = self.settings
        return {
            "pipeline": pipeline,
            "embedding": s.embedding.model_dump(mode="json"),
            "retrieval": s.retrieval.model_dump(mode="json"),
            "rerank": s.rerank.model_dump(mode="json"),
            "llm_model": s.llm.model,
            "collection": self.services.collection_name,
        }

    def create_session(self, name: str, questions: list[dict[str, Any]], pipelines: list[str], who=None) -> int:
        """Generate every (question, pipeline) answer once, through the pipeline only (no memory), and freeze."""
        from chatbot.answer import answer
        from chatbot.pipeline import get_pipeline

        for p in pipelines:
            get_pipeline(p)  # unknown names fail before any work
        return evals.create_session(
            self.store,
            name,
            questions,
            pipelines,
            lambda text, p: answer(text, self.services, p),
            who=who,
            config={p: self.pipeline_config(p) for p in pipelines},
        )


def _housekeeping(state: AppState, stop: threading.Event) -> None:
    """Retention purge and auth pruning at start, then hourly."""
    while True:
        try:
            n = conversations.purge_expired(state.store, state.settings.store.retention_days)
            auth.prune_auth(state.store, state.settings.server)
            ratelimit.prune(state.store)
            if n:
                log.info("retention: deleted %d conversations", n)
        except Exception:  # never let housekeeping kill the server
            log.exception("housekeeping failed")
        if stop.wait(3600):
            return


def create_app(
    settings: Any, services: Any = None, store: Store | None = None, warm: bool = True, memory_embedder: Any = None
):
    import gradio as gr
    from fastapi import FastAPI
    from fastapi.responses import JSONResponse, Response
    from starlette.middleware.cors import CORSMiddleware

    from ui.content import build_content_app
    from ui.evaluate import build_evaluate_app
    from ui.patient import CSS, build_patient_app
    from ui.review import build_review_app
    from ui.security import PROTECTED, AccessGate, OriginCheck, add_login_routes, gradio_user

    state = AppState(settings, services, store, memory_embedder)
    if warm:  # load models and build lazy indexes now, not on the first patient's question
        from chatbot.answer import answer
        from chatbot.language import warm_up

        warm_up()  # the language models (a few seconds, ~330 MB), also when the answer below fails
        try:
            answer("How much folic acid should I take?", state.services, settings.retrieval.pipeline)
        except Exception:  # e.g. no index yet: the page still serves, and says so per question
            log.exception("warm-up answer failed")
        if settings.store.memory_enabled:
            state.memory.vector("warm up")
    app = FastAPI(title="Certified chatbot", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.chatbot = state
    add_login_routes(app, state)

    @app.get("/healthz", include_in_schema=False)
    def healthz():
        # ok or not ok and nothing else: row counts would tell anyone how the service is used
        try:
            reviews.counts(state.store)  # the database answers
        except Exception:  # noqa: BLE001 - any failure is "not ok"
            log.exception("healthz: the database does not answer")
            return JSONResponse({"ok": False}, status_code=503)
        return JSONResponse({"ok": True})

    from chatbot.api import attach

    attach(app, state)  # /api/v1 (its own OpenAPI document), before the patient page takes "/"

    @app.get("/metrics", include_in_schema=False)
    def metrics(request: Request):
        # Prometheus exposition for API token holders only (401 without one: counts say how it is used)
        from chatbot.api import bearer_token
        from chatbot.observability import metrics_text
        from chatbot.store import tokens

        if tokens.authenticate(state.store, bearer_token(request)) is None:
            return JSONResponse({"detail": "a valid API token is required"}, 401, {"WWW-Authenticate": "Bearer"})
        return Response(metrics_text(), media_type="text/plain; version=0.0.4")

    common = dict(footer_links=[], run_history=False, ssr_mode=False, mcp_server=False, show_error=True)
    review = build_review_app(state)
    evaluate = build_evaluate_app(state)
    patient = build_patient_app(state)
    content = build_content_app(state)
    for path, staff_app, max_size in (
        ("/review", review, "2mb"),
        ("/evaluate", evaluate, "2mb"),
        ("/content", content, "20mb"),  # PDF leaflets
    ):
        gr.mount_gradio_app(
            app,
            staff_app,
            path=path,
            auth_dependency=gradio_user(state, PROTECTED[path]),
            max_file_size=max_size,
            **common,
        )
    gr.mount_gradio_app(app, patient, path="/", css=CSS, max_file_size=0, **common)
    app.add_middleware(AccessGate, state=state)
    # Our CORS policy replaces Gradio's (which lets any localhost origin, or any origin at all behind a proxy,
    # read responses with credentials): only trusted origins may read cross-origin.
    app.add_middleware(
        CORSMiddleware,
        allow_origins=list(settings.server.trusted_origins),
        allow_credentials=True,
        allow_methods=["GET", "POST"],
        allow_headers=["content-type"],
    )
    app.add_middleware(OriginCheck, trusted_origins=settings.server.trusted_origins)  # outermost: runs first

    stop = threading.Event()
    threading.Thread(target=_housekeeping, args=(state, stop), daemon=True, name="housekeeping").start()
    app.state.stop_housekeeping = stop
    return app


def serve(settings: Any, host: str | None = None, port: int | None = None) -> None:
    import uvicorn

    host = host or settings.server.host
    port = port or settings.server.port
    from chatbot.observability import configure_logging

    configure_logging(settings.server.log_format)
    app = create_app(settings)
    print(f"serving on http://{host}:{port}/  (/review, /evaluate, /login)", flush=True)
    uvicorn.run(app, host=host, port=port, log_config=None, access_log=True, timeout_graceful_shutdown=5)

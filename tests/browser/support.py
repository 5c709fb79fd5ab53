"""Shared by the UI and browser tests: a tiny certified index, an in-process server on 127.0.0.1, users,
logins and raw Gradio event calls (join the queue, read the event stream)."""

from __future__ import annotations

import json
import os
import threading
import time
import uuid
from pathlib import Path
from typing import Any

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import httpx  # noqa: E402

from chatbot.settings import DEMO_CORPUS, Settings  # noqa: E402
from tests.ports import free_port  # noqa: E402,F401  (re-exported to the browser tests)

# A few demo cards: enough for three distinct links per answer, small enough to embed in seconds.
DEMO_CARDS = (
    "en-preg-caffeine.md",
    "en-preg-alcohol.md",
    "en-preg-folic-acid.md",
    "en-baby-fever-in-babies.md",
    "en-baby-safe-sleep-sids.md",
    "en-baby-breastfeeding-latch.md",
    "en-preg-morning-sickness.md",
    "en-preg-foods-to-avoid.md",
    "en-preg-signs-of-labour.md",
)
PASSWORD = "correct-horse-battery"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def ui_settings(data_dir: Path, **server: Any) -> Settings:
    return Settings(
        paths={"data_dir": data_dir},
        index={"collection": "ui-tests", "exact": True},
        embedding={"model": "minilm", "threads": 1},
        retrieval={"pipeline": "dense+rerank", "top_k": 50, "top_n": 3},
        rerank={"kind": "fusion", "fusion_embedder": "none"},
        server={"stream_delay_ms": 0, **server},
    )


def build_services(settings: Settings, embedder: Any = None, cards: tuple[str, ...] = DEMO_CARDS):
    """Services over a tiny index of demo cards (real MiniLM unless an embedder is given)."""
    from chatbot.pipeline import Services
    from corpus.importers import read_corpus
    from corpus.segmenter import segment_documents

    services = Services(settings)
    if embedder is not None:
        services.__dict__["embedder"] = embedder
    docs = read_corpus([DEMO_CORPUS / c for c in cards]).documents
    services.index.sync(segment_documents(docs, settings.corpus.segment_max_chars, settings.corpus.segment_min_chars))
    return services


class LiveServer:
    """uvicorn in a background thread of the test process, on a free loopback port."""

    def __init__(self, app: Any) -> None:
        import uvicorn

        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.app = app

    def __enter__(self) -> LiveServer:
        self.thread.start()
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                if httpx.get(self.url + "/healthz", timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                time.sleep(0.2)
        raise RuntimeError("server did not start")

    def __exit__(self, *exc: Any) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=15)
        self.app.state.stop_housekeeping.set()


def add_users(store: Any) -> None:
    from chatbot.store.auth import add_user

    for name, role in (("clara", "clinician"), ("eva", "evaluator"), ("ada", "admin"), ("evan", "evaluator")):
        add_user(store, name, PASSWORD, role)


def login(base: str, username: str, password: str = PASSWORD) -> httpx.Client:
    """An httpx client holding a session cookie (raises when the login fails)."""
    client = httpx.Client(base_url=base, timeout=30)
    r = client.post("/login", data={"username": username, "password": password}, follow_redirects=False)
    if r.status_code != 303:
        raise AssertionError(f"login {username}: {r.status_code} {r.text[:200]}")
    return client


def dependencies(client: httpx.Client, prefix: str) -> list[dict[str, Any]]:
    config = client.get(f"{prefix}/config").json()
    return config["dependencies"]


def call_event(
    client: httpx.Client, prefix: str, fn_index: int, data: list[Any], timeout: float = 60, session_hash: str = ""
) -> dict:
    """Run one Gradio event the way the browser does (queue/join, then the SSE stream); returns the final
    message, or {'http_status': N} when the join itself was refused. Events of one page visit share a
    session_hash (Gradio keeps updated choices per session)."""
    session_hash = session_hash or uuid.uuid4().hex[:10]
    r = client.post(
        f"{prefix}/gradio_api/queue/join",
        json={"data": data, "fn_index": fn_index, "session_hash": session_hash, "event_data": None, "trigger_id": None},
    )
    if r.status_code != 200:
        return {"http_status": r.status_code, "body": r.text[:300]}
    deadline = time.time() + timeout
    with client.stream("GET", f"{prefix}/gradio_api/queue/data", params={"session_hash": session_hash}) as stream:
        for line in stream.iter_lines():
            if time.time() > deadline:
                raise TimeoutError("event did not complete")
            if not line.startswith("data:"):
                continue
            msg = json.loads(line[5:])
            if msg.get("msg") == "process_completed":
                return msg
    raise AssertionError("event stream ended without completion")


def call_direct(
    client: httpx.Client, prefix: str, fn_index: int, data: list[Any], headers: dict[str, str] | None = None
) -> httpx.Response:
    """Run one unqueued Gradio event (queue=False: page load, thumbs) the way the browser does."""
    return client.post(
        f"{prefix}/gradio_api/run/predict",
        json={"data": data, "fn_index": fn_index, "session_hash": uuid.uuid4().hex[:10]},
        headers=headers or {},
    )


def ask_api(
    client: httpx.Client,
    question: str,
    session_hash: str = "",
    history: list[Any] | None = None,
    conv: dict[str, Any] | None = None,
) -> dict:
    """Ask on the patient page through its two events (answer, then stream), as the browser does: the chat
    history and the conversation state (a hidden component the browser holds) go back with each event. To
    continue a conversation pass the previous result's ``output.data[0]`` (history) and ``[1]`` (state)."""
    session_hash = session_hash or uuid.uuid4().hex[:10]
    first = call_event(client, "", 0, [question, history or [], conv], session_hash=session_hash)
    if not first.get("success"):
        return first
    history, conv = first["output"]["data"][0], first["output"]["data"][1]
    return call_event(client, "", 1, [history, conv], session_hash=session_hash)

"""The JSON API (/api/v1) on a live uvicorn server on 127.0.0.1: its own OpenAPI document, bearer tokens
(401 without one, revoked ones refused), the per-token rate limit in the database (429 + Retry-After),
conversation and feedback ownership, server-sent events (urgent first, answer last), the audit rows (no
question text), health and readiness. A fake embedder keeps this about the web layer."""

from __future__ import annotations

import json

import httpx
import pytest

from tests.browser.support import LiveServer, build_services, ui_settings
from tests.conftest import FakeEmbedder

pytest.importorskip("gradio")

QUESTION = "Does a fever in a baby need a doctor?"
RED_FLAG = "My 3 week old baby has a fever, does a fever in a baby need a doctor?"


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    from chatbot.store import tokens
    from ui.app import create_app

    settings = ui_settings(tmp_path_factory.mktemp("api-data"))
    app = create_app(settings, build_services(settings, FakeEmbedder()), memory_embedder=FakeEmbedder())
    store = app.state.chatbot.store
    with LiveServer(app) as server:
        server.store = store
        server.tokens = {
            "portal": tokens.create_token(store, "portal", 100),
            "app": tokens.create_token(store, "app", 100),
            "tight": tokens.create_token(store, "tight", 2),
        }
        yield server


def client(live, token: str | None = None) -> httpx.Client:
    headers = {"authorization": f"Bearer {token}"} if token else {}
    return httpx.Client(base_url=live.url + "/api/v1", headers=headers, timeout=60)


def test_the_openapi_document_lists_the_api_endpoints_only(live):
    doc = httpx.get(live.url + "/api/v1/openapi.json", timeout=30).json()
    assert sorted(doc["paths"]) == ["/answer", "/feedback", "/health", "/ready"]
    assert set(doc["paths"]["/answer"]) == {"post"}
    assert "AnswerResponse" in doc["components"]["schemas"]


def test_without_a_valid_token_every_call_is_refused_with_401(live):
    for token in (None, "cb_not-a-token"):
        with client(live, token) as c:
            r = c.post("/answer", json={"question": QUESTION})
            assert (r.status_code, r.headers["www-authenticate"]) == (401, "Bearer")
            r = c.post("/feedback", json={"conversation_id": "x", "turn_id": 1, "value": 1})
            assert r.status_code == 401
    r = httpx.post(live.url + "/api/v1/answer", json={"question": QUESTION}, headers={"authorization": "Basic x"})
    assert r.status_code == 401


def test_an_answer_has_reply_links_status_urgent_and_a_trace_id_stored_with_the_turn(live):
    from chatbot.store import reviews, tokens

    with client(live, live.tokens["portal"]) as c:
        r = c.post("/answer", json={"question": QUESTION, "language": "en"})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["status"] == "answered" and body["urgent"] is False
    assert len(body["links"]) == 3 and all(link["url"].startswith("http") for link in body["links"])
    assert "trace" not in body and "question" not in body
    turn = reviews.get_turn(live.store, body["turn_id"])
    assert turn["trace"]["trace_id"] == body["trace_id"]
    audit = tokens.calls(live.store, 1)[0]
    assert audit["route"] == "/api/v1/answer" and audit["status"] == 200
    assert (audit["trace_id"], audit["conversation_id"]) == (body["trace_id"], body["conversation_id"])
    assert QUESTION not in json.dumps(tokens.calls(live.store))  # the audit never keeps the question


def test_a_token_continues_and_rates_only_its_own_conversations(live):
    with client(live, live.tokens["portal"]) as mine, client(live, live.tokens["app"]) as other:
        first = mine.post("/answer", json={"question": QUESTION}).json()
        conv = first["conversation_id"]
        again = mine.post("/answer", json={"question": "Is a rash normal?", "conversation_id": conv})
        assert again.status_code == 200 and again.json()["conversation_id"] == conv
        r = other.post("/answer", json={"question": QUESTION, "conversation_id": conv})
        assert (r.status_code, r.json()["detail"]) == (404, "unknown conversation")
        vote = {"conversation_id": conv, "turn_id": first["turn_id"], "value": -1}
        assert other.post("/feedback", json=vote).status_code == 404
        r = mine.post("/feedback", json=vote)
        assert (r.status_code, r.json()) == (200, {"ok": True})
        assert mine.post("/feedback", json={**vote, "turn_id": first["turn_id"] + 10_000}).status_code == 404
        assert mine.post("/feedback", json={**vote, "value": 5}).status_code == 422
    from chatbot.store import reviews

    assert reviews.get_turn(live.store, first["turn_id"])["feedback"] == -1


def test_over_the_rate_limit_the_api_answers_429_with_retry_after(live):
    with client(live, live.tokens["tight"]) as c:
        assert [
            c.post("/feedback", json={"conversation_id": "x", "turn_id": 1, "value": 1}).status_code for _ in range(2)
        ] == [404, 404]
        r = c.post("/answer", json={"question": QUESTION})
    assert r.status_code == 429
    assert 1 <= int(r.headers["retry-after"]) <= 60


def test_a_revoked_token_is_refused(live):
    from chatbot.store import tokens

    token = tokens.create_token(live.store, "short-lived", 10)
    with client(live, token) as c:
        assert c.post("/feedback", json={"conversation_id": "x", "turn_id": 1, "value": 1}).status_code == 404
        assert tokens.revoke_token(live.store, "short-lived") is True
        assert c.post("/feedback", json={"conversation_id": "x", "turn_id": 1, "value": 1}).status_code == 401
    assert tokens.revoke_token(live.store, "short-lived") is False
    with pytest.raises(ValueError, match="already exists"):
        tokens.create_token(live.store, "portal")


def _events(text: str) -> list[tuple[str, dict]]:
    out = []
    for block in text.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines())
        out.append((lines["event"], json.loads(lines["data"])))
    return out


def test_streamed_answer_sends_urgent_first_then_stages_then_the_answer(live):
    with client(live, live.tokens["portal"]) as c:
        r = c.post("/answer", json={"question": RED_FLAG, "stream": True})
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
    events = _events(r.text)
    names = [name for name, _ in events]
    assert names[0] == "urgent" and names[-1] == "answer", names
    assert "stage" in names[1:-1]
    urgent, answer = events[0][1], events[-1][1]
    assert urgent["urgent"] is True and urgent["urgent_message"].startswith("URGENT")
    assert answer["urgent"] is True and answer["urgent_message"] == urgent["urgent_message"]
    assert answer["urgent_links"] == urgent["urgent_links"]
    assert answer["trace_id"] and answer["turn_id"]


def test_health_and_ready_report_index_and_database(live):
    with client(live) as c:  # no token needed: booleans only, no counts
        assert c.get("/health").json() == {"status": "ok"}
        r = c.get("/ready")
    assert r.status_code == 200
    assert r.json()["ready"] is True
    assert {k: v for k, v in r.json()["checks"].items() if k != "llm"} == {"database": True, "index": True}


def _fill(store, key: str, limit: int) -> None:
    """Use up ``key``'s limit in this one-minute window and the next: the request that follows may cross a window
    boundary (the limit counts fixed windows), and on a loaded machine it did (session 33)."""
    import time

    from chatbot.store import ratelimit

    now = time.time()
    for when in (now, now + 60):
        for _ in range(limit):
            ratelimit.hit(store, key, limit, now=when)


def _clear(store) -> None:
    from sqlalchemy import delete

    from chatbot.store.models import RateCounter

    with store.session() as s:
        s.execute(delete(RateCounter))


def test_one_client_address_over_its_limit_gets_429_whatever_the_token(live):
    limit = live.app.state.chatbot.settings.server.api_client_rate_per_minute
    _fill(live.store, "api|127.0.0.1", limit)
    try:
        for token in (live.tokens["portal"], live.tokens["app"], None):
            with client(live, token) as c:
                r = c.post("/answer", json={"question": QUESTION})
            assert (r.status_code, r.json()["detail"]) == (429, "rate limit exceeded for this client")
            assert 1 <= int(r.headers["retry-after"]) <= 60
    finally:
        _clear(live.store)
    with client(live, live.tokens["portal"]) as c:
        assert c.post("/answer", json={"question": QUESTION}).status_code == 200


def test_one_client_address_over_the_chat_limit_is_asked_to_wait_and_nothing_is_answered(live):
    from sqlalchemy import func, select

    from chatbot.store.models import Turn
    from tests.browser.support import ask_api

    with live.store.session() as s:
        before = s.scalar(select(func.count(Turn.id)))
    _fill(live.store, "chat|127.0.0.1", live.app.state.chatbot.settings.server.chat_rate_per_minute)
    try:
        out = str(ask_api(httpx.Client(base_url=live.url, timeout=60), QUESTION)["output"])
    finally:
        _clear(live.store)
    assert "You have asked many questions in a short time. Please wait" in out and "Sources" not in out
    with live.store.session() as s:
        assert s.scalar(select(func.count(Turn.id))) == before


def test_metrics_reveal_nothing_without_a_token_and_count_answers_and_stages_with_one(live):
    r = httpx.get(live.url + "/metrics", timeout=30)
    assert (r.status_code, r.json()) == (401, {"detail": "a valid API token is required"})
    assert httpx.get(live.url + "/metrics", headers={"authorization": "Bearer cb_wrong"}).status_code == 401
    with client(live, live.tokens["app"]) as c:
        assert c.post("/answer", json={"question": QUESTION}).status_code == 200
    r = httpx.get(live.url + "/metrics", headers={"authorization": f"Bearer {live.tokens['app']}"}, timeout=30)
    assert r.status_code == 200
    samples = {line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1]) for line in r.text.splitlines() if line[:1] != "#"}
    assert samples['chatbot_answers_total{route="api",status="answered"}'] >= 1
    assert samples['chatbot_stage_seconds_count{stage="retrieve"}'] >= 1
    assert samples["chatbot_answers_in_progress"] == 0


def test_an_answer_logs_one_json_line_with_trace_id_and_stage_timings_but_no_question(live, caplog):
    from chatbot.observability import JsonFormatter

    with caplog.at_level("INFO", logger="chatbot.requests"), client(live, live.tokens["app"]) as c:
        body = c.post("/answer", json={"question": QUESTION}).json()
    records = [r for r in caplog.records if r.name == "chatbot.requests" and r.fields["trace_id"] == body["trace_id"]]
    assert len(records) == 1
    line = json.loads(JsonFormatter().format(records[0]))
    assert (line["msg"], line["event"], line["route"], line["status"]) == ("answer", "answer", "api", "answered")
    assert (line["refusal"], line["urgent"], line["fallback"]) == (False, False, False)
    assert line["stages_ms"]["total"] > 0 and "retrieve" in line["stages_ms"]
    assert "question" not in line and QUESTION not in json.dumps(line)


def test_ready_is_503_when_the_index_or_the_database_is_down(live, monkeypatch):
    index = live.app.state.chatbot.services.index

    def down() -> int:
        raise RuntimeError("index server unreachable")

    monkeypatch.setattr(index, "count", down)
    r = httpx.get(live.url + "/api/v1/ready", timeout=30)
    assert r.status_code == 503
    assert (r.json()["ready"], r.json()["checks"]["index"], r.json()["checks"]["database"]) == (False, False, True)
    monkeypatch.undo()
    engine = live.app.state.chatbot.store.engine

    def no_database():
        raise RuntimeError("database unreachable")

    monkeypatch.setattr(engine, "connect", no_database)
    r = httpx.get(live.url + "/api/v1/ready", timeout=30)
    monkeypatch.undo()
    assert r.status_code == 503
    assert (r.json()["checks"]["database"], r.json()["checks"]["index"]) == (False, True)
    assert httpx.get(live.url + "/api/v1/ready", timeout=30).status_code == 200

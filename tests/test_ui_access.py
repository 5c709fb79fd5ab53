"""Access control of every route and Gradio event endpoint, as anonymous, evaluator, clinician and admin;
login rate limiting, session expiry, logout, redirects. A fake embedder keeps this about the web layer."""

from __future__ import annotations

import time
from datetime import timedelta

import httpx
import pytest

from tests.browser.support import (
    PASSWORD,
    LiveServer,
    add_users,
    ask_api,
    build_services,
    call_direct,
    call_event,
    dependencies,
    free_port,
    login,
    ui_settings,
)
from tests.conftest import FakeEmbedder

pytest.importorskip("gradio")

SUBPATHS = ["/", "/config", "/gradio_api/info", "/theme.css", "/gradio_api/file=/etc/hostname"]


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    from ui.app import create_app

    settings = ui_settings(tmp_path_factory.mktemp("access-data"))
    app = create_app(settings, build_services(settings, FakeEmbedder()), memory_embedder=FakeEmbedder())
    add_users(app.state.chatbot.store)
    with LiveServer(app) as server:
        server.state = app.state.chatbot
        anon = httpx.Client(base_url=server.url, timeout=30)
        # one answered question so the review queue and its trace are not empty
        assert "Sources" in str(ask_api(anon, "Does a fever in a baby need a doctor?")["output"])
        yield server


@pytest.fixture(scope="module")
def clients(live):
    return {
        "anonymous": httpx.Client(base_url=live.url, timeout=30),
        "evaluator": login(live.url, "eva"),
        "clinician": login(live.url, "clara"),
        "admin": login(live.url, "ada"),
    }


ALLOWED = {
    "/review": {"clinician", "admin"},
    "/evaluate": {"evaluator", "admin"},
    "/content": {"editor", "clinician", "admin"},
}


@pytest.mark.parametrize("prefix", ["/review", "/evaluate", "/content"])
@pytest.mark.parametrize("who", ["anonymous", "evaluator", "clinician", "admin"])
def test_every_route_under_a_protected_page_needs_the_right_role(clients, prefix, who):
    client = clients[who]
    for sub in SUBPATHS:
        r = client.get(prefix + sub, follow_redirects=False)
        if who in ALLOWED[prefix]:
            assert r.status_code != 401 and "not allowed for your role" not in r.text, (prefix + sub, r.status_code)
        else:
            assert r.status_code == (401 if who == "anonymous" else 403), (prefix + sub, r.status_code)
    for sub in ("/gradio_api/queue/join", "/gradio_api/upload", "/gradio_api/run/predict"):
        r = client.post(prefix + sub, json={"data": [], "fn_index": 0, "session_hash": "x"})
        if who not in ALLOWED[prefix]:
            assert r.status_code == (401 if who == "anonymous" else 403), (prefix + sub, r.status_code)


@pytest.mark.parametrize("prefix", ["/review", "/evaluate", "/content"])
def test_anonymous_page_visit_is_sent_to_the_login_page(clients, prefix):
    r = clients["anonymous"].get(prefix + "/", headers={"accept": "text/html"}, follow_redirects=False)
    assert r.status_code == 303
    assert r.headers["location"] == f"/login?next={prefix}"


@pytest.mark.parametrize("prefix", ["/review", "/evaluate", "/content"])
def test_every_event_handler_refuses_callers_without_the_role(clients, prefix):
    deps = dependencies(clients["admin"], prefix)
    assert deps, "the page has event handlers"
    for fn_index, dep in enumerate(deps):
        assert dep["api_visibility"] == "private"  # hidden from the API page and the Gradio clients
        for who in ("anonymous", "evaluator", "clinician"):
            if who in ALLOWED[prefix]:
                continue
            result = call_event(clients[who], prefix, fn_index, [None] * len(dep["inputs"]))
            assert result.get("http_status") == (401 if who == "anonymous" else 403), (prefix, fn_index, who)


def test_the_review_data_reaches_a_clinician_through_the_event_api(clients, live):
    deps = dependencies(clients["clinician"], "/review")
    loaded = call_event(clients["clinician"], "/review", 0, ["All"], session_hash="visit1")
    assert loaded["success"] is True
    choices = loaded["output"]["data"][1]["choices"]
    turn_id = choices[0][1]
    open_fn = next(i for i, d in enumerate(deps) if d["targets"][0][1] == "change" and len(d["outputs"]) == 10)
    detail = call_event(clients["clinician"], "/review", open_fn, [turn_id], session_hash="visit1")
    assert detail["success"] is True
    assert detail["output"]["data"][6]["candidates"]  # the full trace (JSON output), for a clinician only


def test_the_patient_api_serves_answers_but_never_traces_or_review_data(clients):
    anon = clients["anonymous"]
    info = anon.get("/gradio_api/info").json()
    assert info == {"named_endpoints": {}, "unnamed_endpoints": {}}
    deps = dependencies(anon, "")
    assert len(deps) == 6  # (submit, send) x (answer, stream), thumbs, page language: nothing else is public
    result = ask_api(anon, "Is a fever dangerous for a baby?")
    payload = str(result["output"])
    assert "Sources" in payload
    for secret in ("candidates", "trace", "segment_id", "dense", "timings_ms"):
        assert secret not in payload


def test_handlers_check_the_session_themselves(live):
    """Defence in depth: even a request that got past the gate is refused inside the handler."""
    import gradio as gr

    from ui.security import require

    class FakeRequest:
        def __init__(self, cookies):
            self.cookies = cookies

    with pytest.raises(gr.Error):
        require(live.state, FakeRequest({}), "clinician")
    token = login(live.url, "eva").cookies["cb_session"]
    with pytest.raises(gr.Error):
        require(live.state, FakeRequest({"cb_session": token}), "clinician", "admin")
    assert require(live.state, FakeRequest({"cb_session": token}), "evaluator").username == "eva"


def test_session_expires_when_idle_and_after_logout(live):
    from chatbot.store.auth import _token_hash
    from chatbot.store.models import AuthSession

    client = login(live.url, "clara")
    assert client.get("/review/config").status_code == 200
    with live.state.store.session() as s:
        row = s.get(AuthSession, _token_hash(client.cookies["cb_session"]))
        row.last_seen -= timedelta(minutes=live.state.settings.server.session_idle_minutes + 1)
    assert client.get("/review/config").status_code == 401

    client = login(live.url, "clara")
    with live.state.store.session() as s:
        row = s.get(AuthSession, _token_hash(client.cookies["cb_session"]))
        row.expires_at -= timedelta(hours=live.state.settings.server.session_max_hours)
    assert client.get("/review/config").status_code == 401

    client = login(live.url, "clara")
    token = client.cookies["cb_session"]
    assert client.get("/logout", follow_redirects=False).status_code == 303
    assert httpx.get(live.url + "/review/config", cookies={"cb_session": token}).status_code == 401


def test_login_redirects_only_to_our_pages(live):
    client = httpx.Client(base_url=live.url)
    for target, expected in (
        ("https://evil.example/", "/evaluate/"),
        ("/review", "/evaluate/"),
        ("/evaluate", "/evaluate/"),
    ):
        r = client.post("/login", data={"username": "eva", "password": PASSWORD, "next": target})
        assert r.status_code == 303 and r.headers["location"] == expected
    r = client.post("/login", data={"username": "clara", "password": PASSWORD, "next": "/review"})
    assert r.headers["location"] == "/review/"
    cookie = r.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie


def test_login_is_rate_limited_per_address_and_an_outsider_cannot_lock_a_clinician_out(tmp_path):
    """Own app and database: the limit counts per client address, which the other tests share."""
    from fastapi.testclient import TestClient

    from chatbot.store import auth
    from chatbot.store.db import open_store
    from ui.app import create_app

    settings = ui_settings(tmp_path / "data", login_max_failures=3, login_window_s=60)
    store = open_store(settings)
    auth.add_user(store, "clara", PASSWORD, "clinician")
    services = build_services(settings, FakeEmbedder(), cards=("en-preg-caffeine.md",))
    app = create_app(settings, services, store, memory_embedder=FakeEmbedder())
    with TestClient(app) as client:
        for _ in range(3):
            assert client.post("/login", data={"username": "clara", "password": "wrong-guess"}).status_code == 401
        r = client.post("/login", data={"username": "clara", "password": PASSWORD}, follow_redirects=False)
        assert r.status_code == 429  # the guessing address waits for the window, even with the right password
    # clara, from her own address, is not locked out by the outsider's failures: a back-off, then in
    start = time.perf_counter()
    token, who = auth.login(store, "clara", PASSWORD, "claras-address", settings.server)
    assert who.username == "clara" and token
    assert time.perf_counter() - start >= 0.5  # login_backoff_s(3 failures, limit 3)
    assert auth.login(store, "nobody", "x" * 10, "third-address", settings.server) is None
    actions = [e["action"] for e in auth.audit_entries(store)]
    assert actions.count("login_failed") >= 3 and "login_throttled" in actions
    app.state.stop_housekeeping.set()


def test_login_backoff_grows_past_the_limit_and_is_capped():
    from chatbot.store.auth import login_backoff_s

    assert [login_backoff_s(n, 3) for n in (0, 2, 3, 4, 5, 9)] == [0.0, 0.0, 0.5, 1.0, 2.0, 4.0]


def _fn(deps: list[dict], elem_target: int, event: str) -> int:
    return next(i for i, d in enumerate(deps) if d["targets"][0] == [elem_target, event])


def test_a_clinician_picks_a_better_segment_from_the_top_50_and_approves_it(clients, live):
    from chatbot.store import reviews

    client = clients["clinician"]
    config = client.get("/review/config").json()
    ids = {c.get("props", {}).get("elem_id"): c["id"] for c in config["components"]}
    deps = config["dependencies"]
    visit = "pick-visit"
    loaded = call_event(client, "/review", 0, ["All"], session_hash=visit)  # fn 0: the page's load event
    turn_id = loaded["output"]["data"][1]["choices"][0][1]
    detail = call_event(client, "/review", _fn(deps, ids["queue"], "change"), [turn_id], session_hash=visit)
    picks = detail["output"]["data"][5]["choices"]
    shown = {link["segment_id"] for link in reviews.get_turn(live.state.store, turn_id)["links"]}
    label, chosen = next(p for p in picks if p[1] not in shown)  # a top-50 segment that was not shown
    approve = _fn(deps, ids["approve"], "click")
    held = detail["output"]["data"][0]  # the turn under review: the hidden field the browser holds and sends back
    done = call_event(
        client, "/review", approve, [held, "relevant", "not relevant", None, [chosen], "better", "All"],
        session_hash=visit,
    )  # fmt: skip
    assert done["success"] is True, done
    assert "Approved" in done["output"]["data"][0]
    with live.state.store.session() as s:
        from chatbot.store.models import Approval

        approval = s.query(Approval).order_by(Approval.id.desc()).first()
        links, reply = approval.links, approval.reply
    assert links[0]["segment_id"] == chosen
    assert label.split(" — ", 1)[1][:100] in reply  # its certified text is now the reply
    turn = reviews.get_turn(live.state.store, turn_id)
    assert turn["links"][1] not in links  # marked not relevant
    verdicts = [(v["segment_id"], v["relevant"], v["source"]) for v in reviews.link_verdicts(live.state.store)]
    assert (chosen, True, "picked") in verdicts


def test_an_admin_creates_a_session_from_the_page_and_an_evaluator_cannot(clients, live):
    from chatbot.store import evals

    deps = dependencies(clients["admin"], "/evaluate")
    create = next(i for i, d in enumerate(deps) if len(d["inputs"]) == 4)
    pasted = '{"id": "1", "text": "Is coffee safe in pregnancy?", "type": "evaluative"}\n{"text": "Fever in a baby?"}'
    out = call_event(clients["admin"], "/evaluate", create, ["from-page", None, pasted, ["dense"]])
    assert out["success"] is True and "2 questions" in out["output"]["data"][0]
    sid = evals.session_id_by_name(live.state.store, "from-page")
    assert evals.progress(live.state.store, sid, 999) == (0, 2)
    refused = call_event(clients["evaluator"], "/evaluate", create, ["evil", None, pasted, ["dense"]])
    assert refused["success"] is False  # the handler itself refuses a non-admin
    import pytest as _pytest

    with _pytest.raises(LookupError):
        evals.session_id_by_name(live.state.store, "evil")


PAGE_WORDS = {
    "it": [
        "Risposte da contenuti certificati",
        "## Domande su gravidanza e neonato",
        "Scrivi la tua domanda…",
        "Invia",
    ],
    "en": ["Answers from certified content", "## Pregnancy & baby questions", "Type your question…", "Send"],
}


def test_the_patient_page_speaks_the_browser_language_then_the_patients(clients):
    from chatbot.stages.safety import SAFE_REPLY
    from ui.i18n import t

    anon = clients["anonymous"]
    load = next(i for i, d in enumerate(dependencies(anon, "")) if d["targets"][0][1] == "load")

    def loaded(accept: str) -> list:
        data = call_direct(anon, "", load, [], {"accept-language": accept}).json()["data"]
        assert data[4]["value"] == f"<small>{t(accept[:2], 'retention', days=30)}</small>"
        return [data[0]["label"], data[1]["value"].split("\n")[0], data[2]["placeholder"], data[3]["value"]]

    assert loaded("it-IT,it;q=0.9,en;q=0.8") == PAGE_WORDS["it"]
    assert loaded("en-GB,en;q=0.9,it;q=0.5") == PAGE_WORDS["en"]

    def asked(question: str) -> tuple[str, list]:
        data = ask_api(anon, question)["output"]["data"]
        words = [data[3]["value"].split("\n")[0], data[4]["placeholder"], data[5]["value"]]
        return data[0][-1]["content"][0]["text"], words  # the chat history itself (the label came first)

    reply, words = asked("Quanto paracetamolo posso dare al mio bambino di 5 kg?")
    assert reply.startswith(SAFE_REPLY[("dosage", "it")] + "\n\n**Fonti:**\n1. [")
    assert words == PAGE_WORDS["it"][1:]
    reply, words = asked("How much paracetamol can I give my 5 kg baby?")
    assert reply.startswith(SAFE_REPLY[("dosage", "en")] + "\n\n**Sources:**\n1. [")
    assert words == PAGE_WORDS["en"][1:]


# -- CSRF -----------------------------------------------------------------------------------------------------


def test_state_changing_requests_from_another_origin_are_refused(clients, live):
    from chatbot.store import auth, reviews

    clinician, evaluator, anon = clients["clinician"], clients["evaluator"], clients["anonymous"]
    config = clinician.get("/review/config").json()
    ids = {c.get("props", {}).get("elem_id"): c["id"] for c in config["components"]}
    flag = _fn(config["dependencies"], ids["flag"], "click")
    refresh = _fn(config["dependencies"], ids["queue-filter"], "change")
    turn_id = reviews.list_queue(live.state.store, "all")[-1]["id"]
    body = {"data": [turn_id, None, None, None, [], "forged", "All"], "fn_index": flag, "session_hash": "csrf1"}
    same_site = f"http://127.0.0.1:{free_port()}"  # another port of this host: the SameSite cookie still travels
    reviews_before = reviews.counts(live.state.store)["reviews"]
    audit_before = len(auth.audit_entries(live.state.store, limit=10_000))
    forged = [
        {"origin": same_site},
        {"origin": "https://evil.example"},
        {"origin": "null"},
        {"referer": "https://evil.example/page.html"},
        {"sec-fetch-site": "cross-site"},
        {"sec-fetch-site": "same-site"},
    ]
    for headers in forged:
        for client, path, payload in (
            (clinician, "/review/gradio_api/queue/join", body),  # a review action with a valid session
            (evaluator, "/evaluate/gradio_api/queue/join", {**body, "fn_index": 1}),  # a rating
            (anon, "/gradio_api/queue/join", {**body, "fn_index": 0}),  # a patient question
            (anon, "/gradio_api/run/predict", {**body, "fn_index": 4}),  # thumbs
            (anon, "/login", None),
            (clinician, "/logout", None),
        ):
            if payload is None:
                r = client.post(path, data={"username": "clara", "password": PASSWORD}, headers=headers)
            else:
                r = client.post(path, json=payload, headers=headers)
            assert (r.status_code, r.json()) == (403, {"detail": "cross-origin request refused"}), (path, headers)
            assert "set-cookie" not in r.headers
    assert reviews.counts(live.state.store)["reviews"] == reviews_before
    assert len(auth.audit_entries(live.state.store, limit=10_000)) == audit_before  # not even a failed login
    for headers in ({"sec-fetch-site": "same-site"}, {"referer": f"{same_site}/page.html"}):  # e.g. an <img>
        r = clinician.get("/logout", headers=headers, follow_redirects=False)
        assert (r.status_code, r.json()) == (403, {"detail": "cross-origin request refused"})
    assert clinician.get("/review/config").status_code == 200  # the forged logouts did not log out

    # the same requests from the page itself go through; reading (GET) is never refused
    own = {"origin": live.url, "sec-fetch-site": "same-origin"}
    read = clinician.get("/review/config", headers={"origin": same_site})
    assert read.status_code == 200
    assert "access-control-allow-origin" not in read.headers  # ...but another origin's script cannot read it
    ok = clinician.post(
        "/review/gradio_api/queue/join",
        json={"data": ["All"], "fn_index": refresh, "session_hash": "csrf2"},
        headers=own,
    )
    assert ok.status_code == 200
    r = httpx.post(live.url + "/login", data={"username": "clara", "password": PASSWORD}, headers=own)
    assert r.status_code == 303 and "cb_session=" in r.headers["set-cookie"]


def test_origin_rules_and_trusted_origins():
    from ui.security import cross_origin_reason

    def reason(**headers: str) -> str | None:
        raw = [(k.replace("_", "-").encode(), v.encode()) for k, v in headers.items()]
        return cross_origin_reason(raw, frozenset({"https://chat.example.org"}))

    host = "127.0.0.1:7860"
    assert reason(host=host, origin="http://127.0.0.1:7860") is None
    assert reason(host=host, origin="http://127.0.0.1:7861") == "origin http://127.0.0.1:7861"
    assert reason(host=host, origin="http://localhost:7860") == "origin http://localhost:7860"
    assert reason(host="10.0.0.5:7860", origin="https://chat.example.org/") is None  # behind the proxy
    assert reason(host=host, origin="null") == "opaque origin"
    assert reason(host=host, referer="http://127.0.0.1:7860/review/") is None
    assert reason(host="10.0.0.5:7860", referer="https://chat.example.org/review/") is None
    assert reason(host=host, referer="https://evil.example/x") == "referer from another site"
    assert reason(host=host, sec_fetch_site="same-site") == "sec-fetch-site same-site"
    assert reason(host=host, sec_fetch_site="same-origin") is None
    assert reason(host=host) is None  # curl, httpx, the load test: no web page can send this


def test_trusted_origins_come_from_the_settings(tmp_path):
    from fastapi.testclient import TestClient

    from ui.app import create_app

    settings = ui_settings(tmp_path / "data", trusted_origins=["https://chat.example.org"])
    services = build_services(settings, FakeEmbedder(), cards=("en-preg-caffeine.md",))
    app = create_app(settings, services, warm=False, memory_embedder=FakeEmbedder())
    with TestClient(app) as client:
        form = {"username": "nobody", "password": "wrong-guess"}
        assert client.post("/login", data=form, headers={"origin": "https://chat.example.org"}).status_code == 401
        assert client.post("/login", data=form, headers={"origin": "https://other.example"}).status_code == 403
        cors = {o: client.get("/config", headers={"origin": o}).headers.get("access-control-allow-origin")
                for o in ("https://chat.example.org", "http://localhost:9999")}  # fmt: skip
        assert cors == {"https://chat.example.org": "https://chat.example.org", "http://localhost:9999": None}
    app.state.stop_housekeeping.set()


# -- revoking a certified answer -------------------------------------------------------------------------------


def test_a_clinician_revokes_an_approval_through_the_review_api_and_memory_stops_serving_it(clients, live):
    from chatbot.store import auth, reviews
    from chatbot.store.auth import Principal
    from ui.review import approval_choices

    store, anon = live.state.store, clients["anonymous"]
    question = "Can my baby sleep in my bed with me?"  # the fake embedder sees only "sleep"
    ask_api(anon, question)
    turn = reviews.get_turn(store, reviews.list_queue(store, "all")[0]["id"])
    assert turn["question"] == question
    clara = Principal(next(u for u in _users(store) if u[1] == "clara")[0], "clara", "clinician")
    approval = {"reply": "Certified bed-sharing answer.", "links": turn["links"], "language": "en",
                "segment_ids": [x["segment_id"] for x in turn["links"]],
                **live.state.memory.approval_fields(question)}  # fmt: skip
    approval_id = reviews.record_review(store, clara, turn["id"], "approved", "ok", approval=approval)["approval_id"]
    paraphrase = "sleep: may the baby share my bed?"
    served = ask_api(anon, paraphrase)["output"]["data"][0][-1]["content"][0]["text"]
    assert served.startswith("Certified bed-sharing answer.") and "Answer approved by a clinician." in served

    client = clients["clinician"]
    config = client.get("/review/config").json()
    ids = {c.get("props", {}).get("elem_id"): c["id"] for c in config["components"]}
    revoke = _fn(config["dependencies"], ids["revoke"], "click")
    visit = "revoke-visit"
    loaded = call_event(client, "/review", 0, ["All"], session_hash=visit)  # the page load lists the approvals
    listed = [tuple(c) for c in loaded["output"]["data"][4]["choices"]]
    assert listed == approval_choices(reviews.list_approvals(store))
    assert (f"#{approval_id} · {question} · en · approved by clara · served 1×", approval_id) in listed
    assert call_event(clients["evaluator"], "/review", revoke, [approval_id, "x", False]) == {
        "http_status": 403, "body": '{"detail": "not allowed for your role"}'}  # fmt: skip
    no_reason = call_event(client, "/review", revoke, [approval_id, " ", False], session_hash=visit)
    assert no_reason["success"] is False and no_reason["output"]["error"] == "Say why the approval is revoked."

    done = call_event(client, "/review", revoke, [approval_id, "Bed-sharing advice under review.", False],
                      session_hash=visit)  # fmt: skip

    assert done["success"] is True
    message, remaining, detail, comment = done["output"]["data"]
    assert message == f"⛔ Approval #{approval_id} revoked: memory no longer serves it."
    assert approval_id not in [c[1] for c in remaining["choices"]]
    assert "**Revoked by** clara on " in detail and detail.endswith(": Bed-sharing advice under review.")
    assert comment == ""
    again = ask_api(anon, paraphrase)["output"]["data"][0][-1]["content"][0]["text"]
    assert "Certified bed-sharing answer." not in again and "Answer approved by a clinician." not in again
    entry = auth.audit_entries(store)[0]
    assert (entry["user"], entry["action"], entry["target"], entry["detail"]["comment"]) == (
        "clara", "approval_revoked", f"approval {approval_id}", "Bed-sharing advice under review.")  # fmt: skip
    assert reviews.get_turn(store, turn["id"])["review_state"] == "revoked"


def test_invalid_questions_get_a_polite_reply_and_are_still_recorded(clients, live):
    """Empty, over-long, binary and non-text questions through the patient page's API: the polite message as
    the reply, no links, and a stored turn with status invalid_input (control characters escaped)."""
    from sqlalchemy import select

    from chatbot.store.models import Turn

    anon = clients["anonymous"]
    cases = [  # (question sent, chat bubble shown back, reply, stored question)
        ("", None, "Please type a question.\nScrivi una domanda.", ""),
        (
            "x" * 2500,
            "x" * 2000 + "…",
            "Your question is too long (2500 characters); please keep it under 2000.\n"
            "La domanda è troppo lunga (2500 caratteri); resta sotto i 2000.",
            "x" * 2500,
        ),
        (
            "\x00\x01\x02\x03 abc",
            "\\x00\\x01\\x02\\x03 abc",
            "Your message contains unreadable characters (binary data?). Please type your question in words.\n"
            "Il messaggio contiene caratteri illeggibili (dati binari?). Scrivi la tua domanda a parole.",
            "\\x00\\x01\\x02\\x03 abc",
        ),
        (None, None, "The question must be text.\nLa domanda deve essere un testo.", "None"),
    ]
    for question, bubble, reply, stored in cases:
        result = ask_api(anon, question)
        assert result["success"] is True
        history = result["output"]["data"][0]
        shown = [(m["role"], m["content"][0]["text"]) for m in history]
        assert shown == ([("user", bubble)] if bubble else []) + [("assistant", reply)]  # no sources
        with live.state.store.session() as s:
            turn = s.scalars(select(Turn).where(Turn.question == stored).order_by(Turn.id.desc())).first()
            assert turn is not None, repr(question)[:40]
            assert (turn.status, turn.reply, turn.links, turn.urgent) == ("invalid_input", reply, [], False)


def _users(store) -> list[tuple[int, str]]:
    from chatbot.store.models import User

    with store.session() as s:
        return [(u.id, u.username) for u in s.query(User)]


def test_healthz_says_ok_or_not_ok_and_nothing_else(tmp_path, monkeypatch):
    from fastapi.testclient import TestClient

    from chatbot.store import reviews
    from chatbot.store.db import open_store
    from ui.app import create_app

    settings = ui_settings(tmp_path / "data")
    services = build_services(settings, FakeEmbedder(), cards=("en-preg-caffeine.md",))
    app = create_app(settings, services, open_store(settings), memory_embedder=FakeEmbedder())
    with TestClient(app) as client:
        ok = client.get("/healthz")
        assert (ok.status_code, ok.json()) == (200, {"ok": True})

        def database_down(store):
            raise OSError("database file gone")

        monkeypatch.setattr(reviews, "counts", database_down)
        down = client.get("/healthz")
        assert (down.status_code, down.json()) == (503, {"ok": False})
    app.state.stop_housekeeping.set()

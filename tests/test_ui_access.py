"""Access control of every route and Gradio event endpoint, as anonymous, evaluator, clinician and admin;
login rate limiting, session expiry, logout, redirects. A fake embedder keeps this about the web layer."""

from __future__ import annotations

from datetime import timedelta

import httpx
import pytest

from tests.browser.support import (
    PASSWORD,
    LiveServer,
    add_users,
    ask_api,
    build_services,
    call_event,
    dependencies,
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


ALLOWED = {"/review": {"clinician", "admin"}, "/evaluate": {"evaluator", "admin"}}


@pytest.mark.parametrize("prefix", ["/review", "/evaluate"])
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


@pytest.mark.parametrize("prefix", ["/review", "/evaluate"])
def test_anonymous_page_visit_is_sent_to_the_login_page(clients, prefix):
    r = clients["anonymous"].get(prefix + "/", headers={"accept": "text/html"}, follow_redirects=False)
    assert r.status_code == 303
    assert r.headers["location"] == f"/login?next={prefix}"


@pytest.mark.parametrize("prefix", ["/review", "/evaluate"])
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
    assert len(deps) == 5  # (submit, send) x (answer, stream), thumbs: nothing else lives on the public app
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


def test_login_is_rate_limited_per_user_and_per_address(tmp_path):
    """Own app and database: the limit counts per client address, which the other tests share."""
    from fastapi.testclient import TestClient

    from chatbot.store import auth, repo
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
        assert r.status_code == 429  # even the right password waits for the window
    with pytest.raises(auth.LoginRateLimited):  # per username, from any address
        auth.login(store, "clara", PASSWORD, "another-address", settings.server)
    assert auth.login(store, "nobody", "x" * 10, "third-address", settings.server) is None
    actions = [e["action"] for e in repo.audit_entries(store)]
    assert actions.count("login_failed") >= 3 and "login_throttled" in actions
    app.state.stop_housekeeping.set()


def _fn(deps: list[dict], elem_target: int, event: str) -> int:
    return next(i for i, d in enumerate(deps) if d["targets"][0] == [elem_target, event])


def test_a_clinician_picks_a_better_segment_from_the_top_50_and_approves_it(clients, live):
    from chatbot.store import repo

    client = clients["clinician"]
    config = client.get("/review/config").json()
    ids = {c.get("props", {}).get("elem_id"): c["id"] for c in config["components"]}
    deps = config["dependencies"]
    visit = "pick-visit"
    loaded = call_event(client, "/review", 0, ["All"], session_hash=visit)  # fn 0: the page's load event
    turn_id = loaded["output"]["data"][1]["choices"][0][1]
    detail = call_event(client, "/review", _fn(deps, ids["queue"], "change"), [turn_id], session_hash=visit)
    picks = detail["output"]["data"][5]["choices"]
    shown = {link["segment_id"] for link in repo.get_turn(live.state.store, turn_id)["links"]}
    label, chosen = next(p for p in picks if p[1] not in shown)  # a top-50 segment that was not shown
    approve = _fn(deps, ids["approve"], "click")
    done = call_event(
        client, "/review", approve, [None, "relevant", "not relevant", None, [chosen], "better", "All"],
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
    turn = repo.get_turn(live.state.store, turn_id)
    assert turn["links"][1] not in links  # marked not relevant
    verdicts = [(v["segment_id"], v["relevant"], v["source"]) for v in repo.link_verdicts(live.state.store)]
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

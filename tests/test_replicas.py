"""Stateless replicas: two app instances (two uvicorn servers, each its own FastAPI + Gradio app, store engine
and answer memory) over one SQLite database, as two replicas behind a balancer. A patient conversation
started on one continues on the other and its earlier reply can be rated there; an API conversation too; a
staff login made on one is valid on the other (and a logout on one ends it on both); a review opened on one
is approved on the other, and a Likert session started on one is rated on the other (the page visit's state is
in the browser and the database); one token's rate limit is counted across both. A fake embedder keeps this
about the web layer."""

from __future__ import annotations

import uuid

import httpx
import pytest
from sqlalchemy import select

from tests.browser.support import LiveServer, add_users, ask_api, build_services, call_event, login, ui_settings
from tests.conftest import FakeEmbedder

pytest.importorskip("gradio")

FIRST = "Does a fever in a baby need a doctor?"
SECOND = "How much caffeine can I have when pregnant?"


@pytest.fixture(scope="module")
def replicas(tmp_path_factory):
    from ui.app import create_app

    data = tmp_path_factory.mktemp("replicas-data")
    servers = []
    for _ in range(2):  # one settings file, one database, one index: two processes' worth of app state
        settings = ui_settings(data)
        app = create_app(settings, build_services(settings, FakeEmbedder()), memory_embedder=FakeEmbedder())
        servers.append(LiveServer(app))
    a, b = servers
    assert a.app.state.chatbot.store is not b.app.state.chatbot.store
    with a, b:
        add_users(a.app.state.chatbot.store)
        yield a, b


def _turns(store, conversation_id: str) -> list[tuple[int, int | None]]:
    from chatbot.store.models import Turn

    with store.session() as s:
        rows = s.execute(
            select(Turn.id, Turn.feedback).where(Turn.conversation_id == conversation_id).order_by(Turn.id)
        ).all()
    return [(r[0], r[1]) for r in rows]


def _like_fn(client: httpx.Client) -> int:
    config = client.get("/config").json()
    chat = next(c["id"] for c in config["components"] if c.get("props", {}).get("elem_id") == "chat")
    return next(i for i, d in enumerate(config["dependencies"]) if [chat, "like"] in d["targets"])


def test_a_patient_conversation_started_on_one_replica_continues_and_is_rated_on_the_other(replicas):
    a, b = replicas
    on_a = httpx.Client(base_url=a.url, timeout=60)
    on_b = httpx.Client(base_url=b.url, timeout=60)

    first = ask_api(on_a, FIRST)
    assert first["success"] is True, first
    history, conv = first["output"]["data"][0], first["output"]["data"][1]
    assert set(conv) == {"conversation_id", "turns", "pending", "lang"} and conv["pending"] is None
    assert conv["lang"] == "en"  # the language of a next message too short to tell (chatbot.language)
    assert "trace" not in str(conv)  # the state the browser holds carries no trace
    (turn_a,) = _turns(a.app.state.chatbot.store, conv["conversation_id"])
    assert conv["turns"] == {"1": turn_a[0]}

    second = ask_api(on_b, SECOND, history=history, conv=conv)  # the next event lands on the other replica
    assert second["success"] is True, second
    history2, conv2 = second["output"]["data"][0], second["output"]["data"][1]
    assert conv2["conversation_id"] == conv["conversation_id"]
    assert [m["role"] for m in history2] == ["user", "assistant", "user", "assistant"]
    turns = _turns(b.app.state.chatbot.store, conv["conversation_id"])
    assert len(turns) == 2 and turns[0] == turn_a
    assert conv2["turns"] == {"1": turns[0][0], "3": turns[1][0]}

    # a thumbs-up on B for the reply answered on A, and a thumbs-down on A for the one answered on B
    for client, index, liked in ((on_b, 1, True), (on_a, 3, False)):
        r = client.post(
            "/gradio_api/run/predict",
            json={
                "data": [conv2],
                "fn_index": _like_fn(client),
                "session_hash": uuid.uuid4().hex[:10],
                "event_data": {"index": index, "value": history2[index]["content"], "liked": liked},
            },
        )
        assert r.status_code == 200, r.text
    assert _turns(a.app.state.chatbot.store, conv["conversation_id"]) == [(turns[0][0], 1), (turns[1][0], -1)]


def test_a_forged_conversation_id_starts_a_new_conversation(replicas):
    a, _ = replicas
    out = ask_api(httpx.Client(base_url=a.url, timeout=60), FIRST, conv={"conversation_id": "../../x", "turns": {}})
    assert out["success"] is True
    new_id = out["output"]["data"][1]["conversation_id"]
    assert new_id != "../../x" and str(uuid.UUID(new_id)) == new_id


def test_an_api_conversation_continues_on_the_other_replica_and_only_its_token_rates_it(replicas):
    from chatbot.store import tokens

    a, b = replicas
    store = a.app.state.chatbot.store
    portal, other = tokens.create_token(store, "portal", 100), tokens.create_token(store, "other", 100)

    def api(server, token):
        return httpx.Client(base_url=server.url + "/api/v1", headers={"authorization": f"Bearer {token}"}, timeout=60)

    r1 = api(a, portal).post("/answer", json={"question": FIRST})
    assert r1.status_code == 200, r1.text
    cid = r1.json()["conversation_id"]
    r2 = api(b, portal).post("/answer", json={"question": SECOND, "conversation_id": cid})
    assert r2.status_code == 200 and r2.json()["conversation_id"] == cid
    assert [t for t, _ in _turns(store, cid)] == [r1.json()["turn_id"], r2.json()["turn_id"]]
    assert api(b, other).post("/answer", json={"question": SECOND, "conversation_id": cid}).status_code == 404
    vote = {"conversation_id": cid, "turn_id": r1.json()["turn_id"], "value": 1}
    assert api(b, portal).post("/feedback", json=vote).status_code == 200
    assert api(a, other).post("/feedback", json=vote).status_code == 404
    assert _turns(store, cid)[0] == (r1.json()["turn_id"], 1)


def test_a_login_made_on_one_replica_is_valid_on_the_other_until_logged_out_on_either(replicas):
    a, b = replicas
    on_a = login(a.url, "clara")
    cookie = on_a.cookies["cb_session"]
    on_b = httpx.Client(base_url=b.url, timeout=30, cookies={"cb_session": cookie})
    assert on_a.get("/review/config").status_code == 200
    assert on_b.get("/review/config").status_code == 200
    assert on_b.get("/evaluate/config").status_code == 403  # the role travels with the session too
    assert on_b.get("/logout", follow_redirects=False).status_code == 303
    assert on_a.get("/review/config").status_code == 401  # logged out on B: gone on A as well


def test_one_tokens_rate_limit_is_counted_across_both_replicas(replicas):
    from chatbot.store import tokens

    a, b = replicas
    token = tokens.create_token(a.app.state.chatbot.store, "tight", 3)
    vote = {"conversation_id": str(uuid.uuid4()), "turn_id": 1, "value": 1}
    statuses = []
    for server in (a, b, a, b):  # an unknown conversation: 404, still a counted call
        client = httpx.Client(base_url=server.url + "/api/v1", headers={"authorization": f"Bearer {token}"})
        statuses.append(client.post("/feedback", json=vote).status_code)
    assert statuses == [404, 404, 404, 429]


def _fns(client: httpx.Client, prefix: str) -> tuple[dict[str, int], list[dict]]:
    config = client.get(f"{prefix}/config").json()
    return {c.get("props", {}).get("elem_id"): c["id"] for c in config["components"]}, config["dependencies"]


def _fn(deps: list[dict], target: int, event: str) -> int:
    return next(i for i, d in enumerate(deps) if d["targets"][0] == [target, event])


def test_a_review_opened_on_one_replica_is_approved_on_the_other(replicas):
    # the page visit's state (the turn under review, the lists it filled) is held by the browser, not by the
    # replica that filled it: B has never seen this visit (another session_hash) and still takes the approval
    from chatbot.store import reviews
    from chatbot.store.models import Approval, Review

    a, b = replicas
    store = a.app.state.chatbot.store
    asked = ask_api(httpx.Client(base_url=a.url, timeout=60), "Is a fever dangerous for a baby?")
    turn_id = asked["output"]["data"][1]["turns"]["1"]
    on_a = login(a.url, "clara")
    on_b = httpx.Client(base_url=b.url, timeout=60, cookies={"cb_session": on_a.cookies["cb_session"]})
    ids, deps = _fns(on_a, "/review")

    loaded = call_event(on_a, "/review", 0, ["All"], session_hash="visit-on-a")
    assert turn_id in [value for _, value in loaded["output"]["data"][1]["choices"]]
    detail = call_event(on_a, "/review", _fn(deps, ids["queue"], "change"), [turn_id], session_hash="visit-on-a")
    assert detail["output"]["data"][0] == turn_id  # the turn under review, in the browser's hidden field
    shown = {link["segment_id"] for link in reviews.get_turn(store, turn_id)["links"]}
    chosen = next(value for _, value in detail["output"]["data"][5]["choices"] if value not in shown)

    approve = [turn_id, "relevant", None, None, [chosen], "picked on B", "All"]
    done = call_event(on_b, "/review", _fn(deps, ids["approve"], "click"), approve, session_hash="visit-on-b")
    assert done["success"] is True, done
    assert done["output"]["data"][0].startswith("✅ Approved (approval #")
    with store.session() as s:
        approval = s.query(Approval).order_by(Approval.id.desc()).first()
        review = s.get(Review, approval.review_id)
        assert (review.turn_id, review.decision, approval.links[0]["segment_id"]) == (turn_id, "approved", chosen)

    # what the browser sends is checked against the database, whichever replica gets it
    forged = call_event(on_b, "/review", _fn(deps, ids["approve"], "click"), [10**9, None, None, None, [], "", "All"])
    assert forged["success"] is False and "No turn 1000000000" in str(forged)
    bad = call_event(on_b, "/review", _fn(deps, ids["queue"], "change"), ["1; drop table"], session_hash="x")
    assert bad["success"] is False and "Not a valid question" in str(bad)


def test_a_likert_session_started_on_one_replica_is_rated_on_the_other(replicas):
    from chatbot.store import evals

    a, b = replicas
    store = a.app.state.chatbot.store
    admin = login(a.url, "ada")
    create = next(
        i for i, d in enumerate(admin.get("/evaluate/config").json()["dependencies"]) if len(d["inputs"]) == 4
    )
    pasted = '{"text": "Is coffee safe in pregnancy?"}\n{"text": "Does a fever in a baby need a doctor?"}'
    assert call_event(admin, "/evaluate", create, ["across-replicas", None, pasted, ["dense"]])["success"] is True
    sid = evals.session_id_by_name(store, "across-replicas")
    evaluator = store_user_id(store, "evan")

    on_a = login(a.url, "evan")
    on_b = httpx.Client(base_url=b.url, timeout=60, cookies={"cb_session": on_a.cookies["cb_session"]})
    ids, deps = _fns(on_a, "/evaluate")
    started = call_event(on_a, "/evaluate", _fn(deps, ids["start"], "click"), [sid], session_hash="eval-on-a")
    session_state, current = started["output"]["data"][0], started["output"]["data"][1]
    assert session_state == sid and set(current) == {"answer_id", "links"}

    rating = ["yes", "relevant", "relevant", "relevant", "4", "5", "4", "3", "4", "rated on B"]
    submit = _fn(deps, ids["submit"], "click")
    first = call_event(on_b, "/evaluate", submit, [sid, current, *rating], session_hash="eval-on-b")
    assert first["success"] is True, first
    assert evals.progress(store, sid, evaluator) == (1, 2)
    following = first["output"]["data"][0]  # the next answer, now held by the browser
    assert following["answer_id"] != current["answer_id"]

    second = call_event(on_a, "/evaluate", submit, [sid, following, *rating], session_hash="eval-on-a")
    assert second["success"] is True, second
    assert evals.progress(store, sid, evaluator) == (2, 2)
    assert second["output"]["data"][0] is None  # done: nothing left to rate


def store_user_id(store, username: str) -> int:
    from chatbot.store.models import User

    with store.session() as s:
        return s.execute(select(User.id).where(User.username == username)).scalar_one()

"""The local deployment with real servers (scripts/deploy_local.sh): PostgreSQL, a `chroma run` server, two app
replicas and HAProxy in front, on unusual loopback ports. Answers and the patient page through the balancer;
one replica killed (SIGKILL) mid-load: no request lost beyond the ones in flight at that moment, and every
answer and rating the balancer acknowledged is in the database. Then `down` stops everything it started.

MiniLM and nine demo cards keep it near two minutes on a busy box (the product's defaults only cost more
start-up time, not other behaviour)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from chatbot.settings import DEMO_CORPUS
from tests.browser.support import DEMO_CARDS, ask_api

pytestmark = pytest.mark.integration

PROJECT_ROOT = Path(__file__).resolve().parent.parent  # the source checkout
SCRIPT = PROJECT_ROOT / "scripts" / "deploy_local.sh"
QUESTIONS = [
    "How much folic acid should I take before pregnancy?",
    "Is it safe to drink coffee when pregnant?",
    "Does a fever in a baby need a doctor?",
    "How should my baby sleep safely?",
]
SESSIONS = 8  # each: answer, thumbs up, a second answer in the same conversation, thumbs down
CONCURRENCY = 4


def _ports_free(base: int) -> bool:
    for p in (base, base + 1, base + 2, base + 20, base + 21, base + 22):
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", p)) == 0:
                return False
    return True


def _base_port() -> int:
    # unusual loopback ports, away from other people's servers, and below Linux's ephemeral range (32768-60999): an
    # outgoing connection's local port there made a replica's bind fail for 8 minutes (uvicorn exit 3)
    for base in range(27910, 28900, 37):
        if _ports_free(base):
            return base
    raise RuntimeError("no free port range for the deployment")


def _env_file(path: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)


@pytest.fixture(scope="module")
def deployment():
    for exe, package in (("haproxy", "haproxy"), ("runuser", "util-linux")):
        if shutil.which(exe) is None and not Path(f"/usr/sbin/{exe}").exists():
            pytest.fail(f"{exe} is not installed: `make system-deps` installs the Debian package {package}")
    if not list(Path("/usr/lib/postgresql").glob("*/bin/initdb")):
        pytest.fail("PostgreSQL is not installed: `make system-deps` installs the Debian package postgresql")
    tmp = Path(tempfile.mkdtemp(prefix="chatbot-deploy-test-", dir="/tmp"))  # PostgreSQL's user must reach it
    cards = tmp / "cards"
    cards.mkdir()
    for name in DEMO_CARDS:
        shutil.copy(DEMO_CORPUS / name, cards / name)
    port = _base_port()
    env = {
        **os.environ,
        "DEPLOY_PORT": str(port),
        "DEPLOY_DIR": str(tmp / "deploy"),
        "DEPLOY_INGEST": str(cards),
        "CHATBOT_EMBEDDING__MODEL": "minilm",
        "CHATBOT_STORE__MEMORY_EMBEDDER": "minilm",
    }
    os.chmod(tmp, 0o755)
    up = subprocess.run(["bash", str(SCRIPT), "up"], env=env, capture_output=True, text=True, timeout=600)
    try:
        assert up.returncode == 0, f"deploy_local.sh up failed:\n{up.stdout[-3000:]}\n{up.stderr[-3000:]}"
        settings = _env_file(tmp / "deploy" / "chatbot.env")
        made = subprocess.run(
            [sys.executable, "-m", "chatbot.cli", "tokens", "create", "loadtest", "--rate-per-minute", "1000"],
            env={**env, **settings},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert made.returncode == 0, made.stderr
        import json

        token = json.loads(made.stdout.strip().splitlines()[-1])["token"]
        yield {"url": f"http://127.0.0.1:{port}", "port": port, "dir": tmp / "deploy", "token": token, **settings}
    finally:
        down = subprocess.run(["bash", str(SCRIPT), "down"], env=env, capture_output=True, text=True, timeout=120)
        assert down.returncode == 0, down.stderr
        shutil.rmtree(tmp, ignore_errors=True)
        assert _ports_free(port), "something deploy_local.sh started still listens after down"


def _store(dep):
    from chatbot.settings import Settings
    from chatbot.store.db import open_store

    return open_store(Settings(store={"url": dep["CHATBOT_STORE__URL"]}), run_migrations=False)


def _db_turns(store) -> dict[int, tuple[str, int | None]]:
    from sqlalchemy import select

    from chatbot.store.models import Turn

    with store.session() as s:
        return {r[0]: (r[1], r[2]) for r in s.execute(select(Turn.id, Turn.conversation_id, Turn.feedback))}


def test_answers_and_the_patient_page_through_the_balancer(deployment):
    api = httpx.Client(
        base_url=deployment["url"] + "/api/v1", headers={"authorization": f"Bearer {deployment['token']}"}, timeout=120
    )
    llm = (deployment["dir"] / "run" / "llm.started").exists()  # our llama-server when `make llm` built it
    assert api.get("/ready").json()["checks"] == {"database": True, "index": True, "llm": llm}
    first = api.post("/answer", json={"question": QUESTIONS[0]})
    assert first.status_code == 200, first.text
    body = first.json()
    assert body["status"] == "answered" and len(body["links"]) == 3
    again = api.post("/answer", json={"question": QUESTIONS[1], "conversation_id": body["conversation_id"]})
    assert again.status_code == 200 and again.json()["conversation_id"] == body["conversation_id"]

    page = httpx.Client(base_url=deployment["url"], timeout=120)
    home = page.get("/")
    assert home.status_code == 200 and home.cookies.get("cb_replica") in {"r1", "r2"}  # the page's replica
    out = ask_api(page, QUESTIONS[2])
    assert out["success"] is True
    assert "Sources" in str(out["output"]["data"][0][-1]["content"])


def test_the_per_client_limits_count_the_address_haproxy_saw_never_a_forged_one(deployment):
    from sqlalchemy import select

    from chatbot.store.models import RateCounter

    forged = {"authorization": f"Bearer {deployment['token']}", "x-forwarded-for": "203.0.113.9"}
    through = httpx.Client(base_url=deployment["url"] + "/api/v1", headers=forged, timeout=60)
    assert through.post("/feedback", json={"conversation_id": "x", "turn_id": 1, "value": 1}).status_code == 404
    direct = f"http://127.0.0.1:{deployment['port'] + 2}/api/v1"  # a replica, from a proxy address it trusts
    vote = {"conversation_id": "x", "turn_id": 1, "value": 1}
    r = httpx.post(direct + "/feedback", headers={**forged, "x-forwarded-for": "198.51.100.7"}, timeout=60, json=vote)
    assert r.status_code == 404
    store = _store(deployment)
    try:
        with store.session() as s:
            keys = set(s.scalars(select(RateCounter.key)))
    finally:
        store.dispose()
    assert "api|127.0.0.1" in keys and "api|198.51.100.7" in keys  # HAProxy's view; the proxy's header
    assert "api|203.0.113.9" not in keys  # HAProxy replaced the client's own X-Forwarded-For


def _call(client: httpx.Client, path: str, payload: dict) -> dict:
    start = time.monotonic()
    try:
        r = client.post(path, json=payload)
        ok, body, error = r.status_code == 200, (r.json() if r.status_code == 200 else None), f"HTTP {r.status_code}"
    except httpx.HTTPError as exc:
        ok, body, error = False, None, repr(exc)
    return {"start": start, "end": time.monotonic(), "ok": ok, "body": body, "error": None if ok else error}


def test_a_replica_killed_mid_load_loses_nothing_beyond_its_requests_in_flight(deployment):
    run = deployment["dir"] / "run"
    victim_file = run / f"replica-{deployment['port'] + 1}.pid"
    victim = int(victim_file.read_text())
    headers = {"authorization": f"Bearer {deployment['token']}"}
    calls: list[dict] = []
    votes: dict[int, int] = {}  # turn id -> the vote the balancer acknowledged
    answered: dict[int, str] = {}  # turn id -> conversation id, for every acknowledged answer

    def session(i: int) -> None:
        client = httpx.Client(base_url=deployment["url"] + "/api/v1", headers=headers, timeout=180)
        conversation = None
        for n, value in ((0, 1), (1, -1)):
            q = QUESTIONS[(i + n) % len(QUESTIONS)]
            a = _call(client, "/answer", {"question": q, "conversation_id": conversation})
            calls.append(a)
            if not a["ok"]:
                return
            conversation, turn = a["body"]["conversation_id"], a["body"]["turn_id"]
            answered[turn] = conversation
            f = _call(client, "/feedback", {"conversation_id": conversation, "turn_id": turn, "value": value})
            calls.append(f)
            if f["ok"]:
                votes[turn] = value

    with ThreadPoolExecutor(CONCURRENCY) as pool:
        futures = [pool.submit(session, i) for i in range(SESSIONS)]
        deadline = time.monotonic() + 120
        while sum(1 for c in calls if c["ok"]) < 4 and time.monotonic() < deadline:
            time.sleep(0.05)  # some answers done, the others in flight on both replicas: kill one now
        killed_at = time.monotonic()
        os.kill(victim, signal.SIGKILL)
        for f in futures:
            f.result()

    failed = [c for c in calls if not c["ok"]]
    in_flight = [c for c in calls if c["start"] < killed_at < c["end"]]
    print(f"{len(calls)} calls, {len(failed)} failed, {len(in_flight)} in flight at the kill: {failed}")
    assert all(c["start"] < killed_at < c["end"] for c in failed), failed  # only requests in flight at the kill
    assert len(failed) <= CONCURRENCY
    assert sum(1 for c in calls if c["body"] is not None and "reply" in c["body"]) >= 2 * SESSIONS - CONCURRENCY
    store = _store(deployment)
    try:
        turns = _db_turns(store)
    finally:
        store.dispose()
    for turn, conversation in answered.items():  # every acknowledged answer was recorded ...
        assert turns[turn][0] == conversation
    for turn, value in votes.items():  # ... and every acknowledged vote is stored
        assert turns[turn][1] == value
    # the supervisor started the killed replica again (HAProxy sends it requests once it is ready)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and int(victim_file.read_text()) == victim:
        time.sleep(0.5)
    restarted = int(victim_file.read_text())
    assert restarted != victim
    os.kill(restarted, 0)  # alive

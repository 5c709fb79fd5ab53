"""App database: migrations, repositories, durability under kill -9, retention, qrels export, PostgreSQL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import inspect, text

from chatbot.settings import Settings
from chatbot.store import auth, conversations, evals, reviews, storable
from chatbot.store.db import current_revision, downgrade, make_engine, migrate, open_store
from chatbot.store.models import Conversation
from tests.ports import free_port

PROJECT_ROOT = Path(__file__).resolve().parent.parent
ANSWER = {
    "question": "Is coffee safe in pregnancy?",
    "reply": "Keep caffeine under 200 mg a day.",
    "links": [
        {"title": "Caffeine", "url": "https://example.org/caffeine", "segment_id": "caffeine#1"},
        {"title": "Foods", "url": "https://example.org/foods", "segment_id": "foods#1"},
        {"title": "Alcohol", "url": "https://example.org/alcohol", "segment_id": "alcohol#1"},
    ],
    "status": "answered",
    "urgent": False,
    "trace": {"pipeline": "dense", "top": [{"segment_id": "caffeine#1", "doc_id": "caffeine", "score": 0.9}]},
}


@pytest.fixture
def settings(tmp_path) -> Settings:
    return Settings(paths={"data_dir": tmp_path / "data"})


@pytest.fixture
def store(settings):
    s = open_store(settings)
    yield s
    s.dispose()


def test_migrations_create_every_table_in_wal_mode_with_full_fsync(store):
    assert current_revision(store.engine) == "0005"
    tables = set(inspect(store.engine).get_table_names())
    assert {
        "users", "auth_sessions", "login_attempts", "audit_log", "conversations", "turns", "reviews",
        "link_verdicts", "approvals", "question_sets", "eval_questions", "eval_sessions", "frozen_answers",
        "ratings", "alembic_version", "api_tokens", "api_calls", "api_conversations", "rate_counters",
        "content_documents", "content_versions", "content_state",
    } <= tables  # fmt: skip
    with store.engine.connect() as conn:
        assert conn.execute(text("PRAGMA journal_mode")).scalar() == "wal"
        assert conn.execute(text("PRAGMA synchronous")).scalar() == 2  # FULL
        assert conn.execute(text("PRAGMA foreign_keys")).scalar() == 1


def test_migrating_again_is_a_no_op_and_downgrade_upgrade_round_trips(store, settings):
    migrate(store.engine)
    downgrade(store.engine, "base")
    assert current_revision(store.engine) is None
    assert "turns" not in inspect(store.engine).get_table_names()
    migrate(store.engine)
    assert current_revision(store.engine) == "0005"


def test_the_migrated_schema_matches_the_models_and_0002_steps_back(store):
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    from chatbot.store.models import Base

    with store.engine.connect() as conn:
        assert compare_metadata(MigrationContext.configure(conn), Base.metadata) == []
    revocation = {"revoked_at", "revoked_by", "revoke_comment"}
    assert revocation <= {c["name"] for c in inspect(store.engine).get_columns("approvals")}
    downgrade(store.engine, "0001")
    assert revocation.isdisjoint({c["name"] for c in inspect(store.engine).get_columns("approvals")})
    migrate(store.engine)
    assert current_revision(store.engine) == "0005"
    downgrade(store.engine, "0002")
    assert {"api_tokens", "api_calls", "api_conversations"}.isdisjoint(inspect(store.engine).get_table_names())
    migrate(store.engine)
    assert current_revision(store.engine) == "0005"


def test_turn_feedback_queue_filters_and_review_with_audit(store):
    conv = conversations.new_conversation_id()
    tid = conversations.record_turn(store, conv, ANSWER, latency_ms=12.5)
    other = conversations.record_turn(
        store, conv, {**ANSWER, "status": "no_certified_info", "links": [], "reply": "none"}
    )
    assert conversations.set_feedback(store, conv, tid, -1)
    assert not conversations.set_feedback(store, "someone-else", tid, 1)  # only the turn's own conversation
    assert [r["id"] for r in reviews.list_queue(store, "thumbs_down")] == [tid]
    assert [r["id"] for r in reviews.list_queue(store, "flagged")] == [other]
    assert {r["id"] for r in reviews.list_queue(store, "unreviewed")} == {tid, other}

    uid = auth.add_user(store, "clara", "long-password", "clinician")
    who = auth.Principal(uid, "clara", "clinician")
    out = reviews.record_review(
        store, who, tid, "approved", "fine", {"caffeine#1": True, "alcohol#1": False},
        picked=[{"segment_id": "foods#2", "doc_id": "foods", "title": "Foods", "url": "https://example.org/foods"}],
        approval={"reply": "r", "links": ANSWER["links"][:2], "segment_ids": ["caffeine#1", "foods#1"],
                  "vector": b"\x00" * 8, "embedding_model": "fake"},
    )  # fmt: skip
    turn = reviews.get_turn(store, tid)
    assert turn["review_state"] == "approved" and turn["feedback"] == -1 and turn["latency_ms"] == 12.5
    assert turn["trace"] == ANSWER["trace"]
    verdicts = reviews.link_verdicts(store)
    assert [(v["segment_id"], v["doc_id"], v["relevant"], v["source"]) for v in verdicts] == [
        ("caffeine#1", "caffeine", True, "review"),
        ("alcohol#1", "alcohol", False, "review"),
        ("foods#2", "foods", True, "picked"),
    ]
    entry = auth.audit_entries(store)[0]
    assert (entry["user"], entry["action"], entry["target"]) == ("clara", "review_approved", f"turn {tid}")
    assert entry["detail"]["approval_id"] == out["approval_id"]
    with pytest.raises(ValueError, match="not one of the turn's links"):
        reviews.record_review(store, who, tid, "verdicts", verdicts={"elsewhere#9": True})
    assert reviews.counts(store) == {"turns": 2, "reviews": 1, "approvals": 1}


# Invalid questions as answer() returns them, and what is stored: (question, stored question, stored reply,
# trace "input" note). NUL, ESC, DEL and a lone surrogate become visible escapes; the over-long one is cut.
INVALID_INPUTS = [
    ("", "", "Please type a question.\nScrivi una domanda.", None),
    (
        "\x00\x1b\x7f\ud800 hi",
        "\\x00\\x1b\\x7f\\ud800 hi",
        "Your message contains unreadable characters (binary data?). Please type your question in words.\n"
        "Il messaggio contiene caratteri illeggibili (dati binari?). Scrivi la tua domanda a parole.",
        {"chars": 7, "escaped": 4, "truncated": False},
    ),
    (
        "a" * 12_000,
        "a" * storable.STORED_QUESTION_MAX_CHARS,
        "Your question is too long (12000 characters); please keep it under 2000.\n"
        "La domanda è troppo lunga (12000 caratteri); resta sotto i 2000.",
        {"chars": 12_000, "escaped": 0, "truncated": True},
    ),
]


def check_invalid_input_turns_are_stored_safely(store) -> None:
    """Invalid questions are recorded (status invalid_input, the polite reply, no links), control characters
    and NUL stored as visible escapes, and kept out of the review queue; an LLM draft with NUL in the trace
    is stored escaped too."""
    from types import SimpleNamespace

    from chatbot.answer import answer

    # invalid input never reaches the pipeline; the red-flag screen still runs (rules only here)
    services = SimpleNamespace(settings=Settings(), redflag_classifier=None, redflag_context=None)
    conv = conversations.new_conversation_id()
    for question, stored, reply, note in INVALID_INPUTS:
        ans = answer(question, services)
        assert (ans["status"], ans["reply"], ans["links"], ans["urgent"]) == ("invalid_input", reply, [], False)
        turn = reviews.get_turn(store, conversations.record_turn(store, conv, ans, latency_ms=1.0))
        assert (turn["question"], turn["reply"], turn["links"], turn["status"]) == (stored, reply, [], "invalid_input")
        assert turn["language"] == "unknown" and turn["flagged"] is False
        assert turn["trace"].get("input") == note
        safety = turn["trace"]["safety"]
        assert (set(safety), safety["input"]) == ({"input", "red_flag_screen"}, "invalid")
        screen = {k: v for k, v in safety["red_flag_screen"].items() if k != "ms"}
        assert screen == {"actions": [], "classifier": None, "rules": [], "urgent": False}
    drafted = {**ANSWER, "trace": {**ANSWER["trace"], "compose": {"attempts": [{"draft": "caf\x00feine"}]}}}
    turn = reviews.get_turn(store, conversations.record_turn(store, conv, drafted))
    assert turn["trace"]["compose"] == {"attempts": [{"draft": "caf\\x00feine"}]}
    assert "input" not in turn["trace"]
    assert [r["status"] for r in reviews.list_queue(store, "all")] == ["answered"]  # invalid turns are not queued
    assert reviews.counts(store)["turns"] == 4


def test_invalid_input_turns_are_recorded_with_control_characters_escaped(store):
    check_invalid_input_turns_are_stored_safely(store)


def test_storable_text_escapes_only_what_a_database_cannot_hold():
    assert storable.storable_text("a\x00b\tc\nd\re\x0bf\x85g\udfffh ✓") == (
        "a\\x00b\tc\nd\re\\x0bf\\x85g\\udfffh ✓",
        4,
    )
    assert storable.storable_question(None) == ("None", None)
    assert storable.storable_question("ok") == ("ok", None)


def test_passwords_are_hashed_and_users_validated(store):
    auth.add_user(store, "ada", "a-long-password", "admin")
    with store.engine.connect() as conn:
        stored = conn.execute(text("SELECT password_hash FROM users")).scalar()
    assert stored.startswith("scrypt$") and "a-long-password" not in stored
    assert auth.verify_password("a-long-password", stored) and not auth.verify_password("wrong", stored)
    for name, pw, role, msg in (
        ("ada", "another-password", "admin", "already exists"),
        ("bob", "short", "admin", "at least 8"),
        ("bob", "long-enough", "root", "unknown role"),
        ("b o b", "long-enough", "admin", "without spaces"),
    ):
        with pytest.raises(ValueError, match=msg):
            auth.add_user(store, name, pw, role)


def test_retention_deletes_old_conversations_but_keeps_reviews(store):
    conv_old, conv_new = conversations.new_conversation_id(), conversations.new_conversation_id()
    old_tid = conversations.record_turn(store, conv_old, ANSWER)
    conversations.record_turn(store, conv_new, ANSWER)
    uid = auth.add_user(store, "clara", "long-password", "clinician")
    reviews.record_review(
        store, auth.Principal(uid, "clara", "clinician"), old_tid, "verdicts", verdicts={"caffeine#1": True}
    )
    with store.session() as s:
        s.get(Conversation, conv_old).last_activity -= timedelta(days=31)

    assert conversations.purge_expired(store, 30) == 1
    assert conversations.purge_expired(store, 0) == 0  # 0 keeps forever
    assert [r["question"] for r in reviews.list_queue(store, "all")] == [ANSWER["question"]]
    assert reviews.get_turn(store, old_tid) is None
    assert len(reviews.link_verdicts(store)) == 1  # the judged data keeps its own copy of the question


CHILD = textwrap.dedent(
    """
    import sys
    from chatbot.settings import Settings
    from chatbot.store import auth, conversations, evals, reviews, storable
    from chatbot.store.db import open_store

    settings = Settings(paths={"data_dir": sys.argv[1]}, store={"url": sys.argv[2] or None})
    store = open_store(settings)
    clin = auth.Principal(auth.add_user(store, "clara", "long-password", "clinician"), "clara", "clinician")
    ev = auth.Principal(auth.add_user(store, "eva", "long-password", "evaluator"), "eva", "evaluator")
    answer = {"question": "q", "reply": "r", "status": "answered",
              "links": [{"title": "t", "url": "https://x.org", "segment_id": "d#1"}], "trace": {}}
    questions = [{"external_id": str(i), "text": f"question {i}", "qtype": None} for i in range(400)]
    sid = evals.create_session(store, "crash", questions, ["p"], lambda text, p: answer)
    i = 0
    while True:  # write until killed; report each write only after its commit returned
        tid = conversations.record_turn(store, f"conv-{i}", answer)
        review = reviews.record_review(store, clin, tid, "verdicts", "ok", {"d#1": i % 2 == 0})
        item = evals.next_item(store, sid, ev.id)
        rating = evals.save_rating(store, ev, item["answer_id"], {
            "q1_relevant": True, "q2_links": [True], "q3_quality": 1 + i % 5, "q4_reliability": 3,
            "q5_clarity": 3, "q6_completeness": 3, "q7_overall": 3, "comment": f"c{i}"})
        print(f"{review['review_id']} {rating}", flush=True)
        i += 1
    """
)


def crash_and_check(tmp_path: Path, url: str = "", kill_after: int = 25) -> tuple[int, int]:
    """A writer process is SIGKILLed at an arbitrary moment mid-stream; every review and rating it reported
    as committed must be in the reopened database."""
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(tmp_path / "data"), url], stdout=subprocess.PIPE, text=True, env=env
    )
    committed = []
    deadline = time.time() + 120
    try:
        while len(committed) < kill_after and time.time() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            committed.append(tuple(int(x) for x in line.split()))
        time.sleep(0.013)  # land the kill inside a later transaction, not between two
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    assert len(committed) == kill_after, "the writer did not get going"

    settings = Settings(paths={"data_dir": tmp_path / "data"}, store={"url": url or None})
    store = open_store(settings)
    with store.engine.connect() as conn:
        if store.engine.dialect.name == "sqlite":
            assert conn.execute(text("PRAGMA integrity_check")).scalar() == "ok"
        reviews = {r for (r,) in conn.execute(text("SELECT id FROM reviews"))}
        ratings = {r: c for r, c in conn.execute(text("SELECT id, comment FROM ratings"))}
    for n, (review_id, rating_id) in enumerate(committed):
        assert review_id in reviews
        assert ratings[rating_id] == f"c{n}"
    store.dispose()
    return len(reviews), len(ratings)


def test_kill_9_loses_no_committed_review_or_rating(tmp_path):
    reviews, ratings = crash_and_check(tmp_path)
    assert reviews >= 25 and ratings >= 25


def test_qrels_export_is_read_by_the_retrieval_harness(store, tmp_path, fake_embedder):
    from chatbot.pipeline import Services
    from corpus.model import Document
    from corpus.segmenter import segment_documents
    from evaluation.harness import load_judged

    settings = Settings(paths={"data_dir": tmp_path / "data"}, index={"collection": "qrels"})
    services = Services(settings)
    services.__dict__["embedder"] = fake_embedder
    docs = [Document(d, d.title(), f"https://example.org/{d}", f"All about {d}. " * 4) for d in ("caffeine", "alcohol")]
    services.index.sync(segment_documents(docs, 200, 10))
    uid = auth.add_user(store, "clara", "long-password", "clinician")
    who = auth.Principal(uid, "clara", "clinician")
    tid = conversations.record_turn(store, "c", ANSWER)
    reviews.record_review(store, who, tid, "verdicts", verdicts={"caffeine#1": True, "alcohol#1": True})
    tid2 = conversations.record_turn(store, "c", {**ANSWER, "question": "is coffee  safe in PREGNANCY?"})
    reviews.record_review(store, who, tid2, "verdicts", verdicts={"alcohol#1": False})  # later verdict wins

    from chatbot.store.qrels import export_qrels, query_id

    summary = export_qrels(store, services.index, tmp_path / "beir")
    assert summary == {"queries": 1, "judgements": 2, "relevant": 1, "documents": 2, "unknown_documents": 0}
    judged = load_judged(tmp_path / "beir")
    qid = query_id(ANSWER["question"])
    assert judged.queries == {qid: ANSWER["question"]}
    assert judged.qrels == {qid: {"caffeine": 1, "alcohol": 0}}
    corpus = [json.loads(x) for x in (tmp_path / "beir" / "corpus.jsonl").read_text().splitlines()]
    assert {c["_id"] for c in corpus} == {"caffeine", "alcohol"} and all(c["url"] for c in corpus)


def test_cli_users_add_and_eval_create_and_report(tmp_path, monkeypatch, capsys):
    import io

    from chatbot.cli import main

    monkeypatch.setenv("CHATBOT_PATHS__DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setattr("sys.stdin", io.StringIO("a-long-password\n"))
    assert main(["users", "add", "eva", "--role", "evaluator", "--password-stdin"]) == 0
    assert json.loads(capsys.readouterr().out)["role"] == "evaluator"
    monkeypatch.setattr("sys.stdin", io.StringIO("a-long-password\n"))
    assert main(["users", "add", "eva", "--role", "evaluator", "--password-stdin"]) == 2
    assert "already exists" in capsys.readouterr().err

    store = open_store(Settings(paths={"data_dir": tmp_path / "data"}))
    sid = evals.create_session(store, "s1", [{"external_id": "1", "text": "q", "qtype": "x"}], ["p"],
                               lambda t, p: {"reply": "r", "links": [], "status": "answered"})  # fmt: skip
    eva = auth.Principal(1, "eva", "evaluator")
    item = evals.next_item(store, sid, eva.id)
    evals.save_rating(store, eva, item["answer_id"], {"q1_relevant": True, "q2_links": [], "q3_quality": 4,
                      "q4_reliability": 4, "q5_clarity": 4, "q6_completeness": 4, "q7_overall": 4})  # fmt: skip
    assert main(["eval", "report", "s1", "--out", str(tmp_path / "rep"), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["overall"]["q7_overall"]["avg"] == 4.0
    assert (tmp_path / "rep" / "report.md").exists()
    assert main(["eval", "report", "nope"]) == 2


# -- PostgreSQL ---------------------------------------------------------------------------------------------


def _pg_bin() -> Path | None:
    for base in sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True):
        if (base / "initdb").exists() and (base / "pg_ctl").exists():
            return base
    return None


@pytest.fixture(scope="module")
def postgres_url():
    """A throwaway PostgreSQL server from Debian's package, in a temp dir, on a free loopback port."""
    import shutil
    import tempfile

    pytest.importorskip("psycopg")
    bindir = _pg_bin()
    if bindir is None:
        pytest.skip("PostgreSQL server binaries (Debian package postgresql) are not installed")
    prefix: list[str] = []
    if os.geteuid() == 0:  # initdb refuses root: run as the package's postgres user
        runuser = shutil.which("runuser")
        try:
            import pwd

            pwd.getpwnam("postgres")
        except KeyError:
            runuser = None
        if runuser is None:
            pytest.skip("running as root without a postgres user to run the server as")
        prefix = [runuser, "-u", "postgres", "--"]
    root = Path(tempfile.mkdtemp(prefix="chatbot-pg-", dir="/tmp"))
    port = free_port()
    data = root / "data"
    if prefix:
        shutil.chown(root, "postgres")
    pg_ctl = [*prefix, str(bindir / "pg_ctl"), "-D", str(data)]
    try:
        subprocess.run([*prefix, str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres",
                        "--no-sync", "-E", "UTF8"], check=True, capture_output=True, timeout=120)  # fmt: skip
        opts = f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=on"
        subprocess.run([*pg_ctl, "-o", opts, "-l", str(root / "log"), "-w", "-t", "60", "start"],
                       check=True, capture_output=True, timeout=90)  # fmt: skip
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as exc:
        shutil.rmtree(root, ignore_errors=True)
        pytest.skip(f"could not start PostgreSQL: {exc}")
    try:
        yield f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run([*pg_ctl, "-m", "immediate", "-w", "stop"], capture_output=True, timeout=60)
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.integration
def test_postgresql_migrations_repositories_and_kill_9(postgres_url, tmp_path):
    engine = make_engine(postgres_url)
    migrate(engine)
    assert current_revision(engine) == "0005"
    engine.dispose()
    reviews, ratings = crash_and_check(tmp_path, postgres_url, kill_after=10)
    assert reviews >= 10 and ratings >= 10
    store = open_store(Settings(paths={"data_dir": tmp_path / "data"}, store={"url": postgres_url}))
    data = evals.session_ratings(store, evals.session_id_by_name(store, "crash"))
    assert len(data["ratings"]) == ratings
    downgrade(store.engine, "base")
    assert current_revision(store.engine) is None
    store.dispose()


@pytest.mark.integration
def test_postgresql_stores_invalid_input_turns_with_nul_escaped(postgres_url, tmp_path):
    store = open_store(Settings(paths={"data_dir": tmp_path / "data"}, store={"url": postgres_url}))
    try:
        with store.engine.begin() as conn:  # the reason for escaping: PostgreSQL refuses NUL in text
            with pytest.raises(Exception, match=r"text fields cannot contain NUL \(0x00\) bytes"):
                conn.execute(text("SELECT CAST(:v AS text)"), {"v": "a\x00b"})
        with store.engine.begin() as conn:
            conn.execute(text("DELETE FROM turns"))
        check_invalid_input_turns_are_stored_safely(store)
    finally:
        store.dispose()

"""Migration 0005 upgrades a database that already holds users, turns and approvals (SQLite and PostgreSQL):
nothing is lost, the new columns start empty, and the lifecycle works on the old rows."""

from __future__ import annotations

import json
from datetime import date, datetime, timedelta

import pytest
from sqlalchemy import MetaData, inspect, select

from chatbot.store import auth
from chatbot.store import content as store_content
from chatbot.store.content_models import ContentState
from chatbot.store.db import Store, current_revision, downgrade, make_engine, migrate
from chatbot.store.models import Approval, Turn
from corpus.model import Document
from tests.test_store import postgres_url  # noqa: F401 - the PostgreSQL fixture

NOW = datetime(2026, 1, 5, 9, 30)


def fill_0004(engine) -> None:
    """Rows written by the 0004 schema, with plain inserts (today's models have columns 0004 lacks)."""
    meta = MetaData()
    meta.reflect(engine, only=["users", "conversations", "turns", "reviews", "approvals"])
    t = meta.tables
    links = [{"title": "Asthma", "url": "https://example.org/asthma", "segment_id": "page#abc@v1"}]
    with engine.begin() as conn:
        conn.execute(t["users"].insert(), [
            {"id": 1, "username": "clara", "password_hash": auth.hash_password("long-password"), "role": "clinician",
             "disabled": False, "created_at": NOW},
        ])  # fmt: skip
        conn.execute(t["conversations"].insert(), [{"id": "c1", "created_at": NOW, "last_activity": NOW}])
        conn.execute(t["turns"].insert(), [
            {"id": 1, "conversation_id": "c1", "created_at": NOW, "question": "asthma at night?", "reply": "R.",
             "links": links, "status": "answered", "urgent": False, "demo_content": False, "answered_by": "pipeline",
             "trace": {"pipeline": "dense"}, "flagged": False, "review_state": "approved"},
        ])  # fmt: skip
        conn.execute(t["reviews"].insert(), [
            {"id": 1, "turn_id": 1, "user_id": 1, "decision": "approved", "comment": "ok", "question": "q",
             "picked_segment_ids": [], "created_at": NOW},
        ])  # fmt: skip
        conn.execute(t["approvals"].insert(), [
            {"id": 1, "review_id": 1, "question": "asthma at night?", "reply": "R.", "links": links,
             "segment_ids": ["page#abc@v1"], "urgent": False, "demo_content": False, "embedding_model": "m",
             "vector": b"\x00" * 20, "approved_by": 1, "created_at": NOW, "active": True},
        ])  # fmt: skip


def upgrade_and_check(url: str) -> None:
    engine = make_engine(url)
    migrate(engine, "0004")
    fill_0004(engine)

    migrate(engine)

    assert current_revision(engine) == "0005"
    store = Store(engine)
    with store.session() as s:
        turn = s.get(Turn, 1)
        assert (turn.question, turn.links[0]["segment_id"], turn.content_versions) == ("asthma at night?",
                                                                                       "page#abc@v1", None)  # fmt: skip
        approval = s.get(Approval, 1)
        assert (approval.active, approval.suspended_at, approval.segment_ids) == (True, None, ["page#abc@v1"])
        assert s.get(ContentState, 1).generation == 0
    # the lifecycle on top of the old rows: an old approval citing the document is suspended by its withdrawal
    clara = store_content.principal(store, "clara")
    doc = Document("page", "Asthma", "https://example.org/asthma", "# Asthma\n\nText.", language="en")
    version = store_content.record_version(store, doc, "html", "page.html", "clara", clara)
    store_content.certify_switch(store, version["version_id"], clara, date.today() - timedelta(days=1))
    expired = store_content.expire_due(store, date.today(), "exclude")
    assert [(e["document"], e["suspended_approvals"]) for e in expired] == [("page", [1])]
    assert store_content.expire_due(store, date.today(), "exclude") == []
    out = store_content.withdraw(store, "page", clara, "outdated")
    assert (out["version"], out["suspended_approvals"]) == (1, [])  # suspended once, at expiry
    assert store_content.generation(store) == 3
    # and back: 0004 keeps the old rows
    downgrade(engine, "0004")
    assert "content_versions" not in inspect(engine).get_table_names()
    with engine.connect() as conn:
        meta = MetaData()
        meta.reflect(conn, only=["turns"])
        row = conn.execute(select(meta.tables["turns"].c.links)).one()
        links = row[0] if isinstance(row[0], list) else json.loads(row[0])
        assert links[0]["segment_id"] == "page#abc@v1"
    downgrade(engine, "base")
    engine.dispose()


def test_0005_upgrades_a_sqlite_database_with_data(tmp_path):
    upgrade_and_check(f"sqlite:///{tmp_path / 'old.sqlite3'}")


@pytest.mark.integration
def test_0005_upgrades_a_postgresql_database_with_data(postgres_url):  # noqa: F811
    upgrade_and_check(postgres_url)

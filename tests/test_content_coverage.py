"""Coverage view: documents per language and status with the topics missing in a language, and the topics of
recent questions that got "no certified information", grouped, counted and dated (chatbot.content_coverage)."""

from __future__ import annotations

import json
from datetime import date, datetime, timedelta

import pytest

from chatbot import cli
from chatbot.content_coverage import coverage, document_coverage, topic_key, unanswered_topics
from chatbot.settings import Settings
from chatbot.store import auth, conversations
from chatbot.store import content as store_content
from chatbot.store.db import open_store
from chatbot.store.models import Turn
from corpus.model import Document

NOW = datetime(2026, 11, 25, 12, 0)


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("CHATBOT_PATHS__DATA_DIR", str(tmp_path / "data"))
    store = open_store(Settings(paths={"data_dir": tmp_path / "data"}))
    yield store
    store.dispose()


def turn(store, question: str, status: str, language: str, days_ago: int) -> int:
    ans = {"question": question, "reply": "R.", "status": status, "language": language, "links": [], "trace": {}}
    turn_id = conversations.record_turn(store, conversations.new_conversation_id(), ans)
    with store.session() as s:
        s.get(Turn, turn_id).created_at = NOW - timedelta(days=days_ago)
    return turn_id


@pytest.fixture
def refused(store):
    """Known questions: 8 refused in the last 30 days, one refused 40 days ago, an answered and an invalid one."""
    ids = {
        "rash1": turn(store, "My baby has a rash on her tummy, is it normal?", "no_certified_info", "en", 20),
        "rash2": turn(store, "Baby rash on the tummy after a bath", "no_certified_info", "en", 10),
        "hair1": turn(store, "Can I dye my hair while pregnant?", "no_certified_info", "en", 5),
        "capelli1": turn(store, "Posso tingere i capelli in gravidanza?", "no_certified_info", "it", 4),
        "weather": turn(store, "What is the weather tomorrow?", "no_certified_info", "en", 6),
        "capelli2": turn(store, "Si possono tingere i capelli?", "no_certified_info", "it", 3),
        "rash3": turn(store, "Rashes on babies in summer", "no_certified_info", "en", 2),
        "hair2": turn(store, "Is hair dye safe in pregnancy?", "no_certified_info", "en", 1),
        "old": turn(store, "Baby rash again", "no_certified_info", "en", 40),
        "answered": turn(store, "baby rash treatment", "answered", "en", 1),
        "invalid": turn(store, "rash rash rash", "invalid_input", "en", 1),
    }
    return ids


def test_refused_questions_are_grouped_by_shared_words_with_counts_and_dates(store, refused):
    groups = unanswered_topics(store, days=30, now=NOW)

    assert groups == [
        {"words": ["baby", "rash"], "questions": 3, "languages": {"en": 3}, "first": "2026-11-05",
         "last": "2026-11-23", "turn_ids": [refused["rash1"], refused["rash2"], refused["rash3"]]},
        {"words": ["hair"], "questions": 2, "languages": {"en": 2}, "first": "2026-11-20", "last": "2026-11-24",
         "turn_ids": [refused["hair1"], refused["hair2"]]},
        {"words": ["capelli", "tingere"], "questions": 2, "languages": {"it": 2}, "first": "2026-11-21",
         "last": "2026-11-22", "turn_ids": [refused["capelli1"], refused["capelli2"]]},
        {"words": ["tomorrow", "weather"], "questions": 1, "languages": {"en": 1}, "first": "2026-11-19",
         "last": "2026-11-19", "turn_ids": [refused["weather"]]},
    ]  # fmt: skip
    assert all("examples" not in g for g in groups)  # no question text unless asked for
    # the 40-day-old question counts over 60 days; it joins the rash group
    assert [g["questions"] for g in unanswered_topics(store, days=60, now=NOW)] == [4, 2, 2, 1]
    assert unanswered_topics(store, days=0, now=NOW) == []


def test_question_texts_only_when_allowed_newest_first_and_cut(store, refused):
    long = "Rash on my baby " + "x" * 500
    turn(store, long, "no_certified_info", "en", 0)

    groups = unanswered_topics(store, days=30, with_questions=True, now=NOW)

    assert groups[0]["examples"] == [long[:200], "Rashes on babies in summer", "Baby rash on the tummy after a bath"]
    assert groups[0]["questions"] == 4
    assert groups[1]["examples"] == ["Is hair dye safe in pregnancy?", "Can I dye my hair while pregnant?"]


def test_questions_without_content_words_make_one_group(store):
    ids = [turn(store, q, "no_certified_info", "en", 1) for q in ("Is it ok?", "and now?", "Fever and a rash")]
    ids.append(turn(store, "Why?", "no_certified_info", "it", 0))

    groups = unanswered_topics(store, days=30, now=NOW)

    assert [(g["words"], g["turn_ids"], g["languages"]) for g in groups] == [
        ([], [ids[0], ids[1], ids[3]], {"en": 2, "it": 1}),
        (["fever", "rash"], [ids[2]], {"en": 1}),
    ]
    data = {"documents": {}, "topics": [], "unanswered": {"days": 30, "groups": groups}}
    from chatbot.content_coverage import coverage_lines

    assert "- 3 × (no content words) (en 2, it 1; 2026-11-24 to 2026-11-25)" in coverage_lines(data)


def test_topic_key_drops_language_parts_of_the_link():
    assert topic_key("https://www.Hospital.example.org/en/leaflets/fever/") == "hospital.example.org/leaflets/fever"
    assert topic_key("https://hospital.example.org/it/leaflets/fever") == "hospital.example.org/leaflets/fever"
    assert topic_key("https://it.nhs.example.org/sleep") == topic_key("http://en.nhs.example.org/sleep")
    assert topic_key("https://example.org/page?id=7&lang=it") == "example.org/page?id=7"
    assert topic_key("https://example.org/page?id=8&lang=it") != topic_key("https://example.org/page?id=7")


def add_document(store, who, doc_id: str, language: str, url: str, status: str) -> None:
    doc = Document(doc_id, doc_id.title(), url, f"# {doc_id}\n\nText of {doc_id}.", language=language)
    version = store_content.record_version(store, doc, "html", f"{doc_id}.html", who.username, who)
    if status in ("certified", "withdrawn"):
        store_content.certify_switch(store, version["version_id"], who, date.today() + timedelta(days=30))
    if status == "withdrawn":
        store_content.withdraw(store, doc_id, who, "outdated")


@pytest.fixture
def documents(store):
    clara = auth.Principal(auth.add_user(store, "clara", "long-password", "clinician"), "clara", "clinician")
    add_document(store, clara, "fever-en", "en", "https://hospital.example.org/en/fever", "certified")
    add_document(store, clara, "febbre", "it", "https://hospital.example.org/it/fever", "draft")
    add_document(store, clara, "asthma", "en", "https://www.example.org/asthma?lang=en", "certified")
    add_document(store, clara, "asma", "it", "https://example.org/asthma?lang=it", "certified")
    add_document(store, clara, "sonno", "it", "https://it.nhs.example.org/sleep", "certified")
    add_document(store, clara, "old", "en", "https://example.org/old", "withdrawn")


def test_documents_per_language_and_the_topics_missing_in_a_language(store, documents):
    out = document_coverage(store)

    assert out["languages"] == ["en", "it"]
    assert out["documents"] == {"en": {"certified": 2, "withdrawn": 1}, "it": {"certified": 2, "draft": 1}}
    assert [(t["topic"], t["live"], t["missing"], [d["document"] for d in t["documents"]]) for t in out["topics"]] == [
        ("example.org/asthma", ["en", "it"], [], ["asma", "asthma"]),
        ("example.org/old", [], ["en", "it"], ["old"]),
        ("hospital.example.org/fever", ["en"], ["it"], ["febbre", "fever-en"]),
        ("nhs.example.org/sleep", ["it"], ["en"], ["sonno"]),
    ]
    assert out["topics"][2]["documents"][0] == {"document": "febbre", "language": "it", "status": "draft"}


def test_chatbot_content_coverage_json_and_text(store, documents, refused, capsys, monkeypatch):
    monkeypatch.setattr("chatbot.content_coverage.utcnow", lambda: NOW)
    assert cli.main(["content", "coverage", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data == json.loads(json.dumps(coverage(store, 30)))
    assert data["unanswered"]["days"] == 30 and len(data["unanswered"]["groups"]) == 4
    assert "examples" not in data["unanswered"]["groups"][0]

    assert cli.main(["content", "coverage", "--days", "60", "--questions"]) == 0
    text = capsys.readouterr().out
    assert "Documents: en 2 certified, 1 withdrawn; it 2 certified, 1 draft" in text
    assert "- hospital.example.org/fever (Fever-En): live in en; missing in it (febbre it draft)" in text
    assert "- 4 × baby, rash (en 4; 2026-10-16 to 2026-11-23)" in text
    assert "    - “Rashes on babies in summer”" in text
    assert cli.main(["content", "coverage", "--days", "-1"]) == 2
    assert "--days must be 0 or more" in capsys.readouterr().err

"""Certified content lifecycle: import as drafts, certify (one-step replacement), withdraw and expire, with
answers and approved answers following at once."""

from __future__ import annotations

from datetime import date, timedelta
from pathlib import Path

import pytest

from chatbot import content
from chatbot.content_gate import ContentGate
from chatbot.memory import CertifiedMemory, answer_with_memory
from chatbot.settings import Settings
from chatbot.store import auth, content_list, conversations, reviews
from chatbot.store import content as store_content
from chatbot.store.db import open_store
from chatbot.store.models import AuditLog
from corpus.model import Document
from tests.conftest import indexed_services

LEGACY = [
    Document("sleep-card", "Safe sleep", "https://example.org/sleep", "Put your baby to sleep on their back. " * 3)
]


def page(body: str, url: str = "https://hospital.example.org/asthma") -> str:
    return f"""<html lang="en"><head><title>Asthma at night</title><link rel="canonical" href="{url}"></head>
<body><nav><a href="/">Home</a> <a href="/about">About the hospital and its opening hours</a></nav>
<main><article><h1>Asthma at night</h1><p>{body}</p>
<h2>What helps</h2><p>Take the preventer inhaler every evening, as prescribed by the asthma nurse.</p>
</article></main><footer>Copyright 2026 Example Hospital</footer></body></html>"""


V1 = "Asthma often gets worse at night because the airways narrow while you sleep less deeply than you think."
V2 = "Asthma symptoms at night are a sign that asthma is not well controlled; see your asthma nurse."


@pytest.fixture
def env(tmp_path, fake_embedder):
    settings = Settings(
        paths={"data_dir": tmp_path / "data"},
        index={"collection": "content-tests"},
        retrieval={"pipeline": "dense"},
        store={"memory_threshold": 0.9},
    )
    services = indexed_services(settings, fake_embedder, LEGACY, 200, 10)
    store = open_store(settings)
    services.content_gate = ContentGate(store, settings)
    clinician = auth.Principal(auth.add_user(store, "clara", "long-password", "clinician"), "clara", "clinician")
    editor = auth.Principal(auth.add_user(store, "eddie", "long-password", "editor"), "eddie", "editor")
    yield settings, services, store, clinician, editor, tmp_path
    store.dispose()


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def asthma_links(ans: dict) -> list[str]:
    return [link["segment_id"] for link in ans["links"] if link["segment_id"].startswith("page#")]


def index_ids(services) -> list[str]:
    return sorted(services.index.collection().get(include=[])["ids"])


def audit_actions(store) -> list[str]:
    with store.session() as s:
        return [a.action for a in s.query(AuditLog).order_by(AuditLog.id) if a.action.startswith("content_")]


def test_import_certify_replace_and_withdraw_follow_through_to_the_answers(env):
    settings, services, store, clinician, editor, tmp = env
    path = write(tmp / "page.html", page(V1))

    report = content.import_files(store, [path], editor)
    assert [(r["document"], r["version"], r["status"]) for r in report["imported"]] == [("page", 1, "new")]
    assert asthma_links(services_answer(services)) == []  # a draft never reaches patients
    assert [s["heading"] for s in content.preview(store, settings, "page")] == ["Asthma at night", "What helps"]
    with pytest.raises(
        store_content.ContentError, match=r"eddie \(editor\) cannot certify: only a clinician certifies content"
    ):
        content.certify(services, store, editor, "page")

    first = content.certify(services, store, clinician, "page", review_due=date.today() + timedelta(days=30))
    assert (first["version"], first["segments"], first["embedded"], first["replaced"]) == (1, 2, 2, None)
    ans = services_answer(services)
    assert len(asthma_links(ans)) == 1 and asthma_links(ans)[0].endswith("@v1")
    v1_id = store_content.get_version(store, "page", 1).id
    assert ans["trace"]["content"]["versions"] == {"page": v1_id}
    turn_id = conversations.record_turn(store, "conv", ans)
    with store.session() as s:
        from chatbot.store.models import Turn

        assert s.get(Turn, turn_id).content_versions == {"page": v1_id}

    # a new version is a draft until certified; the answer keeps linking v1
    write(path, page(V2))
    assert content.import_files(store, [path], editor)["imported"][0]["version"] == 2
    assert asthma_links(services_answer(services))[0].endswith("@v1")
    assert "-Asthma often gets worse" in content.diff(store, "page", 1, 2)
    second = content.certify(services, store, clinician, "page")
    assert (second["version"], second["replaced"]) == (2, 1)
    assert asthma_links(services_answer(services))[0].endswith("@v2")
    assert [i for i in index_ids(services) if i.startswith("page#")] == sorted(
        s["segment_id"] for s in content.preview(store, settings, "page", 2)
    )
    assert [v["status"] for v in content_list.show_document(store, "page")["versions"]] == ["certified", "superseded"]

    with pytest.raises(store_content.ContentError, match="say why"):
        content.withdraw(services, store, clinician, "page", " ")
    out = content.withdraw(services, store, editor, "page", "Guideline changed")
    assert out["version"] == 2
    assert asthma_links(services_answer(services)) == []
    assert [i for i in index_ids(services) if i.startswith("page#")] == []
    assert content_list.list_documents(store, status="withdrawn")[0]["withdraw_reason"] == "Guideline changed"
    assert audit_actions(store) == ["content_import", "content_certify", "content_import", "content_certify",
                                    "content_withdraw"]  # fmt: skip
    # the turn keeps what the patient read that day
    with store.session() as s:
        assert s.get(Turn, turn_id).content_versions == {"page": v1_id}


def services_answer(services, question: str = "asthma at night") -> dict:
    from chatbot.answer import answer

    return answer(question, services)


def test_certifying_a_new_version_replaces_the_old_in_one_step(env, monkeypatch):
    settings, services, store, clinician, editor, tmp = env
    path = write(tmp / "page.html", page(V1))
    content.import_files(store, [path], editor)
    content.certify(services, store, clinician, "page")
    write(path, page(V2))
    content.import_files(store, [path], editor)
    seen = []
    switch, delete = store_content.certify_switch, services.index.delete_version

    def spy_switch(*args, **kwargs):  # v2's segments are in the index now, not yet current
        assert any(i.endswith("@v2") for i in index_ids(services))
        seen.append(("before", {link[-3:] for link in asthma_links(services_answer(services))}))
        return switch(*args, **kwargs)

    def spy_delete(version_id):  # switched, v1's segments still in the index
        assert any(i.endswith("@v1") for i in index_ids(services))
        seen.append(("after", {link[-3:] for link in asthma_links(services_answer(services))}))
        return delete(version_id)

    monkeypatch.setattr(store_content, "certify_switch", spy_switch)
    monkeypatch.setattr(services.index, "delete_version", spy_delete)
    content.certify(services, store, clinician, "page")

    assert seen == [("before", {"@v1"}), ("after", {"@v2"})]


def test_a_failed_switch_removes_the_new_segments_and_the_old_version_keeps_serving(env, monkeypatch):
    settings, services, store, clinician, editor, tmp = env
    path = write(tmp / "page.html", page(V1))
    content.import_files(store, [path], editor)
    content.certify(services, store, clinician, "page")
    before = index_ids(services)
    write(path, page(V2))
    content.import_files(store, [path], editor)

    def broken(*args, **kwargs):
        raise RuntimeError("database went away")

    monkeypatch.setattr(store_content, "certify_switch", broken)
    with pytest.raises(RuntimeError, match="database went away"):
        content.certify(services, store, clinician, "page")

    assert index_ids(services) == before
    assert asthma_links(services_answer(services))[0].endswith("@v1")


def test_withdrawal_suspends_approved_answers_citing_the_document(env):
    settings, services, store, clinician, editor, tmp = env
    content.import_files(store, [write(tmp / "page.html", page(V1))], editor)
    content.certify(services, store, clinician, "page")
    memory = CertifiedMemory(store, services, services.embedder)
    first = answer_with_memory("asthma at night", services, memory)
    turn_id = conversations.record_turn(store, "conv", first)
    links = first["links"]
    approval_id = reviews.record_review(
        store, clinician, turn_id, "approved", "ok",
        approval={"reply": "Approved asthma reply.", "links": links, "segment_ids": [x["segment_id"] for x in links],
                  "language": "en", **memory.approval_fields("asthma at night")},
    )["approval_id"]  # fmt: skip
    served = answer_with_memory("asthma at night", services, memory)
    assert served["reply"] == "Approved asthma reply."
    assert served["trace"]["content"]["versions"] == {"page": store_content.get_version(store, "page").id}

    content.withdraw(services, store, clinician, "page", "Wrong dose in section 2")

    after = answer_with_memory("asthma at night", services, memory)
    assert after["reply"] != "Approved asthma reply." and after["trace"]["memory"]["hit"] is False
    assert asthma_links(after) == []
    suspended = content_list.suspended_approvals(store)
    assert [(a["id"], a["documents"], a["reason"]) for a in suspended] == [
        (approval_id, ["page", "sleep-card"], "page withdrawn: Wrong dose in section 2")
    ]
    assert content_list.show_document(store, "page")["suspended_approvals"][0]["id"] == approval_id


def test_a_withdrawn_document_is_recertified_as_a_new_version_by_a_clinician_only(env):
    settings, services, store, clinician, editor, tmp = env
    content.import_files(store, [write(tmp / "page.html", page(V1))], editor)
    content.certify(services, store, clinician, "page")
    content.withdraw(services, store, editor, "page", "Checking a dose")
    assert asthma_links(services_answer(services)) == []
    again = content.import_files(store, [tmp / "page.html"], editor)["unchanged"]  # the same file: nothing new
    assert [(r["version"], r["version_status"]) for r in again] == [(1, "withdrawn")]
    with pytest.raises(store_content.ContentError, match="version 1 of 'page' is withdrawn; re-certify the document"):
        content.certify(services, store, clinician, "page")
    with pytest.raises(store_content.ContentError, match=r"eddie \(editor\) cannot re-certify"):
        content.recertify(services, store, editor, "page")
    with pytest.raises(store_content.ContentError, match="must be in the future"):
        content.recertify(services, store, clinician, "page", review_due=date.today())
    assert [v["version"] for v in content_list.show_document(store, "page")["versions"]] == [1]  # nothing written

    out = content.recertify(services, store, clinician, "page", date.today() + timedelta(days=90), "dose is right")

    assert (out["version"], out["from_version"], out["replaced"], out["segments"]) == (2, 1, None, 2)
    assert asthma_links(services_answer(services))[0].endswith("@v2")
    shown = content_list.show_document(store, "page")
    assert [(v["version"], v["status"], v["withdraw_reason"]) for v in shown["versions"]] == [
        (2, "certified", None), (1, "withdrawn", "Checking a dose")]  # fmt: skip
    assert shown["versions"][0]["sha256"] == shown["versions"][1]["sha256"]
    assert audit_actions(store) == ["content_import", "content_certify", "content_withdraw", "content_recertify",
                                    "content_certify"]  # fmt: skip
    with store.session() as s:
        detail = s.query(AuditLog).filter(AuditLog.action == "content_recertify").one().detail
    assert detail == {"document": "page", "version": 2, "from_version": 1, "comment": "dose is right"}
    with pytest.raises(store_content.ContentError, match="'page' is not withdrawn: nothing to re-certify"):
        content.recertify(services, store, clinician, "page")
    # an unchanged re-import of the file is still unchanged (v2 has its content)
    again = content.import_files(store, [tmp / "page.html"], editor)["unchanged"]
    assert [(r["version"], r["version_status"]) for r in again] == [(2, "certified")]


@pytest.mark.parametrize("policy", ["exclude", "warn"])
def test_expired_content_is_excluded_or_flagged_by_setting(env, policy):
    settings, services, store, clinician, editor, tmp = env
    settings.corpus.expired_content = policy
    content.import_files(store, [write(tmp / "page.html", page(V1))], editor)
    content.certify(services, store, clinician, "page", review_due=date.today() + timedelta(days=1))
    assert asthma_links(services_answer(services))
    memory = CertifiedMemory(store, services, services.embedder)
    first = answer_with_memory("asthma at night", services, memory)
    links = first["links"][:1]
    approval_id = reviews.record_review(
        store, clinician, conversations.record_turn(store, "conv", first), "approved", "ok",
        approval={"reply": "Approved asthma reply.", "links": links, "segment_ids": [x["segment_id"] for x in links],
                  "language": "en", **memory.approval_fields("asthma at night")},
    )["approval_id"]  # fmt: skip
    services.content_gate.today = lambda: date.today() + timedelta(days=2)

    ans = services_answer(services)
    served = answer_with_memory("asthma at night", services, memory)

    assert content_list.list_documents(store)[0]["status"] == "expired"
    note = "Note: a linked document is past its review date; check with your care team that it is still current."
    if policy == "exclude":
        assert asthma_links(ans) == [] and asthma_links(served) == []
        assert note not in ans["reply"] and served["reply"] != "Approved asthma reply."
        assert [a["id"] for a in content_list.suspended_approvals(store)] == [approval_id]
    else:
        assert len(asthma_links(ans)) == 1
        assert ans["trace"]["content"]["expired"] == ["page"]
        assert ans["reply"].endswith(note)
        assert served["reply"] == f"Approved asthma reply.\n\n{note}"
        assert content_list.suspended_approvals(store) == []
    with store.session() as s:
        assert s.query(AuditLog).filter(AuditLog.action == "content_expire").one().username == "system"


def test_folder_import_reports_skips_and_an_unchanged_reimport_writes_and_embeds_nothing(env, fake_embedder):
    settings, services, store, clinician, editor, tmp = env
    folder = tmp / "incoming"
    folder.mkdir()
    for i in range(3):
        write(folder / f"page{i}.html", page(f"Asthma leaflet number {i}. " + V1, f"https://example.org/{i}"))
    (folder / "scan.pdf").write_bytes(b"%PDF-1.4 garbage")
    content.import_files(store, [folder / "page0.html"], editor)
    content.certify(services, store, clinician, "page0")
    calls = fake_embedder.passage_calls

    first = content.import_files(store, [folder], editor)
    again = content.import_files(store, [folder], editor)

    assert [r["document"] for r in first["imported"]] == ["page1", "page2"]
    assert [r["document"] for r in first["unchanged"]] == ["page0"]
    assert [(Path(s["file"]).name, s["reason"].split(": ", 1)[1][:15]) for s in first["skipped"]] == [
        ("scan.pdf", "unreadable PDF:")
    ]
    assert len(again["unchanged"]) == 3 and again["imported"] == []
    assert fake_embedder.passage_calls == calls
    assert [d["status"] for d in content_list.list_documents(store)] == ["certified", "draft", "draft"]
    # `chatbot ingest` of the legacy corpus never deletes managed segments
    from corpus.segmenter import segment_documents

    services.index.sync(segment_documents(LEGACY, 200, 10))
    assert any(i.startswith("page0#") for i in index_ids(services))


def test_reindex_puts_certified_versions_back_after_the_collection_was_dropped(env, fake_embedder):
    settings, services, store, clinician, editor, tmp = env
    content.import_files(store, [write(tmp / "page.html", page(V1))], editor)
    content.import_files(store, [write(tmp / "draft.html", page(V2, "https://example.org/draft"))], editor)
    content.certify(services, store, clinician, "page")
    certified = [i for i in index_ids(services) if i.startswith("page#")]
    services.client.delete_collection(services.collection_name)  # what `chatbot ingest --rebuild` does
    services.index._collection = None
    from corpus.segmenter import segment_documents

    services.index.sync(segment_documents(LEGACY, 200, 10))
    assert asthma_links(services_answer(services)) == []

    assert content.reindex(services, store) == {"documents": 1, "embedded": 2}
    assert content.reindex(services, store) == {"documents": 1, "embedded": 0}

    assert [i for i in index_ids(services) if i.startswith(("page#", "draft#"))] == certified
    assert asthma_links(services_answer(services))[0].endswith("@v1")

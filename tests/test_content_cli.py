"""`chatbot content list|import|certify|withdraw|show|preview|diff`: JSON out, clear errors, every action audited."""

from __future__ import annotations

import json

import pytest

from chatbot import cli
from chatbot.settings import Settings
from chatbot.store import auth
from chatbot.store.db import open_store
from chatbot.store.models import AuditLog
from tests.conftest import FakeEmbedder

PAGE = """<html lang="en"><head><title>Fever in babies</title></head><body><nav>Home | Contact us today</nav>
<main><h1>Fever in babies</h1><p>A fever is a temperature of 38C or more. In a baby under 3 months, call your
doctor at once.</p><h2>At home</h2><p>Give plenty of fluids and keep your baby cool but not cold.</p></main>
<footer>Copyright Example Hospital</footer></body></html>"""


@pytest.fixture
def embedder() -> FakeEmbedder:
    return FakeEmbedder()  # one for every command: it counts what they embed


@pytest.fixture
def data(tmp_path, monkeypatch, embedder):
    monkeypatch.setenv("CHATBOT_PATHS__DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setattr("chatbot.embedders.load_embedder", lambda kind, threads=2, int8_matmul="int8": embedder)
    store = open_store(Settings(paths={"data_dir": tmp_path / "data"}))
    auth.add_user(store, "clara", "long-password", "clinician")
    auth.add_user(store, "eddie", "long-password", "editor")
    yield tmp_path, store
    store.dispose()


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(["content", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_content_commands_import_certify_show_withdraw_with_audit(data, capsys):
    tmp, store = data
    (tmp / "fever.html").write_text(PAGE, encoding="utf-8")
    (tmp / "bad.pdf").write_bytes(b"not a pdf")

    code, out, err = run(capsys, "import", str(tmp / "fever.html"), "--url", "https://example.org/fever", "--as",
                         "eddie", "--quiet")  # fmt: skip
    assert code == 0, err
    assert json.loads(out)["imported"] == 1
    code, out, err = run(capsys, "import", str(tmp / "bad.pdf"), "--url", "https://example.org/x", "--quiet")
    assert code == 1 and json.loads(out)["skipped"] == 1
    assert f"skipped: {tmp / 'bad.pdf'}: unreadable PDF" in err

    code, out, _ = run(capsys, "preview", "fever")
    assert [s["heading"] for s in json.loads(out)] == ["Fever in babies", "At home"]
    code, _, err = run(capsys, "certify", "fever", "--as", "eddie")
    assert code == 2 and "error: eddie (editor) cannot certify: only a clinician certifies content" in err
    code, out, err = run(capsys, "certify", "fever", "--as", "clara", "--review-due", "2099-01-31")
    assert code == 0, err
    assert (json.loads(out)["version"], json.loads(out)["segments"], json.loads(out)["review_due"]) == (
        1,
        2,
        "2099-01-31",
    )
    code, out, _ = run(capsys, "list", "--status", "certified")
    rows = json.loads(out)
    assert [(r["document"], r["certified_by"], r["review_due"], r["imported_by"]) for r in rows] == [
        ("fever", "clara", "2099-01-31", "eddie")
    ]
    code, _, err = run(capsys, "withdraw", "fever", "--as", "clara", "--reason", "")
    assert code == 2 and "say why" in err
    code, out, _ = run(capsys, "withdraw", "fever", "--as", "clara", "--reason", "superseded by NICE 2026")
    assert code == 0 and json.loads(out)["version"] == 1
    code, out, _ = run(capsys, "show", "fever")
    shown = json.loads(out)
    assert (shown["current_version"], shown["versions"][0]["status"], shown["versions"][0]["withdrawn_by"]) == (
        None,
        "withdrawn",
        "clara",
    )
    assert run(capsys, "show", "nope")[0] == 2
    code, _, err = run(capsys, "recertify", "fever", "--as", "eddie")
    assert code == 2 and "error: eddie (editor) cannot re-certify" in err
    code, out, err = run(capsys, "recertify", "fever", "--as", "clara", "--review-due", "2099-02-28", "--comment", "ok")
    assert code == 0, err
    assert (json.loads(out)["version"], json.loads(out)["from_version"], json.loads(out)["review_due"]) == (
        2, 1, "2099-02-28")  # fmt: skip
    code, _, err = run(capsys, "recertify", "fever", "--as", "clara")
    assert code == 2 and "error: 'fever' is not withdrawn: nothing to re-certify" in err
    with store.session() as s:
        actions = [(a.action, a.username) for a in s.query(AuditLog).order_by(AuditLog.id) if "content" in a.action]
    assert actions == [("content_import", "eddie"), ("content_certify", "clara"), ("content_withdraw", "clara"),
                       ("content_recertify", "clara"), ("content_certify", "clara")]  # fmt: skip


def test_a_100_document_folder_import_shows_progress_reports_skips_and_reimports_nothing(data, capsys, embedder):
    tmp, store = data
    folder = tmp / "incoming"
    folder.mkdir()
    for i in range(100):
        page = PAGE.replace("<title>Fever in babies", f"<title>Leaflet {i:03d}").replace("38C", f"38C ({i})")
        page = page.replace("<head>", f'<head><link rel="canonical" href="https://example.org/leaflet-{i:03d}">')
        (folder / f"leaflet-{i:03d}.html").write_text(page, encoding="utf-8")
    (folder / "scan.pdf").write_bytes(b"%PDF-1.4 scanned")
    (folder / "nolink.html").write_text(PAGE, encoding="utf-8")

    code, out, err = run(capsys, "import", str(folder), "--as", "eddie")

    assert code == 0
    report = json.loads(out)
    assert (report["imported"], report["unchanged"], report["skipped"]) == (100, 0, 2)
    assert "importing: 100%" in err and "102/102" in err
    skipped = sorted(line for line in err.splitlines() if line.startswith("skipped: "))
    assert [line.split(": ", 2)[1].rsplit("/", 1)[1] for line in skipped] == ["nolink.html", "scan.pdf"]
    assert "document 'nolink' has no source URL" in skipped[0]
    assert "unreadable PDF" in skipped[1]

    assert embedder.passage_calls == 0  # drafts are not embedded
    code, out, err = run(capsys, "certify", "leaflet-007", "--as", "clara")
    assert code == 0 and json.loads(out)["embedded"] == 2
    embedded = list(embedder.passages)

    code, out, err = run(capsys, "import", str(folder), "--as", "eddie", "--quiet")
    assert json.loads(out)["unchanged"] == 100 and json.loads(out)["imported"] == 0
    assert err.count("skipped: ") == 2 and "importing" not in err
    assert embedder.passages == embedded  # the unchanged re-import, the certified one included, embeds nothing
    assert len(embedded) == 2
    with store.session() as s:
        assert s.query(AuditLog).filter(AuditLog.action == "content_import").count() == 100

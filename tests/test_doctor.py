"""`chatbot doctor`: each check's verdict and fix, on real components and broken ones."""

from __future__ import annotations

import json
from pathlib import Path

from chatbot import doctor
from chatbot.settings import Settings
from tests.fake_openai import closed_port


def settings_in(tmp_path: Path, **llm) -> Settings:
    return Settings(paths={"data_dir": tmp_path / "data"}, llm=llm)


def test_a_wrong_pin_is_a_failed_packages_line_naming_it(tmp_path):
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[project]\nname = "x"\ndependencies = ["numpy==0.0.1", "pytest>=1"]\n')

    check = doctor.check_packages(Settings(), pyproject)

    assert check.status == "fail"
    assert check.detail.startswith("numpy ") and check.detail.endswith("(want ==0.0.1)")
    assert check.fix == "pip install -e . (or make install)"


def test_the_project_pins_are_installed():
    assert doctor.check_packages(Settings()).status == "ok"


def test_a_missing_index_fails_with_the_ingest_fix_and_the_database_is_not_created(tmp_path):
    settings = settings_in(tmp_path)

    index = doctor.check_index(settings)
    database = doctor.check_database(settings)

    assert index.status == "fail" and "no index named" in index.detail
    assert index.fix == "chatbot ingest corpus/demo/cards (or make run)"
    assert database.status == "warn" and database.detail.endswith("chatbot.sqlite3 not created yet")
    assert not (tmp_path / "data" / "chatbot.sqlite3").exists()


def test_a_migrated_database_is_ok_and_names_its_head(tmp_path):
    from chatbot.store.db import open_store

    settings = settings_in(tmp_path)
    open_store(settings).dispose()

    check = doctor.check_database(settings)

    assert check.status == "ok"
    assert check.detail.startswith("sqlite:///") and "chatbot.sqlite3 at " in check.detail


def test_the_shipped_cross_encoder_ranks_the_relevant_passage_first():
    check = doctor.check_cross_encoder(Settings())
    assert check.status == "ok", check.detail
    assert check.detail.startswith("reranker (onnx): relevant ")


def test_a_missing_llm_build_fails_with_the_build_command(tmp_path):
    check = doctor.check_llm(settings_in(tmp_path, server_binary=tmp_path / "nope" / "llama-server"))

    assert check.status == "fail"
    assert check.detail.startswith("no llama-server native-noamx build for this CPU")
    assert check.fix == "python -m chatbot.llm_runtime build --variant native-noamx (or make llm)"


def _fake_llm(tmp_path: Path, binary: Path, crash: bool, monkeypatch) -> Settings:
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF")
    if crash:
        monkeypatch.setenv("FAKE_LLAMA_CRASH", "start")
    port = closed_port()
    return settings_in(
        tmp_path, server_binary=binary, model_path=model, port=port, base_url=f"http://127.0.0.1:{port}/v1"
    )


def test_the_llm_check_starts_a_server_and_reads_its_smoke_reply(tmp_path, fake_binary, monkeypatch):
    check = doctor.check_llm(_fake_llm(tmp_path, fake_binary, crash=False, monkeypatch=monkeypatch))

    assert check.status == "ok", check.detail
    assert "answered 'Tiredness often comes from poor sleep" in check.detail


def test_a_crashing_llm_is_a_failed_line_with_the_signal(tmp_path, fake_binary, monkeypatch):
    check = doctor.check_llm(_fake_llm(tmp_path, fake_binary, crash=True, monkeypatch=monkeypatch))

    assert check.status == "fail"
    assert check.detail.startswith("down: llama-server died (SIGSEGV)")
    assert check.fix == "python -m chatbot.llm_runtime build --variant native-noamx --force"


def test_cli_doctor_json_exits_1_when_a_check_fails(tmp_path, monkeypatch, capsys):
    from chatbot import cli

    monkeypatch.setenv("CHATBOT_PATHS__DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setattr(doctor, "CHECKS", [("index", doctor.check_index), ("chromium", doctor.check_chromium)])

    assert cli.main(["doctor", "--json", "--skip-llm"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is False
    assert [c["name"] for c in report["checks"]] == ["index", "chromium"]
    assert report["checks"][0]["status"] == "fail"


def test_the_table_shows_the_fix_under_a_failed_line():
    table = doctor.format_table(
        [doctor.Check("index", "fail", "no index", "chatbot ingest X"), doctor.Check("db", "ok", "fine", "unused")]
    )
    assert table.splitlines() == ["FAIL  index  no index", "             fix: chatbot ingest X", "OK    db     fine"]

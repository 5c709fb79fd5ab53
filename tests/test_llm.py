"""chatbot/llm.py: the openai-client wrapper against a fake endpoint, error mapping, and the embedded
server's lifecycle (with a fake `llama-server` executable, and once with the real one and gemma-3-270m)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from chatbot import llm_runtime
from chatbot.llm import LLMClient, LLMUnavailable
from chatbot.llm_server import EmbeddedServer, health, is_embedded_endpoint, server_root
from chatbot.settings import Settings
from tests.fake_openai import FakeOpenAIServer, closed_port

PROJECT_ROOT = Path(__file__).resolve().parent.parent

MESSAGES = [{"role": "user", "content": "Why am I so tired?"}]


def llm_settings(base_url: str, **kw):
    return Settings(llm={"base_url": base_url, "autostart": False, "timeout_s": 5.0, **kw}).llm


@pytest.fixture
def fake():
    with FakeOpenAIServer("Poor sleep is the commonest cause of tiredness.") as server:
        yield server


def client_for(base_url: str, tmp_path: Path, **kw) -> LLMClient:
    return LLMClient(llm_settings(base_url, **kw), tmp_path)


# -- the openai wrapper ----------------------------------------------------------------------------------


def test_complete_returns_the_text_and_sends_model_tokens_and_temperature(fake, tmp_path):
    llm = client_for(fake.base_url, tmp_path, model="my-model")

    text = llm.complete(MESSAGES, max_tokens=42)

    assert text == "Poor sleep is the commonest cause of tiredness."
    (body,) = fake.requests
    assert body["model"] == "my-model"
    assert body["max_tokens"] == 42
    assert body["temperature"] == 0
    assert body["messages"] == MESSAGES


def test_client_is_built_with_the_configured_timeout_and_retries(fake, tmp_path):
    llm = client_for(fake.base_url, tmp_path, timeout_s=7.5, max_retries=1, api_key="k")

    assert llm.client.timeout == 7.5
    assert llm.client.max_retries == 1
    assert llm.client.api_key == "k"
    assert str(llm.client.base_url).rstrip("/") == fake.base_url


def test_unknown_keywords_go_into_the_request_body_and_openai_ones_stay_typed(fake, tmp_path):
    llm = client_for(fake.base_url, tmp_path)

    llm.complete(MESSAGES, max_tokens=5, temperature=0.7, seed=3, grammar='root ::= "x"')

    (body,) = fake.requests
    assert body["grammar"] == 'root ::= "x"'
    assert body["seed"] == 3
    assert body["temperature"] == 0.7


def test_complete_with_stats_reports_tokens_and_server_timings(fake, tmp_path):
    text, stats = client_for(fake.base_url, tmp_path).complete_with_stats(MESSAGES, 5)

    assert text.startswith("Poor sleep")
    assert stats["prompt_tokens"] == 10
    assert stats["completion_tokens"] == 5
    assert stats["server"] == {"prompt_n": 10.0, "prompt_ms": 1.0, "predicted_n": 5.0, "predicted_ms": 2.0}
    assert stats["ms"] >= 0


@pytest.mark.parametrize(
    ("mode", "kind"),
    [("garbage", "garbage"), ("null", "garbage"), ("error", "error")],
)
def test_bad_answers_become_llm_unavailable(fake, tmp_path, mode, kind):
    fake.mode = mode

    with pytest.raises(LLMUnavailable) as info:
        client_for(fake.base_url, tmp_path).complete(MESSAGES, 5)

    assert info.value.kind == kind
    assert len(fake.requests) == 1  # max_retries=0: one request, no retry


def test_stream_yields_the_reply_piece_by_piece(fake, tmp_path):
    pieces = list(client_for(fake.base_url, tmp_path, model="my-model").stream(MESSAGES, max_tokens=42))

    assert pieces == ["Poor ", "sleep ", "is ", "the ", "commonest ", "cause ", "of ", "tiredness."]
    (body,) = fake.requests
    assert (body["stream"], body["model"], body["max_tokens"], body["temperature"]) == (True, "my-model", 42, 0)


@pytest.mark.parametrize(
    ("mode", "kind", "message", "pieces"),
    [
        ("stream_break", "down", r"^down: the stream from http://127\.0\.0\.1:\d+/v1 ended before the reply did$", 1),
        ("error", "error", r"^error: HTTP 500 from http://127\.0\.0\.1:\d+/v1$", 0),
    ],
)
def test_a_broken_stream_is_llm_unavailable(fake, tmp_path, mode, kind, message, pieces):
    fake.mode = mode
    got: list[str] = []

    with pytest.raises(LLMUnavailable, match=message) as info:
        got.extend(client_for(fake.base_url, tmp_path).stream(MESSAGES, 5))

    assert info.value.kind == kind and len(got) == pieces


def test_endpoint_down_is_llm_unavailable_down(tmp_path):
    with pytest.raises(LLMUnavailable) as info:
        client_for(f"http://127.0.0.1:{closed_port()}/v1", tmp_path).complete(MESSAGES, 5)

    assert info.value.kind == "down"


def test_slow_endpoint_times_out_after_timeout_s(fake, tmp_path):
    fake.mode, fake.delay_s = "slow", 3.0
    llm = client_for(fake.base_url, tmp_path, timeout_s=0.3)

    start = time.perf_counter()
    with pytest.raises(LLMUnavailable) as info:
        llm.complete(MESSAGES, 5)

    assert info.value.kind == "timeout"
    assert time.perf_counter() - start < 2.0
    assert len(fake.requests) == 1


def test_health_and_urls(fake):
    assert health(fake.base_url)
    assert not health(f"http://127.0.0.1:{closed_port()}/v1", timeout=0.2)
    assert server_root("http://127.0.0.1:8765/v1/") == "http://127.0.0.1:8765"
    s = Settings().llm
    assert is_embedded_endpoint(s)  # defaults agree: base_url is 127.0.0.1:port
    assert not is_embedded_endpoint(s.model_copy(update={"port": 9999}))


def test_missing_binary_is_not_installed_and_not_retried_at_once(tmp_path):
    port = closed_port()
    s = Settings(
        llm={
            "base_url": f"http://127.0.0.1:{port}/v1",
            "port": port,
            "server_binary": tmp_path / "nope" / "llama-server",
            "autostart": True,
        }
    ).llm
    llm = LLMClient(s, tmp_path)

    with pytest.raises(LLMUnavailable) as first:
        llm.complete(MESSAGES, 5)
    start = time.perf_counter()
    with pytest.raises(LLMUnavailable) as second:
        llm.complete(MESSAGES, 5)

    assert first.value.kind == second.value.kind == "not-installed"
    assert time.perf_counter() - start < 0.1


# -- the embedded server's lifecycle, with a fake llama-server ---------------------------------------------


def embedded_env(tmp_path: Path, binary: Path, port: int) -> dict[str, str]:
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF")
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("CHATBOT_")}
    env.update(
        CHATBOT_PATHS__DATA_DIR=str(tmp_path / "data"),
        CHATBOT_LLM__SERVER_BINARY=str(binary),
        CHATBOT_LLM__MODEL_PATH=str(model),
        CHATBOT_LLM__PORT=str(port),
        CHATBOT_LLM__BASE_URL=f"http://127.0.0.1:{port}/v1",
        CHATBOT_LLM__STARTUP_TIMEOUT_S="20",
        PYTHONPATH=str(PROJECT_ROOT),
        HF_HUB_OFFLINE="1",
    )
    return env


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as fh:
        return fh.read().rsplit(")", 1)[1].split()[0] != "Z"


def wait_until(predicate, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def pid_file(tmp_path: Path, port: int) -> Path:
    return tmp_path / "data" / "llm" / f"llama-server-{port}.json"


def test_cli_llm_start_status_stop(tmp_path, fake_binary):
    port = closed_port()
    env = embedded_env(tmp_path, fake_binary, port)
    cli = [sys.executable, "-m", "chatbot.cli", "llm"]

    started = subprocess.run([*cli, "start"], env=env, capture_output=True, text=True, timeout=60)
    assert started.returncode == 0, started.stderr
    record = json.loads(pid_file(tmp_path, port).read_text())
    try:
        assert json.loads(started.stdout)["started"] is True
        assert record["owner_pid"] is None  # detached: outlives the CLI
        assert alive(record["pid"])
        status = json.loads(subprocess.run([*cli, "status"], env=env, capture_output=True, text=True).stdout)
        assert status["healthy"] is True
        assert status["pid"] == record["pid"]
        again = subprocess.run([*cli, "start"], env=env, capture_output=True, text=True, timeout=60)
        assert json.loads(again.stdout)["started"] is False  # already running: no second server
    finally:
        stopped = subprocess.run([*cli, "stop"], env=env, capture_output=True, text=True, timeout=30)
    assert json.loads(stopped.stdout) == {"stopped": True, "pid": record["pid"]}
    assert wait_until(lambda: not alive(record["pid"]), 5)
    assert not pid_file(tmp_path, port).exists()
    assert not health(f"http://127.0.0.1:{port}/v1", timeout=0.2)


def test_autostarted_server_is_used_and_stopped_when_the_process_exits(tmp_path, fake_binary):
    port = closed_port()
    env = embedded_env(tmp_path, fake_binary, port)
    script = (
        "import json; from chatbot.settings import load_settings; from chatbot.llm import LLMClient\n"
        "s = load_settings(); c = LLMClient(s.llm, s.paths.data_dir)\n"
        "print(json.dumps({'text': c.complete([{'role': 'user', 'content': 'q'}], 20),"
        " 'pid': c.server.proc.pid}))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60)

    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["text"].startswith("Tiredness often comes from poor sleep")
    assert wait_until(lambda: not alive(result["pid"]), 5)  # atexit stopped it
    assert not pid_file(tmp_path, port).exists()


def test_killing_the_cli_with_sigkill_leaves_no_orphan_server(tmp_path, fake_binary):
    """`chatbot ask --pipeline hyde` autostarts the server (never healthy here, so the CLI stays waiting);
    SIGKILL on the CLI must take the server down too (PR_SET_PDEATHSIG), with no atexit to help."""
    port = closed_port()
    env = {**embedded_env(tmp_path, fake_binary, port), "FAKE_LLAMA_NEVER_HEALTHY": "1"}
    cli = subprocess.Popen(
        [sys.executable, "-m", "chatbot.cli", "ask", "Why am I so tired?", "--pipeline", "hyde"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert wait_until(lambda: pid_file(tmp_path, port).exists(), 60), "the CLI never started the server"
        server_pid = json.loads(pid_file(tmp_path, port).read_text())["pid"]
        assert wait_until(lambda: alive(server_pid), 5)
        assert json.loads(pid_file(tmp_path, port).read_text())["owner_pid"] == cli.pid
    finally:
        cli.send_signal(signal.SIGKILL)
        cli.wait(10)
    assert wait_until(lambda: not alive(server_pid), 5), "llama-server outlived the CLI"


def test_stop_refuses_a_stale_pid_file(tmp_path):
    s = Settings(llm={"port": closed_port()}).llm
    server = EmbeddedServer(s, tmp_path)
    server.dir.mkdir(parents=True)
    server.pid_file.write_text(json.dumps({"pid": os.getpid()}))  # alive, but not a llama-server

    result = server.stop_recorded()

    assert result["stopped"] is False
    assert "stale" in result["reason"]
    assert alive(os.getpid())
    assert not server.pid_file.exists()


# -- the real llama-server and gemma-3-270m --------------------------------------------------------------


REAL_BINARY = llm_runtime.binary_path()  # this CPU's build of the default variant
GEMMA = llm_runtime.cache_dir() / "models" / "gemma-3-270m-q4_k_m.gguf"


def require_real_llm() -> None:
    """The real-server tests never skip: without this CPU's build or the model they fail with the fix."""
    if not REAL_BINARY.exists():
        pytest.fail(
            f"no llama-server {llm_runtime.DEFAULT_VARIANT} build for this CPU at {REAL_BINARY}: run "
            f"`python -m chatbot.llm_runtime build` (or make llm); `chatbot doctor` checks the whole runtime"
        )
    if not GEMMA.exists():
        pytest.fail(f"{GEMMA} missing: run scripts/install_llm.py --model gemma (or make llm)")


@pytest.mark.integration
def test_real_llama_server_with_gemma_answers_and_dies_with_its_owner(tmp_path):
    require_real_llm()
    port = closed_port()
    env = embedded_env(tmp_path, REAL_BINARY, port)
    env.update(
        CHATBOT_LLM__MODEL_PATH=str(GEMMA),
        CHATBOT_LLM__MODEL="gemma-3-270m",
        CHATBOT_LLM__CTX_SIZE="1024",
        CHATBOT_LLM__TIMEOUT_S="60",
        CHATBOT_LLM__STARTUP_TIMEOUT_S="120",
    )
    script = (
        "import json, sys; from chatbot.settings import load_settings; from chatbot.llm import LLMClient\n"
        "s = load_settings(); c = LLMClient(s.llm, s.paths.data_dir)\n"
        "text, stats = c.complete_with_stats([{'role': 'user', 'content': 'Name one fruit.'}], 12)\n"
        "print(json.dumps({'text': text, 'stats': stats, 'pid': c.server.proc.pid}), flush=True)\n"
        "sys.stdin.readline()\n"  # stay alive until the test kills us
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", script], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        line = proc.stdout.readline()
        assert line, "no answer from the real server"
        result = json.loads(line)
        assert isinstance(result["text"], str)
        assert result["stats"]["completion_tokens"] >= 1
        assert result["stats"]["server"]["predicted_n"] >= 1
        assert alive(result["pid"])
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    assert wait_until(lambda: not alive(result["pid"]), 5), "real llama-server outlived its owner"

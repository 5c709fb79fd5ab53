"""A deterministic fake OpenAI-compatible server for tests (stdlib only, 127.0.0.1, a free port).

Modes: ``ok`` (canned reply), ``slow`` (sleeps ``delay_s`` before answering), ``garbage`` (HTTP 200 with a
body that is not JSON), ``nonsense`` (a valid completion whose text is symbols), ``null`` (content null),
``error`` (HTTP 500). ``down`` is a port nobody listens on (``closed_port()``). Every request body is
recorded in ``requests``. ``reply`` is a string or a function of the request body.

Streaming: a request with ``stream: true`` gets the reply as server-sent events, one chunk per word (the
``ok`` and ``slow`` modes, then a last chunk with ``finish_reason`` and ``[DONE]``); ``stream_break`` closes
the connection after the first chunk, mid-event.

Log-probabilities: when a request asks for them (``logprobs: true``) and ``logprobs`` is set, the choice
carries them in the OpenAI shape (``choices[0].logprobs.content[0].top_logprobs``): ``logprobs`` is a list
of (token, logprob) alternatives for the single generated token, best first, or a function of the request
body returning one (or None: no ``logprobs`` field at all). The generated text is then the first listed
token, cut to ``top_logprobs`` alternatives like a real server.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.ports import free_port

Reply = str | Callable[[dict[str, Any]], str]
Alternatives = list[tuple[str, float]]
LogProbs = Alternatives | Callable[[dict[str, Any]], Alternatives | None] | None


def closed_port() -> int:
    """A port nobody listens on (connection refused): see tests/ports.py for why not bind(0)."""
    return free_port()


def completion(text: str | None, model: str = "fake", alternatives: Alternatives | None = None) -> dict[str, Any]:
    choice: dict[str, Any] = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
    if alternatives is not None:
        top = [{"token": t, "logprob": lp, "bytes": list(t.encode())} for t, lp in alternatives]
        first = top[0] if top else {"token": text or "", "logprob": 0.0, "bytes": None}
        choice["logprobs"] = {"content": [{**first, "top_logprobs": top}]}
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [choice],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        "timings": {"prompt_n": 10, "prompt_ms": 1.0, "predicted_n": 5, "predicted_ms": 2.0},
    }


def stream_chunk(piece: str, model: str = "fake") -> dict[str, Any]:
    """One ``chat.completion.chunk`` of a streamed reply."""
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}],
    }


class FakeOpenAIServer:
    def __init__(self, reply: Reply = "A canned passage about sleep and tiredness.", mode: str = "ok") -> None:
        self.reply = reply
        self.mode = mode
        self.delay_s = 2.0
        self.stream_delay_s = 0.0  # between two streamed chunks
        self.logprobs: LogProbs = None
        self.requests: list[dict[str, Any]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def _send(self, status: int, body: bytes, ctype: str = "application/json") -> None:
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                try:
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
                    pass

            def _stream(self, text: str, broken: bool) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()  # HTTP/1.0: the body ends when the connection closes
                pieces = [w + " " for w in text.split(" ")]
                pieces[-1] = pieces[-1][:-1]
                for i, piece in enumerate(pieces):
                    chunk = {**stream_chunk(piece), "id": f"chatcmpl-fake-{i}"}
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                    self.wfile.flush()
                    time.sleep(fake.stream_delay_s)
                    if broken:
                        self.wfile.write(b"data: {not json")
                        return
                final = stream_chunk("")
                final["choices"][0].update(delta={}, finish_reason="stop")
                self.wfile.write(f"data: {json.dumps(final)}\n\ndata: [DONE]\n\n".encode())

            def do_GET(self) -> None:
                if self.path == "/health":
                    self._send(200, b'{"status":"ok"}')
                elif self.path == "/v1/models":
                    self._send(200, json.dumps({"object": "list", "data": [{"id": "fake"}]}).encode())
                else:
                    self._send(404, b"{}")

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                if self.path != "/v1/chat/completions":
                    self._send(404, b"{}")
                    return
                fake.requests.append(body)
                mode = fake.mode
                if mode == "slow":
                    time.sleep(fake.delay_s)
                if body.get("stream") and mode in ("ok", "slow", "stream_break"):
                    self._stream(fake.reply(body) if callable(fake.reply) else fake.reply, mode == "stream_break")
                    return
                if mode == "garbage":
                    self._send(200, b"<html>\x00not json{{{", "application/json")
                elif mode == "error":
                    self._send(500, b'{"error": {"message": "boom"}}')
                elif mode == "nonsense":
                    self._send(200, json.dumps(completion("$$$ ### 42 %% {}")).encode())
                elif mode == "null":
                    self._send(200, json.dumps(completion(None)).encode())
                else:
                    text = fake.reply(body) if callable(fake.reply) else fake.reply
                    alternatives = None
                    if body.get("logprobs") and fake.logprobs is not None:
                        alternatives = fake.logprobs(body) if callable(fake.logprobs) else fake.logprobs
                    if alternatives is not None:
                        alternatives = list(alternatives)[: int(body.get("top_logprobs") or 1)]
                        text = alternatives[0][0] if alternatives else text
                    self._send(200, json.dumps(completion(text, body.get("model", "fake"), alternatives)).encode())

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> FakeOpenAIServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


# Source of a fake `llama-server` executable: parses --port, answers /health (or never, with
# FAKE_LLAMA_NEVER_HEALTHY=1) and /v1/chat/completions with a canned passage. Written to a file named
# `llama-server` by the tests, with the running interpreter in its shebang.
FAKE_LLAMA_SERVER = r"""
import json, os, sys, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

port = int(sys.argv[sys.argv.index("--port") + 1])
never = os.environ.get("FAKE_LLAMA_NEVER_HEALTHY") == "1"
crash = os.environ.get("FAKE_LLAMA_CRASH", "")  # "start" or "answer": die with SIGSEGV, as on an AMX CPU
garbage = os.environ.get("FAKE_LLAMA_GARBAGE") == "1"  # answer every completion with replacement characters
started = time.monotonic()
print("load_tensors: loading model (pid", os.getpid(), ")", flush=True)
if crash == "start":
    import signal
    os.kill(os.getpid(), signal.SIGSEGV)


class H(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def _send(self, status, payload):
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        ready = not never and time.monotonic() - started > 0.3
        self._send(200 if ready else 503, {"status": "ok" if ready else "loading model"})

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if crash == "answer":
            import signal
            import threading
            # A real segfault stops the faulting thread at once; os.kill() would let the kernel deliver the
            # signal to another thread while this one still sends the reply (a flaky test once).
            signal.pthread_kill(threading.get_ident(), signal.SIGSEGV)
        text = "Tiredness often comes from poor sleep; good sleep habits help most people."
        text = "\ufffd\ufffd" if garbage else text
        self._send(200, {"id": "x", "object": "chat.completion", "created": 0, "model": "fake",
                         "choices": [{"index": 0, "finish_reason": "stop",
                                      "message": {"role": "assistant", "content": text}}]})


print("fake llama-server listening", port, flush=True)
ThreadingHTTPServer(("127.0.0.1", port), H).serve_forever()
"""

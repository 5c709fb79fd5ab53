"""A minimal OpenAI-compatible embeddings server around our own encoder (standard library HTTP only).

``chatbot models serve-embeddings [--host 127.0.0.1] [--port 8089]`` serves the rebuilt multilingual-e5-small
(int8 ONNX, `chatbot models build-e5`) at ``POST /v1/embeddings``; ``GET /v1/models`` lists it. Texts are
embedded as sent (the client adds e5's ``query: ``/``passage: ``), like text-embeddings-inference or vLLM.
Requests: ``{"model": ..., "input": str | [str, ...], "encoding_format": "float" | "base64"}``; errors come
back as ``{"error": {"message", "type"}}`` with status 400, 404 or 500.
"""

from __future__ import annotations

import argparse
import base64
import json
import sys
import threading
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np

EmbedFn = Callable[[Sequence[str]], np.ndarray]
MAX_BODY_BYTES = 8 << 20
MAX_INPUTS = 2048


class BadRequest(ValueError):
    """A request this server refuses (status 400)."""


def parse_request(body: bytes) -> tuple[list[str], str]:
    """(texts, encoding_format) of an embeddings request, or BadRequest saying what is wrong."""
    try:
        payload = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BadRequest(f"body is not JSON: {exc}") from exc
    if not isinstance(payload, dict) or "input" not in payload:
        raise BadRequest("expected a JSON object with 'input'")
    texts = payload["input"]
    if isinstance(texts, str):
        texts = [texts]
    if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
        raise BadRequest("'input' must be a string or a non-empty list of strings (token arrays are not supported)")
    if len(texts) > MAX_INPUTS:
        raise BadRequest(f"at most {MAX_INPUTS} inputs per request, got {len(texts)}")
    fmt = payload.get("encoding_format") or "float"
    if fmt not in ("float", "base64"):
        raise BadRequest(f"encoding_format must be 'float' or 'base64', got {fmt!r}")
    return texts, fmt


def response_body(vectors: np.ndarray, texts: Sequence[str], model: str, fmt: str) -> dict:
    """OpenAI's embeddings response: one entry per text, in order; base64 = little-endian float32 bytes."""
    data = []
    for i, vec in enumerate(np.asarray(vectors, dtype="<f4")):
        emb = base64.b64encode(vec.tobytes()).decode("ascii") if fmt == "base64" else [float(x) for x in vec]
        data.append({"object": "embedding", "index": i, "embedding": emb})
    tokens = sum(len(t.split()) for t in texts)  # usage is informative only: whitespace words
    return {"object": "list", "data": data, "model": model, "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}


def make_server(embed: EmbedFn, model: str, host: str = "127.0.0.1", port: int = 8089) -> ThreadingHTTPServer:
    """An HTTP server (not started) answering embeddings requests with ``embed``; ``port=0`` picks a free one."""
    lock = threading.Lock()  # one model, one forward at a time

    class Handler(BaseHTTPRequestHandler):
        def _send(self, status: int, payload: dict) -> None:
            body = json.dumps(payload).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            try:
                self.end_headers()
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):  # the client gave up (its timeout): nothing to send
                pass

        def _error(self, status: int, message: str, kind: str) -> None:
            self._send(status, {"error": {"message": message, "type": kind}})

        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            if self.path.rstrip("/") in ("/v1/models", "/models"):
                self._send(200, {"object": "list", "data": [{"id": model, "object": "model", "owned_by": "local"}]})
            elif self.path == "/health":
                self._send(200, {"status": "ok", "model": model})
            else:
                self._error(404, f"no route {self.path}", "not_found")

        def do_POST(self) -> None:  # noqa: N802
            if self.path.rstrip("/") not in ("/v1/embeddings", "/embeddings"):
                self._error(404, f"no route {self.path}", "not_found")
                return
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY_BYTES:
                self._error(400, f"body over {MAX_BODY_BYTES} bytes", "invalid_request_error")
                return
            try:
                texts, fmt = parse_request(self.rfile.read(length))
                with lock:
                    vectors = embed(texts)
            except BadRequest as exc:
                self._error(400, str(exc), "invalid_request_error")
                return
            except Exception as exc:  # the model failed: say so, keep serving
                self._error(500, f"embedding failed: {exc}", "server_error")
                return
            self._send(200, response_body(vectors, texts, model, fmt))

        def log_message(self, format: str, *args) -> None:  # quiet: the CLI prints one line at start
            pass

    return ThreadingHTTPServer((host, port), Handler)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="chatbot models serve-embeddings", description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8089)
    parser.add_argument("--threads", type=int, default=None, help="default: embedding.threads")
    args = parser.parse_args(argv)
    from chatbot.e5_runtime import E5StandardEmbedder
    from chatbot.settings import load_settings

    s = load_settings().embedding
    try:
        model = E5StandardEmbedder(
            threads=args.threads or s.threads,
            model_dir=s.e5_dir,
            runtime="onnx",
            batch_size=s.batch_size,
            batch_tokens=s.batch_tokens,
        )
    except FileNotFoundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    server = make_server(model.embed_raw, "multilingual-e5-small", args.host, args.port)
    print(f"serving {model.name} at http://{args.host}:{server.server_port}/v1/embeddings", file=sys.stderr)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

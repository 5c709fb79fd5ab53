"""LLM access, always through the ``openai`` client, and the embedded llama-server's lifecycle.

``LLMClient.complete(messages, max_tokens)`` talks to any OpenAI-compatible endpoint (``settings.llm``);
every failure (endpoint down, past the timeout, HTTP error, unparsable answer) becomes one exception,
``LLMUnavailable``, whose ``kind`` says which (``down``, ``timeout``, ``error``, ``garbage``,
``not-installed``), so a pipeline can fall back and say why.

The embedded server is llama.cpp's own ``llama-server`` (scripts/build_llama_server.sh) serving the GGUF of
``settings.llm.model_path`` on 127.0.0.1:``settings.llm.port``. Two ways to run it:

- ``chatbot llm start`` starts it detached (its own session), records it in
  ``data_dir/llm/llama-server-<port>.json`` and waits for ``/health``; ``chatbot llm stop`` ends it.
- With ``llm.autostart``, the first LLM call of a process whose endpoint is the embedded one and does not
  answer starts a server *owned* by that process: it is in its own process group, stopped at exit
  (``atexit``), and gets SIGKILL from the kernel when its parent dies in any way, kill -9 included
  (``prctl(PR_SET_PDEATHSIG)`` in ``preexec_fn``). PR_SET_PDEATHSIG fires when the *thread* that forked
  exits, so the server must be spawned from a long-lived thread (the main thread in the CLI and harness).
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

if TYPE_CHECKING:  # settings (pydantic) load lazily: `chatbot --help` stays instant
    from chatbot.settings import LLMSettings, Settings

# Keyword arguments the openai client takes itself; any other goes into the request body (e.g. llama.cpp's
# ``grammar``, ``cache_prompt``, ``n_probs``).
_OPENAI_KW = {
    "stop",
    "top_p",
    "seed",
    "n",
    "response_format",
    "logprobs",
    "top_logprobs",
    "presence_penalty",
    "frequency_penalty",
    "logit_bias",
}


class LLMUnavailable(RuntimeError):
    """The LLM could not give a usable answer; ``kind`` is down, timeout, error, garbage or not-installed."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message


# -- health and process helpers --------------------------------------------------------------------


def server_root(base_url: str) -> str:
    """http://host:port/v1 -> http://host:port (where llama-server answers /health)."""
    root = base_url.rstrip("/")
    return root[: -len("/v1")] if root.endswith("/v1") else root


def health(base_url: str, timeout: float = 1.0) -> bool:
    """True when GET <root>/health answers 200 (llama-server answers 503 while loading the model)."""
    try:
        with urllib.request.urlopen(server_root(base_url) + "/health", timeout=timeout) as resp:  # noqa: S310
            return resp.status == 200
    except (urllib.error.URLError, OSError, ValueError):
        return False


def is_embedded_endpoint(llm: LLMSettings) -> bool:
    """The endpoint is the one the embedded server would listen on (127.0.0.1:llm.port)."""
    url = urlparse(llm.base_url)
    return url.hostname in ("127.0.0.1", "localhost") and url.port == llm.port


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie (exited, not yet reaped) is not alive for our purposes.
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True


def _is_llama_server(pid: int) -> bool:
    """Guards against pid reuse: only ever signal a process that is a llama-server."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            argv = fh.read().split(b"\0")[:2]  # [binary, ...] or [interpreter, script, ...]
    except OSError:
        return False
    return any(os.path.basename(a).startswith(b"llama-server") for a in argv)


_PR_SET_PDEATHSIG = 1
try:  # resolved in the parent: the forked child must not import or load anything
    _prctl = ctypes.CDLL(None, use_errno=True).prctl
except (OSError, AttributeError):  # pragma: no cover - non-Linux
    _prctl = None


def _die_with_parent(parent_pid: int):
    """preexec_fn: SIGKILL this child when its parent dies; exit at once if it already has."""

    def preexec() -> None:  # runs in the child between fork and exec
        if _prctl is not None:
            _prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        if os.getppid() != parent_pid:  # the parent died before prctl took effect
            os._exit(1)

    return preexec


class EmbeddedServer:
    """llama-server on 127.0.0.1:port serving one GGUF; started owned (dies with us) or detached."""

    def __init__(self, llm: LLMSettings, data_dir: Path) -> None:
        self.llm = llm
        self.dir = Path(data_dir) / "llm"
        self.proc: subprocess.Popen | None = None
        self._atexit = False

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.llm.port}/v1"

    @property
    def pid_file(self) -> Path:
        return self.dir / f"llama-server-{self.llm.port}.json"

    @property
    def log_file(self) -> Path:
        return self.dir / f"llama-server-{self.llm.port}.log"

    def command(self) -> list[str]:
        s = self.llm
        return [
            str(s.server_binary),
            "--model",
            str(s.model_path),
            "--alias",
            s.model,
            "--host",
            "127.0.0.1",
            "--port",
            str(s.port),
            "--ctx-size",
            str(s.ctx_size),
            "--parallel",
            str(s.slots),
            "--threads",
            str(s.threads),
            "--threads-batch",
            str(s.threads),
            "--no-webui",
        ]

    def check_installed(self) -> None:
        s = self.llm
        if not Path(s.server_binary).exists():
            raise LLMUnavailable(
                "not-installed", f"llama-server not found at {s.server_binary}; run scripts/install_llm.py"
            )
        if not Path(s.model_path).exists():
            raise LLMUnavailable("not-installed", f"model not found at {s.model_path}; run scripts/install_llm.py")

    def spawn(self, owned: bool) -> subprocess.Popen:
        """Start the server without waiting for it. owned: dies with this process (see module docstring)."""
        self.check_installed()
        self.dir.mkdir(parents=True, exist_ok=True)
        log = self.log_file.open("ab")
        try:
            kwargs: dict[str, Any] = {"stdin": subprocess.DEVNULL, "stdout": log, "stderr": subprocess.STDOUT}
            if owned:
                kwargs.update(process_group=0, preexec_fn=_die_with_parent(os.getpid()))
            else:
                kwargs.update(start_new_session=True)
            self.proc = subprocess.Popen(self.command(), **kwargs)  # noqa: S603
        finally:
            log.close()
        self._write_pid_file(owned)
        if owned and not self._atexit:
            atexit.register(self.stop_owned)
            self._atexit = True
        return self.proc

    def _write_pid_file(self, owned: bool) -> None:
        assert self.proc is not None
        record = {
            "pid": self.proc.pid,
            "port": self.llm.port,
            "binary": str(self.llm.server_binary),
            "model_path": str(self.llm.model_path),
            "model": self.llm.model,
            "owner_pid": os.getpid() if owned else None,
            "started_at": time.time(),
            "log": str(self.log_file),
        }
        tmp = self.pid_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(record, indent=2), encoding="utf-8")
        tmp.replace(self.pid_file)

    def read_pid_file(self) -> dict[str, Any] | None:
        try:
            return json.loads(self.pid_file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    def wait_healthy(self, timeout: float) -> None:
        """Block until /health answers 200; raises LLMUnavailable if the process exits or time runs out."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if health(self.base_url, timeout=1.0):
                return
            if self.proc is not None and self.proc.poll() is not None:
                raise LLMUnavailable("down", f"llama-server exited with code {self.proc.returncode}: {self.log_tail()}")
            time.sleep(0.2)
        raise LLMUnavailable("timeout", f"llama-server not healthy after {timeout:.0f} s (log: {self.log_file})")

    def log_tail(self, lines: int = 5) -> str:
        try:
            return " | ".join(self.log_file.read_text(errors="replace").strip().splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop_owned(self) -> None:
        """Stop the server this object started (atexit hook; safe to call twice)."""
        if self.proc is None or self.proc.poll() is not None:
            return
        _terminate_group(self.proc.pid, wait=self.proc.wait)
        rec = self.read_pid_file()
        if rec and rec.get("pid") == self.proc.pid:
            self.pid_file.unlink(missing_ok=True)

    def stop_recorded(self) -> dict[str, Any]:
        """Stop the server recorded in the pid file (``chatbot llm stop``)."""
        rec = self.read_pid_file()
        if rec is None:
            return {"stopped": False, "reason": f"no pid file {self.pid_file}"}
        pid = int(rec["pid"])
        if not _pid_alive(pid) or not _is_llama_server(pid):
            self.pid_file.unlink(missing_ok=True)
            return {"stopped": False, "reason": f"pid {pid} is not running (stale pid file removed)"}
        _terminate_group(pid)
        self.pid_file.unlink(missing_ok=True)
        return {"stopped": True, "pid": pid}

    def status(self) -> dict[str, Any]:
        rec = self.read_pid_file()
        pid = int(rec["pid"]) if rec else None
        running = bool(pid and _pid_alive(pid) and _is_llama_server(pid))
        return {
            "endpoint": self.base_url,
            "healthy": health(self.base_url),
            "pid": pid if running else None,
            "owner_pid": rec.get("owner_pid") if rec and running else None,
            "model_path": rec.get("model_path") if rec and running else str(self.llm.model_path),
            "binary": str(self.llm.server_binary),
            "installed": Path(self.llm.server_binary).exists() and Path(self.llm.model_path).exists(),
            "pid_file": str(self.pid_file) if rec else None,
            "log": str(self.log_file),
        }


def _terminate_group(pid: int, wait=None, grace_s: float = 5.0) -> None:
    """SIGTERM the process group led by pid, then SIGKILL after grace_s."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        if wait is not None:
            try:
                wait(timeout=0.1)
                return
            except subprocess.TimeoutExpired:
                continue
        if not _pid_alive(pid):
            return
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    if wait is not None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            wait(timeout=2)


# -- the client --------------------------------------------------------------------------------------


class LLMClient:
    """An OpenAI-compatible chat endpoint; starts the embedded server on demand (``llm.autostart``)."""

    # After a failed start, do not try again for this long (a batch of questions should not pay the
    # start-up wait for each one).
    RETRY_START_AFTER_S = 60.0

    def __init__(self, settings: LLMSettings, data_dir: Path, autostart: bool | None = None) -> None:
        self.settings = settings
        self.autostart = settings.autostart if autostart is None else autostart
        self.server = EmbeddedServer(settings, data_dir)
        self._client = None
        self._lock = threading.Lock()
        self._ready = False
        self._start_failure: tuple[float, LLMUnavailable] | None = None

    @classmethod
    def from_settings(cls, settings: Settings, data_dir: Path | None = None) -> LLMClient:
        return cls(settings.llm, data_dir or settings.paths.data_dir)

    @property
    def name(self) -> str:
        return self.settings.model

    @property
    def client(self):
        if self._client is None:
            import openai

            self._client = openai.OpenAI(
                base_url=self.settings.base_url,
                api_key=self.settings.api_key,
                timeout=self.settings.timeout_s,
                max_retries=self.settings.max_retries,
            )
        return self._client

    # -- readiness ----------------------------------------------------------
    def _manages_server(self) -> bool:
        return self.autostart and is_embedded_endpoint(self.settings)

    def prestart(self) -> bool:
        """Spawn the embedded server if it is needed and not up, without waiting (call from a long-lived
        thread). Returns True if a server was spawned. Never raises: errors surface in ``complete``."""
        if self._ready or not self._manages_server():
            return False
        with self._lock:
            if self.server.proc is not None and self.server.proc.poll() is None:
                return False
            if self._recent_start_failure() or health(self.settings.base_url, timeout=0.5):
                return False
            try:
                self.server.spawn(owned=True)
            except LLMUnavailable as exc:
                self._start_failure = (time.monotonic(), exc)
                return False
            return True

    def _recent_start_failure(self) -> LLMUnavailable | None:
        if self._start_failure and time.monotonic() - self._start_failure[0] < self.RETRY_START_AFTER_S:
            return self._start_failure[1]
        return None

    def ensure_ready(self) -> None:
        """For the embedded endpoint with autostart: make sure a healthy server answers (starting one)."""
        if self._ready or not self._manages_server():
            return
        with self._lock:
            if self._ready:
                return
            failure = self._recent_start_failure()
            if failure is not None:
                raise failure
            if health(self.settings.base_url, timeout=1.0):
                self._ready = True
                return
            try:
                if self.server.proc is None or self.server.proc.poll() is not None:
                    self.server.spawn(owned=True)
                self.server.wait_healthy(self.settings.startup_timeout_s)
            except LLMUnavailable as exc:
                self._start_failure = (time.monotonic(), exc)
                self.server.stop_owned()
                raise
            self._ready = True

    def close(self) -> None:
        """Stop a server this client started (also done at exit)."""
        self.server.stop_owned()
        self._ready = False

    # -- calls --------------------------------------------------------------
    def complete(self, messages: list[dict[str, str]], max_tokens: int, temperature: float = 0.0, **kw: Any) -> str:
        """The assistant's text for ``messages``; raises LLMUnavailable on any failure."""
        return self.complete_with_stats(messages, max_tokens, temperature, **kw)[0]

    def complete_with_stats(
        self, messages: list[dict[str, str]], max_tokens: int, temperature: float = 0.0, **kw: Any
    ) -> tuple[str, dict[str, Any]]:
        """(text, stats): stats has the call's wall time, token counts and the server's own timings."""
        return self._create(messages, max_tokens, temperature, **kw)[:2]

    def token_logprobs(
        self, messages: list[dict[str, str]], top_logprobs: int = 10, max_tokens: int = 1, **kw: Any
    ) -> tuple[str, list[list[tuple[str, float]]], dict[str, Any]]:
        """One greedy completion with the log-probabilities of the likeliest alternatives of each generated
        token: (text, per token [(token, logprob), ...] best first, stats). No free generation: the caller
        reads a distribution (e.g. over True/False with max_tokens 1)."""
        text, stats, resp = self._create(messages, max_tokens, 0.0, logprobs=True, top_logprobs=top_logprobs, **kw)
        try:
            content = resp.choices[0].logprobs.content or []
            alternatives = [[(str(t.token), float(t.logprob)) for t in (tok.top_logprobs or [])] for tok in content]
        except (AttributeError, IndexError, TypeError, ValueError) as exc:
            raise LLMUnavailable("garbage", f"no log-probabilities in the response: {str(resp)[:200]!r}") from exc
        return text, alternatives, stats

    def stream(self, messages: list[dict[str, str]], max_tokens: int, temperature: float = 0.0) -> Iterator[str]:
        """The assistant's text for ``messages`` as it is generated (``stream: true``), one piece at a time;
        raises LLMUnavailable on any failure, before or during the stream (also when the stream ends without
        a finish reason: a cut connection must not pass for a whole reply)."""
        import httpx
        import openai
        import pydantic

        self.ensure_ready()
        try:
            chunks = self.client.chat.completions.create(
                model=self.settings.model,
                messages=messages,
                max_tokens=max_tokens,
                temperature=temperature,
                stream=True,
            )
            finished = False
            for chunk in chunks:
                choices = getattr(chunk, "choices", None) or []
                piece = getattr(getattr(choices[0], "delta", None), "content", None) if choices else None
                if isinstance(piece, str) and piece:
                    yield piece
                finished = finished or bool(choices and getattr(choices[0], "finish_reason", None))
            if not finished:
                raise LLMUnavailable("down", f"the stream from {self.settings.base_url} ended before the reply did")
        except httpx.HTTPError as exc:  # the connection broke during the stream
            raise LLMUnavailable("down", f"stream from {self.settings.base_url} broke: {exc}") from exc
        except (openai.OpenAIError, pydantic.ValidationError, ValueError, TypeError, AttributeError) as exc:
            raise self._unavailable(exc, "unparsable stream") from exc

    def _unavailable(self, exc: Exception, garbage: str) -> LLMUnavailable:
        """The LLMUnavailable for an openai-client failure: timeout, down (also forgets readiness), HTTP error,
        or anything else unparsable (``garbage`` names what)."""
        import openai

        if isinstance(exc, openai.APITimeoutError):
            return LLMUnavailable("timeout", f"no answer within {self.settings.timeout_s:g} s")
        if isinstance(exc, openai.APIConnectionError):
            self._ready = False
            return LLMUnavailable("down", f"cannot reach {self.settings.base_url}: {exc}")
        if isinstance(exc, openai.APIStatusError):
            return LLMUnavailable("error", f"HTTP {exc.status_code} from {self.settings.base_url}")
        return LLMUnavailable("garbage", f"{garbage}: {type(exc).__name__}: {exc}")

    def _create(
        self, messages: list[dict[str, str]], max_tokens: int, temperature: float = 0.0, **kw: Any
    ) -> tuple[str, dict[str, Any], Any]:
        """(text, stats, raw response) of one chat completion; every failure is an LLMUnavailable."""
        import openai
        import pydantic

        self.ensure_ready()
        extra = {k: kw.pop(k) for k in list(kw) if k not in _OPENAI_KW}
        start = time.perf_counter()
        try:
            resp = self.client.chat.completions.create(
                model=self.settings.model,
                messages=messages,
                max_tokens=max_tokens,
                temperature=temperature,
                extra_body=extra or None,
                **kw,
            )
        except (openai.OpenAIError, pydantic.ValidationError, ValueError, TypeError) as exc:
            raise self._unavailable(exc, "unparsable response") from exc
        elapsed = (time.perf_counter() - start) * 1000
        try:
            text = resp.choices[0].message.content
        except (AttributeError, IndexError, TypeError) as exc:
            raise LLMUnavailable("garbage", f"malformed response: {str(resp)[:200]!r}") from exc
        if not isinstance(text, str):
            raise LLMUnavailable("garbage", f"no text in the response: {str(resp)[:200]!r}")
        stats: dict[str, Any] = {"ms": round(elapsed, 1), "model": self.settings.model}
        usage = getattr(resp, "usage", None)
        if usage is not None:
            stats["prompt_tokens"] = getattr(usage, "prompt_tokens", None)
            stats["completion_tokens"] = getattr(usage, "completion_tokens", None)
        timings = getattr(resp, "timings", None)  # llama-server's own prompt/generation timings
        if isinstance(timings, dict):
            stats["server"] = {
                k: round(float(v), 2)
                for k, v in timings.items()
                if k in ("prompt_n", "prompt_ms", "predicted_n", "predicted_ms", "cache_n")
            }
        return text, stats, resp


# -- `chatbot llm start|stop|status` -------------------------------------------------------------------


def add_cli(sub) -> None:
    """Register ``chatbot llm start|stop|status`` on the CLI's subparsers."""
    p = sub.add_parser("llm", help="the embedded llama-server: start, stop, status")
    lsub = p.add_subparsers(dest="llm_command", required=True)
    s = lsub.add_parser("start", help="start llama-server detached and wait for /health")
    s.add_argument("--model-path", type=Path, default=None, help="GGUF to serve (default: settings llm.model_path)")
    s.add_argument("--port", type=int, default=None, help="default: settings llm.port")
    s.set_defaults(func=_cmd_start)
    s = lsub.add_parser("stop", help="stop the server recorded in the pid file")
    s.add_argument("--port", type=int, default=None)
    s.set_defaults(func=_cmd_stop)
    s = lsub.add_parser("status", help="pid, health and model of the embedded server (JSON)")
    s.add_argument("--port", type=int, default=None)
    s.set_defaults(func=_cmd_status)


def _server_for(args) -> EmbeddedServer:
    from chatbot.settings import load_settings

    settings = load_settings()
    updates: dict[str, Any] = {}
    if getattr(args, "port", None):
        updates["port"] = args.port
    if getattr(args, "model_path", None):
        updates["model_path"] = args.model_path
    llm = settings.llm.model_copy(update=updates)
    return EmbeddedServer(llm, settings.paths.data_dir)


def _cmd_start(args) -> int:
    server = _server_for(args)
    status = server.status()
    if status["healthy"]:
        print(json.dumps({"started": False, "reason": "already running", **status}))
        return 0
    try:
        server.spawn(owned=False)
        server.wait_healthy(server.llm.startup_timeout_s)
    except LLMUnavailable as exc:
        if server.proc is not None and server.proc.poll() is None:
            _terminate_group(server.proc.pid, wait=server.proc.wait)
        server.pid_file.unlink(missing_ok=True)
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(json.dumps({"started": True, **server.status()}))
    return 0


def _cmd_stop(args) -> int:
    result = _server_for(args).stop_recorded()
    print(json.dumps(result))
    return 0 if result["stopped"] else 1


def _cmd_status(args) -> int:
    status = _server_for(args).status()
    print(json.dumps(status, indent=2))
    return 0 if status["healthy"] else 1

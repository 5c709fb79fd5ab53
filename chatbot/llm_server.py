"""The embedded llama-server's lifecycle: start (owned or detached), health, stop, and crash diagnosis.

The server is llama.cpp's own ``llama-server`` (built per CPU by ``chatbot.llm_runtime``) serving the GGUF of
``settings.llm.model_path`` on 127.0.0.1:``settings.llm.port``. Two ways to run it:

- ``chatbot llm start`` starts it detached (its own session), records it in
  ``data_dir/llm/llama-server-<port>.json`` and waits for ``/health``; ``chatbot llm stop`` ends it.
- With ``llm.autostart``, the first LLM call of a process whose endpoint is the embedded one and does not
  answer starts a server *owned* by that process: it is in its own process group, stopped at exit
  (``atexit``), and gets SIGKILL from the kernel when its parent dies in any way, kill -9 included
  (``prctl(PR_SET_PDEATHSIG)`` in ``preexec_fn``). PR_SET_PDEATHSIG fires when the *thread* that forked
  exits, so the server must be spawned from a long-lived thread (the main thread in the CLI and harness).

A server that dies is diagnosed (``diagnose_exit``): the signal, the likely cause on this CPU and the fix.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import json
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from chatbot import llm_runtime

if TYPE_CHECKING:
    from chatbot.settings import LLMSettings


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
        self._log_offset = 0

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
            *([] if s.repack else ["--no-repack"]),
        ]

    def check_installed(self) -> None:
        s = self.llm
        if not Path(s.server_binary).exists():
            raise LLMUnavailable(
                "not-installed",
                f"llama-server not found at {s.server_binary} (variant {s.server_variant} for this CPU); build it "
                f"with `python -m chatbot.llm_runtime build --variant {s.server_variant}` (or `make llm`)",
            )
        if not Path(s.model_path).exists():
            raise LLMUnavailable("not-installed", f"model not found at {s.model_path}; run scripts/install_llm.py")

    def spawn(self, owned: bool) -> subprocess.Popen:
        """Start the server without waiting for it. owned: dies with this process (see module docstring)."""
        self.check_installed()
        self.dir.mkdir(parents=True, exist_ok=True)
        log = self.log_file.open("ab")
        self._log_offset = log.tell()  # log_tail shows this start's lines only
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
                raise LLMUnavailable("down", self.diagnose())
            time.sleep(0.2)
        raise LLMUnavailable("timeout", f"llama-server not healthy after {timeout:.0f} s (log: {self.log_file})")

    def log_tail(self, lines: int = 5) -> str:
        """The last lines this start wrote to the log, joined by " | "."""
        try:
            with self.log_file.open("rb") as fh:
                fh.seek(self._log_offset)
                text = fh.read().decode(errors="replace")
        except OSError:
            return "(no log)"
        return " | ".join(text.strip().splitlines()[-lines:]) or "(empty log)"

    def diagnose(self) -> str:
        """Why the server this object started is gone: exit, cause and fix (see ``diagnose_exit``)."""
        code = self.proc.poll() if self.proc is not None else None
        return diagnose_exit(code, self.log_tail(), self.llm.server_variant, self.llm.repack)

    def stop_owned(self) -> None:
        """Stop the server this object started (atexit hook; safe to call twice)."""
        if self.proc is None or self.proc.poll() is not None:
            return
        terminate_group(self.proc.pid, wait=self.proc.wait)
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
        terminate_group(pid)
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


def terminate_group(pid: int, wait=None, grace_s: float = 5.0) -> None:
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


def diagnose_exit(
    returncode: int | None, log_tail: str, variant: str, repack: bool, flags: list[str] | None = None
) -> str:
    """A crashed server's exit, its likely cause on this CPU and the fix, for an error message."""
    if returncode is None:
        return f"llama-server stopped answering (still running); log: {log_tail}"
    if returncode < 0:
        try:
            what = signal.Signals(-returncode).name
        except ValueError:
            what = f"signal {-returncode}"
    else:
        what = f"exit code {returncode}"
    head = f"llama-server died ({what}) while starting or answering"
    if returncode == -signal.SIGILL:
        return (
            f"{head}: the binary uses instructions this CPU lacks (built on another machine). Fix: rebuild "
            f"for this CPU with `python -m chatbot.llm_runtime build --variant {variant} --force`. Log: {log_tail}"
        )
    if returncode == -signal.SIGSEGV and llm_runtime.has_amx(flags) and (variant == "native" and repack):
        return (
            f"{head}: Intel AMX kernels crash on this CPU. Fix: llm.repack=false, or the native-noamx build "
            "(llm.server_variant=native-noamx; python -m chatbot.llm_runtime build). Crash site: llama.cpp's "
            f"ggml_backend_amx_mul_mat while loading the model. Log: {log_tail}"
        )
    return (
        f"{head}. Fix: check the model file (llm.model_path) and the log; `chatbot doctor` checks the whole "
        f"runtime; rebuild with `python -m chatbot.llm_runtime build --variant {variant} --force`. Log: {log_tail}"
    )

"""``chatbot llm start|stop|status|check``: the embedded llama-server from the command line."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from chatbot.llm import LLMClient
from chatbot.llm_server import EmbeddedServer, LLMUnavailable, terminate_group

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
    s = lsub.add_parser("check", help="start a server of our own, smoke-check it with a one-token completion, stop it")
    s.add_argument("--model-path", type=Path, default=None, help="GGUF to serve (default: settings llm.model_path)")
    s.add_argument("--port", type=int, default=None, help="default: settings llm.port + 1 (leaves a running one be)")
    s.set_defaults(func=_cmd_check)


def _server_for(args, default_port_offset: int = 0) -> EmbeddedServer:
    from chatbot.settings import load_settings

    settings = load_settings()
    port = getattr(args, "port", None) or settings.llm.port + default_port_offset
    updates: dict[str, Any] = {"port": port, "base_url": f"http://127.0.0.1:{port}/v1"}
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
        reply = _smoke(server)
    except LLMUnavailable as exc:
        if server.proc is not None and server.proc.poll() is None:
            terminate_group(server.proc.pid, wait=server.proc.wait)
        server.pid_file.unlink(missing_ok=True)
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(json.dumps({"started": True, "smoke_reply": reply, **server.status()}))
    return 0


def _smoke(server: EmbeddedServer) -> str:
    """The one-token smoke check through the openai client, against ``server`` (already healthy)."""
    client = LLMClient(server.llm, server.dir.parent, autostart=False)
    client.server = server  # diagnose this process's server when it dies on the check
    return client.smoke_check()


def _cmd_check(args) -> int:
    """Owned server on a spare port: spawn, wait, smoke-check, stop. Exit 1 with the diagnosis on failure."""
    server = _server_for(args, default_port_offset=1)
    try:
        server.spawn(owned=True)
        server.wait_healthy(server.llm.startup_timeout_s)
        reply = _smoke(server)
    except LLMUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    finally:
        server.stop_owned()
    print(
        json.dumps(
            {
                "ok": True,
                "smoke_reply": reply,
                "binary": str(server.llm.server_binary),
                "variant": server.llm.server_variant,
                "repack": server.llm.repack,
                "model_path": str(server.llm.model_path),
            }
        )
    )
    return 0


def _cmd_stop(args) -> int:
    result = _server_for(args).stop_recorded()
    print(json.dumps(result))
    return 0 if result["stopped"] else 1


def _cmd_status(args) -> int:
    status = _server_for(args).status()
    print(json.dumps(status, indent=2))
    return 0 if status["healthy"] else 1

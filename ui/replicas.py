"""`chatbot serve --workers N` on one host: N app replicas (each a whole `chatbot serve` process on its own
loopback port, port+1 .. port+N) behind HAProxy on ``port``, supervised: a replica that dies is started again,
SIGTERM/SIGINT stops them all.

Why processes and a balancer rather than uvicorn's workers: a Gradio event is two requests (join the queue,
then read its event stream) that must reach the same process, and uvicorn's workers share one socket with no
affinity. HAProxy sends the pages' requests to one replica per browser (a cookie; another one when that
replica is down, where the patient's conversation and the staff pages' review or Likert session go on: their
state is in the browser and the database) and the JSON API's to the least busy replica. Everything else a
request needs is in the database."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HEALTH_PATH = "/api/v1/ready"


def haproxy_config(
    port: int,
    replicas: list[tuple[str, int]],
    bind_host: str = "127.0.0.1",
    pidfile: str | None = None,
    timeout_s: int = 300,
    docker_dns: bool = False,
) -> str:
    """HAProxy's configuration for ``replicas`` ((host, port) each) behind ``bind_host:port``.

    Pages: sticky per browser (cookie ``cb_replica``), redispatched when their replica is down. API: least
    connections, no stickiness (a conversation is in the database). A request whose replica refuses the
    connection or closes it before answering anything is retried on another replica (the request is buffered
    whole first, which L7 retries need); the client's own address goes to the app in X-Forwarded-For
    (uvicorn trusts it from 127.0.0.1: FORWARDED_ALLOW_IPS).
    ``docker_dns``: replicas named by service (compose), resolved through Docker's DNS, so HAProxy starts (and
    follows a restarted container's new address) whether or not a replica is up yet."""
    dns = " resolvers docker init-addr last,libc,none" if docker_dns else ""
    servers_api = "\n".join(
        f"    server r{i} {h}:{p} check inter 2s fall 2 rise 1{dns}" for i, (h, p) in enumerate(replicas, 1)
    )
    servers_pages = "\n".join(  # the same servers, their health taken from the api backend's checks
        f"    server r{i} {h}:{p} track api/r{i} cookie r{i}{dns}" for i, (h, p) in enumerate(replicas, 1)
    )
    pid_line = f"    pidfile {pidfile}\n" if pidfile else ""
    resolvers = "\nresolvers docker\n    nameserver dns 127.0.0.11:53\n    hold valid 10s\n" if docker_dns else ""
    return f"""global
    maxconn 4096
{pid_line}
defaults
    mode http
    log stdout format raw local0 info
    option httplog
    option redispatch
    retries 2
    retry-on conn-failure empty-response
    option http-buffer-request
    timeout connect 2s
    timeout client {timeout_s}s
    timeout server {timeout_s}s
    timeout http-request 30s
    timeout http-keep-alive 10s
    timeout queue 60s
{resolvers}
frontend chatbot
    bind {bind_host}:{port}
    http-request set-header X-Forwarded-For %[src]
    use_backend api if {{ path_beg /api/ }}
    default_backend pages

backend api
    balance leastconn
    option httpchk GET {HEALTH_PATH}
    http-check expect status 200
{servers_api}

backend pages
    balance leastconn
    cookie cb_replica insert indirect nocache httponly
{servers_pages}
"""


def replica_command(host: str, port: int) -> list[str]:
    """The command line of one replica (a plain `chatbot serve`)."""
    return [sys.executable, "-m", "chatbot.cli", "serve", "--host", host, "--port", str(port)]


def serve_replicas(host: str, port: int, workers: int, pid_dir: Path | None = None, balancer: bool = True) -> int:
    """Run ``workers`` replicas on ports port+1.. and HAProxy on ``port`` until SIGTERM/SIGINT; restart a replica
    that exits. ``pid_dir`` gets replica-PORT.pid per replica (and haproxy.pid). Returns the exit status."""
    if workers < 1:
        raise ValueError("--workers must be at least 1")
    haproxy = shutil.which("haproxy") or ("/usr/sbin/haproxy" if Path("/usr/sbin/haproxy").exists() else None)
    if balancer and haproxy is None:
        print(
            "chatbot serve --workers needs HAProxy in front of the replicas: install the Debian package "
            "(`apt-get install haproxy`, or `make system-deps`), or pass --no-balancer and run your own",
            file=sys.stderr,
        )
        return 2
    ports = [port + i for i in range(1, workers + 1)]
    pid_dir = Path(pid_dir) if pid_dir else Path(tempfile.mkdtemp(prefix="chatbot-replicas-"))
    pid_dir.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    children: dict[int, subprocess.Popen] = {}

    def start(p: int) -> None:
        children[p] = subprocess.Popen(replica_command(host, p), env=env)
        (pid_dir / f"replica-{p}.pid").write_text(f"{children[p].pid}\n")
        print(f"replica on http://{host}:{p}/ (pid {children[p].pid})", flush=True)

    stopping = False

    def stop(signum: int, _frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    for p in ports:
        start(p)
    proxy = None
    if balancer:
        cfg = pid_dir / "haproxy.cfg"
        cfg.write_text(haproxy_config(port, [(host, p) for p in ports], host))
        proxy = subprocess.Popen([haproxy, "-W", "-db", "-f", str(cfg)])
        (pid_dir / "haproxy.pid").write_text(f"{proxy.pid}\n")
        print(f"serving on http://{host}:{port}/ (HAProxy over {workers} replicas)", flush=True)
    restarted: dict[int, float] = {}
    due: dict[int, float] = {}
    try:
        while not stopping:
            time.sleep(0.5)
            if proxy is not None and proxy.poll() is not None:
                print(f"HAProxy exited ({proxy.returncode}): stopping", file=sys.stderr)
                return 1
            now = time.time()
            for p, child in list(children.items()):
                if child.poll() is None or stopping:
                    continue
                if p not in due:
                    wait = 1.0 if now - restarted.get(p, 0) > 30 else 10.0  # a crash loop slows down
                    print(f"replica on port {p} exited ({child.returncode}); restarting in {wait:.0f} s", flush=True)
                    due[p] = now + wait
                elif now >= due[p]:
                    del due[p]
                    restarted[p] = now
                    start(p)
    finally:
        for proc in [*children.values(), *([proxy] if proxy else [])]:
            if proc.poll() is None:
                proc.terminate()
        deadline = time.time() + 15
        for proc in [*children.values(), *([proxy] if proxy else [])]:
            try:
                proc.wait(timeout=max(0.1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                proc.kill()
    return 0

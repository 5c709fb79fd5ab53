"""Bounded loopback load test of the patient chat: N concurrent patient sessions against `chatbot serve`.

    python -m evaluation.loadtest [--via api|page] [--sessions 50] [--questions 2] [--pipeline dense+rerank]

Starts its own server (a subprocess on a free 127.0.0.1 port, data in a temp dir with the demo corpus
ingested, an API token created with `chatbot tokens create`), opens N sessions at once and reports
p50/p95/max latency and errors. ``--via api`` (default): each session asks its questions through the JSON API
(POST /api/v1/answer with its token, one conversation per session). ``--via page``: each session loads the
page and asks through the same Gradio queue events as the browser (answer, then stream).
Bounded: N x questions requests, a global deadline, loopback only; the server is stopped at the end."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np

from chatbot.settings import DEMO_CORPUS
from evaluation.evaluator import Benchmark
from evaluation.report import Report, add_output_args, output_target

PROG = "python -m evaluation.loadtest"

QUESTIONS = [
    "Is it safe to drink coffee when pregnant?",
    "How much folic acid should I take before and during pregnancy?",
    "Can I drink alcohol while pregnant?",
    "My baby has a fever, what should I do?",
    "How should I put my baby to sleep safely?",
    "How do I help my baby latch when breastfeeding?",
    "What helps with morning sickness?",
    "Which foods should I avoid in pregnancy?",
    "What are the signs that labour has started?",
    "Is it safe to fly when pregnant?",
    "What can I do about heartburn in pregnancy?",
    "When will I feel my baby move?",
    "How can I relieve back pain in pregnancy?",
    "What is gestational diabetes?",
    "What vaccines do I need in pregnancy?",
    "How do I look after the umbilical cord stump?",
    "Is it normal to feel so tired in early pregnancy?",
    "When should my baby start solid food?",
    "Posso bere caffè in gravidanza?",
    "What are the symptoms of pre-eclampsia?",
]


def _settings():
    from chatbot.settings import load_settings

    return load_settings()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def _event(client, fn_index: int, data: list[Any], session_hash: str, deadline: float) -> dict[str, Any]:
    r = await client.post(
        "/gradio_api/queue/join",
        json={"data": data, "fn_index": fn_index, "session_hash": session_hash, "event_data": None, "trigger_id": None},
    )
    r.raise_for_status()
    async with client.stream("GET", "/gradio_api/queue/data", params={"session_hash": session_hash}) as stream:
        async for line in stream.aiter_lines():
            if time.monotonic() > deadline:
                raise TimeoutError("deadline")
            if line.startswith("data:"):
                msg = json.loads(line[5:])
                if msg.get("msg") == "process_completed":
                    if not msg.get("success"):
                        raise RuntimeError(str(msg.get("output"))[:200])
                    return msg
    raise RuntimeError("stream ended early")


async def patient_session(base: str, questions: list[str], deadline: float, results: list[dict[str, Any]]) -> None:
    import httpx

    async with httpx.AsyncClient(base_url=base, timeout=httpx.Timeout(300.0)) as client:
        t0 = time.perf_counter()
        try:
            (await client.get("/")).raise_for_status()
            results.append({"kind": "page", "ms": (time.perf_counter() - t0) * 1000, "ok": True})
        except Exception as exc:  # noqa: BLE001 - every failure is counted, none stops the test
            results.append({"kind": "page", "ms": (time.perf_counter() - t0) * 1000, "ok": False, "error": repr(exc)})
        session_hash = uuid.uuid4().hex[:12]
        history: list[Any] = []
        conv: Any = None
        for q in questions:
            t0 = time.perf_counter()
            try:
                first = await _event(client, 0, [q, history, conv], session_hash, deadline)
                t_answer = (time.perf_counter() - t0) * 1000
                # the conversation state is held by the page (a hidden component): it goes back with the event
                final = await _event(client, 1, first["output"]["data"][:2], session_hash, deadline)
                history, conv = final["output"]["data"][0], final["output"]["data"][1]
                text = str(history[-1]["content"])
                links = text.count("](https://")
                ok = links == 3
                results.append(
                    {"kind": "answer", "ms": (time.perf_counter() - t0) * 1000, "answer_ms": t_answer, "ok": ok,
                     "links": links, **({} if ok else {"error": f"{links} links"})}
                )  # fmt: skip
            except Exception as exc:  # noqa: BLE001
                results.append({"kind": "answer", "ms": (time.perf_counter() - t0) * 1000, "ok": False,
                                "error": repr(exc)[:200]})  # fmt: skip


async def api_session(
    base: str, questions: list[str], deadline: float, results: list[dict[str, Any]], token: str
) -> None:
    """One patient through the JSON API: one conversation, its questions one after the other."""
    import httpx

    headers = {"authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=base, timeout=httpx.Timeout(300.0), headers=headers) as client:
        conversation = None
        for q in questions:
            if time.monotonic() > deadline:
                return
            t0 = time.perf_counter()
            try:
                r = await client.post("/api/v1/answer", json={"question": q, "conversation_id": conversation})
                r.raise_for_status()
                body = r.json()
                conversation = body["conversation_id"]
                links = len(body["links"])
                ok = links == 3
                ms = (time.perf_counter() - t0) * 1000
                results.append({"kind": "answer", "ms": ms, "answer_ms": ms, "ok": ok, "links": links,
                                **({} if ok else {"error": f"{links} links"})})  # fmt: skip
            except Exception as exc:  # noqa: BLE001 - every failure is counted, none stops the test
                results.append({"kind": "answer", "ms": (time.perf_counter() - t0) * 1000, "ok": False,
                                "error": repr(exc)[:200]})  # fmt: skip


async def run_load(
    base: str, sessions: int, per_session: int, timeout_s: float, seed: int, token: str | None = None
) -> dict[str, Any]:
    """Every session at once, through the API when ``token`` is given, else through the page's events."""
    rng = random.Random(seed)
    plans = [[rng.choice(QUESTIONS) for _ in range(per_session)] for _ in range(sessions)]
    results: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout_s
    start = time.perf_counter()
    tasks = [
        asyncio.create_task(
            api_session(base, plan, deadline, results, token)
            if token
            else patient_session(base, plan, deadline, results)
        )
        for plan in plans
    ]
    done, pending = await asyncio.wait(tasks, timeout=timeout_s + 5)
    for task in pending:
        task.cancel()
    wall = time.perf_counter() - start
    answers = [r for r in results if r["kind"] == "answer"]
    ok = [r["ms"] for r in answers if r["ok"]]
    pages = [r["ms"] for r in results if r["kind"] == "page" and r["ok"]]

    def pct(values: list[float], p: float) -> float | None:
        return round(float(np.percentile(values, p)), 1) if values else None

    return {
        "sessions": sessions,
        "questions_per_session": per_session,
        "requests": sessions * per_session,
        "answered": len(ok),
        "errors": len([r for r in answers if not r["ok"]]) + (sessions * per_session - len(answers)),
        "error_samples": sorted({r.get("error", "") for r in results if not r["ok"]})[:5],
        "latency_ms": {"p50": pct(ok, 50), "p95": pct(ok, 95), "max": round(max(ok), 1) if ok else None},
        "answer_only_ms": {
            "p50": pct([r["answer_ms"] for r in answers if r["ok"]], 50),
            "p95": pct([r["answer_ms"] for r in answers if r["ok"]], 95),
        },  # fmt: skip
        "page_ms": {"p50": pct(pages, 50), "p95": pct(pages, 95)},
        "wall_s": round(wall, 1),
        "throughput_per_s": round(len(ok) / wall, 2) if wall else None,
        "timed_out_sessions": len(pending),
    }


def start_server(data_dir: Path, port: int, pipeline: str, env_extra: dict[str, str]) -> subprocess.Popen:
    env = {
        **os.environ,
        "CHATBOT_PATHS__DATA_DIR": str(data_dir),
        "CHATBOT_RETRIEVAL__PIPELINE": pipeline,
        "GRADIO_ANALYTICS_ENABLED": "False",
        "HF_HUB_OFFLINE": "1",
        # every simulated patient comes from 127.0.0.1: the per-address limits would measure themselves
        "CHATBOT_SERVER__CHAT_RATE_PER_MINUTE": "0",
        "CHATBOT_SERVER__API_CLIENT_RATE_PER_MINUTE": "0",
        **env_extra,
    }
    chatbot = [sys.executable, "-m", "chatbot.cli"]
    subprocess.run([*chatbot, "ingest", str(DEMO_CORPUS), "--quiet"], check=True, env=env, stdout=subprocess.DEVNULL)
    return subprocess.Popen([*chatbot, "serve", "--host", "127.0.0.1", "--port", str(port)], env=env,
                            stdout=subprocess.DEVNULL, start_new_session=True)  # fmt: skip


def create_token(data_dir: Path, pipeline: str) -> str:
    """An API token for the load (its per-token limit far above the bounded request count)."""
    env = {**os.environ, "CHATBOT_PATHS__DATA_DIR": str(data_dir), "CHATBOT_RETRIEVAL__PIPELINE": pipeline}
    out = subprocess.run(
        [sys.executable, "-m", "chatbot.cli", "tokens", "create", "loadtest", "--rate-per-minute", "100000"],
        check=True, env=env, capture_output=True, text=True,
    )  # fmt: skip
    return json.loads(out.stdout)["token"]


def wait_ready(base: str, proc: subprocess.Popen, timeout_s: float = 180) -> None:
    import httpx

    deadline = time.time() + timeout_s
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        try:
            if httpx.get(base + "/healthz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise RuntimeError("server did not become ready")


def metrics(result: dict[str, Any]) -> dict[str, float]:
    """Primary: the p95 latency (ms) under load; errors, answers and throughput beside it."""
    return {
        "latency_p95_ms": result["latency_ms"]["p95"],
        "latency_p50_ms": result["latency_ms"]["p50"],
        "errors": result["errors"],
        "answered": result["answered"],
        "throughput_per_s": result["throughput_per_s"],
    }


def render(result: dict[str, Any], args: argparse.Namespace, name: str = "loadtest") -> Report:
    """The report: the exact load (every option written out), the machine, the latency table."""
    lat, ans = result["latency_ms"], result["answer_only_ms"]
    note = (
        f" ({time.strftime('%Y-%m-%d')}, {os.cpu_count()} CPU cores, "
        f"embedding.model {_settings().embedding.model}, memory on with {_settings().store.memory_embedder}, "
        f"Python {platform.python_version()}). The server (`chatbot serve`, default server settings: "
        f"answer_concurrency 2, stream_delay_ms 20) ran in its own process on 127.0.0.1 with the demo corpus; "
        "the load generator in another. "
        + (
            "Each session asks its questions one after the other through the JSON API (POST /api/v1/answer with "
            "a bearer token, one conversation per session); all sessions start at once. Latency = request sent "
            "→ JSON answer (3 links) received."
            if args.via == "api"
            else "Each session loads the page, then asks its questions one after the other through the "
            "browser's two queue events (answer, then streamed display); all sessions start at once. Latency = "
            "question sent → last streamed chunk (3 links) received."
        )
    )
    lines = [
        "| metric | value |",
        "|---|---|",
        f"| concurrent sessions | {result['sessions']} |",
        f"| questions | {result['requests']} ({result['questions_per_session']} per session) |",
        f"| answered with 3 links | {result['answered']} |",
        f"| **errors** | **{result['errors']}** |",
        f"| latency p50 / p95 / max | {lat['p50']} / {lat['p95']} / {lat['max']} ms |",
        f"| of which answer event p50 / p95 | {ans['p50']} / {ans['p95']} ms |",
        *(
            [f"| page load p50 / p95 | {result['page_ms']['p50']} / {result['page_ms']['p95']} ms |"]
            if args.via == "page"
            else []
        ),
        f"| wall time | {result['wall_s']} s ({result['throughput_per_s']} answers/s) |",
        f"| machine load average (1 min) before / after | {result['load_average_1min']['before']} / "
        f"{result['load_average_1min']['after']} (2 cores shared with other jobs) |",
        "",
        "Latency under load is mostly queueing: answers are computed at most `server.answer_concurrency` at a "
        "time (CPU-bound pipeline on 2 cores), the others wait (in Gradio's queue for the page, bounded by "
        "`server.queue_size`; in the server's thread pool for the API). The page's streaming runs outside that "
        "limit.",
    ]
    if result["error_samples"]:
        lines += ["", "Error samples: " + "; ".join(result["error_samples"])]
    command = (
        f"{PROG} --via {args.via} --sessions {args.sessions} --questions {args.questions} --pipeline {args.pipeline}"
    )
    return Report(
        name=name,
        title="Load test: concurrent patient sessions (loopback)",
        command=command,
        command_note=note,
        body=lines,
        summary=result,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--questions", type=int, default=2, help="questions per session")
    parser.add_argument("--pipeline", default="dense+rerank")
    parser.add_argument("--timeout", type=float, default=600, help="global deadline in seconds")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--url", default=None, help="an already running server on loopback (skips starting one)")
    parser.add_argument("--via", choices=("api", "page"), default="api", help="the JSON API or the page's events")
    parser.add_argument("--token", default=os.environ.get("CHATBOT_API_TOKEN"), help="API token for --url --via api")
    add_output_args(parser, "loadtest")
    args = parser.parse_args(argv)
    if not 1 <= args.sessions <= 200 or not 1 <= args.questions <= 10:
        parser.error("bounded: 1-200 sessions, 1-10 questions each")
    out_dir, name = output_target(args.out, args.name)
    bench = Benchmark(name, "latency_p95_ms", lambda: measure(parser, args), metrics, lambda r: render(r, args, name))
    bench(out_dir)
    assert bench.result is not None
    return 0 if bench.result["errors"] == 0 else 1


def measure(parser: argparse.ArgumentParser, args: argparse.Namespace) -> dict[str, Any]:
    """Start a server (unless ``--url``), run the load, stop the server; the result (also printed)."""
    proc = None
    tmp = tempfile.TemporaryDirectory(prefix="chatbot-load-")
    try:
        if args.url:
            from urllib.parse import urlparse

            if not (urlparse(args.url).hostname or "").startswith(("127.", "localhost", "::1")):
                parser.error("loopback only")
            base = args.url.rstrip("/")
            token = args.token
            if args.via == "api" and not token:
                parser.error("--via api with --url needs --token (or CHATBOT_API_TOKEN)")
        else:
            port = _free_port()
            base = f"http://127.0.0.1:{port}"
            proc = start_server(Path(tmp.name), port, args.pipeline, {})
            wait_ready(base, proc)
            token = create_token(Path(tmp.name), args.pipeline) if args.via == "api" else None
        load_before = os.getloadavg()[0]
        result = asyncio.run(
            run_load(base, args.sessions, args.questions, args.timeout, args.seed, token if args.via == "api" else None)
        )
        result["via"] = args.via
        result["load_average_1min"] = {"before": round(load_before, 2), "after": round(os.getloadavg()[0], 2)}
    finally:
        if proc is not None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
        tmp.cleanup()
    print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    raise SystemExit(main())

"""Per-stage latency of naive / hyde / cot: with an instant fake LLM (our own overhead) and with the
embedded model (llama-server + Qwen2.5-Coder-1.5B Q4_K_M on this machine).

    .venv/bin/python -m evaluation.bench_hyde --data ../shared/data/maternal --queries 20 --llm fake --llm real

Writes evaluation/results/hyde-latency.md (``--out``) with the command, and prints it. The HyDoc cache is
off (every question pays its LLM call); one warm-up question per pipeline (model loads, server start) is
excluded from the percentiles and reported apart.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from evaluation.evaluator import Benchmark
from evaluation.harness import ensure_index, load_judged, percentile
from evaluation.report import Report, add_output_args, command_line, output_target

PROG = "python -m evaluation.bench_hyde"

FAKE_PASSAGE = (
    "Anaemia in pregnancy is common and usually caused by low iron. It can make you feel tired and short of "
    "breath. Your midwife checks your blood and may advise iron tablets and iron-rich foods."
)
FAKE_COT = (
    "TYPE: informational\nPRESUPPOSES: the patient is pregnant\nIMPLIES: wants to know causes and care\n"
    f"PASSAGE: {FAKE_PASSAGE}"
)


class InstantLLM:
    """OpenAI-compatible /v1/chat/completions answering at once with a canned passage (labelled for cot)."""

    def __init__(self) -> None:
        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a: Any) -> None:
                pass

            def do_GET(self) -> None:
                self._send({"status": "ok"})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                system = " ".join(m["content"] for m in body.get("messages", []) if m["role"] == "system")
                text = FAKE_COT if "PASSAGE:" in system else FAKE_PASSAGE
                self._send(
                    {
                        "id": "x",
                        "object": "chat.completion",
                        "created": 0,
                        "model": "instant",
                        "choices": [
                            {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}
                        ],
                    }
                )

            def _send(self, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def bench(services, pipelines: list[str], questions: list[str]) -> dict[str, Any]:
    from chatbot.pipeline import run_pipeline

    out: dict[str, Any] = {}
    for name in pipelines:
        start = time.perf_counter()
        warm = run_pipeline(name, questions[0], services)
        warm_ms = (time.perf_counter() - start) * 1000
        stages: dict[str, list[float]] = {}
        calls: list[dict[str, Any]] = []
        fallbacks: list[str] = []
        for q in questions[1:]:
            start = time.perf_counter()
            result = run_pipeline(name, q, services)
            total = (time.perf_counter() - start) * 1000
            for stage, ms in {**result.timings_ms, "total": total}.items():
                stages.setdefault(stage, []).append(ms)
            calls.extend(result.info.get("llm_calls", []))
            if result.info.get("fallback"):
                fallbacks.append(result.info["fallback"]["kind"])
            print(f"  {name}: {total / 1000:.1f} s", file=sys.stderr, flush=True)
        out[name] = {
            "n": len(questions) - 1,
            "warmup_ms": round(warm_ms, 1),
            "warmup_fallback": (warm.info.get("fallback") or {}).get("kind"),
            "stages": {
                s: {"p50": round(percentile(v, 50), 1), "p95": round(percentile(v, 95), 1)} for s, v in stages.items()
            },
            "llm": _llm_summary(calls),
            "fallbacks": fallbacks,
        }
    return out


def _llm_summary(calls: list[dict[str, Any]]) -> dict[str, Any]:
    if not calls:
        return {}
    out: dict[str, Any] = {"calls": len(calls)}
    for key in ("prompt_tokens", "completion_tokens"):
        vals = [c[key] for c in calls if isinstance(c.get(key), int | float)]
        if vals:
            out[f"{key}_mean"] = round(sum(vals) / len(vals), 1)
    srv = [c["server"] for c in calls if isinstance(c.get("server"), dict)]
    if srv:
        pn = sum(s.get("prompt_n", 0) for s in srv)
        pms = sum(s.get("prompt_ms", 0) for s in srv)
        gn = sum(s.get("predicted_n", 0) for s in srv)
        gms = sum(s.get("predicted_ms", 0) for s in srv)
        out["prompt_tokens_per_s"] = round(pn / (pms / 1000), 1) if pms else None
        out["generated_tokens_per_s"] = round(gn / (gms / 1000), 1) if gms else None
        out["cached_prompt_tokens_mean"] = round(sum(s.get("cache_n", 0) for s in srv) / len(srv), 1)
    return out


def report(results: dict[str, dict[str, Any]], command: str, data: Path, n: int) -> str:
    """The Markdown report (``render(...).markdown()``)."""
    return render(results, command, data, n).markdown()


def metrics(results: dict[str, dict[str, Any]]) -> dict[str, float]:
    """Every pipeline's total p50 ms per LLM mode; primary ``total_p50_ms``: the last pipeline of the first
    mode (the defaults end with cot)."""
    first = next(iter(results.values()))
    return {
        "total_p50_ms": first[list(first)[-1]]["stages"]["total"]["p50"],
        **{
            f"{mode}/{pipe}/total_p50_ms": r["stages"]["total"]["p50"]
            for mode, per in results.items()
            for pipe, r in per.items()
        },
    }


def render(results: dict[str, dict[str, Any]], command: str, data: Path, n: int, name: str = "hyde-latency") -> Report:
    """Per LLM mode: every stage's p50/p95 per pipeline, the warm-up, LLM token rates and fallbacks."""
    lines = [
        f"Data: `{data}` (first {n} judged queries; the first is a warm-up, excluded). HyDoc cache off. "
        "Times in ms, p50 / p95 over the remaining queries. Machine: 2 cores shared with other jobs.",
        "",
    ]
    for mode, per_pipe in results.items():
        lines += [f"## LLM: {mode}", ""]
        stages = sorted({s for r in per_pipe.values() for s in r["stages"]}, key=_stage_order)
        lines.append("| stage | " + " | ".join(per_pipe) + " |")
        lines.append("|---|" + "---|" * len(per_pipe))
        for s in stages:
            cells = []
            for r in per_pipe.values():
                v = r["stages"].get(s)
                cells.append(f"{v['p50']:.0f} / {v['p95']:.0f}" if v else "")
            lines.append(f"| {s} | " + " | ".join(cells) + " |")
        warm = " | ".join(f"{r['warmup_ms']:.0f}" for r in per_pipe.values())
        lines.append(f"| warm-up (1st question) | {warm} |")
        lines.append("")
        for pipe, r in per_pipe.items():
            extra = []
            if r["llm"]:
                extra.append("LLM " + ", ".join(f"{k} {v}" for k, v in r["llm"].items()))
            if r["fallbacks"] or r["warmup_fallback"]:
                extra.append(f"fallbacks {r['fallbacks']} (warm-up: {r['warmup_fallback']})")
            if extra:
                lines.append(f"- {pipe}: " + "; ".join(extra))
        lines.append("")
    return Report(
        name=name,
        title="HyDE / CoT latency",
        command=command,
        body=lines,
        summary={"command": command, "data": str(data), "queries": n, "modes": results},
        json_suffix=".json",
    )


_ORDER = ["cache", "llm_prestart", "pre_retrieve", "retrieve", "llm", "encode", "search", "rerank", "total"]


def _stage_order(stage: str) -> tuple[int, str]:
    if stage.startswith("llm_") and stage != "llm_prestart":
        return (_ORDER.index("llm"), stage)
    return (_ORDER.index(stage) if stage in _ORDER else len(_ORDER) - 1, stage)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=PROG, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--queries", type=int, default=20, help="first N judged queries (1 warm-up + N-1)")
    parser.add_argument("--pipeline", action="append", dest="pipelines", help="default naive, hyde, cot")
    parser.add_argument("--llm", action="append", dest="modes", choices=["fake", "real"], help="default fake")
    add_output_args(parser, "hyde-latency")
    args = parser.parse_args(argv)
    out_dir, name = output_target(args.out, args.name)
    command = command_line(PROG, argv)
    evaluator = Benchmark(
        name,
        "total_p50_ms",
        lambda: measure(args),
        lambda r: metrics(r["modes"]),
        lambda r: render(r["modes"], command, args.data, r["queries"], name),
    )
    evaluator.run_and_print(out_dir)
    return 0


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """Each LLM mode (fake: an instant endpoint; real: llm.base_url), every pipeline over the questions."""

    from chatbot.index import corpus_key
    from chatbot.pipeline import Services
    from chatbot.settings import load_settings

    pipelines = args.pipelines or ["naive", "hyde", "cot"]
    questions = list(load_judged(args.data, args.queries).queries.values())
    results: dict[str, Any] = {}
    for mode in args.modes or ["fake"]:
        settings = load_settings()
        settings.hyde.cache = False
        fake = InstantLLM() if mode == "fake" else None
        if fake:
            settings.llm.base_url, settings.llm.autostart, settings.llm.model = fake.base_url, False, "instant"
        key = corpus_key([args.data / "corpus.jsonl"], settings.embedding.model, f"{settings.corpus.segment_max_chars}")
        services = Services(settings, collection=f"eval-{key}")
        ensure_index(services, args.data, log=lambda *a: print(*a, file=sys.stderr))
        print(f"LLM {mode}: {settings.llm.base_url} ({settings.llm.model})", file=sys.stderr)
        try:
            results[f"{mode} ({settings.llm.model})"] = bench(services, pipelines, questions)
        finally:
            if fake:
                fake.close()
            if "llm" in services.__dict__:
                services.llm.close()
    return {"modes": results, "queries": len(questions)}


if __name__ == "__main__":
    sys.exit(main())

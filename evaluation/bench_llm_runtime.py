"""Prompt and generation tokens/s of the llama-server build variants × ``--no-repack``, side by side.

    python -m evaluation.bench_llm_runtime [--rounds 5] [--threads 1] [--configs native-noamx:off,...]

Every configuration (``VARIANT:repack`` with repack ``on``/``off``) is started at once on its own port (an
idle llama-server costs no CPU), each serving the same GGUF (``llm.model_path``, Qwen2.5-Coder-1.5B Q4_K_M by
default); then ``--rounds`` rounds send the same request to each configuration in turn (round-robin, so load
from other jobs on a shared machine hits all alike): a ~400-token prompt, 64 greedy tokens, prompt cache off.
Tokens/s come from the server's own timings (``prompt_n / prompt_ms``, ``predicted_n / predicted_ms``); the
table gives the median over rounds and the ratio to the first configuration. A configuration whose server
dies is reported with the diagnosis (``chatbot.llm_server.diagnose_exit``) instead of numbers: on a CPU with
AMX the ``native`` build with repack on is expected to crash. Writes ``llm-runtime.md`` and ``.json`` into
``paths.results_dir`` (evaluation/results).
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from chatbot import llm_runtime
from chatbot.llm import LLMClient
from chatbot.llm_server import EmbeddedServer, LLMUnavailable
from chatbot.settings import load_settings
from evaluation.evaluator import Benchmark
from evaluation.report import Report, add_output_args, output_target
from evaluation.report import command_line as report_command_line

PROG = "python -m evaluation.bench_llm_runtime"

DEFAULT_CONFIGS = "native-noamx:off,native-noamx:on,native:off,native:on,portable:off,portable:on"
PROMPT = (
    "You are a midwife. Explain to a pregnant patient, in plain words, why iron matters in pregnancy, which "
    "foods contain it, how vitamin C helps absorption, why tea and coffee with meals reduce it, what the signs "
    "of anaemia are, when a blood test is offered, and when iron tablets are prescribed. "
) * 4


def parse_configs(text: str) -> list[tuple[str, bool]]:
    out = []
    for item in text.split(","):
        variant, _, repack = item.strip().partition(":")
        if variant not in llm_runtime.VARIANTS or repack not in ("on", "off"):
            raise SystemExit(
                f"bad configuration {item!r}: VARIANT:on|off with VARIANT in {sorted(llm_runtime.VARIANTS)}"
            )
        out.append((variant, repack == "on"))
    return out


def start(variant: str, repack: bool, port: int, threads: int, data_dir: Path) -> tuple[EmbeddedServer, LLMClient]:
    base = load_settings().llm
    llm = base.model_copy(
        update={
            "server_variant": variant,
            "server_binary": llm_runtime.binary_path(variant),
            "repack": repack,
            "port": port,
            "base_url": f"http://127.0.0.1:{port}/v1",
            "threads": threads,
            "timeout_s": 300.0,
            "autostart": True,
        }
    )
    client = LLMClient(llm, data_dir)
    client.ensure_ready()  # spawn, wait for /health, one-token smoke check
    return client.server, client


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    parser.add_argument("--configs", default=DEFAULT_CONFIGS)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--port", type=int, default=18800, help="first port; one per configuration")
    add_output_args(parser, "llm-runtime")
    args = parser.parse_args(argv)
    out_dir, name = output_target(args.out, args.name)
    command = report_command_line(PROG, argv)
    evaluator = Benchmark(name, "gen_tps", lambda: measure(args), metrics, lambda r: render(r, command, name))
    evaluator.run_and_print(out_dir)
    return 0


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """Start one llama-server per configuration, time the same prompt round-robin; medians per configuration."""
    configs = parse_configs(args.configs)
    data_dir = Path(tempfile.mkdtemp(prefix="bench-llm-"))
    clients: dict[str, LLMClient] = {}
    results: dict[str, dict[str, Any]] = {}
    try:
        for i, (variant, repack) in enumerate(configs):
            name = f"{variant} repack={'on' if repack else 'off'}"
            binary = llm_runtime.binary_path(variant)
            if not binary.exists():
                results[name] = {"error": f"not built: python -m chatbot.llm_runtime build --variant {variant}"}
                continue
            try:
                _, clients[name] = start(variant, repack, args.port + i, args.threads, data_dir)
                results[name] = {"prompt_tps": [], "gen_tps": []}
            except LLMUnavailable as exc:
                results[name] = {"error": str(exc)[:600]}
            print(f"{name}: {'started' if name in clients else results[name]['error'][:200]}", file=sys.stderr)
        messages = [{"role": "user", "content": PROMPT}]
        for r in range(args.rounds):
            for name, client in clients.items():
                try:
                    _, stats = client.complete_with_stats(
                        messages, args.max_tokens, 0.0, cache_prompt=False, seed=r, ignore_eos=True
                    )
                except LLMUnavailable as exc:
                    results[name]["error"] = f"round {r}: {exc}"[:600]
                    continue
                s = stats["server"]
                results[name]["prompt_tps"].append(s["prompt_n"] / s["prompt_ms"] * 1000)
                results[name]["gen_tps"].append(s["predicted_n"] / s["predicted_ms"] * 1000)
                results[name]["prompt_n"] = s["prompt_n"]
            print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
    finally:
        for client in clients.values():
            client.close()
    for r in results.values():
        if r.get("prompt_tps"):
            r.update(
                prompt_median=round(statistics.median(r["prompt_tps"]), 1),
                gen_median=round(statistics.median(r["gen_tps"]), 1),
            )
    flags = llm_runtime.cpu_flags()
    return {
        "cpu_flags": " ".join(f for f in ("avx2", "avx512f", "avx512_vnni", "amx_tile") if f in flags),
        "machine": platform.machine(),
        "model": Path(load_settings().llm.model_path).name,
        "threads": args.threads,
        "rounds": args.rounds,
        "max_tokens": args.max_tokens,
        "results": results,
    }


def metrics(result: dict[str, Any]) -> dict[str, float | None]:
    """Primary: generation tokens/s of the first configuration that ran; every configuration's medians."""
    ran = {n: r for n, r in result["results"].items() if r.get("prompt_tps")}
    first = next(iter(ran.values()), {})
    return {
        "gen_tps": first.get("gen_median"),
        **{f"{n}/gen_tps": r["gen_median"] for n, r in ran.items()},
        **{f"{n}/prompt_tps": r["prompt_median"] for n, r in ran.items()},
    }


def render(result: dict[str, Any], command: str, name: str = "llm-runtime") -> Report:
    """Tokens/s per configuration (prompt and generation medians, ratios to the first row, errors)."""
    results, cpu = result["results"], result["cpu_flags"]
    rows, first = [], None
    for config, r in results.items():
        if r.get("prompt_tps"):
            p, g = statistics.median(r["prompt_tps"]), statistics.median(r["gen_tps"])
            first = first or (p, g)
            rows.append(
                f"| {config} | {p:.1f} | {g:.1f} | {p / first[0]:.2f}x | {g / first[1]:.2f}x | "
                f"{len(r['prompt_tps'])} | {r.get('error', '')[:120]} |"
            )
        else:
            rows.append(f"| {config} | — | — | — | — | 0 | {r.get('error', '')[:300]} |")
    lines = [
        f"CPU flags of this machine (`grep -o 'avx512f\\|amx_tile' /proc/cpuinfo`): {cpu}; {result['machine']}; "
        f"model {result['model']}; {result['threads']} thread(s); {result['rounds']} rounds round-robin; prompt "
        f"{next((int(r['prompt_n']) for r in results.values() if r.get('prompt_n')), '?')} tokens, "
        f"{result['max_tokens']} generated, prompt cache off. Medians over rounds; ratios to the first row. The "
        "machine is shared with other jobs (2 cores): absolute numbers are noisy, ratios are taken side by side.",
        "",
        "| configuration | prompt tok/s | generation tok/s | prompt ratio | generation ratio | rounds | error |",
        "|---|---|---|---|---|---|---|",
        *rows,
        "",
    ]
    return Report(
        name=name,
        title="llama-server build variants: tokens/s (issue 12)",
        command=command,
        body=lines,
        summary={"command": command, **result},
        json_suffix=".json",
    )


if __name__ == "__main__":
    sys.exit(main())

"""Measure the certified-answer memory's similarity threshold on paraphrases and near misses.

    python -m evaluation.memory_threshold [--language en|it] [--embedder NAME]

Writes evaluation/results/memory-threshold-MODEL.md (the measurement behind ``store.memory_threshold``).
"""

from __future__ import annotations

import argparse
import json
from importlib.resources import files
from pathlib import Path
from typing import Any

import numpy as np

from chatbot.memory import measure_threshold
from evaluation.evaluator import Benchmark
from evaluation.report import Report, add_output_args, command_line, output_target

PROG = "python -m evaluation.memory_threshold"

DATA = {"en": "memory_paraphrases.jsonl", "it": "memory_paraphrases_it.jsonl"}
CROSS_LINGUAL = "memory_crosslingual.jsonl"
DATA_DIR = Path(str(files("evaluation") / "data"))


def _read_pairs(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def main(argv: list[str] | None = None) -> int:  # pragma: no cover - a measurement script
    import os

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from chatbot.embedders import EMBEDDERS, load_embedder
    from chatbot.settings import load_settings

    parser = argparse.ArgumentParser(
        prog="python -m evaluation.memory_threshold", description="Measure the memory threshold."
    )
    parser.add_argument("--language", choices=sorted(DATA), default="en", help="which paraphrase set (default en)")
    parser.add_argument("--embedder", choices=sorted(EMBEDDERS), help="default: settings store.memory_embedder")
    add_output_args(parser, "", name_help="report name (default memory-threshold-[LANG-]MODEL)")
    args = parser.parse_args(argv)
    settings = load_settings()
    model = args.embedder or settings.store.memory_embedder
    suffix = model if args.language == "en" else f"{args.language}-{model}"
    out_dir, name = output_target(args.out, args.name or f"memory-threshold-{suffix}")
    embedder = load_embedder(model, settings.embedding.threads)
    pairs = _read_pairs(DATA_DIR / DATA[args.language])
    command = command_line(PROG, argv)
    bench = Benchmark(
        name,
        "auc",
        lambda: measure_threshold(pairs, embedder),
        metrics,
        lambda r: render(r, pairs, embedder, args.language, settings, command, name),
    )
    bench(out_dir)
    print(json.dumps({k: v for k, v in (bench.result or {}).items() if k not in ("pairs", "grid")}, indent=1))
    return 0


def metrics(result: dict[str, Any]) -> dict[str, float | None]:
    """Primary: the separation of paraphrases from near misses (0.5 = chance); the lowest safe threshold."""
    safe = result["safe_threshold"]
    return {"auc": result["auc"], "safe_threshold": safe["threshold"] if safe else None}


def render(
    result: dict[str, Any],
    pairs: list[dict[str, Any]],
    embedder: Any,
    language: str,
    settings: Any,
    command: str,
    name: str,
) -> Report:
    """The report: cosine ranges, the threshold grid, the cross-lingual check (not en), every pair."""
    n_same = sum(1 for p in pairs if p["same"])
    safe = result["safe_threshold"]
    lines = [
        f"Embedder `{embedder.name}`; {n_same} paraphrase pairs (should reuse the approved answer) and "
        f"{len(pairs) - n_same} near misses (same topic, different question: must not). Data: "
        f"`evaluation/data/{DATA[language]}`. Pairs whose numbers "
        "differ never match (number guard in `CertifiedMemory.lookup`); they are listed with cosine -1.",
        "",
        f"- paraphrase cosine: min {result['paraphrase_cosine']['min']:.3f}, "
        f"median {result['paraphrase_cosine']['median']:.3f}",
        f"- near-miss cosine: max {result['near_miss_cosine']['max']:.3f}, "
        f"median {result['near_miss_cosine']['median']:.3f}",
        f"- separation (share of paraphrase/near-miss couples where the paraphrase scores higher; 0.5 = chance): "
        f"{result['auc']:.3f}",
        "- lowest threshold with no near miss reused: "
        + (f"{safe['threshold']:.2f}, reusing {safe['paraphrases_reused']}/{n_same} paraphrases" if safe else "none"),
        f"- configured threshold (store.memory_threshold): {settings.store.memory_threshold}; memory languages "
        f"(store.memory_languages): {', '.join(settings.store.memory_languages)}",
        "",
        "| threshold | paraphrases reused | near misses reused (wrong answer served) |",
        "|---|---|---|",
    ]
    for row in result["grid"]:
        if row["threshold"] >= 0.6 and round(row["threshold"] * 100) % 5 == 0 or row["threshold"] in (0.86, 0.87, 0.88):
            lines.append(
                f"| {row['threshold']:.2f} | {row['paraphrases_reused']}/{n_same} | "
                f"{row['near_misses_reused']}/{len(pairs) - n_same} |"
            )
    if language != "en":
        cross = _read_pairs(DATA_DIR / CROSS_LINGUAL)
        a = np.asarray(embedder.embed_queries([p["a"] for p in cross]))
        b = np.asarray(embedder.embed_queries([p["b"] for p in cross]))
        cos = np.sum(a * b, axis=1)
        lines += [
            "",
            f"## The same question in {language} and en",
            "",
            f"{len(cross)} questions and their English translation (`evaluation/data/{CROSS_LINGUAL}`): cosine "
            f"min {cos.min():.3f}, median {float(np.median(cos)):.3f}, max {cos.max():.3f}; "
            f"{int(np.sum(cos >= settings.store.memory_threshold))}/{len(cross)} at or above the configured "
            "threshold. Memory therefore compares a question only with approvals in its own language.",
        ]
    lines += ["", "| same? | cosine | a | b |", "|---|---|---|---|"]
    for p in sorted(result["pairs"], key=lambda p: -p["cosine"]):
        lines.append(f"| {'yes' if p['same'] else 'no'} | {p['cosine']:.3f} | {p['a']} | {p['b']} |")
    return Report(
        name=name,
        title="Certified-answer memory: similarity threshold" + ("" if language == "en" else f" ({language})"),
        command=command,
        body=lines,
        summary={"embedder": embedder.name, "language": language, **result},
    )


if __name__ == "__main__":
    raise SystemExit(main())

"""Measure the certified-answer memory's similarity threshold on paraphrases and near misses.

    python -m evaluation.memory_threshold [--language en|it] [--embedder NAME]

Writes evaluation/results/memory-threshold-MODEL.md (the measurement behind ``store.memory_threshold``).
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path
from typing import Any

import numpy as np

from chatbot.memory import measure_threshold
from evaluation.harness import results_dir

DATA = {"en": "memory_paraphrases.jsonl", "it": "memory_paraphrases_it.jsonl"}
CROSS_LINGUAL = "memory_crosslingual.jsonl"


def _read_pairs(path: Any) -> list[dict[str, Any]]:
    import json

    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def main(argv: list[str] | None = None) -> int:  # pragma: no cover - a measurement script
    import argparse
    import json
    import os

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from chatbot.embedders import EMBEDDERS, load_embedder
    from chatbot.settings import load_settings

    parser = argparse.ArgumentParser(
        prog="python -m evaluation.memory_threshold", description="Measure the memory threshold."
    )
    parser.add_argument("--language", choices=sorted(DATA), default="en", help="which paraphrase set (default en)")
    parser.add_argument("--embedder", choices=sorted(EMBEDDERS), help="default: settings store.memory_embedder")
    args = parser.parse_args(argv)
    settings = load_settings()
    model = args.embedder or settings.store.memory_embedder
    data_dir = Path(str(files("evaluation") / "data"))
    pairs = _read_pairs(data_dir / DATA[args.language])
    embedder = load_embedder(model, settings.embedding.threads)
    result = measure_threshold(pairs, embedder)
    suffix = model if args.language == "en" else f"{args.language}-{model}"
    out = results_dir() / f"memory-threshold-{suffix}.md"
    n_same = sum(1 for p in pairs if p["same"])
    if args.language == "en":
        command = (
            "python -m evaluation.memory_threshold"
            if model == "minilm"
            else f"CHATBOT_STORE__MEMORY_EMBEDDER={model} python -m evaluation.memory_threshold"
        )
    else:
        command = f"python -m evaluation.memory_threshold --language {args.language} --embedder {model}"
    safe = result["safe_threshold"]
    lines = [
        "# Certified-answer memory: similarity threshold" + ("" if args.language == "en" else f" ({args.language})"),
        "",
        f"Embedder `{embedder.name}`; {n_same} paraphrase pairs (should reuse the approved answer) and "
        f"{len(pairs) - n_same} near misses (same topic, different question: must not). Data: "
        f"`evaluation/data/{DATA[args.language]}`. Command: `{command}`. Pairs whose numbers "
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
    if args.language != "en":
        cross = _read_pairs(data_dir / CROSS_LINGUAL)
        a = np.asarray(embedder.embed_queries([p["a"] for p in cross]))
        b = np.asarray(embedder.embed_queries([p["b"] for p in cross]))
        cos = np.sum(a * b, axis=1)
        lines += [
            "",
            f"## The same question in {args.language} and en",
            "",
            f"{len(cross)} questions and their English translation (`evaluation/data/{CROSS_LINGUAL}`): cosine "
            f"min {cos.min():.3f}, median {float(np.median(cos)):.3f}, max {cos.max():.3f}; "
            f"{int(np.sum(cos >= settings.store.memory_threshold))}/{len(cross)} at or above the configured "
            "threshold. Memory therefore compares a question only with approvals in its own language.",
        ]
    lines += ["", "| same? | cosine | a | b |", "|---|---|---|---|"]
    for p in sorted(result["pairs"], key=lambda p: -p["cosine"]):
        lines.append(f"| {'yes' if p['same'] else 'no'} | {p['cosine']:.3f} | {p['a']} | {p['b']} |")
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(json.dumps({k: v for k, v in result.items() if k not in ("pairs", "grid")}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

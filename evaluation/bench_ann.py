"""Recall@k of Chroma's HNSW top-k against exact (brute-force) search on the same stored vectors.

    python -m evaluation.bench_ann --data ../shared/data/medquad [--queries 500] [--k 50]

Uses the harness's cached index for that corpus (build it first with `chatbot eval retrieval`).
Writes evaluation/results/ann-<dataset>.md.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from evaluation.evaluator import Benchmark
from evaluation.harness import load_judged, percentile
from evaluation.report import Report, add_output_args, command_line, output_target

PROG = "python -m evaluation.bench_ann"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--k", type=int, default=50)
    add_output_args(parser, "", name_help="report name (default ann-<dataset>)")
    args = parser.parse_args(argv)
    out_dir, name = output_target(args.out, args.name or f"ann-{args.data.name}")
    bench = Benchmark(
        name, f"recall@{args.k}", lambda: measure(args), metrics, lambda r: render(r, command_line(PROG, argv), name)
    )
    bench.run_and_print(out_dir)
    return 0


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """HNSW top-k against exact search for each query: recall and query time."""

    from chatbot.index import corpus_key
    from chatbot.pipeline import Services
    from chatbot.settings import load_settings

    settings = load_settings()
    key = corpus_key([args.data / "corpus.jsonl"], settings.embedding.model, f"{settings.corpus.segment_max_chars}")
    services = Services(settings, collection=f"eval-{key}")
    index = services.index
    judged = load_judged(args.data, args.queries)
    vectors = services.embedder.embed_queries(list(judged.queries.values()))
    segments, matrix = index.all_segments()
    ids = [s.id for s in segments]

    recalls, ann_ms, exact_ms = [], [], []
    for v in vectors:
        start = time.perf_counter()
        ann = index.search_vectors(v[None, :], args.k)[0]
        ann_ms.append((time.perf_counter() - start) * 1000)
        start = time.perf_counter()
        scores = matrix @ v
        top = np.argpartition(-scores, args.k)[: args.k]
        exact = {ids[i] for i in top}
        exact_ms.append((time.perf_counter() - start) * 1000)
        recalls.append(len(exact & {h.segment.id for h in ann}) / args.k)

    meta = index.collection().metadata or {}
    return {
        "data": args.data.name,
        "k": args.k,
        "segments": len(ids),
        "embedder": services.embedder.name,
        "hnsw": {key: meta.get(f"hnsw:{key}") for key in ("M", "construction_ef", "search_ef")},
        "recalls": [float(r) for r in recalls],
        "ann_ms": ann_ms,
        "exact_ms": exact_ms,
    }


def metrics(result: dict[str, Any]) -> dict[str, float]:
    """Primary: mean recall@k of HNSW against exact search; also its minimum and the query times."""
    k, recalls = result["k"], result["recalls"]
    return {
        f"recall@{k}": float(np.mean(recalls)),
        f"min_recall@{k}": float(np.min(recalls)),
        "hnsw_ms_p50": percentile(result["ann_ms"], 50),
        "exact_ms_p50": percentile(result["exact_ms"], 50),
    }


def render(result: dict[str, Any], command: str, name: str) -> Report:
    """The report: recall and query times of HNSW vs exact search."""
    k, recalls, ann_ms, exact_ms, hnsw = (
        result["k"],
        result["recalls"],
        result["ann_ms"],
        result["exact_ms"],
        result["hnsw"],
    )
    lines = [
        f"{len(recalls)} queries against {result['segments']} segments ({result['embedder']}); HNSW "
        f"M={hnsw['M']}, construction_ef={hnsw['construction_ef']}, search_ef={hnsw['search_ef']}.",
        "",
        "| | value |",
        "|---|---|",
        f"| mean recall@{k} (HNSW vs exact) | {np.mean(recalls):.4f} |",
        f"| min recall@{k} | {np.min(recalls):.4f} |",
        f"| queries with recall 1.0 | {np.mean(np.array(recalls) == 1.0):.3f} |",
        f"| HNSW query ms p50 / p95 | {percentile(ann_ms, 50):.1f} / {percentile(ann_ms, 95):.1f} |",
        f"| exact NumPy ms p50 / p95 | {percentile(exact_ms, 50):.1f} / {percentile(exact_ms, 95):.1f} |",
    ]
    return Report(
        name=name,
        title=f"ANN recall@{k}: {result['data']}",
        command=command,
        body=lines,
        summary={**result, **metrics(result)},
    )


if __name__ == "__main__":
    sys.exit(main())

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

import numpy as np

from evaluation.harness import load_judged, percentile, results_dir


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--k", type=int, default=50)
    args = parser.parse_args(argv)

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
    lines = [
        f"# ANN recall@{args.k}: {args.data.name}",
        "",
        f"Command: `python -m evaluation.bench_ann {' '.join(argv if argv is not None else sys.argv[1:])}`",
        "",
        f"{len(recalls)} queries against {len(ids)} segments ({services.embedder.name}); HNSW "
        f"M={meta.get('hnsw:M')}, construction_ef={meta.get('hnsw:construction_ef')}, "
        f"search_ef={meta.get('hnsw:search_ef')}.",
        "",
        "| | value |",
        "|---|---|",
        f"| mean recall@{args.k} (HNSW vs exact) | {np.mean(recalls):.4f} |",
        f"| min recall@{args.k} | {np.min(recalls):.4f} |",
        f"| queries with recall 1.0 | {np.mean(np.array(recalls) == 1.0):.3f} |",
        f"| HNSW query ms p50 / p95 | {percentile(ann_ms, 50):.1f} / {percentile(ann_ms, 95):.1f} |",
        f"| exact NumPy ms p50 / p95 | {percentile(exact_ms, 50):.1f} / {percentile(exact_ms, 95):.1f} |",
    ]
    out = results_dir() / f"ann-{args.data.name}.md"
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())

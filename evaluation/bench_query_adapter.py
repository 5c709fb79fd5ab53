"""MedQuAD TEST questions with the query adapter off and on, over a pool (not the full 33k-segment index, which
e5-onnx has not built on this machine): the sampled test questions' relevant documents, their sibling sections
and random other documents, first 2 segments each, embedded once by e5-onnx (cached outside the repo).

    python -m evaluation.bench_query_adapter --adapter models/query_adapter --name query-adapter-medquad-pool

``--encoder FOLDER`` adds the tuned query encoder (chatbot/query_encoder.py) as pipeline ``dense+encoder``.

Exact cosine search, best segment per document; writes ``<name>.per_query.jsonl`` (pipelines ``dense`` and
``dense+adapter``) for ``evaluation.compare_runs`` and prints the means.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

import numpy as np

from chatbot.query_adapter import load_adapter
from chatbot.resources import shared_data_dir
from chatbot.training.query_adapter import ranking_metrics
from chatbot.training.query_adapter_data import CACHE_DIR, medquad_pool, questions_of


def main(argv: list[str] | None = None) -> int:
    from chatbot.embedders import load_embedder
    from chatbot.training.reranker_data import embed_cached

    p = argparse.ArgumentParser(prog="python -m evaluation.bench_query_adapter", description=__doc__.split("\n")[0])
    p.add_argument("--adapter", type=Path, default=Path("models/query_adapter"))
    p.add_argument("--encoder", type=Path, help="also a tuned query encoder folder (pipeline dense+encoder)")
    p.add_argument("--data-root", type=Path, default=shared_data_dir())
    p.add_argument("--questions", type=int, default=300, help="MedQuAD test questions sampled")
    p.add_argument("--pool-random", type=int, default=600)
    p.add_argument("--seed", type=int, default=13)
    p.add_argument("--out", type=Path, default=Path("evaluation/results"))
    p.add_argument("--name", default="query-adapter-medquad-pool")
    args = p.parse_args(argv)
    rng = random.Random(args.seed)
    questions = questions_of(args.data_root, "medquad", "medquad", skip_generic=True, split="test")
    questions = sorted(rng.sample(questions, min(args.questions, len(questions))), key=lambda q: q.key)
    corpus = medquad_pool(args.data_root, questions, rng, args.pool_random, cache="medquad-test-passages")
    e5 = load_embedder("e5-onnx")
    raw = embed_cached(e5, [q.text for q in questions], CACHE_DIR / "test-questions.npz", queries=True)
    adapted = load_adapter(args.adapter, e5.name).apply(raw)
    runs = [("dense", raw), ("dense+adapter", adapted)]
    if args.encoder:
        from chatbot.query_encoder import load_tuned_embedder

        tuned = load_tuned_embedder(e5, args.encoder).adapt(raw, [q.text for q in questions])
        runs.append(("dense+encoder", tuned))
    rows = []
    for name, vecs in runs:
        for q, v in zip(questions, vecs, strict=True):
            rows.append(
                {
                    "query_id": q.qid,
                    "pipeline": name,
                    **ranking_metrics(corpus.vectors @ v, corpus.seg_doc, q.positives, depth=50),
                }
            )
    args.out.mkdir(parents=True, exist_ok=True)
    with (args.out / f"{args.name}.per_query.jsonl").open("w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r) + "\n")
    summary = {
        name: {m: round(float(np.mean([r[m] for r in rows if r["pipeline"] == name])), 4) for m in rows[0] if "@" in m}
        for name, _ in runs
    }
    summary["pool"] = {
        "questions": len(questions),
        "segments": len(corpus.seg_doc),
        "documents": len(set(corpus.seg_doc)),
    }
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

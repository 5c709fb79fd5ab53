"""Compare the shipped bi-encoders on MEDIQA (English questions) and MEDIQA-IT (Italian questions).

Corpus: the judged answers of the evaluated queries (the qrels pool), segmented as in the product;
exact cosine search (no ANN) so only the encoder differs. Reports nDCG@10, P@3, R@50, MRR@10 per
language and indexing speed (segments/s), and writes evaluation/results/embedders.md.

    python -m evaluation.bench_embedders [--limit 60] [--models minilm e5 use]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from chatbot.resources import shared_data_dir  # noqa: E402
from evaluation.evaluator import Benchmark  # noqa: E402
from evaluation.harness import compute_metrics, load_judged  # noqa: E402
from evaluation.report import Report, add_output_args, command_line, output_target  # noqa: E402

PROG = "python -m evaluation.bench_embedders"

DATA = shared_data_dir()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    parser.add_argument("--data-root", type=Path, default=DATA)
    parser.add_argument("--limit", type=int, default=60, help="first N judged queries")
    parser.add_argument("--models", nargs="+", default=["minilm", "use", "e5"])
    parser.add_argument("--threads", type=int, default=1)
    add_output_args(parser, "embedders")
    args = parser.parse_args(argv)
    out_dir, name = output_target(args.out, args.name)
    command = command_line(PROG, argv)
    bench = Benchmark(name, "en_nDCG@10", lambda: measure(args), metrics, lambda r: render(r, command, name))
    bench.run_and_print(out_dir)
    return 0


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """Each encoder on the same qrels pool: indexing speed, query time, retrieval per language."""

    from chatbot.embedders import load_embedder
    from corpus.importers import read_beir_corpus
    from corpus.segmenter import embedding_text, segment_documents

    en = load_judged(args.data_root / "mediqa", args.limit)
    it = load_judged(args.data_root / "mediqa-it", args.limit)
    pool = {d for docs in en.qrels.values() for d in docs}
    docs = [d for d in read_beir_corpus(args.data_root / "mediqa" / "corpus.jsonl").documents if d.id in pool]
    segments = segment_documents(docs)
    texts = [embedding_text(s) for s in segments]
    print(f"{len(en.queries)} queries, pool {len(docs)} documents, {len(segments)} segments", file=sys.stderr)

    rows = []
    for name in args.models:
        embedder = load_embedder(name, args.threads)
        start = time.perf_counter()
        matrix = embedder.embed_passages(texts)
        index_s = time.perf_counter() - start
        row = {"model": name, "name": embedder.name, "segments_per_s": round(len(texts) / index_s, 1)}
        for lang, judged in (("en", en), ("it", it)):
            qids = list(judged.queries)
            start = time.perf_counter()
            qv = embedder.embed_queries([judged.queries[q] for q in qids])
            row[f"{lang}_query_ms"] = round((time.perf_counter() - start) * 1000 / len(qids), 1)
            scores = qv @ matrix.T
            runs = {}
            for i, q in enumerate(qids):
                seen, ranked = set(), []
                for j in np.argsort(-scores[i], kind="stable"):
                    d = segments[j].doc_id
                    if d not in seen:
                        seen.add(d)
                        ranked.append(d)
                runs[q] = ranked
            agg = compute_metrics(judged.qrels, runs)["aggregate"]
            row.update({f"{lang}_{k}": round(v, 4) for k, v in agg.items()})
        rows.append(row)
        print(json.dumps(row), file=sys.stderr)

    return {
        "queries": len(en.queries),
        "documents": len(docs),
        "segments": len(segments),
        "threads": args.threads,
        "rows": rows,
    }


def metrics(result: dict[str, Any]) -> dict[str, float]:
    """Primary: the first encoder's English nDCG@10; every encoder's nDCG@10 per language."""
    rows = result["rows"]
    return {
        "en_nDCG@10": rows[0]["en_nDCG@10"],
        **{f"{r['model']}/{lang}_nDCG@10": r[f"{lang}_nDCG@10"] for r in rows for lang in ("en", "it")},
    }


def render(result: dict[str, Any], command: str, name: str = "embedders") -> Report:
    """One row per encoder: retrieval per language, indexing and query speed."""
    lines = [
        f"{result['queries']} judged queries; corpus = their qrels pool: {result['documents']} answers, "
        f"{result['segments']} segments (product segmenter); exact cosine search, document-level ranking; "
        f"{result['threads']} thread(s).",
        "",
        "| model | EN nDCG@10 | EN P@3 | EN MRR@10 | IT nDCG@10 | IT P@3 | IT MRR@10 | index seg/s | query ms |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        lines.append(
            f"| {r['name']} | {r['en_nDCG@10']:.4f} | {r['en_P@3']:.4f} | {r['en_MRR@10']:.4f} | "
            f"{r['it_nDCG@10']:.4f} | {r['it_P@3']:.4f} | {r['it_MRR@10']:.4f} | "
            f"{r['segments_per_s']} | {r['en_query_ms']} |"
        )
    return Report(
        name=name,
        title="Bi-encoders on MEDIQA (English questions) and MEDIQA-IT (Italian questions, English answers)",
        command=command,
        body=lines,
        summary={"command": command, **result},
    )


if __name__ == "__main__":
    sys.exit(main())

"""How to combine the first stage's order with the cross-encoder's: one scoring pass, several orderings.

    HF_HUB_OFFLINE=1 python -m evaluation.bench_rerank_fusion --set mediqa:train:e5 --set mediqa:test:e5 \
        [--set maternal:test:e5] [--set medquad:test:minilm:200] [--write-md]

Per ``DATA:SPLIT:EMBEDDER[:LIMIT]`` set: the bi-encoder's top 50 from the harness's eval index (as
``chatbot eval retrieval`` builds it; ``evaluation.bench_reranker.candidates_for``), the shipped cross-encoder
(int8 ONNX, max_length 256: the defaults) scores all 50 once, then each ordering is evaluated with the
harness's document-level metrics: the first stage alone, the cross-encoder alone, reciprocal rank fusion
1/(k+r1)+1/(k+r2) for k in 10/30/60 (``chatbot.stages.rerank.rrf_scores``, what ``rerank.rrf_k`` runs), a
linear mix a·ce + (1−a)·minmax(dense) and z-scored sums. Paired Wilcoxon tests: first stage → cross-encoder
and → rrf60. Writes ``evaluation/results/rerank-fusion.md`` (+ .json); ids and numbers only.
The cross-encoder was trained on the train splits (chatbot/training/reranker.py): choose on train, report test.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from chatbot.resources import shared_data_dir  # noqa: E402
from evaluation.evaluator import Benchmark  # noqa: E402
from evaluation.harness import compute_metrics  # noqa: E402
from evaluation.report import Report, add_output_args, command_line, output_target  # noqa: E402

PROG = "python -m evaluation.bench_rerank_fusion"

DATA = shared_data_dir()
METRICS = ("nDCG@10", "P@3", "MRR@10")


def orderings(dense: np.ndarray, ce: np.ndarray) -> dict[str, np.ndarray]:
    """Scores (higher first) of each ordering of one question's candidates, in first-stage order."""
    from chatbot.stages.rerank import rrf_scores

    first = np.arange(len(dense), 0, -1, dtype=np.float64)  # the first stage's own order
    span = float(dense.max() - dense.min())
    dense01 = (dense - dense.min()) / span if span > 1e-9 else np.zeros_like(dense)

    def z(x: np.ndarray) -> np.ndarray:
        return (x - x.mean()) / (x.std() + 1e-9)

    out: dict[str, np.ndarray] = {"first stage": first, "cross-encoder": ce}
    for k in (10, 30, 60):
        out[f"rrf{k}"] = rrf_scores(ce, k)
    for a in (0.3, 0.5, 0.7):
        out[f"linear a={a}"] = a * ce + (1 - a) * dense01
    for w in (0.5, 1.0, 2.0):
        out[f"z(ce)+{w}·z(dense)"] = z(ce) + w * z(dense)
    return out


def documents_in_order(hits: list, scores: np.ndarray) -> list[str]:
    """Document ids in the order the product would list them for these scores (``best_per_document``)."""
    from chatbot.index import Hit
    from chatbot.stages.rerank import best_per_document

    rescored = [Hit(h.segment, float(s)) for h, s in zip(hits, scores, strict=True)]
    return [h.segment.doc_id for h in best_per_document(rescored)]


def run_set(spec: str, reranker, log) -> dict[str, Any]:
    from scipy.stats import wilcoxon

    from evaluation.bench_reranker import candidates_for

    name, split, embedder, *rest = spec.split(":")
    limit = int(rest[0]) if rest else None
    found = candidates_for(DATA / name, split, limit, embedder, 50, log)
    judged, hits = found["judged"], found["hits"]
    runs: dict[str, dict[str, list[str]]] = {}
    for n, (qid, text) in enumerate(judged.queries.items(), 1):
        candidates = hits[qid]
        ce = np.asarray(reranker.score(text, candidates), dtype=np.float64)
        dense = np.array([h.score for h in candidates], dtype=np.float64)
        for label, scores in orderings(dense, ce).items():
            runs.setdefault(label, {})[qid] = documents_in_order(candidates, scores)
        log(f"{spec}: {n}/{len(judged.queries)}")
    qrels = {qid: judged.qrels[qid] for qid in judged.queries}
    metrics = {label: compute_metrics(qrels, run) for label, run in runs.items()}
    tests = {}
    for b in ("cross-encoder", "rrf60"):
        for m in ("nDCG@10", "P@3"):
            a_vals = [metrics["first stage"]["per_query"][q][m] for q in judged.queries]
            b_vals = [metrics[b]["per_query"][q][m] for q in judged.queries]
            diff = np.array(b_vals) - np.array(a_vals)
            p = float(wilcoxon(diff).pvalue) if np.any(diff) else 1.0
            tests[f"first stage → {b} {m}"] = {"mean_diff": round(float(diff.mean()), 4), "p_wilcoxon": round(p, 4)}
    return {
        "set": spec,
        "queries": len(judged.queries),
        "aggregate": {label: {k: round(v, 4) for k, v in m["aggregate"].items()} for label, m in metrics.items()},
        "paired": tests,
        "per_query": {
            qid: {label: round(metrics[label]["per_query"][qid]["nDCG@10"], 4) for label in metrics}
            for qid in judged.queries
        },
    }


def metrics(results: list[dict[str, Any]]) -> dict[str, float]:
    """Primary: rrf60's nDCG@10 (what ``rerank.rrf_k`` runs), averaged over the sets; every ordering per set."""
    return {
        "rrf60/nDCG@10": float(np.mean([res["aggregate"]["rrf60"]["nDCG@10"] for res in results])),
        **{
            f"{res['set']}/{label}/nDCG@10": agg["nDCG@10"]
            for res in results
            for label, agg in res["aggregate"].items()
        },
    }


def render(results: list[dict[str, Any]], command: str, name: str = "rerank-fusion") -> Report:
    """Per set: every ordering's metrics and the paired tests; the JSON holds every set with per-query nDCG@10."""
    lines = [
        "Shipped cross-encoder, int8 ONNX, max_length 256, all 50 candidates; document-level metrics of the "
        "harness. rrfK: 1/(K + first-stage rank) + 1/(K + cross-encoder rank); `rerank.rrf_k` (default 60).",
    ]
    for res in results:
        lines += ["", f"## {res['set']} ({res['queries']} queries)", "", "| ordering | " + " | ".join(METRICS) + " |"]
        lines.append("|---|" + "---|" * len(METRICS))
        for label, agg in res["aggregate"].items():
            lines.append(f"| {label} | " + " | ".join(f"{agg[m]:.3f}" for m in METRICS) + " |")
        lines += ["", "| paired (two-sided) | mean diff | p (Wilcoxon) |", "|---|---|---|"]
        lines += [f"| {k} | {v['mean_diff']:+.4f} | {v['p_wilcoxon']:.4f} |" for k, v in res["paired"].items()]
    return Report(
        name=name,
        title="Fusing the first stage's order with the cross-encoder's",
        command=command,
        body=lines,
        summary={"command": command, "sets": results},
        json_suffix=".json",
        json_indent=1,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    parser.add_argument("--set", dest="sets", action="append", required=True, help="DATA:SPLIT:EMBEDDER[:LIMIT]")
    parser.add_argument("--threads", type=int, default=1)
    add_output_args(parser, "rerank-fusion")
    parser.add_argument("--write-md", action="store_true", help="kept for older commands: the .md is always written")
    args = parser.parse_args(argv)
    if not DATA.is_dir():
        print(f"no judged data in {DATA}", file=sys.stderr)
        return 2
    from chatbot.settings import SHIPPED_RERANKER
    from chatbot.stages.rerank import CrossEncoderReranker

    reranker = CrossEncoderReranker(SHIPPED_RERANKER, threads=args.threads, runtime="onnx", max_length=256)

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    out_dir, name = output_target(args.out, args.name)
    command = command_line(PROG, argv)
    bench = Benchmark(
        name,
        "rrf60/nDCG@10",
        lambda: [run_set(spec, reranker, log) for spec in args.sets],
        metrics,
        lambda r: render(r, command, name),
    )
    bench(out_dir)
    for res in bench.result or []:
        print(res["set"], json.dumps({k: v["nDCG@10"] for k, v in res["aggregate"].items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())

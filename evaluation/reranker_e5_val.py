"""Score cross-encoders' int8 ONNX exports on an exported run's validation questions (CPU, onnxruntime).

    python -m evaluation.reranker_e5_val --export DIR --model MODEL_DIR [--model ...] --max-length 64 --out X.json

``DIR`` is a `chatbot train reranker -- --base e5 ... --export DIR` folder (its ``validation.json.gz``: held-out
*train-split* questions, never test ones). Each model scores every validation question's candidates with the
product's ONNX runner (``chatbot.stages.rerank.OnnxCrossEncoder``); the metrics are those of
``chatbot/training/reranker_gpu.py`` (document-level P@1, P@3, MRR@10, nDCG@10 per group, alone and fused with
the first stage's order by RRF k=60), so the numbers can be set beside the GPU run's own validation. Ids and
numbers only.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from chatbot.stages.rerank import OnnxCrossEncoder
from chatbot.training.reranker_export import read_json_gz
from chatbot.training.reranker_gpu import rrf, summarise


def score_model(model_dir: Path, val: dict, max_length: int, threads: int) -> dict:
    runner = OnnxCrossEncoder(model_dir, threads=threads, max_length=max_length, batch_size=32)
    texts = val["texts"]
    start = time.process_time()
    scores = []
    for item in val["items"]:
        pairs = [(texts[item["q"]], texts[c]) for c in item["c"]]
        scores.append([float(x) for x in runner.predict(pairs)])
    cpu = time.process_time() - start
    fused = [rrf(s, it["dense"]) for s, it in zip(scores, val["items"], strict=True)]
    return {
        "model": str(model_dir),
        "max_length": max_length,
        "cpu_seconds": round(cpu, 1),
        "alone": summarise(val["items"], scores),
        "fused": summarise(val["items"], fused),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--export", type=Path, required=True, help="the exported run (validation.json.gz)")
    p.add_argument("--model", type=Path, action="append", required=True, help="folder with onnx/model_qint8.onnx")
    p.add_argument("--max-length", type=int, default=64)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args(argv)
    val = read_json_gz(args.export / "validation.json.gz")
    first = summarise(val["items"], [it["dense"] for it in val["items"]])
    report = {"export": str(args.export), "questions": len(val["items"]), "first_stage": first, "models": []}
    for model_dir in args.model:
        row = score_model(model_dir, val, args.max_length, args.threads)
        print(json.dumps(row), file=sys.stderr, flush=True)
        report["models"].append(row)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

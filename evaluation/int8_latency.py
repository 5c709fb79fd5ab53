"""Rerank time and margins of the int8 exports against their dequantized fp32 copies (runtime.int8_matmul) on
tests/test_reranker_e5_model.py's hand-written cases, each passage repeated 4 times (a card segment's length),
one thread, int8 and fp32 round-robin so load on a shared machine hits both alike.

    python -m evaluation.int8_latency [--rounds 15]

Results: evaluation/results/int8-fp32-s15.md.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

MODELS = (("models/reranker-e5", 64), ("models/reranker", 256))  # the max_length each runs with in the product


def main(argv: list[str] | None = None) -> int:
    from chatbot.index import Hit
    from chatbot.stages.rerank import CrossEncoderReranker
    from corpus.model import Segment
    from tests.test_reranker_e5_model import CASES

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args(argv)
    for model, max_length in MODELS:
        runs = {
            m: CrossEncoderReranker(Path(model), threads=1, runtime="onnx", max_length=max_length, int8_matmul=m)
            for m in ("int8", "fp32")
        }
        seconds: dict[str, list[float]] = {m: [] for m in runs}
        wrong = dict.fromkeys(runs, 0)
        clear = dict.fromkeys(runs, 0)
        for rnd in range(args.rounds):
            for question, passages, relevant in CASES:
                hits = [
                    Hit(Segment(f"s{i}", f"d{i}", t * 4, "", f"https://e.org/{i}", 0), 0.0)
                    for i, t in enumerate(passages)
                ]
                for m, reranker in runs.items():
                    start = time.perf_counter()
                    scores = reranker.score(question, hits)
                    seconds[m].append(time.perf_counter() - start)
                    if rnd == 0:
                        wrong[m] += int(scores.argmax() != relevant)
                        clear[m] += int(scores[relevant] - max(np.delete(scores, relevant)) > 0.1)
        for m in runs:
            ms = 1000 * np.asarray(seconds[m])
            print(
                f"{model} max_length={max_length} {m}: p50 {np.median(ms):.1f} ms p95 {np.percentile(ms, 95):.1f} ms "
                f"({len(ms)} calls); wrong top-1 {wrong[m]}/{len(CASES)}; margin > 0.1 {clear[m]}/{len(CASES)}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

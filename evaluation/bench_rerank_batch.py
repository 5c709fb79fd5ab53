"""Rerank time per question by rerank.batch_size, side by side in one run: the shipped cross-encoder (its int8
export, runtime.int8_matmul as in force) scores each question's candidate passages once per batch size, the sizes
interleaved question by question so machine load hits them alike; one thread.

    python -m evaluation.bench_rerank_batch [--sizes 1 2 4 8 16] [--questions 40] [--candidates 20] \
        [--max-length 192] [--rounds 3] [--plot FILE.png]

The passages are MEDIQA corpus answers (title and text, cut to 900 characters as the product cuts them) drawn with a
fixed seed for the first --questions MEDIQA questions: the time depends on their lengths, not on their relevance.
Prints p50 / p95 per size and the ratio of each p50 to the first size's; --plot draws the latency CDFs.
Results: evaluation/results/reranker-batch-s23.md.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np


def question_pairs(data: Path, questions: int, candidates: int, seed: int = 0) -> list[list[tuple[str, str]]]:
    """Per question, ``candidates`` (question, passage) pairs over passages drawn with ``seed``."""
    corpus = [json.loads(line) for line in (data / "corpus.jsonl").read_text(encoding="utf-8").splitlines() if line]
    queries = [json.loads(line) for line in (data / "queries.jsonl").read_text(encoding="utf-8").splitlines() if line]
    rng = np.random.default_rng(seed)
    out = []
    for q in queries[:questions]:
        picked = rng.choice(len(corpus), size=min(candidates, len(corpus)), replace=False)
        out.append([(q["text"], f"{corpus[i].get('title', '')}\n{corpus[i]['text']}"[:900]) for i in picked])
    return out


def timings(sizes: Sequence[int], pairs: list[list[tuple[str, str]]], max_length: int, rounds: int) -> dict[int, list]:
    """Seconds per question for each batch size, the sizes interleaved."""
    from chatbot.settings import SHIPPED_RERANKER, load_settings
    from chatbot.stages.rerank import OnnxCrossEncoder

    mode = load_settings().runtime.int8_matmul
    models = {b: OnnxCrossEncoder(SHIPPED_RERANKER, 1, max_length, b, mode) for b in sizes}
    for m in models.values():  # warm up each session once
        m.predict(pairs[0])
    out: dict[int, list[float]] = {b: [] for b in sizes}
    for _ in range(rounds):
        for question in pairs:
            for b, m in models.items():
                start = time.perf_counter()
                m.predict(question)
                out[b].append(time.perf_counter() - start)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    from chatbot.resources import shared_data_dir

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[16, 1, 2, 4, 8])
    p.add_argument("--questions", type=int, default=40)
    p.add_argument("--candidates", type=int, default=20)
    p.add_argument("--max-length", type=int, default=192)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--data", type=Path, default=None, help="a BEIR folder (default ../shared/data/mediqa)")
    p.add_argument("--plot", type=Path, default=None)
    args = p.parse_args(argv)
    data = args.data or shared_data_dir() / "mediqa"
    if not (data / "corpus.jsonl").is_file():
        print(f"no MEDIQA data in {data}", file=sys.stderr)
        return 2
    times = timings(args.sizes, question_pairs(data, args.questions, args.candidates), args.max_length, args.rounds)
    first = float(np.median(times[args.sizes[0]]))
    print("| batch size | p50 ms | p95 ms | p50 ratio to " + str(args.sizes[0]) + " |\n|---|---|---|---|")
    for b, t in times.items():
        p50, p95 = 1000 * float(np.median(t)), 1000 * float(np.percentile(t, 95))
        print(f"| {b} | {p50:.1f} | {p95:.1f} | {np.median(t) / first:.3f} |")
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6, 4))
        for b, t in times.items():
            ms = np.sort(1000 * np.asarray(t))
            ax.plot(ms, np.arange(1, len(ms) + 1) / len(ms), label=f"batch {b}")
        ax.set_xlabel(f"rerank time per question (ms, {args.candidates} pairs, max_length {args.max_length}, 1 thread)")
        ax.set_ylabel("share of questions")
        ax.grid(alpha=0.3)
        ax.legend()
        fig.tight_layout()
        fig.savefig(args.plot, dpi=120)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Fit the per-embedding-model calibration σ((s − τ)·λ) of term scores from judged data.

    python -m chatbot.logical.calibrate --data ../shared/data/medquad [--model minilm] [--dry-run]

Reads a BEIR folder (corpus.jsonl, queries.jsonl, qrels.tsv), scores judged pairs plus hard and random
negatives with the embedder, fits a logistic regression on the cosine and stores τ, λ under the
embedder's name in ``chatbot/logical/calibration.json`` (used by the ``logical`` pipeline's
calibrated and probabilistic modes).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m chatbot.logical.calibrate", description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="BEIR-style folder with judged pairs")
    parser.add_argument("--model", default=None, help="embedder kind (minilm, e5, use); default: settings")
    parser.add_argument("--max-queries", type=int, default=300)
    parser.add_argument("--pool-docs", type=int, default=2000, help="documents embedded (judged + random)")
    parser.add_argument("--hard-negatives", type=int, default=5)
    parser.add_argument("--random-negatives", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None, help="calibration JSON (default: the shipped one)")
    parser.add_argument("--dry-run", action="store_true", help="print the fit, store nothing")
    args = parser.parse_args(argv)

    from chatbot.embedders import load_embedder
    from chatbot.logical.compose import CALIBRATION_FILE, fit_from_beir, save_calibration
    from chatbot.settings import load_settings

    settings = load_settings()
    kind = args.model or settings.embedding.model
    embedder = load_embedder(kind, settings.embedding.threads)
    cal = fit_from_beir(
        args.data,
        embedder.embed_queries,
        embedder.embed_passages,
        model=embedder.name,
        max_queries=args.max_queries,
        pool_docs=args.pool_docs,
        hard_negatives=args.hard_negatives,
        random_negatives=args.random_negatives,
        seed=args.seed,
    )
    print(json.dumps({"model": cal.model, "tau": cal.tau, "lam": cal.lam, "pairs": cal.pairs, "data": cal.fitted_on}))
    if not args.dry_run:
        save_calibration(cal, args.out or CALIBRATION_FILE)
        print(f"stored in {args.out or CALIBRATION_FILE}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

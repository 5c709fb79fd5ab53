"""Rank of each reply-set question's card in the product's retrieval, one pipeline, on the demo cards:
`python -m evaluation.card_rank --data evaluation/replies/replyset.jsonl --language it [--set G.F=V ...]`.
Prints JSON: per question id the card's rank among distinct documents (0 = not in the ranked list), and
the share found at rank 1 and in the top 3. Ids and numbers only."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any


def card_ranks(paths: list[Path], language: str, overrides: list[str], pipeline: str) -> dict[str, Any]:
    """{question id: rank of its card (1-based, 0 = absent)} plus the top-1 and top-3 shares."""
    from chatbot.pipeline import run_pipeline
    from chatbot.settings import load_settings
    from evaluation.bench_replies import load_reply_set
    from evaluation.harness import apply_overrides, services_over_cards

    services = services_over_cards(apply_overrides(load_settings(), overrides))
    ranks: dict[str, int] = {}
    for path in paths:
        for item in load_reply_set(path):
            if item.language != language:
                continue
            ranked = [h.segment.doc_id for h in run_pipeline(pipeline, item.question, services).ranked]
            ranks[item.id] = ranked.index(item.card_id) + 1 if item.card_id in ranked else 0
    n = len(ranks) or 1
    return {
        "questions": len(ranks),
        "top1": round(sum(r == 1 for r in ranks.values()) / n, 4),
        "top3": round(sum(1 <= r <= 3 for r in ranks.values()) / n, 4),
        "ranks": ranks,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, action="append", required=True)
    parser.add_argument("--language", default="it")
    parser.add_argument("--pipeline", default="dense+rerank")
    parser.add_argument("--set", action="append", default=[])
    args = parser.parse_args()
    print(json.dumps(card_ranks(args.data, args.language, args.set, args.pipeline)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

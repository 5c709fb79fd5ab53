"""How many questions the exclusion detector routes: the exclusion card sets (should route) and the reply and
gate sets (questions that mostly exclude nothing). Prints per-set counts, the misses and every routed question
with its decomposition.

    python -m evaluation.exclusion_routing
"""

from __future__ import annotations

import glob
import json
from collections.abc import Iterator

from chatbot.logical.detect import analyse

EXCLUSION_SETS = "evaluation/data/exclusions_cards_*.jsonl"
OTHER_SETS = ("evaluation/replies/*.jsonl", "evaluation/redteam/gate*.jsonl")


def questions(path: str) -> Iterator[tuple[str, str]]:
    """(id, question) for every row of a JSONL set ("question" or "text")."""
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                row = json.loads(line)
                yield str(row.get("id")), row.get("question") or row.get("text") or ""


def main() -> None:
    routed = total = 0
    for path in sorted(glob.glob(EXCLUSION_SETS)):
        rows = list(questions(path))
        misses = [(i, q) for i, q in rows if analyse(q) is None]
        routed, total = routed + len(rows) - len(misses), total + len(rows)
        print(f"exclusions {path}: routed {len(rows) - len(misses)}/{len(rows)}")
        for i, q in misses:
            print(f"  miss {i}: {q}")
    print(f"exclusions routed {routed}/{total}")
    routed = total = 0
    for path in sorted(p for pattern in OTHER_SETS for p in glob.glob(pattern)):
        rows = list(questions(path))
        hits = [(i, q, analyse(q)) for i, q in rows if q]
        hits = [h for h in hits if h[2] is not None]
        routed, total = routed + len(hits), total + len(rows)
        print(f"other {path}: routed {len(hits)}/{len(rows)}")
        for i, q, found in hits:
            print(f"  routed {i}: {q} => {found.text} {found.cues}")
    print(f"other routed {routed}/{total}")


if __name__ == "__main__":
    main()

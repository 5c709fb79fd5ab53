"""The exclusion detector on a labelled check set: must-route questions (with the excluded words expected in
the NOT terms) and must-not-route questions (negation words that exclude nothing).

    python -m evaluation.exclusion_detect_check [--data evaluation/data/exclusion_detect_s15.jsonl] [--verbose]

A must-route row is "right" when it is routed, every expected word is in some NOT term and none is left in the
positive term; a must-not-route row is wrong when it is routed at all.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter

from chatbot.logical.detect import Detection, analyse

DEFAULT = "evaluation/data/exclusion_detect_s15.jsonl"


def is_right(found: Detection | None, excluded: list[str]) -> bool:
    """Whether ``found`` excludes every expected word and keeps none of them in its positive term."""
    if found is None:
        return False
    negatives = " | ".join(found.negatives).lower()
    positive = found.positive.lower()
    return all(w.lower() in negatives and w.lower() not in positive for w in excluded)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", default=DEFAULT)
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    counts: Counter[str] = Counter()
    with open(args.data, encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    for row in rows:
        found = analyse(row["question"])
        kind = "x" if row["exclusion"] else "n"
        key = f"{kind}-{row['language']}"
        counts[key + "-total"] += 1
        if found is not None:
            counts[key + "-routed"] += 1
        ok = is_right(found, row["excluded"]) if row["exclusion"] else found is None
        counts[key + "-ok"] += ok
        if args.verbose or not ok:
            mark = "ok  " if ok else "MISS" if row["exclusion"] else "FALSE"
            print(f"{mark} {row['id']}: {found.text if found else None}")
    for kind, name in (("x", "must-route"), ("n", "must-not-route")):
        for lang in ("en", "it"):
            key = f"{kind}-{lang}"
            print(
                f"{name} {lang}: routed {counts[key + '-routed']}/{counts[key + '-total']}, "
                f"{'right' if kind == 'x' else 'unrouted'} {counts[key + '-ok']}/{counts[key + '-total']}"
            )


if __name__ == "__main__":
    main()

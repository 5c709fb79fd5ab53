"""Language detector on the held-out language sets (evaluation/language/*.jsonl).

python -m evaluation.language_eval [--set FILE ...] [--detector new|old-safety|old-i18n] [--json OUT]

Each row: ``text``, gold ``language`` (en, it, ``und`` for a lone word with no language such as "ok" or a
drug name, or another ISO code). The detector's decision is en, it, unknown (answered in the fallback
language) or refused (another language). Reported: the decision table per gold group, accuracy (en/it: the
right language; ``*_reply_fallback_en``/``_page``: the reply language when unknown falls back to English /
to the page's language, taken to be the patient's; und: answered; other: refused), p50/p95
latency per message after loading, load time and the process's peak memory. ``old-safety``/``old-i18n``
run the stop-word detectors that chatbot.language replaced (only at a commit that still has them).
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

SETS = [Path("evaluation/language/testset.jsonl"), Path("evaluation/language/testset-b.jsonl")]
DECISIONS = ("en", "it", "unknown", "refused")


def _new() -> Callable[[str], str]:
    from chatbot.language import detect_language, warm_up

    warm_up()

    def decide(text: str) -> str:
        guess = detect_language(text)
        return guess.language if guess.supported else "refused"

    return decide


def _old_safety() -> Callable[[str], str]:
    from chatbot.stages.safety import detect_language  # the stop-word detector (removed by chatbot.language)

    def decide(text: str) -> str:
        guess = detect_language(text)
        return guess.language if guess.supported else "refused"

    return decide


def _old_i18n() -> Callable[[str], str]:
    from ui.i18n import detect_language  # the page's own stop-word guess (removed): en or it, never refuses

    return detect_language


DETECTORS = {"new": _new, "old-safety": _old_safety, "old-i18n": _old_i18n}


def group(language: str) -> str:
    return language if language in ("en", "it", "und") else "other"


def correct(gold: str, decision: str) -> bool:
    """en/it: the right language; und: answered (any of en, it, unknown); other: refused."""
    g = group(gold)
    if g == "und":
        return decision != "refused"
    if g == "other":
        return decision == "refused"
    return decision == gold


def evaluate(rows: list[dict[str, Any]], decide: Callable[[str], str]) -> dict[str, Any]:
    """Decision table, accuracy per gold group and per other language, latency, the errors."""
    table: dict[str, Counter] = {g: Counter() for g in ("en", "it", "und", "other")}
    per_lang: dict[str, list[int]] = {}
    latencies, errors = [], []
    for row in rows:
        t0 = time.perf_counter()
        decision = decide(row["text"])
        latencies.append((time.perf_counter() - t0) * 1000)
        table[group(row["language"])][decision] += 1
        ok = correct(row["language"], decision)
        per_lang.setdefault(row["language"], [0, 0])
        per_lang[row["language"]][0] += ok
        per_lang[row["language"]][1] += 1
        if not ok or (group(row["language"]) in ("en", "it") and decision == "unknown"):
            errors.append({"id": row["id"], "gold": row["language"], "decision": decision, "kind": row["kind"]})
    accuracy = {g: _acc(rows, decide_table=table, g=g) for g in table}
    for g in ("en", "it"):  # the language the patient is answered in, "unknown" read as the fallback
        total = sum(table[g].values())
        for name, fallback in (("fallback_en", "en"), ("fallback_page", g)):
            good = table[g][g] + (table[g]["unknown"] if fallback == g else 0)
            accuracy[f"{g}_reply_{name}"] = f"{good}/{total} ({100 * good / max(total, 1):.1f}%)"
    latencies.sort()
    return {
        "n": len(rows),
        "table": {g: dict(c) for g, c in table.items()},
        "accuracy": accuracy,
        "per_language": {k: f"{v[0]}/{v[1]}" for k, v in sorted(per_lang.items())},
        "p50_ms": round(statistics.median(latencies), 3),
        "p95_ms": round(latencies[int(0.95 * (len(latencies) - 1))], 3),
        "errors": errors,
    }


def _acc(rows: list[dict[str, Any]], decide_table: dict[str, Counter], g: str) -> str:
    counts = decide_table[g]
    total = sum(counts.values())
    if g == "und":
        good = total - counts["refused"]
    elif g == "other":
        good = counts["refused"]
    else:
        good = counts[g]
    return f"{good}/{total} ({100 * good / max(total, 1):.1f}%)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", type=Path, action="append", help="JSONL set(s); default: both held-out sets")
    parser.add_argument("--detector", choices=sorted(DETECTORS), default="new")
    parser.add_argument("--json", type=Path, help="write the full result here")
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    try:
        decide = DETECTORS[args.detector]()
    except ImportError as exc:
        parser.error(f"{args.detector}: {exc} (the stop-word detectors exist only up to commit dfb2e8e)")
    load_s = time.perf_counter() - t0
    result: dict[str, Any] = {"detector": args.detector, "load_s": round(load_s, 2), "sets": {}}
    for path in args.set or SETS:
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        result["sets"][str(path)] = evaluate(rows, decide)
    result["max_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    text = json.dumps(result, indent=1, ensure_ascii=False)
    if args.json:
        args.json.write_text(text + "\n", encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

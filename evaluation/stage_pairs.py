"""Reply sets with and without retrieval.stage_order, question by question, and a sign test.

    python -m evaluation.stage_pairs --data evaluation/replies/replyset.jsonl [--data ...] --out DIR
    python -m evaluation.stage_pairs --table DIR/stage-pairs.jsonl      # the table of rows already written

Only a question whose words name a life stage can be answered differently (``life_stage.question_stages``
empty: ``stage_order`` returns the hits as they were), and only when the order moved a card from the first
TOP_MOVED documents: only those are answered, both ways (plus ``--check`` questions whose cards moved from further
down, to confirm their replies are the same); every other question counts as unchanged. Writes
``DIR/stage-pairs.jsonl`` (a row per question as it is answered, both arms) and prints the per-set table.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

from chatbot.pipeline import run_pipeline
from chatbot.stages.life_stage import question_stages
from chatbot.stages.safety import retrieval_text
from evaluation.bench_replies import load_reply_set, score_item
from evaluation.harness import apply_overrides, services_over_cards

# the links are the first retrieval.top_n (3) documents that are not urgent-card fillers (at most 3 of those
# above them in practice): a card moved from below rank 6 leaves them as they were
TOP_MOVED = 6


def sign_test(better: int, worse: int) -> float:
    """Exact two-sided sign test p-value (ties dropped)."""
    n = better + worse
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(min(better, worse) + 1)) / 2**n
    return min(1.0, 2 * tail)


def main(argv: list[str] | None = None) -> int:
    from chatbot.answer import answer
    from chatbot.settings import load_settings

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, action="append", default=[])
    parser.add_argument("--out", type=Path)
    parser.add_argument("--table", type=Path, help="print the table of a stage-pairs.jsonl and stop")
    parser.add_argument("--check", type=int, default=15, help="questions moved past TOP_MOVED answered again")
    args = parser.parse_args(argv)
    if args.table:
        print(table([json.loads(line) for line in args.table.read_text(encoding="utf-8").splitlines()]))
        return 0
    if not args.data or args.out is None:
        parser.error("--data and --out are needed")
    args.out.mkdir(parents=True, exist_ok=True)
    sink = (args.out / "stage-pairs.jsonl").open("w", encoding="utf-8")
    checked = 0
    settings = load_settings()
    on = services_over_cards(apply_overrides(settings.model_copy(deep=True), ["retrieval.stage_order=true"]))
    off = services_over_cards(apply_overrides(settings.model_copy(deep=True), ["retrieval.stage_order=false"]))
    rows: list[dict[str, Any]] = []
    for path in args.data:
        items = load_reply_set(path)
        for k, item in enumerate(items, 1):
            cued = sorted(question_stages(item.question))
            row: dict[str, Any] = {"set": path.stem, "id": item.id, "language": item.language, "stages": cued}
            if not cued:
                row["moved"] = False
                rows.append(row)
                sink.write(json.dumps(row) + "\n")
                continue
            # the retrieval alone first: a reply can change only when a card moved from the first TOP_MOVED
            ranked = run_pipeline(on.settings.retrieval.pipeline, retrieval_text(item.question), on).ranked
            row["demoted"] = [h.segment.doc_id for h in ranked if h.detail.get("stage_demoted")]
            row["from_ranks"] = [int(h.detail["stage_demoted"]) for h in ranked if h.detail.get("stage_demoted")]
            row["moved"] = any(r <= TOP_MOVED for r in row["from_ranks"])
            # a sample of the others is answered both ways anyway, to check that their replies are the same
            check = not row["moved"] and bool(row["from_ranks"]) and checked < args.check
            checked += check
            row["checked"] = check
            if row["moved"] or check:
                row["on"] = score_item(item, answer(item.question, on))
                row["off"] = score_item(item, answer(item.question, off))
            rows.append(row)
            sink.write(json.dumps(row) + "\n")
            sink.flush()
            print(f"  [{k}/{len(items)}] {item.id} {cued} moved={row['moved']}", file=sys.stderr)
    sink.close()
    print(table(rows))
    return 0


def table(rows: list[dict[str, Any]]) -> str:
    """Per set and language: questions, cued, moved, recall and first-link changes (better/worse), sign tests."""
    out = [
        "| set | lang | n | cued | moved (+checked) | recall better / worse | Δ recall (sum) "
        "| first link better / worse |",
        "|---|---|---|---|---|---|---|---|",
    ]
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["set"], r["language"]), []).append(r)
        groups.setdefault(("all", r["language"]), []).append(r)
        groups.setdefault(("all", "all"), []).append(r)
    for (name, lang), rs in groups.items():
        moved = [r for r in rs if "on" in r]
        rb = sum(r["on"]["recall"] > r["off"]["recall"] for r in moved)
        rw = sum(r["on"]["recall"] < r["off"]["recall"] for r in moved)
        delta = sum(r["on"]["recall"] - r["off"]["recall"] for r in moved)
        lb = sum(r["on"]["first_link_ok"] and not r["off"]["first_link_ok"] for r in moved)
        lw = sum(r["off"]["first_link_ok"] and not r["on"]["first_link_ok"] for r in moved)
        cued = sum(bool(r["stages"]) for r in rs)
        top = sum(r["moved"] for r in rs)
        out.append(
            f"| {name} | {lang} | {len(rs)} | {cued} | {top} (+{len(moved) - top}) | "
            f"{rb} / {rw} (p={sign_test(rb, rw):.3g}) | "
            f"{delta:+.2f} | {lb} / {lw} (p={sign_test(lb, lw):.3g}) |"
        )
    return "\n".join(out)


if __name__ == "__main__":
    raise SystemExit(main())

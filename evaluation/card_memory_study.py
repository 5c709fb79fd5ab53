"""What retrieval.card_memory does to each question of reply sets outside the labelled memory, by cosine band.

``run``: every question answered with the default settings (the answer path patients use), scored like ``chatbot eval
replies``; where the card memory moved a card, the question is answered again with it off. Resumable: ids already
in ROWS are skipped. ``bands``: better / worse / recall delta of the moves, per language and band of the nearest
labelled question's cosine (the band below a tau is what raising tau to it would undo). Session 34:
evaluation/results/card-memory-s34.md.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

BANDS = (0.92, 0.925, 0.93, 0.935, 0.94, 0.95, 1.01)


def run(sets: list[Path], rows_path: Path) -> None:
    from chatbot.answer import answer
    from chatbot.pipeline import Services
    from chatbot.settings import Settings
    from evaluation.bench_replies import load_reply_set, score_item

    services = Services(Settings())
    done = {json.loads(line)["query_id"] for line in rows_path.open()} if rows_path.is_file() else set()
    with rows_path.open("a") as out:
        for path in sets:
            for item in load_reply_set(path):
                if item.id in done:
                    continue
                ans = answer(item.question, services)
                row = score_item(item, ans)
                memory = (ans.get("trace") or {}).get("safety", {}).get("card_memory") or {}
                rec: dict[str, Any] = {
                    "query_id": item.id,
                    "set": path.stem,
                    "language": item.language,
                    "type": item.type,
                    "card": item.card_id,
                    "recall": row["recall"],
                    "first_link_ok": int(bool(row.get("first_link_ok"))),
                    "memory_id": memory.get("id"),
                    "memory_cosine": memory.get("cosine"),
                    "memory_picked": memory.get("picked"),
                    "memory_rank": memory.get("rank"),
                    "memory_reason": memory.get("reason"),
                    "off_recall": None,
                    "off_first_link_ok": None,
                }
                if memory.get("picked"):
                    services.settings.retrieval.card_memory = False
                    try:
                        off = score_item(item, answer(item.question, services))
                    finally:
                        services.settings.retrieval.card_memory = True
                    rec["off_recall"] = off["recall"]
                    rec["off_first_link_ok"] = int(bool(off.get("first_link_ok")))
                out.write(json.dumps(rec) + "\n")
                out.flush()


def bands(rows: list[dict[str, Any]], edges: tuple[float, ...] = BANDS) -> list[dict[str, Any]]:
    """One row per (band, language): moves, better, worse, recall and first-link deltas of the card memory."""
    moved = [r for r in rows if r["off_recall"] is not None]
    table = []
    for lo, hi in zip(edges, edges[1:], strict=False):
        for lang in ("en", "it"):
            b = [r for r in moved if r["language"] == lang and lo <= r["memory_cosine"] < hi]
            table.append(
                {
                    "band": f"{lo:.3f}-{hi:.3f}" if hi <= 1 else f">= {lo:.3f}",
                    "language": lang,
                    "moves": len(b),
                    "better": sum(r["recall"] > r["off_recall"] for r in b),
                    "worse": sum(r["recall"] < r["off_recall"] for r in b),
                    "recall_delta": round(sum(r["recall"] - r["off_recall"] for r in b), 2),
                    "first_link_delta": sum(r["first_link_ok"] - r["off_first_link_ok"] for r in b),
                }
            )
    return table


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="answer every question (card memory on, and off where it moved a card)")
    r.add_argument("--data", type=Path, action="append", required=True, help="reply set JSONL (repeatable)")
    r.add_argument("--rows", type=Path, required=True)
    b = sub.add_parser("bands", help="the band table of a rows file, as markdown")
    b.add_argument("--rows", type=Path, required=True)
    args = ap.parse_args(argv)
    if args.cmd == "run":
        run(args.data, args.rows)
        return 0
    rows = [json.loads(line) for line in args.rows.open()]
    print("| nearest labelled cosine | language | moves | better | worse | recall delta | first link delta |")
    print("|---|---|---|---|---|---|---|")
    for t in bands(rows):
        print(
            f"| {t['band']} | {t['language']} | {t['moves']} | {t['better']} | {t['worse']} | "
            f"{t['recall_delta']:+.1f} | {t['first_link_delta']:+d} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

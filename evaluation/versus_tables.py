"""Per-set before/after of a `chatbot eval replies ... --versus ...` report (A = the run, B = its versus run):

    python -m evaluation.versus_tables evaluation/results/replies-NAME.json [--per-query-b OUT.per_query.jsonl]

Sets are told apart by id prefix (dev- replyset, held- heldout, held2- heldout-v2, rep3- heldout-v3, rep4-
heldout-v4). Prints per set: key-fact recall / first link = card / refused for A and B, questions whose recall
rose / fell, and the exact two-sided sign test on those; --per-query-b writes B's rows in the per-query format
`evaluation.compare_runs` reads (A's are the report's own .per_query.jsonl). Ids and numbers only."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

PREFIXES = (("rep4-", "heldout-v4"), ("rep3-", "heldout-v3"), ("held2-", "heldout-v2"), ("held-", "heldout"))


def set_of(qid: str) -> str:
    return next((name for prefix, name in PREFIXES if qid.startswith(prefix)), "replyset")


def sign_p(up: int, down: int) -> float:
    n = up + down
    if n == 0:
        return 1.0
    return min(1.0, 2 * sum(math.comb(n, i) for i in range(min(up, down) + 1)) / 2**n)


def summary(rows: list[dict[str, Any]]) -> str:
    n = len(rows) or 1
    recall = sum(r["recall"] for r in rows) / n
    first = sum(bool(r["first_link_ok"]) for r in rows) / n
    refused = sum(r["status"] != "answered" for r in rows)
    return f"{recall:.3f} / {first:.3f} / {refused}"


def tables(report: dict[str, Any]) -> list[dict[str, Any]]:
    a = {r["id"]: r for r in report["rows"]}
    b = {r["id"]: r for r in report["versus"]["rows"]}
    groups: dict[tuple[str, str], list[str]] = {}
    for qid, row in a.items():
        groups.setdefault((set_of(qid), row["language"]), []).append(qid)
        groups.setdefault(("all", row["language"]), []).append(qid)
    out = []
    for (name, language), ids in sorted(groups.items()):
        up = [i for i in ids if b[i]["recall"] > a[i]["recall"]]
        down = [i for i in ids if b[i]["recall"] < a[i]["recall"]]
        out.append(
            {
                "set": name,
                "language": language,
                "n": len(ids),
                "A": summary([a[i] for i in ids]),
                "B": summary([b[i] for i in ids]),
                "gained": up,
                "lost": down,
                "sign_p": round(sign_p(len(up), len(down)), 4),
                "changed": sum(
                    a[i]["reply"] != b[i]["reply"] or a[i]["first_link_doc"] != b[i]["first_link_doc"] for i in ids
                ),
            }
        )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", type=Path)
    parser.add_argument("--per-query-b", type=Path)
    args = parser.parse_args(argv)
    report = json.loads(args.report.read_text(encoding="utf-8"))
    head = "| set | language | n | A: recall / first link / refused | B | gained | lost | sign p | changed |"
    print(head)
    print("|---|---|---|---|---|---|---|---|---|")
    for t in tables(report):
        print(
            f"| {t['set']} | {t['language']} | {t['n']} | {t['A']} | {t['B']} | {', '.join(t['gained']) or '-'} | "
            f"{', '.join(t['lost']) or '-'} | {t['sign_p']} | {t['changed']} |"
        )
    if args.per_query_b:
        with args.per_query_b.open("w", encoding="utf-8") as fh:
            for r in report["versus"]["rows"]:
                row = {
                    "query_id": r["id"],
                    "pipeline": "replies",
                    "recall": r["recall"],
                    "first_link_ok": int(bool(r["first_link_ok"])),
                    "answered": int(r["status"] == "answered"),
                }
                fh.write(json.dumps(row) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

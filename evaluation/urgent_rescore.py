"""The urgent-reply change (session 10), product and scoring apart, on a reply set, without rerunning it whole.

    python -m evaluation.urgent_rescore --data evaluation/replies/heldout-v4.jsonl \
        --before evaluation/results/replies-s10-after-heldout-v4.json \
        --urgent evaluation/results/replies-s10-urgent-only-heldout-v4.json

``--before``: a full `chatbot eval replies` report of the code before the change (its per-question rows hold
status, urgent flag, reply text and first link). ``--urgent``: a report of the code after the change on the
questions that were urgent in ``--before`` (the change touches only replies the red-flag screen fired on; every
other reply is the same code's, so its row is taken from ``--before``). Four runs, one table:

- A: product before, scoring before (``--before`` as it was: a reply not "answered" scores 0);
- B: product before, scoring after (what the patient read: an urgent reply's text counts);
- C: product after, scoring after (urgent rows from ``--urgent``);
- D: product after, scoring before.

A→B is the scoring change, B→C (and A→D) the product change, with paired tests (``evaluation.harness``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from evaluation.bench_replies import key_facts_and_link, load_reply_set, summarise
from evaluation.compare_runs import compare

METRICS = ("recall", "first_link_ok")


def rescore(row: dict[str, Any], phrases: tuple[str, ...], urgent_counts: bool) -> dict[str, Any]:
    """One stored per-question row under the scoring before (``urgent_counts`` False) or after the change."""
    out = dict(row)
    docs = row.get("link_docs") or ([row["first_link_doc"]] if row.get("first_link_doc") else [])
    urgent_docs = set(row.get("urgent_cards") or [])
    found, out["first_link_ok"], scored = key_facts_and_link(
        row["status"], bool(row["urgent"]), row["reply"], phrases, docs, urgent_docs, row["card_id"], urgent_counts
    )
    out["recall"] = sum(found) / len(found)
    out["missing"] = [p for p, ok in zip(phrases, found, strict=True) if not ok]
    if urgent_counts:
        out["scored"] = scored
    else:
        out.pop("scored", None)
    return out


def four_runs(data: Path, before: dict[str, Any], after_urgent: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Rows of A, B, C, D (see the module doc) in the reply set's order."""
    phrases = {item.id: item.key_phrases for item in load_reply_set(data)}
    old = {r["id"]: r for r in before["rows"]}
    new = {r["id"]: r for r in after_urgent["rows"]}
    urgent_ids = {i for i, r in old.items() if r["urgent"]}
    if set(new) != urgent_ids:
        raise ValueError(f"--urgent holds {sorted(new)}, --before's urgent questions are {sorted(urgent_ids)}")
    if not all(r["urgent"] for r in new.values()):
        raise ValueError("a question urgent before is not urgent after: the screen changed, rerun the whole set")
    runs: dict[str, list[dict[str, Any]]] = {"A": [], "B": [], "C": [], "D": []}
    for qid in phrases:
        runs["A"].append(rescore(old[qid], phrases[qid], False))
        runs["B"].append(rescore(old[qid], phrases[qid], True))
        after = new.get(qid, old[qid])
        runs["C"].append(rescore(after, phrases[qid], True))
        runs["D"].append(rescore(after, phrases[qid], False))
    return runs


def _p(runs: dict[str, list[dict[str, Any]]], a: str, b: str, metric: str) -> str:
    by = [(k, {r["id"]: {m: float(r[m]) for m in METRICS} for r in runs[k]}) for k in (a, b)]
    test = next(t for t in compare(by, METRICS)["tests"] if t["metric"] == metric)
    return f"{test['mean_diff']:+.3f} (Wilcoxon p {test['p_wilcoxon']:.3g})"


def table(name: str, runs: dict[str, list[dict[str, Any]]]) -> list[str]:
    """One row per run: key-fact recall (all, en, it), any key fact, first link = card, urgent replies and
    their recall; then the paired p-values."""
    lines = []
    for key, label in (("A", "before / before"), ("B", "before / after"), ("C", "after / after"),
                       ("D", "after / before")):  # fmt: skip
        rows = runs[key]
        s = summarise(rows)
        urgent = [r for r in rows if r["urgent"]]
        card_first = sum(
            bool(r.get("link_docs")) and r["link_docs"][0] in (r.get("urgent_cards") or []) for r in urgent
        )
        refused = f"{s['refused']} ({s['refused_urgent']} urgent)"
        lang = {g: summarise([r for r in rows if r["language"] == g]).get("key_fact_recall", 0.0) for g in ("en", "it")}
        lines.append(
            f"| {name} | {key}: {label} | {s['n']} | {s['key_fact_recall']:.3f} | {lang['en']:.3f} | {lang['it']:.3f} "
            f"| {s['any_key_fact']:.3f} | {s['first_link_is_card']:.3f} | {refused} "
            f"| {len(urgent)} | {sum(r['recall'] for r in urgent) / max(1, len(urgent)):.3f} "
            f"| {card_first} |"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, required=True, action="append")
    ap.add_argument("--before", type=Path, required=True, action="append")
    ap.add_argument("--urgent", type=Path, required=True, action="append")
    args = ap.parse_args(argv)
    head = (
        "| set | product / scoring | n | key-fact recall | en | it | any key fact | first link = card | refused "
        "| urgent replies | their recall | urgent card linked first |"
    )
    lines = [head, "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    tests = [
        "| set | scoring change A→B: recall | product change B→C: recall | B→C: first link = card |",
        "|---|---|---|---|",
    ]
    for data, before, urgent in zip(args.data, args.before, args.urgent, strict=True):
        runs = four_runs(data, json.loads(before.read_text()), json.loads(urgent.read_text()))
        lines += table(data.stem, runs)
        tests.append(
            f"| {data.stem} | {_p(runs, 'A', 'B', 'recall')} | {_p(runs, 'B', 'C', 'recall')} "
            f"| {_p(runs, 'B', 'C', 'first_link_ok')} |"
        )
    print("\n".join(lines + [""] + tests))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

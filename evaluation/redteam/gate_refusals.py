"""Why the relevance gate refused in-scope questions: per refused row of a ``gate_collect`` rows file, the gate
decision that refused it (classifier probability against its per-language bar; the Italian cross-language second
look's score against its cut), and whether the reply set's card was among the links or the other-language pool's
first document. Ids and numbers only (the rows hold dev-set text, which is not written out).

    python -m evaluation.redteam.gate_refusals --rows ROWS.jsonl --sets evaluation/replies/heldout-v10.jsonl ..."""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from chatbot.stages.cross_language_gate import cross_language_score

PROG = "python -m evaluation.redteam.gate_refusals"


def diagnose(row: Mapping[str, Any], card: str | None, bar: float, rule: Sequence[float] | None) -> dict[str, Any]:
    """One row's refusal diagnosis: the classifier's view, the second look's view, where the expected card sat."""
    p = row.get("probability")
    links = list(row.get("links") or [])
    dense = [float(x) for x in row.get("link_dense") or []]
    out: dict[str, Any] = {
        "id": row["id"],
        "source": row["source"],
        "probability": p,
        "bar": bar,
        "classifier_relevant": bool(row.get("shipped_relevant")),
        "card_rank": links.index(card) + 1 if card in links else None,
        "links_in_language": bool(row.get("links_in_language")),
        "other_doc_is_card": card is not None and row.get("other_doc") == card,
    }
    look = None
    if (
        rule is not None
        and p is not None
        and not out["classifier_relevant"]
        and out["links_in_language"]
        and dense
        and row.get("other_dense") is not None
        and not row.get("other_urgent")
    ):
        score = cross_language_score(p, float(row["other_dense"]), max(dense), float(rule[0]))
        look = {"score": round(score, 3), "cut": float(rule[1]), "relevant": score >= float(rule[1])}
    out["second_look"] = look
    out["answered"] = out["classifier_relevant"] or bool(look and look["relevant"])
    if out["answered"]:
        out["refused_by"] = None
    elif look is None:
        out["refused_by"] = "classifier (no second look possible)"
    else:
        out["refused_by"] = "classifier, then second look"
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=Path, required=True, help="gate_collect rows (JSONL)")
    parser.add_argument("--sets", type=Path, nargs="+", required=True, help="reply sets (id, card_id)")
    parser.add_argument("--bar", type=float, nargs=2, metavar=("EN", "IT"), required=True, help="probability bars")
    parser.add_argument("--rule-it", type=float, nargs=2, metavar=("SLOPE", "CUT"), default=None)
    args = parser.parse_args(argv)
    cards: dict[tuple[str, str], str] = {}
    for path in args.sets:
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                r = json.loads(line)
                cards[("replies/" + path.name, r["id"])] = r.get("card_id")
    for line in args.rows.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        if row.get("skipped"):
            continue
        lang = row.get("gate_language", row["language"])
        bar = args.bar[0] if lang == "en" else args.bar[1]
        rule = args.rule_it if lang == "it" else None
        print(json.dumps(diagnose(row, cards.get((row["source"], row["id"])), bar, rule)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Why the red-flag screen marks ordinary reply-set questions urgent (session 10 diagnosis; no product change).

Screens every question of the reply sets and every message of the red-flag sets once with the shipped screen
(`chatbot.stages.redflags.screen`), keeps the parts the gate reads (head score, n-gram score of the most urgent
unit and of the whole message, rule fired before the veto, calm framing, "?"), then:

- lists every reply question marked urgent: card, actions, rules and their evidence, scores, bar, n-gram unit;
- counts them per set and language by a hand verdict (``--labels``: true / defensible / false) and by mechanism;
- replays the gate (`chatbot.stages.redflag_gate`) with candidate bars on the same scores: red-flag recall and
  false-alarm rate per set and language, and which reply questions each setting silences.

The replay reproduces the shipped verdict exactly (checked: it stops with an error otherwise).
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path
from typing import Any

from chatbot.stages import redflag_gate as gate
from chatbot.stages import redflag_rules as rules
from chatbot.stages import redflags
from chatbot.stages.redflag_classifier import shipped_classifier

REPLY_SETS = ("heldout-v3", "heldout-v4", "heldout-v5")
RF_SETS = ("testset-v5", "testset", "testset-v2", "testset-v3", "testset-v4")  # v5: the one never trained on
KNOBS: tuple[tuple[str, dict[str, float], str, float], ...] = (
    ("shipped", {}, "ng", 0.0),
    ("rule bar 0.2, questions and statements", {"veto": 0.2, "veto_questions_only": 0.0}, "ng", 0.0),
    ("threshold 0.6", {"threshold": 0.6}, "ng", 0.0),
    ("threshold 0.7", {"threshold": 0.7}, "ng", 0.0),
    ("no rule: min(head, ngram) >= 0.2", {}, "ng", 0.2),
    ("no rule: min(head, ngram) >= 0.3", {}, "ng", 0.3),
    ("n-gram on the whole message only", {}, "ng_whole", 0.0),
)


def components(item: dict[str, Any], which: str, classifier: Any) -> dict[str, Any]:
    """The screen's verdict on one message and the parts the gate reads."""
    text = item.get("text") or item["question"]
    res = redflags.screen(text)
    tr = res.trace()
    cls = tr["classifier"] or {}
    ctx = cls.get("context") or {}
    if not ctx:
        raise SystemExit("the contextual head did not run: build e5 first (chatbot models build-e5)")
    whole = classifier.probabilities([rules.without_negated(redflags.raw_text(text))])[0]
    return {
        "set": which,
        "id": item["id"],
        "language": item["language"],
        "card_id": item.get("card_id"),
        "gold": bool(item["urgent"]) if "urgent" in item else "urgent" in str(item.get("card_id")),
        "urgent": res.urgent,
        "actions": list(res.actions),
        "rules": [[r["category"], r["evidence"]] for r in tr["rules"]],
        "vetoed": ctx.get("vetoed", []),
        "rule": bool(tr["rules"]) or bool(ctx.get("vetoed")),
        "framed": bool(ctx.get("framing")),
        "asks": "?" in redflags.raw_text(text),
        "ctx": ctx["urgent_score"],
        "ng": cls["urgent_score"],
        "ng_whole": float(1.0 - whole[0]),
        "combined": ctx["combined"],
        "bar": ctx["veto"] if tr["rules"] else ctx["threshold"],
        "unit": cls.get("unit", ""),
    }


def verdict(r: dict[str, Any], p: dict[str, float], ngkey: str = "ng", floor: float = 0.0) -> bool:
    """The gate's verdict on stored scores; ``floor``: without a counted rule both models must reach it."""
    u = bool(gate.urgent(r["ctx"], r[ngkey], r["rule"], r["framed"], p, r["asks"]))
    rule_counts = r["rule"] and bool(gate.urgent(r["ctx"], r[ngkey], True, r["framed"], p, r["asks"]))
    return u and (rule_counts or min(r["ctx"], r[ngkey]) >= floor)


def mechanism(r: dict[str, Any]) -> str:
    """Which cell of the gate let the message through."""
    if r["rules"]:
        return "rule on a statement (bar 0)" if not r["asks"] else f"rule on a question (bar {r['bar']})"
    high = [name for name, key in (("head", "ctx"), ("ngram", "ng")) if r[key] >= 0.5]
    return "no rule, mixed >= 0.50: " + (" and ".join(high) + " >= 0.5" if high else "neither >= 0.5")


def main(argv: list[str] | None = None) -> int:
    """Screen, count, replay; write the JSON lines and print the tables."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--labels", type=Path, default=Path("evaluation/results/redflags-false-alarms-s10.labels.json"))
    ap.add_argument("--rows", type=Path, help="write every message's components here (JSON lines)")
    args = ap.parse_args(argv)
    labels = json.loads(args.labels.read_text(encoding="utf-8"))
    classifier = shipped_classifier()
    rows = []
    for name in REPLY_SETS:
        path = Path(f"evaluation/replies/{name}.jsonl")
        rows += [components(json.loads(x), name, classifier) for x in path.read_text().splitlines() if x.strip()]
    for name in RF_SETS:
        path = Path(f"evaluation/redflags/{name}.jsonl")
        rows += [components(json.loads(x), name, classifier) for x in path.read_text().splitlines() if x.strip()]
    if args.rows:
        args.rows.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    shipped = gate.params(json.loads(Path("models/redflags/context-head.json").read_text()))
    if any(verdict(r, shipped) != r["urgent"] for r in rows):
        raise SystemExit("the replay does not reproduce the shipped screen")
    reply = [r for r in rows if r["set"] in REPLY_SETS]

    def lab(r: dict[str, Any]) -> str:
        return "urgent card" if r["gold"] else labels.get(r["id"], {}).get("verdict", "quiet")

    unlabelled = [r["id"] for r in reply if r["urgent"] and not r["gold"] and r["id"] not in labels]
    if unlabelled:
        raise SystemExit(f"fired without a verdict in --labels: {unlabelled}")
    print("| set | id | card | verdict | actions | rules (evidence) | head | ngram unit / whole | mixed | bar | cell |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in reply:
        if r["urgent"]:
            ev = "; ".join(f"{c} ({', '.join(e)})" for c, e in r["rules"]) or "-"
            print(
                f"| {r['set'][-2:]} | {r['id']} | {r['card_id']} | {lab(r)} | {', '.join(r['actions'])} | {ev} | "
                f"{r['ctx']:.3f} | {r['ng']:.3f} / {r['ng_whole']:.3f} | {r['combined']:.3f} | {r['bar']} | "
                f"{mechanism(r)} |"
            )
    head = "| set | lang | questions | urgent cards | fired | urgent card | true | defensible | false | ordinary | FA |"
    print("\n" + head)
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name in REPLY_SETS:
        for lang in ("en", "it"):
            rr = [r for r in reply if r["set"] == name and r["language"] == lang]
            c = Counter(lab(r) for r in rr if r["urgent"])
            ordinary = sum(1 for r in rr if lab(r) in ("quiet", "false"))
            print(
                f"| {name} | {lang} | {len(rr)} | {sum(r['gold'] for r in rr)} | {sum(r['urgent'] for r in rr)} | "
                f"{c['urgent card']} | {c['true']} | {c['defensible']} | {c['false']} | {ordinary} | "
                f"{c['false'] / ordinary:.3f} |"
            )
    print("\n| cell | true | defensible | false |")
    print("|---|---|---|---|")
    cells = Counter((mechanism(r), lab(r)) for r in reply if r["urgent"] and not r["gold"])
    for cell in sorted({m for m, _ in cells}):
        print(f"| {cell} | {cells[(cell, 'true')]} | {cells[(cell, 'defensible')]} | {cells[(cell, 'false')]} |")
    totals = Counter(lab(r) for r in reply)
    print("\n| setting | " + " | ".join(f"{s} en R / FAR | {s} it R / FAR" for s in RF_SETS) + " | replies fired |")
    print("|---|" + "---|" * (2 * len(RF_SETS) + 1))
    for label, change, ngkey, floor in KNOBS:
        p = {**shipped, **change}
        cols = []
        for name in RF_SETS:
            for lang in ("en", "it"):
                rr = [r for r in rows if r["set"] == name and r["language"] == lang]
                pos = [r for r in rr if r["gold"]]
                neg = [r for r in rr if not r["gold"]]
                rec = sum(verdict(r, p, ngkey, floor) for r in pos) / len(pos)
                far = sum(verdict(r, p, ngkey, floor) for r in neg) / len(neg)
                cols.append(f"{rec:.3f} / {far:.3f}")
        c = Counter(lab(r) for r in reply if verdict(r, p, ngkey, floor))
        fired = " ".join(f"{k} {c[k]}/{totals[k]}" for k in ("urgent card", "true", "defensible", "false"))
        print(f"| {label} | " + " | ".join(cols) + f" | {fired} |")
    print()
    for label, change, ngkey, floor in KNOBS[1:]:
        p = {**shipped, **change}
        lost = [r["id"] for r in rows if r["set"] in RF_SETS and r["gold"] and r["urgent"]]
        lost = [i for i in lost if not verdict(next(r for r in rows if r["id"] == i), p, ngkey, floor)]
        gone = [f"{r['id']} ({lab(r)})" for r in reply if r["urgent"] and not verdict(r, p, ngkey, floor)]
        print(f"- {label}: red-flag emergencies lost {lost or 'none'}; reply questions silenced {gone or 'none'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Red-flag screen, session 12: every message's verdict from one checkout, and two such dumps side by side.

``python -m evaluation.redflags_s12 dump OUT.json [--model DIR]`` runs ``chatbot.stages.redflags.screen`` (the
patient path's code, the rules of the checkout it runs in) with a folder's models and bars on every message of:
the red-flag sets v1-v7 (v5, v6 and v7: no shipped model trained on them; v7 added in session 13), the measure-on
questions (``redflag_ordinary.MEASURE_FILES``, never training data) and the ordinary training pool
(``redflag_ordinary.ordinary_rows``: in-sample for the models, still a check that a rule adds no alarm; id: a hash
of the text). One JSON object per message (set, id, language, gold, action, fired, actions; since session 13 also
the rules that counted, the gate's combined score and the calm frames), no text.
``python -m evaluation.redflags_s12 compare A.json B.json [--md OUT.md]``: recall and false alarms per set and
language, and per message what B gained / lost against A with an exact two-sided McNemar p.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from math import comb
from pathlib import Path
from typing import Any

RF_SETS = ("testset-v7", "testset-v6", "testset-v5", "testset", "testset-v2", "testset-v3", "testset-v4")
LABELS = ("evaluation/results/redflags-false-alarms-s10.labels.json", "evaluation/results/redflags-s11.labels.json")


def messages() -> list[dict[str, Any]]:
    """Every message: set, id, language, text, gold (urgent), action."""
    from chatbot.training.redflag_ordinary import MEASURE_FILES, ordinary_rows
    from evaluation.redflags_s11 import set_rows

    labels: dict[str, Any] = {}
    for f in LABELS:
        labels.update(json.loads(Path(f).read_text(encoding="utf-8")))
    rows = set_rows(RF_SETS)
    for f in MEASURE_FILES:
        for line in Path(f).read_text(encoding="utf-8").splitlines():
            r = json.loads(line) if line.strip() else {}
            if not r or r.get("in_scope") is False:
                continue
            verdict = labels.get(r["id"], {}).get("verdict", "")
            gold = "urgent" in str(r.get("card_id")) or verdict in ("true", "defensible")
            rows.append({"set": "measure-on", "id": r["id"], "language": r["language"],
                         "text": r.get("text") or r["question"], "gold": gold, "action": ""})  # fmt: skip
    for r in ordinary_rows():
        key = hashlib.sha1(r["text"].encode("utf-8")).hexdigest()[:10]
        rows.append({"set": "ordinary-pool (in-sample)", "id": f"pool-{key}", "language": r["language"],
                     "text": r["text"], "gold": bool(r["urgent"]), "action": r.get("action") or ""})  # fmt: skip
    return rows


def dump(out: Path, model: Path | None) -> None:
    from chatbot.stages import redflags
    from chatbot.stages.redflag_classifier import RedFlagClassifier, shipped_classifier
    from chatbot.stages.redflag_context import ContextHead, ContextScorer, shipped_context

    clf = RedFlagClassifier.load(model) if model else shipped_classifier()
    ctx = ContextScorer(ContextHead.load(model)) if model else shipped_context()
    rows = messages()
    for r in rows:
        s = redflags.screen(r["text"], clf, ctx)
        r["fired"], r["actions"] = s.urgent, list(s.actions)
        r["rules"] = [f.category for f in s.rule_flags]
        tr = (s.classifier or {}).get("context") or {}
        r["mixed"], r["framing"] = tr.get("combined"), tr.get("framing", [])
        del r["text"]  # ids only: the sets are in the repository
    out.write_text("[\n" + ",\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n]\n", encoding="utf-8")


def mcnemar(gained: int, lost: int) -> float:
    """Exact two-sided McNemar (binomial) p on the discordant pairs."""
    n = gained + lost
    if n == 0:
        return 1.0
    k = min(gained, lost)
    return min(1.0, 2 * sum(comb(n, i) for i in range(k + 1)) / 2**n)


def compare(a_path: Path, b_path: Path) -> str:
    a = json.loads(a_path.read_text(encoding="utf-8"))
    b = json.loads(b_path.read_text(encoding="utf-8"))
    by_b = {(r["set"], r["id"]): r for r in b}
    only = len(a) + len(b) - 2 * sum((r["set"], r["id"]) in by_b for r in a)
    a = [r for r in a if (r["set"], r["id"]) in by_b]  # the messages both dumps screened
    b = [by_b[(r["set"], r["id"])] for r in a]
    out = [f"A = `{a_path}`, B = `{b_path}`; {len(a)} messages in both ({only} in one dump only, not compared)", "",
           "| set | lang | urgent | recall A | recall B | gained / lost (p) | ordinary | false alarms A | B | "
           "silenced / new (p) |", "|---|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    changed = []
    for s in dict.fromkeys(r["set"] for r in a):
        for g in ("en", "it"):
            idx = [i for i, r in enumerate(a) if r["set"] == s and r["language"] == g]
            u = [i for i in idx if a[i]["gold"]]
            o = [i for i in idx if not a[i]["gold"]]
            ra, rb = sum(a[i]["fired"] for i in u), sum(b[i]["fired"] for i in u)
            fa, fb = sum(a[i]["fired"] for i in o), sum(b[i]["fired"] for i in o)
            gu = sum(b[i]["fired"] and not a[i]["fired"] for i in u)
            lu = sum(a[i]["fired"] and not b[i]["fired"] for i in u)
            so = sum(a[i]["fired"] and not b[i]["fired"] for i in o)
            no = sum(b[i]["fired"] and not a[i]["fired"] for i in o)
            changed += [i for i in idx if a[i]["fired"] != b[i]["fired"]]
            rec = (f"{ra}/{len(u)}", f"{rb}/{len(u)}", f"+{gu} / -{lu} ({mcnemar(gu, lu):.3g})") if u else ("", "", "")
            out.append(f"| {s} | {g} | {len(u)} | {' | '.join(rec)} | {len(o)} | {fa} | {fb} | "
                       f"-{so} / +{no} ({mcnemar(so, no):.3g}) |")  # fmt: skip
    out += ["", "Messages whose verdict changed (A -> B):", ""]
    for i in changed:
        r = a[i]
        kind = "urgent" if r["gold"] else "ordinary"
        out.append(f"- {r['set']} {r['id']} ({kind}): {a[i]['fired']} -> {b[i]['fired']}")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("dump")
    d.add_argument("out", type=Path)
    d.add_argument("--model", type=Path, default=None)
    c = sub.add_parser("compare")
    c.add_argument("a", type=Path)
    c.add_argument("b", type=Path)
    c.add_argument("--md", type=Path, default=None)
    args = ap.parse_args(argv)
    if args.cmd == "dump":
        dump(args.out, args.model)
        return 0
    text = compare(args.a, args.b)
    if args.md:
        args.md.write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Red-flag screen, session 15: a refit against the shipped models on one clean set, message by message.

``python -m evaluation.redflags_s15 dump SET.jsonl REFIT_DIR OUT.json [--shipped models/redflags] [--cache F]``
screens every message of ``SET`` (a red-flag set: id, language, text, urgent, action, kind) through the patient
path's ``chatbot.stages.redflags.screen`` (this checkout's rules) with the shipped models and bars and with the
refit's. One JSON object per message (id, language, action, kind, gold, shipped, refit), no text.
``python -m evaluation.redflags_s15 report OUT.json [--md FILE]``: urgent recall per language and per action, false
alarms per language, gained / lost and silenced / new with an exact two-sided McNemar p, the changed ids, and the
session-15 ship rule: no urgent message lost in either language (or more gained than lost and no language worse)
and no more false alarms.
"""

from __future__ import annotations

import argparse
import json
import pickle
from pathlib import Path
from typing import Any

from evaluation.redflags_s12 import mcnemar
from evaluation.redflags_s14 import _screener

ACTIONS = ("emergency", "poisoning", "mental_health", "maternity_unit")


def dump(set_file: Path, refit: Path, out: Path, shipped: Path, cache_file: Path | None = None) -> None:
    cache: dict[str, Any] = pickle.loads(cache_file.read_bytes()) if cache_file and cache_file.exists() else {}
    screens = {"shipped": _screener(shipped, cache), "refit": _screener(refit, cache)}
    rows = []
    for line in set_file.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        r = json.loads(line)
        verdicts = {name: screen(r["text"]) for name, screen in screens.items()}
        rows.append({"id": r["id"], "language": r["language"], "action": r.get("action") or "none",
                     "kind": r.get("kind"), "gold": bool(r["urgent"]), **verdicts})  # fmt: skip
    if cache_file:
        cache_file.write_bytes(pickle.dumps(cache))
    out.write_text("[\n" + ",\n".join(json.dumps(r) for r in rows) + "\n]\n", encoding="utf-8")


def tally(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Counts of one slice: urgent caught by each side, false alarms, and the discordant pairs."""
    u = [r for r in rows if r["gold"]]
    o = [r for r in rows if not r["gold"]]
    return {
        "urgent": len(u), "ordinary": len(o),
        "caught_shipped": sum(r["shipped"] for r in u), "caught_refit": sum(r["refit"] for r in u),
        "gained": sum(r["refit"] and not r["shipped"] for r in u),
        "lost": sum(r["shipped"] and not r["refit"] for r in u),
        "alarms_shipped": sum(r["shipped"] for r in o), "alarms_refit": sum(r["refit"] for r in o),
        "silenced": sum(r["shipped"] and not r["refit"] for r in o),
        "new": sum(r["refit"] and not r["shipped"] for r in o),
    }  # fmt: skip


def qualifies(rows: list[dict[str, Any]]) -> tuple[bool, list[str]]:
    """The session-15 ship rule on one set; the reasons it fails (empty when it passes)."""
    why = []
    for lang in sorted({r["language"] for r in rows}):
        t = tally([r for r in rows if r["language"] == lang])
        if t["lost"] and not (t["gained"] > t["lost"]):
            why.append(f"{lang}: {t['lost']} urgent lost, {t['gained']} gained")
    t = tally(rows)
    if t["alarms_refit"] > t["alarms_shipped"]:
        why.append(f"false alarms {t['alarms_shipped']} -> {t['alarms_refit']}")
    return not why, why


def _line(label: str, t: dict[str, Any]) -> str:
    rec = (f"{t['caught_shipped']}/{t['urgent']} | {t['caught_refit']}/{t['urgent']} | +{t['gained']} / -{t['lost']} "
           f"({mcnemar(t['gained'], t['lost']):.3g})") if t["urgent"] else "- | - | -"  # fmt: skip
    fa = (f"{t['alarms_shipped']}/{t['ordinary']} | {t['alarms_refit']}/{t['ordinary']} | -{t['silenced']} / "
          f"+{t['new']} ({mcnemar(t['silenced'], t['new']):.3g})") if t["ordinary"] else "- | - | -"  # fmt: skip
    return f"| {label} | {rec} | {fa} |"


def report(path: Path) -> str:
    rows = json.loads(path.read_text(encoding="utf-8"))
    out = ["| slice | urgent: shipped | refit | gained / lost (p) | false alarms: shipped | refit | "
           "silenced / new (p) |", "|---|---|---|---|---|---|---|"]  # fmt: skip
    for lang in ("en", "it", "all"):
        sel = [r for r in rows if lang in ("all", r["language"])]
        out.append(_line(lang, tally(sel)))
        for action in ACTIONS:
            out.append(_line(f"{lang} {action}", tally([r for r in sel if r["action"] == action])))
    ok, why = qualifies(rows)
    rule = "met" if ok else "not met: " + "; ".join(why)
    out += ["", f"Ship rule: {rule}", "", "Changed verdicts (shipped -> refit):", ""]
    out += [f"- {r['id']} ({r['action'] if r['gold'] else 'ordinary'}, {r['kind']}): {r['shipped']} -> {r['refit']}"
            for r in rows if r["shipped"] != r["refit"]]  # fmt: skip
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("dump")
    d.add_argument("set_file", type=Path)
    d.add_argument("refit", type=Path)
    d.add_argument("out", type=Path)
    d.add_argument("--shipped", type=Path, default=Path("models/redflags"))
    d.add_argument("--cache", type=Path, default=None, help="e5 vectors by text kept here (pickle)")
    r = sub.add_parser("report")
    r.add_argument("dump", type=Path)
    r.add_argument("--md", type=Path, default=None)
    args = ap.parse_args(argv)
    if args.cmd == "dump":
        dump(args.set_file, args.refit, args.out, args.shipped, args.cache)
        return 0
    text = report(args.dump)
    if args.md:
        args.md.write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

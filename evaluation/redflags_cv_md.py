"""Render the red-flag cross-validation report (``chatbot.training.redflags_cv --report``) as Markdown.

``python -m evaluation.redflags_cv_md --report CV.json [--before V1.json V2.json V3.json V4.json] --out MD``

``--before``: the shipped screen's ``evaluation.redflags_eval`` JSON on each set (v1..v4 order), shown next to
the out-of-fold numbers.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

SETS = ("testset.jsonl", "testset-v2.jsonl", "testset-v3.jsonl", "testset-v4.jsonl")
ACTIONS = ("emergency", "maternity_unit", "mental_health", "poisoning")


def _f(v: Any) -> str:
    return "—" if v is None else f"{v:.3f}"


def _row(name: str, r: dict[str, Any]) -> str:
    far = "—" if r["false_alarm_rate"] is None else f"{r['false_alarm_rate']:.3f} ({r['false_alarms']})"
    return f"| {name} | {r['urgent']} | {r['ordinary']} | {_f(r['recall'])} | {_f(r['precision'])} | {far} |"


HEAD = "| group | urgent | ordinary | recall | precision | false alarms |\n|---|---|---|---|---|---|"


def markdown(report: dict[str, Any], before: list[dict[str, Any]]) -> str:
    out = [
        "# Red-flag screen: leave-one-set-out cross-validation over the spent sets v1-v4 (session 8)",
        "",
        f"Command: `{report['command']}`  ",
        f"Bars kept pooled recall >= {report['recall_target']} per language and >= "
        f"{report['action_recall_target']} per action on the other three sets' out-of-fold scores.",
        "",
        "## Per set (out of fold) and the shipped screen before this session",
        "",
        "| set | recall | recall en | recall it | precision | false-alarm rate | before: recall / precision / FAR |",
        "|---|---|---|---|---|---|---|",
    ]
    for i, name in enumerate(SETS):
        r = report[name]
        b = before[i]["overall"]["screen"] if i < len(before) else None
        was = f"{b['recall']:.3f} / {b['precision']:.3f} / {b['false_alarm_rate']:.3f}" if b else "—"
        out.append(
            f"| {name} | {_f(r['all']['recall'])} | {_f(r['language=en']['recall'])} | "
            f"{_f(r['language=it']['recall'])} | {_f(r['all']['precision'])} | "
            f"{_f(r['all']['false_alarm_rate'])} ({r['all']['false_alarms']}) | {was} |"
        )
    p = report["pooled"]
    out += ["", "## Pooled over the four folds", "", HEAD, _row("all", p["all"])]
    out += [_row(k.split("=", 1)[1], v) for k, v in p.items() if k.startswith("language=")]
    out += [_row(k.split("=", 1)[1], v) for k, v in p.items() if k.startswith("action=")]
    out += ["", "### Per kind (pooled)", "", HEAD]
    out += [_row(k.split("=", 1)[1], v) for k, v in sorted(p.items()) if k.startswith("kind=")]
    for name in SETS:
        r = report[name]
        out += ["", f"## {name}", "", f"Bars (chosen on the other three sets): `{json.dumps(r['bars'])}`", "", HEAD]
        out += [_row(k.split("=", 1)[1], v) for k, v in r.items() if k.startswith(("language=", "action="))]
        out.append(_row("rules alone", r["rules_alone"]))
        out += ["", f"Misses ({len(r['misses'])}):", ""] + [f"- {m}" for m in r["misses"]]
    if "shipped" in report:
        out += ["", "## Shipped", "", f"`{json.dumps(report['shipped'])}`"]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m evaluation.redflags_cv_md", description=__doc__.split("\n")[0])
    ap.add_argument("--report", type=Path, required=True)
    ap.add_argument("--before", type=Path, nargs="*", default=[])
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    try:
        report = json.loads(args.report.read_text(encoding="utf-8"))
        before = [json.loads(p.read_text(encoding="utf-8")) for p in args.before]
    except (OSError, json.JSONDecodeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    args.out.write_text(markdown(report, before), encoding="utf-8")
    print(args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

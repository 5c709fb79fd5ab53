"""Score the red-flag screen on a labelled set (issue 20).

``python -m evaluation.redflags_eval --data evaluation/redflags/testset.jsonl --name redflags-heldout``

One JSON object a line: ``id``, ``language``, ``text``, ``urgent`` (bool), ``action`` (emergency | poisoning |
mental_health | maternity_unit | null), ``kind`` (free text: the case's type). Reports, for the shipped screen
(rules OR classifier) and for the rules alone: recall, precision and false-alarm rate overall, per language,
per action and per kind; the right-action-first rate (the urgent card shown first is the labelled action);
the screen's p50/p95 latency; every miss, false alarm and wrong first action. Writes
``evaluation/results/<name>.md`` and ``.json`` with the exact command.
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from chatbot.stages import redflag_gate as gate
from chatbot.stages.redflags import ACTIONS, CATEGORY_ACTION, raw_text, rule_flags, screen
from evaluation.evaluator import Benchmark
from evaluation.report import Report, add_output_args, command_line, output_target

PROG = "python -m evaluation.redflags_eval"


class DataError(ValueError):
    """A malformed line of the labelled set."""


def load_cases(path: Path) -> list[dict[str, Any]]:
    """The labelled cases; a malformed line raises DataError naming the file and line."""
    cases = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataError(f"{path}:{n}: invalid JSON ({exc.msg})") from exc
        if not isinstance(row, dict) or not isinstance(row.get("text"), str) or not isinstance(row.get("urgent"), bool):
            raise DataError(f"{path}:{n}: needs a text (string) and urgent (true/false)")
        action = row.get("action")
        if action not in (*ACTIONS, None):
            raise DataError(f"{path}:{n}: action {action!r} is not one of {', '.join(ACTIONS)} or null")
        if row["urgent"] and action is None:
            raise DataError(f"{path}:{n}: an urgent case needs its action")
        cases.append(
            {
                "id": str(row.get("id", n)),
                "language": str(row.get("language") or "?"),
                "kind": str(row.get("kind") or "?"),
                "text": row["text"],
                "urgent": row["urgent"],
                "action": action,
            }
        )
    if not cases:
        raise DataError(f"{path}: no cases")
    return cases


def rates(rows: list[dict[str, Any]], key: str) -> dict[str, Any]:
    """Counts and rates of one system (``key``: which prediction) over these rows."""
    urgent = [r for r in rows if r["urgent"]]
    ordinary = [r for r in rows if not r["urgent"]]
    tp = sum(1 for r in urgent if r[key]["urgent"])
    fp = sum(1 for r in ordinary if r[key]["urgent"])
    detected = [r for r in urgent if r[key]["urgent"]]
    right = sum(1 for r in detected if r[key]["action"] == r["action"])
    return {
        "cases": len(rows),
        "urgent": len(urgent),
        "ordinary": len(ordinary),
        "recall": round(tp / len(urgent), 4) if urgent else None,
        "precision": round(tp / (tp + fp), 4) if tp + fp else None,
        "false_alarm_rate": round(fp / len(ordinary), 4) if ordinary else None,
        "right_action_first": round(right / len(detected), 4) if detected else None,
        "misses": len(urgent) - tp,
        "false_alarms": fp,
    }


def evaluate(cases: list[dict[str, Any]], classifier: Any, context: Any = None) -> dict[str, Any]:
    """Run the screen (and the rules alone) on every case; summary, breakdowns, error lists, latency.
    ``context``: the screen's contextual e5 head (None: rules OR classifier only)."""
    screen("warm-up: load the classifier once", classifier, context)
    rows, ms = [], []
    for case in cases:
        t0 = time.perf_counter()
        result = screen(case["text"], classifier, context)
        ms.append((time.perf_counter() - t0) * 1000)
        rules = rule_flags(raw_text(case["text"]))  # the rules alone, whatever the screen made of them

        rule_actions = [CATEGORY_ACTION[f.category] for f in rules]
        fired = (result.classifier or {}).get("fired", [])
        rows.append(
            {
                **case,
                "screen": {"urgent": result.urgent, "action": result.action, "actions": list(result.actions)},
                "rules": {"urgent": bool(rules), "action": rule_actions[0] if rule_actions else None},
                "classifier": {"urgent": bool(fired), "action": fired[0] if fired else None},
                "why": {
                    "rules": [f.category for f in rules],
                    "classifier": (result.classifier or {}).get("fired", []),
                    "urgent_score": (result.classifier or {}).get("urgent_score"),
                    "context": ((result.classifier or {}).get("context") or {}).get("urgent_score"),
                    "vetoed": ((result.classifier or {}).get("context") or {}).get("vetoed", []),
                },
            }
        )
    out: dict[str, Any] = {"overall": {"screen": rates(rows, "screen"), "rules_alone": rates(rows, "rules")}}
    if classifier is not None:
        out["overall"]["classifier_alone"] = rates(rows, "classifier")
        floor = (classifier.meta.get("rule_floor_validation") or {}).get("floor")
        if floor:  # the alternative measured on validation: a rule counts only above the classifier's floor
            for r in rows:
                score = r["why"]["urgent_score"] or 0.0
                keep = r["rules"]["urgent"] and score >= floor
                r["floored"] = r["classifier"] if not keep else {"urgent": True, "action": r["screen"]["action"]}
            out["overall"][f"rules_floored_at_{floor}"] = rates(rows, "floored")
    for field in ("language", "action", "kind"):
        groups: dict[str, list] = {}
        for r in rows:
            groups.setdefault(str(r[field]), []).append(r)
        out[f"by_{field}"] = {
            k: {"screen": rates(v, "screen"), "rules_alone": rates(v, "rules")} for k, v in sorted(groups.items())
        }
    q = statistics.quantiles(ms, n=20, method="inclusive") if len(ms) > 1 else [ms[0]] * 19
    out["latency_ms"] = {"p50": round(statistics.median(ms), 2), "p95": round(q[18], 2), "max": round(max(ms), 2)}
    keep = ("id", "language", "kind", "action", "text", "screen", "why")
    out["misses"] = [{k: r[k] for k in keep} for r in rows if r["urgent"] and not r["screen"]["urgent"]]
    out["false_alarms"] = [{k: r[k] for k in keep} for r in rows if not r["urgent"] and r["screen"]["urgent"]]
    wrong = [r for r in rows if r["urgent"] and r["screen"]["urgent"] and r["screen"]["action"] != r["action"]]
    out["wrong_first_action"] = [{k: r[k] for k in keep} for r in wrong]
    return out


def _cpu() -> str:
    try:
        info = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.processor() or "unknown"
    name = re.search(r"model name\s*:\s*(.+)", info)
    flags = sorted({f for f in ("avx512f", "amx_tile") if re.search(rf"\b{f}\b", info)})
    return f"{name.group(1).strip() if name else 'unknown'} ({', '.join(flags) or 'no avx512f/amx'})"


def _pct(v: float | None) -> str:
    return "—" if v is None else f"{v:.3f}"


def _table(title: str, groups: dict[str, dict[str, Any]]) -> list[str]:
    lines = [
        f"### {title}",
        "",
        "| group | cases | urgent | recall | precision | false alarms | right action first "
        "| rules alone: recall / FAR |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, g in groups.items():
        s, r = g["screen"], g["rules_alone"]
        lines.append(
            f"| {name} | {s['cases']} | {s['urgent']} | {_pct(s['recall'])} | {_pct(s['precision'])} | "
            f"{_pct(s['false_alarm_rate'])} ({s['false_alarms']}) | {_pct(s['right_action_first'])} | "
            f"{_pct(r['recall'])} / {_pct(r['false_alarm_rate'])} |"
        )
    return [*lines, ""]


def metrics(report: dict[str, Any]) -> dict[str, float | None]:
    """The shipped screen's recall (primary), precision, false-alarm rate and right-action-first rate, and the
    rules alone's recall."""
    s = report["overall"]["screen"]
    return {
        "recall": s["recall"],
        "precision": s["precision"],
        "false_alarm_rate": s["false_alarm_rate"],
        "right_action_first": s["right_action_first"],
        "rules_alone/recall": report["overall"]["rules_alone"]["recall"],
    }


def markdown(report: dict[str, Any]) -> str:
    """The Markdown report of a result (``render(report).markdown()``)."""
    return render(report).markdown()


def render(report: dict[str, Any], name: str = "redflags") -> Report:
    """The report: headline rates, tables per language/action/kind, every miss and false alarm; the JSON
    is the whole result (``<name>.json``)."""
    s, r = report["overall"]["screen"], report["overall"]["rules_alone"]
    lat = report["latency_ms"]
    lines = [
        f"- **Screen (rules OR classifier)**: recall {_pct(s['recall'])}, precision {_pct(s['precision'])}, "
        f"false-alarm rate {_pct(s['false_alarm_rate'])} ({s['false_alarms']} of {s['ordinary']} ordinary), "
        f"right action first {_pct(s['right_action_first'])}; {s['misses']} missed of {s['urgent']} urgent.",
        f"- Rules alone: recall {_pct(r['recall'])}, precision {_pct(r['precision'])}, false-alarm rate "
        f"{_pct(r['false_alarm_rate'])}, right action first {_pct(r['right_action_first'])}.",
        *(
            [
                f"- Classifier alone: recall {_pct(c['recall'])}, precision {_pct(c['precision'])}, false-alarm "
                f"rate {_pct(c['false_alarm_rate'])}, right action first {_pct(c['right_action_first'])}."
            ]
            if (c := report["overall"].get("classifier_alone"))
            else []
        ),
        *(
            f"- Variant {k.replace('_', ' ')} (floor chosen on validation, not shipped): recall "
            f"{_pct(v['recall'])}, precision {_pct(v['precision'])}, false-alarm rate {_pct(v['false_alarm_rate'])}."
            for k, v in report["overall"].items()
            if k.startswith("rules_floored")
        ),
        f"- Screen latency per message: p50 {lat['p50']} ms, p95 {lat['p95']} ms, max {lat['max']} ms.",
        "",
    ]
    lines += _table("Per language", report["by_language"])
    lines += _table("Per action (urgent cases; `None` = ordinary cases)", report["by_action"])
    lines += _table("Per kind", report["by_kind"])
    sections = (("Misses", "misses"), ("False alarms", "false_alarms"), ("Wrong first action", "wrong_first_action"))
    for title, key in sections:
        lines += [f"## {title} ({len(report[key])})", ""]
        if report[key]:
            lines += ["| id | lang | kind | expected | shown first | why | text |", "|---|---|---|---|---|---|---|"]
            for e in report[key]:
                why = ", ".join(e["why"]["rules"] + [f"classifier:{a}" for a in e["why"]["classifier"]]) or "—"
                score = e["why"]["urgent_score"]
                why += f" (score {score:.3f})" if isinstance(score, float) else ""
                ctx = e["why"].get("context")
                why += (
                    f" (context {ctx:.3f}{', vetoed' if e['why'].get('vetoed') else ''})"
                    if isinstance(ctx, float)
                    else ""
                )
                text = e["text"].replace("|", "\\|").replace("\n", " ")
                lines.append(
                    f"| {e['id']} | {e['language']} | {e['kind']} | {e['action']} | {e['screen']['action']} | "
                    f"{why} | {text} |"
                )
        lines.append("")
    return Report(
        name=name,
        title=f"Red-flag screen on {report['data']}",
        command=report["command"],
        command_note=f"  \nScreen: {report['screen']}. Date {report['date']}; CPU {report['cpu']}.",
        body=lines,
        summary=report,
        json_suffix=".json",
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, required=True, help="JSONL: id, language, text, urgent, action, kind")
    add_output_args(
        ap, None, name_help="report name: evaluation/results/<name>.md and .json", out_aliases=["--out-dir"]
    )
    ap.add_argument("--rules-only", action="store_true", help="screen without the classifier")
    ap.add_argument("--model", type=Path, default=None, help="classifier folder (default: models/redflags)")
    ap.add_argument("--no-context", action="store_true", help="screen without the contextual e5 head")
    args = ap.parse_args(argv)
    try:
        cases = load_cases(args.data)
    except (OSError, DataError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    from chatbot.stages.redflag_classifier import SHIPPED_DIR, RedFlagClassifier

    classifier = None
    model = args.model or SHIPPED_DIR
    if not args.rules_only:
        if not (model / "weights.npz").exists():
            print(f"error: no classifier weights in {model} (train one, or pass --rules-only)", file=sys.stderr)
            return 2
        classifier = RedFlagClassifier.load(model)
    context = None
    if classifier is not None and not args.no_context:
        from chatbot.stages.redflag_context import HEAD_FILE, ContextHead, ContextScorer

        if not (model / HEAD_FILE).exists():
            print(f"error: no contextual head in {model} (train one, or pass --no-context)", file=sys.stderr)
            return 2
        context = ContextScorer(ContextHead.load(model))
    out_dir, name = output_target(args.out, args.name)
    screen_name = (
        "rules only" if classifier is None else f"rules OR classifier ({model.name}, threshold {classifier.threshold})"
    )
    if context is not None:
        meta = context.head.meta
        bars = gate.params(meta)
        screen_name += (
            f" OR contextual e5 head (weight {bars['weight']}, threshold {bars['threshold']}), rules vetoed below "
            f"{bars['veto']}; calm-framed messages{' (negation included)' if meta.get('negation_frame') else ''}: "
            f"threshold {bars['framed_threshold']}, rules vetoed below {bars['framed_veto']}"
        )

    def run() -> dict[str, Any]:
        return {
            "command": command_line(PROG, argv),
            "data": str(args.data),
            "screen": screen_name,
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "cpu": _cpu(),
            **evaluate(cases, classifier, context),
        }

    bench = Benchmark(name, "recall", run, metrics, lambda r: render(r, name))
    bench(out_dir)
    report = bench.result
    assert report is not None
    s = report["overall"]["screen"]
    print(
        f"recall {_pct(s['recall'])} precision {_pct(s['precision'])} false alarms {_pct(s['false_alarm_rate'])} "
        f"right action first {_pct(s['right_action_first'])}; p50 {report['latency_ms']['p50']} ms -> "
        f"{bench.path}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

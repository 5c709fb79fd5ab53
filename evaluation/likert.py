"""`chatbot eval report SESSION`: the seed paper's Table 1 (avg, max, min, var per criterion) overall, per
question type and per pipeline, Krippendorff's alpha between evaluators, CSV exports and PNG plots."""

from __future__ import annotations

import argparse
import csv
import json
import math
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

CRITERIA = [
    ("q1_relevant", "Q1 relevance (yes=1)", "nominal", [0, 1]),
    ("q2_precision", "Q2 link precision", None, None),
    ("q3_quality", "Q3 text quality", "ordinal", [1, 2, 3, 4, 5]),
    ("q4_reliability", "Q4 reliability", "ordinal", [1, 2, 3, 4, 5]),
    ("q5_clarity", "Q5 clarity", "ordinal", [1, 2, 3, 4, 5]),
    ("q6_completeness", "Q6 completeness", "ordinal", [1, 2, 3, 4, 5]),
    ("q7_overall", "Q7 overall", "ordinal", [1, 2, 3, 4, 5]),
]


def describe(values: list[float]) -> dict[str, Any]:
    """avg, max, min and sample variance (ddof=1; 0 for a single value) of one criterion."""
    vals = [float(v) for v in values if v is not None]
    if not vals:
        return {"n": 0, "avg": None, "max": None, "min": None, "var": None}
    arr = np.asarray(vals)
    return {
        "n": len(vals),
        "avg": round(float(arr.mean()), 4),
        "max": round(float(arr.max()), 4),
        "min": round(float(arr.min()), 4),
        "var": round(float(arr.var(ddof=1)) if len(vals) > 1 else 0.0, 4),
    }


def table(ratings: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {key: describe([r[key] for r in ratings]) for key, *_ in CRITERIA}


def alpha(units: dict[Any, dict[str, float]], level: str, domain: list[int]) -> float | None:
    """Krippendorff's alpha over units (answer or answer×link) rated by several evaluators; None when it is
    undefined (fewer than two evaluators on any unit, or no variation at all)."""
    import krippendorff

    raters = sorted({r for by in units.values() for r in by})
    pairable = [u for u, by in units.items() if len(by) >= 2]
    if len(raters) < 2 or not pairable:
        return None
    data = np.full((len(raters), len(pairable)), np.nan)
    for j, u in enumerate(pairable):
        for i, r in enumerate(raters):
            if r in units[u]:
                data[i, j] = units[u][r]
    observed = data[~np.isnan(data)]
    if len(set(observed.tolist())) < 2:
        return None
    value = krippendorff.alpha(reliability_data=data, level_of_measurement=level, value_domain=domain)
    return None if value is None or math.isnan(value) else round(float(value), 4)


def agreement(ratings: list[dict[str, Any]]) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for key, _label, level, domain in CRITERIA:
        if key == "q2_precision":  # each link is a unit with a nominal relevant/not verdict
            units: dict[Any, dict[str, float]] = defaultdict(dict)
            for r in ratings:
                for k, v in enumerate(r["q2_links"]):
                    units[(r["answer_id"], k)][r["evaluator"]] = int(v)
            out["q2_links"] = alpha(units, "nominal", [0, 1])
            continue
        units = defaultdict(dict)
        for r in ratings:
            units[r["answer_id"]][r["evaluator"]] = r[key]
        out[key] = alpha(units, level, domain)
    return out


def build_report(data: dict[str, Any]) -> dict[str, Any]:
    ratings = data["ratings"]
    by_type: dict[str, list] = defaultdict(list)
    by_pipeline: dict[str, list] = defaultdict(list)
    for r in ratings:
        by_type[r["qtype"] or "(none)"].append(r)
        by_pipeline[r["pipeline"]].append(r)
    return {
        "session": data["session"],
        "answers": data["answers"],
        "ratings": len(ratings),
        "evaluators": sorted({r["evaluator"] for r in ratings}),
        "overall": table(ratings),
        "by_type": {t: table(rs) for t, rs in sorted(by_type.items())},
        "by_pipeline": {p: table(rs) for p, rs in sorted(by_pipeline.items())},
        "krippendorff_alpha": agreement(ratings),
    }


def _fmt(v: Any) -> str:
    return "–" if v is None else f"{v:.3f}" if isinstance(v, float) else str(v)


def _md_table(stats: dict[str, dict[str, Any]]) -> list[str]:
    lines = ["| criterion | n | avg | max | min | var |", "|---|---|---|---|---|---|"]
    for key, label, *_ in CRITERIA:
        s = stats[key]
        lines.append(
            f"| {label} | {s['n']} | {_fmt(s['avg'])} | {_fmt(s['max'])} | {_fmt(s['min'])} | {_fmt(s['var'])} |"
        )
    return lines


def write_report(data: dict[str, Any], out: Path) -> dict[str, Any]:
    report = build_report(data)
    out.mkdir(parents=True, exist_ok=True)
    ratings = data["ratings"]
    fields = [
        "answer_id",
        "question_id",
        "qtype",
        "pipeline",
        "evaluator",
        "q1_relevant",
        "q2_precision",
        "q2_links",
        "q3_quality",
        "q4_reliability",
        "q5_clarity",
        "q6_completeness",
        "q7_overall",
        "question",
        "comment",
    ]
    with (out / "ratings.csv").open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        for r in ratings:
            w.writerow({**r, "q2_links": "".join("1" if x else "0" for x in r["q2_links"])})
    with (out / "summary.csv").open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["group", "value", "criterion", "n", "avg", "max", "min", "var"])
        groups = [("overall", "all", report["overall"])]
        groups += [("qtype", t, s) for t, s in report["by_type"].items()]
        groups += [("pipeline", p, s) for p, s in report["by_pipeline"].items()]
        for group, value, stats in groups:
            for key, *_ in CRITERIA:
                s = stats[key]
                w.writerow([group, value, key, s["n"], s["avg"], s["max"], s["min"], s["var"]])
    (out / "summary.json").write_text(json.dumps(report, indent=2, ensure_ascii=False), encoding="utf-8")
    _plots(report, ratings, out)

    sess = report["session"]
    lines = [
        f"# Likert evaluation: session `{sess['name']}`",
        "",
        f"{report['answers']} frozen answers, {report['ratings']} ratings by {len(report['evaluators'])} "
        f"evaluator(s); pipelines: {', '.join(sess['pipelines'])}. Command: `chatbot eval report {sess['name']}`.",
        "Q1 is yes=1/no=0, Q2 the share of the shown links marked relevant, Q3-Q7 are 1-5; var is the sample variance.",
        "",
        "## Table 1: all answers",
        "",
        *_md_table(report["overall"]),
        "",
        "## Per question type",
    ]
    for t, stats in report["by_type"].items():
        lines += ["", f"### {t}", "", *_md_table(stats)]
    lines += ["", "## Per pipeline (evaluators did not see which pipeline wrote which answer)", ""]
    head = "| criterion | " + " | ".join(report["by_pipeline"]) + " |"
    lines += [head, "|---" * (len(report["by_pipeline"]) + 1) + "|"]
    for key, label, *_ in CRITERIA:
        lines.append(f"| {label} | " + " | ".join(_fmt(s[key]["avg"]) for s in report["by_pipeline"].values()) + " |")
    lines += [
        "",
        "## Inter-rater agreement (Krippendorff's alpha)",
        "",
        "Nominal for Q1 and each Q2 link, ordinal for Q3-Q7; – means undefined (one evaluator, or no variation).",
        "",
        "| criterion | alpha |",
        "|---|---|",
    ]
    for key, value in report["krippendorff_alpha"].items():
        lines.append(f"| {key} | {_fmt(value)} |")
    lines += [
        "",
        "Files: `ratings.csv`, `summary.csv`, `summary.json`, `criteria.png`, `pipelines.png`, `distribution.png`.",
    ]
    (out / "report.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return report


def _plots(report: dict[str, Any], ratings: list[dict[str, Any]], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    likert = [c for c in CRITERIA if c[2] == "ordinal"]
    labels = [c[1].split(" ", 1)[0] for c in likert]
    fig, ax = plt.subplots(figsize=(7, 3.5))
    stats = report["overall"]
    avgs = [stats[c[0]]["avg"] or 0 for c in likert]
    lo = [max(0.0, (stats[c[0]]["avg"] or 0) - (stats[c[0]]["min"] or 0)) for c in likert]
    hi = [max(0.0, (stats[c[0]]["max"] or 0) - (stats[c[0]]["avg"] or 0)) for c in likert]
    ax.bar(labels, avgs, yerr=[lo, hi], capsize=4, color="#3b82f6")
    ax.set_ylim(0, 5.5)
    ax.set_ylabel("avg (bars: min-max)")
    ax.set_title(f"Likert criteria, session {report['session']['name']}")
    fig.tight_layout()
    fig.savefig(out / "criteria.png", dpi=110)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(7, 3.5))
    pipes = list(report["by_pipeline"])
    width = 0.8 / max(1, len(pipes))
    x = np.arange(len(CRITERIA))
    for i, p in enumerate(pipes):
        s = report["by_pipeline"][p]
        # Q1 and Q2 are 0-1: shown x5 so all criteria share the 0-5 axis
        vals = [(s[k]["avg"] or 0) * (5 if k in ("q1_relevant", "q2_precision") else 1) for k, *_ in CRITERIA]
        ax.bar(x + i * width, vals, width, label=p)
    ax.set_xticks(x + width * (len(pipes) - 1) / 2, [c[1].split(" ", 1)[0] for c in CRITERIA])
    ax.set_ylim(0, 5.5)
    ax.set_ylabel("avg (Q1, Q2 scaled x5)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "pipelines.png", dpi=110)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(7, 3.5))
    bottom = np.zeros(len(likert))
    for score in range(1, 6):
        counts = np.array([sum(1 for r in ratings if r[c[0]] == score) for c in likert], dtype=float)
        ax.bar(labels, counts, bottom=bottom, label=str(score))
        bottom += counts
    ax.set_ylabel("ratings")
    ax.legend(title="score", fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "distribution.png", dpi=110)
    plt.close(fig)


def main_report(args: argparse.Namespace) -> int:
    import sys

    from chatbot.settings import load_settings
    from chatbot.store.db import open_store
    from chatbot.store.evals import session_id_by_name, session_ratings

    settings = load_settings()
    store = open_store(settings)
    try:
        sid = session_id_by_name(store, args.session)
    except LookupError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    data = session_ratings(store, sid)
    out = args.out or settings.paths.results_dir / f"likert-{data['session']['name']}"
    report = write_report(data, Path(out))
    if args.json:
        print(json.dumps(report, ensure_ascii=False))
    else:
        print((Path(out) / "report.md").read_text(encoding="utf-8"))
    return 0

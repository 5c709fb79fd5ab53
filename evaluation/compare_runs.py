"""Compare pipelines across separate harness reports (an option sweep: one `--set` variant per report).

    python -m evaluation.compare_runs evaluation/results/mediqa-test-hyde-rrf:hyde=baseline \
        evaluation/results/mediqa-test-hyde-len128:hyde=max_tokens-128 [--metric nDCG@10 --metric P@3] [--out F.md]

Each RUN is ``REPORT:PIPELINE[=LABEL]``: a report's ``.per_query.jsonl`` (the harness writes it) and one of
its pipelines. Prints (and with ``--out`` writes) the mean of each metric per run and paired two-sided tests
of every run against the first (``evaluation.harness.paired_tests``), on the questions all runs share.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from evaluation.harness import paired_tests

DEFAULT_METRICS = ("nDCG@10", "P@3", "MRR@10")


def parse_run(text: str) -> tuple[Path, str, str]:
    """'results/x:hyde=base' → (results/x.per_query.jsonl, 'hyde', 'base')."""
    spec, _, label = text.partition("=")
    report, sep, pipeline = spec.rpartition(":")
    if not sep or not report or not pipeline:
        raise ValueError(f"run {text!r}: expected REPORT:PIPELINE[=LABEL]")
    path = Path(report if report.endswith(".per_query.jsonl") else f"{report}.per_query.jsonl")
    return path, pipeline, label or f"{path.name.removesuffix('.per_query.jsonl')}:{pipeline}"


def load_run(path: Path, pipeline: str) -> dict[str, dict[str, float]]:
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no per-query results (run `chatbot eval retrieval` first)")
    rows = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if row["pipeline"] == pipeline:
            rows[row["query_id"]] = {k: v for k, v in row.items() if isinstance(v, int | float)}
    if not rows:
        raise ValueError(f"{path}: no rows for pipeline {pipeline!r}")
    return rows


def compare(runs: list[tuple[str, dict[str, dict[str, float]]]], metrics: tuple[str, ...]) -> dict[str, Any]:
    """Means per run and paired tests of each run against the first, on the shared questions."""
    shared = set.intersection(*(set(rows) for _, rows in runs))
    if not shared:
        raise ValueError("the runs share no question")
    means = {label: {m: sum(rows[q][m] for q in shared) / len(shared) for m in metrics} for label, rows in runs}
    base_label, base = runs[0]
    tests = []
    for label, rows in runs[1:]:
        pair = {base_label: {q: base[q] for q in shared}, label: {q: rows[q] for q in shared}}
        tests += [t for m in metrics for t in paired_tests(pair, m)]
    return {"questions": len(shared), "means": means, "tests": tests}


def markdown(result: dict[str, Any], metrics: tuple[str, ...], command: str) -> str:
    lines = [f"Command: `{command}`", "", f"Questions shared by all runs: {result['questions']}", ""]
    lines += ["| run | " + " | ".join(metrics) + " |", "|---|" + "---|" * len(metrics)]
    lines += [
        f"| {label} | " + " | ".join(f"{v[m]:.4f}" for m in metrics) + " |" for label, v in result["means"].items()
    ]
    lines += ["", "| a | b | metric | mean diff | p (Wilcoxon) | p (t-test) |", "|---|---|---|---|---|---|"]
    lines += [
        f"| {t['a']} | {t['b']} | {t['metric']} | {t['mean_diff']:+.4f} | {t['p_wilcoxon']:.4g} | {t['p_ttest']:.4g} |"
        for t in result["tests"]
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", metavar="REPORT:PIPELINE[=LABEL]")
    parser.add_argument("--metric", dest="metrics", action="append", help="default nDCG@10, P@3, MRR@10")
    parser.add_argument("--out", type=Path, help="also write the table here (Markdown)")
    args = parser.parse_args(argv)
    metrics = tuple(args.metrics or DEFAULT_METRICS)
    try:
        runs = [(label, load_run(path, pipeline)) for path, pipeline, label in map(parse_run, args.runs)]
        result = compare(runs, metrics)
    except (ValueError, FileNotFoundError, KeyError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    text = markdown(result, metrics, "python -m evaluation.compare_runs " + " ".join(args.runs))
    print(text)
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

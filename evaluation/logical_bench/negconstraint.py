"""(a) The ``logical`` pipeline on NegConstraint: baselines, named variants, Success@1 by number of exclusions."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from evaluation.logical_bench.common import eval_services, prepare_index, success_at_1
from evaluation.logical_bench.select import selection_note
from evaluation.report import Report

# Paper numbers quoted next to ours.
NS_IR = {"BGE": 0.408, "HyDE": 0.531, "NS-IR (GPT-4o)": 0.565}


NEGCONSTRAINT_VARIANTS: dict[str, dict[str, Any]] = {
    # name: LogicalConfig changes (see chatbot/logical/pipeline.py); ITLR = the paper's plain setting
    "logical": {},
    "logical:ITLR (no orthogonal NOT, best segment only)": {"orthogonal_not": False, "second_segment_weight": 0.0},
    "logical:ITLR+orthogonal-not": {"second_segment_weight": 0.0},
    "logical:ITLR+second-segment": {"orthogonal_not": False},
    "logical:composed": {"final": "composed"},
    "logical:ITLR composed": {"final": "composed", "orthogonal_not": False, "second_segment_weight": 0.0},
    "logical:rerank-only": {"final": "rerank"},
    "logical:and=sum": {"ops": ("sum", "sum", "one_minus")},
    "logical:min/max": {"ops": ("min", "max", "one_minus")},
    "logical:not=1/x": {"ops": ("product", "sum", "inverse")},
    "logical:calibrated": {"calibrate": True},
    "logical:probabilistic": {"mode": "probabilistic"},
    "logical:probabilistic+composed": {"mode": "probabilistic", "final": "composed"},
    "logical:+question-candidates": {"include_question": True},
}


def variant_settings(settings, changes: dict[str, Any]):
    """``settings`` with a NegConstraint variant's changes applied to its ``logical`` group (``ops`` as the
    three operator names)."""
    changes = dict(changes)
    if "ops" in changes:
        changes.update(zip(("and_op", "or_op", "not_op"), changes.pop("ops"), strict=True))
    logical = settings.logical.model_copy(update=changes)
    return settings.model_copy(update={"logical": type(settings.logical).model_validate(logical.model_dump())})


def run_negconstraint(args: argparse.Namespace, command: str) -> tuple[dict[str, float], Report]:
    """Baselines and every named variant on one split; metrics and the report."""
    from chatbot.logical.detect import analyse
    from chatbot.logical.query import count_negations
    from evaluation.harness import evaluate, load_judged

    data: Path = args.data
    services = eval_services(data)
    index = prepare_index(data, services)
    judged = load_judged(data, args.limit, args.split)
    variants = [v for v in NEGCONSTRAINT_VARIANTS if not args.variants or v in args.variants]
    baselines = ["bm25", "dense", "naive"]
    table: dict[str, dict[str, Any]] = {}
    per_query: dict[str, dict[str, dict[str, Any]]] = {}

    def record(name: str, result: dict[str, Any], pipeline: str) -> None:
        rows = [r for r in result["per_query"] if r["pipeline"] == pipeline]
        s = result["summary"]["pipelines"][pipeline]
        table[name] = {
            "Success@1": success_at_1(rows, judged.qrels),
            **{m: s[m] for m in ("nDCG@10", "P@3", "R@50", "MRR@10")},
            "p50_ms": s["latency_ms"]["p50"],
        }
        per_query[name] = {r["query_id"]: r for r in rows}
        print(f"{name:34} " + "  ".join(f"{k} {v:.4f}" for k, v in table[name].items()), flush=True)

    quiet = lambda *a, **k: None  # noqa: E731
    base = evaluate(data, baselines, args.limit, args.split, services=services, log=quiet)
    for b in baselines:
        record(b, base, b)
    base_settings = services.settings
    try:
        for name in variants:
            services.settings = variant_settings(base_settings, NEGCONSTRAINT_VARIANTS[name])
            start = time.perf_counter()
            res = evaluate(data, ["logical"], args.limit, args.split, services.settings, services, log=quiet)
            record(name, res, "logical")
            table[name]["wall_s"] = round(time.perf_counter() - start, 1)
    finally:
        services.settings = base_settings

    # Success@1 by the number of exclusions the detector found (1 ≈ "A − a", 2+ ≈ "(A − a) ∪ (B − b)")
    by_neg: dict[int, list[str]] = {}
    for qid, text in judged.queries.items():
        found = analyse(text)
        by_neg.setdefault(min(count_negations(found.query), 3) if found else 0, []).append(qid)

    def s1(name: str, qids: list[str]) -> float:
        rows = [per_query[name][q] for q in qids]
        return success_at_1(rows, judged.qrels)

    from chatbot.logical.compose import calibration_for

    cal = calibration_for(services.embedder.name)
    cal_text = "none" if cal is None else f"τ={cal.tau:.4f}, λ={cal.lam:.3f} (fitted on {cal.fitted_on})"
    selection = selection_note()
    lines = [
        *([selection, ""] if selection else []),
        "Equivalent harness run with the named variants (nDCG@10, P@3, R@50, MRR@10 only; after this command "
        "built the index: the corpus has no URLs): `CHATBOT_EMBEDDING__MODEL=minilm CHATBOT_RERANK__KIND=fusion "
        "chatbot eval retrieval --data ../shared/data/negconstraint --split test --pipeline naive --pipeline "
        "logical --pipeline logical-prob --pipeline logical-minmax --pipeline logical-itlr --name "
        "logical-negconstraint-harness` (logical-negconstraint-harness.md); one knob at a time also works with "
        "`--set logical.and_op=min`.",
        "",
        f"Embedder {services.embedder.name}; reranker {services.settings.rerank.kind}; index {json.dumps(index)}; "
        f"calibration {cal_text}.",
        "Success@1 = the positive document ranked first (the failure the issue targets: the distractor that "
        "mentions the excluded thing wins).",
        "",
        "| pipeline | Success@1 | nDCG@10 | P@3 | R@50 | MRR@10 | p50 ms |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, row in table.items():
        lines.append(
            f"| {name} | {row['Success@1']:.3f} | {row['nDCG@10']:.4f} | {row['P@3']:.4f} | {row['R@50']:.4f} | "
            f"{row['MRR@10']:.4f} | {row['p50_ms']:.0f} |"
        )
    lines += [
        "",
        "Papers (NS-IR, NegConstraint nDCG@10; not comparable in absolute terms, see the issue): "
        + ", ".join(f"{k} {v:.3f}" for k, v in NS_IR.items())
        + ".",
        "",
        "Success@1 by number of exclusions the detector found:",
        "",
        "| exclusions | queries | " + " | ".join(table) + " |",
        "|---|---|" + "---|" * len(table),
    ]
    for k in sorted(by_neg):
        qids = by_neg[k]
        lines.append(
            f"| {k if k < 3 else '3+'} | {len(qids)} | " + " | ".join(f"{s1(n, qids):.3f}" for n in table) + " |"
        )
    detected = sum(len(v) for k, v in by_neg.items() if k > 0)
    lines += [
        "",
        f"Detector coverage: {detected}/{len(judged.queries)} questions routed to the logical path.",
        "",
        "Variants (chatbot/logical/pipeline.py LogicalConfig): "
        + "; ".join(f"`{k}` = {v or 'defaults'}" for k, v in NEGCONSTRAINT_VARIANTS.items() if k in table),
        "",
    ]
    report = Report(
        name=args.name,
        title=f"Logical pipeline on NegConstraint ({len(judged.queries)} queries, split: {args.split})",
        command=command,
        body=lines,
        summary={"command": command, "table": table, "index": index},
    )
    return metrics(table), report


def metrics(table: dict[str, dict[str, Any]]) -> dict[str, float]:
    """Primary: Success@1 of the ``logical`` pipeline (else of the last row); every row's Success@1 too."""
    main = table["logical"] if "logical" in table else list(table.values())[-1]
    return {
        "Success@1": main["Success@1"],
        "nDCG@10": main["nDCG@10"],
        "MRR@10": main["MRR@10"],
        **{f"{name}/Success@1": row["Success@1"] for name, row in table.items()},
    }

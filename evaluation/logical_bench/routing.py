"""(c) Routing: questions without logical structure keep the naive pipeline, with identical results."""

from __future__ import annotations

import argparse
import json

from evaluation.logical_bench.common import SHARED, eval_services, prepare_index, success_at_1
from evaluation.report import Report


def run_routing(args: argparse.Namespace, command: str) -> tuple[dict[str, float], Report]:
    """Detector decisions on every shared set; naive vs logical on one set (identical top-3 expected)."""
    from chatbot.logical.detect import analyse
    from evaluation.harness import evaluate, load_judged

    lines = [
        "Detector decisions on every judged question of the shared sets (a question routed to the logical path "
        "is listed by id):",
        "",
        "| set | questions | routed to logical |",
        "|---|---|---|",
    ]
    routed_examples: list[str] = []
    routed_counts: dict[str, dict[str, int]] = {}
    for name in args.sets:
        path = SHARED / name / "queries.jsonl"
        if not path.exists():
            continue
        records = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
        routed = [(str(r["_id"]), r["text"]) for r in records if analyse(r["text"]) is not None]
        lines.append(f"| {name} | {len(records)} | {len(routed)} |")
        routed_counts[name] = {"questions": len(records), "routed": len(routed)}
        # Query ids only: the datasets' text is never written into the project.
        routed_examples += [f"- {name}: routed query ids {', '.join(qid for qid, _ in routed[:5])}"]
    lines += ["", *routed_examples, ""]

    data = SHARED / args.eval_set
    services = eval_services(data)
    index = prepare_index(data, services)
    judged = load_judged(data)
    result = evaluate(data, ["naive", "logical"], services=services, log=lambda *a, **k: None)
    rows = {(r["pipeline"], r["query_id"]): r for r in result["per_query"]}
    same = sum(
        [d["doc_id"] for d in rows[("naive", q)]["top"]] == [d["doc_id"] for d in rows[("logical", q)]["top"]]
        and [d["score"] for d in rows[("naive", q)]["top"]] == [d["score"] for d in rows[("logical", q)]["top"]]
        for q in judged.queries
    )
    lines += [
        f"Retrieval on `{args.eval_set}` ({len(judged.queries)} questions; index {json.dumps(index)}):",
        "",
        "| pipeline | Success@1 | nDCG@10 | P@3 | MRR@10 | p50 ms |",
        "|---|---|---|---|---|---|",
    ]
    for p in ("naive", "logical"):
        s = result["summary"]["pipelines"][p]
        prow = [r for r in result["per_query"] if r["pipeline"] == p]
        lines.append(
            f"| {p} | {success_at_1(prow, judged.qrels):.3f} | {s['nDCG@10']:.4f} | {s['P@3']:.4f} | "
            f"{s['MRR@10']:.4f} | {s['latency_ms']['p50']:.0f} |"
        )
    lines += [
        "",
        f"Identical top-3 (documents and scores) for {same}/{len(judged.queries)} questions.",
        "",
    ]
    report = Report(
        name=args.name,
        title="Routing: questions without logical structure keep the naive pipeline",
        command=command,
        body=lines,
        summary={"command": command, "routed": routed_counts, "identical_top3": same, "queries": len(judged.queries)},
    )
    return {"identical_top3_share": same / max(len(judged.queries), 1)}, report

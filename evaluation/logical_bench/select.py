"""The held-out choice of the ``logical`` pipeline's default knobs: a grid on NegConstraint's train split."""

from __future__ import annotations

import argparse
import itertools
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from evaluation.logical_bench.common import eval_services, prepare_index, success_at_1
from evaluation.report import Report, results_dir

SELECT_GRID: dict[str, list[Any]] = {
    # the knobs that were once chosen on all of NegConstraint, plus the candidate depth and the final order
    "orthogonal_not": [True, False],
    "second_segment_weight": [0.0, 0.25, 0.5, 1.0],
    "per_term_k": [20, 50, 100],
    "final": ["rerank-terms", "composed"],
}
SELECTION = "logical-negconstraint-selection"


def selection_note() -> str:
    """The sentence that says on which split the default knobs were chosen ("" before any choice)."""
    path = results_dir() / f"{SELECTION}.summary.json"
    if not path.exists():
        return ""
    sel = json.loads(path.read_text(encoding="utf-8"))
    return (
        f"Default knobs of `logical` chosen on the **{sel['split']}** split ({sel['queries']} questions; grid and "
        f"criterion in `logical-negconstraint-selection.md`): {json.dumps(sel['chosen'])}. Report the other split "
        "only; the calibration was fitted on MedQuAD and the operators are the issue's defaults, neither on "
        "NegConstraint."
    )


class _MemoEmbedder:
    """An embedder whose query vectors are computed once per text (passages pass through)."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.name, self.dim = inner, inner.name, inner.dim
        self.cache: dict[str, np.ndarray] = {}

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        todo = [t for t in dict.fromkeys(texts) if t not in self.cache]
        if todo:
            self.cache.update(zip(todo, self.inner.embed_queries(todo), strict=True))
        return np.vstack([self.cache[t] for t in texts])

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self.inner.embed_passages(texts)


def run_select(args: argparse.Namespace, command: str) -> tuple[dict[str, float], Report]:
    """Every combination of SELECT_GRID on one split (train): the best by Success@1, then nDCG@10, then MRR@10
    (on a full tie the first in grid order) becomes the default; it is set by hand in
    chatbot/logical/pipeline.py LogicalConfig, and this report and its summary record the choice."""
    from chatbot.logical import pipeline as lp
    from evaluation.harness import compute_metrics, load_judged

    data: Path = args.data
    services = eval_services(data)
    index = prepare_index(data, services)
    services.__dict__["embedder"] = _MemoEmbedder(services.embedder)  # the terms repeat across the grid
    judged = load_judged(data, None, args.split)
    keys = list(SELECT_GRID)
    grid = [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*SELECT_GRID.values())]
    rows = []
    for changes in grid:
        config = lp.LogicalConfig(**changes)
        runs, walls = {}, []
        for qid, text in judged.queries.items():
            start = time.perf_counter()
            runs[qid] = [h.segment.doc_id for h in lp.logical_retrieve(text, services, config).ranked]
            walls.append((time.perf_counter() - start) * 1000)
        m = compute_metrics(judged.qrels, runs)["aggregate"]
        first = [{"query_id": q, "top": [{"doc_id": d} for d in r[:1]]} for q, r in runs.items()]
        rows.append(
            {
                **changes,
                "Success@1": success_at_1(first, judged.qrels),
                "nDCG@10": round(m["nDCG@10"], 4),
                "MRR@10": round(m["MRR@10"], 4),
                "p50_ms": float(np.median(walls)),
            }
        )
        print(json.dumps(rows[-1]), flush=True)
    best = max(rows, key=lambda r: (round(r["Success@1"], 6), r["nDCG@10"], r["MRR@10"]))  # first max wins ties
    chosen = {k: best[k] for k in keys}
    current = {k: getattr(lp.LogicalConfig(), k) for k in keys}
    lines = [
        f"{len(judged.queries)} questions of the `{args.split}` split (evaluation/splits.py, by query id); "
        f"embedder {services.embedder.name}, reranker {services.settings.rerank.kind}, index {json.dumps(index)}. "
        f"Every combination of {json.dumps(SELECT_GRID)} (other knobs at their defaults). Criterion: Success@1 "
        "(the issue's target), then nDCG@10, then MRR@10; on a full tie the first in grid order. Latency with "
        "term vectors cached across the grid (embedding the terms is not included).",
        "",
        f"**Chosen: {json.dumps(chosen)}** (LogicalConfig defaults when this ran: {json.dumps(current)}).",
        "",
        "| " + " | ".join(keys) + " | Success@1 | nDCG@10 | MRR@10 | p50 ms |",
        "|" + "---|" * (len(keys) + 4),
    ]
    for r in sorted(rows, key=lambda r: (-r["Success@1"], -r["nDCG@10"], -r["MRR@10"])):
        lines.append(
            "| "
            + " | ".join(str(r[k]) for k in keys)
            + f" | {r['Success@1']:.3f} | {r['nDCG@10']:.4f} | {r['MRR@10']:.4f} | {r['p50_ms']:.0f} |"
        )
    lines.append("")
    report = Report(
        name=args.name,
        title=f"Choice of the logical pipeline's default knobs on NegConstraint's {args.split} split",
        command=command,
        body=lines,
        summary={
            "command": command,
            "split": args.split,
            "queries": len(judged.queries),
            "chosen": chosen,
            "grid": rows,
        },
    )
    return {k: best[k] for k in ("Success@1", "nDCG@10", "MRR@10")}, report

"""Sentence-level exclusions (issue 19): choose the ``logical.mention_*`` knobs on NegConstraint's TRAIN split,
then report the product's route on TEST once, by number of exclusions.

    python -m evaluation.bench_negation select [--limit N]     # grid on the train split (knobs by hand in settings)
    python -m evaluation.bench_negation report RUN_A RUN_B      # per-exclusion table from two harness reports

``select`` runs the real ``logical_retrieve`` for every grid point; the term vectors, the reranker's scores
(per question text and segment) and the dense searches are memoised across the grid (the mention knobs do
not change them), so a grid point costs the composition and the mention step only. Success@1 first (the
issue's target), then MRR@10, then nDCG@10; ties keep the first in grid order.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from evaluation.logical_bench.common import SHARED, eval_services, prepare_index, success_at_1
from evaluation.report import results_dir

# Grid 1 (logical-negation-selection-grid1.md): τ 0.4/0.6 and weight 0.5/0.9 lost to today on train; a
# partial match (one word of "the development of factories") hit the positives too. Grid 2: stricter τ
# (most of the term's words in one sentence) and lighter demotion.
GRID: dict[str, list[Any]] = {
    "mention_beta": [4.0, 1000.0],
    "mention_tau_entity": [0.7, 0.85, 0.95],
    "mention_tau_concept": [0.7, 0.85, 0.95],
    "mention_weight": [0.1, 0.3, 0.6],
    "mention_drop_shared": [True, False],
    "constraint": [(False, 0.0), (True, 0.5)],  # (mention_constraint, mention_positive_min)
}
# The trained head (issue 19 item 2, logical-negation-trained.md): which scorer, how hard it demotes, and the
# head's logit shift; the lexical knobs stay at their defaults (chosen by GRID above).
HEAD_GRID: dict[str, list[Any]] = {
    "mention_scorer": ["lexical", "trained", "both"],
    "mention_weight": [0.1, 0.3, 0.6, 0.9],
    "mention_head_shift": [-1.0, 0.0, 1.0, 2.0],
}
# Sentence vectors stored at index time (logical-negation-sentences.md): the NOT term's cosine over a
# candidate's stored sentences, centred on the candidates' median and calibrated, alone or with the lexical P;
# and the positive terms' cross-encoder scores fused with their dense order (RRF) as the rerank stage does.
SENTENCE_GRID: dict[str, list[Any]] = {
    "positive_rrf": [False, True],
    "mention_scorer": ["lexical", "sentence", "sentence+lexical"],
    "mention_sentence_orth": [False, True],
    "sentence_tau": [0.03, 0.06],  # τ of both term kinds
    "mention_weight": [0.1, 0.3, 0.9],
}
# The positive part ranked by retrieval.pipeline as any question (logical.positive_source=pipeline), then NOT
# mentions demote or constrain; against the decomposition's term scores (terms).
PIPELINE_GRID: dict[str, list[Any]] = {
    "positive_source": ["terms", "pipeline"],
    "mention_scorer": ["lexical", "sentence+lexical"],
    "mention_weight": [0.0, 0.1, 0.3, 0.6],
    "constraint": [(False, 0.0), (True, 0.0)],
}
GRIDS = {"mention": GRID, "head": HEAD_GRID, "sentence": SENTENCE_GRID, "pipeline": PIPELINE_GRID}


def _changes(point: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in point.items() if k not in ("constraint", "sentence_tau")}
    if "sentence_tau" in point:
        out["mention_sentence_tau_entity"] = out["mention_sentence_tau_concept"] = point["sentence_tau"]
        out["mention_sentence_lam"] = 100.0
    if "constraint" in point:
        out["mention_constraint"], out["mention_positive_min"] = point["constraint"]
    return out


def _command() -> str:
    import os

    env = " ".join(f"{k}={v}" for k, v in sorted(os.environ.items()) if k.startswith("CHATBOT_"))
    return (env + " " if env else "") + "python -m evaluation.bench_negation " + " ".join(sys.argv[1:])


class _Memo:
    """Query vectors, reranker scores and dense searches computed once (passages and the rest pass through)."""

    def __init__(self, embedder: Any, reranker: Any, index: Any) -> None:
        self.embedder, self.reranker, self.index = embedder, reranker, index
        self.vectors: dict[str, np.ndarray] = {}
        self.scores: dict[tuple[str, str], float] = {}
        self.searches: dict[tuple[bytes, int], list] = {}
        self.gets: dict[tuple[str, ...], Any] = {}
        self.sentence_rows: dict[tuple[str, ...], Any] = {}

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        todo = [t for t in dict.fromkeys(texts) if t not in self.vectors]
        if todo:
            self.vectors.update(zip(todo, self.embedder.embed_queries(todo), strict=True))
        return np.vstack([self.vectors[t] for t in texts])

    def score(self, question: str, hits: Sequence[Any]) -> np.ndarray:
        todo = [h for h in hits if (question, h.segment.id) not in self.scores]
        if todo:
            got = self.reranker.score(question, todo)
            self.scores.update({(question, h.segment.id): float(s) for h, s in zip(todo, got, strict=True)})
        return np.array([self.scores[(question, h.segment.id)] for h in hits])

    def search_vectors(self, queries: np.ndarray, k: int) -> list:
        import copy

        key = (np.asarray(queries, dtype=np.float32).tobytes(), k)
        if key not in self.searches:
            self.searches[key] = self.index.search_vectors(queries, k)
        return copy.deepcopy(self.searches[key])


def memoised_services(services: Any, cache: Path | None = None) -> Any:
    """``services`` with its embedder, reranker and index searches memoised (see ``_Memo``); with ``cache``
    the query vectors and reranker scores are read from and written to that pickle (``save_memo``)."""
    memo = _Memo(services.embedder, services.reranker, services.index)
    if cache is not None and cache.is_file():
        import pickle

        saved = pickle.loads(cache.read_bytes())
        memo.vectors.update(saved["vectors"])
        memo.scores.update(saved["scores"])
    services.__dict__["_memo"] = memo
    embedder = type("MemoEmbedder", (), {})()
    embedder.name, embedder.dim = services.embedder.name, services.embedder.dim
    embedder.embed_queries = memo.embed_queries
    embedder.embed_passages = services.embedder.embed_passages
    # the real reranker object keeps its type (the rerank stage fuses a cross-encoder's ranks by RRF), its
    # score method is memoised
    reranker = services.reranker
    memo.reranker = type("Inner", (), {"score": staticmethod(reranker.score)})()
    reranker.score = memo.score
    index = services.index
    inner_search = index.search_vectors
    memo.index = type("Inner", (), {"search_vectors": staticmethod(inner_search)})()
    index.search_vectors = memo.search_vectors
    collection = index.collection()

    class _Collection:
        def __getattr__(self, name: str) -> Any:
            return getattr(collection, name)

        def get(self, ids: list[str], include: list[str]) -> Any:
            key = (*ids, "|", *include)
            if key not in memo.gets:
                memo.gets[key] = collection.get(ids=ids, include=include)
            return memo.gets[key]

    index.collection = lambda: _Collection()
    sentences = getattr(index, "sentences", None)
    if sentences is not None:  # stored sentence vectors: one lookup per candidate set
        inner_lookup = sentences.lookup

        def lookup(ids: Sequence[str]) -> Any:
            key = tuple(ids)
            if key not in memo.sentence_rows:
                memo.sentence_rows[key] = inner_lookup(ids)
            return memo.sentence_rows[key]

        sentences.lookup = lookup
    services.__dict__["embedder"] = embedder
    services.__dict__["reranker"] = reranker
    return services


def save_memo(services: Any, cache: Path | None) -> None:
    """Write the memoised query vectors and reranker scores to ``cache`` (a local pickle, not committed)."""
    if cache is None:
        return
    import pickle

    memo = services.__dict__["_memo"]
    cache.write_bytes(pickle.dumps({"vectors": memo.vectors, "scores": memo.scores}))


def exclusions_of(text: str) -> int:
    """How many NOT terms the detector finds in a question (0: not an exclusion question)."""
    from chatbot.logical.detect import analyse

    found = analyse(text)
    return len(found.negatives) if found else 0


def evaluate_config(services: Any, judged: Any, config: Any) -> dict[str, Any]:
    """Success@1 (all, one and two+ exclusions), MRR@10, nDCG@10 and p50 latency of ``config``."""
    from chatbot.logical.pipeline import logical_retrieve
    from evaluation.harness import compute_metrics

    runs, walls = {}, []
    for qid, text in judged.queries.items():
        start = time.perf_counter()
        runs[qid] = [h.segment.doc_id for h in logical_retrieve(text, services, config).ranked]
        walls.append((time.perf_counter() - start) * 1000)
    m = compute_metrics(judged.qrels, runs)["aggregate"]
    first = {q: [{"query_id": q, "top": [{"doc_id": d} for d in r[:1]]}] for q, r in runs.items()}
    groups: dict[str, list[dict]] = {"1": [], "2+": []}
    for q, rows in first.items():
        groups["1" if exclusions_of(judged.queries[q]) <= 1 else "2+"].extend(rows)
    return {
        "Success@1": round(success_at_1([r for rows in first.values() for r in rows], judged.qrels), 4),
        "S@1 one": round(success_at_1(groups["1"], judged.qrels), 4),
        "S@1 two+": round(success_at_1(groups["2+"], judged.qrels), 4),
        "MRR@10": round(m["MRR@10"], 4),
        "nDCG@10": round(m["nDCG@10"], 4),
        "p50_ms": round(float(np.median(walls)), 1),
    }


def run_select(args: argparse.Namespace) -> Path:
    """The grid on ``args.split`` (train); writes the report and its summary."""
    from chatbot.logical.pipeline import LogicalConfig, config_for
    from evaluation.harness import load_judged

    services = eval_services(args.data)
    index = prepare_index(args.data, services)
    memoised_services(services, args.cache)
    judged = load_judged(args.data, args.limit, args.split)
    base = config_for(services.settings)
    rows = [
        {
            "variant": "today (mention off)",
            **evaluate_config(services, judged, LogicalConfig(**{**base.__dict__, "mention": False})),
        }
    ]
    print(json.dumps(rows[-1]), flush=True)
    grid = GRIDS[args.grid]
    keys = list(grid)
    for combo in itertools.product(*grid.values()):
        changes = dict(zip(keys, combo, strict=True))
        if changes.get("mention_scorer") == "lexical" and changes.get("mention_head_shift", 0.0) != 0.0:
            continue  # the shift only moves the trained head
        if changes.get("mention_scorer") == "lexical" and "sentence_tau" in changes:
            first = {k: v[0] for k, v in grid.items() if k.startswith(("mention_sentence", "sentence_"))}
            if any(changes[k] != v for k, v in first.items()) or changes["mention_weight"] != 0.1:
                continue  # the sentence knobs only move the sentence scorer; lexical keeps its chosen weight
        config = LogicalConfig(**{**base.__dict__, "mention": True, **_changes(changes)})
        rows.append({"variant": "mention", **changes, **evaluate_config(services, judged, config)})
        print(json.dumps(rows[-1]), flush=True)
    grid_rows = rows[1:]
    best = max(grid_rows, key=lambda r: (r["Success@1"], r["MRR@10"], r["nDCG@10"]))
    chosen = _changes({k: best[k] for k in keys})
    out = results_dir() / f"{args.name}.md"
    lines = [
        f"# Choice of the mention knobs (issue 19) on NegConstraint's {args.split} split",
        "",
        f"Command: `{_command()}`",
        "",
        f"{len(judged.queries)} questions of the `{args.split}` split (chatbot/splits.py); embedder "
        f"{services.embedder.name}, reranker {services.settings.rerank.kind}, index {json.dumps(index)}. Grid "
        f"{json.dumps(grid)}, other knobs at their defaults. Criterion: Success@1, then MRR@10, then nDCG@10.",
        "",
        f"**Chosen: {json.dumps(chosen)}**",
        "",
        "| variant | " + " | ".join(keys) + " | Success@1 | S@1 one NOT | S@1 two+ NOTs | MRR@10 | nDCG@10 | p50 ms |",
        "|" + "---|" * (len(keys) + 7),
    ]
    for r in [rows[0]] + sorted(grid_rows, key=lambda r: (-r["Success@1"], -r["MRR@10"], -r["nDCG@10"]))[:40]:
        lines.append(
            f"| {r['variant']} | "
            + " | ".join(str(r.get(k, "")) for k in keys)
            + f" | {r['Success@1']:.3f} | {r['S@1 one']:.3f} | {r['S@1 two+']:.3f} | {r['MRR@10']:.4f} | "
            f"{r['nDCG@10']:.4f} | {r['p50_ms']:.0f} |"
        )
    lines += ["", f"{len(grid_rows)} grid points; the 40 best are shown, all are in `{args.name}.summary.json`.", ""]
    out.write_text("\n".join(lines), encoding="utf-8")
    summary = {
        "command": _command(),
        "split": args.split,
        "queries": len(judged.queries),
        "chosen": chosen,
        "rows": rows,
    }
    (results_dir() / f"{args.name}.summary.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    return out


def run_report(args: argparse.Namespace) -> Path:
    """Success@1 and MRR@10 by number of exclusions for harness runs (REPORT:PIPELINE=LABEL, as compare_runs)."""
    from evaluation.compare_runs import load_run, parse_run
    from evaluation.harness import load_judged

    judged = load_judged(args.data, None, args.split)
    table = []
    for spec in args.runs:
        path, pipeline, label = parse_run(spec)
        per = load_run(path, pipeline)
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        rows = [r for r in rows if r["pipeline"] == pipeline]
        cells = {}
        for group, test in (("all", lambda n: True), ("1", lambda n: n == 1), ("2+", lambda n: n >= 2)):
            sel = [r for r in rows if test(exclusions_of(judged.queries[r["query_id"]]))]
            mrr = [per[r["query_id"]]["MRR@10"] for r in sel]
            cells[group] = (len(sel), success_at_1(sel, judged.qrels), float(np.mean(mrr)) if mrr else 0.0)
        table.append((label, cells))
    lines = ["| run | exclusions | queries | Success@1 | MRR@10 |", "|---|---|---|---|---|"]
    for label, cells in table:
        for group, (n, s1, mrr) in cells.items():
            lines.append(f"| {label} | {group} | {n} | {s1:.3f} | {mrr:.4f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    return Path(args.out) if args.out else results_dir()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evaluation.bench_negation", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("select", help="choose the mention knobs on the train split")
    s.add_argument("--data", type=Path, default=SHARED / "negconstraint")
    s.add_argument("--split", default="train")
    s.add_argument("--limit", type=int, default=None)
    s.add_argument("--name", default="logical-negation-selection")
    s.add_argument("--cache", type=Path, default=None, help="pickle of query vectors and reranker scores (reused)")
    s.add_argument("--grid", choices=sorted(GRIDS), default="mention", help="mention: lexical knobs; head: trained")
    r = sub.add_parser("report", help="Success@1 by number of exclusions for harness runs")
    r.add_argument("runs", nargs="+", help="REPORT:PIPELINE[=LABEL] as for evaluation.compare_runs")
    r.add_argument("--data", type=Path, default=SHARED / "negconstraint")
    r.add_argument("--split", default="test")
    r.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    out = run_select(args) if args.cmd == "select" else run_report(args)
    print(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

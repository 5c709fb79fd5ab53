"""`chatbot eval retrieval`: retrieval metrics of named pipelines on a BEIR-style folder.

Metrics come from ir_measures (trec_eval underneath); documents are scored at document level:
a segment's hit counts for its document and every ranked list is deduplicated by document.

Every report also splits the metrics by question type (``evaluative`` vs ``other``, the seed paper's
split): the type comes from the query's own ``question_type`` or ``type`` field in queries.jsonl when it
holds one of the known labels, else from the deterministic heuristic ``chatbot.stages.hyde.heuristic_type``.
(MedQuAD's ``qtype`` is its own topic category, treatment/symptoms/..., not this type: it is not read.)

``--set GROUP.FIELD=VALUE`` (repeatable) overrides one setting for the run, validated like the settings file,
so an option sweep is one command per variant, e.g. ``--set hyde.samples=2 --name mediqa-hyde-s2``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np

from corpus.segmenter import text_key
from evaluation.evaluator import Benchmark
from evaluation.report import Report, output_target
from evaluation.report import command_line as report_command_line
from evaluation.splits import split_of

METRIC_NAMES = ("nDCG@10", "P@3", "R@50", "MRR@10", "Success@1")
DEFAULT_PIPELINES = ("bm25", "dense", "dense+rerank")
QUESTION_TYPES = ("evaluative", "other")
TYPE_FIELDS = ("question_type", "type")
_TYPE_LABELS = {
    "evaluative": "evaluative",
    "valutativa": "evaluative",
    "valutativo": "evaluative",
    "informational": "other",
    "informativa": "other",
    "informativo": "other",
    "non-evaluative": "other",
    "other": "other",
}


@dataclass
class Judged:
    """A BEIR-style evaluation set: queries, graded qrels (score >= 1 relevant) and the corpus paths."""

    name: str
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]
    query_meta: dict[str, dict[str, Any]]


def load_judged(data: Path, limit: int | None = None, split: str = "all") -> Judged:
    """Queries that have at least one relevant document, in file order, optionally split and cut."""
    for name in ("corpus.jsonl", "queries.jsonl", "qrels.tsv"):
        if not (data / name).exists():
            raise FileNotFoundError(f"{data} is not a BEIR-style folder: {name} is missing")
    qrels: dict[str, dict[str, int]] = {}
    with (data / "qrels.tsv").open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            parts = line.rstrip("\n").split("\t")
            if lineno == 1 and parts[0] == "query-id":
                continue
            if len(parts) < 3:
                raise ValueError(f"{data / 'qrels.tsv'}:{lineno}: expected query-id, corpus-id, score")
            qrels.setdefault(parts[0], {})[parts[1]] = int(float(parts[2]))
    queries: dict[str, str] = {}
    meta: dict[str, dict[str, Any]] = {}
    with (data / "queries.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            rec = json.loads(line)
            qid = str(rec["_id"])
            if not any(s >= 1 for s in qrels.get(qid, {}).values()):
                continue
            if split != "all" and split_of(qid) != split:
                continue
            queries[qid] = rec["text"]
            meta[qid] = {k: v for k, v in rec.items() if k not in ("_id", "text")}
    if limit is not None:
        queries = dict(list(queries.items())[:limit])
    return Judged(data.name, queries, {q: qrels[q] for q in queries}, {q: meta[q] for q in queries})


def query_type(text: str, meta: dict[str, Any]) -> tuple[str, str]:
    """(type, source): ``evaluative`` or ``other``, from a known label in the query's own metadata
    (``metadata:<field>``) or else from the heuristic (``heuristic``)."""
    from chatbot.stages.question_type import heuristic_type

    for key in TYPE_FIELDS:
        label = _TYPE_LABELS.get(str(meta.get(key, "")).strip().lower())
        if label:
            return label, f"metadata:{key}"
    return ("evaluative" if heuristic_type(text) == "evaluative" else "other"), "heuristic"


def apply_overrides(settings, items: Sequence[str]):
    """Apply ``GROUP.FIELD=VALUE`` overrides in place, each validated by its settings group (unknown
    names and bad values are errors). A VALUE starting with ``{`` or ``[`` (or ``null``) is read as JSON."""
    for item in items:
        key, sep, raw = item.partition("=")
        group_name, dot, field = key.strip().partition(".")
        if not sep or not dot or not field:
            raise ValueError(f"--set {item!r}: expected GROUP.FIELD=VALUE, e.g. hyde.samples=2")
        groups = type(settings).model_fields
        if group_name not in groups:
            raise ValueError(f"--set {item!r}: unknown settings group {group_name!r}; one of {', '.join(groups)}")
        group = getattr(settings, group_name)
        fields = type(group).model_fields
        if field not in fields:
            raise ValueError(f"--set {item!r}: {group_name} has no setting {field!r}; one of {', '.join(fields)}")
        try:
            value: Any = json.loads(raw) if raw.strip()[:1] in ("{", "[") or raw.strip() == "null" else raw
        except json.JSONDecodeError as exc:
            raise ValueError(f"--set {item!r}: invalid JSON value: {exc.msg}") from exc
        try:
            new = type(group).model_validate({**group.model_dump(), field: value})
        except Exception as exc:  # pydantic.ValidationError: say which override and why, briefly
            errors = getattr(exc, "errors", None)
            reason = errors()[0]["msg"] if callable(errors) else str(exc)
            raise ValueError(f"--set {item!r}: {reason}") from exc
        setattr(settings, group_name, new)
    return settings


def compute_metrics(qrels: dict[str, dict[str, int]], runs: dict[str, list[str]]) -> dict[str, Any]:
    """Aggregate and per-query nDCG@10, P@3, R@50, MRR@10, Success@1 for ranked document ids per query."""
    import ir_measures
    from ir_measures import RR, P, R, Success, nDCG

    measures = {"nDCG@10": nDCG @ 10, "P@3": P @ 3, "R@50": R @ 50, "MRR@10": RR @ 10, "Success@1": Success @ 1}
    qrel_list = [ir_measures.Qrel(q, d, s) for q, docs in qrels.items() for d, s in docs.items()]
    run_list = [
        ir_measures.ScoredDoc(q, d, float(len(ranked) - i)) for q, ranked in runs.items() for i, d in enumerate(ranked)
    ]
    per_query: dict[str, dict[str, float]] = {q: dict.fromkeys(measures, 0.0) for q in qrels}
    by_measure = {v: k for k, v in measures.items()}
    for m in ir_measures.iter_calc(list(measures.values()), qrel_list, run_list):
        if m.query_id in per_query:
            per_query[m.query_id][by_measure[m.measure]] = float(m.value)
    # A query with an empty run scores 0 (trec_eval would drop it and inflate the mean).
    aggregate = {name: float(np.mean([per_query[q][name] for q in qrels])) if qrels else 0.0 for name in measures}
    return {"aggregate": aggregate, "per_query": per_query}


def shared_text_groups(corpus: Path) -> dict[str, str]:
    """{document id: the first id, in file order, of the documents whose text is the same (``text_key``, as the
    product's links compare passages)}, for the documents that share their text with another; {} when every text
    is distinct.

    Some public sets hold one answer under several ids (MEDIQA lists an answer once per question it was a
    candidate for, judged for that question only): a ranking that returns the copy under another id scores it
    unjudged. ``content_level`` rescores with one id per distinct text."""
    first: dict[str, str] = {}
    groups: dict[str, list[str]] = {}
    with corpus.open(encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            rec = json.loads(line)
            key = text_key(str(rec.get("text", "")))
            if not key:  # a record without text is never indexed, so never a copy of anything
                continue
            doc_id = str(rec["_id"])
            groups.setdefault(first.setdefault(key, doc_id), []).append(doc_id)
    return {d: head for head, ids in groups.items() if len(ids) > 1 for d in ids}


def content_level(
    qrels: dict[str, dict[str, int]], runs: dict[str, list[str]], groups: dict[str, str]
) -> dict[str, Any]:
    """``compute_metrics`` with each document replaced by its text group's id (``shared_text_groups``) and judged
    as the copy judged for that question (the highest grade when several are). A later copy of a text already
    ranked keeps its place but earns nothing, as a link repeating an earlier link's passage tells a patient
    nothing new."""
    canon_qrels: dict[str, dict[str, int]] = {}
    for q, docs in qrels.items():
        row = canon_qrels.setdefault(q, {})
        for d, grade in docs.items():
            c = groups.get(d, d)
            row[c] = max(grade, row.get(c, grade))
    canon_runs: dict[str, list[str]] = {}
    for q, ranked in runs.items():
        seen: set[str] = set()
        out = canon_runs.setdefault(q, [])
        for d in ranked:
            c = groups.get(d, d)
            out.append(f"{d} (repeats {c})" if c in seen else c)  # an id no question has judged
            seen.add(c)
    return compute_metrics(canon_qrels, canon_runs)


def paired_tests(per_query: dict[str, dict[str, dict[str, float]]], metric: str) -> list[dict[str, Any]]:
    """Two-sided paired Wilcoxon signed-rank test and paired t-test between every two pipelines."""
    from scipy import stats

    rows = []
    for a, b in combinations(list(per_query), 2):
        qids = sorted(per_query[a])
        xa = np.array([per_query[a][q][metric] for q in qids])
        xb = np.array([per_query[b][q][metric] for q in qids])
        diff = xb - xa
        if np.allclose(diff, 0):
            p_w = p_t = 1.0
        else:
            p_w = float(stats.wilcoxon(xa, xb, zero_method="zsplit").pvalue)
            p_t = float(stats.ttest_rel(xa, xb).pvalue)
        rows.append(
            {"a": a, "b": b, "metric": metric, "mean_diff": float(diff.mean()), "p_wilcoxon": p_w, "p_ttest": p_t}
        )
    return rows


def percentile(values: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(values, dtype=float), q)) if values else 0.0


def services_over_cards(settings, cards: Path | None = None):
    """Pipeline services whose index holds a cards folder (default: the bundled demo cards), indexed
    incrementally; FileNotFoundError naming a missing folder."""
    from chatbot.ingest import ingest_paths
    from chatbot.pipeline import Services
    from chatbot.resources import demo_cards

    cards = cards or demo_cards()
    if not cards.exists():
        raise FileNotFoundError(f"cards folder {cards} not found")
    services = Services(settings)
    ingest_paths([cards], services, quiet=True)
    return services


def ensure_index(services, data: Path, log=print) -> dict[str, Any]:
    """Sync the index with data/corpus.jsonl. Incremental: on an index that is already complete nothing is
    embedded, and an index left half-built by an interrupted run is completed rather than trusted."""
    from chatbot.ingest import ingest_paths

    # Benchmark records without a link get a placeholder (never served to patients).
    placeholder = f"https://benchmark.invalid/{data.name}/{{id}}"
    summary = ingest_paths(
        [data / "corpus.jsonl"], services, log=log, desc=f"indexing {data.name}", default_url=placeholder
    )
    return {"reused": summary["embedded"] == 0, **summary}


def evaluate(
    data: Path,
    pipelines: Sequence[str] = DEFAULT_PIPELINES,
    limit: int | None = None,
    split: str = "all",
    settings=None,
    services=None,
    log=print,
) -> dict[str, Any]:
    """Run every pipeline on every judged query; returns summary, per-query rows and tests."""
    from tqdm import tqdm

    from chatbot.index import corpus_key
    from chatbot.pipeline import Services, run_pipeline
    from chatbot.settings import load_settings

    settings = settings or load_settings()
    judged = load_judged(data, limit, split)
    if services is None:
        key = corpus_key([data / "corpus.jsonl"], settings.embedding.model, f"{settings.corpus.segment_max_chars}")
        services = Services(settings, collection=f"eval-{key}")
    index_info = ensure_index(services, data, log)
    types = {qid: query_type(text, judged.query_meta[qid]) for qid, text in judged.queries.items()}

    runs: dict[str, dict[str, list[str]]] = {}
    tops: dict[str, dict[str, list[dict[str, Any]]]] = {}
    latencies: dict[str, dict[str, list[float]]] = {}
    totals: dict[str, dict[str, float]] = {}
    fallbacks: dict[str, dict[str, int]] = {}
    for name in pipelines:
        runs[name], tops[name], latencies[name], totals[name], fallbacks[name] = {}, {}, {}, {}, {}
        bar = tqdm(judged.queries.items(), desc=name, unit="q", file=sys.stderr, mininterval=5)
        for qid, text in bar:
            start = time.perf_counter()
            result = run_pipeline(name, text, services)
            total = (time.perf_counter() - start) * 1000
            runs[name][qid] = [h.segment.doc_id for h in result.ranked]
            tops[name][qid] = [
                {"doc_id": h.segment.doc_id, "segment_id": h.segment.id, "score": round(h.score, 4)} for h in result.top
            ]
            totals[name][qid] = total
            for stage, ms in {**result.timings_ms, "total": total}.items():
                latencies[name].setdefault(stage, []).append(ms)
            fallback = (result.info or {}).get("fallback")
            if fallback:  # an LLM pipeline that fell back to naive: visible while it runs, counted in the report
                kind = fallback.get("kind", "error")
                fallbacks[name][kind] = fallbacks[name].get(kind, 0) + 1
                bar.set_postfix(fallbacks=sum(fallbacks[name].values()), refresh=False)

    summary: dict[str, Any] = {"data": str(data), "queries": len(judged.queries), "pipelines": {}}
    per_query: dict[str, dict[str, dict[str, float]]] = {}
    for name in pipelines:
        m = compute_metrics(judged.qrels, runs[name])
        per_query[name] = m["per_query"]
        summary["pipelines"][name] = {
            **{k: round(v, 4) for k, v in m["aggregate"].items()},
            "latency_ms": {
                "p50": round(percentile(latencies[name]["total"], 50), 1),
                "p95": round(percentile(latencies[name]["total"], 95), 1),
            },
        }
    groups = shared_text_groups(data / "corpus.jsonl")
    content: dict[str, dict[str, dict[str, float]]] = {}
    if groups:
        summary["content_level"] = {"documents_sharing_text": len(groups), "pipelines": {}}
        for name in pipelines:
            m = content_level(judged.qrels, runs[name], groups)
            content[name] = m["per_query"]
            summary["content_level"]["pipelines"][name] = {k: round(v, 4) for k, v in m["aggregate"].items()}
    summary["llm_fallbacks"] = {name: sum(fallbacks[name].values()) for name in pipelines}
    summary["by_type"] = by_type(types, per_query, totals)
    stage_latency = {
        name: {
            stage: {"p50": round(percentile(v, 50), 1), "p95": round(percentile(v, 95), 1)} for stage, v in lat.items()
        }
        for name, lat in latencies.items()
    }
    tests = paired_tests(per_query, "nDCG@10") + paired_tests(per_query, "P@3") if len(pipelines) > 1 else []
    rows = [
        {
            "query_id": q,
            "pipeline": name,
            "type": types[q][0],
            **per_query[name][q],
            **{f"content/{k}": v for k, v in content.get(name, {}).get(q, {}).items()},
            "top": tops[name][q],
        }
        for name in pipelines
        for q in judged.queries
    ]
    return {
        "summary": summary,
        "stage_latency": stage_latency,
        "tests": tests,
        "per_query": rows,
        "index": index_info,
        "fallbacks": fallbacks,
        "settings": {
            "embedding": settings.embedding.model,
            "rerank": settings.rerank.model_dump(mode="json"),
            "top_k": settings.retrieval.top_k,
            "split": split,
            "limit": limit,
            "llm": settings.llm.model,
            "hyde": settings.hyde.model_dump(mode="json"),
        },
    }


def by_type(
    types: dict[str, tuple[str, str]],
    per_query: dict[str, dict[str, dict[str, float]]],
    totals: dict[str, dict[str, float]],
) -> dict[str, Any]:
    """Per question type: query count, where the types came from, and each pipeline's mean metrics and
    latency over that type's queries only (no pipelines when a type has no query)."""
    out: dict[str, Any] = {}
    for qtype in QUESTION_TYPES:
        qids = [q for q, (t, _) in types.items() if t == qtype]
        sources: dict[str, int] = {}
        for q in qids:
            sources[types[q][1]] = sources.get(types[q][1], 0) + 1
        pipes: dict[str, Any] = {}
        for name, rows in per_query.items():
            if not qids:
                break
            pipes[name] = {
                **{m: round(float(np.mean([rows[q][m] for q in qids])), 4) for m in METRIC_NAMES},
                "latency_ms": {
                    "p50": round(percentile([totals[name][q] for q in qids], 50), 1),
                    "p95": round(percentile([totals[name][q] for q in qids], 95), 1),
                },
            }
        out[qtype] = {"queries": len(qids), "source": sources, "pipelines": pipes}
    return out


def metrics(summary: dict[str, Any]) -> dict[str, float]:
    """Every pipeline's metrics as ``PIPELINE/METRIC``; the primary ``nDCG@10`` (and the other plain metric
    names) is the last pipeline's: list the candidate last (the defaults end with the served dense+rerank)."""
    pipes = summary["pipelines"]
    last = pipes[list(pipes)[-1]]
    return {
        **{m: last[m] for m in METRIC_NAMES},
        **{f"{p}/{m}": s[m] for p, s in pipes.items() for m in METRIC_NAMES},
    }


def retrieval_evaluator(
    data: Path,
    pipelines: Sequence[str] = DEFAULT_PIPELINES,
    limit: int | None = None,
    split: str = "all",
    settings=None,
    name: str | None = None,
    command: str = "",
    log=print,
    overrides: Sequence[str] = (),
) -> Benchmark[dict[str, Any]]:
    """``evaluate`` as an evaluator: returns the metrics (primary ``nDCG@10``), writes ``write_report``'s files
    (the ``--set`` overrides recorded in the settings)."""

    def run() -> dict[str, Any]:
        result = evaluate(data, pipelines, limit, split, settings=settings, log=log)
        result["settings"]["overrides"] = list(overrides)
        return result

    return Benchmark(
        name or data.name,
        "nDCG@10",
        run,
        lambda r: metrics(r["summary"]),
        lambda r: retrieval_report(r, name or data.name, command),
    )


def write_report(result: dict[str, Any], out_dir: Path, name: str, command: str) -> Path:
    """Markdown report, JSON summary, per-query JSONL and PNG chart under out_dir."""
    return retrieval_report(result, name, command).write(out_dir)


def retrieval_report(result: dict[str, Any], name: str, command: str) -> Report:
    """The report of one ``evaluate`` result: metrics per pipeline and per question type, fallbacks,
    stage latency, paired tests; the per-query rows; the summary with settings and command."""
    summary = result["summary"]
    pipes = list(summary["pipelines"])
    lines = [
        f"Queries: {summary['queries']} (split: {result['settings']['split']}, limit: {result['settings']['limit']}). "
        f"Embedder: {result['settings']['embedding']}; reranker: {result['settings']['rerank']['kind']}; "
        f"index: {json.dumps(result['index'])}",
        "",
        "| pipeline | nDCG@10 | P@3 | R@50 | MRR@10 | Success@1 | latency p50 ms | p95 ms | LLM fallbacks |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    fell_back_counts = summary.get("llm_fallbacks", {})
    for p in pipes:
        s = summary["pipelines"][p]
        lines.append(
            f"| {p} | {s['nDCG@10']:.4f} | {s['P@3']:.4f} | {s['R@50']:.4f} | {s['MRR@10']:.4f} | "
            f"{s['Success@1']:.4f} | {s['latency_ms']['p50']:.1f} | {s['latency_ms']['p95']:.1f} | "
            f"{fell_back_counts.get(p, 0)} |"
        )
    content = summary.get("content_level")
    if content:
        lines += [
            "",
            f"Content level: {content['documents_sharing_text']} documents of the corpus share their text with "
            "another; here a copy is judged as the copy judged for the question, and a copy listed after another "
            "earns nothing (`evaluation.harness.content_level`). Per-query keys `content/<metric>`.",
            "",
            "| pipeline | nDCG@10 | P@3 | R@50 | MRR@10 | Success@1 |",
            "|---|---|---|---|---|---|",
        ]
        for p, s in content["pipelines"].items():
            lines.append(
                f"| {p} | {s['nDCG@10']:.4f} | {s['P@3']:.4f} | {s['R@50']:.4f} | {s['MRR@10']:.4f} | "
                f"{s['Success@1']:.4f} |"
            )
    types = summary.get("by_type", {})
    if types:
        counts = ", ".join(
            f"{t} {v['queries']} ({', '.join(f'{s} {n}' for s, n in v['source'].items()) or 'none'})"
            for t, v in types.items()
        )
        lines += [
            "",
            f"By question type (seed split; type from: {counts}):",
            "",
            "| type | n | pipeline | nDCG@10 | P@3 | R@50 | MRR@10 | latency p50 ms |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for t, v in types.items():
            if not v["pipelines"]:
                lines.append(f"| {t} | 0 | (no query of this type) | | | | | |")
            for p, s in v["pipelines"].items():
                lines.append(
                    f"| {t} | {v['queries']} | {p} | {s['nDCG@10']:.4f} | {s['P@3']:.4f} | {s['R@50']:.4f} | "
                    f"{s['MRR@10']:.4f} | {s['latency_ms']['p50']:.1f} |"
                )
    fell_back = {p: f for p, f in result.get("fallbacks", {}).items() if f}
    if fell_back:
        lines += [
            "",
            "LLM fallbacks to naive (these queries were answered by naive retrieval): "
            + "; ".join(
                f"{p} {sum(f.values())} ({', '.join(f'{k} {n}' for k, n in f.items())})" for p, f in fell_back.items()
            ),
        ]
    lines += ["", "Per-stage latency (ms, p50 / p95):", ""]
    for p, stages in result["stage_latency"].items():
        lines.append(f"- {p}: " + ", ".join(f"{st} {v['p50']:.1f} / {v['p95']:.1f}" for st, v in stages.items()))
    if result["tests"]:
        lines += [
            "",
            "Paired tests (two-sided; b − a):",
            "",
            "| a | b | metric | mean diff | p (Wilcoxon) | p (t-test) |",
            "|---|---|---|---|---|---|",
        ]
        for t in result["tests"]:
            lines.append(
                f"| {t['a']} | {t['b']} | {t['metric']} | {t['mean_diff']:+.4f} | "
                f"{t['p_wilcoxon']:.4g} | {t['p_ttest']:.4g} |"
            )
    lines += ["", f"Per-query results: `{name}.per_query.jsonl`; chart: `{name}.png`.", ""]
    return Report(
        name=name,
        title=f"Retrieval: {name}",
        command=command,
        body=lines,
        summary={
            **result["summary"],
            "stage_latency": result["stage_latency"],
            "tests": result["tests"],
            "index": result["index"],
            "fallbacks": result.get("fallbacks", {}),
            "settings": result["settings"],
            "command": command,
        },
        rows=result["per_query"],
        figures={".png": lambda path: write_chart(result["summary"], path, name)},
    )


def write_chart(summary: dict[str, Any], path: Path, name: str) -> None:
    """A bar chart of every pipeline's metrics (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pipes = list(summary["pipelines"])
    fig, ax = plt.subplots(figsize=(7, 3.5))
    width = 0.8 / max(len(pipes), 1)
    xs = np.arange(len(METRIC_NAMES))
    for i, p in enumerate(pipes):
        ax.bar(xs + i * width, [summary["pipelines"][p][m] for m in METRIC_NAMES], width, label=p)
    ax.set_xticks(xs + width * (len(pipes) - 1) / 2, METRIC_NAMES)
    ax.set_ylim(0, 1)
    ax.set_title(f"{name} ({summary['queries']} queries)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def command_line() -> str:
    """The command as typed, with the CHATBOT_* settings in force (they change the results)."""
    return report_command_line("chatbot")


def main_retrieval(args: argparse.Namespace) -> int:
    from chatbot.settings import load_settings

    data: Path = args.data
    log = (lambda *a: print(*a, file=sys.stderr)) if args.json else print
    overrides = list(getattr(args, "set", None) or [])
    out_dir, name = output_target(args.out, args.name or data.name)
    try:
        settings = apply_overrides(load_settings(), overrides)
        pipelines = args.pipelines or DEFAULT_PIPELINES
        split = getattr(args, "split", "all")
        bench = retrieval_evaluator(data, pipelines, args.limit, split, settings, name, command_line(), log, overrides)
        bench(out_dir)
    except (FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    result = bench.result
    assert result is not None and bench.path is not None
    if args.json:
        print(json.dumps(result["summary"]))
    else:
        print(bench.path.read_text(encoding="utf-8"))
    fell_back = sum(result["summary"]["llm_fallbacks"].values())
    if fell_back:
        print(
            f"warning: {fell_back} queries fell back to naive retrieval because the LLM failed "
            f"({json.dumps(result['fallbacks'])}); see the report's fallback line",
            file=sys.stderr,
        )
        if getattr(args, "strict", False):
            return 4
    return 0

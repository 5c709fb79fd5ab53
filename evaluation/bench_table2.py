"""The seed paper's Table 2: average cosine similarity between the HyDoc and the relevant certified segment(s),
per prompt variant, on a BEIR-style folder, with the configured embedder and LLM endpoint.

    .venv/bin/python -m evaluation.bench_table2 --data ../shared/data/maternal --limit 5

Variants (``--variant``, repeatable; default all four):

- ``question``: the bare question (its query embedding, no LLM): the baseline;
- ``hyde``: "Question": zero-shot HyDoc from the question alone (prompts/hyde_zero_shot.txt);
- ``naive-rag``: "Question + naive-RAG": HyDoc from the question and the naive pre-retrieved extracts
  (prompts/hyde_naive_rag.txt);
- ``cot``: "Question + pragmatic context + naive-RAG": the cot pipeline's HyDoc (pragmatic analysis and
  extracts; one or two LLM calls per ``hyde.cot_calls``).

Per query and variant: the cosine between the HyDoc's passage embedding (several samples averaged, as in the
pipelines) and each segment of the relevant documents (qrels score >= 1), summarised as the best relevant
segment (``cos_best``, the one retrieval needs to find) and the mean over all relevant segments
(``cos_all``); ``cos_search`` is the best relevant segment's cosine with the vector the pipeline searches
with (HyDoc averaged with the question when ``hyde.average_question``). Cheap extras: dense-only nDCG@10 and
P@3 of that search vector (no reranker). Means ± sample standard deviation (ddof 1), overall and per
question type (evaluative/other as in the harness), paired Wilcoxon tests on ``cos_best``.

HyDocs go through the HyDoc cache shared with the ``hyde``/``cot`` pipelines (``--no-cache`` to measure the
LLM afresh). A failed generation (endpoint down, slow, garbage) leaves that variant out for that query and is
counted. Writes ``evaluation/results/table2-<name>.md`` and ``.json`` (ids and numbers only: no question,
passage or HyDoc text).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from evaluation.evaluator import Benchmark
from evaluation.harness import (
    QUESTION_TYPES,
    apply_overrides,
    compute_metrics,
    ensure_index,
    load_judged,
    paired_tests,
    percentile,
    query_type,
)
from evaluation.report import Report, add_output_args, command_line, output_target

PROG = "python -m evaluation.bench_table2"
VARIANTS = ("question", "hyde", "naive-rag", "cot")
LABELS = {
    "question": "Question itself (no HyDoc, baseline)",
    "hyde": "Question (zero-shot HyDoc)",
    "naive-rag": "Question + naive-RAG",
    "cot": "Question + pragmatic context + naive-RAG (cot)",
}


def relevant_cosines(vector: np.ndarray, segments: np.ndarray) -> tuple[float, float]:
    """(best, mean) cosine between a unit vector and the unit rows of ``segments`` (one per relevant segment)."""
    if len(segments) == 0:
        raise ValueError("no relevant segment in the index for this query")
    cos = np.asarray(segments, dtype=np.float32) @ np.asarray(vector, dtype=np.float32)
    return float(cos.max()), float(cos.mean())


def mean_sd(values: list[float]) -> tuple[float | None, float | None]:
    """Mean and sample standard deviation (ddof 1; 0.0 for a single value; None for none)."""
    if not values:
        return None, None
    arr = np.asarray(values, dtype=float)
    return float(arr.mean()), float(arr.std(ddof=1)) if len(arr) > 1 else 0.0


def segment_vectors(services, doc_ids: list[str]) -> np.ndarray:
    """Stored (indexed) embeddings of every segment of the given documents."""
    got = services.index.collection().get(where={"doc_id": {"$in": list(doc_ids)}}, include=["embeddings"])
    vectors = [np.asarray(e, dtype=np.float32) for e in got["embeddings"]]
    if not vectors:
        return np.zeros((0, services.embedder.dim), dtype=np.float32)
    matrix = np.vstack(vectors)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True).clip(min=1e-12)


def generate(kind: str, question: str, context: str, pre_ids: list[str], services) -> tuple[Any, str, float]:
    """(Generation, cache status, LLM ms) for one LLM variant, through the HyDoc cache the pipelines use."""
    from chatbot.stages import hydoc, hydoc_cache

    cfg = services.settings.hyde
    cache = hydoc_cache.cache_for(services)
    key = hydoc_cache.cache_key_for(kind, question, services)
    cached = cache.get(key) if cache else None
    if cached:
        return hydoc.Generation(cached["hydocs"], cached.get("qtype"), cached.get("analysis", {})), "hit", 0.0
    llm = services.llm
    start = time.perf_counter()
    if kind == "hyde":
        gen = hydoc.generate_zero_shot(question, llm, cfg)
    elif kind == "naive-rag":
        gen = hydoc.generate_naive_rag(question, context, llm, cfg)
    else:
        gen = hydoc.generate_cot(question, context, llm, cfg)
    ms = (time.perf_counter() - start) * 1000
    if cache:
        value: dict[str, Any] = {"hydocs": gen.hydocs}
        if kind == "cot":  # the shape cot_pipeline stores, so it can reuse this entry
            value.update(qtype=gen.qtype, analysis=gen.analysis, pre_retrieved=pre_ids)
        cache.put(key, value)
    return gen, "miss" if cache else "off", ms


def measure(
    services, data: Path, variants: list[str], limit: int | None, split: str, only_type: str, log=print
) -> dict[str, Any]:
    """Per-query cosines and dense rankings for every variant; the summary by variant and by type."""
    from tqdm import tqdm

    from chatbot.stages import hyde, hydoc, pre_retrieval
    from chatbot.stages.rerank import best_per_document

    cfg = services.settings.hyde
    k = services.settings.retrieval.top_k
    judged = load_judged(data, None, split)
    types = {q: query_type(t, judged.query_meta[q]) for q, t in judged.queries.items()}
    qids = [q for q in judged.queries if only_type == "all" or types[q][0] == only_type][:limit]
    index_info = ensure_index(services, data, log)

    rows: list[dict[str, Any]] = []
    runs: dict[str, dict[str, list[str]]] = {v: {} for v in variants}
    failures: dict[str, dict[str, int]] = {v: {} for v in variants}
    bar = tqdm(qids, desc="table2", unit="q", file=sys.stderr, mininterval=5)
    for qid in bar:
        question = judged.queries[qid]
        relevant_docs = [d for d, s in judged.qrels[qid].items() if s >= 1]
        segs = segment_vectors(services, relevant_docs)
        qvec = np.asarray(services.embedder.embed_queries([question]), dtype=np.float32)[0]
        pre_hits, context = pre_retrieval.pre_context(services.dense.search_vector(qvec, k), cfg)
        pre_ids = [h.segment.id for h in pre_hits]
        for variant in variants:
            row: dict[str, Any] = {"query_id": qid, "type": types[qid][0], "variant": variant}
            if variant == "question":
                hydoc_vec = search_vec = qvec / max(float(np.linalg.norm(qvec)), 1e-12)
                row.update(cache=None, llm_ms=0.0)
            else:
                try:
                    gen, status, ms = generate(variant, question, context, pre_ids, services)
                except Exception as exc:  # LLMUnavailable, GarbageOutput...: this variant has no HyDoc here
                    kind = getattr(exc, "kind", "garbage" if isinstance(exc, hydoc.GarbageOutput) else "error")
                    failures[variant][kind] = failures[variant].get(kind, 0) + 1
                    bar.set_postfix(failures=sum(sum(f.values()) for f in failures.values()), refresh=False)
                    rows.append({**row, "failed": kind})
                    continue
                hydoc_vec = hyde.encode(question, gen.hydocs, services.embedder, False)
                search_vec = hyde.encode(question, gen.hydocs, services.embedder, cfg.average_question, qvec)
                row.update(cache=status, llm_ms=round(ms, 1), samples=len(gen.hydocs))
                if variant == "cot":
                    row["llm_type"] = gen.qtype
            best, mean = relevant_cosines(hydoc_vec, segs)
            row.update(cos_best=best, cos_all=mean, cos_search=relevant_cosines(search_vec, segs)[0])
            ranked = best_per_document(services.dense.search_vector(search_vec, k))
            runs[variant][qid] = [h.segment.doc_id for h in ranked]
            rows.append(row)

    return {
        "summary": summarise(rows, runs, failures, judged.qrels, variants),
        "per_query": rows,
        "index": index_info,
        "queries": len(qids),
    }


def summarise(
    rows: list[dict[str, Any]],
    runs: dict[str, dict[str, list[str]]],
    failures: dict[str, dict[str, int]],
    qrels: dict[str, dict[str, int]],
    variants: list[str],
) -> dict[str, Any]:
    """Mean ± sd of the cosines, dense metrics and failures per variant, overall and per question type;
    paired tests on cos_best over the queries every variant answered."""
    ok = [r for r in rows if "failed" not in r]

    def block(subset: list[dict[str, Any]], qids: set[str]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for v in variants:
            mine = [r for r in subset if r["variant"] == v]
            entry: dict[str, Any] = {"n": len(mine)}
            for key in ("cos_best", "cos_all", "cos_search"):
                mean, sd = mean_sd([r[key] for r in mine])
                entry[key] = {"mean": _r(mean), "sd": _r(sd)}
            answered = {r["query_id"] for r in mine}
            judged = {q: qrels[q] for q in qids if q in answered}
            metrics = compute_metrics(judged, {q: runs[v][q] for q in judged})["aggregate"] if judged else {}
            entry["nDCG@10"] = _r(metrics.get("nDCG@10"))
            entry["P@3"] = _r(metrics.get("P@3"))
            ms = [r["llm_ms"] for r in mine if r.get("cache") in ("miss", "off")]
            entry["llm_ms_p50"] = round(percentile(ms, 50), 1) if ms else None
            entry["cache_hits"] = sum(1 for r in mine if r.get("cache") == "hit")
            out[v] = entry
        return out

    all_qids = {r["query_id"] for r in rows}
    summary: dict[str, Any] = {"variants": block(ok, all_qids), "failures": failures, "by_type": {}}
    for t in QUESTION_TYPES:
        t_qids = {r["query_id"] for r in rows if r["type"] == t}
        summary["by_type"][t] = {"queries": len(t_qids), "variants": block([r for r in ok if r["type"] == t], t_qids)}
    complete = [
        q for q in sorted(all_qids) if all(any(r["query_id"] == q and r["variant"] == v for r in ok) for v in variants)
    ]
    per_query = {v: {q: {"cos_best": 0.0} for q in complete} for v in variants}
    for r in ok:
        if r["query_id"] in complete:
            per_query[r["variant"]][r["query_id"]]["cos_best"] = r["cos_best"]
    summary["paired_queries"] = len(complete)
    summary["tests"] = paired_tests(per_query, "cos_best") if len(complete) > 1 and len(variants) > 1 else []
    return summary


def _r(x: float | None) -> float | None:
    return None if x is None else round(float(x), 4)


def _ms(entry: dict[str, Any], key: str) -> str:
    v = entry[key]
    return "–" if v["mean"] is None else f"{v['mean']:.3f} ± {v['sd']:.3f}"


def report(result: dict[str, Any], command: str, data: Path, settings, name: str) -> str:
    """The Markdown report (``render(...).markdown()``)."""
    return render(result, command, data, settings, name).markdown()


def metrics(result: dict[str, Any]) -> dict[str, float | None]:
    """Every variant's mean cos_best and nDCG@10; primary ``cos_best``: the last variant measured (the
    order of VARIANTS ends with the richest prompt, cot)."""
    variants = result["summary"]["variants"]
    last = variants[list(variants)[-1]]
    return {
        "cos_best": last["cos_best"]["mean"],
        **{f"{v}/cos_best": e["cos_best"]["mean"] for v, e in variants.items()},
        **{f"{v}/nDCG@10": e["nDCG@10"] for v, e in variants.items()},
    }


def render(result: dict[str, Any], command: str, data: Path, settings, name: str) -> Report:
    """Seed Table 2 per prompt variant and per question type, failures, paired tests; the JSON holds the
    summary and the per-query rows (cosines rounded)."""
    s = result["summary"]
    h = settings.hyde
    lines = [
        f"Data: `{data}`, {result['queries']} queries (types: "
        + ", ".join(f"{t} {v['queries']}" for t, v in s["by_type"].items())
        + f"). Embedder: {settings.embedding.model}; LLM: {settings.llm.model} at {settings.llm.base_url}; "
        f"hyde: max_tokens {h.max_tokens}, samples {h.samples}, average_question {h.average_question}, "
        f"cot_calls {h.cot_calls}, pre_k {h.pre_k}, pre_chars {h.pre_chars}, cache {h.cache}. "
        f"Index: {result['index'].get('collection')} ({result['index'].get('segments')} segments).",
        "",
        "cos_best: cosine of the HyDoc (passage embedding) with the closest segment of a relevant document; "
        "cos_all: mean over all relevant segments; cos_search: cos_best of the vector the pipeline searches "
        "with (HyDoc + question averaged when average_question). Mean ± sample sd over the queries the variant "
        "answered (n). nDCG@10 / P@3: dense retrieval with the search vector, no reranker.",
        "",
        "| prompt variant | n | cos_best | cos_all | cos_search | nDCG@10 | P@3 | LLM ms p50 | cache hits |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for v, e in s["variants"].items():
        lines.append(
            f"| {LABELS[v]} | {e['n']} | {_ms(e, 'cos_best')} | {_ms(e, 'cos_all')} | {_ms(e, 'cos_search')} | "
            f"{_fmt(e['nDCG@10'])} | {_fmt(e['P@3'])} | {_fmt(e['llm_ms_p50'], '.0f')} | {e['cache_hits']} |"
        )
    lines += ["", "By question type (the seed's Table 2 is on its evaluative subset):", ""]
    lines += ["| type | prompt variant | n | cos_best | cos_search | nDCG@10 |", "|---|---|---|---|---|---|"]
    for t, block in s["by_type"].items():
        for v, e in block["variants"].items():
            lines.append(
                f"| {t} | {LABELS[v]} | {e['n']} | {_ms(e, 'cos_best')} | {_ms(e, 'cos_search')} | "
                f"{_fmt(e['nDCG@10'])} |"
            )
    failed = {v: f for v, f in s["failures"].items() if f}
    lines += [
        "",
        "Failed generations (variant left out for that query): "
        + ("; ".join(f"{v} {', '.join(f'{k} {n}' for k, n in f.items())}" for v, f in failed.items()) or "none"),
    ]
    if s["tests"]:
        lines += [
            "",
            f"Paired tests on cos_best over the {s['paired_queries']} queries every variant answered (b − a):",
            "",
            "| a | b | mean diff | p (Wilcoxon) | p (t-test) |",
            "|---|---|---|---|---|",
        ]
        for t in s["tests"]:
            lines.append(
                f"| {t['a']} | {t['b']} | {t['mean_diff']:+.4f} | {t['p_wilcoxon']:.4g} | {t['p_ttest']:.4g} |"
            )
    lines += [
        "",
        "Seed (its evaluative subset, Bi-encoder column): Question 0.717, Question + naive-RAG 0.807, "
        "Question + context + naive-RAG 0.801 (GPT-large: 0.717 / 0.806 / 0.820).",
        "",
    ]
    payload = {"command": command, "data": str(data), "queries": result["queries"], **result["summary"]}
    payload["per_query"] = [
        {k: round(v, 4) if k.startswith("cos_") else v for k, v in row.items()} for row in result["per_query"]
    ]
    return Report(
        name=f"table2-{name}",
        title=f"Seed Table 2: HyDoc ↔ relevant certified segment cosine ({name})",
        command=command,
        body=lines,
        summary=payload,
        json_suffix=".json",
    )


def _fmt(x: float | None, spec: str = ".4f") -> str:
    return "–" if x is None else format(x, spec)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True, help="BEIR-style folder")
    parser.add_argument("--limit", type=int, default=None, help="first N judged queries (after --type)")
    parser.add_argument("--split", choices=["all", "train", "test"], default="all")
    parser.add_argument(
        "--type", dest="only_type", choices=["all", *QUESTION_TYPES], default="all", help="only this question type"
    )
    parser.add_argument("--variant", action="append", dest="variants", choices=VARIANTS, help="default: all four")
    parser.add_argument("--set", action="append", default=[], metavar="GROUP.FIELD=VALUE", help="override a setting")
    parser.add_argument("--no-cache", action="store_true", help="do not use the HyDoc cache (fresh LLM calls)")
    add_output_args(parser, "", name_help="report name: table2-NAME.md/.json (default: data folder name)")
    args = parser.parse_args(argv)

    from chatbot.index import corpus_key
    from chatbot.pipeline import Services
    from chatbot.settings import load_settings

    try:
        settings = apply_overrides(load_settings(), args.set)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.no_cache:
        settings.hyde.cache = False
    key = corpus_key([args.data / "corpus.jsonl"], settings.embedding.model, f"{settings.corpus.segment_max_chars}")
    services = Services(settings, collection=f"eval-{key}")
    variants = [v for v in VARIANTS if v in (args.variants or VARIANTS)]
    log = lambda *a: print(*a, file=sys.stderr)  # noqa: E731
    out_dir, name = output_target(args.out, args.name or args.data.name)
    command = command_line(PROG, argv)
    bench = Benchmark(
        f"table2-{name}",
        "cos_best",
        lambda: measure(services, args.data, variants, args.limit, args.split, args.only_type, log=log),
        metrics,
        lambda r: render(r, command, args.data, settings, name),
    )
    try:
        bench.run_and_print(out_dir)
    except (FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    finally:
        if "llm" in services.__dict__:
            services.llm.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Speed and quality of the cross-encoder reranker per configuration: runtime × max_length × candidates.

    HF_HUB_OFFLINE=1 python -m evaluation.bench_reranker [--limit N] [--threads 1] [--validation] [--e5-baseline]

Test queries (``--split test`` of ``--sets``, default MEDIQA and MEDIQA-it; the reranker never saw them):
the bi-encoder's top-50 segments from the harness's eval index (``chatbot eval retrieval`` builds it; the
embedder is ``--embedder``), then every configuration reranks the first ``candidates`` of them, one query at
a time, configurations round-robin within each query (so load changes on a shared machine hit all alike).
Latency = ``chatbot.stages.rerank.rerank`` time per question (tokenising and scoring included), as wall time
and as the process's CPU time: with ``--threads 1`` the CPU time is what the call costs on an idle core, a
load-proof number on a shared machine (wall time there includes waiting for the CPU); quality =
document-level P@3 / nDCG@10 / MRR@10 (harness metrics) and the share of questions whose top-3 documents
equal the reference configuration's (the first one). ``--validation``: also the held-out validation queries
of the training run (chatbot/training/reranker.py, 15% of the train split, never trained on), per group.
Writes ``evaluation/results/reranker-bench.md`` (+ .json); ids and numbers only. The
analysis of these runs is evaluation/results/reranker-speed.md.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from chatbot.resources import shared_data_dir  # noqa: E402
from evaluation.evaluator import Benchmark  # noqa: E402
from evaluation.harness import compute_metrics, load_judged, percentile  # noqa: E402
from evaluation.report import Report, add_output_args, command_line, output_target  # noqa: E402

PROG = "python -m evaluation.bench_reranker"

DATA = shared_data_dir()
DEFAULT_CONFIGS = (
    "torch:256:50",
    "torch:128:50",
    "onnx:256:50",
    "onnx:128:50",
    "onnx:256:30",
    "onnx:128:30",
    "onnx:256:20",
    "onnx:128:20",
)


RUNTIMES = ("torch", "onnx", "onnx-fp32")  # onnx: the int8 export as shipped; onnx-fp32: its dequantized fp32 copy


def parse_config(text: str) -> tuple[str, int, int, str | None]:
    """'onnx:128:30' → ('onnx', 128, 30, None): runtime, max_length, candidates reranked; a fourth part names
    the model (a ``--model-dir NAME=DIR``), else ``--model``: 'onnx-fp32:256:50:L2' → (..., 'L2')."""
    parts = text.split(":")
    if (
        len(parts) not in (3, 4)
        or parts[0] not in RUNTIMES
        or not (parts[1].isdigit() and parts[2].isdigit())
        or (len(parts) == 4 and not parts[3])
    ):
        raise ValueError(
            f"bad configuration {text!r}: expected RUNTIME:MAX_LENGTH:CANDIDATES[:MODEL] with RUNTIME one of "
            f"{', '.join(RUNTIMES)}, e.g. onnx:128:30"
        )
    return parts[0], int(parts[1]), int(parts[2]), parts[3] if len(parts) == 4 else None


def candidates_for(data: Path, split: str, limit: int | None, embedder: str, top_k: int, log) -> dict[str, Any]:
    """Judged test queries and the bi-encoder's top_k hits of each, from the harness's eval index."""
    from chatbot.index import corpus_key
    from chatbot.pipeline import Services
    from chatbot.settings import load_settings
    from evaluation.harness import ensure_index

    settings = load_settings(embedding={"model": embedder})
    key = corpus_key([data / "corpus.jsonl"], settings.embedding.model, f"{settings.corpus.segment_max_chars}")
    services = Services(settings, collection=f"eval-{key}")
    ensure_index(services, data, log)
    judged = load_judged(data, limit, split)
    hits = {qid: services.dense(text, top_k) for qid, text in judged.queries.items()}
    return {"judged": judged, "hits": hits}


def load_rerankers(
    configs: list[tuple[str, int, int, str | None]], model: Path, threads: int, models: dict[str, Path] | None = None
) -> dict[tuple[str, int, str | None], Any]:
    """One reranker per (runtime, max_length, model name) of ``configs``; a name is looked up in ``models``."""
    from chatbot.stages.rerank import CrossEncoderReranker

    out = {}
    for runtime, max_length, _, name in configs:
        if (runtime, max_length, name) not in out:
            if name is not None and name not in (models or {}):
                raise ValueError(f"configuration names model {name!r}, which no --model-dir NAME=DIR gives")
            rr = CrossEncoderReranker(
                model if name is None else models[name],
                threads=threads,
                runtime="torch" if runtime == "torch" else "onnx",
                max_length=max_length,
                int8_matmul="fp32" if runtime == "onnx-fp32" else "int8",
            )
            if rr.note:
                raise RuntimeError(rr.note)
            out[(runtime, max_length, name)] = rr
    return out


def run_test_sets(
    sets: dict[str, dict[str, Any]], configs, rerankers, rounds: int, log, rrf_k: int | None = None
) -> dict[str, Any]:
    from chatbot.stages.rerank import best_per_document, rerank

    names = [":".join(str(x) for x in c if x is not None) for c in configs]
    ranked: dict[str, dict[str, dict[str, list[str]]]] = {s: {n: {} for n in ["dense", *names]} for s in sets}
    latency: dict[str, list[float]] = {n: [] for n in names}
    cpu: dict[str, list[float]] = {n: [] for n in names}
    for rnd in range(rounds):
        for set_name, data in sets.items():
            for i, (qid, hits) in enumerate(data["hits"].items()):
                question = data["judged"].queries[qid]
                ranked[set_name]["dense"][qid] = [h.segment.doc_id for h in best_per_document(hits)]
                for name, (runtime, max_length, k, model) in zip(names, configs, strict=True):
                    start, start_cpu = time.perf_counter(), time.process_time()
                    reranker = rerankers[(runtime, max_length, model)]
                    out = rerank(question, hits, reranker, None, candidates=k, rrf_k=rrf_k)
                    latency[name].append(time.perf_counter() - start)
                    cpu[name].append(time.process_time() - start_cpu)
                    if rnd == 0:
                        ranked[set_name][name][qid] = [h.segment.doc_id for h in out]
                if (i + 1) % 10 == 0:
                    log(f"round {rnd + 1}: {set_name} {i + 1}/{len(data['hits'])} ({os.getloadavg()[0]:.1f} load)")
    from evaluation.harness import paired_tests

    quality: dict[str, dict[str, dict[str, float]]] = {}
    tests: dict[str, list[dict[str, Any]]] = {}
    per_query: dict[str, dict[str, dict[str, float]]] = {}
    for set_name, data in sets.items():
        quality[set_name] = {}
        reference = ranked[set_name][names[0]]
        per_config: dict[str, dict[str, dict[str, float]]] = {}
        for name, runs in ranked[set_name].items():
            m = compute_metrics(data["judged"].qrels, runs)
            per_config[name] = m["per_query"]
            same = np.mean([runs[q][:3] == reference[q][:3] for q in runs])
            quality[set_name][name] = {
                **{k: round(v, 4) for k, v in m["aggregate"].items()},
                "top3_same_as_reference": round(float(same), 3),
            }
        # every configuration against the reference (the first), paired over the same questions
        tests[set_name] = [
            t
            for metric in ("P@3", "nDCG@10")
            for t in paired_tests(per_config, metric)
            if t["a"] == names[0] or (t["a"] == "dense" and t["b"] == names[0])
        ]
        per_query[set_name] = {
            name: {q: round(v["P@3"], 4) for q, v in rows.items()} for name, rows in per_config.items()
        }
    speed = {
        name: {
            "p50_ms": round(percentile(v, 50) * 1000, 1),
            "p95_ms": round(percentile(v, 95) * 1000, 1),
            "cpu_p50_ms": round(percentile(cpu[name], 50) * 1000, 1),
            "cpu_p95_ms": round(percentile(cpu[name], 95) * 1000, 1),
            "samples": len(v),
        }
        for name, v in latency.items()
    }
    return {
        "quality": quality,
        "speed": speed,
        "paired_tests": tests,
        "per_query_p3": per_query,  # query ids and numbers only
        "queries": {s: len(d["hits"]) for s, d in sets.items()},
    }


def run_validation(rerankers, data_root: Path, e5: bool, threads: int, log) -> dict[str, Any]:
    """Validation-set metrics (per group) of each (runtime, max_length) and of the bi-encoder order."""
    from chatbot.training.reranker_examples import load_validation, summarise

    items = load_validation(data_root, threads=threads)
    log(f"validation: {len(items)} queries, {sum(len(it.passages) for it in items)} pairs")
    out: dict[str, Any] = {"bi-encoder minilm": summarise(items, [it.dense for it in items])}
    if e5:
        from chatbot.embedders import load_embedder

        embedder = load_embedder("e5", threads)
        subset = [it for it in items if it.group.startswith("mediqa")]  # e5 is slow; the language question
        scores = []
        for it in subset:
            q = embedder.embed_queries([it.question])[0]
            scores.append(embedder.embed_passages(it.passages) @ q)
        out["bi-encoder e5"] = summarise(subset, scores)
    for (runtime, max_length, model), rr in rerankers.items():
        scores = [rr.predict([(it.question, p) for p in it.passages]) for it in items]
        out[f"{runtime}:{max_length}" + (f":{model}" if model else "")] = summarise(items, scores)
    return out


def metrics(res: dict[str, Any]) -> dict[str, float]:
    """Primary: nDCG@10 of the first configuration measured on the first set (the reference); every
    configuration's nDCG@10 per set and wall p50 ms beside it."""
    quality, speed = res["test"]["quality"], res["test"]["speed"]
    first_set = next(iter(quality))
    reference = next(c for c in quality[first_set] if c in speed)
    return {
        "nDCG@10": quality[first_set][reference]["nDCG@10"],
        **{f"{s}/{c}/nDCG@10": q["nDCG@10"] for s, per in quality.items() for c, q in per.items()},
        **{f"{c}/p50_ms": sp["p50_ms"] for c, sp in speed.items()},
    }


def render(res: dict[str, Any], name: str = "reranker-bench") -> Report:
    """Per configuration: latency and quality per set, paired tests, the training run's validation groups."""
    lines = [
        f"Model: `{res['model']}`. Threads: {res['threads']} (torch and onnxruntime intra-op). Machine: "
        f"{res['cpus']} CPUs shared with other jobs; load average {res['load_before']} before, "
        f"{res['load_after']} after. Candidates: {res['embedder']} bi-encoder top-50 from the eval index, "
        f"{res['split']} split.",
        "",
    ]
    if res.get("models"):
        lines += ["Other models: " + ", ".join(f"{k} = `{v}`" for k, v in res["models"].items()) + ".", ""]
    if res.get("rrf_k") is not None:
        lines += [f"Order: reciprocal rank fusion with the first stage, k = {res['rrf_k']} (as the product ranks).", ""]
    test = res["test"]
    sets = list(test["quality"])
    head = "| configuration (runtime:max_length:candidates) | wall p50 ms | wall p95 ms | CPU p50 ms | CPU p95 ms |"
    sep = "|---|---|---|---|---|"
    for s in sets:
        head += f" {s} P@3 | {s} nDCG@10 | {s} MRR@10 | {s} top-3 = ref |"
        sep += "---|---|---|---|"
    lines += [
        f"Test queries: {', '.join(f'{s} {n}' for s, n in test['queries'].items())}; latency samples per "
        f"configuration: {next(iter(test['speed'].values()))['samples']}.",
        "",
        head,
        sep,
    ]
    for config in test["quality"][sets[0]]:
        sp = test["speed"].get(config, dict.fromkeys(("p50_ms", "p95_ms", "cpu_p50_ms", "cpu_p95_ms"), "-"))
        row = f"| {config} | {sp['p50_ms']} | {sp['p95_ms']} | {sp['cpu_p50_ms']} | {sp['cpu_p95_ms']} |"
        for s in sets:
            q = test["quality"][s][config]
            row += f" {q['P@3']:.3f} | {q['nDCG@10']:.3f} | {q['MRR@10']:.3f} | {q['top3_same_as_reference']:.2f} |"
        lines.append(row)
    rows = [t for s in sets for t in test.get("paired_tests", {}).get(s, [])]
    if rows:
        lines += [
            "",
            "Paired tests over the same questions (two-sided; b − a):",
            "",
            "| set | a | b | metric | mean diff | p (Wilcoxon) | p (t-test) |",
            "|---|---|---|---|---|---|---|",
        ]
        for s in sets:
            for t in test["paired_tests"][s]:
                lines.append(
                    f"| {s} | {t['a']} | {t['b']} | {t['metric']} | {t['mean_diff']:+.4f} | {t['p_wilcoxon']:.3g} | "
                    f"{t['p_ttest']:.3g} |"
                )
    val = res.get("validation")
    if val:
        groups = sorted({k.rsplit("_", 1)[0] for k in next(iter(val.values())) if k.endswith("mrr@10")})
        lines += ["", "Held-out validation queries of the training run, MRR@10 per group:", ""]
        lines += ["| ranking | " + " | ".join(groups) + " |", "|---|" + "---|" * len(groups)]
        for ranking, m in val.items():
            cells = [f"{m[f'{g}_mrr@10']:.3f}" if f"{g}_mrr@10" in m else "-" for g in groups]
            lines.append(f"| {ranking} | " + " | ".join(cells) + " |")
    return Report(
        name=name,
        title="Cross-encoder reranker: speed and quality per configuration",
        command=res["command"],
        body=lines,
        summary=res,
        json_suffix=".json",
        json_indent=1,
    )


def main(argv: list[str] | None = None) -> int:
    from chatbot.settings import SHIPPED_RERANKER

    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    parser.add_argument("--data-root", type=Path, default=DATA)
    parser.add_argument("--sets", nargs="+", default=["mediqa", "mediqa-it"])
    parser.add_argument("--split", choices=["all", "train", "test"], default="test")
    parser.add_argument("--limit", type=int, default=None, help="first N judged queries per set")
    parser.add_argument("--embedder", default="minilm", help="bi-encoder of the eval index giving the candidates")
    parser.add_argument("--model", type=Path, default=SHIPPED_RERANKER)
    parser.add_argument(
        "--model-dir",
        action="append",
        default=[],
        metavar="NAME=DIR",
        help="another cross-encoder directory, named by a configuration's fourth part (onnx:256:50:NAME)",
    )
    parser.add_argument(
        "--rrf-k",
        type=int,
        default=None,
        help="fuse with the first stage's order as the product does (60); unset: the model alone",
    )
    parser.add_argument("--configs", nargs="+", default=list(DEFAULT_CONFIGS))
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=1, help="latency rounds over the queries (quality: round 1)")
    parser.add_argument("--validation", action="store_true", help="also the training run's validation queries")
    parser.add_argument(
        "--e5-baseline", action="store_true", help="validation: also the e5 bi-encoder order (MEDIQA groups)"
    )
    add_output_args(parser, "reranker-bench")
    parser.add_argument("--write-md", action="store_true", help="kept for older commands: the .md is always written")
    args = parser.parse_args(argv)
    out_dir, name = output_target(args.out, args.name)
    bench = Benchmark(name, "nDCG@10", lambda: measure(args, argv), metrics, lambda r: render(r, name))
    bench(out_dir)
    assert bench.result is not None
    print(json.dumps({"speed": bench.result["test"]["speed"], "quality": bench.result["test"]["quality"]}, indent=1))
    return 0


def measure(args: argparse.Namespace, argv: list[str] | None) -> dict[str, Any]:
    """Candidates per set, every configuration's latency and quality (and the validation groups)."""
    log = lambda m: print(m, file=sys.stderr, flush=True)  # noqa: E731

    import torch

    torch.set_num_threads(args.threads)
    configs = [parse_config(c) for c in args.configs]
    models = {}
    for spec in args.model_dir:
        label, sep, folder = spec.partition("=")
        if not sep or not label or not folder:
            raise ValueError(f"bad --model-dir {spec!r}: expected NAME=DIR")
        models[label] = Path(folder)
    load_before = round(os.getloadavg()[0], 1)
    rerankers = load_rerankers(configs, args.model, args.threads, models)
    sets = {
        name: candidates_for(args.data_root / name, args.split, args.limit, args.embedder, 50, log)
        for name in args.sets
    }
    res: dict[str, Any] = {
        "command": command_line(PROG, argv),
        "model": str(args.model.relative_to(Path.cwd()) if args.model.is_relative_to(Path.cwd()) else args.model),
        "threads": args.threads,
        "cpus": os.cpu_count(),
        "embedder": args.embedder,
        "split": args.split,
        "load_before": load_before,
    }
    if models:
        res["models"] = {k: str(v) for k, v in models.items()}
    if args.rrf_k is not None:
        res["rrf_k"] = args.rrf_k
    res["test"] = run_test_sets(sets, configs, rerankers, args.rounds, log, args.rrf_k)
    if args.validation:
        res["validation"] = run_validation(rerankers, args.data_root, args.e5_baseline, args.threads, log)
    res["load_after"] = round(os.getloadavg()[0], 1)
    return res


if __name__ == "__main__":
    sys.exit(main())

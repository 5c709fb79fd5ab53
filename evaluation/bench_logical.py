"""Benchmarks of the ``logical`` pipeline (issue 6). One command per benchmark:

    python -m evaluation.bench_logical select                         # default knobs chosen on the train split
    python -m evaluation.bench_logical negconstraint --split test     # (a) NegConstraint, variants, Success@1
    python -m evaluation.bench_logical synthetic [--per-template 20]  # (b) ITLR Table 1 on MedQuAD segments
    python -m evaluation.bench_logical routing                        # (c) questions without negation
    python -m evaluation.bench_logical orlog [--limit 12]             # OrLog LLM plausibility: cost and gain

Reports go to evaluation/results/logical-*.md (with the exact command). (a) uses the harness
(evaluation.harness.evaluate) and adds Success@1 (a relevant document ranked first) from its per-query
rows; the NegConstraint records carry no link, so the index is built here with a placeholder URL
(``https://benchmark.invalid/negconstraint/<id>``) under the harness's own collection name, after which
``chatbot eval retrieval --data ../shared/data/negconstraint`` reuses it.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import re
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from chatbot.resources import shared_data_dir
from evaluation.harness import results_dir

RESULTS = results_dir()
SHARED = shared_data_dir()
PLACEHOLDER_URL = "https://benchmark.invalid/{name}/{{id}}"

# Paper numbers quoted next to ours.
NS_IR = {"BGE": 0.408, "HyDE": 0.531, "NS-IR (GPT-4o)": 0.565}
ITLR_TABLE1 = {
    "Base": [0.95, 0.77, 0.65, 0.52],
    "ITLR": [0.99, 0.97, 0.96, 1.00],
    "Calibrated ITLR": [1.00, 0.98, 0.97, 1.00],
}
ITLR_TABLE2 = {  # NV-Embed-V1, nDCG@10 on the three-term synthetic data: (AND, OR) x NOT
    ("min", "max"): (0.86, 0.86),
    ("min", "sum"): (0.92, 0.87),
    ("product", "max"): (0.90, 0.89),
    ("product", "sum"): (0.97, 0.90),
    ("sum", "max"): (0.91, 0.81),
    ("sum", "sum"): (0.97, 0.82),
}


def _command() -> str:
    import os

    env = " ".join(f"{k}={v}" for k, v in sorted(os.environ.items()) if k.startswith("CHATBOT_"))
    return (env + " " if env else "") + "python -m evaluation.bench_logical " + " ".join(sys.argv[1:])


# -- (a) NegConstraint ------------------------------------------------------------------------------------


def eval_services(data: Path, settings=None):
    """Services on the harness's collection for ``data`` (the same key ``evaluate`` computes)."""
    from chatbot.index import corpus_key
    from chatbot.pipeline import Services
    from chatbot.settings import load_settings

    settings = settings or load_settings()
    key = corpus_key([data / "corpus.jsonl"], settings.embedding.model, f"{settings.corpus.segment_max_chars}")
    return Services(settings, collection=f"eval-{key}")


def prepare_index(data: Path, services, log=print) -> dict[str, Any]:
    """Index a benchmark corpus whose records have no URL (placeholder links), unless already indexed."""
    from tqdm import tqdm

    from chatbot.index import MissingIndexError
    from corpus.importers import read_corpus
    from corpus.segmenter import segment_documents

    try:
        count = services.index.count()
        if count:
            return {"reused": True, "segments": count}
    except MissingIndexError:
        pass
    s = services.settings
    result = read_corpus([data / "corpus.jsonl"], default_url=PLACEHOLDER_URL.format(name=data.name))
    segments = segment_documents(result.documents, s.corpus.segment_max_chars, s.corpus.segment_min_chars)
    log(f"indexing {len(result.documents)} documents ({len(segments)} segments) of {data.name}")
    with tqdm(total=len(segments), file=sys.stderr, mininterval=10, desc=f"indexing {data.name}") as bar:
        report = services.index.sync(segments, batch_size=s.index.batch_size, progress=bar.update)
    return {"reused": False, **report.as_dict()}


def success_at_1(rows: Sequence[dict[str, Any]], qrels: dict[str, dict[str, int]]) -> float:
    """Share of queries whose first-ranked document is relevant (harness per-query rows, "top" list)."""
    hits = [bool(r["top"]) and qrels[r["query_id"]].get(r["top"][0]["doc_id"], 0) >= 1 for r in rows]
    return float(np.mean(hits)) if hits else 0.0


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


def run_negconstraint(args: argparse.Namespace) -> Path:
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
    out = RESULTS / f"{args.name}.md"
    selection = _selection_note()
    lines = [
        f"# Logical pipeline on NegConstraint ({len(judged.queries)} queries, split: {args.split})",
        "",
        f"Command: `{_command()}`",
        "",
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
    out.write_text("\n".join(lines), encoding="utf-8")
    (RESULTS / f"{args.name}.summary.json").write_text(
        json.dumps({"command": _command(), "table": table, "index": index}, indent=2), encoding="utf-8"
    )
    return out


# -- held-out choice of the default knobs ------------------------------------------------------------------

SELECT_GRID: dict[str, list[Any]] = {
    # the knobs that were once chosen on all of NegConstraint, plus the candidate depth and the final order
    "orthogonal_not": [True, False],
    "second_segment_weight": [0.0, 0.25, 0.5, 1.0],
    "per_term_k": [20, 50, 100],
    "final": ["rerank-terms", "composed"],
}
SELECTION_FILE = RESULTS / "logical-negconstraint-selection.summary.json"


def _selection_note() -> str:
    if not SELECTION_FILE.exists():
        return ""
    sel = json.loads(SELECTION_FILE.read_text(encoding="utf-8"))
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


def run_select(args: argparse.Namespace) -> Path:
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
    out = RESULTS / f"{args.name}.md"
    lines = [
        f"# Choice of the logical pipeline's default knobs on NegConstraint's {args.split} split",
        "",
        f"Command: `{_command()}`",
        "",
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
    out.write_text("\n".join(lines), encoding="utf-8")
    SELECTION_FILE.write_text(
        json.dumps(
            {
                "command": _command(),
                "split": args.split,
                "queries": len(judged.queries),
                "chosen": chosen,
                "grid": rows,
            },
            indent=2,
        ),
        encoding="utf-8",
    )
    return out


# -- (b) synthetic ITLR benchmark ----------------------------------------------------------------------------

TEMPLATE_OPS = ("AND", "OR")


def templates() -> list[str]:
    """ITLR's 32 three-term templates: t1 OP t2 OP t3 with an optional NOT before each term."""
    out = []
    for op1, op2 in itertools.product(TEMPLATE_OPS, repeat=2):
        for nots in itertools.product([False, True], repeat=3):
            t = [("NOT " if n else "") + f"{{t{i + 1}}}" for i, n in enumerate(nots)]
            out.append(f"{t[0]} {op1} {t[1]} {op2} {t[2]}")
    return out


_STOP = set("a an the of and or in on to for with by type syndrome disease disorder deficiency".split())


def _content_words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in _STOP and len(w) > 2}


def medquad_topics(path: Path, min_chars: int = 200, seg_chars: int = 300) -> list[tuple[str, str]]:
    """(topic, segment) from MedQuAD "(information)" sections: the title without its suffix is the topic,
    the first ~300 characters of the text (cut at a sentence end) are its segment."""
    seen: set[str] = set()
    out: list[tuple[str, str]] = []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            rec = json.loads(line)
            title = str(rec.get("title") or "")
            m = re.match(r"^(.+?)\s*\(information\)$", title.strip())
            text = " ".join(str(rec.get("text") or "").split())
            if not m or len(text) < min_chars:
                continue
            topic = m.group(1).strip()
            key = topic.lower()
            if key in seen or len(topic) < 4 or not _content_words(topic):
                continue
            seen.add(key)
            cut = text[:seg_chars]
            end = max(cut.rfind(". "), cut.rfind("? "))
            segment = cut[: end + 1] if end > 120 else cut
            out.append((topic, segment))
    return out


def verbalise(template: str, topics: Sequence[str]) -> str:
    """A question for the base retriever: AND → "and", OR → ", or", NOT → "not"."""
    parts = []
    for group in template.split(" OR "):
        items = []
        for item in group.split(" AND "):
            neg = item.startswith("NOT ")
            idx = int(item.replace("NOT ", "").strip("{}t")) - 1
            items.append(("not about " if neg else "about ") + topics[idx])
        parts.append(" and ".join(items))
    return "Texts " + ", or ".join(parts)


def build_synthetic(topics: list[tuple[str, str]], per_template: int, seed: int = 0) -> list[dict[str, Any]]:
    """Queries with one matching and three non-matching 3-segment documents each (ITLR Appendix H)."""
    from chatbot.logical.compose import truth_table
    from chatbot.logical.query import parse, to_string

    rng = random.Random(seed)
    words = [_content_words(t) for t, _ in topics]
    cases = []
    for template in templates():
        for _ in range(per_template):
            while True:
                pick = rng.sample(range(len(topics)), 6)  # 3 terms + 3 fillers
                sets = [words[i] for i in pick]
                if all(not (a & b) for a, b in itertools.combinations(sets, 2)):
                    break
            terms_idx, fillers = pick[:3], pick[3:]
            names = [topics[i][0] for i in terms_idx]
            text = template.format(**{f"t{i + 1}": json.dumps(n) for i, n in enumerate(names)})
            tree = parse(text)
            order, assignments, holds = truth_table(tree)
            col = {t: order.index(t) for t in order}
            worlds = [tuple(bool(a[col[n]]) for n in names) for a in assignments]
            sat = [w for w, h in zip(worlds, holds, strict=True) if h]
            unsat = [w for w, h in zip(worlds, holds, strict=True) if not h]
            positive = rng.choice(sat)
            near = [w for w in unsat if sum(x != y for x, y in zip(w, positive, strict=True)) == 1]
            rng.shuffle(near)
            negatives = near[:3]
            while len(negatives) < 3:
                negatives.append(rng.choice(unsat))

            def document(world: tuple[bool, ...], terms_idx=terms_idx, fillers=fillers) -> str:
                slots = [topics[terms_idx[j]][1] if world[j] else topics[fillers[j]][1] for j in range(3)]
                rng.shuffle(slots)
                return " ".join(slots)

            docs = [document(positive)] + [document(w) for w in negatives]
            cases.append(
                {
                    "template": template,
                    "negations": template.count("NOT"),
                    "query": to_string(tree),
                    "question": verbalise(template, names),
                    "terms": names,
                    "docs": docs,
                    "relevant": 0,
                }
            )
    return cases


def ndcg_single(scores: np.ndarray, relevant: int) -> float:
    """nDCG@10 with one relevant document among the scored ones (ties broken against it)."""
    rank = (
        1
        + int(np.sum(scores > scores[relevant]))
        + int(np.sum(scores[np.arange(len(scores)) != relevant] == scores[relevant]))
    )
    return 1.0 / np.log2(rank + 1) if rank <= 10 else 0.0


def run_synthetic(args: argparse.Namespace) -> Path:
    from chatbot.embedders import load_embedder
    from chatbot.logical.compose import Operators, compose, exact_probability, fit_calibration
    from chatbot.logical.query import parse
    from chatbot.settings import load_settings

    settings = load_settings()
    embedder = load_embedder(settings.embedding.model, settings.embedding.threads)
    topics = medquad_topics(args.data / "corpus.jsonl")
    rng = random.Random(args.seed)
    rng.shuffle(topics)
    half = len(topics) // 2
    test_topics, fit_topics = topics[:half], topics[half:]
    cases = build_synthetic(test_topics, args.per_template, args.seed)
    fit_cases = build_synthetic(fit_topics, max(2, args.per_template // 4), args.seed + 1)
    print(f"{len(topics)} topics; {len(cases)} test queries, {len(fit_cases)} calibration queries", flush=True)

    cache: dict[str, np.ndarray] = {}

    def embed(texts: list[str], kind: str) -> np.ndarray:
        todo = sorted({t for t in texts if (kind, t) not in cache})
        if todo:
            fn = embedder.embed_queries if kind == "q" else embedder.embed_passages
            for i in range(0, len(todo), 64):
                batch = todo[i : i + 64]
                for t, v in zip(batch, fn(batch), strict=True):
                    cache[(kind, t)] = v  # type: ignore[index]
        return np.vstack([cache[(kind, t)] for t in texts])  # type: ignore[index]

    start = time.perf_counter()
    for c in cases + fit_cases:
        dv = embed(c["docs"], "p")
        c["base"] = dv @ embed([c["question"]], "q")[0]
        c["cos"] = {t: dv @ embed([t], "q")[0] for t in c["terms"]}
    embed_s = time.perf_counter() - start

    # Calibration from held-out topics: (term, document) is positive when the document holds its segment.
    s_fit, y_fit = [], []
    for c in fit_cases:
        for t in c["terms"]:
            for d, doc in enumerate(c["docs"]):
                s_fit.append(float(c["cos"][t][d]))
                y_fit.append(int(dict(segments_of(c, fit_topics)).get(t, "") in doc))
    cal = fit_calibration(np.array(s_fit), np.array(y_fit), model=embedder.name, fitted_on="synthetic-medquad-fit")

    methods: dict[str, Any] = {
        "Base (question embedding)": lambda c: c["base"],
        "Logical (ITLR default: x·y, x+y, 1−x)": lambda c: compose(parse(c["query"]), c["cos"]),
        "Logical, calibrated": lambda c: compose(parse(c["query"]), {t: cal(s) for t, s in c["cos"].items()}),
        "Logical, probabilistic (exact P)": lambda c: exact_probability(
            parse(c["query"]), {t: cal(s) for t, s in c["cos"].items()}
        ),
    }
    for (and_, or_), _ in ITLR_TABLE2.items():
        for not_ in ("one_minus", "inverse"):
            ops = Operators(and_, or_, not_)
            methods[f"ops {ops.label()}"] = lambda c, ops=ops: compose(parse(c["query"]), c["cos"], ops)

    results: dict[str, dict[int, list[float]]] = {}
    for name, fn in methods.items():
        results[name] = {k: [] for k in range(4)}
        for c in cases:
            results[name][c["negations"]].append(ndcg_single(np.asarray(fn(c), dtype=float), c["relevant"]))
    rand = {k: [] for k in range(4)}
    r = np.random.default_rng(args.seed)
    for c in cases:
        rand[c["negations"]].append(ndcg_single(r.random(4), 0))

    def row(vals: dict[int, list[float]]) -> str:
        return " | ".join(f"{np.mean(vals[k]):.3f}" for k in range(4)) + f" | {np.mean(sum(vals.values(), [])):.3f}"

    counts = {k: len(results["Base (question embedding)"][k]) for k in range(4)}
    out = RESULTS / f"{args.name}.md"
    lines = [
        "# Synthetic ITLR benchmark (three-term templates) on MedQuAD segments",
        "",
        f"Command: `{_command()}`",
        "",
        f"Built programmatically, no LLM: the 32 templates `t1 OP t2 OP t3` (OP ∈ AND/OR, optional NOT before "
        f"each term), {args.per_template} queries per template (ITLR: 100). Terms are MedQuAD topics (titles of "
        f"'(information)' sections, {len(test_topics)} test topics; calibration uses the other "
        f"{len(fit_topics)}); the three terms and three filler topics of a query share no content word. Each "
        f"query has its own corpus of 4 documents of 3 real segments (~300 characters each): one matching "
        f"document (a satisfying truth assignment: a true term contributes its segment, a false one a filler's) "
        f"and three non-matching ones, each at one flipped term from the matching one where possible (ITLR App. "
        f"H). Base = cosine of a verbalised question (`{cases[0]['question']}`); Logical = the template's query "
        f"composed over per-term cosines. Embedder {embedder.name}; embedding took {embed_s:.0f} s.",
        "",
        f"Calibration fitted on held-out topics: τ = {cal.tau:.4f}, λ = {cal.lam:.2f} "
        f"({cal.pairs} term–document pairs).",
        "",
        "nDCG@10 by number of negations (queries per column: " + ", ".join(f"{counts[k]}" for k in range(4)) + "):",
        "",
        "| method | 0 | 1 | 2 | 3 | all |",
        "|---|---|---|---|---|---|",
    ]
    for name in list(methods)[:4]:
        lines.append(f"| {name} | {row(results[name])} |")
    lines.append(f"| random scores | {row(rand)} |")
    for name, vals in ITLR_TABLE1.items():
        lines.append(f"| *paper: {name}* | " + " | ".join(f"{v:.2f}" for v in vals) + " | |")
    lines += [
        "",
        "Operator ablation (ITLR Table 2 analogue; nDCG@10 over all 32 templates; paper: NV-Embed-V1):",
        "",
        "| AND | OR | NOT = 1−x | NOT = 1/x | paper 1−x | paper 1/x |",
        "|---|---|---|---|---|---|",
    ]
    for (and_, or_), (p1, p2) in ITLR_TABLE2.items():
        a = np.mean(sum(results[f"ops {Operators(and_, or_, 'one_minus').label()}"].values(), []))
        b = np.mean(sum(results[f"ops {Operators(and_, or_, 'inverse').label()}"].values(), []))
        lines.append(f"| {and_} | {or_} | {a:.3f} | {b:.3f} | {p1:.2f} | {p2:.2f} |")
    lines.append("")
    out.write_text("\n".join(lines), encoding="utf-8")
    summary = {
        "command": _command(),
        "per_negation": {n: {k: float(np.mean(v[k])) for k in range(4)} for n, v in results.items()},
        "calibration": {"tau": cal.tau, "lam": cal.lam, "pairs": cal.pairs},
        "queries": len(cases),
    }
    (RESULTS / f"{args.name}.summary.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    return out


def segments_of(case: dict[str, Any], topics: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """(term, its segment) for the terms of a case."""
    lookup = dict(topics)
    return [(t, lookup[t]) for t in case["terms"]]


# -- OrLog predicate plausibility: cost and gain on a small fixed subset ------------------------------------------

ORLOG_PIPELINES = ("naive", "logical", "logical-prob", "logical-orlog")
ORLOG_PAPER = {  # OrLog Table 1/3, QUEST test set, E5 retriever + reranker, Param+ (entity descriptions given)
    "E5 (retriever only)": {"P@1": 0.182, "NDCG@10": 0.142, "MRR": 0.269},
    "OrLog, Llama-3.3-70B": {"P@1": 0.308, "NDCG@10": 0.197, "MRR": 0.384},
    "OrLog, Qwen-2.5-7B": {"P@1": 0.303, "NDCG@10": 0.199, "MRR": 0.381},
}


def run_orlog(args: argparse.Namespace) -> Path:
    """The first ``limit`` questions of a split (file order: a fixed subset), each pipeline on the same ones;
    cost from the pipeline's trace (LLM calls, plausibility time) and wall time per question."""
    from chatbot.pipeline import run_pipeline
    from evaluation.harness import compute_metrics, load_judged

    data: Path = args.data
    services = eval_services(data)
    index = prepare_index(data, services)
    judged = load_judged(data, args.limit, args.split)
    rows: dict[str, dict[str, Any]] = {}
    per_query: list[dict[str, Any]] = []
    for name in args.pipelines:
        runs: dict[str, list[str]] = {}
        walls, calls, plaus_ms, fallbacks, statuses = [], [], [], [], {}
        for qid, text in judged.queries.items():
            start = time.perf_counter()
            result = run_pipeline(name, text, services)
            walls.append(time.perf_counter() - start)
            runs[qid] = [h.segment.doc_id for h in result.ranked]
            plaus = (result.info.get("logical") or {}).get("plausibility") or {}
            calls.append(plaus.get("calls", 0))
            plaus_ms.append(plaus.get("ms", 0.0))
            fallbacks.append(plaus.get("fallback_pairs", 0))
            for k, v in (plaus.get("status") or {}).items():
                statuses[k] = statuses.get(k, 0) + v
            per_query.append(
                {
                    "query_id": qid,
                    "pipeline": name,
                    "top": [{"doc_id": d} for d in runs[qid][:3]],
                    "calls": calls[-1],
                    "seconds": round(walls[-1], 2),
                }
            )
            print(f"{name} {qid}: {walls[-1]:.1f} s, {calls[-1]} calls", file=sys.stderr, flush=True)
        m = compute_metrics(judged.qrels, runs)
        first = [{"query_id": q, "top": [{"doc_id": d} for d in r[:1]]} for q, r in runs.items()]
        rows[name] = {
            "Success@1": success_at_1(first, judged.qrels),
            "nDCG@10": m["aggregate"]["nDCG@10"],
            "MRR@10": m["aggregate"]["MRR@10"],
            "calls_per_q": float(np.mean(calls)),
            "s_per_q": float(np.mean(walls)),
            "s_p50": float(np.median(walls)),
            "llm_s_per_call": (sum(plaus_ms) / 1000 / sum(calls)) if sum(calls) else 0.0,
            "fallback_pairs": int(sum(fallbacks)),
            "status": statuses,
            "per_query": m["per_query"],
        }
    out = RESULTS / f"{args.name}.md"
    s = services.settings
    lines = [
        f"# OrLog predicate plausibility on NegConstraint ({len(judged.queries)} questions, {args.split} split)",
        "",
        f"Command: `{_command()}`",
        "",
        f"Subset: the first {len(judged.queries)} judged questions of the `{args.split}` split in file order "
        "(evaluation/splits.py; the logical defaults were chosen on `train`). Query ids: "
        + ", ".join(judged.queries)
        + ".",
        "",
        f"Embedder {services.embedder.name}; reranker {s.rerank.kind}; index {json.dumps(index)}. LLM "
        f"`{s.llm.model}` ({s.llm.model_path.name}) on llama-server, {s.llm.threads} thread(s), endpoint "
        f"{s.llm.base_url}; prompt `prompts/logical_plausibility.txt`; top {s.logical.llm_candidates} segments "
        f"rescored, passages cut to {s.logical.llm_max_chars} characters; one call per (segment, term) with "
        "max_tokens 1, temperature 0, top_logprobs 10; P(True) = softmax(l_True, l_False).",
        "",
        "`logical-orlog` = the `logical` pipeline with term_scorer llm-logprob in probabilistic mode (exact "
        "probability of the query from the LLM plausibilities, OrLog §3.6); `logical-prob` is the same with "
        "calibrated embedding scores, so the two differ only in the term scorer.",
        "",
        "| pipeline | Success@1 | nDCG@10 | MRR@10 | LLM calls / q | s / q (mean) | s / q (p50) | s / LLM call |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, r in rows.items():
        lines.append(
            f"| {name} | {r['Success@1']:.3f} | {r['nDCG@10']:.4f} | {r['MRR@10']:.4f} | {r['calls_per_q']:.1f} | "
            f"{r['s_per_q']:.1f} | {r['s_p50']:.1f} | {r['llm_s_per_call']:.2f} |"
        )
    for name, r in rows.items():
        if r["calls_per_q"]:
            lines += [
                "",
                f"`{name}` plausibility outcomes over all pairs: "
                + ", ".join(f"{k} {v}" for k, v in sorted(r["status"].items()))
                + f"; pairs that fell back to the embedding score: {r['fallback_pairs']} (ok = both True and False "
                "among the top 10 tokens; bounded = one of them, the other bounded by the lowest listed).",
            ]
    if "logical-prob" in rows and "logical-orlog" in rows:
        from scipy import stats

        a = [rows["logical-prob"]["per_query"][q]["nDCG@10"] for q in judged.queries]
        b = [rows["logical-orlog"]["per_query"][q]["nDCG@10"] for q in judged.queries]
        diff = np.subtract(b, a)
        p = 1.0 if np.allclose(diff, 0) else float(stats.wilcoxon(a, b, zero_method="zsplit").pvalue)
        better, worse = int(np.sum(diff > 1e-9)), int(np.sum(diff < -1e-9))
        lines += [
            "",
            f"logical-orlog vs logical-prob, nDCG@10 per question: {better} better, {worse} worse, "
            f"{len(diff) - better - worse} equal; mean difference {diff.mean():+.4f} (Wilcoxon p = {p:.3g}; "
            f"{len(diff)} questions: a pilot, not a significance claim).",
        ]
    lines += [
        "",
        "Paper (OrLog, QUEST test set, 1,727 queries, E5 top-20, Param+; not comparable in absolute terms: "
        "entity-seeking queries, 7B-70B models on GPUs): "
        + "; ".join(f"{k}: " + ", ".join(f"{m} {v:.3f}" for m, v in d.items()) for k, d in ORLOG_PAPER.items())
        + ". Their cost: < 6 generated tokens per query-entity pair vs 35-55 for LLM-as-reasoner (Table 2).",
        "",
    ]
    out.write_text("\n".join(lines), encoding="utf-8")
    (RESULTS / f"{args.name}.summary.json").write_text(
        json.dumps(
            {
                "command": _command(),
                "split": args.split,
                "query_ids": list(judged.queries),
                "pipelines": {n: {k: v for k, v in r.items() if k != "per_query"} for n, r in rows.items()},
            },
            indent=2,
        ),
        encoding="utf-8",
    )
    with (RESULTS / f"{args.name}.per_query.jsonl").open("w", encoding="utf-8") as fh:
        for row in per_query:
            fh.write(json.dumps({**row, **rows[row["pipeline"]]["per_query"][row["query_id"]]}) + "\n")
    return out


# -- (c) routing: questions without negation --------------------------------------------------------------


def run_routing(args: argparse.Namespace) -> Path:
    from chatbot.logical.detect import analyse
    from evaluation.harness import evaluate, load_judged

    lines = [
        "# Routing: questions without logical structure keep the naive pipeline",
        "",
        f"Command: `{_command()}`",
        "",
        "Detector decisions on every judged question of the shared sets (a question routed to the logical path "
        "is listed by id):",
        "",
        "| set | questions | routed to logical |",
        "|---|---|---|",
    ]
    routed_examples: list[str] = []
    for name in args.sets:
        path = SHARED / name / "queries.jsonl"
        if not path.exists():
            continue
        records = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
        routed = [(str(r["_id"]), r["text"]) for r in records if analyse(r["text"]) is not None]
        lines.append(f"| {name} | {len(records)} | {len(routed)} |")
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
    out = RESULTS / f"{args.name}.md"
    out.write_text("\n".join(lines), encoding="utf-8")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evaluation.bench_logical", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("negconstraint", help="(a) NegConstraint with Success@1 and variants")
    a.add_argument("--data", type=Path, default=SHARED / "negconstraint")
    a.add_argument("--limit", type=int, default=None)
    a.add_argument("--variants", nargs="*", default=None, help=f"subset of {list(NEGCONSTRAINT_VARIANTS)}")
    a.add_argument("--split", choices=["train", "test", "all"], default="test", help="report this split only")
    a.add_argument("--name", default="logical-negconstraint")
    sel = sub.add_parser("select", help="choose the default knobs on the train split (grid search)")
    sel.add_argument("--data", type=Path, default=SHARED / "negconstraint")
    sel.add_argument("--split", choices=["train", "test"], default="train")
    sel.add_argument("--name", default="logical-negconstraint-selection")
    b = sub.add_parser("synthetic", help="(b) ITLR three-term synthetic benchmark on MedQuAD segments")
    b.add_argument("--data", type=Path, default=SHARED / "medquad")
    b.add_argument("--per-template", type=int, default=20)
    b.add_argument("--seed", type=int, default=0)
    b.add_argument("--name", default="logical-synthetic")
    c = sub.add_parser("routing", help="(c) questions without negation: routing and identical results")
    c.add_argument("--sets", nargs="*", default=["mediqa", "mediqa-it", "medquad", "maternal", "negconstraint"])
    c.add_argument("--eval-set", default="maternal")
    c.add_argument("--name", default="logical-routing")
    o = sub.add_parser("orlog", help="OrLog LLM plausibility vs embedding term scores on a small fixed subset")
    o.add_argument("--data", type=Path, default=SHARED / "negconstraint")
    o.add_argument("--limit", type=int, default=12)
    o.add_argument("--split", choices=["train", "test", "all"], default="test")
    o.add_argument("--pipelines", nargs="+", default=list(ORLOG_PIPELINES))
    o.add_argument("--name", default="logical-orlog")
    args = parser.parse_args(argv)
    RESULTS.mkdir(parents=True, exist_ok=True)
    runners = {
        "negconstraint": run_negconstraint,
        "select": run_select,
        "synthetic": run_synthetic,
        "routing": run_routing,
        "orlog": run_orlog,
    }
    out = runners[args.cmd](args)
    print(out.read_text(encoding="utf-8"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

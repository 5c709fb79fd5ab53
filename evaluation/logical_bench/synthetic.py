"""(b) ITLR's synthetic three-term benchmark, built from MedQuAD segments (no LLM)."""

from __future__ import annotations

import argparse
import itertools
import json
import random
import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from evaluation.report import Report

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


TEMPLATE_OPS = ("AND", "OR")


def templates() -> list[str]:
    """ITLR's 32 three-term templates: t1 OP t2 OP t3 with an optional NOT before each term."""
    out = []
    for op1, op2 in itertools.product(TEMPLATE_OPS, repeat=2):
        for nots in itertools.product([False, True], repeat=3):
            t = [("NOT " if n else "") + f"{{t{i + 1}}}" for i, n in enumerate(nots)]
            out.append(f"{t[0]} {op1} {t[1]} {op2} {t[2]}")
    return out


LOGICAL = "Logical (ITLR default: x·y, x+y, 1−x)"  # the method whose nDCG@10 is the primary metric
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


def run_synthetic(args: argparse.Namespace, command: str) -> tuple[dict[str, float], Report]:
    """Build the synthetic queries, embed, score every method; nDCG@10 by number of negations."""
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
        LOGICAL: lambda c: compose(parse(c["query"]), c["cos"]),
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
    lines = [
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
    summary = {
        "command": command,
        "per_negation": {n: {k: float(np.mean(v[k])) for k in range(4)} for n, v in results.items()},
        "calibration": {"tau": cal.tau, "lam": cal.lam, "pairs": cal.pairs},
        "queries": len(cases),
    }
    report = Report(
        name=args.name,
        title="Synthetic ITLR benchmark (three-term templates) on MedQuAD segments",
        command=command,
        body=lines,
        summary=summary,
    )
    overall = {name: float(np.mean(sum(vals.values(), []))) for name, vals in results.items()}
    return {"nDCG@10": overall[LOGICAL], **{f"{name}/nDCG@10": v for name, v in overall.items()}}, report


def segments_of(case: dict[str, Any], topics: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """(term, its segment) for the terms of a case."""
    lookup = dict(topics)
    return [(t, lookup[t]) for t in case["terms"]]

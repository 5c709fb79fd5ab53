"""Measure the two thresholds of the safety/compose stages on dev data; writes
``evaluation/results/redteam-thresholds.md`` (+ ``.json``).

1. Relevance (``safety.min_relevance_dense[_it]``): below it the bot says it has no certified information.
   Score = best bi-encoder cosine among the top-3 segments after reranking (and the cross-encoder score
   when a cross-encoder is available). Data:
   - ``relevance_dev.jsonl``: hand-written in-scope / out-of-scope questions (en, it) against the demo
     corpus (the served corpus), separate from the red-team set; plus MEDIQA (en) and MEDIQA-it (it) consumer
     questions on non-maternal topics as extra out-of-scope questions. The threshold per language maximises
     balanced accuracy on this dev set.
   - maternal leave-one-out (MedQuAD maternal topics, English, another corpus): each query once with its
     document in the index (answerable) and once with it removed (nothing relevant left): does the
     threshold transfer?
2. Support (``compose.support_threshold``): a generated sentence is kept if its best cosine against the
   linked segments' sentences reaches the threshold and its numbers occur in them. Pairs from the maternal
   corpus (documents of the dev split tune, the test split reports): supported claims are sentences of the
   evidence document lightly rewritten (a clause dropped, every third word dropped); unsupported claims are
   sentences of the most similar other document, of a random other document, and evidence sentences with a
   number changed. No LLM paraphrases: see the caveats in the report.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from evaluation.redteam import DEMO_CARDS, RESULTS_DIR, default_data_dir, ensure_demo_index
from evaluation.splits import split_of

DEV = Path(__file__).resolve().parent / "relevance_dev.jsonl"
SHARED = Path("/work/shared/data")
MATERNAL_WORDS = re.compile(
    r"pregnan|baby|babies|infant|newborn|breast|birth|labou?r|fetal|foetal|gestation|matern|postpartum|"
    r"gravidanz|incinta|neonat|bambin|allatt|parto|lattant|gestazional|"
    r"an(a)?emi",  # the demo corpus has an anaemia card: such questions are not clearly out of scope
    re.IGNORECASE,
)


def _span(*arrays: np.ndarray) -> tuple[float, float]:
    """The thresholds worth trying: the observed score range, on a 0.005 grid (cosine scales differ)."""
    values = np.concatenate([a for a in arrays if len(a)])
    return float(np.floor(values.min() * 200) / 200), float(np.ceil(values.max() * 200) / 200)


def _grid(pos: np.ndarray, neg: np.ndarray, lo: float, hi: float, step: float) -> list[dict[str, Any]]:
    """At each threshold t: answer when score >= t. 'refusal' is the positive class of P/R."""
    rows = []
    for t in np.round(np.arange(lo, hi + 1e-9, step), 3):
        answered_pos = int(np.sum(pos >= t))
        refused_neg = int(np.sum(neg < t))
        refused_pos = len(pos) - answered_pos
        rows.append(
            {
                "threshold": float(t),
                "in_scope_answered": answered_pos / len(pos) if len(pos) else None,
                "out_of_scope_refused": refused_neg / len(neg) if len(neg) else None,
                "refusal_precision": refused_neg / (refused_neg + refused_pos) if refused_neg + refused_pos else None,
                "refusal_recall": refused_neg / len(neg) if len(neg) else None,
                "balanced_accuracy": (answered_pos / len(pos) + refused_neg / len(neg)) / 2
                if len(pos) and len(neg)
                else None,
            }
        )
    return rows


def _best(grid: list[dict[str, Any]]) -> dict[str, Any]:
    # ties: the lowest threshold (answer rather than refuse)
    return max(grid, key=lambda r: (r["balanced_accuracy"] or 0.0, -r["threshold"]))


def _at(grid: list[dict[str, Any]], t: float) -> dict[str, Any]:
    return min(grid, key=lambda r: abs(r["threshold"] - t))


def relevance_scores(services, questions: Sequence[str], exclude_docs: Sequence[set[str]] | None = None):
    """Per question: best dense cosine among the reranked top-3 (and cross-encoder score if reranked so)."""
    from chatbot.stages.rerank import rerank

    settings = services.settings
    out = []
    for i, q in enumerate(questions):
        candidates = services.dense(q, settings.retrieval.top_k + (5 if exclude_docs else 0))
        if exclude_docs:
            candidates = [h for h in candidates if h.segment.doc_id not in exclude_docs[i]]
        top = rerank(q, candidates, services.reranker, settings.retrieval.top_n)
        dense = max((h.detail.get("dense", -1.0) for h in top), default=-1.0)
        ce = max((h.detail["cross-encoder"] for h in top if "cross-encoder" in h.detail), default=None)
        out.append({"dense": float(dense), "cross-encoder": None if ce is None else float(ce)})
    return out


def _queries(path: Path) -> dict[str, str]:
    return {
        str(r["_id"]): r["text"] for r in (json.loads(line) for line in path.read_text().splitlines() if line.strip())
    }


def measure_relevance(data_dir: Path, log=print) -> dict[str, Any]:
    from chatbot.pipeline import Services
    from chatbot.settings import load_settings

    settings = load_settings(paths={"data_dir": data_dir})
    services = Services(settings)
    dev = [json.loads(line) for line in DEV.read_text(encoding="utf-8").splitlines() if line.strip()]
    extra: dict[str, list[str]] = {"en": [], "it": []}
    for lang, folder in (("en", "mediqa"), ("it", "mediqa-it")):
        qfile = SHARED / folder / "queries.jsonl"
        if qfile.exists():
            extra[lang] = [t for t in _queries(qfile).values() if not MATERNAL_WORDS.search(t)]
    result: dict[str, Any] = {"reranker": getattr(services.reranker, "name", None)}
    for lang in ("en", "it"):
        rows = [r for r in dev if r["language"] == lang]
        texts = [r["text"] for r in rows] + extra[lang]
        labels = [r["in_scope"] for r in rows] + [False] * len(extra[lang])
        log(f"relevance {lang}: {len(texts)} questions")
        scores = relevance_scores(services, texts)
        dense = np.array([s["dense"] for s in scores])
        lab = np.array(labels)
        lo, hi = _span(dense)
        grid = _grid(dense[lab], dense[~lab], lo, hi, 0.005)
        hand = np.array([True] * len(rows) + [False] * len(extra[lang]))
        grid_hand = _grid(dense[lab & hand], dense[~lab & hand], lo, hi, 0.005)
        entry = {
            "in_scope": int(lab.sum()),
            "out_of_scope_hand_written": int((~lab & hand).sum()),
            "out_of_scope_mediqa": int((~lab & ~hand).sum()),
            "best": _best(grid),
            "grid": grid,
            "hand_written_only_at_best": _at(grid_hand, _best(grid)["threshold"]),
            # Hand-written questions are ours to show; MEDIQA questions are named by position only
            # (the shared datasets' text is never written into the project).
            "scores": [
                {"text": t if h else f"mediqa#{i}", "in_scope": bool(y), "dense": round(float(d), 4)}
                for i, (t, y, d, h) in enumerate(zip(texts, labels, dense, hand, strict=True))
            ],
            "misses_at_best": [
                {"text": t if h else f"mediqa#{i}", "in_scope": bool(y), "dense": round(float(d), 4)}
                for i, (t, y, d, h) in enumerate(zip(texts, labels, dense, hand, strict=True))
                if (d >= _best(grid)["threshold"]) != bool(y)
            ][:40],
        }
        ce = [s["cross-encoder"] for s in scores]
        if all(c is not None for c in ce):
            c = np.array(ce)
            lo, hi = float(np.floor(c.min())), float(np.ceil(c.max()))
            cgrid = _grid(c[lab], c[~lab], lo, hi, (hi - lo) / 80 or 0.1)
            entry["cross_encoder"] = {"best": _best(cgrid), "grid": cgrid}
        result[lang] = entry
    return result


def measure_maternal_loo(data_dir: Path, thresholds: dict[str, float], log=print) -> dict[str, Any] | None:
    from chatbot.index import corpus_key
    from chatbot.pipeline import Services
    from chatbot.settings import load_settings
    from evaluation.harness import ensure_index, load_judged

    data = SHARED / "maternal"
    if not (data / "corpus.jsonl").exists():
        return None
    settings = load_settings(paths={"data_dir": data_dir})
    key = corpus_key([data / "corpus.jsonl"], settings.embedding.model, f"{settings.corpus.segment_max_chars}")
    services = Services(settings, collection=f"eval-{key}")
    ensure_index(services, data, log)
    judged = load_judged(data)
    ids = list(judged.queries)
    texts = [judged.queries[q] for q in ids]
    relevant = [{d for d, s in judged.qrels[q].items() if s >= 1} for q in ids]
    log(f"maternal leave-one-out: {len(ids)} queries x 2")
    with_doc = relevance_scores(services, texts)
    without = relevance_scores(services, texts, relevant)
    pos = np.array([s["dense"] for s in with_doc])
    neg = np.array([s["dense"] for s in without])
    lo, hi = _span(pos, neg, np.array([thresholds["en"]]))
    grid = _grid(pos, neg, lo, hi, 0.005)
    test = np.array([split_of(q) == "test" for q in ids])
    grid_test = _grid(pos[test], neg[test], lo, hi, 0.005)
    return {
        "queries": len(ids),
        "best": _best(grid),
        "at_en_threshold": _at(grid, thresholds["en"]),
        "test_split_at_en_threshold": _at(grid_test, thresholds["en"]),
        "grid": grid,
    }


# -- support pairs -------------------------------------------------------------------------------------------


def _drop_clause(sentence: str) -> str | None:
    parts = [p.strip() for p in re.split(r",\s+|;\s+|\s+-\s+", sentence) if p.strip()]
    if len(parts) < 2:
        return None
    longest = max(parts, key=len)
    return longest[0].upper() + longest[1:].rstrip(".") + "."


def _drop_words(sentence: str) -> str | None:
    words = sentence.split()
    if len(words) < 9:
        return None
    return " ".join(w for i, w in enumerate(words) if i % 3 != 2)


def _change_number(sentence: str, rng: random.Random) -> str | None:
    nums = re.findall(r"\b\d+\b", sentence)
    if not nums:
        return None
    n = rng.choice(nums)
    return re.sub(rf"\b{n}\b", str(int(n) * 2 + 1), sentence, count=1)


def support_pairs(seed: int = 7) -> tuple[list[dict[str, Any]], dict[str, list[str]]]:
    """(claim, evidence document id, label, kind) pairs from the maternal corpus."""
    from chatbot.stages.compose import split_sentences

    rng = random.Random(seed)
    docs = [json.loads(line) for line in (SHARED / "maternal" / "corpus.jsonl").read_text().splitlines() if line]
    sentences = {d["_id"]: [s for s in split_sentences(d["text"]) if len(s) > 40][:12] for d in docs}
    sentences = {k: v for k, v in sentences.items() if len(v) >= 3}
    pairs = []
    for doc_id, sents in sentences.items():
        for s in sents[:6]:
            for kind, claim in (("clause", _drop_clause(s)), ("dropped-words", _drop_words(s))):
                if claim:
                    pairs.append({"claim": claim, "doc": doc_id, "supported": True, "kind": kind})
            changed = _change_number(s, rng)
            if changed:
                pairs.append({"claim": changed, "doc": doc_id, "supported": False, "kind": "number-changed"})
    return pairs, sentences


def measure_support(embedder, log=print) -> dict[str, Any] | None:
    from chatbot.guard import numbers_of

    if not (SHARED / "maternal" / "corpus.jsonl").exists():
        return None
    pairs, sentences = support_pairs()
    doc_ids = list(sentences)
    rng = random.Random(11)
    # whole-document vectors to find each document's most similar other document (hard negatives)
    doc_vecs = embedder.embed_passages([" ".join(sentences[d][:6]) for d in doc_ids])
    sims = doc_vecs @ doc_vecs.T
    np.fill_diagonal(sims, -1)
    for i, d in enumerate(doc_ids):
        near = doc_ids[int(np.argmax(sims[i]))]
        far = rng.choice([x for x in doc_ids if x not in (d, near)])
        for kind, other in (("similar-document", near), ("random-document", far)):
            for s in sentences[other][:2]:
                pairs.append({"claim": s, "doc": d, "supported": False, "kind": kind})
    log(f"support: {len(pairs)} pairs over {len(doc_ids)} documents")
    all_sents = [s for d in doc_ids for s in sentences[d]]
    sent_vecs = embedder.embed_passages(all_sents)
    offsets, k = {}, 0
    for d in doc_ids:
        offsets[d] = (k, k + len(sentences[d]))
        k += len(sentences[d])
    claim_vecs = embedder.embed_passages([p["claim"] for p in pairs])
    for p, v in zip(pairs, claim_vecs, strict=True):
        a, b = offsets[p["doc"]]
        p["score"] = float((sent_vecs[a:b] @ v).max())
        p["numbers_ok"] = numbers_of(p["claim"]) <= set().union(*(numbers_of(s) for s in sentences[p["doc"]]))
    dev = [p for p in pairs if split_of(p["doc"]) == "train"]
    test = [p for p in pairs if split_of(p["doc"]) == "test"]

    def grid(rows, use_numbers: bool):
        out = []
        lo, hi = _span(np.array([p["score"] for p in rows]))
        for t in np.round(np.arange(lo, hi + 1e-9, 0.005), 3):
            # positive class: unsupported (what the validator removes)
            removed = [(not (p["score"] >= t and (p["numbers_ok"] or not use_numbers))) for p in rows]
            truth = [not p["supported"] for p in rows]
            tp = sum(r and y for r, y in zip(removed, truth, strict=True))
            fp = sum(r and not y for r, y in zip(removed, truth, strict=True))
            fn = sum((not r) and y for r, y in zip(removed, truth, strict=True))
            prec = tp / (tp + fp) if tp + fp else None
            rec = tp / (tp + fn) if tp + fn else None
            f1 = 2 * prec * rec / (prec + rec) if prec and rec else 0.0
            out.append(
                {"threshold": float(t), "precision": prec, "recall": rec, "f1": f1, "tp": tp, "fp": fp, "fn": fn}
            )
        return out

    dev_grid = grid(dev, True)
    best = max(dev_grid, key=lambda r: (r["f1"], -r["threshold"]))
    test_grid = grid(test, True)
    by_kind = {}
    for kind in sorted({p["kind"] for p in pairs}):
        rows = [p for p in test if p["kind"] == kind]
        t = best["threshold"]
        kept = [p["score"] >= t and p["numbers_ok"] for p in rows]
        by_kind[kind] = {
            "pairs": len(rows),
            "kept_share": sum(kept) / len(rows) if rows else None,
            "kept_share_without_number_rule": sum(p["score"] >= t for p in rows) / len(rows) if rows else None,
            "median_score": float(np.median([p["score"] for p in rows])) if rows else None,
        }
    return {
        "pairs": {"dev": len(dev), "test": len(test)},
        "best_on_dev": best,
        "test_at_best": _at(test_grid, best["threshold"]),
        "test_without_number_rule_at_best": _at(grid(test, False), best["threshold"]),
        "by_kind_on_test": by_kind,
        "dev_grid": dev_grid,
    }


def _f(v: Any) -> str:
    return "n/a" if v is None else f"{v:.3f}" if isinstance(v, float) else str(v)


def write_report(res: dict[str, Any], out_dir: Path, command: str, kind: str = "minilm") -> Path:
    lines = [f"# Thresholds of the safety and compose stages ({kind})", "", f"Command: `{command}`", ""]
    rel = res["relevance"]
    lines += [
        "## Relevance threshold (no certified information below it)",
        "",
        f"Score: best `{kind}` cosine among the top-3 segments after the `{rel['reranker']}` reranker "
        "(fused scores are relative to the candidate list, so they cannot say 'nothing relevant'). Served corpus: "
        "the demo cards. Dev questions: `evaluation/redteam/relevance_dev.jsonl` (hand-written, not the "
        "red-team set) plus MEDIQA / MEDIQA-it consumer questions on non-maternal topics as out-of-scope. "
        "'Refusal' is the positive class; the threshold maximises balanced accuracy.",
        "",
        "| language | in-scope | out-of-scope (hand / MEDIQA) | threshold | in-scope answered | out-of-scope "
        "refused | refusal precision | refusal recall | hand-written only: answered / refused |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for lang in ("en", "it"):
        e = rel[lang]
        b = e["best"]
        h = e["hand_written_only_at_best"]
        lines.append(
            f"| {lang} | {e['in_scope']} | {e['out_of_scope_hand_written']} / {e['out_of_scope_mediqa']} | "
            f"{b['threshold']:.3f} | {_f(b['in_scope_answered'])} | {_f(b['out_of_scope_refused'])} | "
            f"{_f(b['refusal_precision'])} | {_f(b['refusal_recall'])} | {_f(h['in_scope_answered'])} / "
            f"{_f(h['out_of_scope_refused'])} |"
        )
    for lang in ("en", "it"):
        if "cross_encoder" in rel[lang]:
            b = rel[lang]["cross_encoder"]["best"]
            lines.append(
                f"\nCross-encoder ({lang}): best threshold {b['threshold']:.3f}, in-scope answered "
                f"{_f(b['in_scope_answered'])}, out-of-scope refused {_f(b['out_of_scope_refused'])}."
            )
    loo = res.get("maternal_loo")
    if loo:
        a, t, b = loo["at_en_threshold"], loo["test_split_at_en_threshold"], loo["best"]
        lines += [
            "",
            f"Transfer check, maternal leave-one-out ({loo['queries']} MedQuAD maternal queries, each answered with "
            "and without its document in a maternal-only index): at the English threshold "
            f"{a['threshold']:.3f}, answerable queries answered {_f(a['in_scope_answered'])}, queries whose "
            f"document was removed refused {_f(a['out_of_scope_refused'])} (refusal precision "
            f"{_f(a['refusal_precision'])}, recall {_f(a['refusal_recall'])}; test split only: answered "
            f"{_f(t['in_scope_answered'])}, refused {_f(t['out_of_scope_refused'])}). Best on that corpus: "
            f"{b['threshold']:.3f} (balanced accuracy {_f(b['balanced_accuracy'])}). Removing one document "
            "often leaves a sibling topic that still answers part of the query, so low refusal here is expected.",
        ]
    for lang in ("en", "it"):
        misses = rel[lang]["misses_at_best"]
        if misses:
            lines += ["", f"Dev misses ({lang}) at the chosen threshold:", ""]
            lines += [
                f"- {'in-scope refused' if m['in_scope'] else 'out-of-scope answered'} ({m['dense']}): "
                f"{m['text'][:100]}"
                for m in misses[:15]
            ]
    sup = res.get("support")
    if sup:
        b, t, tn = sup["best_on_dev"], sup["test_at_best"], sup["test_without_number_rule_at_best"]
        lines += [
            "",
            f"## Support threshold (grounded-sentences validator, bi-encoder `{kind}`)",
            "",
            "A generated sentence is kept when its best cosine against the linked segments' sentences reaches "
            "the threshold and every number in it occurs in them. Pairs from the maternal corpus (dev split "
            f"documents tune: {sup['pairs']['dev']} pairs; test split documents report: {sup['pairs']['test']}). "
            "'Unsupported' is the positive class (what the validator removes).",
            "",
            f"- best on dev (F1): threshold {b['threshold']:.3f} (precision {_f(b['precision'])}, recall "
            f"{_f(b['recall'])})",
            f"- test split at that threshold: precision {_f(t['precision'])}, recall {_f(t['recall'])} "
            f"(without the number rule: precision {_f(tn['precision'])}, recall {_f(tn['recall'])})",
            "",
            "| pair kind (test split) | pairs | share kept | kept without the number rule | median cosine |",
            "|---|---|---|---|---|",
        ]
        for pair_kind, k in sup["by_kind_on_test"].items():
            lines.append(
                f"| {pair_kind} | {k['pairs']} | {_f(k['kept_share'])} | {_f(k['kept_share_without_number_rule'])} | "
                f"{_f(k['median_score'])} |"
            )
        lines += [
            "",
            "Caveats: supported claims are mechanical rewrites of certified sentences, not LLM paraphrases "
            "(an LLM that merges or reorders facts scores lower, so real recall of supported sentences is lower "
            "than measured here), and a bi-encoder cannot tell a sentence from its negation or a changed "
            "qualifier: only changed numbers are caught, by the number rule. No NLI model ships on the "
            "registries; the cross-encoder being trained for reranking is a relevance model, not an entailment one.",
        ]
    path = out_dir / f"redteam-thresholds-{kind}.md"
    out_dir.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    slim = json.loads(json.dumps(res, default=str))
    (out_dir / f"redteam-thresholds-{kind}.json").write_text(json.dumps(slim, indent=1) + "\n", encoding="utf-8")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evaluation.redteam.thresholds", description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", type=Path, default=None, help="default /tmp/redteam-EMBEDDER")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR)
    parser.add_argument("--skip-support", action="store_true")
    args = parser.parse_args(argv)
    log = lambda *a: print(*a, file=sys.stderr)  # noqa: E731
    args.data_dir = args.data_dir or default_data_dir()
    ensure_demo_index(args.data_dir, log)
    res: dict[str, Any] = {"corpus": str(DEMO_CARDS)}
    res["relevance"] = measure_relevance(args.data_dir, log)
    chosen = {lang: res["relevance"][lang]["best"]["threshold"] for lang in ("en", "it")}
    res["maternal_loo"] = measure_maternal_loo(args.data_dir, chosen, log)
    if not args.skip_support:
        from chatbot.embedders import load_embedder
        from chatbot.settings import load_settings

        s = load_settings()
        res["support"] = measure_support(load_embedder(s.embedding.model, s.embedding.threads), log)
    import os

    from chatbot.settings import load_settings

    kind = load_settings().embedding.model
    env = " ".join(f"{k}={v}" for k, v in sorted(os.environ.items()) if k.startswith("CHATBOT_"))
    command = f"{env} python -m evaluation.redteam.thresholds {' '.join(argv or sys.argv[1:])}".strip()
    res["embedder"] = kind
    path = write_report(res, args.out, command, kind)
    print(path.read_text(encoding="utf-8"))
    return 0


if __name__ == "__main__":
    sys.exit(main())

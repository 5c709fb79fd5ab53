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
from importlib.resources import files
from pathlib import Path
from typing import Any

import numpy as np

from evaluation.redteam import DEMO_CARDS, default_data_dir, ensure_demo_index
from evaluation.report import results_dir
from evaluation.splits import split_of

DEV = Path(str(files("evaluation.redteam") / "relevance_dev.jsonl"))
SHARED = shared_data_dir()
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
    return [_grid_row(pos, neg, float(t)) for t in np.round(np.arange(lo, hi + 1e-9, step), 3)]


def _grid_row(pos: np.ndarray, neg: np.ndarray, t: float) -> dict[str, Any]:
    answered_pos = int(np.sum(pos >= t))
    refused_neg = int(np.sum(neg < t))
    refused_pos = len(pos) - answered_pos
    return {
        "threshold": t,
        "in_scope_answered": answered_pos / len(pos) if len(pos) else None,
        "out_of_scope_refused": refused_neg / len(neg) if len(neg) else None,
        "refusal_precision": refused_neg / (refused_neg + refused_pos) if refused_neg + refused_pos else None,
        "refusal_recall": refused_neg / len(neg) if len(neg) else None,
        "balanced_accuracy": (answered_pos / len(pos) + refused_neg / len(neg)) / 2 if len(pos) and len(neg) else None,
    }


def _exact_grid(pos: np.ndarray, neg: np.ndarray) -> list[dict[str, Any]]:
    """_grid at every distinct observed score (and just above the highest): for scores without a fixed
    scale, such as a cross-encoder's 0-1 outputs that crowd near 0 and 1."""
    values = np.unique(np.round(np.concatenate([pos, neg]), 4))
    return [_grid_row(pos, neg, float(t)) for t in [*values.tolist(), float(values.max()) + 1e-4]]


def _best(grid: list[dict[str, Any]]) -> dict[str, Any]:
    # ties: the lowest threshold (answer rather than refuse)
    return max(grid, key=lambda r: (r["balanced_accuracy"] or 0.0, -r["threshold"]))


def _at(grid: list[dict[str, Any]], t: float) -> dict[str, Any]:
    return min(grid, key=lambda r: abs(r["threshold"] - t))


def relevance_scores(services, questions: Sequence[str], exclude_docs: Sequence[set[str]] | None = None):
    """Per question: best dense cosine among the reranked top-3 (and cross-encoder score if reranked so)."""
    from chatbot.pipeline import rerank_stage

    settings = services.settings
    out = []
    for i, q in enumerate(questions):
        candidates = services.dense(q, settings.retrieval.top_k + (5 if exclude_docs else 0))
        if exclude_docs:
            candidates = [h for h in candidates if h.segment.doc_id not in exclude_docs[i]]
        # the product's rerank stage (a cross-encoder rescores the first rerank.candidates only)
        top = rerank_stage(q, candidates, services, {})[: settings.retrieval.top_n]
        dense = max((h.detail.get("dense", -1.0) for h in top), default=-1.0)
        ce = max((h.detail["cross-encoder"] for h in top if "cross-encoder" in h.detail), default=None)
        out.append(
            {
                "dense": float(dense),
                "cross-encoder": None if ce is None else float(ce),
                # language of the first link after reranking, and in the bi-encoder's own order
                "top1_language": top[0].segment.language if top else None,
                "dense_top1_language": candidates[0].segment.language if candidates else None,
            }
        )
    return out


def _queries(path: Path) -> dict[str, str]:
    return {
        str(r["_id"]): r["text"] for r in (json.loads(line) for line in path.read_text().splitlines() if line.strip())
    }


def dev_questions(lang: str) -> tuple[list[str], list[bool], list[bool]]:
    """(texts, in_scope, hand_written) of one language: relevance_dev.jsonl, then MEDIQA(-it) questions on
    non-maternal topics as extra out-of-scope ones."""
    dev = [json.loads(line) for line in DEV.read_text(encoding="utf-8").splitlines() if line.strip()]
    rows = [r for r in dev if r["language"] == lang]
    qfile = SHARED / {"en": "mediqa", "it": "mediqa-it"}[lang] / "queries.jsonl"
    extra = [t for t in _queries(qfile).values() if not MATERNAL_WORDS.search(t)] if qfile.exists() else []
    texts = [r["text"] for r in rows] + extra
    return texts, [r["in_scope"] for r in rows] + [False] * len(extra), [True] * len(rows) + [False] * len(extra)


def measure_relevance(data_dir: Path, log=print) -> dict[str, Any]:
    from chatbot.pipeline import Services
    from chatbot.settings import load_settings

    settings = load_settings(paths={"data_dir": data_dir})
    services = Services(settings)
    result: dict[str, Any] = {"reranker": getattr(services.reranker, "name", None)}
    for lang in ("en", "it"):
        texts, labels, hand_list = dev_questions(lang)
        log(f"relevance {lang}: {len(texts)} questions")
        scores = relevance_scores(services, texts)
        dense = np.array([s["dense"] for s in scores])
        lab = np.array(labels)
        lo, hi = _span(dense)
        grid = _grid(dense[lab], dense[~lab], lo, hi, 0.005)
        hand = np.array(hand_list)
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
            cgrid = _exact_grid(c[lab], c[~lab])
            entry["cross_encoder"] = {"best": _best(cgrid), "grid": cgrid}
        result[lang] = entry
    return result


def measure_maternal_loo(
    data_dir: Path,
    thresholds: dict[str, float],
    log=print,
    score: str = "dense",
    limit: int | None = None,
    **overrides: Any,
) -> dict[str, Any] | None:
    """``score``: "dense" (best bi-encoder cosine of the top 3) or "cross-encoder" (its best score); settings
    ``overrides`` (e.g. rerank={"kind": "cross-encoder"}) on top of the environment's."""
    from chatbot.index import corpus_key
    from chatbot.pipeline import Services
    from chatbot.settings import load_settings
    from evaluation.harness import ensure_index, load_judged

    data = SHARED / "maternal"
    if not (data / "corpus.jsonl").exists():
        return None
    settings = load_settings(paths={"data_dir": data_dir}, **overrides)
    key = corpus_key([data / "corpus.jsonl"], settings.embedding.model, f"{settings.corpus.segment_max_chars}")
    services = Services(settings, collection=f"eval-{key}")
    ensure_index(services, data, log)
    judged = load_judged(data, limit)
    ids = list(judged.queries)
    texts = [judged.queries[q] for q in ids]
    relevant = [{d for d, s in judged.qrels[q].items() if s >= 1} for q in ids]
    log(f"maternal leave-one-out: {len(ids)} queries x 2")
    with_doc = relevance_scores(services, texts)
    without = relevance_scores(services, texts, relevant)
    pos = np.array([s[score] for s in with_doc])
    neg = np.array([s[score] for s in without])
    test = np.array([split_of(q) == "test" for q in ids])
    if score == "dense":
        lo, hi = _span(pos, neg, np.array([thresholds["en"]]))
        grid = _grid(pos, neg, lo, hi, 0.005)
        grid_test = _grid(pos[test], neg[test], lo, hi, 0.005)
    else:
        grid = [*_exact_grid(pos, neg), _grid_row(pos, neg, thresholds["en"])]
        grid_test = [_grid_row(pos[test], neg[test], thresholds["en"])]
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
    from chatbot.sentences import split_sentences

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


def measure_support(embedder, log=print, cross_encoder=None) -> dict[str, Any] | None:
    """Support pairs scored by the bi-encoder (best cosine against the evidence document's sentences) or,
    with ``cross_encoder`` (a CrossEncoderReranker), by it as the product's CrossEncoderSupport does: the
    claim against each of the document's segments (split as the product splits, 900 characters), best score.
    The pairs are the same either way (hard negatives picked with ``embedder``)."""
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
    if cross_encoder is not None:
        _cross_encoder_support_scores(pairs, cross_encoder, log)
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


def _cross_encoder_support_scores(pairs: list[dict[str, Any]], reranker, log=print) -> None:
    """Replace each pair's score by the product's cross-encoder support score (CrossEncoderSupport)."""
    from chatbot.stages.support import CrossEncoderSupport
    from corpus.segmenter import split_text

    texts = {
        d["_id"]: d["text"]
        for d in (json.loads(line) for line in (SHARED / "maternal" / "corpus.jsonl").read_text().splitlines() if line)
    }
    scorer = CrossEncoderSupport(reranker)
    by_doc: dict[str, list[dict[str, Any]]] = {}
    for p in pairs:
        by_doc.setdefault(p["doc"], []).append(p)
    log(f"support (cross-encoder): {len(pairs)} claims against their document's segments")
    for doc_id, rows in by_doc.items():
        evidence = [chunk for _, chunk in split_text(texts[doc_id], 900, 120)]
        for p, score in zip(rows, scorer([p["claim"] for p in rows], evidence), strict=True):
            p["score"] = float(score)


def _loo_lines(loo: dict[str, Any] | None, label: str, digits: int) -> list[str]:
    """Report lines of the maternal leave-one-out transfer check (none when it was not run)."""
    if not loo:
        return []
    a, t, b = loo["at_en_threshold"], loo["test_split_at_en_threshold"], loo["best"]
    return [
        "",
        f"Transfer check, maternal leave-one-out ({loo['queries']} MedQuAD maternal queries, each answered with "
        f"and without its document in a maternal-only index): at {label}{a['threshold']:.{digits}f}, answerable "
        f"queries answered {_f(a['in_scope_answered'])}, queries whose document was removed refused "
        f"{_f(a['out_of_scope_refused'])} (refusal precision {_f(a.get('refusal_precision'))}, recall "
        f"{_f(a.get('refusal_recall'))}; test split only: answered {_f(t['in_scope_answered'])}, refused "
        f"{_f(t['out_of_scope_refused'])}). Best on that corpus: {b['threshold']:.{digits}f} (balanced accuracy "
        f"{_f(b['balanced_accuracy'])}). Removing one document often leaves a sibling topic that still answers "
        "part of the query, so low refusal here is expected.",
    ]


def _support_kind_table(sup: dict[str, Any], score_label: str) -> list[str]:
    """The support report's table of test pairs by kind (kept share with and without the number rule)."""
    lines = [
        "",
        f"| pair kind (test split) | pairs | share kept | kept without the number rule | {score_label} |",
        "|---|---|---|---|---|",
    ]
    for pair_kind, k in sup["by_kind_on_test"].items():
        lines.append(
            f"| {pair_kind} | {k['pairs']} | {_f(k['kept_share'])} | {_f(k['kept_share_without_number_rule'])} | "
            f"{_f(k['median_score'])} |"
        )
    return lines


_HIDDEN = "(MEDIQA question, text not stored)"


def _misses_lines(rel: dict[str, Any], key: str, score: str, at: str) -> list[str]:
    """Report lines listing the dev questions misclassified at a threshold (at most 15 per language); MEDIQA
    questions are named by id only, never by their text."""
    lines: list[str] = []
    for lang in ("en", "it"):
        misses = rel[lang][key]
        if misses:
            lines += ["", f"Dev misses ({lang}) at {at}:", ""]
            lines += [
                f"- {'in-scope refused' if m['in_scope'] else 'out-of-scope answered'} ({m[score]}): "
                f"{_HIDDEN if m['text'].startswith(('mediqa#', 'mediqa-question')) else m['text'][:100]}"
                for m in misses[:15]
            ]
    return lines


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
    lines += _loo_lines(res.get("maternal_loo"), "the English threshold ", 3)
    lines += _misses_lines(rel, "misses_at_best", "dense", "the chosen threshold")
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
        ]
        lines += _support_kind_table(sup, "median cosine")
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


# -- cross-encoder thresholds ---------------------------------------------------------------------------------

# the cross-encoder reranks every question here, Italian ones too, to measure it as a scorer in both languages
# (the product gives non-English questions the fusion reranker: rerank.cross_encoder_languages)
CE_OVERRIDES: dict[str, Any] = {"rerank": {"kind": "cross-encoder", "cross_encoder_languages": ["en", "it"]}}


def measure_cross_encoder(data_dir: Path, log=print, support: bool = True, limit: int | None = None) -> dict[str, Any]:
    """safety.min_relevance_cross_encoder and compose.support_threshold_cross_encoder on the dev data.

    Relevance: the best cross-encoder score among the top-3 after the product's rerank stage (rerank.* settings
    as configured, kind forced to cross-encoder), on the relevance dev questions of both languages. One
    setting serves both languages, so the chosen threshold maximises the mean of the English and Italian
    balanced accuracies. Also reported at that threshold: each language alone, the hand-written questions
    only, the e5/bi-encoder rule (best cosine of the same top-3 at safety.min_relevance_dense[_it]) and both
    rules together (answer only when both pass). ``limit``: a smoke run on the first and last ``limit`` dev
    questions per language and the first ``limit`` maternal queries."""
    from chatbot.pipeline import Services
    from chatbot.settings import load_settings
    from chatbot.stages.rerank import CrossEncoderReranker

    settings = load_settings(paths={"data_dir": data_dir}, **CE_OVERRIDES)
    services = Services(settings)
    reranker = services.reranker
    if not isinstance(reranker, CrossEncoderReranker):
        raise SystemExit(f"no cross-encoder: {getattr(reranker, 'note', None)}")
    r = settings.rerank
    res: dict[str, Any] = {
        "embedder": settings.embedding.model,
        "reranker": {
            "model": str(r.model_path or "models/reranker"),
            "runtime": reranker.runtime,
            "note": reranker.note,
            "max_length": r.max_length,
            "candidates": r.candidates,
            "top_k": settings.retrieval.top_k,
        },
    }
    data: dict[str, dict[str, np.ndarray]] = {}
    for lang in ("en", "it"):
        texts, labels, hand = dev_questions(lang)
        if limit:
            keep = [*range(min(limit, len(texts))), *range(max(limit, len(texts) - limit), len(texts))]
            texts, labels, hand = ([x[i] for i in keep] for x in (texts, labels, hand))
        log(f"relevance {lang} (cross-encoder): {len(texts)} questions")
        scores = relevance_scores(services, texts)
        data[lang] = {
            "ce": np.array([s["cross-encoder"] for s in scores], dtype=float),
            "dense": np.array([s["dense"] for s in scores], dtype=float),
            "lab": np.array(labels, dtype=bool),
            "hand": np.array(hand, dtype=bool),
            "top1_same_language": np.array([s["top1_language"] == lang for s in scores]),
            "dense_top1_same_language": np.array([s["dense_top1_language"] == lang for s in scores]),
        }
        data[lang]["texts"] = texts  # type: ignore[assignment]
    values = np.unique(np.round(np.concatenate([d["ce"] for d in data.values()]), 4))
    joint = []
    for t in [*values.tolist(), float(values.max()) + 1e-4]:
        rows = {lang: _grid_row(d["ce"][d["lab"]], d["ce"][~d["lab"]], t) for lang, d in data.items()}
        joint.append(
            {"threshold": t, "mean_balanced_accuracy": float(np.mean([x["balanced_accuracy"] for x in rows.values()]))}
        )
    best = max(range(len(joint)), key=lambda i: (joint[i]["mean_balanced_accuracy"], -joint[i]["threshold"]))
    # halfway down to the next observed score: the same dev result, less tied to one question's score
    chosen = round((joint[best - 1]["threshold"] + joint[best]["threshold"]) / 2, 4) if best else joint[0]["threshold"]
    relevance: dict[str, Any] = {"chosen_threshold": chosen, "joint_grid": joint}
    embedder = settings.embedding.model
    for lang, d in data.items():
        ce, dense, lab, hand = d["ce"], d["dense"], d["lab"], d["hand"]
        table = settings.safety.min_relevance_dense_it if lang == "it" else settings.safety.min_relevance_dense
        t_dense = table.get(embedder)
        entry: dict[str, Any] = {
            "in_scope": int(lab.sum()),
            "out_of_scope_hand_written": int((~lab & hand).sum()),
            "out_of_scope_mediqa": int((~lab & ~hand).sum()),
            "at_chosen": _grid_row(ce[lab], ce[~lab], chosen),
            "hand_written_only_at_chosen": _grid_row(ce[lab & hand], ce[~lab & hand], chosen),
            "best_for_this_language": _best(_exact_grid(ce[lab], ce[~lab])),
            # in-scope questions whose first link is in the question's language: reranked vs bi-encoder order
            "in_scope_top1_in_question_language": float(d["top1_same_language"][lab].mean()),
            "in_scope_top1_in_question_language_bi_encoder": float(d["dense_top1_same_language"][lab].mean()),
        }
        if t_dense is not None:
            both = np.minimum(ce - chosen, dense - t_dense)  # >= 0 when both rules answer
            entry["dense_rule"] = {"threshold": t_dense, **_grid_row(dense[lab], dense[~lab], t_dense)}
            lo, hi = _span(dense)
            entry["dense_rule_best"] = _best(_grid(dense[lab], dense[~lab], lo, hi, 0.005))
            entry["both_rules"] = _grid_row(both[lab], both[~lab], 0.0)
        entry["misses_at_chosen"] = [
            {"text": t if h else f"mediqa#{i}", "in_scope": bool(y), "cross-encoder": round(float(c), 4)}
            for i, (t, y, c, h) in enumerate(zip(d["texts"], lab, ce, hand, strict=True))
            if (c >= chosen) != bool(y)
        ]
        entry["scores"] = [
            {"id": t if h else f"mediqa#{i}", "in_scope": bool(y), "cross-encoder": round(float(c), 4)}
            for i, (t, y, c, h) in enumerate(zip(d["texts"], lab, ce, hand, strict=True))
        ]
        relevance[lang] = entry
    res["relevance"] = relevance
    res["maternal_loo"] = measure_maternal_loo(data_dir, {"en": chosen}, log, "cross-encoder", limit, **CE_OVERRIDES)
    if support:
        res["support"] = measure_support(services.embedder, log, cross_encoder=reranker)
    return res


def write_cross_encoder_report(res: dict[str, Any], out_dir: Path, command: str) -> Path:
    rel, rr = res["relevance"], res["reranker"]
    t = rel["chosen_threshold"]
    lines = [
        "# Thresholds of the safety and compose stages with the cross-encoder reranker",
        "",
        f"Command: `{command}`",
        "",
        f"Reranker: `{rr['model']}`, runtime {rr['runtime']}, max_length {rr['max_length']}, first "
        f"{rr['candidates']} of the {res['embedder']} bi-encoder's top {rr['top_k']} rescored (the product's rerank "
        "stage). Served corpus: the demo cards. Dev questions: `evaluation/redteam/relevance_dev.jsonl` "
        "(hand-written, not the red-team set) plus MEDIQA / MEDIQA-it consumer questions on non-maternal topics as "
        "out-of-scope (named by position only). 'Refusal' is the positive class. Here the cross-encoder reranks "
        "the Italian questions too, to measure it in both languages; the product gives non-English questions the "
        "fusion reranker (`rerank.cross_encoder_languages`), whose thresholds are in `redteam-thresholds-e5.md`.",
        "",
        "## Relevance threshold (`safety.min_relevance_cross_encoder`)",
        "",
        f"Score: the best cross-encoder score (0-1) among the top-3 segments. One threshold serves both "
        f"languages; **{t:.4f}** maximises the mean of the English and Italian balanced accuracies.",
        "",
        "| language | rule | in-scope | out-of-scope (hand / MEDIQA) | in-scope answered | out-of-scope refused | "
        "refusal precision | balanced accuracy | hand-written only: answered / refused |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for lang in ("en", "it"):
        e = rel[lang]
        a, h = e["at_chosen"], e["hand_written_only_at_chosen"]
        n = f"{e['in_scope']} | {e['out_of_scope_hand_written']} / {e['out_of_scope_mediqa']}"
        lines.append(
            f"| {lang} | cross-encoder >= {t:.4f} | {n} | {_f(a['in_scope_answered'])} | "
            f"{_f(a['out_of_scope_refused'])} | {_f(a['refusal_precision'])} | {_f(a['balanced_accuracy'])} | "
            f"{_f(h['in_scope_answered'])} / {_f(h['out_of_scope_refused'])} |"
        )
        if "dense_rule" in e:
            dr, b = e["dense_rule"], e["both_rules"]
            lines.append(
                f"| {lang} | {res['embedder']} cosine >= {dr['threshold']} (same top-3) | {n} | "
                f"{_f(dr['in_scope_answered'])} | {_f(dr['out_of_scope_refused'])} | {_f(dr['refusal_precision'])} | "
                f"{_f(dr['balanced_accuracy'])} | |"
            )
            lines.append(
                f"| {lang} | both | {n} | {_f(b['in_scope_answered'])} | {_f(b['out_of_scope_refused'])} | "
                f"{_f(b['refusal_precision'])} | {_f(b['balanced_accuracy'])} | |"
            )
    lines += [
        "",
        "First link in the question's language (in-scope questions; the demo corpus has Italian and English "
        "cards): "
        + "; ".join(
            f"{lang}: {_f(rel[lang]['in_scope_top1_in_question_language'])} after the cross-encoder, "
            f"{_f(rel[lang]['in_scope_top1_in_question_language_bi_encoder'])} in the bi-encoder's order"
            for lang in ("en", "it")
        )
        + ".",
    ]
    for lang in ("en", "it"):
        if "dense_rule_best" in rel[lang]:
            b = rel[lang]["dense_rule_best"]
            lines.append(
                f"\nBest {res['embedder']} cosine threshold, cross-encoder's top-3 ({lang}): {b['threshold']:.3f} "
                f"(balanced accuracy {_f(b['balanced_accuracy'])}, in-scope answered {_f(b['in_scope_answered'])}, "
                f"out-of-scope refused {_f(b['out_of_scope_refused'])})."
            )
    for lang in ("en", "it"):
        b = rel[lang]["best_for_this_language"]
        lines.append(
            f"\nBest for {lang} alone: {b['threshold']:.4f} (balanced accuracy {_f(b['balanced_accuracy'])}, "
            f"in-scope answered {_f(b['in_scope_answered'])}, out-of-scope refused {_f(b['out_of_scope_refused'])})."
        )
    lines += _loo_lines(res.get("maternal_loo"), "", 4)
    lines += _misses_lines(rel, "misses_at_chosen", "cross-encoder", f"{t:.4f}")
    sup = res.get("support")
    if sup:
        b, ts, tn = sup["best_on_dev"], sup["test_at_best"], sup["test_without_number_rule_at_best"]
        lines += [
            "",
            "## Support threshold (`compose.support_threshold_cross_encoder`)",
            "",
            "A generated sentence is kept when its best cross-encoder score against the linked segments reaches the "
            "threshold and every number in it occurs in them (`CrossEncoderSupport`: the sentence in the question "
            "slot against every sentence and every whole segment of the evidence document, best score; against "
            "whole segments only it did worse). Pairs from the maternal corpus, the same "
            "as the bi-encoder's (`redteam-thresholds-<embedder>.md`): dev split documents tune "
            f"({sup['pairs']['dev']} pairs), test split documents report ({sup['pairs']['test']} pairs). "
            "'Unsupported' is the positive class (what the validator removes).",
            "",
            f"- best on dev (F1): threshold {b['threshold']:.3f} (precision {_f(b['precision'])}, recall "
            f"{_f(b['recall'])})",
            f"- test split at that threshold: precision {_f(ts['precision'])}, recall {_f(ts['recall'])} "
            f"(without the number rule: precision {_f(tn['precision'])}, recall {_f(tn['recall'])})",
        ]
        lines += _support_kind_table(sup, "median score")
        lines += [
            "",
            "Caveats: the cross-encoder was trained for question-passage relevance, not entailment; supported "
            "claims here are mechanical rewrites of certified sentences, not LLM paraphrases.",
        ]
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "redteam-thresholds-crossencoder.md"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    slim = json.loads(json.dumps(res, default=str))
    (out_dir / "redteam-thresholds-crossencoder.json").write_text(json.dumps(slim, indent=1) + "\n", encoding="utf-8")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evaluation.redteam.thresholds", description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", type=Path, default=None, help="default /tmp/redteam-EMBEDDER")
    parser.add_argument("--out", type=Path, default=results_dir())
    parser.add_argument("--skip-support", action="store_true")
    parser.add_argument(
        "--cross-encoder",
        action="store_true",
        help="the cross-encoder's thresholds instead (redteam-thresholds-crossencoder.md)",
    )
    parser.add_argument("--limit", type=int, default=None, help="--cross-encoder smoke run: fewer questions")
    args = parser.parse_args(argv)
    log = lambda *a: print(*a, file=sys.stderr)  # noqa: E731
    args.data_dir = args.data_dir or default_data_dir()
    ensure_demo_index(args.data_dir, log)
    if args.cross_encoder:
        import os

        res = measure_cross_encoder(args.data_dir, log, support=not args.skip_support, limit=args.limit)
        env = " ".join(f"{k}={v}" for k, v in sorted(os.environ.items()) if k.startswith("CHATBOT_"))
        command = f"{env} python -m evaluation.redteam.thresholds {' '.join(argv or sys.argv[1:])}".strip()
        path = write_cross_encoder_report(res, args.out, command)
        print(path.read_text(encoding="utf-8"))
        return 0
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

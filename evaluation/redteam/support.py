"""The support threshold (``compose.support_threshold*``): supported and unsupported claim pairs from the
maternal corpus (dev documents tune, test documents report) scored by a bi-encoder or the cross-encoder."""

from __future__ import annotations

import json
import random
import re
from typing import Any

import numpy as np

from evaluation.redteam.relevance import SHARED, _at, _span
from evaluation.splits import split_of


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

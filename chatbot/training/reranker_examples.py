"""Training examples and validation for the reranker: hard-negative mining per query, the held-out validation
items, document-level metrics (P@1, MRR@10, nDCG@10) and the sentence-transformers evaluator that reports them."""

from __future__ import annotations

import json
import math
import random
import sys
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from chatbot.training.reranker_data import Pool, Query, embed_cached, is_validation, load_material

# ------------------------------------------------------------------------------------ pairs / mining


N_HARD = 3  # hard negatives per training example (one positive + N_HARD in a group)


def _best_segment(pool: Pool, doc_id: str, cos: np.ndarray) -> int:
    segs = pool.doc_segs[doc_id]
    return max(segs, key=lambda i: cos[i])


@dataclass
class Example:
    group: str
    question: str
    positive: str
    negatives: list[str]  # hard negatives, hardest first
    easy: str  # a random pool segment (used by the pointwise loss; in-batch negatives play it for listwise)


def mine_examples(
    query: Query, pool: Pool, qvec: np.ndarray, rng: random.Random, n_hard: int = N_HARD
) -> list[Example]:
    """One example per relevant doc (its best segment per the bi-encoder) with ``n_hard`` negatives: judged
    non-relevant answers first (MEDIQA), then the bi-encoder's top non-relevant segments, one per doc."""
    cos = pool.vectors @ qvec
    positives, judged_neg, pos_cos = [], [], []
    for doc_id, score in sorted(query.judged.items()):
        if doc_id not in pool.doc_segs:
            continue
        seg = _best_segment(pool, doc_id, cos)
        (positives if score >= 1 else judged_neg).append(pool.seg_text[seg])
        if score >= 1:
            pos_cos.append(cos[seg])
    if not positives:
        return []
    relevant_hashes = {pool.doc_hash[d] for d in query.relevant if d in pool.doc_hash}
    # MEDIQA answers to other questions on the same topic may well answer this one: skip near-ties.
    ceiling = 0.97 * max(pos_cos) if query.corpus == "mediqa" else 2.0
    used_docs = set(query.judged)
    mined: list[str] = []
    wanted = max(n_hard, n_hard * len(positives) - len(judged_neg))
    for seg in np.argsort(-cos):
        doc_id = pool.seg_doc[seg]
        if doc_id in used_docs or pool.doc_hash[doc_id] in relevant_hashes or cos[seg] > ceiling:
            continue
        used_docs.add(doc_id)
        mined.append(pool.seg_text[seg])
        if len(mined) >= wanted:
            break
    rng.shuffle(judged_neg)
    negatives = judged_neg + mined
    if len(negatives) < n_hard:
        return []
    easy = []
    while len(easy) < len(positives):
        seg = rng.randrange(len(pool.seg_text))
        if pool.seg_doc[seg] not in used_docs and pool.doc_hash[pool.seg_doc[seg]] not in relevant_hashes:
            easy.append(pool.seg_text[seg])
    out = []
    for i, positive in enumerate(positives):  # rotate so each positive meets different negatives
        chosen = [negatives[(i * n_hard + j) % len(negatives)] for j in range(n_hard)]
        out.append(Example(query.group, query.text, positive, chosen, easy[i]))
    return out


@dataclass
class ValItem:
    group: str
    question: str
    passages: list[str]
    docs: list[str]
    gains: dict[str, int]  # doc id → graded relevance
    dense: np.ndarray  # bi-encoder cosine of each passage (baseline ranking)


def validation_item(query: Query, pool: Pool, qvec: np.ndarray, n_candidates: int) -> ValItem | None:
    """The bi-encoder's top segments from the pool plus the best segment of every relevant doc."""
    cos = pool.vectors @ qvec
    chosen = list(np.argsort(-cos)[:n_candidates])
    for doc_id in query.relevant:
        if doc_id in pool.doc_segs:
            seg = _best_segment(pool, doc_id, cos)
            if seg not in chosen:
                chosen.append(seg)
    relevant_hashes = {pool.doc_hash[d] for d in query.relevant if d in pool.doc_hash}
    gains = dict(query.relevant)
    for seg in chosen:  # an identical copy of a relevant answer counts as relevant (MedQuAD convention)
        doc_id = pool.seg_doc[seg]
        if doc_id not in gains and pool.doc_hash[doc_id] in relevant_hashes:
            gains[doc_id] = 1
    if not any(pool.seg_doc[s] in gains for s in chosen):
        return None
    return ValItem(
        query.group,
        query.text,
        [pool.seg_text[s] for s in chosen],
        [pool.seg_doc[s] for s in chosen],
        gains,
        cos[chosen].astype(np.float32),
    )


def doc_metrics(scores: np.ndarray, docs: list[str], gains: dict[str, int], k: int = 10) -> dict[str, float]:
    """P@1, MRR@k and nDCG@k after keeping each document's best segment (what the product shows)."""
    ranked: list[str] = []
    for i in np.argsort(-np.asarray(scores), kind="stable"):
        if docs[i] not in ranked:
            ranked.append(docs[i])
    top = ranked[:k]
    mrr = next((1.0 / (r + 1) for r, d in enumerate(top) if gains.get(d, 0) >= 1), 0.0)
    dcg = sum((2 ** gains.get(d, 0) - 1) / math.log2(r + 2) for r, d in enumerate(top))
    ideal = sorted(gains.values(), reverse=True)[:k]
    idcg = sum((2**g - 1) / math.log2(r + 2) for r, g in enumerate(ideal))
    return {"p@1": float(gains.get(ranked[0], 0) >= 1), f"mrr@{k}": mrr, f"ndcg@{k}": dcg / idcg if idcg else 0.0}


def summarise(items: list[ValItem], all_scores: list[np.ndarray]) -> dict[str, float]:
    """Per-group means and their macro average ("all_*")."""
    per_group: dict[str, list[dict[str, float]]] = defaultdict(list)
    for item, scores in zip(items, all_scores, strict=True):
        per_group[item.group].append(doc_metrics(scores, item.docs, item.gains))
    out: dict[str, float] = {}
    for group, rows in sorted(per_group.items()):
        for metric in rows[0]:
            out[f"{group}_{metric}"] = round(float(np.mean([r[metric] for r in rows])), 4)
    for metric in ("p@1", "mrr@10", "ndcg@10"):
        out[f"all_{metric}"] = round(float(np.mean([out[f"{g}_{metric}"] for g in per_group])), 4)
    return out


def build_validation(
    queries: Sequence[Query],
    pools: dict[str, Pool],
    qvecs: np.ndarray,
    seed: int = 42,
    per_group: int = 60,
    n_candidates: int = 15,
) -> list[ValItem]:
    """The held-out validation items: up to ``per_group`` validation queries per group, in a seeded order."""
    by_group: dict[str, list[tuple[Query, np.ndarray]]] = defaultdict(list)
    for query, qvec in zip(queries, qvecs, strict=True):
        if is_validation(query.qid):
            by_group[query.group].append((query, qvec))
    items: list[ValItem] = []
    for group, rows in sorted(by_group.items()):
        random.Random(seed).shuffle(rows)
        for query, qvec in rows:
            if sum(it.group == group for it in items) == per_group:
                break
            item = validation_item(query, pools[query.corpus], qvec, n_candidates)
            if item is not None:
                items.append(item)
    return items


def load_validation(
    data_root: Path, seed: int = 42, cache_dir: Path = Path("/tmp/reranker-cache"), threads: int = 1
) -> list[ValItem]:
    """The validation items of a default training run (same pools and seed), e.g. for benchmarks. Bi-encoder
    vectors come from (and go to) ``cache_dir``; a cold cache embeds ~10,000 segments (minutes)."""
    from chatbot.embedders import load_embedder

    queries, pools = load_material(data_root, random.Random(seed), 600, italian=True)
    embedder = load_embedder("minilm", threads=threads)
    for pool in pools.values():
        pool.vectors = embed_cached(embedder, pool.seg_embed, cache_dir / f"{pool.name}-passages.npz")
    qvecs = embed_cached(embedder, [q.text for q in queries], cache_dir / "queries.npz", queries=True)
    return build_validation(queries, pools, qvecs, seed)


def make_evaluator(items: list[ValItem], batch_size: int):
    from sentence_transformers.base.evaluation.evaluator import BaseEvaluator

    class DocRerankEvaluator(BaseEvaluator):
        """Reranks each validation query's candidates; document-level metrics per dataset."""

        def __init__(self) -> None:
            super().__init__()
            self.primary_metric = "all_mrr@10"
            self.history: list[dict[str, float]] = []

        def __call__(self, model, output_path=None, epoch: int = -1, steps: int = -1) -> dict[str, float]:
            pairs = [(it.question, p) for it in items for p in it.passages]
            flat = model.predict(pairs, batch_size=batch_size, show_progress_bar=False, convert_to_numpy=True)
            scores, start = [], 0
            for it in items:
                scores.append(np.asarray(flat[start : start + len(it.passages)]))
                start += len(it.passages)
            metrics = summarise(items, scores)
            self.history.append({"epoch": epoch, "steps": steps, **metrics})
            print(f"\nvalidation (epoch {epoch}, step {steps}): {json.dumps(metrics)}", file=sys.stderr, flush=True)
            return metrics

    return DocRerankEvaluator()

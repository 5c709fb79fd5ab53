"""The reranker's training material: the train-split queries of every dataset (15% held out for validation,
by id), the per-corpus candidate pools of product-sized segments, and the bi-encoder vectors cached under /tmp."""

from __future__ import annotations

import csv
import hashlib
import json
import random
import sys
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from chatbot.splits import split_of

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
    data_root: Path,
    rng: random.Random,
    pool_random: int,
    italian: bool,
    with_title: bool = True,
    negconstraint: bool = True,
    medquad_segments: int = 2,
    medquad: bool = True,
) -> tuple[list[Query], dict[str, Pool]]:
    """Training-split queries of every dataset, and the per-corpus candidate pools (``medquad_segments``: the
    first segments of each MedQuAD document kept in its pool). Without ``medquad``, MedQuAD, maternal and
    NegConstraint are left out (MEDIQA and MEDIQA-it only)."""
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

    if not medquad:
        return queries, pools
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
            pool.add(doc_id, docs[doc_id].get("title", ""), docs[doc_id]["text"], max_segments=medquad_segments)

    if not negconstraint:
        return queries, pools
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


def prefill_from_index(collection: str, cache_file: Path, embedding_model: str) -> int:
    """Copy the vectors of an already built index (e.g. the harness's ``eval-<key>`` collection of the same
    corpus and embedder) into ``embed_cached``'s cache, keyed by the text the index embedded; returns how many.
    The index's embedder must be the miner (its collection metadata ``embedding_model`` is checked)."""
    import chromadb

    from chatbot.index import SegmentIndex
    from chatbot.settings import load_settings
    from corpus.segmenter import embedding_text

    client = chromadb.PersistentClient(path=str(load_settings().paths.data_dir / "chroma"))
    coll = client.get_collection(collection)
    if coll.metadata.get("embedding_model") != embedding_model:
        built_by = coll.metadata.get("embedding_model")
        raise ValueError(f"index {collection} holds {built_by!r} vectors, not {embedding_model!r}")

    class _Dim:  # SegmentIndex checks the embedder's name; all_segments needs its dimension
        name = embedding_model
        dim = int(coll.metadata.get("embedding_dim", 384))

    segments, vectors = SegmentIndex(client, collection, _Dim()).all_segments()
    cache: dict[str, np.ndarray] = {}
    if cache_file.exists():
        with np.load(cache_file) as data:
            cache = dict(zip(data["keys"].tolist(), data["vectors"], strict=True))
    for segment, vec in zip(segments, vectors, strict=True):
        cache.setdefault(hashlib.sha1(embedding_text(segment).encode("utf-8")).hexdigest(), vec)
    cache_file.parent.mkdir(parents=True, exist_ok=True)
    np.savez(cache_file, keys=np.array(list(cache)), vectors=np.stack(list(cache.values())))
    return len(segments)

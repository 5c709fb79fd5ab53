"""The query adapter's training material: train-split questions with their graded positives, e5 vectors of the
questions and of the passages they are searched among, and hard negatives mined by the product's own first
stage (exact e5 cosine top-k over the same index the harness builds).

Passage vectors are read back from the harness's ``eval-<key>`` indexes (free) where they exist; MedQuAD's full
index (33k segments) is not built, so its questions are a sample searched among a pool (their positives, sibling
sections and random others) embedded once. Everything is cached under ``~/.cache/certified-chatbot/qadapter``.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from chatbot.splits import split_of
from chatbot.training.reranker_data import GENERIC_QUERY_RELEVANT, Pool, _read_jsonl, _read_qrels, embed_cached

CACHE_DIR = Path.home() / ".cache" / "certified-chatbot" / "qadapter"
VAL_SHARE = 20  # percent of the training questions held out for validation (by id)
MINE_K = 50  # the product's first stage retrieves 50 candidates


def is_validation(query_id: str) -> bool:
    """Deterministic 20% of the training questions, by id (MEDIQA and MEDIQA-it share ids, so they agree)."""
    return int(hashlib.sha1(f"qadapter-val:{query_id}".encode()).hexdigest(), 16) % 100 < VAL_SHARE


@dataclass
class Corpus:
    """Passages one group of questions is searched among: segment → document id, and their e5 vectors."""

    name: str
    seg_doc: list[str]
    vectors: np.ndarray  # (segments, 384), unit rows


@dataclass
class Question:
    key: str  # "<set>/<id>"
    qid: str
    text: str
    group: str  # metric group: mediqa, mediqa-it, maternal, medquad, negconstraint
    corpus: str
    positives: dict[str, int]  # doc id → grade (>= 1)
    judged: dict[str, int]

    @property
    def validation(self) -> bool:
        return is_validation(self.qid)


def questions_of(
    data_root: Path, name: str, corpus: str, skip_generic: bool = False, split: str = "train"
) -> list[Question]:
    """The set's ``split`` questions that have a relevant document (training reads only "train")."""
    qrels = _read_qrels(data_root / name / "qrels.tsv")
    out = []
    for q in _read_jsonl(data_root / name / "queries.jsonl"):
        if split_of(q["_id"]) != split:
            continue
        judged = qrels.get(q["_id"], {})
        pos = {d: s for d, s in judged.items() if s >= 1}
        if not pos or (skip_generic and len(pos) > GENERIC_QUERY_RELEVANT):
            continue
        out.append(Question(f"{name}/{q['_id']}", q["_id"], q["text"], name, corpus, pos, judged))
    return out


def _index_corpus(data_root: Path, name: str) -> Corpus:
    """Every segment and stored vector of the harness's e5-onnx index of ``name`` (reading it back is free)."""
    from chatbot.index import SegmentIndex, corpus_key, make_client
    from chatbot.settings import load_settings

    s = load_settings()
    if s.embedding.model != "e5-onnx":
        raise ValueError(f"the query adapter is trained over e5-onnx vectors, not {s.embedding.model!r}")
    key = corpus_key([data_root / name / "corpus.jsonl"], "e5-onnx", f"{s.corpus.segment_max_chars}")
    client = make_client(s.paths.data_dir, s.index.server_url)

    class _Name:  # SegmentIndex checks the embedder's name
        name = "multilingual-e5-small-onnx-int8"
        dim = 384

    try:
        segments, vectors = SegmentIndex(client, f"eval-{key}", _Name()).all_segments()
    except Exception as exc:
        raise ValueError(
            f"no e5-onnx index of {name} (eval-{key}); build it once with "
            f"`chatbot eval retrieval --data {data_root / name} --pipeline dense --limit 1`"
        ) from exc
    return Corpus(name, [seg.doc_id for seg in segments], np.asarray(vectors, dtype=np.float32))


def medquad_pool(
    data_root: Path, questions: list[Question], rng: random.Random, pool_random: int, cache: str = "medquad-passages"
) -> Corpus:
    """MedQuAD's sampled questions' positives and sibling sections plus random documents (first 2 segments
    each, product-sized), embedded once by e5-onnx and cached."""
    from chatbot.embedders import load_embedder

    docs = {d["_id"]: d for d in _read_jsonl(data_root / "medquad" / "corpus.jsonl")}
    by_prefix: dict[str, list[str]] = {}
    for doc_id in sorted(docs):
        by_prefix.setdefault(doc_id.rsplit("_Sec", 1)[0], []).append(doc_id)
    wanted: list[str] = []
    for q in questions:
        for doc_id in sorted(q.positives):
            wanted.append(doc_id)
            wanted.extend(by_prefix.get(doc_id.rsplit("_Sec", 1)[0], [])[:3])
    others = sorted(set(docs) - set(wanted))
    wanted.extend(rng.sample(others, min(pool_random, len(others))))
    pool = Pool("medquad")
    for doc_id in wanted:
        if doc_id in docs:
            pool.add(doc_id, docs[doc_id].get("title", ""), docs[doc_id]["text"], max_segments=2)
    vectors = embed_cached(load_embedder("e5-onnx"), pool.seg_embed, CACHE_DIR / f"{cache}.npz")
    return Corpus("medquad", list(pool.seg_doc), vectors)


def load_questions_and_corpora(
    data_root: Path, seed: int = 13, medquad_questions: int = 300, pool_random: int = 600
) -> tuple[list[Question], dict[str, Corpus]]:
    """Train-split questions of every set (MEDIQA-it's paired with the same English answers) and the corpora."""
    rng = random.Random(seed)
    questions: list[Question] = []
    corpora: dict[str, Corpus] = {"mediqa": _index_corpus(data_root, "mediqa")}
    questions += questions_of(data_root, "mediqa", "mediqa")
    questions += questions_of(data_root, "mediqa-it", "mediqa")
    corpora["maternal"] = _index_corpus(data_root, "maternal")
    questions += questions_of(data_root, "maternal", "maternal")
    corpora["negconstraint"] = _index_corpus(data_root, "negconstraint")
    questions += questions_of(data_root, "negconstraint", "negconstraint")
    medquad = questions_of(data_root, "medquad", "medquad", skip_generic=True)
    medquad = sorted(rng.sample(medquad, min(medquad_questions, len(medquad))), key=lambda q: q.key)
    corpora["medquad"] = medquad_pool(data_root, medquad, rng, pool_random)
    questions += medquad
    return questions, corpora


@dataclass
class Example:
    """One question's training row: its vector, positive segments (best segment of each relevant document)
    with grade weights, and mined hard negatives (top-k segments of non-relevant documents)."""

    question: Question
    vector: np.ndarray
    positives: list[int]
    weights: list[float]
    negatives: list[int]


def mine(questions: list[Question], corpora: dict[str, Corpus], hard: int = 30) -> list[Example]:
    """Vectors of every question (cached) and its positives and hard negatives under raw e5 cosine."""
    from chatbot.embedders import load_embedder

    vectors = embed_cached(
        load_embedder("e5-onnx"), [q.text for q in questions], CACHE_DIR / "questions.npz", queries=True
    )
    out = []
    for q, v in zip(questions, vectors, strict=True):
        c = corpora[q.corpus]
        scores = c.vectors @ v
        order = np.argsort(-scores, kind="stable")
        best: dict[str, int] = {}
        for i in order:
            best.setdefault(c.seg_doc[i], int(i))
        pos = [best[d] for d in sorted(q.positives) if d in best]
        if not pos:
            continue
        negs = [int(i) for i in order[:MINE_K] if c.seg_doc[i] not in q.positives][:hard]
        out.append(Example(q, v, pos, [float(q.positives[c.seg_doc[i]]) for i in pos], negs))
    return out

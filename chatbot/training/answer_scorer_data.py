"""Weak (question, sentence, answers?) labels for the trained answer scorer, from public TRAIN splits only.

The scorer must tell the sentence that ANSWERS from a sentence on the same topic, so the negatives are
topical on purpose:

- MedQuAD (English): a question's answer opens with the sentence that answers it ("X occurs in about 1 in
  2,500 people" for "How many people are affected by X?"): its first sentence (a restated question such as
  GARD's "How might X be treated?" skipped) is the positive. The negatives are the first sentences of the
  OTHER sections of the same topic (the causes, the inheritance, the treatment of X when the frequency was
  asked: same subject, not the answer), and one first sentence of another topic. Questions whose answer is
  shared by many (boilerplate "These resources address ...") are skipped.
- MEDIQA (English, graded answers) and MEDIQA-it (the same questions in Italian, English answers): the first
  sentence of an answer graded excellent (qrels 2) is a positive, that of an answer judged incorrect or only
  related (qrels 0) a negative, for the English and for the Italian question.

Only queries whose ``chatbot.splits.split_of`` is 'train' are used, and no sentence of a document judged for
a test query. Texts stay in memory (the vector cache outside the repository keys vectors by hash); none is
committed.
"""

from __future__ import annotations

import csv
import hashlib
import json
import random
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from chatbot.sentences import split_sentences
from chatbot.splits import split_of

GENERIC_QUERY_RELEVANT = 5  # MedQuAD questions with more relevant answers have boilerplate answers
MIN_CHARS, MAX_CHARS = 25, 400  # a sentence the composer could open a reply with
MAX_HARD_NEGATIVES = 4
VAL_SHARE = 15  # percent of the training questions held out to choose the regularisation, by id


@dataclass(frozen=True)
class Example:
    qid: str  # the query id: decides train/validation
    source: str  # medquad, mediqa, mediqa-it
    question: str
    sentence: str
    label: int  # 1 answers the question, 0 does not


def is_validation(query_id: str) -> bool:
    """Deterministic VAL_SHARE% of the training questions, by id (MEDIQA and MEDIQA-it agree)."""
    return int(hashlib.sha1(f"answer-val:{query_id}".encode()).hexdigest(), 16) % 100 < VAL_SHARE


def _jsonl(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _qrels(path: Path) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = defaultdict(dict)
    with path.open(encoding="utf-8") as fh:
        for row in csv.DictReader(fh, delimiter="\t"):
            out[row["query-id"]][row["corpus-id"]] = int(row["score"])
    return dict(out)


def lead_sentence(text: str, title: str = "") -> str | None:
    """The first sentence that could open a reply: a restated question, a bare heading or a "Title:" prefix
    skipped; None when the text has none of a usable length."""
    if title and text.startswith(f"{title}:"):
        text = text[len(title) + 1 :]
    for sentence in split_sentences(text)[:4]:
        if sentence.endswith("?") or sentence.endswith(":"):
            continue
        if MIN_CHARS <= len(sentence) <= MAX_CHARS:
            return sentence
    return None


def _topic(doc_id: str) -> str:
    return doc_id.rsplit("_Sec", 1)[0]


def medquad_examples(root: Path, rng: random.Random) -> list[Example]:
    """Positives: the lead sentence of a training question's answer; negatives: the lead sentences of the
    same topic's other sections and of one other topic."""
    qrels = _qrels(root / "qrels.tsv")
    queries = _jsonl(root / "queries.jsonl")
    test_docs = {d for q in queries if split_of(q["_id"]) != "train" for d in qrels.get(q["_id"], {})}
    docs = {d["_id"]: d for d in _jsonl(root / "corpus.jsonl")}
    by_topic: dict[str, list[str]] = defaultdict(list)
    for doc_id in sorted(docs):
        if doc_id not in test_docs:
            by_topic[_topic(doc_id)].append(doc_id)
    topics = sorted(by_topic)
    out: list[Example] = []
    for q in queries:
        qid = q["_id"]
        relevant = [d for d, s in qrels.get(qid, {}).items() if s >= 1]
        if split_of(qid) != "train" or qid not in docs or len(relevant) > GENERIC_QUERY_RELEVANT:
            continue
        positive = lead_sentence(docs[qid]["text"])
        if positive is None:
            continue
        out.append(Example(qid, "medquad", q["text"], positive, 1))
        siblings = [d for d in by_topic[_topic(qid)] if d != qid and d not in relevant]
        negatives = [s for s in (lead_sentence(docs[d]["text"]) for d in siblings) if s and s != positive]
        rng.shuffle(negatives)
        other = by_topic[topics[rng.randrange(len(topics))]]
        easy = lead_sentence(docs[other[0]]["text"]) if other and _topic(other[0]) != _topic(qid) else None
        for sentence in negatives[:MAX_HARD_NEGATIVES] + ([easy] if easy else []):
            out.append(Example(qid, "medquad", q["text"], sentence, 0))
    return out


def mediqa_examples(root: Path, italian_root: Path | None) -> list[Example]:
    """Lead sentences of excellent answers (positives) and of incorrect/related ones (negatives), for the
    English question and, when MEDIQA-it is there, its Italian version."""
    qrels = _qrels(root / "qrels.tsv")
    docs = {d["_id"]: d for d in _jsonl(root / "corpus.jsonl")}
    texts = {q["_id"]: {"mediqa": q["text"]} for q in _jsonl(root / "queries.jsonl")}
    if italian_root is not None and (italian_root / "queries.jsonl").is_file():
        for q in _jsonl(italian_root / "queries.jsonl"):
            texts.setdefault(q["_id"], {})["mediqa-it"] = q["text"]
    test_docs = {d for qid in texts if split_of(qid) != "train" for d in qrels.get(qid, {})}
    out: list[Example] = []
    for qid in sorted(texts):
        if split_of(qid) != "train":
            continue
        for doc_id, score in sorted(qrels.get(qid, {}).items()):
            if doc_id not in docs or doc_id in test_docs or score == 1:
                continue
            sentence = lead_sentence(docs[doc_id]["text"], docs[doc_id].get("title", ""))
            if sentence is None:
                continue
            for source, question in sorted(texts[qid].items()):
                out.append(Example(qid, source, question, sentence, 1 if score >= 2 else 0))
    return out


def load_examples(data_root: Path, seed: int = 0) -> list[Example]:
    """Every weak example of the training questions, in a fixed order."""
    rng = random.Random(seed)
    out: list[Example] = []
    if (data_root / "medquad").is_dir():
        out += medquad_examples(data_root / "medquad", rng)
    if (data_root / "mediqa").is_dir():
        italian = data_root / "mediqa-it"
        out += mediqa_examples(data_root / "mediqa", italian if italian.is_dir() else None)
    if not out:
        raise FileNotFoundError(f"no MedQuAD or MEDIQA data under {data_root}")
    return out

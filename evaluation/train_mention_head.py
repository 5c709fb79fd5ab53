"""Train the "does this passage discuss X?" head (issue 19, item 2) on TRAIN splits only.

Pairs (term X, text) with a label 1 (the text discusses X) or 0:

- NegConstraint train questions: each NOT term against the question's relevant passage (0: by construction it
  leaves the excluded thing out) and against the top non-relevant passages that the positive part retrieves
  (1: the corpus holds, per question, on-topic passages that do discuss the excluded thing; with two NOT terms
  the passage is labelled for the term it is closer to only). Weak labels: not every such passage is a
  distractor. Vectors: the index's stored segment vectors (the same ones the pipeline scores).
- MedQuAD train questions: the answer's focus (its title, less the parenthesis) against its own answer
  (passage and one sentence, 1) and against another focus's answer (passage and sentence, 0).
- MEDIQA-it train questions (Italian, templated "Cos'è X?", "Quali sono i sintomi di X?", ...): the Italian
  focus against the English relevant answers (1) and another topic's answers (0): cross-lingual.

Features and head: ``chatbot.logical.mention_head``. Logistic regression (scikit-learn, L2, C chosen by the
pooled AUC on a validation fifth of the train questions, by hash of the question id); the shipped head is
refitted on all pairs with that C. Writes models/mention_head/head.npz and metrics.json. Needs the e5-onnx
embedder and the NegConstraint index (``python -m evaluation.bench_negation select`` builds it).

    CHATBOT_EMBEDDING__MODEL=e5-onnx nice -n 10 python -m evaluation.train_mention_head
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
from pathlib import Path

import numpy as np

from chatbot.logical.mention_head import MentionHead, pair_features
from chatbot.sentences import split_sentences
from chatbot.splits import split_of
from evaluation.logical_bench.common import SHARED

IT_FOCUS = re.compile(
    r"^(?:cos'è|cosa causa|quali sono i sintomi d\w*|quali sono le cure per|come si diagnostica|"
    r"come si previene|come si cura|come si tratta)\s+(?P<focus>.+?)\s*\?*$",
    re.IGNORECASE,
)


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _qrels(path: Path) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for line in path.read_text(encoding="utf-8").splitlines()[1:]:
        q, d, s = line.split("\t")[:3]
        if float(s) >= 1:
            out.setdefault(q, []).append(d)
    return out


def _val(qid: str) -> bool:
    return int(hashlib.sha1(f"val:{qid}".encode()).hexdigest(), 16) % 5 == 0


def _middle_sentence(text: str) -> str:
    sents = [s for s in split_sentences(text) if len(s) > 40] or [text[:300]]
    return sents[len(sents) // 2][:400]


def topic_pairs(embedder, rng: np.random.Generator, n_medquad: int) -> list[tuple]:
    """(term_vec, text_vec, label, group, source) from MedQuAD and MEDIQA-it train questions."""
    rows: list[tuple] = []
    # MedQuAD: one answer per focus
    corpus = {d["_id"]: d for d in _jsonl(SHARED / "medquad" / "corpus.jsonl")}
    qrels = _qrels(SHARED / "medquad" / "qrels.tsv")
    seen, items = set(), []
    for q in sorted(qrels):
        if split_of(q) != "train":
            continue
        d = corpus.get(qrels[q][0])
        if d is None:
            continue
        focus = re.sub(r"\s*\(.*?\)\s*", " ", d.get("title", "")).strip()
        if focus and focus.lower() not in seen and len(d["text"]) > 200:
            seen.add(focus.lower())
            items.append((q, focus, d["text"][:1000], _middle_sentence(d["text"])))
    order = rng.permutation(len(items))[:n_medquad]
    items = [items[i] for i in order]
    rows += _own_vs_other(embedder, rng, [(q, f, [p, s]) for q, f, p, s in items], "medquad")
    # MEDIQA-it: Italian focus of templated train questions, English answers
    it_corpus = {d["_id"]: d for d in _jsonl(SHARED / "mediqa-it" / "corpus.jsonl")}
    it_qrels = _qrels(SHARED / "mediqa-it" / "qrels.tsv")
    it_items = []
    for rec in _jsonl(SHARED / "mediqa-it" / "queries.jsonl"):
        m = IT_FOCUS.match(rec["text"].strip())
        if m is None or split_of(rec["_id"]) != "train" or rec["_id"] not in it_qrels:
            continue
        docs = [it_corpus[d]["text"] for d in it_qrels[rec["_id"]][:2] if d in it_corpus]
        if docs:
            texts = [t[:1000] for t in docs] + [_middle_sentence(docs[0])]
            it_items.append((rec["_id"], m.group("focus"), texts))
    rows += _own_vs_other(embedder, rng, it_items, "mediqa-it")
    return rows


def _own_vs_other(embedder, rng, items: list[tuple[str, str, list[str]]], source: str) -> list[tuple]:
    """Each focus against its own texts (1) and the texts of another item with a different focus (0)."""
    terms = embedder.embed_queries([f for _, f, _ in items])
    flat = [t for _, _, texts in items for t in texts]
    vecs = embedder.embed_passages(flat)
    spans, k = [], 0
    for _, _, texts in items:
        spans.append(range(k, k + len(texts)))
        k += len(texts)
    rows = []
    for i, (q, focus, _) in enumerate(items):
        for j in spans[i]:
            rows.append((terms[i], vecs[j], 1, q, source))
        other = int(rng.integers(len(items)))
        while items[other][1].lower() == focus.lower():
            other = int(rng.integers(len(items)))
        for j in spans[other]:
            rows.append((terms[i], vecs[j], 0, q, source))
    return rows


def negconstraint_pairs(distractors: int) -> list[tuple]:
    """(term_vec, passage_vec, label, question id, "negconstraint") from NegConstraint train questions."""
    from chatbot.logical.detect import analyse
    from chatbot.logical.scoring import candidate_vectors
    from evaluation.harness import load_judged
    from evaluation.logical_bench.common import eval_services, prepare_index

    data = SHARED / "negconstraint"
    services = eval_services(data)
    prepare_index(data, services)
    judged = load_judged(data, None, "train")
    rows = []
    for qid, text in judged.queries.items():
        found = analyse(text)
        if found is None or not found.negatives:
            continue
        negs = list(found.negatives)
        tvec = services.embedder.embed_queries([found.positive, *negs])
        hits = services.index.search_vectors(tvec[:1], 30)[0]
        relevant = [h for h in hits if judged.qrels[qid].get(h.segment.doc_id, 0) >= 1]
        others, docs = [], set()
        for h in hits:
            if judged.qrels[qid].get(h.segment.doc_id, 0) < 1 and h.segment.doc_id not in docs:
                docs.add(h.segment.doc_id)
                others.append(h)
            if len(others) == distractors:
                break
        vecs = candidate_vectors(services, relevant + others)
        for j in range(len(negs)):
            for r in range(len(relevant)):
                rows.append((tvec[1 + j], vecs[r], 0, qid, "negconstraint"))
        for k in range(len(others)):
            v = vecs[len(relevant) + k]
            j = int(np.argmax([float(tvec[1 + j] @ v) for j in range(len(negs))]))
            rows.append((tvec[1 + j], v, 1, qid, "negconstraint"))
    return rows


def _auc(y: np.ndarray, s: np.ndarray) -> float:
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(y, s)) if len(set(y.tolist())) == 2 else float("nan")


def main(argv: list[str] | None = None) -> int:
    from sklearn.linear_model import LogisticRegression

    from chatbot.embedders import load_embedder

    p = argparse.ArgumentParser(prog="python -m evaluation.train_mention_head", description=__doc__.split("\n")[0])
    p.add_argument("--medquad", type=int, default=300, help="MedQuAD train foci used")
    p.add_argument("--distractors", type=int, default=3, help="non-relevant NegConstraint passages per question")
    p.add_argument(
        "--cache", type=Path, default=Path("/tmp/mention-pairs.npz"), help="pair vectors (one file per part, reused)"
    )
    p.add_argument("--out", type=Path, default=Path("models/mention_head"))
    p.add_argument("--only", choices=["topics", "negconstraint"], default=None, help="only build that part's pairs")
    args = p.parse_args(argv)
    rows: list[tuple] = []
    for part in ("topics", "negconstraint"):
        cache = args.cache.with_name(f"{args.cache.stem}-{part}.npz")
        if not cache.is_file():
            if part == "topics":
                got = topic_pairs(load_embedder("e5-onnx"), np.random.default_rng(0), args.medquad)
            else:
                got = negconstraint_pairs(args.distractors)
            np.savez(
                cache,
                T=np.vstack([r[0] for r in got]).astype(np.float32),
                V=np.vstack([r[1] for r in got]).astype(np.float32),
                y=np.array([r[2] for r in got]),
                groups=np.array([r[3] for r in got]),
                sources=np.array([r[4] for r in got]),
            )
        if args.only == part:
            return 0
        z = np.load(cache, allow_pickle=False)
        rows += list(zip(z["T"], z["V"], z["y"], z["groups"].tolist(), z["sources"].tolist(), strict=True))
    T = np.vstack([r[0] for r in rows])
    V = np.vstack([r[1] for r in rows])
    y = np.array([r[2] for r in rows])
    groups, sources = [r[3] for r in rows], [r[4] for r in rows]
    X = pair_features(T, V)
    val = np.array([_val(g) for g in groups])
    src = np.array(sources)
    cos = X[:, -1]
    metrics: dict = {"pairs": {s: {"n": int((src == s).sum()), "pos": int(y[src == s].sum())} for s in set(sources)}}
    best = None
    for C in (0.01, 0.1, 1.0, 10.0):
        clf = LogisticRegression(C=C, max_iter=2000).fit(X[~val], y[~val])
        s = clf.decision_function(X[val])
        row = {"C": C, "val_auc": _auc(y[val], s)}
        for name in set(sources):
            m = src[val] == name
            row[f"val_auc_{name}"] = _auc(y[val][m], s[m])
            row[f"val_auc_{name}_cosine"] = _auc(y[val][m], cos[val][m])
        metrics.setdefault("grid", []).append(row)
        print(json.dumps(row), flush=True)
        # pooled AUC: NegConstraint's weak labels alone sit at the cosine's level for every C (metrics.json),
        # so they cannot choose; the clean MedQuAD/MEDIQA-it pairs can
        key = row["val_auc"]
        if best is None or key > best[0]:
            best = (key, C)
    clf = LogisticRegression(C=best[1], max_iter=2000).fit(X, y)
    metrics["chosen_C"] = best[1]
    head = MentionHead(clf.coef_[0].astype(np.float32), float(clf.intercept_[0]))
    args.out.mkdir(parents=True, exist_ok=True)
    head.save(args.out / "head.npz")
    (args.out / "metrics.json").write_text(json.dumps(metrics, indent=2), encoding="utf-8")
    print(json.dumps({"chosen_C": best[1], "out": str(args.out)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

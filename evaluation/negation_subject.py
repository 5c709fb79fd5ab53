"""Does the passage discuss the excluded thing as its subject, or merely mention it? A small logistic head over
the evidence the logical pipeline already computes, trained on NegConstraint's TRAIN split only (issue 19).

    python -m evaluation.negation_subject features --split train --out /tmp/subject-train.pkl [--cache PICKLE]
    python -m evaluation.negation_subject cv --train /tmp/subject-train.pkl [--name logical-negation-s9-cv]
    python -m evaluation.negation_subject test --train /tmp/subject-train.pkl --test /tmp/subject-test.pkl \
        [--name logical-negation-s9-head]

``features``: every question through the ``logical`` pipeline with its default settings; for every ranked
document (its best segment) the pipeline's own order and scores, and per NOT term (the largest over the NOT
terms, so either exclusion counts): the orthogonalised passage cosine the composition reads, the lexical
evidence (``mention.py``: best sentence, share of the segment's sentences that hold at least half the term's
words, the first sentence), and the positive-minus-NOT passage cosine. Cosines are taken relative to the
question's median over its documents. (No stored sentence vectors: this index has none, and building them was
out of this session's CPU budget.) Label: the document is relevant (NegConstraint's distractors discuss the
excluded thing; the relevant passage only mentions it).

``cv``: 5-fold cross-validation by question on TRAIN, one logistic regression (class-balanced, standardised
features) per inverse regularisation C; Success@1 and MRR@10 of the head's order against the pipeline's order on
the same questions. ``test``: the C that won on CV, fitted on all of TRAIN, applied once to TEST; per-question
rows in the harness's format (``evaluation/compare_runs.py`` reads them). Numbers only are written, no text.
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
from pathlib import Path
from typing import Any

import numpy as np

from evaluation.report import results_dir

FEATURES = (
    "base_z",  # the pipeline's document score, z-scored within the question
    "base_rr",  # 1 / (1 + the pipeline's rank)
    "positive",  # the positive term's rerank value (smallest over positive terms)
    "not_cos_orth",  # NOT term's orthogonalised passage cosine (what the composition reads) − median
    "not_lexical",  # best sentence's share of the NOT term's words (IDF-weighted)
    "not_share",  # share of the segment's sentences holding ≥ half the NOT term's words
    "not_first",  # the first sentence holds ≥ half the NOT term's words
    "pos_minus_not",  # positive passage cosine − NOT passage cosine (raw), − median
    "n_exclusions",
)
C_GRID = (0.01, 0.1, 1.0, 10.0)


def _median_centred(x: np.ndarray) -> np.ndarray:
    return x - np.median(x) if len(x) else x


def question_rows(services: Any, text: str, relevant: set[str]) -> dict[str, Any] | None:
    """The feature matrix of one question's ranked documents (None: not an exclusion question)."""
    from dataclasses import replace

    from chatbot.logical.config import config_for
    from chatbot.logical.detect import analyse
    from chatbot.logical.mention import mention_scores, sentence_stems, term_words
    from chatbot.logical.pipeline import logical_retrieve
    from chatbot.logical.query import negative_terms, positive_terms
    from chatbot.logical.scoring import candidate_vectors, orthogonal_negations

    found = analyse(text)
    if found is None:
        return None
    config = replace(config_for(services.settings), trace_top=10_000)
    result = logical_retrieve(text, services, config)
    docs = result.ranked
    if not docs:
        return None
    query = found.query
    negs, pos = negative_terms(query), positive_terms(query)
    names = list(dict.fromkeys([*pos, *negs]))
    tv = services.embedder.embed_queries(names)
    orth = orthogonal_negations(query, names, tv)
    vecs = candidate_vectors(services, docs)
    base = np.array([h.score for h in docs], dtype=np.float64)
    n = len(docs)
    cols: dict[str, np.ndarray] = {
        "base_z": (base - base.mean()) / (base.std() + 1e-9),
        "base_rr": 1.0 / (1.0 + np.arange(n)),
        "positive": np.min(
            [[float(h.detail.get(f"rerank:{t}", h.detail.get(f"term:{t}", 0.0))) for h in docs] for t in pos], axis=0
        ),
        "n_exclusions": np.full(n, float(len(negs))),
    }
    pos_cos = np.max(vecs @ tv[[names.index(t) for t in pos]].T, axis=1)
    passages = [sentence_stems(h.segment.text) for h in docs]
    per_term: dict[str, list[np.ndarray]] = {k: [] for k in FEATURES[3:8]}
    for t in negs:
        raw, ort = tv[names.index(t)], orth[names.index(t)]
        per_term["not_cos_orth"].append(_median_centred(vecs @ ort))
        ms = mention_scores(term_words(t, "", drop_shared=False), passages, 1000.0)
        per_term["not_lexical"].append(ms.score)
        per_term["not_share"].append(
            np.array([float(np.mean(s >= 0.5)) if len(s) else 0.0 for s in ms.sentence_scores])
        )
        per_term["not_first"].append(np.array([float(s[0] >= 0.5) if len(s) else 0.0 for s in ms.sentence_scores]))
        per_term["pos_minus_not"].append(_median_centred(pos_cos - vecs @ raw))
    for k, v in per_term.items():
        # the worst NOT decides (either exclusion violates); for pos_minus_not the smallest margin
        cols[k] = np.min(v, axis=0) if k == "pos_minus_not" else np.max(v, axis=0)
    x = np.column_stack([cols[f] for f in FEATURES])
    y = np.array([h.segment.doc_id in relevant for h in docs], dtype=np.int64)
    return {"x": x, "y": y, "docs": [h.segment.doc_id for h in docs], "n": len(negs)}


def collect(split: str, data: Path, cache: Path | None) -> dict[str, dict[str, Any]]:
    """Feature rows of every judged question of ``split`` (query id → rows)."""
    from evaluation.bench_negation import memoised_services, save_memo
    from evaluation.harness import load_judged
    from evaluation.logical_bench.common import eval_services

    services = eval_services(data)
    services.index.count()
    memoised_services(services, cache)
    judged = load_judged(data, None, split)
    out: dict[str, dict[str, Any]] = {}
    for qid, text in judged.queries.items():
        rows = question_rows(services, text, {d for d, g in judged.qrels[qid].items() if g >= 1})
        if rows is not None:
            out[qid] = rows
    save_memo(services, cache)
    return out


def _metrics(scores: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    order = np.argsort(-scores, kind="stable")
    hits = y[order][:10]
    rr = next((1.0 / (i + 1) for i, v in enumerate(hits) if v), 0.0)
    return float(y[order][0]), rr


PAIR_TOP = 10  # pairwise: the relevant document against each non-relevant one in the pipeline's top 10


def _fit(rows: list[dict[str, Any]], c: float, objective: str = "pointwise") -> Any:
    """The head: a logistic regression on standardised features, pointwise (is this document relevant?) or
    pairwise (is the first of two documents of one question the relevant one? on feature differences)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    if objective == "pointwise":
        x = np.vstack([r["x"] for r in rows])
        y = np.concatenate([r["y"] for r in rows])
        model = make_pipeline(StandardScaler(), LogisticRegression(C=c, class_weight="balanced", max_iter=2000))
        return model.fit(x, y)
    diffs = []
    for r in rows:
        rel = [i for i in range(len(r["y"])) if r["y"][i]]
        non = [i for i in range(min(PAIR_TOP, len(r["y"]))) if not r["y"][i]]
        diffs += [r["x"][i] - r["x"][j] for i in rel for j in non]
    d = np.array(diffs)
    x, y = np.vstack([d, -d]), np.concatenate([np.ones(len(d)), np.zeros(len(d))])
    scale = x.std(axis=0) + 1e-9
    head = LogisticRegression(C=c, fit_intercept=False, max_iter=2000).fit(x / scale, y)
    return _Linear(head.coef_[0] / scale)


class _Linear:
    """A pairwise head's scoring function: w · x."""

    def __init__(self, w: np.ndarray) -> None:
        self.w = w
        self.coef_ = np.array([w])

    def decision_function(self, x: np.ndarray) -> np.ndarray:
        return x @ self.w

    def __getitem__(self, i: int) -> Any:
        return self


def evaluate(rows: list[dict[str, Any]], model: Any | None) -> dict[str, Any]:
    """Per question (Success@1, RR@10) of the head's order (``model``) or the pipeline's (None)."""
    out = []
    for r in rows:
        s = r["x"][:, 0] if model is None else model.decision_function(r["x"])
        s1, rr = _metrics(s if model is not None else -np.arange(len(r["y"])), r["y"])
        out.append((s1, rr, r["n"]))
    return out


def _summary(per: list[tuple[float, float, int]]) -> dict[str, Any]:
    a = np.array(per)
    res = {"Success@1": round(float(a[:, 0].mean()), 4), "MRR@10": round(float(a[:, 1].mean()), 4), "n": len(a)}
    for k, mask in (("one", a[:, 2] == 1), ("two+", a[:, 2] >= 2)):
        res[f"Success@1 {k}"] = round(float(a[mask, 0].mean()), 4) if mask.any() else None
    return res


def cross_validate(train: dict[str, dict[str, Any]], folds: int = 5, seed: int = 0) -> dict[str, Any]:
    """Out-of-fold Success@1 / MRR@10 per objective and C, and the pipeline's own order on the same questions."""
    out: dict[str, Any] = {}
    for objective in ("pointwise", "pairwise"):
        res = _cross_validate(train, objective, folds, seed)
        out["pipeline"] = res.pop("pipeline")
        out["questions"] = res.pop("questions")
        out.update({f"{objective} {k}": v for k, v in res.items()})
    return out


def _cross_validate(train: dict[str, dict[str, Any]], objective: str, folds: int, seed: int) -> dict[str, Any]:
    qids = sorted(train)
    rng = np.random.default_rng(seed)
    perm = rng.permutation(len(qids))
    fold_of = {qids[i]: k % folds for k, i in enumerate(perm)}
    out: dict[str, Any] = {"questions": len(qids), "pipeline": _summary(evaluate([train[q] for q in qids], None))}
    for c in C_GRID:
        per: list[tuple[float, float, int]] = []
        for k in range(folds):
            fit_rows = [train[q] for q in qids if fold_of[q] != k]
            model = _fit(fit_rows, c, objective)
            per += evaluate([train[q] for q in qids if fold_of[q] == k], model)
        out[f"C={c}"] = _summary(per)
    return out


def main(argv: list[str] | None = None) -> int:
    from evaluation.logical_bench.common import SHARED

    parser = argparse.ArgumentParser(prog="python -m evaluation.negation_subject", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("features")
    f.add_argument("--split", choices=("train", "test"), required=True)
    f.add_argument("--data", type=Path, default=SHARED / "negconstraint")
    f.add_argument("--out", type=Path, required=True)
    f.add_argument("--cache", type=Path, default=None)
    c = sub.add_parser("cv")
    c.add_argument("--train", type=Path, required=True)
    c.add_argument("--name", default="logical-negation-s9-cv")
    t = sub.add_parser("test")
    t.add_argument("--train", type=Path, required=True)
    t.add_argument("--test", type=Path, required=True)
    t.add_argument("--c", type=float, required=True, help="the C that won on train CV")
    t.add_argument("--objective", choices=("pointwise", "pairwise"), required=True)
    t.add_argument("--name", default="logical-negation-s9-head")
    args = parser.parse_args(argv)
    if args.cmd == "features":
        rows = collect(args.split, args.data, args.cache)
        args.out.write_bytes(pickle.dumps(rows))
        print(f"{len(rows)} questions → {args.out}")
        return 0
    train = pickle.loads(args.train.read_bytes())
    if args.cmd == "cv":
        res = cross_validate(train)
        print(json.dumps(res, indent=2))
        (results_dir() / f"{args.name}.summary.json").write_text(json.dumps(res, indent=2), encoding="utf-8")
        return 0
    test = pickle.loads(args.test.read_bytes())
    model = _fit(list(train.values()), args.c, args.objective)
    coef = dict(zip(FEATURES, np.round(model[-1].coef_[0], 4).tolist(), strict=True))
    lines = []
    for label, m in (("pipeline", None), ("head", model)):
        for qid, r in test.items():
            s1, rr = evaluate([r], m)[0][:2]
            lines.append(
                json.dumps({"query_id": qid, "pipeline": label, "Success@1": s1, "MRR@10": rr, "n_exclusions": r["n"]})
            )
    (results_dir() / f"{args.name}.per_query.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    res = {
        "C": args.c,
        "objective": args.objective,
        "coef": coef,
        "pipeline": _summary(evaluate(list(test.values()), None)),
        "head": _summary(evaluate(list(test.values()), model)),
    }
    (results_dir() / f"{args.name}.summary.json").write_text(json.dumps(res, indent=2), encoding="utf-8")
    print(json.dumps(res, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

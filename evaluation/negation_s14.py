"""Session 14 on NegConstraint (issue 19): can a ranker trained on the TRAIN split's questions pick the labelled
passage among the logical route's candidates? Train split only for fitting and cross-validation; the test
split is read once, by ``test-once``, for the one head fixed beforehand (evaluation/results/negation-s14.md).

    python -m evaluation.negation_s14 features [--cache /tmp/neg14/feat_train.pkl]
    python -m evaluation.negation_s14 ce-features [--cache ...] [--ce-cache /tmp/neg14/ce_pooled_train.pkl]
    python -m evaluation.negation_s14 cv [--cache ...] [--ce-cache ...]
    python -m evaluation.negation_s14 test-once [--cache ...] [--out evaluation/results/negation-s14-test]

``features`` runs today's route (``logical_retrieve`` at the configured defaults) on every question and keeps,
per gathered candidate segment: its stored e5 vector, the positive term's cross-encoder score and cosine, the
whole question's cross-encoder score, every NOT term's raw and orthogonalised cosine, and the route's final
order. The pickle holds passage text: it stays under /tmp, never in git. ``ce-features`` adds the shipped
cross-encoder's pooled [CLS] vector of (positive term, segment) for the top 12 segments of today's order (a head
over it = the cross-encoder's classifier layer retrained). ``cv`` prints every table of the report: each
signal alone, listwise linear heads with 5-fold cross-validation over 5 (3) fold assignments, the frozen-e5 and
frozen-cross-encoder heads, sign tests of the out-of-fold hits against today, and how close today's wrong first
passage is to the labelled one.
"""

from __future__ import annotations

import argparse
import json
import pickle
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from evaluation.negation_features import RouteRun

DEFAULT_CACHE = Path("/tmp/neg14/feat_train.pkl")
DEFAULT_CE_CACHE = Path("/tmp/neg14/ce_pooled_train.pkl")
STOP = set(
    "what how does did the and are was were with from that this which their its his her they them than into about "
    "between other such these those have has had been also more most some when where why compare analyze "
    "investigate describe discuss explain provide".split()
)
# The one head taken to the test split (fixed before the test split was read): z(today) + these, L2 0.03.
KEPT = ["ce_q", "central_mean", "word_cov"]


def _words(text: str) -> set[str]:
    return {w[:6] for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) > 2 and w not in STOP}


def features(split: str, cache: Path) -> None:
    """Per-candidate signals and vectors of every train question into ``cache``."""
    out = collect(split)
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_bytes(pickle.dumps(out))


def collect(split: str) -> dict[str, dict[str, Any]]:
    """Per-candidate signals and vectors of every question of ``split`` (the module docstring), in memory."""
    from evaluation.negation_features import collect as collect_runs

    return collect_runs(split, _row)


def _row(run: RouteRun) -> dict[str, Any]:
    """One question's signals: the shared cosines, the candidates' and terms' vectors, the positive terms' and the
    question's cross-encoder scores."""
    signals = {"ce": {t: run.ce(t) for t in run.pos}, "ce_q": run.ce(run.text)}
    return run.row(signals, seg_ids=True, vectors=True)


def _z(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    sd = x.std()
    return (x - x.mean()) / sd if sd > 1e-9 else np.zeros_like(x)


def _logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(np.asarray(p, dtype=np.float64), 1e-6, 1 - 1e-6)
    return np.log(p) - np.log(1 - p)


def segment_signals(f: dict) -> dict[str, np.ndarray]:
    """Per-segment signals of one question (all computable in the product from what the route holds)."""
    from evaluation.negation_s13 import penalty, positive

    today = np.log(positive(f) * penalty(f))
    v = f["vecs"].astype(np.float64)
    sims = v @ v.T
    np.fill_diagonal(sims, np.nan)
    k = min(5, len(v) - 1)
    top = np.argsort(-today, kind="stable")
    prf = v[top[:3]].mean(0)
    pos_vec = f["term_vecs"][0].astype(np.float64)
    return {
        "today": today,
        "ce_q": _logit(f["ce_q"]),
        "ce_pos": np.sum([_logit(f["ce"][t]) for t in f["pos"]], axis=0),
        "cos_pos": np.sum([f["raw"][t] for t in f["pos"]], axis=0),
        "cos_q": f["raw_q"],
        "not_max": np.max([f["orth"][t] for t in f["negs"]], axis=0),
        "central_mean": np.nanmean(sims, axis=1),
        "central_topk": -np.sort(-np.nan_to_num(sims, nan=-1.0), axis=1)[:, :k].mean(1),
        "prf3": v @ prf / np.linalg.norm(prf),
        "prf_mix": v @ (pos_vec + prf / np.linalg.norm(prf)),
        "length": np.log([len(t) for t in f["texts"]]),
        "word_cov": np.array(
            [len(_words(f["pos"][0]) & _words(t)) / max(1, len(_words(f["pos"][0]))) for t in f["texts"]]
        ),
    }


def doc_table(f: dict, second: float = 1.0) -> tuple[list[str], dict[str, np.ndarray], np.ndarray]:
    """Documents of one question with per-document features: today's aggregated score and, for every other
    signal, its value on the document's best segment under today's score (z-scored within the question),
    plus the count of the document's gathered segments. Returns (doc ids, features, relevant mask)."""
    sig = segment_signals(f)
    today = np.exp(sig["today"])
    by: dict[str, list[int]] = {}
    for i in np.argsort(-today, kind="stable"):
        by.setdefault(f["doc_ids"][i], []).append(int(i))
    docs = list(by)
    feats: dict[str, np.ndarray] = {
        "today": np.log([today[ix[0]] + (second * today[ix[1]] if len(ix) > 1 else 0.0) for ix in by.values()]),
        "n_segments": np.array([len(ix) for ix in by.values()], dtype=float),
    }
    for name, x in sig.items():
        if name != "today":
            feats[name] = _z(np.array([x[ix[0]] for ix in by.values()]))
    feats["today_z"] = _z(feats["today"])
    rel = np.array([d in f["relevant"] for d in docs])
    return docs, feats, rel


def _metrics(scores: list[np.ndarray], rels: list[np.ndarray]) -> tuple[float, float, np.ndarray]:
    hits, rr = [], []
    for s, r in zip(scores, rels, strict=True):
        order = np.argsort(-s, kind="stable")
        pos = np.flatnonzero(r[order])
        rank = int(pos[0]) + 1 if len(pos) else None
        hits.append(rank == 1)
        rr.append(1 / rank if rank and rank <= 10 else 0.0)
    return float(np.mean(hits)), float(np.mean(rr)), np.array(hits)


def fit_listwise(
    X: list[np.ndarray], R: list[np.ndarray], l2: float, base: list[np.ndarray] | None = None
) -> np.ndarray:
    """Weights of a softmax-listwise linear head (L2 ``l2``) over per-question feature matrices; ``base`` an
    offset score added with weight 1 (today's score), or None."""
    from scipy.optimize import minimize

    def loss(w: np.ndarray) -> tuple[float, np.ndarray]:
        total, grad = 0.0, np.zeros_like(w)
        for i, (x, r) in enumerate(zip(X, R, strict=True)):
            if not r.any():
                continue
            s = x @ w + (base[i] if base is not None else 0.0)
            p = np.exp(s - np.logaddexp.reduce(s))
            q = np.where(r, np.exp(s - np.logaddexp.reduce(s[r])), 0.0)
            total -= np.logaddexp.reduce(s[r]) - np.logaddexp.reduce(s)
            grad += x.T @ (p - q)
        n = len(X)
        return total / n + l2 * float(w @ w), grad / n + 2 * l2 * w

    return minimize(loss, np.zeros(X[0].shape[1]), jac=True, method="L-BFGS-B").x


def e5_table(f: dict, centred: bool = True) -> np.ndarray:
    """Per-document frozen e5 interaction features: positive-term vector ⊙ the document's best segment vector
    (centred on the question's candidates' mean when ``centred``), in ``doc_table``'s document order."""
    from evaluation.negation_s13 import penalty, positive

    today = positive(f) * penalty(f)
    first: dict[str, int] = {}
    for i in np.argsort(-today, kind="stable"):
        first.setdefault(f["doc_ids"][i], int(i))
    v = f["vecs"].astype(np.float64)
    if centred:
        v = v - v.mean(0)
    q = f["term_vecs"][0].astype(np.float64)
    return np.stack([q * v[i] for i in first.values()]) * 30.0


def ce_features(F: dict, out: Path) -> None:
    """Pooled [CLS] of the shipped cross-encoder (torch, fp32) for (positive term, segment) pairs of the top 12
    segments of today's order of every question in ``F``, with its logit, into ``out``."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from evaluation.negation_s13 import penalty, positive

    model_dir = Path(__file__).resolve().parents[1] / "models" / "reranker"
    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForSequenceClassification.from_pretrained(model_dir).float().eval()
    res: dict[str, dict[str, Any]] = {}
    with torch.inference_mode():
        for qid, f in F.items():
            top = [int(i) for i in np.argsort(-(positive(f) * penalty(f)), kind="stable")[:12]]
            texts = [f["texts"][i][:900] for i in top]
            b = tok(
                [f["pos"][0]] * len(texts),
                texts,
                truncation="longest_first",
                max_length=256,
                padding=True,
                return_tensors="pt",
            )
            o = model(**b, output_hidden_states=True)
            pooled = model.bert.pooler(o.hidden_states[-1])
            res[qid] = {"top": top, "pooled": pooled.numpy(), "logit": o.logits[:, 0].numpy()}
            print(qid, flush=True)
    out.write_bytes(pickle.dumps(res))


def _oof(X: list, R: list, B: list, l2: float, seed: int, folds: int = 5) -> list[np.ndarray]:
    idx = np.random.RandomState(seed).permutation(len(X))
    scores: list[np.ndarray] = [np.zeros(0)] * len(X)
    for k in range(folds):
        test = set(idx[k::folds].tolist())
        tr = [i for i in range(len(X)) if i not in test]
        w = fit_listwise([X[i] for i in tr], [R[i] for i in tr], l2, [B[i] for i in tr])
        for i in test:
            scores[i] = X[i] @ w + B[i]
    return scores


SIGNALS = [
    "today",
    "ce_q",
    "ce_pos",
    "cos_pos",
    "cos_q",
    "not_max",
    "central_mean",
    "central_topk",
    "prf3",
    "prf_mix",
    "length",
    "n_segments",
    "word_cov",
]
HEADS = {
    "today alone": [],
    "+ whole-question CE": ["ce_q"],
    "+ centrality (mean cosine to the other candidates)": ["central_mean"],
    "+ centrality (top-5 neighbours)": ["central_topk"],
    "+ pseudo-relevance feedback (top-3 centroid)": ["prf3"],
    "+ Rocchio (positive term + top-3 centroid)": ["prf_mix"],
    "+ passage length (log chars)": ["length"],
    "+ gathered segments of the document": ["n_segments"],
    "+ largest NOT cosine": ["not_max"],
    "+ positive CE and cosine (re-weighted)": ["ce_pos", "cos_pos"],
    "+ share of the positive term's words in the passage": ["word_cov"],
    "+ whole-question CE + centrality": ["ce_q", "central_mean", "central_topk"],
    "+ whole-question CE + centrality + word share (kept for test)": KEPT,
    "+ all twelve": [c for c in SIGNALS if c != "today"],
}


def cv_report(F: dict, ce_cache: Path | None) -> None:
    """Print the report's train tables (see the module docstring)."""
    from scipy.stats import binomtest

    tables = [doc_table(f) for f in F.values()]
    R = [t[2] for t in tables]
    two = np.array([len(f["negs"]) >= 2 for f in F.values()])
    base_hits = _metrics([t[1]["today"] for t in tables], R)[2]
    print("## each signal alone (document level; best segment's value)")
    for c in SIGNALS:
        a, b, _ = _metrics([t[1][c] for t in tables], R)
        print(f"| {c} | {a:.3f} | {b:.3f} |")
    print("## listwise heads over z(today) + features, 5-fold CV x 5 fold assignments")
    for l2 in (0.003, 0.03):
        for name, cols in HEADS.items():
            X = [np.stack([t[1][c] for c in ["today_z", *cols]], axis=1) for t in tables]
            runs = [_metrics(_oof(X, R, [np.zeros(len(r)) for r in R], l2, seed), R) for seed in range(5)]
            h = runs[0][2]
            g, lost = int((h & ~base_hits).sum()), int((~h & base_hits).sum())
            p = binomtest(g, g + lost).pvalue if g + lost else 1.0
            s1 = [r[0] for r in runs]
            print(
                f"| {name} | {l2} | {np.mean(s1):.3f} ± {np.std(s1):.3f} | {np.mean([r[1] for r in runs]):.3f} | "
                f"{h[~two].mean():.3f} | {h[two].mean():.3f} | {g} / {lost} (p {p:.2f}) |",
                flush=True,
            )
    print("## frozen-e5 interaction head (positive term ⊙ segment, 384 weights) on c·z(today)")
    E = [e5_table(f) for f in F.values()]
    for c in (2.0, 4.0):
        for l2 in (0.003, 0.03, 0.3):
            runs = [_metrics(_oof(E, R, [c * t[1]["today_z"] for t in tables], l2, s), R) for s in range(3)]
            print(f"| c {c} | {l2} | {np.mean([r[0] for r in runs]):.3f} | {np.mean([r[1] for r in runs]):.3f} |")
    if ce_cache is not None and ce_cache.exists():
        print("## frozen cross-encoder pooled [CLS] head (the classifier layer retrained) on c·z(today), top 12")
        P = pickle.loads(ce_cache.read_bytes())
        from evaluation.negation_s13 import penalty, positive

        X, RR, B = [], [], []
        for (qid, f), (docs, feats, rel) in zip(F.items(), tables, strict=True):
            best: dict[str, int] = {}
            for i in np.argsort(-(positive(f) * penalty(f)), kind="stable"):
                best.setdefault(f["doc_ids"][i], int(i))
            at = {i: k for k, i in enumerate(P[qid]["top"])}
            keep = [j for j, d in enumerate(docs) if best[d] in at]
            X.append(np.stack([P[qid]["pooled"][at[best[docs[j]]]] for j in keep]))
            RR.append(rel[keep])
            B.append(feats["today_z"][keep])
        for c, l2 in ((0.0, 0.001), (0.0, 0.03), (1.25, 0.001), (1.25, 0.01), (1.25, 0.1)):
            runs = [_metrics(_oof(X, RR, [c * b for b in B], l2, s), RR) for s in range(3)]
            print(f"| c {c} | {l2} | {np.mean([r[0] for r in runs]):.3f} | {np.mean([r[1] for r in runs]):.3f} |")
    print("## today's misses: how close the wrong first document is to the labelled one (best segments, e5)")
    near, other, hits = [], [], 0
    from evaluation.negation_s13 import penalty, positive

    for f, (docs, feats, rel) in zip(F.values(), tables, strict=True):
        o = np.argsort(-feats["today"], kind="stable")
        docs, rel = [docs[i] for i in o], rel[o]
        hits += bool(rel[0])
        if rel[0] or not rel.any():
            continue
        best: dict[str, int] = {}
        for i in np.argsort(-(positive(f) * penalty(f)), kind="stable"):
            best.setdefault(f["doc_ids"][i], int(i))
        g = docs[int(np.flatnonzero(rel)[0])]
        v = f["vecs"]
        near.append(float(v[best[docs[0]]] @ v[best[g]]))
        other += [float(v[best[d]] @ v[best[g]]) for d in docs[1:] if d != g]
    print(
        f"misses gathered {len(near)}; median cosine first-vs-labelled {np.median(near):.3f}, "
        f"labelled-vs-other candidates {np.median(other):.3f}"
    )
    for t in (0.90, 0.93, 0.95):
        n = int((np.array(near) >= t).sum())
        print(f"first within cosine {t} of the labelled one: {n} (S@1 if counted right: {(hits + n) / len(F):.3f})")


def test_once(F: dict, out: Path) -> None:
    """The KEPT head fitted on every train question, then the test split read once: aggregate S@1 / MRR@10 of
    today's route and of the head, by number of exclusions, gained / lost and a sign test; ``out``
    ``.per_query.jsonl`` holds ids and ranks only (no text). Test rows' failures are not looked at."""
    from scipy.stats import binomtest, wilcoxon

    tables = [doc_table(f) for f in F.values()]
    cols = ["today_z", *KEPT]
    w = fit_listwise([np.stack([t[1][c] for c in cols], 1) for t in tables], [t[2] for t in tables], 0.03)
    print("weights fitted on train:", dict(zip(cols, np.round(w, 4).tolist(), strict=True)))
    T = collect("test")
    rows = []
    for qid, f in T.items():
        docs, feats, rel = doc_table(f)
        head = np.stack([feats[c] for c in cols], 1) @ w
        route = next((i + 1 for i, d in enumerate(f["ranked"]) if d in f["relevant"]), None)
        rank = {}
        for name, s in (("today", feats["today"]), ("head", head)):
            order = np.argsort(-s, kind="stable")
            hit = np.flatnonzero(rel[order])
            rank[name] = int(hit[0]) + 1 if len(hit) else None
        rows.append({"query_id": qid, "exclusions": len(f["negs"]), "route_rank": route, **rank})
    with out.with_suffix(".per_query.jsonl").open("w") as fh:
        for r in rows:
            fh.write(json.dumps(r) + "\n")

    def agg(key: str, sel: list[dict]) -> tuple[float, float]:
        return (
            float(np.mean([r[key] == 1 for r in sel])),
            float(np.mean([1 / r[key] if r[key] and r[key] <= 10 else 0.0 for r in sel])),
        )

    for key in ("route_rank", "today", "head"):
        one = [r for r in rows if r["exclusions"] == 1]
        two = [r for r in rows if r["exclusions"] >= 2]
        s1, mrr = agg(key, rows)
        print(f"| {key} | {len(rows)} | {s1:.4f} | {mrr:.4f} | {agg(key, one)[0]:.4f} | {agg(key, two)[0]:.4f} |")
    g = sum(r["head"] == 1 and r["today"] != 1 for r in rows)
    lost = sum(r["head"] != 1 and r["today"] == 1 for r in rows)
    rr = [
        (1 / r["head"] if r["head"] and r["head"] <= 10 else 0)
        - (1 / r["today"] if r["today"] and r["today"] <= 10 else 0)
        for r in rows
    ]
    nz = [x for x in rr if abs(x) > 1e-12]
    print(
        f"S@1 gained {g} lost {lost} (sign test p {binomtest(g, g + lost).pvalue if g + lost else 1:.3f}); "
        f"RR@10 Wilcoxon p {wilcoxon(nz).pvalue if nz else 1:.3f}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Command line."""
    ap = argparse.ArgumentParser(prog="python -m evaluation.negation_s14", description=__doc__.splitlines()[0])
    ap.add_argument("command", choices=("features", "ce-features", "cv", "test-once"))
    ap.add_argument("--split", default="train")
    ap.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    ap.add_argument("--ce-cache", type=Path, default=DEFAULT_CE_CACHE)
    ap.add_argument("--out", type=Path, default=Path("evaluation/results/negation-s14-test"))
    args = ap.parse_args(argv)
    if args.split != "train":
        raise SystemExit("--split: train only (test-once reads the test split itself, once, for the KEPT head)")
    if args.command == "features":
        features(args.split, args.cache)
        return 0
    F = pickle.loads(args.cache.read_bytes())
    if args.command == "ce-features":
        ce_features(F, args.ce_cache)
    elif args.command == "test-once":
        test_once(F, args.out)
    else:
        cv_report(F, args.ce_cache)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Where the logical route loses NegConstraint's TRAIN questions, and what the class-level fixes of issue 19 do
there (session 13; evaluation/results/negation-s13.md). Train split only: test rows are never read here.

    python -m evaluation.negation_s13 features [--split train] [--cache /tmp/neg13/feat_train.pkl]
    python -m evaluation.negation_s13 diagnose [--cache ...] [--out evaluation/results/negation-s13-train-diagnosis]
    python -m evaluation.negation_s13 variants [--cache ...]

``features`` runs today's route (``logical_retrieve`` at the configured defaults) on every question and keeps,
per gathered candidate segment: the positive term's cross-encoder score and cosine, the whole question's
cross-encoder score and cosine, every NOT term's raw and orthogonalised cosine, its cross-encoder score read
as a query, its best e5 sentence cosine, and the cross-encoder score of "positive, NOT term" (the contrast
"does naming X raise this passage?"). The pickle holds passage text: it stays under /tmp, never in git.

``diagnose`` replays today's composition from those features (it reproduces the harness's ranks), ranks the
relevant document under each signal alone and puts every miss in one class (``category``); it writes
``<out>.per_query.jsonl`` (ids and numbers only). ``variants`` replays the fixes offline: RRF k and weight of
the positive value, the NOT exponent, document aggregation, the NS-IR constraint with three violation
signals, the contrast penalty, and a softmax-linear combination of the signals with 5-fold cross-validation.
"""

from __future__ import annotations

import argparse
import json
import pickle
import re
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from evaluation.negation_features import RouteRun

DEFAULT_CACHE = Path("/tmp/neg13/feat_train.pkl")
STOP = set("the a an of and or in on to for its his her their about any details discussion discussions".split())
STOP |= {"references", "reference", "mention", "mentions"}


def _sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?])\s+", text) if len(s.split()) >= 3] or [text]


def _row(run: RouteRun) -> dict[str, Any]:
    """One question's signals (the module docstring): the shared cosines, every term's cross-encoder score, the
    "positive, NOT term" contrasts and every term's best e5 sentence cosine."""
    cands, names = run.cands, run.names
    sents = [_sentences(h.segment.text) for h in cands]
    sv = np.asarray(run.services.embedder.embed_passages([s for ss in sents for s in ss]), dtype=np.float64)
    sims, edges = sv @ run.tv[: len(names)].T, np.cumsum([0] + [len(s) for s in sents])
    return run.row(
        {
            "ce": {t: run.ce(t) for t in names},
            "ce_q": run.ce(run.text),
            "ce_pair": {t: run.ce(f"{run.pos[0]}, {t}") for t in run.negs},
            "sent_max": {
                t: np.array([sims[edges[i] : edges[i + 1], j].max() for i in range(len(cands))])
                for j, t in enumerate(names)
            },
        }
    )


def features(split: str, cache: Path) -> None:
    """Per-candidate signals of every question of ``split`` (see the module docstring) into ``cache``."""
    from evaluation.negation_features import collect

    if split == "test":
        raise SystemExit("negation_s13 diagnoses the train split only (test rows' failures are not looked at)")
    out = collect(split, _row)
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_bytes(pickle.dumps(out))


def _ranks(x: np.ndarray) -> np.ndarray:
    r = np.empty(len(x))
    r[np.argsort(-x, kind="stable")] = np.arange(1, len(x) + 1)
    return r


def rrf(ce: np.ndarray, cos: np.ndarray, k: float = 60, w_ce: float = 0.5) -> np.ndarray:
    """The positive value today (``fused_rerank``): RRF of the dense and cross-encoder orders, in (0, 1]."""
    return (2 * (1 - w_ce) / (k + _ranks(cos)) + 2 * w_ce / (k + _ranks(ce))) / (2 / (k + 1))


def positive(f: dict, **kw: Any) -> np.ndarray:
    """The positive value of every segment: the product over positive terms of ``rrf`` (``kw`` its knobs)."""
    return np.prod([rrf(f["ce"][t], f["raw"][t], **kw) for t in f["pos"]], axis=0)


def penalty(f: dict, alpha: float = 1.0) -> np.ndarray:
    """The NOT penalty of every segment: the product over NOT terms of 1 - orthogonalised cosine, ^ ``alpha``."""
    return np.prod([np.clip(1 - f["orth"][t], 1e-6, None) for t in f["negs"]], axis=0) ** alpha


def doc_rank(f: dict, seg: np.ndarray, w: float = 1.0, violation: np.ndarray | None = None) -> int | None:
    """Rank of the relevant document: best segment + ``w`` × second best (``aggregate_documents``); with
    ``violation`` (per segment) a document holding a violating segment ranks below every other (NS-IR)."""
    by: dict[str, list[int]] = {}
    for i in np.argsort(-seg, kind="stable"):
        by.setdefault(f["doc_ids"][i], []).append(int(i))
    score = {d: seg[ix[0]] + (w * seg[ix[1]] if len(ix) > 1 else 0.0) for d, ix in by.items()}
    bad = {d: bool(violation is not None and any(violation[i] for i in ix)) for d, ix in by.items()}
    order = sorted(score, key=lambda d: (bad[d], -score[d]))
    return next((i + 1 for i, d in enumerate(order) if d in f["relevant"]), None)


def summary(F: dict, rank_of: Callable[[dict], int | None]) -> dict[str, float]:
    """Success@1 (all, one exclusion, two), MRR@10 of a rank function over the questions."""
    r = {q: rank_of(f) for q, f in F.items()}
    hit = {q: r[q] == 1 for q in F}
    one = [q for q in F if len(F[q]["negs"]) == 1]
    two = [q for q in F if len(F[q]["negs"]) >= 2]
    return {
        "S@1": float(np.mean(list(hit.values()))),
        "MRR@10": float(np.mean([1 / r[q] if r[q] and r[q] <= 10 else 0.0 for q in F])),
        "S@1 1 excl.": float(np.mean([hit[q] for q in one])),
        "S@1 2 excl.": float(np.mean([hit[q] for q in two])),
    }


def _names(term: str, text: str) -> bool:
    words = [x for x in re.findall(r"\w+", term.lower()) if x not in STOP and len(x) > 2]
    have = set(re.findall(r"\w+", text.lower()))
    return bool(words) and all(any(x[:5] == y[:5] for y in have) for x in words)


def category(f: dict) -> str:
    """Why the relevant document is not first (today's composition), one class per question."""
    if f["ranked"][0] in f["relevant"]:
        return "hit"
    if not f["relevant"] & set(f["doc_ids"]):
        return "not gathered"
    pos, neg = positive(f), np.max([f["orth"][t] for t in f["negs"]], axis=0)
    g, top = f["doc_ids"].index(next(iter(f["relevant"]))), f["doc_ids"].index(f["ranked"][0])
    if pos[g] >= pos[top] and neg[g] > neg[top]:
        return "negative-side"  # the positive term had it above; the NOT penalty hit the relevant one harder
    if pos[g] < pos[top] and neg[g] <= neg[top]:
        return "composition"  # the first is penalised more yet wins on the positive value
    if pos[g] < pos[top]:
        return "positive-side"  # the first wins on the positive value and the NOT side does not separate them
    return "document aggregation"  # better on both, lost to a document's second segment


def diagnose(F: dict, out: Path | None) -> None:
    """Print S@1/MRR of each signal alone and why the first document wins; the per-question rows to ``out``
    (``.per_query.jsonl``)."""
    signals: dict[str, Callable[[dict], np.ndarray]] = {
        "today (positive x NOT penalty)": lambda f: positive(f) * penalty(f),
        "positive value alone (CE+dense RRF)": positive,
        "positive CE alone": lambda f: np.sum([f["ce"][t] for t in f["pos"]], axis=0),
        "positive cosine alone": lambda f: np.sum([f["raw"][t] for t in f["pos"]], axis=0),
        "whole question CE (naive's reranker)": lambda f: f["ce_q"],
        "NOT penalty alone": penalty,
    }
    rows = []
    for qid, f in F.items():
        row: dict[str, Any] = {"query_id": qid, "exclusions": len(f["negs"]), "candidates": len(f["doc_ids"])}
        for name, fn in signals.items():
            w = 1.0 if name.startswith(("today", "positive value")) else 0.0
            row[name] = doc_rank(f, fn(f), w)
        row["category"] = category(f)
        rows.append(row)
    for name in signals:
        s = summary(F, lambda f, n=name: next(r[n] for r in rows if F[r["query_id"]] is f))
        print(f"| {name} | {s['S@1']:.3f} | {s['MRR@10']:.3f} | {s['S@1 1 excl.']:.3f} | {s['S@1 2 excl.']:.3f} |")
    for n in (1, 2):
        print(n, Counter(r["category"] for r in rows if min(r["exclusions"], 2) == n))
    named = Counter()
    for f in F.values():
        for i, d in enumerate(f["doc_ids"]):
            key = "relevant" if d in f["relevant"] else "other"
            named[key, "all"] += 1
            named[key, "named"] += any(_names(t, f["texts"][i]) for t in f["negs"])
    for key in ("relevant", "other"):
        print(f"{key} candidates naming a NOT term: {named[key, 'named']}/{named[key, 'all']}")
    if out is not None:
        with out.with_suffix(".per_query.jsonl").open("w") as fh:
            for r in rows:
                fh.write(json.dumps(r) + "\n")


def _cv_linear(F: dict, cols: Sequence[Callable[[dict], np.ndarray]], folds: int = 5, seed: int = 0) -> float:
    """Out-of-fold Success@1 (segment level) of a softmax-linear combination of z-scored signals."""
    from scipy.optimize import minimize

    data = []
    for f in F.values():
        x = np.stack([c(f) for c in cols], axis=1)
        x = (x - x.mean(0)) / np.where(x.std(0) > 1e-9, x.std(0), 1)
        data.append((x, np.array([d in f["relevant"] for d in f["doc_ids"]], dtype=float)))

    def loss(w: np.ndarray, part: list) -> float:
        total = 0.0
        for x, y in part:
            s = x @ w
            if y.sum():
                total -= np.logaddexp.reduce(s[y > 0]) - np.logaddexp.reduce(s)
        return total / len(part) + 0.01 * float(w @ w)

    idx, hits = np.random.RandomState(seed).permutation(len(data)), []
    for k in range(folds):
        test = set(idx[k::folds].tolist())
        w = minimize(loss, np.zeros(len(cols)), args=([data[i] for i in idx if i not in test],)).x
        hits += [bool(data[i][1][np.argmax(data[i][0] @ w)] > 0) for i in test]
    return float(np.mean(hits))


def variants(F: dict) -> None:
    """Print S@1/MRR for fusion and NOT-penalty variants on the cached features ``F``, then the out-of-fold S@1
    of linear combinations (``_cv_linear``)."""

    def show(label: str, rank_of: Callable[[dict], int | None]) -> None:
        s = summary(F, rank_of)
        print(f"| {label} | {s['S@1']:.3f} | {s['MRR@10']:.3f} | {s['S@1 1 excl.']:.3f} | {s['S@1 2 excl.']:.3f} |")

    show("today", lambda f: doc_rank(f, positive(f) * penalty(f)))
    for k, w_ce, alpha in [(10, 0.7, 2), (10, 0.85, 4), (30, 0.5, 1), (30, 0.3, 2), (120, 0.3, 0.5)]:
        show(
            f"RRF k {k}, CE weight {w_ce}, NOT^{alpha}",
            lambda f, k=k, w_ce=w_ce, a=alpha: doc_rank(f, positive(f, k=k, w_ce=w_ce) * penalty(f, a)),
        )
    for w in (0.0, 0.5):
        show(f"second segment weight {w}", lambda f, w=w: doc_rank(f, positive(f) * penalty(f), w))
    for signal, taus in (("orth", (0.25, 0.3, 0.4)), ("ce", (0.8, 0.9, 0.98)), ("sent_max", (0.86, 0.88))):
        for tau in taus:

            def constrained(f: dict, s: str = signal, t: float = tau) -> int | None:
                v = np.max([f[s][n] for n in f["negs"]], axis=0)
                return doc_rank(f, positive(f) * penalty(f), violation=v > t)

            show(f"NS-IR constraint: {signal} > {tau}", constrained)

    def logit(p: np.ndarray) -> np.ndarray:
        p = np.clip(p, 1e-6, 1 - 1e-6)
        return np.log(p) - np.log(1 - p)

    for beta in (0.01, 0.05, 0.1):

        def contrast(f: dict, b: float = beta) -> int | None:
            c = np.sum([logit(f["ce_pair"][n]) - logit(f["ce"][f["pos"][0]]) for n in f["negs"]], axis=0)
            return doc_rank(f, np.exp(np.log(positive(f) * penalty(f)) - b * c))

        show(f"contrast CE('positive, X') - CE(positive), beta {beta}", contrast)
    for beta in (0.02, 0.1, 0.3):

        def with_question(f: dict, b: float = beta) -> int | None:
            z = (f["ce_q"] - f["ce_q"].mean()) / (f["ce_q"].std() + 1e-9)
            return doc_rank(f, np.exp(np.log(positive(f) * penalty(f)) + b * z))

        show(f"+ beta x z(whole question CE), beta {beta}", with_question)
    base = lambda f: np.log(positive(f) * penalty(f))  # noqa: E731
    print("cv S@1, today's log score alone (segment level):", round(_cv_linear(F, [base]), 3))
    extra = {
        "whole question CE": lambda f: f["ce_q"],
        "NOT best sentence cosine": lambda f: np.max([f["sent_max"][t] for t in f["negs"]], axis=0),
        "positive best sentence cosine": lambda f: f["sent_max"][f["pos"][0]],
        "NOT as CE query": lambda f: np.max([f["ce"][t] for t in f["negs"]], axis=0),
    }
    for name, fn in extra.items():
        print(f"cv S@1, + {name}:", round(_cv_linear(F, [base, fn]), 3))


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: ``features`` (cache them), ``diagnose`` or ``variants`` on a split."""
    ap = argparse.ArgumentParser(prog="python -m evaluation.negation_s13", description=__doc__.splitlines()[0])
    ap.add_argument("command", choices=("features", "diagnose", "variants"))
    ap.add_argument("--split", default="train")
    ap.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    if args.command == "features":
        features(args.split, args.cache)
        return 0
    F = pickle.loads(args.cache.read_bytes())
    diagnose(F, args.out) if args.command == "diagnose" else variants(F)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

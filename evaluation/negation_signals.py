"""Is there a NOT signal to find? NegConstraint TRAIN split only (issue 19): for every candidate the ``logical``
pipeline gathers (mention step off), the NOT term's evidence by each scorer, and where the relevant passage stands.

    python -m evaluation.negation_signals [--cache PICKLE] [--cross-encoder] [--name logical-negation-signals]

Scorers: the whole passage's cosine with the NOT term (raw, and orthogonalised to the positive terms as the
pipeline composes it), the best stored sentence's cosine (raw, orthogonalised; ``chatbot.sentence_vectors``),
the lexical score (``mention.py``) and, with ``--cross-encoder``, the shipped cross-encoder's score of the NOT
term against the passage and against its best sentence (top 6 candidates by the positive score only: it costs
~40 pairs per question). For each: the share of the candidates (and of the top 6 by positive score) whose
evidence is stronger than the relevant passage's (1.0: the relevant one is always the cleanest, 0.5: chance),
and Success@1 when that evidence demotes, σ((s − median − τ)·100), weight w, on top of the positive score
alone. Writes ``<name>.md`` and ``<name>.summary.json`` (numbers only).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

from evaluation.bench_negation import memoised_services, save_memo
from evaluation.logical_bench.common import SHARED, eval_services
from evaluation.report import results_dir

TOP = 6


def _sig(x: Any) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.asarray(x, dtype=np.float64)))


def features(services: Any, text: str, relevant: set[str], with_ce: bool) -> dict[str, Any] | None:
    """Per candidate: positive score (the pipeline's rerank-terms value), document id and each scorer's NOT evidence."""
    from dataclasses import replace

    from chatbot.index import Hit
    from chatbot.logical.config import config_for
    from chatbot.logical.detect import analyse
    from chatbot.logical.exclusion import MentionKnobs, detect_mentions
    from chatbot.logical.pipeline import logical_retrieve
    from chatbot.logical.query import negative_terms, positive_terms
    from chatbot.logical.scoring import candidate_vectors, orthogonal_negations
    from corpus.model import Segment

    found = analyse(text)
    if found is None:
        return None
    config = replace(config_for(services.settings), mention=False, trace_top=10_000)
    result = logical_retrieve(text, services, config)
    query, cands = found.query, result.candidates
    negs, pos = negative_terms(query), positive_terms(query)
    names = list(dict.fromkeys([*pos, *negs]))
    tv = services.embedder.embed_queries(names)
    orth = orthogonal_negations(query, names, tv)
    # the positive score: the rerank-terms value of each positive term (product), from the memoised reranker
    memo = services.__dict__["_memo"]
    positive = np.prod([_sig([memo.scores[(t, h.segment.id)] for h in cands]) for t in pos], axis=0)
    vecs = candidate_vectors(services, cands)
    stored = services.index.sentences.lookup([h.segment.id for h in cands])
    lexical = detect_mentions(query, cands, MentionKnobs())
    out: dict[str, Any] = {"positive": positive, "docs": [h.segment.doc_id for h in cands], "relevant": relevant}
    for j, t in enumerate(negs):
        raw, ort = tv[names.index(t)], orth[names.index(t)]
        out[f"passage{j}"] = vecs @ raw
        out[f"passage_orth{j}"] = vecs @ ort
        out[f"sentence{j}"] = np.array([float((stored[h.segment.id][1] @ raw).max()) for h in cands])
        out[f"sentence_orth{j}"] = np.array([float((stored[h.segment.id][1] @ ort).max()) for h in cands])
        out[f"lexical{j}"] = lexical.raw[t].score
        if with_ce:
            top = list(np.argsort(-positive, kind="stable")[:TOP])
            ce_p, ce_s = np.full(len(cands), np.nan), np.full(len(cands), np.nan)
            ce = services.reranker
            ce_p[top] = ce.score(t, [cands[i] for i in top])
            for i in top:
                units = stored[cands[i].segment.id][0]
                hits = [Hit(Segment(f"s{k}", "s", u, "", "", 0), 0.0) for k, u in enumerate(units)]
                ce_s[i] = float(np.max(ce.score(t, hits)))
            out[f"ce_passage{j}"], out[f"ce_sentence{j}"] = ce_p, ce_s
    out["n"] = len(negs)
    return out


def document_order(score: np.ndarray, docs: list[str]) -> list[str]:
    """Documents by best segment + second-best segment (second_segment_weight 1.0, as the pipeline)."""
    by: dict[str, list[float]] = {}
    for s, d in sorted(zip(score, docs, strict=True), key=lambda x: -x[0]):
        by.setdefault(d, []).append(float(s))
    agg = {d: v[0] + (v[1] if len(v) > 1 else 0.0) for d, v in by.items()}
    return sorted(agg, key=lambda d: -agg[d])


def success(rows: list[dict[str, Any]], score_of: Any) -> float:
    return float(np.mean([document_order(score_of(r), r["docs"])[0] in r["relevant"] for r in rows]))


def main(argv: list[str] | None = None) -> int:
    from evaluation.harness import load_judged

    parser = argparse.ArgumentParser(prog="python -m evaluation.negation_signals", description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=SHARED / "negconstraint")
    parser.add_argument("--cache", type=Path, default=None)
    parser.add_argument("--cross-encoder", action="store_true")
    parser.add_argument("--name", default="logical-negation-signals")
    args = parser.parse_args(argv)
    services = eval_services(args.data)
    services.index.count()
    from chatbot.sentence_vectors import SentenceVectors

    store = services.index.sentences or SentenceVectors(services.index.client, services.index.name, services.embedder)
    if store.collection() is None:
        raise SystemExit(
            "no stored sentence vectors for this index: run the harness or an ingest once with "
            "CHATBOT_INDEX__SENTENCE_VECTORS=true"
        )
    services.index.sentences = store
    memoised_services(services, args.cache)
    judged = load_judged(args.data, None, "train")
    rows = []
    for qid, text in judged.queries.items():
        r = features(services, text, {d for d, g in judged.qrels[qid].items() if g >= 1}, args.cross_encoder)
        if r is not None and any(d in r["relevant"] for d in r["docs"]):
            rows.append(r)
    save_memo(services, args.cache)
    kinds = ["passage", "passage_orth", "sentence", "sentence_orth", "lexical"]
    kinds += ["ce_passage", "ce_sentence"] if args.cross_encoder else []
    summary: dict[str, Any] = {"questions": len(judged.queries), "with_relevant_candidate": len(rows), "scorers": {}}
    summary["positive_only_success@1"] = round(success(rows, lambda r: r["positive"]), 4)
    for kind in kinds:
        stronger, stronger_top = [], []
        for r in rows:
            rel = [i for i, d in enumerate(r["docs"]) if d in r["relevant"]]
            top = np.argsort(-r["positive"], kind="stable")[:TOP]
            for j in range(r["n"]):
                x = r[f"{kind}{j}"]
                known = ~np.isnan(x)
                rel_known = [i for i in rel if known[i]]
                if not rel_known:
                    continue
                level = max(x[i] for i in rel_known)
                stronger.append(float(np.mean(x[known] > level)))
                stronger_top.append(float(np.mean([x[i] > level for i in top if known[i]])))
        best = (0.0, None)
        for tau in (0.0, 0.03, 0.06):
            for w in (0.1, 0.3, 0.6, 0.9):

                def demoted(r: dict[str, Any], tau: float = tau, w: float = w, kind: str = kind) -> np.ndarray:
                    out = r["positive"].copy()
                    for j in range(r["n"]):
                        x = np.nan_to_num(r[f"{kind}{j}"], nan=-np.inf)
                        finite = np.isfinite(x)
                        z = np.where(finite, x - np.median(x[finite]), -np.inf)
                        out = out * (1 - w * _sig((z - tau) * 100))
                    return out

                s1 = success(rows, demoted)
                best = max(best, (s1, {"tau": tau, "weight": w}), key=lambda b: b[0])
        summary["scorers"][kind] = {
            "share_stronger_than_relevant": round(float(np.mean(stronger)), 3),
            "share_stronger_top6": round(float(np.mean(stronger_top)), 3),
            "best_demotion_success@1": round(best[0], 4),
            "best_demotion": best[1],
        }
    lines = [
        "# Is there a NOT signal? NegConstraint train, today's candidates (issue 19)",
        "",
        f"Command: `python -m evaluation.negation_signals {' '.join(argv or [])}`".strip(),
        "",
        f"{len(rows)} of {len(judged.queries)} train questions have the relevant passage among the candidates. "
        f"Success@1 of the positive score alone (no NOT at all): {summary['positive_only_success@1']:.3f}.",
        "",
        "| NOT scorer | share of candidates with stronger NOT evidence than the relevant | same, top 6 by positive "
        "score | best Success@1 demoting by it (τ, w) |",
        "|---|---|---|---|",
    ]
    for kind, v in summary["scorers"].items():
        lines.append(
            f"| {kind} | {v['share_stronger_than_relevant']:.3f} | {v['share_stronger_top6']:.3f} | "
            f"{v['best_demotion_success@1']:.3f} ({v['best_demotion']['tau']}, {v['best_demotion']['weight']}) |"
        )
    lines += ["", "1.0: the relevant passage is always the cleanest of the candidates; 0.5: chance.", ""]
    (results_dir() / f"{args.name}.md").write_text("\n".join(lines), encoding="utf-8")
    (results_dir() / f"{args.name}.summary.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

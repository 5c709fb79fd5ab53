"""Leave-one-set-out comparison of relevance-gate models on every dev set (session 9).

The dev sets were written by different people at different times, so fitting on all sets but one and scoring the
left-out one mimics a fresh set better than k-fold over pooled questions (session 8: a refit that won on k-fold
lost on fresh data). Each model spec (features, regularisation, threshold rule) is refitted per fold by
``gate_fit.fit`` (C and threshold chosen inside the training sets only) and scored on the left-out set; the
shipped gate file is scored as it is (it was fitted on some of these sets: in-sample there).

    python -m evaluation.redteam.gate_cv --retrieval /tmp/gate9/idx/gate-retrieval-e5-onnx.jsonl \
        --data-dir /tmp/gate9/idx --json /tmp/gate9/cv.json

Reads the retrieval cache written by ``gate_fit`` (links, ranked documents and cross-encoder scores per
question, with the current default pipeline) and recomputes the features with this code.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from evaluation.redteam import gate_fit
from evaluation.redteam.gate_fit import corpus_of, features_from, pr_cell, refusal_pr

PROG = "python -m evaluation.redteam.gate_cv"

BASE = (
    "dense_best",
    "dense_second",
    "dense_margin",
    "cross_encoder",
    "cross_encoder_it",
    "lexical",
    "unmatched_rare",
    "italian",
    "length",
    "exclusion",
)
C_GRID = (0.03, 0.1, 0.3, 1.0)  # the session-7/8 fits chose 0.3; the ends of gate_fit's grid never won
S8 = (*BASE, "unknown_words", "dense_best_it", "dense_margin_it", "lexical_it", "unknown_words_it")


def answer_parts(question: str, top: Sequence[Any], language: str, by_doc: dict[str, list[Any]]) -> dict[str, float]:
    """The composer's answer sentence (compose.answer_scorer=cues) over the links: its score parts."""
    from chatbot.stages.answer_first import compose_answer_first

    comp = compose_answer_first(question, top, language, document_segments=lambda d: by_doc.get(d, []))
    parts = (comp.detail or {}).get("answer", {}).get("parts", {})
    return {f"ans_{k}": float(v) for k, v in parts.items()}


def trained_scorer() -> Any:
    """The trained answer scorer (compose.answer_scorer=cues+trained) on its own e5-onnx vectors."""
    from chatbot.embedders import load_embedder
    from chatbot.stages.answer_trained import EMBEDDER, TrainedAnswerModel

    return TrainedAnswerModel(load_embedder(EMBEDDER, 2))


def load_rows(cache: Path, data_dir: Path, trained: Any | None = None) -> list[dict[str, Any]]:
    """Every cached, gated question with its features (this code's ``gate_features``) and the candidate answer
    features: the cues composer's answer sentence over the links (``ans_*``), and with ``trained`` the trained
    answer scorer's best P(answers) over the candidate sentences of the links (``ans_trained``) and of the
    first document only (``ans_trained_top``)."""
    from chatbot.index import Hit
    from chatbot.stages.answer_first import answer_candidates

    segments, lexicon = corpus_of(data_dir)
    by_doc: dict[str, list[Any]] = {}
    for seg in sorted(segments.values(), key=lambda s: (s.doc_id, s.position)):
        by_doc.setdefault(seg.doc_id, []).append(seg)
    rows = []
    for line in cache.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        rec = json.loads(line)
        if rec.get("skipped"):
            continue
        feats = features_from(rec, segments, lexicon)
        if feats is not None:
            text = rec["positive"] or rec["query"]
            top = [Hit(segments[h["id"]], 0.0, h["detail"]) for h in rec["top"]]
            ans = answer_parts(text, top, rec["gate_language"], by_doc)
            for k in ("cue", "heading", "overlap", "topic"):
                ans.setdefault(f"ans_{k}", 0.0)
            ans["ans_evidence"] = ans["ans_cue"] + ans["ans_heading"] + ans["ans_overlap"]
            if trained is not None:
                units, _ = answer_candidates(top, top, lambda d: by_doc.get(d, []))
                texts = [u.text for u in units]
                first = [u.text for u in units if u.doc_rank == 0]
                ans["ans_trained"] = float(np.max(trained(text, texts))) if texts else 0.0
                ans["ans_trained_top"] = float(np.max(trained(text, first))) if first else 0.0
            rows.append({**rec, "features": {**feats, **ans}})
    return rows


def group_of(row: dict[str, Any]) -> str:
    """The left-out unit: one file (MEDIQA and MEDIQA-it count as one; gate_dev_s8 joins the exclusion sets)."""
    src = row["source"]
    if src.startswith("mediqa"):
        return "mediqa-train"
    if src == "gate_dev_s8.jsonl" or src.startswith("exclusions/"):
        return "exclusions"
    return src


def _logit(p: float) -> float:
    return math.log(p / (1 - p))


def fit_spec(X: np.ndarray, y: np.ndarray, italian: np.ndarray, spec: dict[str, Any]) -> dict[str, Any]:
    """``gate_fit.fit`` with the spec's C grid and threshold rule; ``per_language`` moves the Italian threshold
    (through the intercept of Italian questions) to the lowest one whose out-of-fold refusal recall reaches the
    spec's target, and the English one likewise."""
    old = gate_fit.C_GRID, gate_fit.RECALL_TARGET
    gate_fit.C_GRID = tuple(spec.get("c_grid", C_GRID))
    target = spec.get("recall_target", old[1])  # one recall for both languages, or {0: English, 1: Italian}
    gate_fit.RECALL_TARGET = min(target.values()) if isinstance(target, dict) else target
    try:
        res = gate_fit.fit(X, y, italian, seeds=(0,), rule=spec.get("rule", "recall"))
    finally:
        gate_fit.C_GRID, gate_fit.RECALL_TARGET = old
    res["shift"] = {0: 0.0, 1: 0.0}
    if spec.get("per_language"):
        oof = res["oof"]
        for k in (0, 1):
            m = italian == k
            best = res["threshold"]
            goal = target[k] if isinstance(target, dict) else target
            for t in np.round(np.arange(0.10, 0.81, 0.01), 2):
                if gate_fit._refusal_recall(y[m], oof[m] >= t) >= goal:
                    best = float(t)
                    break
            res["shift"][k] = _logit(res["threshold"]) - _logit(best)  # z + shift >= logit(t) <=> z >= logit(best)
    return res


def probability(res: dict[str, Any], X: np.ndarray, italian: np.ndarray) -> np.ndarray:
    """P(answerable), the per-language shift included, for the fit's own threshold."""
    z = ((X - res["mean"]) / res["scale"]) @ res["coef"] + res["intercept"]
    z = z + np.where(italian, res["shift"][1], res["shift"][0])
    return 1.0 / (1.0 + np.exp(-z))


def predict(res: dict[str, Any], X: np.ndarray, italian: np.ndarray) -> np.ndarray:
    return probability(res, X, italian) >= res["threshold"]


def shipped_probabilities(rows: Sequence[dict[str, Any]], gate_file: Path, embedder: str = "e5-onnx") -> np.ndarray:
    from chatbot.stages.relevance_gate import load_gate

    model = load_gate(str(gate_file), embedder)
    return np.array([model.probability(r["features"]) for r in rows])


def shipped_answers(rows: Sequence[dict[str, Any]], gate_file: Path, embedder: str = "e5-onnx") -> np.ndarray:
    from chatbot.stages.relevance_gate import load_gate

    model = load_gate(str(gate_file), embedder)
    return np.array([model.relevant(r["features"]) for r in rows])  # each language at its own bar


# the sets the shipped gate (session 7's fit) was fitted on: its numbers there are in-sample
SHIPPED_FIT_SETS = ("relevance_dev.jsonl", "gate_dev.jsonl", "mediqa-train")


def sweep(p: np.ndarray, y: np.ndarray, italian: np.ndarray, groups: np.ndarray) -> str:
    """The shipped gate's probability threshold per language: refusal precision / recall / in-scope answered on
    every set and on the sets it was not fitted on."""
    fresh = ~np.isin(groups, SHIPPED_FIT_SETS)
    lines = [
        "| threshold | en, all sets | it, all sets | en, sets not fitted on | it, sets not fitted on |",
        "|---|---|---|---|---|",
    ]
    for t in np.round(np.arange(0.10, 0.56, 0.04), 2):
        cells = []
        for mask in (np.ones(len(y), bool), fresh):
            for k in (0, 1):
                m = mask & (italian == k)
                cells.append(pr_cell(refusal_pr(y[m], p[m] >= t)))
        lines.append(f"| {t:.2f} | {cells[0]} | {cells[1]} | {cells[2]} | {cells[3]} |")
    return "\n".join(lines) + "\n"


def report(y: np.ndarray, italian: np.ndarray, groups: np.ndarray, answer: np.ndarray) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for lang, k in (("en", 0), ("it", 1), ("all", None)):
        m = np.ones(len(y), bool) if k is None else italian == k
        out[lang] = refusal_pr(y[m], answer[m])
    out["per_set"] = {
        g: {
            lang: refusal_pr(y[(groups == g) & (italian == k)], answer[(groups == g) & (italian == k)])
            for lang, k in (("en", 0), ("it", 1))
        }
        for g in sorted(set(groups))
    }
    out["wrong"] = int((answer != y).sum())
    return out


def loso(
    X: np.ndarray, y: np.ndarray, italian: np.ndarray, groups: np.ndarray, spec: dict[str, Any]
) -> tuple[np.ndarray, dict[str, Any]]:
    """Out-of-set decisions of ``spec`` and the fit on each fold (C, threshold)."""
    answer = np.zeros(len(y), dtype=bool)
    margin = np.zeros(len(y))  # logit(P) - logit(threshold): comparable across folds
    fits = {}
    for g in sorted(set(groups)):
        held = groups == g
        res = fit_spec(X[~held], y[~held], italian[~held], spec)
        p = np.clip(probability(res, X[held], italian[held]), 1e-9, 1 - 1e-9)
        answer[held] = p >= res["threshold"]
        margin[held] = np.log(p / (1 - p)) - _logit(res["threshold"])
        fits[g] = {"C": res["C"], "threshold": res["threshold"], "shift_it": round(res["shift"][1], 3)}
    fits["margin"] = margin
    return answer, fits


def matched(
    scores: dict[str, np.ndarray], y: np.ndarray, italian: np.ndarray, groups: np.ndarray, reference: str = "shipped"
) -> str:
    """Threshold-free comparison on the sets the shipped gate was not fitted on, per language: AUC of each model's
    out-of-set score, and the share of in-scope questions it answers at the reference's refusal recall (the
    threshold set on those questions, the same rule for every model: a ranking comparison, not a fresh number)."""
    from sklearn.metrics import roc_auc_score

    fresh = ~np.isin(groups, SHIPPED_FIT_SETS)
    head = "| model | en AUC | en in scope answered | it AUC | it in scope answered |"
    lines = [head, "|---|---|---|---|---|"]
    for name, sc in scores.items():
        cells = []
        for k in (0, 1):
            m = fresh & (italian == k)
            ref = scores[reference][m]
            target = float((ref[~y[m]] < 0).mean())
            oos = np.sort(sc[m][~y[m]])
            cut = oos[int(np.ceil(target * len(oos))) - 1] if target > 0 else -np.inf
            cells += [f"{roc_auc_score(y[m], sc[m]):.3f}", f"{(sc[m][y[m]] > cut).mean():.3f} (recall {target:.3f})"]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def markdown(results: dict[str, Any]) -> str:
    """Pooled and per-left-out-set tables: refusal precision / refusal recall / in-scope answered."""
    names = list(results)
    lines = [
        "| model | en | it | all | wrong | LOSO AUC en / it |",
        "|---|---|---|---|---|---|",
    ]
    for n in names:
        r = results[n]
        auc = r.get("auc", {})
        a = f"{auc.get('en', '-')} / {auc.get('it', '-')}" if auc else "(fixed model)"
        lines.append(f"| {n} | {pr_cell(r['en'])} | {pr_cell(r['it'])} | {pr_cell(r['all'])} | {r['wrong']} | {a} |")
    groups = list(results[names[0]]["per_set"])
    lines += ["", "| left-out set | model | en | it |", "|---|---|---|---|"]
    for g in groups:
        first = results[names[0]]["per_set"][g]
        counts = f"{g} (en {first['en']['n']}, it {first['it']['n']})"
        for k, n in enumerate(names):
            ps = results[n]["per_set"][g]
            lines.append(f"| {counts if k == 0 else ''} | {n} | {pr_cell(ps['en'])} | {pr_cell(ps['it'])} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n")[0])
    parser.add_argument("--retrieval", type=Path, required=True)
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--specs", type=Path, default=None, help="JSON list of model specs (default: built-in)")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--markdown", type=Path, default=None, help="write the tables here")
    parser.add_argument("--trained", action="store_true", help="add the trained answer scorer's features")
    parser.add_argument("--rows-cache", type=Path, default=None, help="features per question (JSON; reused if present)")
    args = parser.parse_args(argv)
    if args.rows_cache and args.rows_cache.exists():
        rows = json.loads(args.rows_cache.read_text(encoding="utf-8"))
    else:
        rows = load_rows(args.retrieval, args.data_dir, trained_scorer() if args.trained else None)
        if args.rows_cache:
            keep = ("id", "text", "language", "in_scope", "source", "gate_language", "features")
            args.rows_cache.write_text(json.dumps([{k: r.get(k) for k in keep} for r in rows]), encoding="utf-8")
    y = np.array([bool(r["in_scope"]) for r in rows])
    italian = np.array([r["language"] == "it" for r in rows])
    groups = np.array([group_of(r) for r in rows])
    specs = json.loads(args.specs.read_text()) if args.specs else [{"name": "refit-s7", "features": list(BASE)}]
    results: dict[str, Any] = {}
    p_shipped = shipped_probabilities(rows, gate_fit.GATE_FILE)
    shipped = shipped_answers(rows, gate_fit.GATE_FILE)
    from chatbot.stages.relevance_gate import load_gate

    gate_model = load_gate(str(gate_fit.GATE_FILE), "e5-onnx")
    shipped_threshold = np.array([gate_model.threshold_for(r["features"]) for r in rows])
    results["shipped"] = report(y, italian, groups, shipped)
    decisions = {"shipped": shipped}
    for spec in specs:
        X = np.array([[r["features"][f] for f in spec["features"]] for r in rows])
        answer, fits = loso(X, y, italian, groups, spec)
        margin = fits.pop("margin")
        decisions[spec["name"]] = answer
        decisions[spec["name"] + ":margin"] = margin
        auc = {lang: gate_fit._auc(y[italian == k], margin[italian == k]) for lang, k in (("en", 0), ("it", 1))}
        results[spec["name"]] = {**report(y, italian, groups, answer), "auc": auc, "fits": fits, "spec": spec}
        s = results[spec["name"]]
        print(spec["name"], "en", s["en"], "it", s["it"], "wrong", s["wrong"], "auc", auc, file=sys.stderr)
    s = results["shipped"]
    print("shipped", "en", s["en"], "it", s["it"], "wrong", s["wrong"], file=sys.stderr)
    if args.markdown:
        pc = np.clip(p_shipped, 1e-9, 1 - 1e-9)
        scores = {"shipped": np.log(pc / (1 - pc)) - np.log(shipped_threshold / (1 - shipped_threshold))}
        scores.update({k[: -len(":margin")]: v for k, v in decisions.items() if k.endswith(":margin")})
        text = (
            markdown(results) + "\n" + matched(scores, y, italian, groups) + "\n" + sweep(p_shipped, y, italian, groups)
        )
        args.markdown.write_text(text, encoding="utf-8")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
        np.savez(
            args.json.with_suffix(".npz"),
            ids=np.array([r["id"] for r in rows]),
            y=y,
            italian=italian,
            groups=groups,
            **{k.replace(":", "__"): v for k, v in decisions.items()},
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

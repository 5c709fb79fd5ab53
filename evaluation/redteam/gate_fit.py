"""Fit the classifier relevance gate (``safety.relevance_gate=classifier``) on dev questions only.

Dev data (never the red-team set, the reply sets or any test split):
- ``relevance_dev.jsonl`` (133 hand-written questions, en/it, the threshold gate's dev set);
- ``gate_dev.jsonl`` (hand-written for this gate: patients' wording, Italian, near-domain out-of-scope questions
  and exclusion questions, en/it);
- MEDIQA / MEDIQA-it consumer questions of the TRAIN split on non-maternal topics, as out-of-scope questions
  (named by id only in the outputs).

Each question goes through the answer path's own steps up to the gate with the settings in force (route,
pipeline, links, cross-encoder: the product's features), against the demo cards indexed in
``/tmp/redteam-EMBEDDER``. A logistic regression on standardised features (``chatbot.stages.relevance_gate``),
each (language, class) group weighted equally; C chosen by cross-validated log-loss (5 folds x 3 seeds), the
probability threshold by the mean balanced accuracy of the two languages. Writes the coefficients of this embedder into
``models/relevance_gate/gate.json`` (other embedders' entries kept) and prints the cross-validated numbers.

    CHATBOT_EMBEDDING__MODEL=e5-onnx python -m evaluation.redteam.gate_fit
"""

from __future__ import annotations

import argparse
import json
import sys
from importlib.resources import files
from pathlib import Path
from typing import Any

import numpy as np

from chatbot.resources import shipped_model
from chatbot.stages.relevance_gate import FEATURES
from evaluation.redteam.batch import default_data_dir, ensure_demo_index
from evaluation.redteam.relevance import DEV, MATERNAL_WORDS, SHARED, _queries
from evaluation.report import command_line
from evaluation.splits import split_of

PROG = "python -m evaluation.redteam.gate_fit"
GATE_DEV = Path(str(files("evaluation.redteam") / "gate_dev.jsonl"))
GATE_FILE = shipped_model("relevance_gate") / "gate.json"
C_GRID = (0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0)


def dev_rows() -> list[dict[str, Any]]:
    """{id, text, language, in_scope, source} of every dev question (MEDIQA's text is never written out)."""
    rows = []
    for path in (DEV, GATE_DEV):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                r = json.loads(line)
                rows.append({**r, "source": path.name})
    for lang, name in (("en", "mediqa"), ("it", "mediqa-it")):
        qfile = SHARED / name / "queries.jsonl"
        if not qfile.exists():
            continue
        for qid, text in _queries(qfile).items():
            if split_of(qid) == "train" and not MATERNAL_WORDS.search(text):
                rows.append({"id": f"{name}#{qid}", "text": text, "language": lang, "in_scope": False, "source": name})
    return rows


def features_of(rows: list[dict[str, Any]], data_dir: Path, log=print) -> list[dict[str, Any]]:
    """The gate's features of each question, computed on the answer path's own steps up to the gate
    (chatbot.answer: language, retrieval text, route, pipeline, content gate, urgent fillers), without
    composing a reply; also whether the threshold gate answered. Skips what ``answer`` would not search
    (unsupported language, nothing left to search)."""
    from chatbot.content_gate import gate_result
    from chatbot.language import detect_language
    from chatbot.pipeline import Services, run_pipeline
    from chatbot.settings import load_settings
    from chatbot.stages import safety as sf
    from chatbot.stages.relevance import classifier_features, relevance, without_urgent_fillers
    from chatbot.stages.route import route

    settings = load_settings(paths={"data_dir": data_dir})
    services = Services(settings)
    out = []
    for i, r in enumerate(rows):
        if i % 25 == 0:
            log(f"{i}/{len(rows)}")
        lang = detect_language(r["text"], min_confidence=settings.safety.language_min_confidence)
        query = sf.retrieval_text(r["text"])
        if not lang.supported or not query:
            continue
        chosen = route(query, None, settings)
        result = run_pipeline(chosen.pipeline, query, services)
        gate_result(result, services)
        result.top = without_urgent_fillers(result, services)
        feats = classifier_features(query, result, services, lang.language, chosen.positive)
        if feats is None:
            continue
        _, score, threshold = relevance(result.top, services, lang.language, positive=chosen.positive)
        by_threshold = score is None or threshold is None or score >= threshold
        out.append(
            {
                **r,
                "features": feats,
                "threshold_relevant": bool(by_threshold),
                "links": [h.segment.id for h in result.top],
                "query": query if query != r["text"] else None,
                "positive": chosen.positive,
            }
        )
    return out


def _document(models: dict[str, Any]) -> dict[str, Any]:
    return {"features": list(FEATURES), "models": models}


def _entry(coef, intercept, mean, scale, threshold, **extra: Any) -> dict[str, Any]:
    return {
        "coef": [round(float(c), 6) for c in coef],
        "intercept": round(float(intercept), 6),
        "mean": [round(float(m), 6) for m in mean],
        "scale": [round(float(s), 6) for s in scale],
        "threshold": round(float(threshold), 4),
        **extra,
    }


def _weights(y: np.ndarray, italian: np.ndarray) -> np.ndarray:
    """Each (language, class) group weighs the same in total."""
    w = np.zeros(len(y))
    for lang in (0, 1):
        for cls in (0, 1):
            mask = (italian == lang) & (y == cls)
            if mask.any():
                w[mask] = 1.0 / mask.sum()
    return w * len(y) / w.sum()


def balanced_accuracy(y: np.ndarray, answer: np.ndarray) -> float:
    return float((answer[y].mean() + (~answer[~y]).mean()) / 2)


def _mean_ba(y: np.ndarray, italian: np.ndarray, answer: np.ndarray) -> float:
    return float(np.mean([balanced_accuracy(y[italian == k], answer[italian == k]) for k in (0, 1)]))


def fit(X: np.ndarray, y: np.ndarray, italian: np.ndarray, seeds: tuple[int, ...] = (0, 1, 2)) -> dict[str, Any]:
    """C by cross-validated log-loss (calibration; 5 folds repeated with ``seeds``, each (language, class) group
    weighted equally), the probability threshold by the mean balanced accuracy of the two languages on the
    out-of-fold probabilities at that C; then the final fit on all dev questions."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import log_loss
    from sklearn.model_selection import StratifiedKFold

    strata = y.astype(int) * 2 + italian.astype(int)
    splits = [list(StratifiedKFold(5, shuffle=True, random_state=seed).split(X, strata)) for seed in seeds]
    weights = _weights(y, italian)
    runs: dict[float, list[np.ndarray]] = {}
    for c in C_GRID:
        runs[c] = []
        for folds in splits:
            oof = np.zeros(len(y))
            for tr, te in folds:
                mean, scale = X[tr].mean(0), X[tr].std(0) + 1e-9
                model = LogisticRegression(C=c, max_iter=5000)
                model.fit((X[tr] - mean) / scale, y[tr], sample_weight=_weights(y[tr], italian[tr]))
                oof[te] = model.predict_proba((X[te] - mean) / scale)[:, 1]
            runs[c].append(oof)
    losses = {c: float(np.mean([log_loss(y, oof, sample_weight=weights) for oof in oofs])) for c, oofs in runs.items()}
    c = min(C_GRID, key=lambda k: (round(losses[k], 4), k))
    thresholds = np.round(np.arange(0.2, 0.81, 0.02), 2)
    ba = {float(t): float(np.mean([_mean_ba(y, italian, oof >= t) for oof in runs[c]])) for t in thresholds}
    t = max(ba, key=lambda k: (round(ba[k], 4), -k))  # ties: the lower threshold (answer rather than refuse)
    mean, scale = X.mean(0), X.std(0) + 1e-9
    model = LogisticRegression(C=c, max_iter=5000)
    model.fit((X - mean) / scale, y, sample_weight=weights)
    return {
        "C": c,
        "threshold": t,
        "cv_log_loss": {str(k): round(v, 4) for k, v in losses.items()},
        "cv_mean_balanced_accuracy": round(ba[t], 4),
        "oof": runs[c][0],
        "coef": model.coef_[0],
        "intercept": model.intercept_[0],
        "mean": mean,
        "scale": scale,
    }


def refusal_pr(y: np.ndarray, answer: np.ndarray) -> dict[str, float | None]:
    """Precision and recall of refusals (the positive class: an out-of-scope question refused)."""
    refused = ~answer
    tp = int((refused & ~y).sum())
    return {
        "refusal_precision": round(tp / refused.sum(), 4) if refused.sum() else None,
        "refusal_recall": round(tp / (~y).sum(), 4) if (~y).sum() else None,
        "in_scope_answered": round(float(answer[y].mean()), 4) if y.any() else None,
        "n": int(len(y)),
    }


def _auc(y: np.ndarray, x: np.ndarray) -> float | None:
    from sklearn.metrics import roc_auc_score

    return round(float(roc_auc_score(y, x)), 4) if 0 < y.sum() < len(y) else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", type=Path, default=None, help="default /tmp/redteam-EMBEDDER")
    parser.add_argument("--features", type=Path, default=None, help="cache of the features (JSONL; reused if present)")
    parser.add_argument("--out", type=Path, default=GATE_FILE, help=f"gate file to update (default {GATE_FILE})")
    args = parser.parse_args(argv)
    log = lambda *a: print(*a, file=sys.stderr)  # noqa: E731
    from chatbot.settings import load_settings

    kind = load_settings().embedding.model
    data_dir = args.data_dir or default_data_dir()
    cache = args.features or data_dir / f"gate-features-{kind}.jsonl"
    cached = {}
    if cache.exists():  # features of questions already measured (same text) are reused
        for line in cache.read_text(encoding="utf-8").splitlines():
            if line.strip():
                r = json.loads(line)
                cached[(r["id"], r["text"])] = r
        log(f"features of {len(cached)} questions from {cache}")
    wanted = dev_rows()
    todo = [r for r in wanted if (r["id"], r["text"]) not in cached]
    if todo:
        ensure_demo_index(data_dir, log)
        for r in features_of(todo, data_dir, log):
            cached[(r["id"], r["text"])] = r
        cache.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in cached.values()), encoding="utf-8")
    rows = [cached[(r["id"], r["text"])] for r in wanted if (r["id"], r["text"]) in cached]
    X = np.array([[r["features"][f] for f in FEATURES] for r in rows])
    y = np.array([bool(r["in_scope"]) for r in rows])
    italian = np.array([r["language"] == "it" for r in rows])
    res = fit(X, y, italian)
    per_language: dict[str, Any] = {}
    for k, lang in ((False, "en"), (True, "it")):
        m = italian == k
        per_language[lang] = {
            "classifier_cv": refusal_pr(y[m], res["oof"][m] >= res["threshold"]),
            "threshold_gate": refusal_pr(y[m], np.array([r["threshold_relevant"] for r in rows])[m]),
            "feature_auc": {f: _auc(y[m], X[m, i]) for i, f in enumerate(FEATURES) if f not in ("italian",)},
        }
    entry = _entry(
        res["coef"],
        res["intercept"],
        res["mean"],
        res["scale"],
        res["threshold"],
        C=res["C"],
        fitted_on={
            "questions": int(len(y)),
            "in_scope": int(y.sum()),
            "out_of_scope": int((~y).sum()),
            "sources": sorted({r["source"] for r in rows}),
        },
        cv_log_loss=res["cv_log_loss"],
        cv_mean_balanced_accuracy=res["cv_mean_balanced_accuracy"],
        cv=per_language,
        command=command_line(PROG, argv),
    )
    doc = json.loads(args.out.read_text(encoding="utf-8")) if args.out.exists() else _document({})
    if doc.get("features") != list(FEATURES):
        doc = _document({})  # the feature set changed: every embedder's entry must be refitted
    doc["models"][kind] = entry
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    print(json.dumps({"embedder": kind, **{k: v for k, v in entry.items() if k not in ("mean", "scale")}}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

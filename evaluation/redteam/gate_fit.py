"""Fit the classifier relevance gate (``safety.relevance_gate=classifier``) on dev questions only.

Dev data (never the red-team set or any test split; every set below is spent, session 9):
- ``relevance_dev.jsonl`` (133 hand-written questions, en/it, the threshold gate's dev set);
- ``gate_dev.jsonl`` (hand-written for this gate: patients' wording, Italian, near-domain out-of-scope questions
  and exclusion questions, en/it); ``gate_dev_s8.jsonl`` (12 more exclusion questions, session 8);
- ``relevance_test.jsonl`` (206, by an independent author; scored once as held-out in session 7, dev since);
- ``gate_heldout_v2.jsonl`` (160, scored once as held-out in session 8, dev since);
- the questions of the reply sets (``evaluation/replies/*.jsonl``: every one has a card that answers it) and of
  the exclusion sets over the cards (``evaluation/data/exclusions_cards_*.jsonl``: the positive part is
  answerable), all in scope;
- MEDIQA / MEDIQA-it consumer questions of the TRAIN split on non-maternal topics, as out-of-scope questions
  (named by id only in the outputs).

Each question goes through the answer path's own steps up to the gate with the settings in force (route,
pipeline, links, cross-encoder: the product's features), against the demo cards indexed in
``/tmp/redteam-EMBEDDER``. A logistic regression on standardised features (``chatbot.stages.relevance_gate``),
each (language, class) group weighted equally; C chosen by cross-validated log-loss (5 folds x 3 seeds), the
probability threshold on the plateau of the mean balanced accuracy of the two languages: the lowest whose
out-of-fold refusal recall reaches RECALL_TARGET in both. Leave-one-file-out: the whole
procedure refitted without each source (MEDIQA and MEDIQA-it count as one) and scored on it, the nearest thing to
a fresh set by another author that dev data gives. Writes the coefficients of this embedder into
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
GATE_DEV_S8 = Path(str(files("evaluation.redteam") / "gate_dev_s8.jsonl"))  # exclusion questions, session 8
TEST = Path(str(files("evaluation.redteam") / "relevance_test.jsonl"))  # scored once in session 7: dev now
HELDOUT_V2 = Path(str(files("evaluation.redteam") / "gate_heldout_v2.jsonl"))  # scored once in session 8: dev now
HELDOUT_V3 = Path(str(files("evaluation.redteam") / "gate_heldout_v3.jsonl"))  # scored once in session 9: dev now
HELDOUT_V4 = Path(str(files("evaluation.redteam") / "gate_heldout_v4.jsonl"))  # scored once in session 10: dev now
# scored once in sessions 11-14, dev now (first fitted on in session 15)
HELDOUT_V5_V8 = tuple(Path(str(files("evaluation.redteam") / f"gate_heldout_v{v}.jsonl")) for v in (5, 6, 7, 8))
# scored once in sessions 15-28 and spent, not in the session-11 rows (``dev_rows(later=True)`` adds them)
LATER_GATE_SETS = tuple(
    Path(str(files("evaluation.redteam") / f"gate_heldout_v{v}.jsonl")) for v in (9, 10, 11, 13, 14, 15, 16, 17, 18)
)
REPO = Path(__file__).resolve().parents[2]
REPLY_SETS = REPO / "evaluation" / "replies"  # every question has a card that answers it: in scope
EXCLUSION_SETS = REPO / "evaluation" / "data"  # exclusions_cards_*.jsonl: the positive part is answerable
GATE_FILE = shipped_model("relevance_gate") / "gate.json"
C_GRID = (0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0)
# The goal is refusal recall >= 0.88 per language on fresh questions; out-of-fold recall on dev ran ~0.05 above
# the recall on a file by another author (relevance_test.jsonl left out, session 8), hence the margin.
RECALL_TARGET = 0.92
BA_SLACK = 0.01


def dev_rows(later: bool = False) -> list[dict[str, Any]]:
    """{id, text, language, in_scope, source} of every dev question (MEDIQA's text is never written out);
    ``later``: the gate sets spent since session 15 too (LATER_GATE_SETS)."""
    rows = []
    for path in (
        DEV,
        GATE_DEV,
        GATE_DEV_S8,
        TEST,
        HELDOUT_V2,
        HELDOUT_V3,
        HELDOUT_V4,
        *HELDOUT_V5_V8,
        *(LATER_GATE_SETS if later else ()),
    ):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                r = json.loads(line)
                rows.append({**r, "source": path.name})
    for folder, prefix in ((REPLY_SETS, "replies/"), (EXCLUSION_SETS, "exclusions/")):
        pattern = "*.jsonl" if prefix == "replies/" else "exclusions_cards_*.jsonl"
        for path in sorted(folder.glob(pattern)):
            for line in path.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    r = json.loads(line)
                    rows.append(
                        {
                            "id": r["id"],
                            "text": r["question"],
                            "language": r["language"],
                            "in_scope": True,
                            "source": prefix + path.name,
                            "card_ids": [r["card_id"]] if r.get("card_id") else list(r.get("good_card_ids", [])),
                        }
                    )
    for lang, name in (("en", "mediqa"), ("it", "mediqa-it")):
        qfile = SHARED / name / "queries.jsonl"
        if not qfile.exists():
            continue
        for qid, text in _queries(qfile).items():
            if split_of(qid) == "train" and not MATERNAL_WORDS.search(text):
                rows.append({"id": f"{name}#{qid}", "text": text, "language": lang, "in_scope": False, "source": name})
    return rows


class _Recorder:
    """The real cross-encoder, remembering the scores the gate asked for (stored in the cache)."""

    def __init__(self, model: Any) -> None:
        self.model, self.name, self.scores = model, model.name, None

    def score(self, question: str, hits: list[Any]) -> Any:
        self.scores = [float(x) for x in self.model.score(question, hits)]
        return np.array(self.scores)


class _Replay:
    """The cross-encoder scores stored in the cache, given back in the gate's order."""

    def __init__(self, name: str, scores: list[float] | None) -> None:
        self.name, self.scores = name, scores

    def score(self, question: str, hits: list[Any]) -> np.ndarray:
        if self.scores is None or len(self.scores) != len(hits):
            raise ValueError("cached retrieval has no cross-encoder scores for these links: delete the cache")
        return np.array(self.scores)


def _hit_record(hit: Any) -> dict[str, Any]:
    return {"id": hit.segment.id, "detail": {k: float(v) for k, v in hit.detail.items()}}


def retrieval_of(rows: list[dict[str, Any]], data_dir: Path, log=print) -> list[dict[str, Any]]:
    """What the gate sees for each question, from the answer path's own steps up to the gate (chatbot.answer:
    language, retrieval text, route, pipeline, content gate, urgent fillers), without composing a reply: the
    links and ranked documents (segment ids and scores), the cross-encoder scores the gate asked for, and
    whether the threshold gate answered. Skips what ``answer`` would not search (unsupported language,
    nothing left to search). Features are computed from this record (``features_from``), so a new feature
    needs no new retrieval."""
    from chatbot.content_gate import gate_result
    from chatbot.language import detect_language
    from chatbot.pipeline import Services, run_pipeline
    from chatbot.settings import load_settings
    from chatbot.stages import safety as sf
    from chatbot.stages.relevance import corpus_lexicon, relevance, without_urgent_fillers
    from chatbot.stages.relevance_gate import gate_features
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
            out.append({**r, "skipped": "unsupported language or nothing to search"})
            continue
        chosen = route(query, None, settings)
        result = run_pipeline(chosen.pipeline, query, services)
        gate_result(result, services)
        result.top = without_urgent_fillers(result, services)
        recorder = _Recorder(services.cross_encoder)
        feats = gate_features(
            query, result.top, result.ranked, lang.language, recorder, chosen.positive, corpus_lexicon(services)
        )
        if feats is None:
            out.append({**r, "skipped": "no bi-encoder scores"})
            continue
        _, score, threshold = relevance(result.top, services, lang.language, positive=chosen.positive)
        out.append(
            {
                **r,
                "gate_language": lang.language,
                "query": query,
                "positive": chosen.positive,
                "threshold_relevant": bool(score is None or threshold is None or score >= threshold),
                "top": [_hit_record(h) for h in result.top],
                "ranked": [_hit_record(h) for h in result.ranked],
                "cross_encoder": {"name": recorder.name, "scores": recorder.scores},
            }
        )
    return out


def features_from(record: dict[str, Any], segments: dict[str, Any], lexicon: Any) -> dict[str, float] | None:
    """The gate's features of one cached retrieval record, with this code's ``gate_features``."""
    from chatbot.index import Hit
    from chatbot.stages.relevance_gate import gate_features

    def hits(key: str) -> list[Hit]:
        return [Hit(segments[h["id"]], 0.0, h["detail"]) for h in record[key]]

    ce = _Replay(record["cross_encoder"]["name"], record["cross_encoder"]["scores"])
    return gate_features(
        record["query"], hits("top"), hits("ranked"), record["gate_language"], ce, record["positive"], lexicon
    )


def corpus_of(data_dir: Path) -> tuple[dict[str, Any], Any]:
    """The indexed segments by id and their lexicon (the corpus the features were measured on)."""
    from chatbot.pipeline import Services
    from chatbot.settings import load_settings
    from chatbot.stages.relevance_gate import lexicon_of

    segments = list(Services(load_settings(paths={"data_dir": data_dir})).bm25.segments)
    return {s.id: s for s in segments}, lexicon_of(segments)


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


def _refusal_recall(y: np.ndarray, answer: np.ndarray) -> float:
    return float((~answer[~y]).mean()) if (~y).any() else 1.0


def _threshold(
    ba: dict[float, float], y: np.ndarray, italian: np.ndarray, oofs: list[np.ndarray], rule: str = "recall"
) -> float:
    """Among the thresholds within BA_SLACK of the best mean balanced accuracy (a flat plateau: the criterion
    alone does not pick a point on it), the lowest whose out-of-fold refusal recall reaches RECALL_TARGET in
    each language; the best balanced accuracy (ties: the lower threshold) when none does."""
    best = max(ba.values())
    plateau = sorted(k for k, v in ba.items() if v >= best - BA_SLACK) if rule == "recall" else []
    for t in plateau:
        recall = [np.mean([_refusal_recall(y[italian == k], oof[italian == k] >= t) for oof in oofs]) for k in (0, 1)]
        if min(recall) >= RECALL_TARGET:
            return t
    return max(ba, key=lambda k: (round(ba[k], 4), -k))


def fit(
    X: np.ndarray, y: np.ndarray, italian: np.ndarray, seeds: tuple[int, ...] = (0, 1, 2), rule: str = "recall"
) -> dict[str, Any]:
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
    t = _threshold(ba, y, italian, runs[c], rule)
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


def _source(row: dict[str, Any]) -> str:
    return "mediqa" if row["source"].startswith("mediqa") else row["source"]


def leave_one_file_out(
    X: np.ndarray, y: np.ndarray, italian: np.ndarray, sources: np.ndarray, rule: str = "recall"
) -> np.ndarray:
    """Whether the gate answers each question when fitted (C, threshold, coefficients: ``fit`` with one seed)
    on every other source file."""
    answer = np.zeros(len(y), dtype=bool)
    for source in sorted(set(sources)):
        held = sources == source
        res = fit(X[~held], y[~held], italian[~held], seeds=(0,), rule=rule)
        z = ((X[held] - res["mean"]) / res["scale"]) @ res["coef"] + res["intercept"]
        answer[held] = 1.0 / (1.0 + np.exp(-z)) >= res["threshold"]
    return answer


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


def pr_cell(d: dict[str, Any]) -> str:
    """A ``refusal_pr`` dict as a table cell: refusal precision / refusal recall / in-scope answered."""

    def g(k: str) -> str:
        return "-" if d.get(k) is None else f"{d[k]:.3f}"

    return f"{g('refusal_precision')} / {g('refusal_recall')} / {g('in_scope_answered')}"


def _auc(y: np.ndarray, x: np.ndarray) -> float | None:
    from sklearn.metrics import roc_auc_score

    return round(float(roc_auc_score(y, x)), 4) if 0 < y.sum() < len(y) else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", type=Path, default=None, help="default /tmp/redteam-EMBEDDER")
    parser.add_argument(
        "--retrieval", type=Path, default=None, help="cache of the retrieval per question (JSONL; reused if present)"
    )
    parser.add_argument("--out", type=Path, default=GATE_FILE, help=f"gate file to update (default {GATE_FILE})")
    parser.add_argument(
        "--features",
        default=None,
        help="comma-separated subset of the features: cross-validate it and print the numbers, write nothing "
        "(ablations; the gate file needs every feature)",
    )
    parser.add_argument(
        "--threshold-rule",
        choices=("recall", "balanced-accuracy"),
        default="recall",
        help="recall: the lowest threshold on the balanced-accuracy plateau whose out-of-fold refusal recall "
        "reaches RECALL_TARGET per language (default); balanced-accuracy: the best mean balanced accuracy (session 7)",
    )
    args = parser.parse_args(argv)
    names = list(FEATURES) if args.features is None else args.features.split(",")
    unknown = sorted(set(names) - set(FEATURES))
    if unknown:
        parser.error(f"--features: unknown {unknown} (known: {', '.join(FEATURES)})")
    log = lambda *a: print(*a, file=sys.stderr)  # noqa: E731
    from chatbot.settings import load_settings

    kind = load_settings().embedding.model
    data_dir = args.data_dir or default_data_dir()
    cache = args.retrieval or data_dir / f"gate-retrieval-{kind}.jsonl"
    cached = {}
    if cache.exists():  # retrieval of questions already measured (same text) is reused
        for line in cache.read_text(encoding="utf-8").splitlines():
            if line.strip():
                r = json.loads(line)
                cached[(r["id"], r["text"])] = r
        log(f"retrieval of {len(cached)} questions from {cache}")
    wanted = dev_rows()
    todo = [r for r in wanted if (r["id"], r["text"]) not in cached]
    ensure_demo_index(data_dir, log)
    if todo:
        for r in retrieval_of(todo, data_dir, log):
            cached[(r["id"], r["text"])] = r
        cache.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in cached.values()), encoding="utf-8")
    segments, lexicon = corpus_of(data_dir)
    rows = []
    for r in wanted:
        rec = cached.get((r["id"], r["text"]))
        if rec is None or rec.get("skipped"):
            continue
        if all(h["id"] in segments for key in ("top", "ranked") for h in rec[key]):
            rows.append({**rec, "features": features_from(rec, segments, lexicon)})
        else:
            raise SystemExit(f"{cache} names segments the index no longer holds: delete it and run again")
    X = np.array([[r["features"][f] for f in names] for r in rows])
    y = np.array([bool(r["in_scope"]) for r in rows])
    italian = np.array([r["language"] == "it" for r in rows])
    res = fit(X, y, italian, rule=args.threshold_rule)
    sources = np.array([_source(r) for r in rows])
    log("leave-one-file-out ...")
    lofo = leave_one_file_out(X, y, italian, sources, args.threshold_rule)
    per_language: dict[str, Any] = {}
    for k, lang in ((False, "en"), (True, "it")):
        m = italian == k
        per_language[lang] = {
            "classifier_cv": refusal_pr(y[m], res["oof"][m] >= res["threshold"]),
            "classifier_leave_one_file_out": refusal_pr(y[m], lofo[m]),
            "classifier_relevance_test_from_the_others": refusal_pr(
                y[m & (sources == TEST.name)], lofo[m & (sources == TEST.name)]
            ),
            "threshold_gate": refusal_pr(y[m], np.array([r["threshold_relevant"] for r in rows])[m]),
            "feature_auc": {f: _auc(y[m], X[m, i]) for i, f in enumerate(names) if f not in ("italian",)},
        }
    if args.features is not None:
        cv = {"C": res["C"], "threshold": res["threshold"], "threshold_rule": args.threshold_rule, "cv": per_language}
        print(json.dumps({"embedder": kind, "features": names, **cv}, indent=1))
        return 0
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
        threshold_rule=args.threshold_rule,
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

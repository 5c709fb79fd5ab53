"""Leave-one-set-out choice of the relevance gate, session 11 (issue 13 step 6), on the rows of ``gate_collect``.

    python -m evaluation.redteam.gate_loso --rows /tmp/gate11/rows.jsonl --markdown /tmp/gate11/loso.md

Every candidate gate is refitted on all dev sets but one and scored on the left-out one, for each set in turn
(the sets were written at different times by different people: the honest analogue of a fresh set). The decision
scored is the patient path's: the gate, then (Italian, refused, not an exclusion question, not a personal request,
a link in Italian, the other-language pool's first document not urgent) the cross-language second look, whose
(slope, cut) is refitted on the same training sets with the candidate's own probability
(``cross_language_gate_fit.fit_rule``). Fixed gates (shipped classifier, shipped threshold) are scored as they
are. Each candidate is paired with the shipped gate (exact McNemar on the questions one decides right and the
other wrong), pooled and per language.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from evaluation.redteam import gate_cv
from evaluation.redteam.cross_language_gate_fit import fit_rule, mcnemar
from evaluation.redteam.gate_fit import _refusal_recall as gate_fit_recall
from evaluation.redteam.gate_fit import pr_cell, refusal_pr

PROG = "python -m evaluation.redteam.gate_loso"
# sets with both classes written for the gate (the fresh sets the issue quotes are of this kind)
GATE_SETS = (
    "relevance_dev.jsonl",
    "gate_dev.jsonl",
    "relevance_test.jsonl",
    "gate_heldout_v2.jsonl",
    "gate_heldout_v3.jsonl",
    "gate_heldout_v4.jsonl",
    "gate_heldout_v5.jsonl",
    "gate_heldout_v6.jsonl",
    "gate_heldout_v7.jsonl",
    "gate_heldout_v8.jsonl",
)


def load(path: Path) -> list[dict[str, Any]]:
    """The collected rows that reached the gate with features, with the derived features added."""
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        r = json.loads(line)
        if r.get("skipped") or r.get("features") is None:
            continue
        f = dict(r["features"])
        best = max(r["link_dense"]) if r["link_dense"] else 0.0
        usable = r["other_dense"] is not None and r["links_in_language"] and not r["other_urgent"]
        gap = (r["other_dense"] - best) if usable else -0.1
        italian = 1.0 if r["gate_language"] == "it" else 0.0
        q = min(max(float(r["probability"] or 0.0), 1e-6), 1 - 1e-6)
        f.update({"top1": r["link_dense"][0], "gap_it": gap * italian, "gap": gap, "shipped_p": q})
        f.update(adapted_features(r, italian))
        # the gate the rows were collected under, as one feature (stacking: its logit plus new features)
        f.update({"shipped_logit": math.log(q / (1 - q)), "shipped_logit_it": math.log(q / (1 - q)) * italian})
        rows.append({**r, "features": f, "group": gate_cv.group_of(r)})
    return rows


def adapted_features(r: dict[str, Any], italian: float) -> dict[str, float]:
    """Candidate features from the scores the pipeline left on the links (rows with ``top_detail``, session 15):
    the tuned query encoder's cosine (``dense_adapted``; raw e5 where the encoder skips the question) of the best
    link and its margin over the documents ranked 4-10, and the cross-encoder's score of the first link."""
    top, ranked = r.get("top_detail"), r.get("ranked_detail")
    if not top or not ranked:
        return {}
    ad = [d.get("dense_adapted", d.get("dense", 0.0)) for d in top]
    rest = [d.get("dense_adapted", d.get("dense", 0.0)) for d in ranked[3:10]]
    best = max(ad)
    margin = best - (sum(rest) / len(rest) if rest else best)
    return {
        "adapted_best": best,
        "adapted_margin": margin,
        "adapted_best_it": best * italian,
        "adapted_margin_it": margin * italian,
        "ce_top1": float(top[0].get("cross-encoder", 0.0)),
    }


def second_look_ok(r: dict[str, Any]) -> bool:
    """Whether answer.py would give this question the cross-language second look after a refusal."""
    return (
        r["gate_language"] == "it"
        and not r["excluded"]
        and r["personal_request"] is None
        and r["links_in_language"]
        and r["other_dense"] is not None
        and not r["other_urgent"]
    )


def look_rows(rows: Sequence[dict[str, Any]], p: np.ndarray, answered: np.ndarray) -> list[dict[str, Any]]:
    """The second-look fit's rows (Italian questions it would see) for a candidate's P and decisions."""
    out = []
    for r, pi, a in zip(rows, p, answered, strict=True):
        if second_look_ok(r):
            out.append(
                {
                    "id": r["source"] + r["id"],
                    "file": r["group"],
                    "in_scope": r["in_scope"],
                    "gate": bool(a),
                    "p": float(pi),
                    "it1_raw": max(r["link_dense"]),
                    "en1_raw": r["other_dense"],
                }
            )
    return out


def with_second_look(
    rows: Sequence[dict[str, Any]], p: np.ndarray, answered: np.ndarray, rule: tuple[float, float] | None
) -> np.ndarray:
    """Decisions after the second look with ``rule`` (slope, cut); ``answered`` where it does not apply."""
    out = answered.copy()
    if rule is None:
        return out
    slope, cut = rule
    for i, r in enumerate(rows):
        if not out[i] and second_look_ok(r):
            q = min(max(float(p[i]), 1e-4), 1 - 1e-4)
            out[i] = math.log(q / (1 - q)) + slope * (r["other_dense"] - max(r["link_dense"])) >= cut
    return out


def _matrix(rows: Sequence[dict[str, Any]], names: Sequence[str]) -> np.ndarray:
    return np.array([[r["features"][f] for f in names] for r in rows])


def lr_candidate(spec: dict[str, Any]) -> Callable:
    """fit(train rows) -> predict(rows) -> (P, answered), a logistic regression by ``gate_cv.fit_spec``."""

    def fit(train: Sequence[dict[str, Any]]) -> Callable:
        X, y, it = _matrix(train, spec["features"]), _y(train), _it(train)
        fitted = spec
        if spec.get("recall_target") == "reference":  # each language's refusal recall of the collected gate
            ref = np.array([bool(r["shipped_relevant"]) for r in train])
            target = {k: gate_fit_recall(y[it == k], ref[it == k]) for k in (0, 1)}
            fitted = {**spec, "recall_target": target}
        res = gate_cv.fit_spec(X, y, it, fitted)

        def predict(rows: Sequence[dict[str, Any]]) -> tuple[np.ndarray, np.ndarray]:
            p = gate_cv.probability(res, _matrix(rows, spec["features"]), _it(rows))
            return p, p >= res["threshold"]

        predict.info = {"C": res["C"], "threshold": res["threshold"], "shift_it": round(res["shift"][1], 3)}
        predict.res = res
        return predict

    return fit


def gbm_candidate(spec: dict[str, Any]) -> Callable:
    """A small gradient-boosted tree model; threshold per language at the recall target on 5-fold OOF P."""
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.model_selection import StratifiedKFold

    from evaluation.redteam.gate_fit import _weights

    target = spec.get("recall_target", 0.92)

    def model() -> Any:
        return HistGradientBoostingClassifier(
            max_depth=3, max_iter=150, learning_rate=0.05, min_samples_leaf=20, l2_regularization=1.0, random_state=0
        )

    def fit(train: Sequence[dict[str, Any]]) -> Callable:
        X, y, it = _matrix(train, spec["features"]), _y(train), _it(train)
        strata = y.astype(int) * 2 + it.astype(int)
        oof = np.zeros(len(y))
        for tr, te in StratifiedKFold(5, shuffle=True, random_state=0).split(X, strata):
            m = model().fit(X[tr], y[tr], sample_weight=_weights(y[tr], it[tr]))
            oof[te] = m.predict_proba(X[te])[:, 1]
        cut = {k: _recall_cut(oof[it == k], y[it == k], target) for k in (False, True)}
        final = model().fit(X, y, sample_weight=_weights(y, it))

        def predict(rows: Sequence[dict[str, Any]]) -> tuple[np.ndarray, np.ndarray]:
            p = final.predict_proba(_matrix(rows, spec["features"]))[:, 1]
            t = np.where(_it(rows), cut[True], cut[False])
            # P rescaled so that each language's cut sits at 0.5 (the second look reads a comparable logit)
            z = np.log(np.clip(p, 1e-6, 1 - 1e-6) / np.clip(1 - p, 1e-6, 1)) - np.log(t / (1 - t))
            return 1 / (1 + np.exp(-z)), p >= t

        predict.info = {"cut_en": cut[False], "cut_it": cut[True]}
        return predict

    return fit


def _recall_cut(p: np.ndarray, y: np.ndarray, target: float) -> float:
    """The lowest threshold (0.05-0.95 grid) whose refusal recall on (p, y) reaches ``target``."""
    for t in np.round(np.arange(0.05, 0.951, 0.01), 2):
        if (~y).any() and float((p[~y] < t).mean()) >= target:
            return float(t)
    return 0.95


def threshold_candidate(spec: dict[str, Any]) -> Callable:
    """Per-language bar on one feature (answer when x >= bar), the bar at the recall target on the training sets."""
    name, target = spec["feature"], spec.get("recall_target", 0.92)

    def fit(train: Sequence[dict[str, Any]]) -> Callable:
        x, y, it = np.array([r["features"][name] for r in train]), _y(train), _it(train)
        bars = {}
        for k in (False, True):
            xs, ys = x[it == k], y[it == k]
            grid = np.unique(np.round(xs, 4))
            bars[k] = next((float(b) for b in grid if float((xs[~ys] < b).mean()) >= target), float(grid[-1]))
        scale = spec.get("scale", 100.0)

        def predict(rows: Sequence[dict[str, Any]]) -> tuple[np.ndarray, np.ndarray]:
            xr = np.array([r["features"][name] for r in rows])
            bar = np.where(_it(rows), bars[True], bars[False])
            z = scale * (xr - bar)
            return 1 / (1 + np.exp(-np.clip(z, -30, 30))), xr >= bar

        predict.info = {"bar_en": bars[False], "bar_it": bars[True]}
        return predict

    return fit


def _y(rows: Sequence[dict[str, Any]]) -> np.ndarray:
    return np.array([bool(r["in_scope"]) for r in rows])


def _it(rows: Sequence[dict[str, Any]]) -> np.ndarray:
    return np.array([r["gate_language"] == "it" for r in rows])


# the second look that went with the gate the rows were collected under (session 7's fit; session 10's rule)
COLLECTED_RULE = (61.808, -3.251)


def shipped(rows: Sequence[dict[str, Any]], rule: tuple[float, float] = COLLECTED_RULE) -> dict[str, np.ndarray]:
    """The collected path's decisions (the gate recorded in the rows, then its second look with ``rule``)."""
    p = np.array([r["probability"] if r["probability"] is not None else 0.0 for r in rows])
    gate = np.array([r["shipped_relevant"] for r in rows])
    return {"p": p, "gate": gate, "final": with_second_look(rows, p, gate, rule)}


def run_loso(
    rows: Sequence[dict[str, Any]], fit: Callable, second_look: bool | Sequence[float] = True
) -> dict[str, Any]:
    """Out-of-set decisions (gate alone and gate + second look) and each fold's fit; ``second_look``: True refits
    the second look in each fold, a (slope, cut) keeps that rule in every fold, False leaves it off."""
    groups = np.array([r["group"] for r in rows])
    gate = np.zeros(len(rows), bool)
    final = np.zeros(len(rows), bool)
    p_all = np.zeros(len(rows))
    info = {}
    for g in sorted(set(groups)):
        held = groups == g
        train = [r for r, h in zip(rows, held, strict=True) if not h]
        test = [r for r, h in zip(rows, held, strict=True) if h]
        predict = fit(train)
        p_tr, a_tr = predict(train)
        if isinstance(second_look, bool):
            rule = fit_rule(look_rows(train, p_tr, a_tr)) if second_look else None
        else:
            rule = (float(second_look[0]), float(second_look[1]))
        p, a = predict(test)
        gate[held], final[held], p_all[held] = a, with_second_look(test, p, a, rule), p
        info[g] = {**predict.info, "second_look": rule}
    return {"gate": gate, "final": final, "p": p_all, "folds": info}


def summary(rows: Sequence[dict[str, Any]], answered: np.ndarray, ref: np.ndarray) -> dict[str, Any]:
    """Refusal P/R and in-scope answered per language (all rows, the gate sets only, per left-out set) and the
    paired comparison with ``ref`` (right only here / right only in ref, exact McNemar)."""
    y, it = _y(rows), _it(rows)
    groups = np.array([r["group"] for r in rows])
    gate_sets = np.isin(groups, GATE_SETS)
    out: dict[str, Any] = {}
    for lang, k in (("en", False), ("it", True)):
        m = it == k
        ok, ok_ref = answered == y, ref == y
        b, c = int((ok & ~ok_ref & m).sum()), int((~ok & ok_ref & m).sum())
        bg, cg = int((ok & ~ok_ref & m & gate_sets).sum()), int((~ok & ok_ref & m & gate_sets).sum())
        out[lang] = {
            "all": refusal_pr(y[m], answered[m]),
            "gate_sets": refusal_pr(y[m & gate_sets], answered[m & gate_sets]),
            "vs_shipped": {"right_only_here": b, "right_only_shipped": c, "p": round(mcnemar(b, c), 4)},
            "vs_shipped_gate_sets": {"right_only_here": bg, "right_only_shipped": cg, "p": round(mcnemar(bg, cg), 4)},
            "per_set": {
                g: refusal_pr(y[m & (groups == g)], answered[m & (groups == g)]) for g in sorted(set(groups[m]))
            },
        }
    ok, ok_ref = answered == y, ref == y
    b, c = int((ok & ~ok_ref).sum()), int((~ok & ok_ref).sum())
    out["both"] = {
        "wrong": int((~ok).sum()),
        "right_only_here": b,
        "right_only_shipped": c,
        "p": round(mcnemar(b, c), 4),
    }
    return out


def markdown(results: dict[str, dict[str, Any]]) -> str:
    """Pooled tables (all sets; the gate sets only) and the per-left-out-set table."""
    lines = [
        "Refusal precision / refusal recall / in-scope answered, out of set (LOSO); `vs shipped`: questions only "
        "this gate / only the shipped gate decides right, exact McNemar p.",
        "",
        "| gate | en, gate sets | it, gate sets | en, all sets | it, all sets | wrong | vs shipped (all) |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, s in results.items():
        v = s["both"]
        lines.append(
            f"| {name} | {pr_cell(s['en']['gate_sets'])} | {pr_cell(s['it']['gate_sets'])} | {pr_cell(s['en']['all'])} "
            f"| {pr_cell(s['it']['all'])} | {v['wrong']} | {v['right_only_here']} vs {v['right_only_shipped']}, "
            f"p {v['p']} |"
        )
    lines += [
        "",
        "| gate | en vs shipped, gate sets | it vs shipped, gate sets | en, all | it, all |",
        "|---|---|---|---|---|",
    ]
    for name, s in results.items():
        cells = []
        for key in ("vs_shipped_gate_sets", "vs_shipped"):
            for lang in ("en", "it"):
                v = s[lang][key]
                cells.append(f"{v['right_only_here']} vs {v['right_only_shipped']} (p {v['p']})")
        lines.append(f"| {name} | {cells[0]} | {cells[1]} | {cells[2]} | {cells[3]} |")
    first = next(iter(results.values()))
    sets = sorted({g for lang in ("en", "it") for g in first[lang]["per_set"]})
    lines += ["", "| left-out set | gate | en | it |", "|---|---|---|---|"]
    for g in sets:
        for i, (name, s) in enumerate(results.items()):
            en, it = s["en"]["per_set"].get(g), s["it"]["per_set"].get(g)
            n = f"{g} (en {en['n'] if en else 0}, it {it['n'] if it else 0})" if i == 0 else ""
            lines.append(f"| {n} | {name} | {pr_cell(en) if en else '-'} | {pr_cell(it) if it else '-'} |")
    return "\n".join(lines) + "\n"


def ship(rows: Sequence[dict[str, Any]], spec: dict[str, Any], loso: dict[str, Any], command: str) -> dict[str, Any]:
    """The gate.json entry of a logistic-regression ``spec`` fitted on every row (features it does not use at
    weight 0), its per-language thresholds, and the second look's (slope, cut) refitted on every row with its P."""
    from chatbot.stages.relevance_gate import FEATURES
    from evaluation.redteam.gate_fit import _entry

    predict = lr_candidate(spec)(rows)
    res = predict.res
    names = list(spec["features"])
    coef = [float(res["coef"][names.index(f)]) if f in names else 0.0 for f in FEATURES]
    mean = [float(res["mean"][names.index(f)]) if f in names else 0.0 for f in FEATURES]
    scale = [float(res["scale"][names.index(f)]) if f in names else 1.0 for f in FEATURES]
    t = res["threshold"]
    # gate_cv's per-language shift s_k: z + s_k >= logit(t) <=> P >= sigmoid(logit(t) - s_k)
    thresholds = {k: 1.0 / (1.0 + math.exp(-(math.log(t / (1 - t)) - res["shift"][k]))) for k in (0, 1)}
    p, answered = predict(rows)
    rule = fit_rule(look_rows(rows, p, answered))
    groups = sorted({r["source"] for r in rows})
    y = _y(rows)
    entry = _entry(
        coef,
        res["intercept"],
        mean,
        scale,
        thresholds[0],
        threshold_it=round(thresholds[1], 4),
        C=res["C"],
        fitted_on={
            "questions": len(rows),
            "in_scope": int(y.sum()),
            "out_of_scope": int((~y).sum()),
            "sources": groups,
            "rows": "python -m evaluation.redteam.gate_collect (today's answer path up to the gate)",
        },
        spec=spec,
        second_look_it=list(rule),
        leave_one_set_out=loso,
        command=command,
    )
    return entry


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=Path, required=True, help="rows written by gate_collect")
    parser.add_argument("--specs", type=Path, required=True, help="JSON list of candidate specs")
    parser.add_argument("--markdown", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None, help="summaries and each fold's fit")
    parser.add_argument("--ship", default=None, help="name of the spec to refit on every row and write to --gate")
    parser.add_argument("--gate", type=Path, default=None, help="gate.json to write the --ship entry into")
    parser.add_argument(
        "--key",
        default="e5-onnx",
        help="the gate.json entry written by --ship: the configuration the rows were collected with "
        "(chatbot.stages.relevance.gate_key, e.g. e5-onnx+query-encoder-<sha12>[it])",
    )
    parser.add_argument(
        "--rule",
        type=float,
        nargs=2,
        default=COLLECTED_RULE,
        metavar=("SLOPE", "CUT"),
        help="the reference gate's second look (default: the rule the session-11 rows were collected with)",
    )
    args = parser.parse_args(argv)
    rows = load(args.rows)
    today = shipped(rows, tuple(args.rule))
    results = {
        "shipped gate + second look (today)": summary(rows, today["final"], today["final"]),
        "shipped gate alone": summary(rows, today["gate"], today["final"]),
        "threshold gate (shipped bars, no second look)": summary(
            rows, np.array([r["threshold_relevant"] for r in rows]), today["final"]
        ),
    }
    folds: dict[str, Any] = {}
    decisions = {"reference": {f"{r['source']}|{r['id']}": bool(a) for r, a in zip(rows, today["final"], strict=True)}}
    for spec in json.loads(args.specs.read_text(encoding="utf-8")):
        kind = spec.get("kind", "lr")
        fit = {"lr": lr_candidate, "gbm": gbm_candidate, "threshold": threshold_candidate}[kind](spec)
        out = run_loso(rows, fit, spec.get("second_look", True))
        results[spec["name"]] = summary(rows, out["final"], today["final"])
        folds[spec["name"]] = out["folds"]
        decisions[spec["name"]] = {f"{r['source']}|{r['id']}": bool(a) for r, a in zip(rows, out["final"], strict=True)}
        s = results[spec["name"]]
        print(
            spec["name"],
            "|",
            pr_cell(s["en"]["gate_sets"]),
            "|",
            pr_cell(s["it"]["gate_sets"]),
            "|",
            s["both"],
            file=sys.stderr,
            flush=True,
        )
    if args.ship:
        from evaluation.report import command_line

        spec = next(s for s in json.loads(args.specs.read_text(encoding="utf-8")) if s["name"] == args.ship)
        loso = {lang: {k: results[args.ship][lang][k] for k in ("gate_sets", "all")} for lang in ("en", "it")}
        entry = ship(rows, spec, loso, command_line(PROG, argv))
        doc = json.loads(args.gate.read_text(encoding="utf-8"))
        doc["models"][args.key] = entry
        args.gate.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
        print(
            "shipped",
            args.ship,
            "threshold",
            entry["threshold"],
            "threshold_it",
            entry["threshold_it"],
            "second look (slope, cut)",
            entry["second_look_it"],
            file=sys.stderr,
        )
    text = markdown(results)
    if args.markdown:
        args.markdown.write_text(text, encoding="utf-8")
    if args.json:
        args.json.write_text(
            json.dumps({"results": results, "folds": folds, "decisions": decisions}, indent=1, default=str),
            encoding="utf-8",
        )
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

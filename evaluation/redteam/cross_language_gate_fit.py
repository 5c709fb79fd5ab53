"""Fit safety.cross_language_gate (chatbot.stages.cross_language_gate) on the spent dev sets, leave-one-set-out.

    python -m evaluation.redteam.cross_language_gate_fit --collect ROWS.jsonl --data FILE [--data FILE ...]
    python -m evaluation.redteam.cross_language_gate_fit --rows ROWS.jsonl [--language it]

--collect runs each file's questions in ``--language`` through today's default pipeline over the demo cards and
writes per question (ids and numbers only): in_scope, the classifier gate's decision and P, the best raw cosine of
the links and that of the other-language pool's first document (linked or not). --rows fits, for the questions the gate
refused, a class-balanced logistic regression on [logit P, other - best link] and the cut on it that minimises the
balanced error over the training sets (every question, the gate's own answers kept), with each file left out in
turn (gate_dev_s8 joined to gate_dev); prints per left-out set the decisions before/after, the pooled numbers, an
exact McNemar test against the shipped gate, and the (slope, cut) fitted on every set for the setting."""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def collect(paths: Sequence[Path], language: str, out: Path) -> int:
    """Write one row per question of ``language`` in ``paths``; returns how many."""
    from chatbot.pipeline import run_pipeline
    from chatbot.settings import load_settings
    from chatbot.stages.relevance import gate, without_urgent_fillers
    from evaluation.harness import services_over_cards
    from evaluation.redteam.gate_eval import load_items

    services = services_over_cards(load_settings())
    n = 0
    with out.open("w", encoding="utf-8") as fh:
        for path in paths:
            for item in load_items(path):
                if item["language"] != language:
                    continue
                result = run_pipeline(services.settings.retrieval.pipeline, item["text"], services)
                result.top = without_urgent_fillers(result, services)
                relevant, trace = gate(item["text"], result, services, language, memory=False)
                other = next(iter(services.dense.other_language(item["text"], language, 1)), None)
                row = {
                    "file": path.name,
                    "id": item["id"],
                    "in_scope": bool(item["in_scope"]),
                    "gate": bool(relevant),
                    "p": trace.get("probability"),
                    "it1_raw": max(h.detail.get("dense", h.score) for h in result.top) if result.top else None,
                    "en1_raw": None if other is None else other.detail.get("dense", other.score),
                    "en1": None if other is None else other.segment.doc_id,
                }
                fh.write(json.dumps(row) + "\n")
                n += 1
    return n


def _features(r: dict[str, Any]) -> list[float]:
    p = min(max(float(r["p"]), 1e-4), 1 - 1e-4)
    return [math.log(p / (1 - p)), float(r["en1_raw"]) - float(r["it1_raw"])]


def _usable(r: dict[str, Any]) -> bool:
    return r.get("p") is not None and r.get("en1_raw") is not None and r.get("it1_raw") is not None


def fit_rule(rows: Sequence[dict[str, Any]]) -> tuple[float, float]:
    """(slope, cut) of logit(P) + slope * gap >= cut, fitted on ``rows`` (see the module docstring)."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression

    refused = [r for r in rows if not r["gate"] and _usable(r)]
    x = np.array([_features(r) for r in refused])
    y = np.array([r["in_scope"] for r in refused])
    mu, sd = x.mean(0), x.std(0) + 1e-9
    model = LogisticRegression(C=1.0, class_weight="balanced").fit((x - mu) / sd, y)
    w = model.coef_[0] / sd
    slope = float(w[1] / w[0])  # w[0] > 0: a higher gate probability never argues for refusing
    scores = {r["id"]: _features(r)[0] + slope * _features(r)[1] for r in refused}
    best: tuple[float, float] | None = None
    for cut in sorted(set(scores.values())):
        cost = balanced_error(rows, lambda r, c=cut: decide(r, slope, c, scores))
        if best is None or cost < best[0] - 1e-12:
            best = (cost, cut)
    return round(slope, 3), round(best[1] if best else math.inf, 3)


def decide(r: dict[str, Any], slope: float | None, cut: float | None, scores: dict[str, float] | None = None) -> bool:
    """Answered: the gate's own decision, or the second look's."""
    if r["gate"] or slope is None or not _usable(r):
        return bool(r["gate"])
    score = scores[r["id"]] if scores is not None else _features(r)[0] + slope * _features(r)[1]
    return score >= cut


def balanced_error(rows: Sequence[dict[str, Any]], answered) -> float:
    """Mean of the out-of-scope answered share and the in-scope refused share (0 for a missing class)."""
    out = [r for r in rows if not r["in_scope"]]
    ins = [r for r in rows if r["in_scope"]]
    a = sum(answered(r) for r in out) / len(out) if out else 0.0
    b = sum(not answered(r) for r in ins) / len(ins) if ins else 0.0
    return (a + b) / 2


def metrics(rows: Sequence[dict[str, Any]], answered) -> str:
    """'refusal precision / refusal recall / in scope answered' (n/a where a class is missing)."""
    refused = [r for r in rows if not answered(r)]
    out = [r for r in rows if not r["in_scope"]]
    ins = [r for r in rows if r["in_scope"]]
    tp = sum(not r["in_scope"] for r in refused)
    f = lambda a, b: f"{a / b:.3f}" if b else "n/a"  # noqa: E731
    return f"{f(tp, len(refused))} / {f(tp, len(out))} / {f(sum(answered(r) for r in ins), len(ins))}"


def mcnemar(b: int, c: int) -> float:
    """Exact two-sided McNemar (sign test) p for b vs c discordant pairs."""
    n = b + c
    if n == 0:
        return 1.0
    k = min(b, c)
    return min(1.0, 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2**n)


def leave_one_set_out(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    units: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        units.setdefault(r["file"].replace("gate_dev_s8", "gate_dev"), []).append(r)
    after: dict[str, bool] = {}
    table = []
    for name, held in units.items():
        slope, cut = fit_rule([r for u, rs in units.items() if u != name for r in rs])
        for r in held:
            after[r["id"] + r["file"]] = decide(r, slope, cut)
        table.append(
            {
                "set": name,
                "n": len(held),
                "slope_cut": [slope, cut],
                "before": metrics(held, lambda r: r["gate"]),
                "after": metrics(held, lambda r: after[r["id"] + r["file"]]),
            }
        )
    gained = sum(after[r["id"] + r["file"]] == r["in_scope"] != r["gate"] for r in rows)
    lost = sum(r["gate"] == r["in_scope"] != after[r["id"] + r["file"]] for r in rows)
    gate_sets = [r for r in rows if not r["file"].startswith(("replyset", "heldout"))]
    return {
        "sets": table,
        "pooled": {
            "before": metrics(rows, lambda r: r["gate"]),
            "after": metrics(rows, lambda r: after[r["id"] + r["file"]]),
        },
        "gate_sets_pooled": {
            "before": metrics(gate_sets, lambda r: r["gate"]),
            "after": metrics(gate_sets, lambda r: after[r["id"] + r["file"]]),
        },
        "right_only_after": gained,
        "right_only_before": lost,
        "mcnemar_p": round(mcnemar(gained, lost), 4),
        "fit_on_all": list(fit_rule(rows)),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--collect", type=Path, help="write the rows here (then stop)")
    parser.add_argument("--data", type=Path, action="append", default=[])
    parser.add_argument("--rows", type=Path, help="rows written by --collect, to fit")
    parser.add_argument("--language", default="it")
    args = parser.parse_args(argv)
    if args.collect:
        if not args.data:
            parser.error("--collect needs --data FILE")
        print(f"{collect(args.data, args.language, args.collect)} rows -> {args.collect}")
        return 0
    if not args.rows:
        parser.error("give --collect OUT --data FILE... or --rows ROWS")
    rows = [json.loads(line) for line in args.rows.read_text(encoding="utf-8").splitlines() if line.strip()]
    print(json.dumps(leave_one_set_out(rows), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

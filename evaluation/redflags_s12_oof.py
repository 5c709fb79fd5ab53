"""Red-flag screen, session 12: the rules of this checkout on the cross-validation's out-of-fold model scores.

``python -m evaluation.redflags_s12_oof OOF.pkl|FOLD_CACHE_DIR [--bars MODEL_DIR] [--exclude-seeds FILE.jsonl]``

The fold models' scores (``chatbot.training.redflags_cv --oof`` or its ``--fold-cache`` pickles: v1-v4 and each
fold's held-out part of the ordinary questions) are kept; the rule, frame, negation and "asks" flags are
recomputed from the texts with this checkout's rules (the n-gram score stays the one the fold computed on its
own negation scope). Reported per language: recall and false alarms with the bars of ``--bars`` (default the
shipped folder) with the stored flags (A) and the recomputed ones (B), gained / lost with an exact McNemar p;
then bars chosen per language against pooled bars, each fold's bars chosen on the other three folds.
"""

from __future__ import annotations

import argparse
import json
import pickle
from pathlib import Path
from typing import Any

import numpy as np

from chatbot.training.redflag_bars import choose, verdicts
from chatbot.training.redflag_ordinary import ordinary_rows
from chatbot.training.redflags_cv import ORDINARY, SETS, load_rows, ordinary_part
from evaluation.redflags_s12 import mcnemar


def texts_of(name: str, exclude: set[str]) -> list[str]:
    """The texts a run scored, in its order (an ordinary part: the pool less ``exclude``, as ``held_ordinary``)."""
    base = name.removeprefix(ORDINARY)
    if name.startswith(ORDINARY):
        k = SETS.index(base)
        return [r["text"] for r in ordinary_rows() if not r["urgent"] and ordinary_part(r["text"]) == k
                and r["text"] not in exclude]  # fmt: skip
    return [r["text"] for r in load_rows(Path("evaluation/redflags") / base)]


def reflag(run: dict[str, Any], texts: list[str]) -> dict[str, Any]:
    """The run with its rule / frame / negation / asks flags from this checkout's rules."""
    from chatbot.stages import redflag_rules as rules
    from chatbot.stages.redflag_framing import framing
    from chatbot.stages.redflags import rule_flags

    assert len(texts) == len(run["urgent"]), (run["name"], len(texts), len(run["urgent"]))
    out = {**run, "rule": np.zeros(len(texts), bool), "framed": np.zeros(len(texts), bool)}
    out["negated"], out["asks"] = np.zeros(len(texts), bool), np.array(["?" in t for t in texts])
    for i, t in enumerate(texts):
        out["rule"][i] = bool(rule_flags(t))
        framed, negated = bool(framing(t)), rules.without_negated(t) != t
        if (framed or negated) and rules.present_danger(t):
            framed = negated = False
        out["framed"][i], out["negated"][i] = framed, negated
    return out


def load(path: Path) -> dict[str, dict[str, Any]]:
    if path.is_dir():
        oof: dict[str, dict[str, Any]] = {}
        for f in sorted(path.glob("fold-*.pkl")):
            oof.update(pickle.loads(f.read_bytes()))
        return oof
    return pickle.loads(path.read_bytes())


def table(
    label: str, runs: dict[str, dict[str, Any]], fa: dict[str, np.ndarray], fb: dict[str, np.ndarray]
) -> list[str]:
    rows = []
    for g in ("en", "it"):
        for part, pick in (
            ("v1-v4", lambda n: not n.startswith(ORDINARY)),
            ("ordinary", lambda n: n.startswith(ORDINARY)),
        ):
            names = [n for n in runs if pick(n)]
            u = np.concatenate([runs[n]["urgent"] & (runs[n]["lang"] == g) for n in names])
            o = np.concatenate([~runs[n]["urgent"] & (runs[n]["lang"] == g) for n in names])
            a = np.concatenate([fa[n] for n in names])
            b = np.concatenate([fb[n] for n in names])
            gu, lu = int((b & ~a & u).sum()), int((a & ~b & u).sum())
            so, no = int((a & ~b & o).sum()), int((b & ~a & o).sum())
            rec = f"{int((a & u).sum())}/{int(u.sum())} | {int((b & u).sum())}/{int(u.sum())} | "
            rec += f"+{gu} / -{lu} ({mcnemar(gu, lu):.3g})"
            rows.append(f"| {label} | {part} | {g} | {rec if u.any() else ' | | '} | {int((a & o).sum())} | "
                        f"{int((b & o).sum())} / {int(o.sum())} | -{so} / +{no} ({mcnemar(so, no):.3g}) |")  # fmt: skip
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("oof", type=Path)
    ap.add_argument("--bars", type=Path, default=Path("models/redflags"))
    ap.add_argument("--exclude-seeds", type=Path, action="append", default=[],
                    help="ordinary seed lines added after these folds were cached (not in their parts)")  # fmt: skip
    ap.add_argument("--recall", type=float, default=0.985)
    ap.add_argument("--action-recall", type=float, default=0.97)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    exclude = {
        json.loads(x)["text"]
        for f in args.exclude_seeds
        for x in f.read_text(encoding="utf-8").splitlines()
        if x.strip()
    }
    old = load(args.oof)
    new = {n: reflag(r, texts_of(n, exclude)) for n, r in old.items()}
    bars = json.loads((args.bars / "context-head.json").read_text(encoding="utf-8"))
    fa = {n: verdicts(r, bars) for n, r in old.items()}
    fb = {n: verdicts(r, bars) for n, r in new.items()}
    head = ["| bars | part | lang | recall A | recall B | gained / lost (p) | false alarms A | B / ordinary | "
            "silenced / new (p) |",
            "|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    out = ["A: stored flags (the rules of the run), B: this checkout's rules; bars of " + str(args.bars), "", *head]
    out += table("shipped", old, fa, fb)
    # per-fold honest bars: pooled over languages vs one set of bars per language (B flags for both)
    pooled, per_lang = {}, {}
    report: dict[str, Any] = {}
    for name in SETS:
        others = [r for n, r in new.items() if n.removeprefix(ORDINARY) != name]
        mine = [n for n in new if n.removeprefix(ORDINARY) == name]
        chosen = choose(others, args.recall, args.action_recall, (0.5,), 0.1)
        report[name] = {"pooled": chosen}
        for n in mine:
            pooled[n] = verdicts(new[n], chosen)
            per_lang[n] = np.zeros(len(new[n]["urgent"]), bool)
        for g in ("en", "it"):
            sub = [{k: (v[r["lang"] == g] if isinstance(v, np.ndarray) and v.shape[:1] == r["lang"].shape else v)
                    for k, v in r.items()} for r in others]  # fmt: skip
            cg = choose(sub, args.recall, args.action_recall, (0.5,), 0.1)
            report[name][g] = cg
            for n in mine:
                m = new[n]["lang"] == g
                per_lang[n][m] = verdicts(new[n], cg)[m]
    out += ["", "Per fold, bars chosen on the other three folds (--weights 0.5 --max-veto 0.1), this checkout's rules: "
            "A = one set of bars for both languages, B = bars per language", "", *head]  # fmt: skip
    out += table("per fold", new, pooled, per_lang)
    text = "\n".join(out) + "\n"
    print(text)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2, default=float) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Four-fold cross-validation of the red-flag screen over every spent red-flag set (v1-v8), and the shipped fit.

``python -m chatbot.training.redflags_kfold --out DIR [--extra-seeds FILE ...] [--fold-seeds FILE ...]
[--add-sets NAME ...] [--unit-negatives] [--ship models/redflags]``

Session 14. The spent sets (``evaluation/redflags/testset*.jsonl``) are split into four folds by a hash of the
message id, stratified by language and action (``none`` for an ordinary message); messages with the same folded
text share the fold of the first one's id. Fold k: both models (``redflags_cv.Trainer``: the seeds, the
hand-written messages, ``patient_seeds.jsonl`` and ``--extra-seeds``, the ordinary questions less their part k)
are trained on the sets' messages outside fold k and score fold k and the ordinary part k (``--add-sets NAME``:
that set is folded and trained on too; session 15's fit B adds ``testset-v9``; ``--fold-seeds FILE``: a seed file
(lang, label, kind, text) folded the same way, so its messages also weigh in the bars, session 25). Fold k's bars are
chosen with the builder's rule (``redflag_bars.choose``: recall >= ``--recall`` per language, >=
``--action-recall`` per action, weight 0.5, a rule's veto <= 0.1; ``ngram_threshold``) on the out-of-fold parts
of the other three folds, and written with its models to ``DIR/fold-k`` so the patient path's screen can load
them (``evaluation.redflags_s14``). ``--ship``: both models trained on every message, the bars chosen by the
same rule on all four folds' parts. ``--unit-negatives`` (session 27, not shipped: ``redflags-s27.md``): the
n-gram model also trains on each sentence and window of an ordinary message as ordinary. The measure-on
questions (``redflag_ordinary.MEASURE_FILES``) are never training data. Fixed seeds; e5 vectors cached; each
fold's parts and the final fit kept in ``DIR`` (a rerun resumes).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import pickle
import re
import sys
import time
from pathlib import Path
from typing import Any

from chatbot.resources import workspace_root
from chatbot.training.redflag_bars import breakdown, choose, ngram_threshold, verdicts
from chatbot.training.redflag_dataset import DATA_ROOT
from chatbot.training.redflags_cv import ORDINARY, Trainer, load_rows, rebar, save

K = 4
SETS = ("testset", "testset-v2", "testset-v3", "testset-v4", "testset-v5", "testset-v6", "testset-v7", "testset-v8")


def _fold_text(text: str) -> str:
    return re.sub(r"\W+", " ", text.lower()).strip()


def fold_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``rows`` with their ``fold``: stratified by language and action, by a hash of the id; the same folded text
    shares the fold of its first message."""
    first: dict[str, str] = {}
    for r in rows:
        first.setdefault(_fold_text(r["text"]), r["id"])
    strata: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in rows:
        strata.setdefault((r["language"], r["action"] if r["urgent"] else "none"), []).append(r)
    for group in strata.values():
        keys = sorted({first[_fold_text(r["text"])] for r in group}, key=lambda i: hashlib.sha1(i.encode()).hexdigest())
        fold = {key: n % K for n, key in enumerate(keys)}
        for r in group:
            r["fold"] = fold[first[_fold_text(r["text"])]]
    by_id = {r["id"]: r["fold"] for r in rows}
    for r in rows:  # a duplicate text in two strata: the first one's fold
        r["fold"] = by_id[first[_fold_text(r["text"])]]
    return rows


def seed_messages(files: list[Path]) -> list[dict[str, Any]]:
    """The messages of seed files (lang, label, kind, text) in the sets' row format, each with an id
    ``<file stem>:<line>`` and ``set`` the file's stem, to be folded with the sets (``fold_rows``)."""
    return [{"id": f"{f.stem}:{n}", "set": f.stem, "language": r["lang"], "text": r["text"],
             "urgent": r["label"] != "none", "action": None if r["label"] == "none" else r["label"], "kind": r["kind"]}
            for f in files for n, r in enumerate(load_rows(f))]  # fmt: skip


def set_messages(root: Path, names: tuple[str, ...] = SETS, seeds: list[Path] | None = None) -> list[dict[str, Any]]:
    """Every message of the sets ``names`` (default: the spent v1-v8) and of the seed files ``seeds`` with its
    ``set`` and ``fold`` (see the module docstring)."""
    rows = [{**r, "set": name} for name in names for r in load_rows(root / f"{name}.jsonl")]
    return fold_rows(rows + seed_messages(seeds or []))


def fold_parts(trainer: Trainer, rows: list[dict[str, Any]], k: int, out: Path, args: Any, cmd: str) -> dict:
    """Fold k's out-of-fold parts (its messages and the ordinary part k); its models written to ``out/fold-k``."""
    cached = out / f"fold-{k}.pkl"
    if cached.exists():
        return pickle.loads(cached.read_bytes())
    clf, head = trainer.fit([[r for r in rows if r["fold"] != k]], k)
    held = [r for r in rows if r["fold"] == k]
    plain = f"{ORDINARY}fold-{k}"
    parts = {f"fold-{k}": trainer.score(clf, head, held, f"fold-{k}"),
             plain: trainer.score(clf, head, trainer.held_ordinary(k), plain)}  # fmt: skip
    save(out / f"fold-{k}", clf, head, {"threshold": 0.5, "veto": 0.0, "framed_threshold": 0.5, "framed_veto": 0.5,
                                        "weight": 0.5, "negation_frame": False, "veto_questions_only": True}, 0.5,
         args, cmd)  # fmt: skip
    cached.write_bytes(pickle.dumps(parts))
    return parts


def final_fit(trainer: Trainer, rows: list[dict[str, Any]], out: Path) -> tuple[Any, Any]:
    """Both models trained on every message (kept in ``out/final.pkl``: a rerun resumes)."""
    cached = out / "final.pkl"
    if cached.exists():
        return pickle.loads(cached.read_bytes())
    fitted = trainer.fit([rows])
    cached.write_bytes(pickle.dumps(fitted))
    return fitted


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m chatbot.training.redflags_kfold", description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, required=True, help="fold models, parts and the report go here")
    ap.add_argument("--sets", type=Path, default=workspace_root() / "evaluation" / "redflags")
    ap.add_argument("--add-sets", nargs="*", default=[], help="more set names (e.g. testset-v9) to fold and train on")
    ap.add_argument("--extra-seeds", type=Path, nargs="*", default=[], help="seed files added to patient_seeds")
    ap.add_argument("--fold-seeds", type=Path, nargs="*", default=[], help="seed files folded with the sets")
    ap.add_argument("--data-root", type=Path, default=DATA_ROOT)
    ap.add_argument("--seed", type=int, default=20)
    ap.add_argument("--C", type=float, default=4.0)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--alpha", type=float, default=1e-2)
    ap.add_argument("--ngram-variants", type=int, default=25)
    ap.add_argument("--head-variants", type=int, default=8)
    ap.add_argument("--ordinary-variants", type=int, default=10)
    ap.add_argument("--recall", type=float, default=0.985)
    ap.add_argument("--action-recall", type=float, default=0.97)
    ap.add_argument("--weights", type=float, nargs="+", default=[0.5])
    ap.add_argument("--max-veto", type=float, default=0.1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--pool-top", type=int, default=1, help="a long message's n-gram score: mean of its K best units")
    ap.add_argument("--pool-min-units", type=int, default=0, help="--pool-top applies from this many units on")
    ap.add_argument(
        "--unit-negatives",
        action="store_true",
        help="the n-gram model also trains on each sentence/window of an ordinary message as ordinary",
    )
    ap.add_argument("--ship", type=Path, default=None, help="train on everything and write the models here")
    args = ap.parse_args(argv)
    cmd = "python -m chatbot.training.redflags_kfold " + " ".join(argv if argv is not None else sys.argv[1:])
    t0 = time.perf_counter()
    args.out.mkdir(parents=True, exist_ok=True)
    rows = set_messages(args.sets, SETS + tuple(args.add_sets), args.fold_seeds)
    trainer = Trainer(args)
    print(f"base: n-gram {len(trainer.ng_rows)}, head {len(trainer.hd_rows)} ({time.perf_counter() - t0:.0f} s)",
          file=sys.stderr)  # fmt: skip
    oof: dict[str, dict[str, Any]] = {}
    for k in range(K):
        oof.update(fold_parts(trainer, rows, k, args.out, args, cmd))
        print(f"fold {k} done ({time.perf_counter() - t0:.0f} s)", file=sys.stderr)
    rule = (args.recall, args.action_recall, tuple(args.weights), args.max_veto)
    report: dict[str, Any] = {"command": cmd, "folds": {m["id"]: m["fold"] for m in rows}}
    for k in range(K):
        others = [run for name, run in oof.items() if not name.endswith(f"fold-{k}")]
        chosen = choose(others, *rule)
        ng_t = ngram_threshold([oof[f"fold-{j}"] for j in range(K) if j != k], args.recall)
        rebar(args.out / f"fold-{k}", chosen, ng_t, cmd)
        run, plain = oof[f"fold-{k}"], oof[f"{ORDINARY}fold-{k}"]
        report[f"fold-{k}"] = {"bars": chosen, "ngram_threshold": ng_t, **breakdown(run, verdicts(run, chosen)),
                               "ordinary_held_out": breakdown(plain, verdicts(plain, chosen))}  # fmt: skip
    if args.ship:
        chosen = choose(list(oof.values()), *rule)
        ng_t = ngram_threshold([oof[f"fold-{j}"] for j in range(K)], args.recall)
        clf, head = final_fit(trainer, rows, args.out)
        save(args.ship, clf, head, chosen, ng_t, args, cmd)
        report["shipped"] = {"bars": chosen, "ngram_threshold": ng_t, "folder": str(args.ship)}
        print(f"shipped: {chosen}, n-gram {ng_t}", file=sys.stderr)
    (args.out / "report.json").write_text(json.dumps(report, indent=2, default=str) + "\n", encoding="utf-8")
    print(f"done in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

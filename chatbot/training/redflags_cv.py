"""Leave-one-set-out cross-validation of the red-flag screen over the spent test sets, and the shipped model.

``python -m chatbot.training.redflags_cv [--report FILE.json] [--ship models/redflags]``

The four earlier held-out sets (``evaluation/redflags/testset*.jsonl``, v1-v4) are spent, so they are
training data now. For each set k: both models (the n-gram classifier and the e5 head) are trained on the
seeds, the hand-written messages and the other three sets, and score set k (out-of-fold parts). The gate's
bars (``chatbot.stages.redflag_gate``) for set k are chosen on the out-of-fold parts of the other three sets
(their models saw set k as training data; the bars are four numbers); of the settings that keep recall >=
``--recall`` in each language and >= ``--action-recall`` for each action, the one with the fewest false
alarms. ``--ship``: both models trained on everything, the bars chosen on all four sets' out-of-fold parts.
Fixed seeds; the e5 vectors are cached (``redflag_vectors``).

The ordinary patient questions (``redflag_ordinary``, session 11) are split into four parts by a hash of the text;
fold k trains without part k and scores its ordinary (non-urgent) questions, so the bars also count out-of-fold
false alarms on them (``--ordinary-in-bars``, on by default). ``--fold-cache DIR`` keeps each fold's parts so
an interrupted run resumes. The shipped fit (``--fit-only``) trains on every part, as before.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import pickle
import random
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from chatbot.resources import workspace_root
from chatbot.stages import redflag_gate as gate
from chatbot.stages.redflag_classifier import LABELS, N_FEATURES
from chatbot.stages.redflag_context import HEAD_CONFIG, HEAD_FILE
from chatbot.stages.redflag_emotion import neutral
from chatbot.training.redflag_bars import breakdown, choose, ngram_threshold, rates, verdicts
from chatbot.training.redflag_dataset import DATA_ROOT, SEED_DIR, build
from chatbot.training.redflag_fit import dev_examples, fit_head, fit_ngram, ordinary_questions, parts
from chatbot.training.redflag_ordinary import ordinary_rows
from chatbot.training.redflag_vectors import embed_cached

SETS = ("testset.jsonl", "testset-v2.jsonl", "testset-v3.jsonl", "testset-v4.jsonl")
PATIENT_SEEDS = SEED_DIR / "patient_seeds.jsonl"
BAR_KEYS = ("threshold", "veto", "framed_threshold", "framed_veto", "weight", "negation_frame", "veto_questions_only")
ORDINARY = "ordinary:"  # prefix of the out-of-fold runs on ordinary questions (one per fold)


def pooling(args: argparse.Namespace) -> tuple[int, int]:
    """``--pool-top K --pool-min-units N``: the n-gram model scores a message of N units or more by the mean of its
    K best units (``RedFlagClassifier.pool_top``; 1: the best unit alone)."""
    return max(1, int(getattr(args, "pool_top", 1) or 1)), int(getattr(args, "pool_min_units", 0) or 0)


def calm_ngram(args: argparse.Namespace) -> bool:
    """``--emotion-neutral``: the n-gram model reads messages without their mood markers (``redflag_emotion``)."""
    return bool(getattr(args, "emotion_neutral", False))


def ordinary_part(text: str) -> int:
    """Which of the four folds holds an ordinary question out (a hash of the text)."""
    return int(hashlib.sha1(text.encode("utf-8")).hexdigest()[:8], 16) % len(SETS)


def load_rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def patient_rows(extra: list[Path] | tuple[Path, ...] = ()) -> list[dict[str, Any]]:
    """``redflag_data/patient_seeds.jsonl`` and the ``extra`` seed files (lang, label, kind, text) in the test
    sets' row format."""
    files = ([PATIENT_SEEDS] if PATIENT_SEEDS.exists() else []) + list(extra)
    return [
        {"language": r["lang"], "text": r["text"], "urgent": r["label"] != "none",
         "action": None if r["label"] == "none" else r["label"], "kind": r["kind"]}
        for f in files for r in load_rows(f)
    ]  # fmt: skip


# -- training --------------------------------------------------------------------------------------------


class Trainer:
    """The fixed part of the training data (built once) and the fits per fold."""

    def __init__(self, args: argparse.Namespace) -> None:
        from chatbot.e5_runtime import E5StandardEmbedder
        from chatbot.training.redflags import matrix
        from chatbot.training.redflags_context import context_rows

        self.args = args
        self.encoder = E5StandardEmbedder(threads=args.threads)
        self.ordinary = ordinary_questions(args.seed)
        ng = build(random.Random(args.seed), 40, 25, args.data_root, 600, 25)["train"]
        hd = build(random.Random(args.seed), 10, 8, args.data_root, 600, 8)["train"]
        hd += context_rows(random.Random(args.seed), 8)["train"]
        own = patient_rows(getattr(args, "extra_seeds", None) or ())
        ng += dev_examples(own, args.ngram_variants, self.ordinary, "patient") + self.unit_negatives(own)
        hd += dev_examples(own, args.head_variants, self.ordinary, "patient")
        ng_part, hd_part = [-1] * len(ng), [-1] * len(hd)  # the fold that holds a row out (-1: none)
        self.plain: list[dict[str, Any]] = []
        if args.ordinary_variants > 0:  # ordinary patient questions (session 11; ``redflag_ordinary``)
            self.plain = ordinary_rows()
            # row by row (the same examples as one call: each row's variants are seeded by its text) to know
            # which part each example belongs to
            for r in self.plain:
                k = ordinary_part(r["text"])
                got = dev_examples([r], args.ordinary_variants, self.ordinary, "ordinary") + self.unit_negatives([r])
                ng, ng_part = ng + got, ng_part + [k] * len(got)
                got = dev_examples([r], min(args.ordinary_variants, args.head_variants), self.ordinary, "ordinary")
                hd, hd_part = hd + got, hd_part + [k] * len(got)
        self.ng_rows, self.hd_rows = ng, hd
        self.ng_part, self.hd_part = np.array(ng_part), np.array(hd_part)
        self.ng_text = neutral if calm_ngram(args) else (lambda t: t)  # the n-gram model's reading
        self.ng_x = matrix([self.ng_text(r[0]) for r in ng])
        self.hd_x = embed_cached([r[0] for r in hd], self.encoder)
        self.matrix = matrix

    def unit_negatives(self, rows: list[dict[str, Any]]) -> list[tuple[str, str, str, str]]:
        """``--unit-negatives``: each part the n-gram model scores in an ordinary message (its sentences, pairs
        and windows; ``redflag_classifier.units``) as one more ordinary example, so that a benign clause read
        alone ("ma io non voglio") is not scored as a whole message of its own (session 27)."""
        if not getattr(self.args, "unit_negatives", False):
            return []
        from chatbot.stages.redflag_classifier import units

        out = []
        for r in rows:
            if not r["urgent"]:
                lang = r["language"] if r["language"] in ("en", "it") else "en"
                out += [(u, "none", lang, "unit") for u in units(r["text"])[1:]]
        return out

    def fit(self, sets: list[list[dict[str, Any]]], hold: int | None = None) -> tuple[Any, Any]:
        """Both models on the fixed data (less the ordinary part ``hold``, when given) and ``sets``."""
        from scipy.sparse import vstack

        a = self.args
        ng_keep = np.flatnonzero(self.ng_part != hold) if hold is not None else np.arange(len(self.ng_rows))
        hd_keep = np.flatnonzero(self.hd_part != hold) if hold is not None else np.arange(len(self.hd_rows))
        ng_x, hd_x = self.ng_x[ng_keep], self.hd_x[hd_keep]
        ng_rows = [self.ng_rows[i] for i in ng_keep]
        hd_rows = [self.hd_rows[i] for i in hd_keep]
        rows = [r for s in sets for r in s]
        ng_extra = dev_examples(rows, a.ngram_variants, self.ordinary, "dev") + self.unit_negatives(rows)
        hd_extra = dev_examples(rows, a.head_variants, self.ordinary, "dev")
        x = vstack([ng_x, self.matrix([self.ng_text(r[0]) for r in ng_extra])]).tocsr() if ng_extra else ng_x
        clf = fit_ngram(x, [r[1] for r in ng_rows + ng_extra], a.C, a.seed)
        clf.pool_top, clf.pool_min_units = pooling(a)  # the out-of-fold parts read messages as the screen will
        hx = np.vstack([hd_x, embed_cached([r[0] for r in hd_extra], self.encoder)]) if hd_extra else hd_x
        head = fit_head(hx, [r[1] for r in hd_rows + hd_extra], a.hidden, a.alpha, a.seed)
        return clf, head

    def held_ordinary(self, k: int) -> list[dict[str, Any]]:
        """The ordinary (non-urgent) questions fold ``k`` holds out."""
        return [r for r in self.plain if not r["urgent"] and ordinary_part(r["text"]) == k]

    def score(self, clf: Any, head: Any, rows: list[dict[str, Any]], name: str) -> dict[str, Any]:
        texts = [r["text"] for r in rows]
        run = parts(texts, clf, head, embed_cached(texts, self.encoder), calm_ngram(self.args))
        run.update(name=name, urgent=np.array([bool(r["urgent"]) for r in rows]),
                   lang=np.array([r["language"] for r in rows]), action=np.array([r.get("action") or "" for r in rows]),
                   kind=np.array([str(r.get("kind")) for r in rows]))  # fmt: skip
        return run


def save(out: Path, clf: Any, head: Any, chosen: dict[str, Any], ng_threshold: float, args: Any, cmd: str) -> None:
    out.mkdir(parents=True, exist_ok=True)
    q, scale = clf.int8
    np.savez_compressed(out / "weights.npz", weights_int8=q, scales=scale, bias=clf.bias)
    config = {
        "labels": list(LABELS), "threshold": ng_threshold, "n_features": N_FEATURES,
        "features": "hashed (crc32, signed) word 1-2-grams + char 3-5-grams within words, folded text, log tf, L2",
        "head": f"multinomial logistic regression, C={args.C}, int8 weights (one scale per class)",
        "seed": args.seed, "framing_floor": 0.0, "rule_floor": 0.0, "command": cmd,
        "note": "threshold: rules OR this model alone (the screen without the e5 head), chosen out of fold",
    }  # fmt: skip
    top, min_units = pooling(args)
    if top > 1:
        config.update(pool_top=top, pool_min_units=min_units)
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    np.savez_compressed(
        out / HEAD_FILE,
        **{f"{k}{i}": a.astype(np.float16) for i, (w, b) in enumerate(head.layers) for k, a in (("w", w), ("b", b))},
    )
    bars = {k: chosen[k] for k in BAR_KEYS}
    head_config = {
        "labels": list(LABELS), "layers": len(head.layers),
        "encoder": "multilingual-e5-small, int8 ONNX (chatbot models build-e5), 'query: ' prefix, whole message",
        "head": f"MLP, {args.hidden} ReLU units, alpha {args.alpha}, float16 weights", **bars,
        "seed": args.seed, "command": cmd,
    }  # fmt: skip
    if getattr(
        args, "emotion_neutral", False
    ):  # the screen then gives the n-gram model the message without its mood markers
        head_config["emotion_neutral"] = "ngram"
    (out / HEAD_CONFIG).write_text(json.dumps(head_config, indent=2) + "\n", encoding="utf-8")


def kept_bars(folder: Path) -> tuple[dict[str, Any], float]:
    """The bars and n-gram threshold of the models already in ``folder`` (a refit keeps them); placeholders
    (rules always count, threshold 0.5) when it holds none."""
    placeholder = {**gate.params({}), "negation_frame": False, "veto_questions_only": True}
    if not (folder / HEAD_CONFIG).exists() or not (folder / "config.json").exists():
        return placeholder, 0.5
    meta = json.loads((folder / HEAD_CONFIG).read_text(encoding="utf-8"))
    ng = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    return {**placeholder, **{k: meta[k] for k in BAR_KEYS if k in meta}}, float(ng.get("threshold", 0.5))


def rebar(folder: Path, chosen: dict[str, Any], ng_threshold: float, cmd: str) -> None:
    """Write the bars chosen on out-of-fold parts into the models of ``folder`` (fitted with ``--fit-only``)."""
    head_config = json.loads((folder / HEAD_CONFIG).read_text(encoding="utf-8"))
    head_config.update({k: chosen[k] for k in BAR_KEYS}, bars_command=cmd)
    (folder / HEAD_CONFIG).write_text(json.dumps(head_config, indent=2) + "\n", encoding="utf-8")
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    config.update(threshold=ng_threshold, bars_command=cmd)
    (folder / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")


def fold_runs(trainer: Trainer, sets: dict[str, list[dict[str, Any]]], k: int, name: str, args: Any) -> dict:
    """Fold ``k``: its set's out-of-fold parts (and its ordinary part's), from ``--fold-cache`` when there."""
    key = hashlib.sha1(
        json.dumps([args.seed, args.C, args.hidden, args.alpha, args.ngram_variants, args.head_variants,
                    args.ordinary_variants, args.ordinary_in_bars, len(trainer.ng_rows), len(trainer.hd_rows),
                    [len(v) for v in sets.values()]] + (["emotion"] if calm_ngram(args) else [])).encode()
    ).hexdigest()[:10]  # fmt: skip
    cached = args.fold_cache / f"fold-{name}-{key}.pkl" if args.fold_cache else None
    if cached is not None and cached.exists():
        return pickle.loads(cached.read_bytes())
    hold = k if args.ordinary_in_bars and trainer.plain else None
    clf, head = trainer.fit([rows for other, rows in sets.items() if other != name], hold)
    out = {name: trainer.score(clf, head, sets[name], name)}
    if hold is not None:
        out[ORDINARY + name] = trainer.score(clf, head, trainer.held_ordinary(k), ORDINARY + name)
    if cached is not None:
        cached.parent.mkdir(parents=True, exist_ok=True)
        cached.write_bytes(pickle.dumps(out))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m chatbot.training.redflags_cv", description=__doc__.split("\n")[0])
    ap.add_argument("--sets", type=Path, default=workspace_root() / "evaluation" / "redflags")
    ap.add_argument("--data-root", type=Path, default=DATA_ROOT)
    ap.add_argument("--seed", type=int, default=20)
    ap.add_argument("--C", type=float, default=4.0)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--alpha", type=float, default=1e-2)
    ap.add_argument("--ngram-variants", type=int, default=25, help="variants per test-set / patient message")
    ap.add_argument("--head-variants", type=int, default=8)
    ap.add_argument(
        "--ordinary-variants", type=int, default=10,
        help="variants per ordinary patient question (redflag_ordinary; the head takes min(this, --head-variants)); "
        "0: leave them out (the session-8 data)",
    )  # fmt: skip
    ap.add_argument("--recall", type=float, default=0.985, help="pooled recall per language the bars keep")
    ap.add_argument("--action-recall", type=float, default=0.97, help="pooled recall per action the bars keep")
    ap.add_argument("--weights", type=float, nargs="+", default=[0.3, 0.5, 0.7], help="head weights tried")
    ap.add_argument(
        "--max-veto", type=float, default=0.0, help="highest bar for a rule on an unframed message (0: it counts)"
    )
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--report", type=Path, default=None)
    ap.add_argument("--ship", type=Path, default=None, help="train on everything and write the models here")
    ap.add_argument("--oof", type=Path, default=None, help="save the out-of-fold parts here (pickle)")
    ap.add_argument("--from-oof", type=Path, default=None, help="reuse saved out-of-fold parts (no CV training)")
    ap.add_argument(
        "--fit-only", action="store_true", help="with --ship: no CV; the folder's bars are kept (or set by --rebar)"
    )
    ap.add_argument("--rebar", type=Path, default=None, help="with --from-oof: set the bars of the models in here")
    ap.add_argument("--fold-cache", type=Path, default=None, help="keep each fold's parts here (resumable runs)")
    ap.add_argument(
        "--emotion-neutral", action="store_true",
        help="the n-gram model trains and scores on messages without their mood markers (redflag_emotion)",
    )  # fmt: skip
    ap.add_argument(
        "--ordinary-in-bars", action=argparse.BooleanOptionalAction, default=True,
        help="hold each fold's part of the ordinary questions out and count their false alarms in the bars",
    )  # fmt: skip
    args = ap.parse_args(argv)
    cmd = "python -m chatbot.training.redflags_cv " + " ".join(argv if argv is not None else sys.argv[1:])
    t0 = time.perf_counter()
    sets = {name: load_rows(args.sets / name) for name in SETS}
    oof: dict[str, dict[str, Any]] = {}
    trainer: Trainer | None = None
    if args.fit_only and args.ship:  # the shipped fit alone; the folder's bars are kept (or set by --rebar)
        kept, ng_kept = kept_bars(args.ship)
        clf, head = Trainer(args).fit(list(sets.values()))
        save(args.ship, clf, head, kept, ng_kept, args, cmd)
        print(f"fitted on everything in {time.perf_counter() - t0:.0f} s; bars kept: {kept}", file=sys.stderr)
        return 0
    if args.from_oof:
        oof = pickle.loads(args.from_oof.read_bytes())
        for name, run in oof.items():  # parts saved before "asks" existed
            if name in sets:
                run.setdefault("asks", np.array(["?" in r["text"] for r in sets[name]], dtype=bool))
    else:
        trainer = Trainer(args)
        print(f"base: n-gram {len(trainer.ng_rows)}, head {len(trainer.hd_rows)} ({time.perf_counter() - t0:.0f} s)",
              file=sys.stderr)  # fmt: skip
        for k, name in enumerate(SETS):
            oof.update(fold_runs(trainer, sets, k, name, args))
            print(f"fold {name} done ({time.perf_counter() - t0:.0f} s)", file=sys.stderr)
        if args.oof:
            args.oof.parent.mkdir(parents=True, exist_ok=True)
            args.oof.write_bytes(pickle.dumps(oof))
    report: dict[str, Any] = {"command": cmd, "recall_target": args.recall, "action_recall_target": args.action_recall}
    pooled: list[tuple[dict[str, Any], np.ndarray]] = []
    if not args.ordinary_in_bars:
        oof = {k: v for k, v in oof.items() if not k.startswith(ORDINARY)}
    for name in SETS:
        others = [run for o, run in oof.items() if o.removeprefix(ORDINARY) != name]
        chosen = choose(others, args.recall, args.action_recall, tuple(args.weights), args.max_veto)
        fired = verdicts(oof[name], chosen)
        pooled.append((oof[name], fired))
        report[name] = {"bars": chosen, **breakdown(oof[name], fired)}
        report[name]["ngram_alone"] = rates(oof[name]["ngram"] >= 0.5, oof[name]["urgent"])
        report[name]["rules_alone"] = rates(oof[name]["rule"], oof[name]["urgent"])
        miss = [(t, a) for t, f, u, a in zip((r["text"] for r in sets[name]), fired, oof[name]["urgent"],
                                             oof[name]["action"], strict=True) if u and not f]  # fmt: skip
        report[name]["misses"] = [f"[{a}] {t}" for t, a in miss]
        if ORDINARY + name in oof:
            held = oof[ORDINARY + name]
            report[name]["ordinary_held_out"] = breakdown(held, verdicts(held, chosen))
    all_run = {k: np.concatenate([r[k] for r, _ in pooled]) for k in ("urgent", "lang", "action", "kind")}
    report["pooled"] = breakdown(all_run, np.concatenate([f for _, f in pooled]))
    held_runs = [(oof[ORDINARY + n], report[n]["bars"]) for n in SETS if ORDINARY + n in oof]
    if held_runs:
        all_held = {k: np.concatenate([r[k] for r, _ in held_runs]) for k in ("urgent", "lang", "action", "kind")}
        report["ordinary_pooled"] = breakdown(all_held, np.concatenate([verdicts(r, b) for r, b in held_runs]))
    if args.rebar or args.ship:  # the shipped bars: chosen on every out-of-fold part
        chosen = choose(list(oof.values()), args.recall, args.action_recall, tuple(args.weights), args.max_veto)
        ng_t = ngram_threshold([oof[n] for n in SETS], args.recall)  # it keeps recall on the test sets
    if args.rebar:
        rebar(args.rebar, chosen, ng_t, cmd)
        report["shipped"] = {"bars": chosen, "ngram_threshold": ng_t, "folder": str(args.rebar)}
    if args.ship:
        trainer = trainer or Trainer(args)
        clf, head = trainer.fit(list(sets.values()))
        save(args.ship, clf, head, chosen, ng_t, args, cmd)
        report["shipped"] = {"bars": chosen, "ngram_threshold": ng_t, "folder": str(args.ship)}
    if args.report:
        args.report.parent.mkdir(parents=True, exist_ok=True)
        args.report.write_text(json.dumps(report, indent=2, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
    for name in [*SETS, "pooled"]:
        block = report[name]
        print(name, json.dumps({k: block[k] for k in ("all", "language=en", "language=it")}), file=sys.stderr)
    print(f"done in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

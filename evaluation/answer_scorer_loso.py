"""The answer scorer retrained on the reply sets' key phrases, measured leave-one-set-out by composer replay.

    python -m evaluation.answer_scorer_loso --capture DIR --data SET.jsonl [--data ...] --out DIR [--no-public]
        [--w-trained 4] [--ship models/answer_scorer/answer_scorer_replies.npz] [--shipped-head reply-sets]
        [--report TYPES | --nested DIRS | --versus-shipped TYPES]

Training pairs from a reply set (``reply_pairs``): every unit the composer could offer (a sentence, a list with
its intro, or a list's items; ``chatbot.stages.answer_first``) of every document retrieved for the question (the
captured composer inputs, ``evaluation.reply_misses``) is labelled 1 when it holds one of the question's
verbatim key phrases, else 0 (the answering card's other units and the other linked cards' units).
Questions with no positive or no negative give no pairs.

For each set, the head (the same features as the shipped one: ``chatbot.stages.answer_trained``) is fitted on
the public-train pairs (``chatbot.training.answer_scorer_data``) plus the pairs of the OTHER sets, and the
composer is replayed over the held-out set's captured inputs three ways: cues alone, the shipped head for
every question type, the fold's head for every question type. Since the trained term only ever applies to the
question types in ``compose.trained_types``, any choice of types is read from these three replays (a question
of a chosen type takes the model replay's reply, any other the cues' reply). Per-question rows are written in
the reply harness's ``per_query`` shape (``evaluation.compare_runs``). ``--ship`` fits the head on all sets
and writes it with its card.
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from evaluation.bench_replies import load_reply_set, phrases_found
from evaluation.reply_misses import replay

TYPES = ("how_much", "how_long", "when", "yes_no", "why", "what_to_do")
C = 0.003  # the public head's choice (models/answer_scorer/README.md), kept fixed: no tuning on the sets


def reply_pairs(items: Sequence[Any], captures: dict[str, Any], source: str) -> list[Any]:
    """(question, unit, holds a key phrase?) examples of one reply set; see the module docstring."""
    from chatbot.sentences import split_sentences
    from chatbot.stages.answer_first import _pieces
    from chatbot.stages.extractive import segment_units
    from chatbot.training.answer_scorer_data import Example

    out: list[Example] = []
    for item in items:
        cap = captures.get(item.id) or {}
        texts: dict[str, int] = {}
        for segments in (cap.get("documents") or {}).values():
            for seg in segments:
                for unit in segment_units(split_sentences(seg.text), 0, seg.heading, keep_short=True):
                    for _, _, text, _ in _pieces(unit, 600):
                        texts.setdefault(text, int(any(phrases_found(text, item.key_phrases))))
        labels = set(texts.values())
        if labels != {0, 1}:
            continue
        out += [Example(f"{source}:{item.id}", source, item.question, t, lab) for t, lab in texts.items()]
    return out


class _CachedEmbedder:
    """e5-onnx with the question and unit vectors computed once for the whole run."""

    def __init__(self, embedder: Any, queries: dict[str, np.ndarray], passages: dict[str, np.ndarray]) -> None:
        self.embedder, self.queries, self.passages = embedder, queries, passages

    def embed_queries(self, texts: Sequence[str]) -> list[np.ndarray]:
        missing = [t for t in texts if t not in self.queries]
        for t, v in zip(missing, self.embedder.embed_queries(missing) if missing else [], strict=True):
            self.queries[t] = np.asarray(v, dtype=np.float32)
        return [self.queries[t] for t in texts]

    def embed_passages(self, texts: Sequence[str]) -> list[np.ndarray]:
        missing = [t for t in texts if t not in self.passages]
        for t, v in zip(missing, self.embedder.embed_passages(missing) if missing else [], strict=True):
            self.passages[t] = np.asarray(v, dtype=np.float32)
        return [self.passages[t] for t in texts]


def fit_head(x: np.ndarray, y: np.ndarray, w: np.ndarray, c: float = C) -> dict[str, np.ndarray]:
    """Standardise, then a weighted L2 logistic regression (lbfgs, deterministic)."""
    from sklearn.linear_model import LogisticRegression

    mean = x.mean(axis=0)
    scale = x.std(axis=0) + 1e-6
    model = LogisticRegression(C=c, max_iter=3000, solver="lbfgs")
    model.fit((x - mean) / scale, y, sample_weight=w)
    return {
        "coef": model.coef_[0].astype(np.float32),
        "intercept": np.float32(model.intercept_[0]),
        "mean": mean.astype(np.float32),
        "scale": scale.astype(np.float32),
    }


def save_head(head: dict[str, np.ndarray], meta: dict[str, Any], out: Path) -> None:
    """The head's weights file ``out`` (a folder gets answer_trained.WEIGHTS_FILE in it)."""
    from chatbot.stages.answer_trained import WEIGHTS_FILE

    path = out / WEIGHTS_FILE if out.suffix != ".npz" else out
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, **head, meta=np.asarray(json.dumps(meta, sort_keys=True)))


def replay_rows(items: Sequence[Any], captures: dict[str, Any], settings: Any, model: Any) -> list[dict[str, Any]]:
    """The composer replayed over each question's captured inputs (an urgent message in front, as answer()
    does); per-question rows in the reply harness's per_query shape, plus type, language, answer document."""
    from chatbot.stages.answer_cues import question_type

    rows = []
    for item in items:
        cap = captures[item.id]
        ans = cap.get("answer") or {}
        urgent = ans.get("urgent_message") if ans.get("urgent") else None
        text, adoc, ms = "", None, 0.0
        if cap.get("hits"):
            start = time.perf_counter()
            text, trace = replay(cap, settings, model, "cues")
            ms = (time.perf_counter() - start) * 1000
            adoc = ((trace.get("attempts") or [{}])[-1].get("answer") or {}).get("doc_id")
        reply = (f"{urgent}\n\n{text}" if text else urgent) if urgent else text
        found = phrases_found(reply, item.key_phrases) if reply else [False] * len(item.key_phrases)
        rows.append(
            {"query_id": item.id, "pipeline": "replies", "recall": sum(found) / len(found), "type": item.type,
             "composer_type": question_type(item.question),
             "language": item.language, "answer_doc": adoc, "first_link_ok": int(adoc == item.card_id),
             "composed": int(bool(text)), "compose_ms": round(ms, 1)}
        )  # fmt: skip
    return rows


def choose(rows_cues: list[dict], rows_model: list[dict], types: Sequence[str]) -> list[dict]:
    """Per question: the model replay's row when its type is in ``types``, else the cues' row (the composer's type,
    ``answer_cues.question_type``, where the rows have it: that is what decides whether the term applies)."""
    return [m if _kind(c) in types else c for c, m in zip(rows_cues, rows_model, strict=True)]


def _kind(row: dict[str, Any]) -> str:
    return row.get("composer_type", row["type"])


def _load(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def gained_lost(before: Sequence[dict], after: Sequence[dict]) -> tuple[int, int]:
    """Questions whose recall went up / down."""
    pairs = list(zip(before, after, strict=True))
    return sum(b["recall"] < a["recall"] for b, a in pairs), sum(b["recall"] > a["recall"] for b, a in pairs)


def sign_p(gained: int, lost: int) -> float:
    """Exact two-sided sign test."""
    from math import comb

    n, k = gained + lost, min(gained, lost)
    return 1.0 if n == 0 else min(1.0, 2 * sum(comb(n, i) for i in range(k + 1)) / 2**n)


def helped_types(by_set: dict[str, dict[str, list[dict[str, Any]]]], names: Sequence[str]) -> list[str]:
    """The question types on which the fold heads gained more questions than they lost against main, pooled
    over the sets ``names`` (each set scored by the head that did not see it)."""
    out = []
    for t in TYPES:
        g = lo = 0
        for n in names:
            sel = [(m, f) for m, f in zip(by_set[n]["main"], by_set[n]["fold-all"], strict=True) if m["type"] == t]
            dg, dl = gained_lost([m for m, _ in sel], [f for _, f in sel])
            g, lo = g + dg, lo + dl
        if g > lo:
            out.append(t)
    return out


def variants(out: Path, name: str, chosen: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
    """main (the shipped head for why), the fold's head for why, for every type, for ``chosen`` types."""
    cues, shipped, fold = (_load(out / f"{name}-{k}.per_query.jsonl") for k in ("cues", "shipped", "fold"))
    main = choose(cues, shipped, ["why"])
    return {
        "main": main,
        "fold-why": choose(cues, fold, ["why"]),
        "fold-all": fold,
        "fold-chosen": choose(main, fold, chosen),
        "shipped-all": shipped,
    }


def report(out: Path, names: Sequence[str], chosen: Sequence[str]) -> list[str]:
    """Markdown tables: recall per set and pooled for each variant (gained / lost vs main, sign test), and per
    question type and set, the fold's head against main on that type's questions. Writes pooled per_query
    files (``pooled-VARIANT.per_query.jsonl``) for evaluation.compare_runs."""
    by_set = {n: variants(out, n, chosen) for n in names}
    # types chosen without the set they are scored on: for each set, the types the OTHER sets' folds helped
    nested = {n: helped_types(by_set, [m for m in names if m != n]) for n in names}
    for n in names:
        by_set[n]["fold-nested"] = choose(by_set[n]["main"], by_set[n]["fold-all"], nested[n])
    labels = list(next(iter(by_set.values())))
    lines = ["| set | n | " + " | ".join(labels) + " |", "|---" * (2 + len(labels)) + "|"]
    pooled: dict[str, list[dict[str, Any]]] = {k: [] for k in labels}
    for n, runs in by_set.items():
        cells = []
        for k in labels:
            g, lo = gained_lost(runs["main"], runs[k])
            mean = np.mean([r["recall"] for r in runs[k]])
            cells.append(f"{mean:.3f}" + (f" (+{g} / -{lo})" if k != "main" else ""))
            pooled[k] += runs[k]
        lines.append(f"| {n} | {len(runs['main'])} | " + " | ".join(cells) + " |")
    cells = []
    for k in labels:
        g, lo = gained_lost(pooled["main"], pooled[k])
        mean = np.mean([r["recall"] for r in pooled[k]])
        cells.append(f"{mean:.3f}" + (f" (+{g} / -{lo}, p {sign_p(g, lo):.3f})" if k != "main" else ""))
        (out / f"pooled-{k}.per_query.jsonl").write_text("".join(json.dumps(r) + "\n" for r in pooled[k]))
    lines.append(f"| pooled | {len(pooled['main'])} | " + " | ".join(cells) + " |")
    for lang in ("en", "it"):
        cells = []
        for k in labels:
            sel = [r for r in pooled[k] if r["language"] == lang]
            cells.append(f"{np.mean([r['recall'] for r in sel]):.3f}")
        lines.append(f"| pooled {lang} | {len(sel)} | " + " | ".join(cells) + " |")
    lines += ["", "| type | " + " | ".join(names) + " | pooled |", "|---" * (2 + len(names)) + "|"]
    for t in TYPES:
        cells = []
        tot = [0, 0]
        for n in names:
            m = [r for r in by_set[n]["main"] if r["type"] == t]
            f = [r for r in by_set[n]["fold-all"] if r["type"] == t]
            g, lo = gained_lost(m, f)
            tot[0] += g
            tot[1] += lo
            cells.append(f"+{g} / -{lo}")
        lines.append(f"| {t} | " + " | ".join(cells) + f" | +{tot[0]} / -{tot[1]} (p {sign_p(*tot):.3f}) |")
    lines += ["", "| held-out set | types chosen on the other six (fold-nested) |", "|---|---|"]
    lines += [f"| {n} | {', '.join(nested[n])} |" for n in names]
    lines += ["", f"All sets: {', '.join(helped_types(by_set, names))}"]
    return lines


def versus_shipped(out: Path, names: Sequence[str], types: Sequence[str]) -> list[str]:
    """Markdown: per held-out set, recall of the shipped configuration (cues, the shipped head's term for ``types``)
    against the same with the fold's head (fitted without that set), gained / lost and a sign test, then pooled
    over the sets and by language. Writes ``versus-{shipped,fold}.per_query.jsonl`` for evaluation.compare_runs."""
    lines = ["| held-out set | n | shipped head | fold head | gained / lost |", "|---|---|---|---|---|"]
    pooled: dict[str, list[dict[str, Any]]] = {"shipped": [], "fold": []}
    for n in names:
        cues, shipped, fold = (_load(out / f"{n}-{k}.per_query.jsonl") for k in ("cues", "shipped", "fold"))
        a, b = choose(cues, shipped, types), choose(cues, fold, types)
        g, lo = gained_lost(a, b)
        mean_a, mean_b = np.mean([r["recall"] for r in a]), np.mean([r["recall"] for r in b])
        lines.append(f"| {n} | {len(a)} | {mean_a:.3f} | {mean_b:.3f} | +{g} / -{lo} |")
        pooled["shipped"] += a
        pooled["fold"] += b
    g, lo = gained_lost(pooled["shipped"], pooled["fold"])
    cells = [f"{np.mean([r['recall'] for r in pooled[k]]):.3f}" for k in ("shipped", "fold")]
    lines.append(f"| pooled | {len(pooled['fold'])} | {cells[0]} | {cells[1]} | +{g} / -{lo} (p {sign_p(g, lo):.3f}) |")
    for lang in ("en", "it"):
        sel = {k: [r for r in v if r["language"] == lang] for k, v in pooled.items()}
        g, lo = gained_lost(sel["shipped"], sel["fold"])
        cells = [f"{np.mean([r['recall'] for r in sel[k]]):.3f}" for k in ("shipped", "fold")]
        lines.append(f"| pooled {lang} | {len(sel['fold'])} | {cells[0]} | {cells[1]} | +{g} / -{lo} |")
    for k, rows in pooled.items():
        (out / f"versus-{k}.per_query.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return lines


def nested(outs: Sequence[Path], names: Sequence[str]) -> tuple[list[str], dict[str, list[dict[str, Any]]]]:
    """Leave-one-set-out choice of the run (``outs``: one per weight of the trained term) and of the question
    types: for each held-out set, the run and types (``helped_types``) with the most questions gained less lost
    on the OTHER sets; the held-out set is then scored with that choice. Markdown lines and the rows per set."""
    runs = {out: {n: variants(out, n, []) for n in names} for out in outs}
    lines = ["| held-out set | run chosen on the other sets | types | gained / lost on it |", "|---|---|---|---|"]
    rows: dict[str, list[dict[str, Any]]] = {}
    for n in names:
        others = [m for m in names if m != n]
        best = None
        for out, by_set in runs.items():
            types = helped_types(by_set, others)
            g = lo = 0
            for m in others:
                dg, dl = gained_lost(by_set[m]["main"], choose(by_set[m]["main"], by_set[m]["fold-all"], types))
                g, lo = g + dg, lo + dl
            if best is None or g - lo > best[0]:
                best = (g - lo, out, types)
        _, out, types = best
        rows[n] = choose(runs[out][n]["main"], runs[out][n]["fold-all"], types)
        g, lo = gained_lost(runs[out][n]["main"], rows[n])
        lines.append(f"| {n} | {out.name} | {', '.join(types)} | +{g} / -{lo} |")
    return lines, rows


def type_weights(
    runs: dict[str, Path], base: str, names: Sequence[str], base_types: Sequence[str], types: Sequence[str]
) -> tuple[list[str], dict[str, list[dict[str, Any]]], dict[str, list[dict[str, Any]]]]:
    """Leave-one-set-out choice, per question type in ``types``, between the cues and the fold head at each weight
    (``runs``: label -> --out folder of a run at that --w-trained). The baseline is the fold head of run ``base``
    for ``base_types`` and the cues for every other type (the shipped configuration, each set scored by the head
    that did not see it). For each held-out set, each type takes the option with the most questions gained less
    lost against the baseline on the OTHER sets (ties keep the cues). Markdown lines, baseline rows and chosen rows
    per set."""
    cues = {n: _load(runs[base] / f"{n}-cues.per_query.jsonl") for n in names}
    fold = {(k, n): _load(out / f"{n}-fold.per_query.jsonl") for k, out in runs.items() for n in names}
    baseline = {n: choose(cues[n], fold[base, n], base_types) for n in names}

    def option_rows(n: str, t: str, option: str) -> list[dict[str, Any]]:
        rows = cues[n] if option == "cues" else fold[option, n]
        return [r for r in rows if _kind(r) == t]

    def net(t: str, option: str, sets: Sequence[str]) -> int:
        g = lo = 0
        for m in sets:
            dg, dl = gained_lost([r for r in baseline[m] if _kind(r) == t], option_rows(m, t, option))
            g, lo = g + dg, lo + dl
        return g - lo

    lines = ["| held-out set | " + " | ".join(types) + " | gained / lost on it |", "|---" * (2 + len(types)) + "|"]
    chosen: dict[str, list[dict[str, Any]]] = {}
    for n in [*names, "(all sets)"]:
        others = [m for m in names if m != n]
        pick = {t: max(["cues", *runs], key=lambda o, t=t: (net(t, o, others), o == "cues")) for t in types}
        if n == "(all sets)":
            lines.append(f"| {n} | " + " | ".join(pick[t] for t in types) + " | (in-sample) |")
            continue
        rows = []
        for r in baseline[n]:
            t = _kind(r)
            if t in pick:
                src = cues[n] if pick[t] == "cues" else fold[pick[t], n]
                r = next(x for x in src if x["query_id"] == r["query_id"])
            rows.append(r)
        chosen[n] = rows
        g, lo = gained_lost(baseline[n], rows)
        lines.append(f"| {n} | " + " | ".join(pick[t] for t in types) + f" | +{g} / -{lo} |")
    return lines, baseline, chosen


def main(argv: Sequence[str] | None = None) -> int:
    from chatbot.embedders import load_embedder
    from chatbot.settings import load_settings
    from chatbot.stages.answer_first import TypedAnswerModel
    from chatbot.stages.answer_trained import EMBEDDER, FEATURE_VERSION, HEADS, TrainedAnswerModel
    from chatbot.training.answer_scorer import CACHE_DIR, build_matrix, embed_cached, ranking_metrics
    from chatbot.training.answer_scorer_data import load_examples

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", action="append", type=Path, required=True, help="reply set JSONL (repeatable)")
    p.add_argument("--capture", type=Path, required=True, help="captured composer inputs (evaluation.reply_misses)")
    p.add_argument("--shared", type=Path, default=Path("/work/shared/data"), help="public data (train splits)")
    p.add_argument("--reply-weight", type=float, default=1.0, help="sample weight of a reply-set pair")
    p.add_argument("--no-public", action="store_true", help="reply-set pairs only")
    p.add_argument("--w-trained", type=float, default=None, help="answer_select.W_TRAINED for the replays")
    p.add_argument("--named-only", default=None, help="answer_select.TRAINED_NAMED_ONLY for the fold replays (a,b)")
    p.add_argument("--fold-only", action="store_true", help="replay the cues and the fold head, not the public head")
    p.add_argument("--sets-only", default="", help="comma-separated held-out sets to run (default every set)")
    p.add_argument("--out", type=Path, required=True, help="folder for the per-question rows and folds")
    p.add_argument("--ship", type=Path, default=None, help="fit on every set and write the head (an .npz) here")
    p.add_argument("--nested", default=None, help="only choose among runs (folders, a,b) set by set; see nested()")
    p.add_argument("--report", default=None, help="only report the rows in --out; the fold head's types (a,b)")
    p.add_argument("--type-weights", default=None, help="only choose per type among runs: label=DIR,label=DIR")
    p.add_argument("--base", default="w4", help="--type-weights: the run label of the shipped weight")
    p.add_argument("--base-types", default="how_long,when,yes_no,why", help="--type-weights: the shipped types")
    p.add_argument("--types", default="how_much,what_to_do", help="--type-weights: the types to choose for")
    p.add_argument(
        "--shipped-head",
        default=None,
        help="the head the 'shipped' replays use: public or reply-sets (default: compose.trained_head in force)",
    )
    p.add_argument(
        "--versus-shipped",
        default=None,
        help="only report the rows in --out: the shipped configuration against the fold heads for these types (a,b)",
    )
    args = p.parse_args(argv)
    if args.versus_shipped:
        lines = versus_shipped(args.out, [path.stem for path in args.data], args.versus_shipped.split(","))
        print("\n".join(lines))
        return 0
    if args.type_weights:
        runs = {k: Path(v) for k, v in (kv.split("=", 1) for kv in args.type_weights.split(","))}
        names = [path.stem for path in args.data]
        base_types, types = args.base_types.split(","), args.types.split(",")
        lines, baseline, chosen = type_weights(runs, args.base, names, base_types, types)
        before = [r for n in names for r in baseline[n]]
        after = [r for n in names for r in chosen[n]]
        g, lo = gained_lost(before, after)
        for label, rows in (("baseline", before), ("chosen", after)):
            cells = [f"{np.mean([r['recall'] for r in rows if lang in (None, r['language'])]):.3f}"
                     for lang in (None, "en", "it")]  # fmt: skip
            lines.append(f"\n{label}: recall {cells[0]} (en {cells[1]}, it {cells[2]})")
            (args.out / f"pooled-types-{label}.per_query.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        lines.append(f"\nchosen vs baseline: +{g} / -{lo} (sign test p {sign_p(g, lo):.3f})")
        print("\n".join(lines))
        return 0
    if args.nested:
        outs = [Path(o) for o in args.nested.split(",")]
        names = [path.stem for path in args.data]
        lines, rows = nested(outs, names)
        pooled = [r for n in names for r in rows[n]]
        main_rows = [r for n in names for r in variants(outs[0], n, [])["main"]]
        g, lo = gained_lost(main_rows, pooled)
        mean = np.mean([r["recall"] for r in pooled])
        lines.append(f"\nPooled: main {np.mean([r['recall'] for r in main_rows]):.3f}, nested {mean:.3f}, "
                     f"+{g} / -{lo} (sign test p {sign_p(g, lo):.3f})")  # fmt: skip
        (args.out / "pooled-nested.per_query.jsonl").write_text("".join(json.dumps(r) + "\n" for r in pooled))
        print("\n".join(lines))
        return 0
    if args.report is not None:
        lines = report(args.out, [path.stem for path in args.data], args.report.split(","))
        print("\n".join(lines))
        (args.out / "report.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
        return 0

    settings = load_settings()
    sets = [(path.stem, load_reply_set(path)) for path in args.data]
    captures = {name: pickle.loads((args.capture / f"{name}.pkl").read_bytes()) for name, _ in sets}
    pairs = {name: reply_pairs(items, captures[name], name) for name, items in sets}
    public = [] if args.no_public else load_examples(args.shared)
    every = public + [e for name, _ in sets for e in pairs[name]]
    embedder = load_embedder(EMBEDDER, 1)
    q_vecs = embed_cached(embedder, "query", [e.question for e in every] + [i.question for _, s in sets for i in s],
                          CACHE_DIR)  # fmt: skip
    s_vecs = embed_cached(embedder, "passage", [e.sentence for e in every], CACHE_DIR)
    x = build_matrix(every, q_vecs, s_vecs)
    y = np.asarray([e.label for e in every])
    source = np.asarray([e.source for e in every])
    w = np.where(np.isin(source, [n for n, _ in sets]), args.reply_weight, 1.0)
    cached = _CachedEmbedder(embedder, dict(q_vecs), dict(s_vecs))
    base = {"feature_version": FEATURE_VERSION, "embedder": EMBEDDER, "features": int(x.shape[1]), "C": C}
    args.out.mkdir(parents=True, exist_ok=True)
    shipped = TrainedAnswerModel(cached, weights_file=HEADS[args.shipped_head or settings.compose.trained_head])
    summary: dict[str, Any] = {"pairs": {n: [len(v), sum(e.label for e in v)] for n, v in pairs.items()}}
    for name, items in sets:
        if args.sets_only and name not in args.sets_only.split(","):
            continue
        keep = source != name
        head = fit_head(x[keep], y[keep], w[keep])
        fold_dir = args.out / "folds" / name
        save_head(head, {**base, "held_out": name, "examples": int(keep.sum())}, fold_dir)
        fold = TrainedAnswerModel(cached, model_dir=fold_dir)
        held = ~keep
        held_pairs = [e for e, h in zip(every, held, strict=True) if h]
        ranking = {
            "cosine": ranking_metrics(held_pairs, x[held][:, 2 * next(iter(q_vecs.values())).shape[0]]),
            "shipped": ranking_metrics(held_pairs, shipped.score_features(x[held])),
            "fold": ranking_metrics(held_pairs, fold.score_features(x[held])),
        }
        runs = {"cues": replay_rows(items, captures[name], settings, None)}
        if not args.fold_only:
            runs["shipped"] = replay_rows(items, captures[name], settings, TypedAnswerModel(lambda: shipped, TYPES))
        # the fold's head with its own weight of the trained term (main's replays keep the shipped weight)
        import chatbot.stages.answer_select as answer_select

        shipped_weight, shipped_named = answer_select.W_TRAINED, answer_select.TRAINED_NAMED_ONLY
        answer_select.W_TRAINED = shipped_weight if args.w_trained is None else args.w_trained
        if args.named_only is not None:
            answer_select.TRAINED_NAMED_ONLY = tuple(t for t in args.named_only.split(",") if t)
        try:
            runs["fold"] = replay_rows(items, captures[name], settings, TypedAnswerModel(lambda m=fold: m, TYPES))
        finally:
            answer_select.W_TRAINED, answer_select.TRAINED_NAMED_ONLY = shipped_weight, shipped_named
        for label, rows in runs.items():
            (args.out / f"{name}-{label}.per_query.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        means = {k: round(float(np.mean([r["recall"] for r in v])), 3) for k, v in runs.items()}
        summary[name] = {"recall": means, "ranking": ranking}
        print(name, len(items), "pairs", summary["pairs"][name], means, ranking, file=sys.stderr, flush=True)
    if args.ship:
        head = fit_head(x, y, w)
        meta = {
            **base,
            "examples": int(len(y)),
            "positives": int(y.sum()),
            "reply_sets": {n: summary["pairs"][n] for n, _ in sets},
            "reply_weight": args.reply_weight,
            "composer_weight": args.w_trained,  # answer_select.W_TRAINED the replays were run with (None: as shipped)
            "public_examples": len(public),
        }
        save_head(head, meta, args.ship)
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

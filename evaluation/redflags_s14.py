"""Red-flag screen, session 14: the four-fold refit (``chatbot.training.redflags_kfold``) against the shipped models
on exactly the same messages, through the patient path's ``chatbot.stages.redflags.screen``.

``python -m evaluation.redflags_s14 dump CV_DIR FINAL_DIR OUT.json [--shipped models/redflags]`` screens, with this
checkout's rules:

- every message of the spent sets v1-v8 with the shipped models and with the models of its own fold
  (``CV_DIR/fold-k``: trained without it, bars chosen on the other folds); group ``sets``;
- the ordinary pool's part k (``redflag_ordinary.ordinary_rows``, non-urgent) likewise; group ``pool``;
- the measure-on questions (``redflag_ordinary.MEASURE_FILES``, never training data) with the shipped models and
  the final fit ``FINAL_DIR``; group ``measure-on``;
- every urgent message the final fit was trained on (the sets, the seed files' urgent lines, the pool's urgent
  contrasts) with ``FINAL_DIR``: it must fire; group ``own-urgent``.

One JSON object per message (group, set, id, language, gold, fold, shipped, refit), no text.
``python -m evaluation.redflags_s14 pair A.json B.json OUT.json``: two cross-validations' out-of-fold verdicts on the
same messages (A's as "shipped", B's as "refit"), for ``report``.
``python -m evaluation.redflags_s14 report OUT.json [--md FILE]``: recall and false alarms per fold / group /
language, gained and lost with an exact two-sided McNemar p (``evaluation.redflags_s12.mcnemar``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import pickle
from pathlib import Path
from typing import Any

from evaluation.redflags_s12 import LABELS, mcnemar

SEED_FILES = ("patient_seeds.jsonl", "s12_candidate_seeds.jsonl", "s13_candidate_seeds.jsonl", "s14_seeds.jsonl",
              "extra_seeds.jsonl", "ordinary_seeds.jsonl", "context_seeds.jsonl")  # fmt: skip
OLD = ("testset", "testset-v2", "testset-v3", "testset-v4")  # the shipped models' training sets


def _screener(folder: Path, cache: dict[str, Any]) -> Any:
    from chatbot.stages import redflags
    from chatbot.stages.redflag_classifier import RedFlagClassifier
    from chatbot.stages.redflag_context import ContextHead, ContextScorer, encoder

    def embed(texts: list[str]) -> Any:  # one message at a time, as the patient path embeds it; cached
        if texts[0] not in cache:
            cache[texts[0]] = encoder().embed_queries(texts)
        return cache[texts[0]]

    clf, ctx = RedFlagClassifier.load(folder), ContextScorer(ContextHead.load(folder), embed)
    return lambda text: bool(redflags.screen(text, clf, ctx).urgent)


def measure_on() -> list[dict[str, Any]]:
    from chatbot.training.redflag_ordinary import MEASURE_FILES

    labels: dict[str, Any] = {}
    for f in LABELS:
        labels.update(json.loads(Path(f).read_text(encoding="utf-8")))
    rows = []
    for f in MEASURE_FILES:
        for line in Path(f).read_text(encoding="utf-8").splitlines():
            r = json.loads(line) if line.strip() else {}
            if not r or r.get("in_scope") is False:
                continue
            gold = "urgent" in str(r.get("card_id")) or labels.get(r["id"], {}).get("verdict") in ("true", "defensible")
            text = r.get("text") or r["question"]
            rows.append({"id": r["id"], "language": r["language"], "text": text, "gold": gold})
    return rows


def dump(cv: Path, final: Path, out: Path, shipped: Path, cache_file: Path | None = None) -> None:
    from chatbot.training.redflag_dataset import SEED_DIR
    from chatbot.training.redflag_ordinary import ordinary_rows
    from chatbot.training.redflags_cv import load_rows, ordinary_part
    from chatbot.training.redflags_kfold import K, set_messages

    saved = pickle.loads(cache_file.read_bytes()) if cache_file and cache_file.exists() else {}
    cache: dict[str, Any] = saved.get("vectors", {})  # e5 vectors by text (the encoder is the same for all)
    shipped_verdicts: dict[str, bool] = saved.get("shipped", {}) if saved.get("folder") == str(shipped) else {}
    screen_shipped = _screener(shipped, cache)

    def ship(text: str) -> bool:
        if text not in shipped_verdicts:
            shipped_verdicts[text] = screen_shipped(text)
        return shipped_verdicts[text]

    if (final / "config.json").exists():
        screens = {k: _screener(cv / f"fold-{k}", cache) for k in range(K)} | {-1: _screener(final, cache)}
    else:  # only the shipped verdicts (a cache for the run to come)
        screens = {}

    def row(group: str, set_: str, id_: str, lang: str, gold: bool, fold: int, text: str) -> dict[str, Any]:
        """A message's verdicts: shipped, and its fold's models (fold -1: the final fit); no text."""
        refit = screens[fold](text) if screens else None
        return {"group": group, "set": set_, "id": id_, "language": lang, "gold": gold, "fold": fold,
                "shipped": ship(text), "refit": refit}  # fmt: skip

    rows: list[dict[str, Any]] = []
    for r in set_messages(Path("evaluation/redflags")):
        rows.append(row("sets", r["set"], r["id"], r["language"], r["urgent"], r["fold"], r["text"]))
        if r["urgent"]:
            rows.append(row("own-urgent", r["set"], r["id"], r["language"], True, -1, r["text"]))
    for r in ordinary_rows():
        key, k = "pool-" + hashlib.sha1(r["text"].encode("utf-8")).hexdigest()[:10], ordinary_part(r["text"])
        if r["urgent"]:
            rows.append(row("own-urgent", "ordinary-pool", key, r["language"], True, -1, r["text"]))
        else:
            rows.append(row("pool", "ordinary-pool", key, r["language"], False, k, r["text"]))
    for r in measure_on():
        rows.append(row("measure-on", "measure-on", r["id"], r["language"], r["gold"], -1, r["text"]))
    for name in SEED_FILES:
        for i, r in enumerate(load_rows(SEED_DIR / name)):
            if r["label"] != "none":
                rows.append(row("own-urgent", name, f"{name}:{i + 1}", r["lang"], True, -1, r["text"]))
    if cache_file:
        cache_file.write_bytes(pickle.dumps({"vectors": cache, "shipped": shipped_verdicts, "folder": str(shipped)}))
    out.write_text("[\n" + ",\n".join(json.dumps(r) for r in rows) + "\n]\n", encoding="utf-8")


def _line(label: str, rows: list[dict[str, Any]]) -> str:
    u = [r for r in rows if r["gold"]]
    o = [r for r in rows if not r["gold"]]
    gu, lu = sum(r["refit"] and not r["shipped"] for r in u), sum(r["shipped"] and not r["refit"] for r in u)
    so, no = sum(r["shipped"] and not r["refit"] for r in o), sum(r["refit"] and not r["shipped"] for r in o)
    rec = (f"{sum(r['shipped'] for r in u)}/{len(u)} | {sum(r['refit'] for r in u)}/{len(u)} | "
           f"+{gu} / -{lu} ({mcnemar(gu, lu):.3g})") if u else "- | - | -"  # fmt: skip
    fa = (f"{sum(r['shipped'] for r in o)}/{len(o)} | {sum(r['refit'] for r in o)}/{len(o)} | "
          f"-{so} / +{no} ({mcnemar(so, no):.3g})")  # fmt: skip
    return f"| {label} | {rec} | {fa if o else '- | - | -'} |"


def report(path: Path) -> str:
    rows = json.loads(path.read_text(encoding="utf-8"))
    head = ["| part | lang | urgent: shipped | refit | gained / lost (p) | false alarms: shipped | refit | "
            "silenced / new (p) |", "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    out = ["Out of fold: each message screened by its fold's models and bars (refit) and by the shipped models.", ""]
    out += head
    parts = [("v1-v4 (shipped: in-sample)", lambda r: r["group"] == "sets" and r["set"] in OLD),
             ("v5-v8 (shipped: never trained)", lambda r: r["group"] == "sets" and r["set"] not in OLD),
             ("all sets v1-v8", lambda r: r["group"] == "sets"),
             ("ordinary pool (shipped: in-sample)", lambda r: r["group"] == "pool")]  # fmt: skip
    for k in range(4):
        for g in ("en", "it"):
            sel = [r for r in rows if r["fold"] == k and r["group"] in ("sets", "pool") and r["language"] == g]
            out.append(_line(f"fold {k} (sets + pool part) | {g}", sel))
    for name, keep in parts:
        for g in ("en", "it", "all"):
            out.append(_line(f"{name} | {g}", [r for r in rows if keep(r) and g in ("all", r["language"])]))
    out += ["", "Final fit (trained on everything) vs shipped, measure-on questions (neither trained on them):", ""]
    out += head
    for g in ("en", "it", "all"):
        sel = [r for r in rows if r["group"] == "measure-on" and g in ("all", r["language"])]
        out.append(_line(f"measure-on | {g}", sel))
    own = [r for r in rows if r["group"] == "own-urgent"]
    out += ["", f"Own urgent training messages the final fit misses: {sum(not r['refit'] for r in own)} / {len(own)} "
            f"(shipped models on the same: {sum(not r['shipped'] for r in own)})", ""]  # fmt: skip
    out += [f"- {r['set']} {r['id']} (shipped: {r['shipped']})" for r in own if not r["refit"]]
    changed = [r for r in rows if r["group"] != "own-urgent" and r["shipped"] != r["refit"]]
    out += ["", "Messages whose verdict changed (shipped -> refit):", ""]
    out += [f"- {r['group']} {r['set']} {r['id']} ({'urgent' if r['gold'] else 'ordinary'}): {r['shipped']} -> "
            f"{r['refit']}" for r in changed]  # fmt: skip
    return "\n".join(out) + "\n"


def pair(a_path: Path, b_path: Path, out: Path) -> None:
    """Two CV dumps side by side on their out-of-fold messages (sets and pool parts): the ``refit`` verdicts of A
    go to ``shipped`` and those of B stay ``refit``, so ``report`` compares two cross-validations message by message."""
    a = {(r["group"], r["set"], r["id"]): r for r in json.loads(a_path.read_text(encoding="utf-8"))}
    rows = [{**r, "shipped": a[(r["group"], r["set"], r["id"])]["refit"]}
            for r in json.loads(b_path.read_text(encoding="utf-8"))
            if r["group"] in ("sets", "pool") and (r["group"], r["set"], r["id"]) in a]  # fmt: skip
    out.write_text("[\n" + ",\n".join(json.dumps(r) for r in rows) + "\n]\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("dump")
    d.add_argument("cv", type=Path)
    d.add_argument("final", type=Path)
    d.add_argument("out", type=Path)
    d.add_argument("--shipped", type=Path, default=Path("models/redflags"))
    d.add_argument("--cache", type=Path, default=None, help="e5 vectors and shipped verdicts kept here (pickle)")
    pr = sub.add_parser("pair", help="two CV dumps side by side (A's refit as 'shipped', B's as 'refit')")
    pr.add_argument("a", type=Path)
    pr.add_argument("b", type=Path)
    pr.add_argument("out", type=Path)
    r = sub.add_parser("report")
    r.add_argument("dump", type=Path)
    r.add_argument("--md", type=Path, default=None)
    args = ap.parse_args(argv)
    if args.cmd == "dump":
        dump(args.cv, args.final, args.out, args.shipped, args.cache)
        return 0
    if args.cmd == "pair":
        pair(args.a, args.b, args.out)
        return 0
    text = report(args.dump)
    if args.md:
        args.md.write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

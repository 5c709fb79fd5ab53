"""Red-flag screen, model folders side by side: emergencies kept and false alarms on ordinary questions.

``python -m evaluation.redflags_s11 --config NAME=MODEL_DIR[:BARS.json] ... [--json OUT]``

Each config is ``chatbot.stages.redflags.screen`` itself (the patient path's code, with the rules and framing
lists of this checkout) with a folder's models (``weights.npz`` + ``context-head.npz``) and its bars (the
folder's ``context-head.json``, updated from a JSON of bars when given); each message is embedded once by the
screen's own encoder. Reported:

- the red-flag sets: testset-v5 (the one set no shipped model trained on) and v1-v4 (in the training data of
  every model here: in-sample), recall and false-alarm rate per language and per action;
- ordinary questions measured out of fold (``redflag_ordinary.MEASURE_FILES``: reply sets heldout-v4 / v5,
  gate heldout-v3 / v4; never training data): questions on ordinary cards, less those judged a present or
  borderline red flag (``--labels``: s10 verdicts + s11 verdicts; an alarm without a verdict is counted as a
  false alarm and marked "?"); their urgent-card questions must all fire.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

from chatbot.stages import redflag_gate as gate
from chatbot.stages.redflag_classifier import RedFlagClassifier
from chatbot.stages.redflag_context import HEAD_CONFIG, ContextHead, ContextScorer
from chatbot.training.redflag_ordinary import MEASURE_FILES, question_rows

RF_SETS = ("testset-v5", "testset", "testset-v2", "testset-v3", "testset-v4")
ACTIONS = ("emergency", "poisoning", "mental_health", "maternity_unit")
LABELS = ("evaluation/results/redflags-false-alarms-s10.labels.json", "evaluation/results/redflags-s11.labels.json")


def set_rows(names: tuple[str, ...]) -> list[dict[str, Any]]:
    """The messages of the red-flag sets ``evaluation/redflags/<name>.jsonl``: set, id, language, text, gold, action."""
    rows = []
    for name in names:
        for line in Path(f"evaluation/redflags/{name}.jsonl").read_text(encoding="utf-8").splitlines():
            if line.strip():
                r = json.loads(line)
                rows.append({"set": name, "id": r["id"], "language": r["language"], "text": r["text"],
                             "gold": bool(r["urgent"]), "action": r.get("action") or ""})  # fmt: skip
    return rows


def messages() -> list[dict[str, Any]]:
    """Every red-flag message and every measure-on question: set, id, language, text, gold, action."""
    rows = set_rows(RF_SETS)
    for f in MEASURE_FILES:
        name = Path(f).stem
        for line in Path(f).read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            r = json.loads(line)
            if r.get("in_scope") is False:
                continue
            rows.append({"set": name, "id": r["id"], "language": r["language"], "text": r.get("text") or r["question"],
                         "gold": "urgent" in str(r.get("card_id")), "action": ""})  # fmt: skip
    assert all(question_rows(Path(f)) for f in MEASURE_FILES)
    return rows


class MemoEmbed:
    """The screen's own encoder (``redflag_context.encoder``), each text embedded once for all configs."""

    def __init__(self) -> None:
        self.known: dict[str, np.ndarray] = {}

    def __call__(self, texts: list[str]) -> np.ndarray:
        from chatbot.stages.redflag_context import encoder

        todo = [t for t in texts if t not in self.known]
        if todo:
            self.known.update(zip(todo, np.asarray(encoder().embed_queries(todo), dtype=np.float32), strict=True))
        return np.stack([self.known[t] for t in texts])


def fired(rows: list[dict[str, Any]], folder: Path, bars: dict[str, Any], embed: MemoEmbed) -> np.ndarray:
    """``redflags.screen`` on every message with the folder's models and ``bars`` (the patient path's code)."""
    from chatbot.stages import redflags

    clf = RedFlagClassifier.load(folder)
    base = ContextHead.load(folder)
    scorer = ContextScorer(ContextHead(base.layers, {**base.meta, **bars}), embed)
    return np.array([redflags.screen(r["text"], clf, scorer).urgent for r in rows], dtype=bool)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", action="append", required=True, help="NAME=MODEL_DIR[:BARS.json]")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    labels: dict[str, Any] = {}
    for f in LABELS:
        if Path(f).exists():
            labels.update(json.loads(Path(f).read_text(encoding="utf-8")))
    rows = messages()
    embed = MemoEmbed()
    configs, verdicts = [], {}
    for spec in args.config:
        name, rest = spec.split("=", 1)
        folder, _, bars_path = rest.partition(":")
        bars = json.loads((Path(folder) / HEAD_CONFIG).read_text(encoding="utf-8"))
        if bars_path:
            bars.update(json.loads(Path(bars_path).read_text(encoding="utf-8")))
        configs.append((name, folder, bars))
        verdicts[name] = fired(rows, Path(folder), bars, embed)
    sets = np.array([r["set"] for r in rows])
    lang = np.array([r["language"] for r in rows])
    gold = np.array([r["gold"] for r in rows])
    action = np.array([r["action"] for r in rows])
    verdict = np.array([labels.get(r["id"], {}).get("verdict", "") for r in rows])
    measure = np.isin(sets, [Path(f).stem for f in MEASURE_FILES])
    ordinary = measure & ~gold & ~np.isin(verdict, ["true", "defensible"])
    report: dict[str, Any] = {}
    head = "| config | set | en recall | it recall | en FAR | it FAR | " + " | ".join(ACTIONS) + " |"
    print(head + "\n|" + "---|" * (6 + len(ACTIONS)))
    for name, folder, bars in configs:
        f = verdicts[name]
        report[name] = {"folder": folder, "bars": {k: bars.get(k) for k in (*gate.DEFAULTS, "framed_threshold",
                        "framed_veto", "negation_frame", "veto_questions_only")}}  # fmt: skip
        for s in (*RF_SETS, "v1-v4 pooled"):
            m = np.isin(sets, RF_SETS[1:]) if s == "v1-v4 pooled" else sets == s
            cell = {}
            for g in ("en", "it"):
                u, o = m & gold & (lang == g), m & ~gold & (lang == g)
                cell[f"{g} recall"] = round(float(f[u].mean()), 3)
                cell[f"{g} FAR"] = round(float(f[o].mean()), 3)
            for a in ACTIONS:
                u = m & gold & (action == a)
                cell[a] = round(float(f[u].mean()), 3)
            cell["missed"] = [rows[i]["id"] for i in np.flatnonzero(m & gold & ~f)]
            report[name][s] = cell
            tag = s if s == "testset-v5" else f"{s} (in-sample)"
            vals = [cell[k] for k in ("en recall", "it recall", "en FAR", "it FAR", *ACTIONS)]
            print(f"| {name} | {tag} | " + " | ".join(f"{v:.3f}" for v in vals) + " |")
    print("\n| config | lang | ordinary questions | false alarms | FA rate | urgent cards fired | alarms (id) |")
    print("|---|---|---|---|---|---|---|")
    for name, _, _ in configs:
        f = verdicts[name]
        for g in ("en", "it", "all"):
            lm = lang == g if g != "all" else np.ones(len(rows), dtype=bool)
            o = ordinary & lm
            u = measure & gold & lm
            ids = [f"{rows[i]['id']}{'' if verdict[i] else ' ?'}" for i in np.flatnonzero(o & f)]
            report[name][f"ordinary {g}"] = {"questions": int(o.sum()), "false_alarms": int((o & f).sum()),
                                              "rate": round(float(f[o].mean()), 3), "ids": ids,
                                              "urgent_cards_fired": f"{int((u & f).sum())}/{int(u.sum())}"}  # fmt: skip
            print(f"| {name} | {g} | {int(o.sum())} | {int((o & f).sum())} | {f[o].mean():.3f} | "
                  f"{int((u & f).sum())}/{int(u.sum())} | {', '.join(ids) if g != 'all' else ''} |")  # fmt: skip
        tdm = measure & np.isin(verdict, ["true", "defensible"])
        report[name]["true_or_defensible_fired"] = f"{int((tdm & f).sum())}/{int(tdm.sum())}"
    print("\nTrue / defensible red flags on ordinary cards (measure-on sets) still fired: "
          + ", ".join(f"{n} {report[n]['true_or_defensible_fired']}" for n, _, _ in configs))  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

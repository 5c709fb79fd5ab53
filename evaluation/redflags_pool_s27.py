"""Red-flag screen, session 27: how pooling a long message's units changes the out-of-fold verdicts.

    python -m chatbot.training.redflags_kfold --out CV_DIR --add-sets testset-v12 testset-v13 testset-v14 \\
        --fold-seeds chatbot/training/redflag_data/s24_long_seeds.jsonl \\
        chatbot/training/redflag_data/extra_ordinary.jsonl
    python -m evaluation.redflags_pool_s27 CV_DIR [--pools 1:0,3:0,3:6,3:8]

The first command is R5's (the shipped models') builder; its folds keep each fold's models (``CV_DIR/fold-k``) and
out-of-fold parts (``fold-k.pkl``). This replays the n-gram model of every fold over its held-out messages with each
pooling ``K:N`` (``RedFlagClassifier.pool_top`` K from ``pool_min_units`` N; ``1:0`` is the best unit alone, which
reproduces the stored n-gram scores exactly) and applies the shipped bars (``models/redflags``) with the stored
contextual-head scores, rules and framing. Prints urgent caught and false alarms per language, for the set messages
and the ordinary questions (``redflags-s27.md``).
"""

from __future__ import annotations

import argparse
import json
import pickle
from pathlib import Path

import numpy as np

from chatbot.resources import shipped_model, workspace_root
from chatbot.stages import redflag_gate as gate
from chatbot.stages import redflag_rules as rules
from chatbot.stages.redflag_classifier import RedFlagClassifier
from chatbot.training.redflag_ordinary import ordinary_rows
from chatbot.training.redflags_cv import ordinary_part
from chatbot.training.redflags_kfold import SETS, K, set_messages

FOLD_SEEDS = ("s24_long_seeds.jsonl", "extra_ordinary.jsonl")  # R5's --fold-seeds
ADD_SETS = ("testset-v12", "testset-v13", "testset-v14")  # R5's --add-sets


def replay(cv: Path, pools: list[tuple[int, int]]) -> dict[tuple[int, int], dict[str, list]]:
    """{pooling: {"sets" | "ordinary": [(verdicts, urgent, languages) per fold]}} under the shipped bars."""
    root = workspace_root()
    seeds = [root / "chatbot" / "training" / "redflag_data" / name for name in FOLD_SEEDS]
    rows = set_messages(root / "evaluation" / "redflags", SETS + ADD_SETS, seeds)
    plain = ordinary_rows()
    bars = gate.params(json.loads((shipped_model("redflags") / "context-head.json").read_text(encoding="utf-8")))
    out: dict[tuple[int, int], dict[str, list]] = {p: {"sets": [], "ordinary": []} for p in pools}
    for k in range(K):
        parts = pickle.loads((cv / f"fold-{k}.pkl").read_bytes())
        held = [r["text"] for r in rows if r["fold"] == k]
        held_plain = [r["text"] for r in plain if not r["urgent"] and ordinary_part(r["text"]) == k]
        for name, texts, kind in ((f"fold-{k}", held, "sets"), (f"ordinary:fold-{k}", held_plain, "ordinary")):
            part = parts[name]
            if len(part["ctx"]) != len(texts):
                raise ValueError(f"{cv}/{name}: {len(part['ctx'])} stored scores for {len(texts)} messages")
            clf = RedFlagClassifier.load(cv / f"fold-{k}")
            for top, min_units in pools:
                clf.pool_top, clf.pool_min_units = top, min_units
                ngram = np.array([clf.predict(rules.without_negated(t)).urgent_score for t in texts])
                urgent = gate.urgent(part["ctx"], ngram, part["rule"].astype(bool), part["framed"].astype(bool), bars,
                                     part["asks"].astype(bool))  # fmt: skip
                out[(top, min_units)][kind].append((urgent, part["urgent"].astype(bool), np.asarray(part["lang"])))
    return out


def lines(result: dict[tuple[int, int], dict[str, list]]) -> list[str]:
    table = [
        "| pooling (K best from N units) | set urgent en | set urgent it | set false alarms | ordinary false alarms |",
        "|---|---|---|---|---|",
    ]
    for (top, min_units), kinds in result.items():
        cells = []
        for kind in ("sets", "ordinary"):
            v, u, lang = (np.concatenate([f[i] for f in kinds[kind]]) for i in range(3))
            if kind == "sets":
                cells += [f"{(v & u & (lang == x)).sum()}/{(u & (lang == x)).sum()}" for x in ("en", "it")]
            cells.append(f"{(v & ~u).sum()}/{(~u).sum()}")
        table.append(f"| {top} from {min_units} | " + " | ".join(cells) + " |")
    return table


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m evaluation.redflags_pool_s27", description=__doc__.split("\n")[0])
    ap.add_argument("cv", type=Path, help="the redflags_kfold --out folder of R5's command")
    ap.add_argument("--pools", default="1:0,3:0,3:6,3:8,3:10,3:12", help="K:N pairs, comma-separated")
    args = ap.parse_args(argv)
    pools = [(int(a), int(b)) for a, b in (p.split(":") for p in args.pools.split(","))]
    print("\n".join(lines(replay(args.cv, pools))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Ordinary patient questions as training negatives for the red-flag screen (session 11).

The shipped screen fired on ~1 ordinary reply question in 10 (coping idioms, a gestational age + an ordinary
symptom, normal bleeding after the birth, alcohol questions): its training data had almost no ordinary
questions in the patients' register. Two sources, both labelled ``none`` (``urgent`` False):

- the in-scope questions on ordinary cards of the spent dev sets in ``TRAIN_FILES`` (reply sets replyset,
  heldout, heldout-v2, heldout-v3; gate dev / dev-s8 / heldout-v2; relevance dev / test; exclusion cards),
  less ``NOT_ORDINARY``: the ids that describe a present red flag or a borderline one by hand verdict
  (``evaluation/results/redflags-false-alarms-s10.labels.json`` for heldout-v3; session 11 for the others);
- ``redflag_data/ordinary_seeds.jsonl``: hand-written questions in both languages (a gestational age with an
  ordinary symptom and a worried aside, normal bleeding after the birth, alcohol and caffeine, myths), and a
  few urgent contrasts in the same register (heavy bleeding after the birth, a crisis with a coping idiom).

``MEASURE_FILES`` (reply sets heldout-v4 / heldout-v5, gate heldout-v3 / heldout-v4) are never read for
training: the false-alarm rate on ordinary questions is measured there (``evaluation.redflags_s11``). A
training question whose folded text equals a measure-on question is dropped.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from chatbot.resources import workspace_root
from chatbot.training.redflag_dataset import SEED_DIR

ORDINARY_SEEDS = SEED_DIR / "ordinary_seeds.jsonl"
TRAIN_FILES = (
    "evaluation/replies/replyset.jsonl",
    "evaluation/replies/heldout.jsonl",
    "evaluation/replies/heldout-v2.jsonl",
    "evaluation/replies/heldout-v3.jsonl",
    "evaluation/redteam/gate_dev.jsonl",
    "evaluation/redteam/gate_dev_s8.jsonl",
    "evaluation/redteam/gate_heldout_v2.jsonl",
    "evaluation/redteam/relevance_dev.jsonl",
    "evaluation/redteam/relevance_test.jsonl",
    "evaluation/data/exclusions_cards_dev.jsonl",
    "evaluation/data/exclusions_cards_heldout.jsonl",
    "evaluation/data/exclusions_cards_heldout_v2.jsonl",
    "evaluation/data/exclusions_cards_heldout_v3.jsonl",
)
MEASURE_FILES = (
    "evaluation/replies/heldout-v4.jsonl",
    "evaluation/replies/heldout-v5.jsonl",
    "evaluation/redteam/gate_heldout_v3.jsonl",
    "evaluation/redteam/gate_heldout_v4.jsonl",
)
# present or borderline red flags on ordinary cards (reduced movements now, a baby under 3 months with a
# fever, waters going, bleeding in pregnancy, "breaking point", no fluids kept down, high blood pressure,
# headache with swelling): never trained as ordinary
NOT_ORDINARY = frozenset(
    "dev-en-07 dev-en-34 dev-it-28 held-it-05 held2-en-43 rep3-en-39 rep3-en-40 rep3-en-43 rep3-it-24 "
    "rep3-it-38 gdev-002 gdev-013 gdev-015 gdev-017 gdev-018 gdev-058 gt-it-028".split()
)
LABELS_FILE = "evaluation/results/redflags-false-alarms-s10.labels.json"


def fold(text: str) -> str:
    """Lower case, words only (to spot the same question in two sets)."""
    return " ".join(re.findall(r"\w+", text.lower()))


def question_rows(path: Path) -> list[dict[str, Any]]:
    """The in-scope questions on ordinary cards of one dev set, as ``{id, language, text}``."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        r = json.loads(line)
        cards = [r["card_id"]] if r.get("card_id") else list(r.get("good_card_ids") or [])
        if r.get("in_scope") is False or any("urgent" in c for c in cards):
            continue
        out.append({"id": r["id"], "language": r["language"], "text": r.get("text") or r["question"]})
    return out


def dev_ordinary(root: Path | None = None) -> list[dict[str, Any]]:
    """The training negatives from ``TRAIN_FILES`` in the red-flag sets' row format."""
    root = root or workspace_root()
    labels_path = root / LABELS_FILE
    labels = json.loads(labels_path.read_text(encoding="utf-8")) if labels_path.exists() else {}
    skip = NOT_ORDINARY | {k for k, v in labels.items() if v.get("verdict") in ("true", "defensible")}
    measured = {fold(r["text"]) for f in MEASURE_FILES if (root / f).exists() for r in question_rows(root / f)}
    rows, seen = [], set()
    for f in TRAIN_FILES:
        if not (root / f).exists():
            continue
        for r in question_rows(root / f):
            key = fold(r["text"])
            if r["id"] in skip or key in measured or key in seen:
                continue
            seen.add(key)
            rows.append({"language": r["language"], "text": r["text"], "urgent": False, "action": None,
                         "kind": "ordinary_dev"})  # fmt: skip
    return rows


def seed_rows() -> list[dict[str, Any]]:
    """``redflag_data/ordinary_seeds.jsonl`` (lang, label, kind, text) in the red-flag sets' row format."""
    if not ORDINARY_SEEDS.exists():
        return []
    rows = [json.loads(x) for x in ORDINARY_SEEDS.read_text(encoding="utf-8").splitlines() if x.strip()]
    return [
        {"language": r["lang"], "text": r["text"], "urgent": r["label"] != "none",
         "action": None if r["label"] == "none" else r["label"], "kind": r["kind"]}
        for r in rows
    ]  # fmt: skip


def ordinary_rows(root: Path | None = None) -> list[dict[str, Any]]:
    """Both sources, dev questions first."""
    return dev_ordinary(root) + seed_rows()

"""Ordinary patient questions as red-flag training negatives: measure-on sets and judged red flags stay out."""

from __future__ import annotations

import json
from pathlib import Path

from chatbot.training import redflag_ordinary as ro


def write(root: Path, rel: str, rows: list[dict]) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def test_training_negatives_skip_urgent_cards_judged_flags_out_of_scope_and_measure_on_questions(tmp_path) -> None:
    write(tmp_path, ro.TRAIN_FILES[3], [
        {"id": "rep3-en-01", "language": "en", "question": "how much coffee is ok?", "card_id": "en-preg-caffeine"},
        {"id": "rep3-en-39", "language": "en", "question": "no kicks today", "card_id": "en-preg-baby-movements"},
        {"id": "rep3-it-40", "language": "it", "question": "ha preso le pastiglie", "card_id": "it-urgent-poisoning"},
        {"id": "rep3-en-02", "language": "en", "question": "Is brie OK?", "card_id": "en-preg-foods-to-avoid"},
    ])  # fmt: skip
    write(tmp_path, ro.TRAIN_FILES[4], [
        {"id": "gdev-100", "language": "en", "text": "what is the capital of france", "in_scope": False},
        {"id": "gdev-101", "language": "en", "text": "how much coffee is OK", "in_scope": True},
    ])  # fmt: skip
    write(tmp_path, ro.MEASURE_FILES[0], [
        {"id": "rep4-en-01", "language": "en", "question": "is brie ok", "card_id": "en-preg-foods-to-avoid"},
    ])  # fmt: skip
    rows = ro.dev_ordinary(tmp_path)
    assert [r["text"] for r in rows] == ["how much coffee is ok?"]
    assert rows[0] == {"language": "en", "text": "how much coffee is ok?", "urgent": False, "action": None,
                       "kind": "ordinary_dev"}  # fmt: skip


def test_the_measure_on_sets_are_not_training_files() -> None:
    assert not set(ro.TRAIN_FILES) & set(ro.MEASURE_FILES)
    assert "evaluation/replies/heldout-v4.jsonl" in ro.MEASURE_FILES


def test_the_hand_written_seeds_are_mostly_ordinary_in_both_languages() -> None:
    rows = ro.seed_rows()
    assert len(rows) == 120
    assert sum(1 for r in rows if not r["urgent"] and r["language"] == "en") == 54
    assert sum(1 for r in rows if not r["urgent"] and r["language"] == "it") == 54
    assert {r["action"] for r in rows if r["urgent"]} == {"maternity_unit", "mental_health", "poisoning"}

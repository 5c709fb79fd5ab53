"""evaluation.redflags_screen_dump: one verdict per message, keyed by set file and id, no text."""

from __future__ import annotations

import json

from evaluation.redflags_screen_dump import dump


def test_dump_screens_each_message_and_keeps_no_text(tmp_path):
    sets = tmp_path / "tiny.jsonl"
    rows = [
        {"id": "u1", "language": "en", "text": "my baby is not breathing and has gone blue", "urgent": True},
        {"id": "c1", "language": "en", "text": "How much folic acid should I take each day?", "urgent": False},
    ]
    sets.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    seeds = tmp_path / "seeds.jsonl"
    seeds.write_text(json.dumps({"lang": "it", "label": "none", "text": "ciao"}) + "\n", encoding="utf-8")

    out = dump(tmp_path / "out.json", [sets, seeds])

    assert out == {
        "tiny.jsonl:u1": {"gold": True, "urgent": True, "actions": ["emergency"], "lang": "en"},
        "tiny.jsonl:c1": {"gold": False, "urgent": False, "actions": [], "lang": "en"},
        "seeds.jsonl:0": {"gold": False, "urgent": False, "actions": [], "lang": "it"},
    }
    assert "breathing" not in (tmp_path / "out.json").read_text(encoding="utf-8")

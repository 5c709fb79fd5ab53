"""Non-text and garbage messages (chatbot/training/redflag_data/garbage_ordinary_s34.jsonl, written by
evaluation.redflag_garbage_s34) against the shipped red-flag screen: exactly the three known alarms. A refit that
calls an ambulance for a row of emoji (session 34's F2 alarmed on 38 of these 100) fails here."""

from __future__ import annotations

import json
from pathlib import Path

from chatbot.stages.redflags import screen
from evaluation.redflag_garbage_s34 import garbage_rows

FILE = Path(__file__).resolve().parents[1] / "chatbot" / "training" / "redflag_data" / "garbage_ordinary_s34.jsonl"


def test_the_committed_file_is_what_the_generator_writes() -> None:
    rows = [json.loads(line) for line in FILE.read_text(encoding="utf-8").splitlines()]
    assert rows == garbage_rows() and len(rows) == 100


def test_the_shipped_screen_alarms_only_on_the_three_known_garbage_messages() -> None:
    rows = garbage_rows()
    screens = [screen(r["text"]) for r in rows]
    fired = {i: s.actions for i, s in enumerate(screens) if s.urgent}
    # blood, vomiting and fear emoji; a long run of "aaa" (twice: 400 and 1,500 words; combined 0.497 > 0.49)
    assert {rows[i]["text"][:12]: a for i, a in fired.items()} == {
        "🤮🩸😱❤️❤️": ("emergency",),
        "aaa aaa aaa ": ("mental_health",),
    }
    assert len(fired) == 3

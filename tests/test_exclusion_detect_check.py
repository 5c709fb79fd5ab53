"""The exclusion check sets of session 15 and their scorer (``evaluation.exclusion_detect_check``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chatbot.logical.detect import analyse
from evaluation.exclusion_detect_check import is_right

SETS = sorted((Path(__file__).resolve().parents[1] / "evaluation" / "data").glob("exclusion_detect_s15*.jsonl"))
# routed by a cue older than session 15 ("non mi piace X"): a known false route, left for the lead
KNOWN_FALSE = {"s15cn-it-14"}


def _rows() -> list[dict]:
    return [json.loads(line) for path in SETS for line in path.read_text(encoding="utf-8").splitlines() if line]


def test_is_right_needs_every_word_excluded_and_none_left_in_the_question() -> None:
    found = analyse("Ginger does nothing for me - any other ideas for morning sickness?")
    assert is_right(found, ["ginger"])
    assert not is_right(found, ["ginger", "lemon"])
    assert not is_right(found, ["sickness"])  # in the positive part, not excluded
    assert not is_right(None, ["ginger"])


def test_check_sets_are_balanced_and_labelled() -> None:
    rows = _rows()
    assert len(SETS) == 4 and len(rows) == 300
    assert sum(r["exclusion"] for r in rows) == 150
    assert all(r["excluded"] for r in rows if r["exclusion"])
    assert not any(r["excluded"] for r in rows if not r["exclusion"])


@pytest.mark.parametrize("row", [r for r in _rows() if not r["exclusion"] and r["id"] not in KNOWN_FALSE])
def test_must_not_route_rows_stay_unrouted(row: dict) -> None:
    assert analyse(row["question"]) is None

"""evaluation.redflags_s12: the exact McNemar p and the side-by-side of two dumps (hand-made dumps)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluation.redflags_s12 import compare, mcnemar


@pytest.mark.parametrize(
    ("gained", "lost", "p"), [(0, 0, 1.0), (5, 0, 0.0625), (3, 0, 0.25), (17, 0, 2 / 2**17), (2, 2, 1.0)]
)
def test_mcnemar_exact(gained: int, lost: int, p: float) -> None:
    assert mcnemar(gained, lost) == pytest.approx(p)


def row(set_: str, id_: str, gold: bool, fired: bool) -> dict[str, object]:
    return {"set": set_, "id": id_, "language": "it", "gold": gold, "action": "", "fired": fired, "actions": []}


def test_compare_counts_gained_lost_silenced_and_new(tmp_path: Path) -> None:
    a = [
        row("s", "u1", True, False),
        row("s", "u2", True, True),
        row("s", "o1", False, True),
        row("s", "o2", False, False),
    ]
    b = [
        row("s", "u1", True, True),
        row("s", "u2", True, True),
        row("s", "o1", False, False),
        row("s", "o2", False, True),
    ]
    b.append(row("s", "extra", False, True))  # in one dump only: not compared
    (tmp_path / "a.json").write_text(json.dumps(a))
    (tmp_path / "b.json").write_text(json.dumps(b))
    text = compare(tmp_path / "a.json", tmp_path / "b.json")
    assert "4 messages in both (1 in one dump only, not compared)" in text
    assert "| s | it | 2 | 1/2 | 2/2 | +1 / -0 (1) | 2 | 1 | 1 | -1 / +1 (1) |" in text
    assert "- s u1 (urgent): False -> True" in text
    assert "- s o2 (ordinary): False -> True" in text

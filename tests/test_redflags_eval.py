"""evaluation.redflags_eval on a hand-made fixture, rules only (no trained weights needed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluation.redflags_eval import DataError, load_cases, main

FIXTURE = Path(__file__).parent / "fixtures" / "redflags_tiny.jsonl"


def test_rules_only_report_counts_misses_false_alarms_and_wrong_actions(tmp_path):
    assert main(["--data", str(FIXTURE), "--name", "tiny", "--out-dir", str(tmp_path), "--rules-only"]) == 0

    report = json.loads((tmp_path / "tiny.json").read_text())
    overall = report["overall"]["screen"]
    # t1, t2 found with their action; t3 found (collapse -> emergency, labelled maternity_unit); t4 missed;
    # t6 ("overdose") is a false alarm of the rules
    assert (overall["urgent"], overall["ordinary"], overall["misses"], overall["false_alarms"]) == (4, 3, 1, 1)
    assert overall["recall"] == 0.75 and overall["precision"] == 0.75 and overall["false_alarm_rate"] == 0.3333
    assert overall["right_action_first"] == 0.6667
    assert report["overall"]["rules_alone"] == overall and "classifier_alone" not in report["overall"]
    assert [m["id"] for m in report["misses"]] == ["t4"]
    assert [f["id"] for f in report["false_alarms"]] == ["t6"]
    assert report["false_alarms"][0]["why"]["rules"] == ["overdose"]
    assert [(w["id"], w["screen"]["action"]) for w in report["wrong_first_action"]] == [("t3", "emergency")]
    assert report["by_language"]["it"]["screen"]["recall"] == 0.5
    assert report["by_action"]["poisoning"]["screen"]["recall"] == 1.0
    assert report["by_kind"]["everyday"]["screen"]["false_alarm_rate"] == 0.0
    assert report["latency_ms"]["p50"] > 0
    assert report["command"].startswith("python -m evaluation.redflags_eval --data ")
    md = (tmp_path / "tiny.md").read_text()
    assert "## Misses (1)" in md and "pensa di sparire per sempre" in md
    assert "## False alarms (1)" in md and "| t6 | en | informational | None | poisoning | overdose |" in md


def test_a_malformed_line_is_named(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "x", "urgent": true, "action": "panic"}\n', encoding="utf-8")
    with pytest.raises(DataError, match=r"bad.jsonl:1: action 'panic' is not one of mental_health"):
        load_cases(bad)
    bad.write_text('{"text": "x", "urgent": true, "action": null}\n', encoding="utf-8")
    with pytest.raises(DataError, match=r"bad.jsonl:1: an urgent case needs its action"):
        load_cases(bad)
    assert main(["--data", str(bad), "--name", "x", "--out-dir", str(tmp_path), "--rules-only"]) == 2
    assert not (tmp_path / "x.json").exists()

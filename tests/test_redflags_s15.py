"""The session-15 comparison's counts and ship rule on hand-made verdicts (no model, no set text)."""

from __future__ import annotations

from evaluation.redflags_s15 import qualifies, tally


def _row(lang: str, gold: bool, shipped: bool, refit: bool, action: str = "emergency") -> dict:
    return {"id": "x", "language": lang, "action": action if gold else "none", "kind": "k", "gold": gold,
            "shipped": shipped, "refit": refit}  # fmt: skip


def test_tally_counts_caught_alarms_and_discordant_pairs() -> None:
    rows = [_row("en", True, True, False), _row("en", True, False, True), _row("en", True, True, True),
            _row("en", False, True, False), _row("en", False, False, True), _row("en", False, True, True)]  # fmt: skip
    assert tally(rows) == {"urgent": 3, "ordinary": 3, "caught_shipped": 2, "caught_refit": 2, "gained": 1,
                           "lost": 1, "alarms_shipped": 2, "alarms_refit": 2, "silenced": 1, "new": 1}  # fmt: skip


def test_rule_met_when_nothing_lost_and_fewer_alarms() -> None:
    rows = [_row("en", True, True, True), _row("it", True, False, True), _row("it", False, True, False)]
    assert qualifies(rows) == (True, [])


def test_rule_fails_on_one_lost_urgent_message_in_one_language() -> None:
    rows = [_row("en", True, True, True), _row("it", True, True, False), _row("it", False, True, False)]
    assert qualifies(rows) == (False, ["it: 1 urgent lost, 0 gained"])


def test_rule_allows_a_loss_outweighed_by_gains_in_the_same_language() -> None:
    rows = [_row("en", True, True, False), _row("en", True, False, True, "poisoning"),
            _row("en", True, False, True, "mental_health")]  # fmt: skip
    assert qualifies(rows) == (True, [])


def test_rule_fails_on_more_false_alarms() -> None:
    rows = [_row("en", True, True, True), _row("en", False, False, True)]
    assert qualifies(rows) == (False, ["false alarms 0 -> 1"])

"""The false-alarm diagnosis replays the red-flag gate on stored scores (evaluation.redflags_false_alarms)."""

from evaluation.redflags_false_alarms import mechanism, verdict

BARS = {
    "weight": 0.5,
    "threshold": 0.5,
    "veto": 0.06,
    "framed_threshold": 0.9,
    "framed_veto": 0.81,
    "veto_questions_only": 1.0,
}


def row(ctx: float, ng: float, rule: bool = False, asks: bool = True, framed: bool = False) -> dict:
    return {
        "ctx": ctx,
        "ng": ng,
        "ng_whole": ng,
        "rule": rule,
        "rules": [["x", []]] if rule else [],
        "asks": asks,
        "framed": framed,
        "bar": 0.06 if rule and asks else 0.0 if rule else 0.5,
    }


def test_rule_on_a_statement_counts_whatever_the_models_say() -> None:
    assert verdict(row(0.05, 0.06, rule=True, asks=False), BARS) is True
    assert verdict(row(0.05, 0.06, rule=True, asks=False), {**BARS, "veto": 0.2, "veto_questions_only": 0.0}) is False
    assert mechanism(row(0.05, 0.06, rule=True, asks=False)) == "rule on a statement (bar 0)"


def test_no_rule_fires_on_the_mix_and_the_floor_asks_both_models() -> None:
    one_model = row(0.95, 0.30)  # mixed 0.625
    assert verdict(one_model, BARS) is True
    assert verdict(one_model, BARS, floor=0.3) is True
    assert verdict(one_model, BARS, floor=0.31) is False
    assert verdict(row(0.49, 0.5), BARS) is False  # mixed 0.495 < 0.5
    assert mechanism(one_model) == "no rule, mixed >= 0.50: head >= 0.5"


def test_a_calm_framed_message_needs_the_head() -> None:
    assert verdict(row(0.5, 1.0, framed=True), BARS) is False  # min(mixed 0.75, head 0.5) < 0.9
    assert verdict(row(0.95, 1.0, framed=True), BARS) is True

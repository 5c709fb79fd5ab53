"""The cross-fitted refit's bookkeeping: which sets the shipped models never saw, and the summary it reports."""

from __future__ import annotations

from evaluation.answer_refit import summarise, unseen_by_main


def test_only_heldout_v38_and_later_are_unseen_by_the_shipped_models() -> None:
    assert [unseen_by_main(n) for n in ("heldout-v37", "heldout-v38", "heldout-v50", "heldout", "replyset")] == [
        False,
        True,
        True,
        False,
        False,
    ]
    assert unseen_by_main("heldout-v10b") is False


def test_summary_counts_recall_by_group_and_the_sign_test_over_changed_questions() -> None:
    rows = [
        {"set": "heldout-v2", "language": "en", "type": "when", "main": 1.0, "refit": 1.0},
        {"set": "heldout-v2", "language": "it", "type": "why", "main": 0.0, "refit": 1.0},
        {"set": "heldout-v40", "language": "it", "type": "why", "main": 0.5, "refit": 1.0},
        {"set": "heldout-v41", "language": "en", "type": "when", "main": 1.0, "refit": 0.0},
    ]

    s = summarise(rows)

    assert s["all"] == {"n": 4, "main": 0.625, "refit": 0.75, "better": 2, "worse": 1, "sign_p": 1.0}
    assert s["unseen"] == {"n": 2, "main": 0.75, "refit": 0.5, "better": 1, "worse": 1, "sign_p": 1.0}
    assert s["it"] == {"n": 2, "main": 0.25, "refit": 1.0}
    assert s["when"] == {"n": 2, "main": 1.0, "refit": 0.5}

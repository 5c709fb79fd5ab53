"""The session-27 pooling replay's table on hand-made verdicts (no model, no set text)."""

from __future__ import annotations

import numpy as np

from evaluation.redflags_pool_s27 import lines


def _fold(verdicts: list[bool], urgent: list[bool], langs: list[str]) -> tuple:
    return np.array(verdicts), np.array(urgent), np.array(langs)


def test_the_table_counts_urgent_caught_per_language_and_false_alarms_per_kind() -> None:
    result = {
        (1, 0): {
            "sets": [_fold([True, False, True, True], [True, True, True, False], ["en", "en", "it", "it"]),
                     _fold([False], [False], ["en"])],
            "ordinary": [_fold([True, False], [False, False], ["en", "it"])],
        },
        (3, 6): {
            "sets": [_fold([True, True, True, False], [True, True, True, False], ["en", "en", "it", "it"]),
                     _fold([False], [False], ["en"])],
            "ordinary": [_fold([False, False], [False, False], ["en", "it"])],
        },
    }  # fmt: skip
    assert lines(result)[2:] == ["| 1 from 0 | 1/2 | 1/1 | 1/2 | 1/2 |", "| 3 from 6 | 2/2 | 1/1 | 0/2 | 0/2 |"]

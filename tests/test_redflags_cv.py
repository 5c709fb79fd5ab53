"""Choosing the red-flag gate's bars on out-of-fold scores (chatbot.training.redflags_cv.choose): exact bars."""

from __future__ import annotations

import numpy as np
import pytest

from chatbot.training.redflag_dataset import ACTIONS
from chatbot.training.redflags_cv import choose, verdicts


def run(scores, urgent, rule=None, framed=None):
    n = len(scores)
    langs = ["en", "it"] * (n // 2)
    actions = [ACTIONS[(i // 2) % 4] if u else "" for i, u in enumerate(urgent)]
    return {
        "ctx": np.array(scores), "ngram": np.array(scores),  # same score: the mix is the score for any weight
        "rule": np.array(rule or [False] * n), "framed": np.array(framed or [False] * n),
        "negated": np.zeros(n, dtype=bool), "asks": np.ones(n, dtype=bool), "urgent": np.array(urgent),
        "lang": np.array(langs), "action": np.array(actions),
    }  # fmt: skip


def test_the_bars_keep_every_urgent_message_with_the_fewest_false_alarms():
    # 8 urgent (each action in both languages) at 0.9 but one at 0.8; ordinary messages at 0.85 and 0.3
    r = run([0.9] * 7 + [0.8] + [0.85, 0.3], [True] * 8 + [False, False])
    chosen = choose([r], recall=1.0, action_recall=1.0, weights=(0.5,), max_veto=0.0)

    assert chosen["alarms"] == 1  # 0.85 cannot be told from the urgent 0.8
    assert chosen["threshold"] == pytest.approx(0.31)  # ties go to the lowest bar (recall first)
    assert verdicts(r, chosen).tolist() == [True] * 9 + [False]


def test_a_calm_frame_gets_its_own_bar_and_a_rule_on_it_can_be_vetoed():
    # the ordinary 0.85 is framed (past, hypothetical, study): its cell's bar rises above it
    scores = [0.9] * 7 + [0.8] + [0.85, 0.3]
    framed = [False] * 8 + [True, False]
    r = run(scores, [True] * 8 + [False, False], rule=[False] * 8 + [True, False], framed=framed)
    chosen = choose([r], recall=1.0, action_recall=1.0, weights=(0.5,), max_veto=0.0)

    assert chosen["alarms"] == 0
    assert chosen["veto"] == 0.0  # a rule on an unframed message always counts (--max-veto 0)
    assert chosen["framed_veto"] > 0.85  # the framed rule is vetoed
    assert verdicts(r, chosen).tolist() == [True] * 8 + [False, False]


def test_no_setting_that_keeps_the_recall_is_an_error():
    r = run([0.9] * 7 + [0.8] + [0.85, 0.3], [True] * 8 + [False, False])
    with pytest.raises(RuntimeError, match="keeps the recall"):
        choose([r], recall=1.01, action_recall=1.0, weights=(0.5,), max_veto=0.0)  # above 1: never kept

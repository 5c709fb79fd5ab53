"""The red-flag screen's gate (chatbot.stages.redflag_gate) and its calm frames: exact verdicts per cell."""

from __future__ import annotations

import numpy as np
import pytest

from chatbot.stages import redflag_gate as gate
from chatbot.stages.redflags import calm_frames

P = {"weight": 0.5, "threshold": 0.6, "veto": 0.1, "framed_threshold": 0.8, "framed_veto": 0.4}


def test_older_configs_read_as_before():
    # session 7's head config: one threshold, a veto, no framed bars -> framed messages use the threshold
    p = gate.params({"threshold": 0.47, "veto": 0.0, "weight": 0.5})
    assert p == {
        "weight": 0.5, "threshold": 0.47, "veto": 0.0, "framed_threshold": 0.47, "framed_veto": 0.47,
        "veto_questions_only": 0.0,
    }  # fmt: skip
    assert gate.params({}, weight=1.0)["weight"] == 1.0


@pytest.mark.parametrize(
    ("ctx", "ngram", "rule", "framed", "expected"),
    [
        (0.7, 0.5, False, False, True),  # mixed 0.6 reaches the plain bar 0.6
        (0.7, 0.48, False, False, False),  # mixed 0.59
        (0.1, 0.15, True, False, True),  # a rule: the bar is the veto 0.1, mixed 0.125
        (0.05, 0.1, True, False, False),  # mixed 0.075 under the veto: the rule is vetoed
        (0.9, 0.9, False, True, True),  # framed: min(mixed 0.9, ctx 0.9) >= 0.8
        (0.5, 1.0, False, True, False),  # framed: the head must agree, min(0.75, 0.5) < 0.8
        (0.45, 1.0, True, True, True),  # framed with a rule: min(0.725, 0.45) >= framed_veto 0.4
        (0.35, 1.0, True, True, False),  # framed with a rule, the head at 0.35 < 0.4
    ],
)
def test_each_cell_has_its_own_bar(ctx, ngram, rule, framed, expected):
    assert gate.urgent(ctx, ngram, rule, framed, P) is expected


def test_a_rule_bar_is_never_above_the_plain_bar_and_arrays_work():
    p = {**P, "veto": 0.9}  # a veto above the threshold: the plain bar 0.6 applies to a rule too
    assert gate.urgent(0.6, 0.6, True, False, p) is True
    out = gate.urgent(np.array([0.7, 0.05]), np.array([0.5, 0.1]), np.array([False, True]), np.array([False, False]), P)
    assert out.tolist() == [True, False]


@pytest.mark.parametrize(
    ("text", "negation", "frames"),
    [
        ("No chest pain and I'm not short of breath, just a tickly cough", True, ("negated",)),
        ("No chest pain and I'm not short of breath, just a tickly cough", False, ()),
        ("Nessun dolore al petto, solo tosse", True, ("negated",)),
        ("no pain but I'm bleeding right now, 30 weeks", True, ()),  # a present danger wins over the frames
        ("What are the signs of pre-eclampsia?", True, ("study",)),
        ("I had a bleed years ago with my first, no pain since", True, ("past", "negated")),
        ("I'm bleeding heavily at 30 weeks", True, ()),
    ],
)
def test_calm_frames_read_negated_symptoms_and_yield_to_a_present_danger(text, negation, frames):
    assert calm_frames(text, negation) == frames


def test_the_veto_can_apply_to_questions_only():
    # both models sure it is calm (mixed 0.075 < veto 0.1): a question's rule is vetoed, a statement's counts
    q = {**P, "veto_questions_only": 1.0}
    assert gate.urgent(0.05, 0.1, True, False, q, asks=True) is False
    assert gate.urgent(0.05, 0.1, True, False, q, asks=False) is True
    assert gate.urgent(0.05, 0.1, True, False, P, asks=False) is False  # without it (older configs): vetoed
    assert gate.urgent(0.05, 0.1, False, False, q, asks=False) is False  # no rule: the plain bar 0.6
    assert gate.urgent(0.35, 1.0, True, True, q, asks=False) is False  # framed: its own bar, question or not

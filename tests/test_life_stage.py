"""Life-stage ordering: hand-made cards and questions in our own words."""

from __future__ import annotations

from dataclasses import replace

import pytest

from chatbot.index import Hit
from chatbot.stages.life_stage import ANSWERED_BY, contradicts, question_stages, stage_order
from chatbot.stages.life_stage_cues import STAGE_CUES
from corpus.model import STAGES
from tests.segments import seg


def card(doc_id: str, stage: str, score: float) -> Hit:
    return Hit(replace(seg(doc_id, f"Some text of {doc_id}."), stage=stage), score, {"cross-encoder": score})


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("my 3 week old has a temperature, what now?", {"baby"}),
        ("our two-month-old has not done a poo today", {"baby"}),
        ("how do I settle my newborn at night", {"baby"}),
        ("she cries every evening from six until ten", {"baby"}),
        ("when are the first jabs for a little one?", {"baby"}),
        ("il mio neonato non dorme", {"baby"}),
        ("la bimba ha 5 settimane, è normale?", {"baby"}),
        ("I'm 30 weeks and my ankles are puffy", {"pregnancy"}),
        ("sono incinta, posso andare in piscina?", {"pregnancy"}),
        ("sono alla 20esima settimana", {"pregnancy"}),
        ("still sore down below since giving birth", {"postnatal"}),
        ("quanto dura il dolore dopo il parto?", {"postnatal"}),
        ("we are trying to get pregnant, which vitamins?", {"trying"}),  # not also pregnancy
        ("stiamo cercando un figlio, serve l'acido folico?", {"trying"}),
        ("when I was pregnant I had heartburn; can it come back?", set()),  # a past pregnancy is no cue
        ("does my baby move less at night?", set()),  # "my baby" alone: a pregnant asker says it too
        ("how much iron is in spinach?", set()),
        ("I'm 30 weeks and my 10 month old has chickenpox", {"pregnancy", "baby"}),
    ],
)
def test_question_stages(question, expected):
    assert question_stages(question) == frozenset(expected)


def test_every_cued_stage_is_a_card_stage_with_answering_stages():
    assert set(STAGE_CUES) == set(ANSWERED_BY)
    assert set(ANSWERED_BY) <= set(STAGES)
    assert all(stages <= set(STAGES) for stages in ANSWERED_BY.values())


@pytest.mark.parametrize(
    ("card_stages", "asked", "expected"),
    [
        ({"pregnancy"}, {"baby"}, True),
        ({"trying", "pregnancy"}, {"postnatal"}, True),
        ({"postnatal", "baby"}, {"baby"}, False),
        ({"pregnancy", "postnatal"}, {"baby"}, False),
        ({"baby"}, {"pregnancy"}, True),
        ({"pregnancy", "birth"}, {"pregnancy"}, False),
        ({"general"}, {"baby"}, False),
        (set(), {"baby"}, False),  # a card that does not say
        ({"pregnancy"}, set(), False),  # a question that does not say
        ({"baby"}, {"pregnancy", "baby"}, False),  # both sides of the birth: nothing contradicts
    ],
)
def test_contradicts(card_stages, asked, expected):
    assert contradicts(frozenset(card_stages), frozenset(asked)) is expected


def test_baby_question_puts_the_pregnancy_card_below_every_other():
    hits = [card("kicks", "pregnancy", 0.9), card("general", "", 0.8), card("fever", "baby", 0.7)]
    ranked, asked = stage_order("my 6 week old feels hot, 38.1 under the arm", hits)
    assert asked == frozenset({"baby"})
    assert [h.segment.doc_id for h in ranked] == ["general", "fever", "kicks"]
    assert [h.score for h in ranked] == [0.8, 0.7, 0.9]  # scores kept
    assert ranked[2].detail == {"cross-encoder": 0.9, "stage_demoted": 1.0}  # its rank before
    assert hits[0].detail == {"cross-encoder": 0.9}  # the caller's hit is not changed


def test_pregnancy_question_keeps_staged_order_among_compatible_cards():
    hits = [
        card("recovery", "postnatal", 0.95),
        card("bleeding", "pregnancy", 0.9),
        card("cot", "baby", 0.5),
        card("labour", "pregnancy,birth", 0.4),
    ]
    ranked, _ = stage_order("8 weeks pregnant and spotting, is that ok?", hits)
    assert [h.segment.doc_id for h in ranked] == ["bleeding", "labour", "recovery", "cot"]
    assert [h.detail.get("stage_demoted") for h in ranked] == [None, None, 1.0, 3.0]


@pytest.mark.parametrize(
    "question",
    ["what helps a baby with colic?", "is coffee safe?", "I'm 30 weeks and my 10 month old has chickenpox"],
)
def test_no_cue_or_both_sides_moves_nothing(question):
    hits = [card("kicks", "pregnancy", 0.9), card("colic", "baby", 0.8)]
    ranked, _ = stage_order(question, hits)
    assert ranked == hits


def test_cards_without_stages_move_nothing():
    hits = [card("a", "", 0.9), card("b", "", 0.8)]
    ranked, asked = stage_order("my newborn has yellow skin", hits)
    assert asked == frozenset({"baby"})
    assert ranked == hits


def test_the_answer_trace_names_the_question_stage_and_the_moved_cards():
    from chatbot.answer_object import life_stage_trace
    from chatbot.pipeline import RetrievalResult

    question = "my newborn has yellow eyes"
    ranked, _ = stage_order(question, [card("kicks", "pregnancy", 0.9), card("jaundice", "baby", 0.8)])
    assert life_stage_trace(RetrievalResult(question, [], ranked, ranked)) == {
        "question": ["baby"],
        "demoted": ["kicks"],
        "from_ranks": [1],
    }
    unmoved = [card("jaundice", "baby", 0.8)]
    assert life_stage_trace(RetrievalResult(question, [], unmoved, unmoved)) is None

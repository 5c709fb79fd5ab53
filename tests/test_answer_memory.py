"""Which sentence answers, by the labelled questions (chatbot.stages.answer_memory): the nearest labelled reply
question within tau lends its key phrases; the answer-first composer opens with the first link's unit holding one."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from chatbot.stages.answer_first import lead_unit
from chatbot.stages.answer_memory import Lead, answer_lead, parse_answers
from chatbot.stages.answer_select import Candidate
from tests.labelled_memory import four_questions


def _memory(tmp_path: Path):
    return four_questions(tmp_path, ("r1:a", "r2:b", "g:out", "g:unnamed"), ("card-a", "card-b", "", ""))


def test_the_nearest_labelled_question_with_key_phrases_within_tau_leads(tmp_path: Path) -> None:
    memory = _memory(tmp_path)
    answers = parse_answers({"answers": {"r1:a": ["200 milligrams"], "r2:b": ["two portions"]}}, memory, "t")
    assert answers == (("200 milligrams",), ("two portions",), (), ())
    lead = answer_lead(np.array([0.96, 0.97, 0.99, 0.99]), memory, answers, 0.95)
    # the out-of-scope and the unnamed questions are nearer, but only a question with key phrases counts
    assert lead == Lead("r2:b", 0.97, frozenset({"card-b"}), ("two portions",), 0.95)
    assert answer_lead(np.array([0.94, 0.949, 0.99, 0.99]), memory, answers, 0.95) is None


@pytest.mark.parametrize(
    ("data", "match"),
    [
        ([], "expected an object with 'answers'"),
        ({"answers": {"r9:z": ["x y"]}}, "'r9:z' is not a question of the memory"),
        ({"answers": {"g:unnamed": ["x y"]}}, "not an in-scope question with named cards"),
        ({"answers": {"r1:a": []}}, "needs a list of non-empty key phrases"),
        ({"answers": {"r1:a": ["ok", " "]}}, "needs a list of non-empty key phrases"),
    ],
)
def test_a_malformed_answers_file_is_a_clear_error(tmp_path: Path, data, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        parse_answers(data, _memory(tmp_path), "answers.json")


def _unit(text: str, doc: str) -> Candidate:
    return Candidate(text=text, doc_id=doc, segment_id=f"{doc}#1", doc_rank=0, position=0, first=0, last=0)


def test_the_first_links_unit_holding_a_key_phrase_is_the_lead() -> None:
    lead = Lead("r1:a", 0.97, frozenset({"card-a", "card-c"}), ("no more than 200 mg",), 0.95)
    ranked = [
        _unit("Coffee, tea and cola all contain caffeine.", "card-a"),
        _unit("Have no more than 200 mg of caffeine a day.", "card-c"),  # another of its cards, not the first link
        _unit("The usual advice is to have no more than 200 mg a day.", "card-a"),
    ]
    assert lead_unit(ranked, lead, "card-a") is ranked[2]
    assert lead_unit(ranked, lead, "card-x") is None  # the first link is not one of its cards: the links decide
    assert lead_unit(ranked[:2], lead, "card-a") is None  # no unit of the first link holds the phrase

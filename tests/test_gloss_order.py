"""retrieval.gloss_english_order (chatbot.stages.gloss_order) with hand-made hits: which English card an Italian
question's English answer is linked from, and when nothing changes."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

import chatbot.gloss
from chatbot.gloss import gloss_text
from chatbot.index import Hit
from chatbot.settings import Settings
from chatbot.stages.gloss_order import gloss_first, gloss_order_for
from tests.test_answer_pool import FOLATO, SONNO, VITD, seg
from tests.test_gloss import TINY

STUMP = seg("en-stump", "When", "It usually falls off between one and three weeks after birth.", "Cord", "en")
JAUNDICE = seg("en-jaundice", "When", "Jaundice usually appears two to three days after birth.", "Jaundice", "en")
URGENT = seg("en-urgent-emergency", "Call 999", "Call an ambulance now.", "Emergency", "en")
QUESTION = "dopo quanto cade il moncone del cordone ombelicale?"


def hit(s: Any, score: float) -> Hit:
    return Hit(s, score, {"dense": score})


def searching(*hits: Hit) -> tuple[list[int], Any]:
    """A search that returns ``hits`` and records the k it was asked for."""
    asked: list[int] = []

    def search(k: int) -> list[Hit]:
        asked.append(k)
        return list(hits)

    return asked, search


def docs(hits: list[Hit]) -> list[str]:
    return [h.segment.doc_id for h in hits]


def test_the_gloss_searchs_first_card_replaces_the_english_first_link_and_urgent_cards_are_skipped() -> None:
    asked, search = searching(hit(URGENT, 0.95), hit(STUMP, 0.91), hit(JAUNDICE, 0.88))
    top = [hit(JAUNDICE, 0.86), hit(SONNO, 0.84), hit(FOLATO, 0.83)]
    out, trace = gloss_first(top, "it", search, urgent={"en-urgent-emergency"}, top_n=3)
    assert docs(out) == ["en-stump", "en-jaundice", "sonno"]
    assert trace == {"was": "en-jaundice", "first": "en-stump", "dense": 0.91, "changed": True}
    assert asked == [6]


def test_a_card_already_linked_lower_moves_first_without_a_repeat() -> None:
    _, search = searching(hit(STUMP, 0.91))
    out, trace = gloss_first([hit(VITD, 0.86), hit(SONNO, 0.84), hit(STUMP, 0.80)], "it", search, top_n=3)
    assert docs(out) == ["en-stump", "vitd", "sonno"]
    assert trace is not None and trace["changed"] is True


def test_an_italian_first_link_is_left_alone_and_nothing_is_searched() -> None:
    asked, search = searching(hit(STUMP, 0.91))
    top = [hit(SONNO, 0.88), hit(JAUNDICE, 0.86)]
    out, trace = gloss_first(top, "it", search)
    assert (docs(out), trace, asked) == (["sonno", "en-jaundice"], None, [])


def test_the_same_first_card_is_kept_and_said_so() -> None:
    _, search = searching(hit(STUMP, 0.9))
    out, trace = gloss_first([hit(STUMP, 0.86), hit(SONNO, 0.84)], "it", search)
    assert docs(out) == ["en-stump", "sonno"]
    assert trace == {"was": "en-stump", "first": "en-stump", "dense": 0.9, "changed": False}


def test_a_search_with_only_urgent_cards_or_none_changes_nothing() -> None:
    top = [hit(JAUNDICE, 0.86), hit(SONNO, 0.84)]
    for found in ([hit(URGENT, 0.95)], []):
        _, search = searching(*found)
        out, trace = gloss_first(top, "it", search, urgent={"en-urgent-emergency"})
        assert (docs(out), trace) == (["en-jaundice", "sonno"], None)


class FakeDense:
    def __init__(self, found: list[Hit]) -> None:
        self.found, self.searched = found, []

    def other_language(self, text: str, language: str, k: int = 3) -> list[Hit]:
        self.searched.append((text, language, k))
        return list(self.found)


def services(dense: FakeDense, **retrieval: Any) -> SimpleNamespace:
    settings = Settings()
    settings.retrieval = settings.retrieval.model_copy(update={"gloss_english_order": True, **retrieval})
    return SimpleNamespace(settings=settings, dense=dense)


def test_the_bound_order_searches_the_english_passages_with_the_gloss(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(chatbot.gloss, "load_glossary", lambda folder=None: TINY)
    dense = FakeDense([hit(STUMP, 0.91)])
    order = gloss_order_for(services(dense), gloss_text(QUESTION, "it"), "it", excluded=False, own_question=True)
    assert order is not None
    out, trace = order([hit(JAUNDICE, 0.86), hit(SONNO, 0.84)])
    assert dense.searched == [("how long after falls off stump umbilical cord", "it", 6)]
    assert docs(out) == ["en-stump", "en-jaundice", "sonno"]


def test_no_order_when_off_for_exclusions_gloss_answers_english_questions_or_no_glossary(monkeypatch) -> None:
    monkeypatch.setattr(chatbot.gloss, "load_glossary", lambda folder=None: TINY)
    dense = FakeDense([hit(STUMP, 0.91)])
    gloss = gloss_text(QUESTION, "it")
    english = gloss_text("when does the stump fall off?", "en")
    assert gloss_order_for(services(dense, gloss_english_order=False), gloss, "it", False, True) is None
    assert gloss_order_for(services(dense), gloss, "it", excluded=True, own_question=True) is None
    assert gloss_order_for(services(dense), gloss, "it", excluded=False, own_question=False) is None
    assert gloss_order_for(services(dense), english, "en", False, True) is None

    def broken(folder=None):
        raise ValueError("glossary.tsv line 3: expected italian<TAB>english")

    monkeypatch.setattr(chatbot.gloss, "load_glossary", broken)
    assert gloss_text(QUESTION, "it") is None
    assert gloss_order_for(services(dense), gloss_text(QUESTION, "it"), "it", False, True) is None
    assert dense.searched == []

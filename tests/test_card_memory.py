"""Which card answers, by the labelled questions (chatbot.stages.card_memory): the nearest in-scope labelled question
with named cards, within tau, brings its card first when it was retrieved below the first link."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from chatbot.index import Hit
from chatbot.stages.card_memory import card_memory_pick
from tests.labelled_memory import four_questions
from tests.segments import seg


def _memory(tmp_path: Path):
    return four_questions(tmp_path, ("s1:a", "s2:b", "s3:out", "s4:unnamed"), ("card-a", "card-b|card-b2", "", ""))


def _ranked(*docs: str) -> list[Hit]:
    return [Hit(seg(d, f"text of {d}"), 1.0 - 0.1 * i, {}) for i, d in enumerate(docs)]


def test_the_nearest_labelled_questions_card_is_brought_first_from_where_it_was_ranked(tmp_path: Path) -> None:
    memory = _memory(tmp_path)
    ranked = _ranked("card-x", "card-y", "card-b2")
    hit, trace = card_memory_pick(np.array([0.5, 0.95, 0.99, 0.99]), memory, ranked, 0.93)
    # the out-of-scope s3 and the cardless s4 are nearer, but only an in-scope question with named cards counts
    assert hit is ranked[2]
    assert trace == {
        "card_memory": {
            "id": "s2:b",
            "cosine": 0.95,
            "cards": ["card-b", "card-b2"],
            "tau": 0.93,
            "picked": "card-b2",
            "rank": 3,
        }  # fmt: skip
    }


@pytest.mark.parametrize(
    ("cosines", "docs", "reason"),
    [
        ([0.95, 0.2, 0.2, 0.2], ("card-a", "card-y"), "linked first already"),
        ([0.95, 0.2, 0.2, 0.2], ("card-x", "card-y"), "not retrieved"),  # a withdrawn card is never brought back
    ],
)
def test_nothing_moves_when_the_card_leads_already_or_was_not_retrieved(
    tmp_path: Path, cosines: list[float], docs: tuple[str, ...], reason: str
) -> None:
    hit, trace = card_memory_pick(np.array(cosines), _memory(tmp_path), _ranked(*docs), 0.93)
    assert hit is None and (trace["card_memory"]["picked"], trace["card_memory"]["reason"]) == (None, reason)


def test_below_tau_or_without_documents_there_is_no_trace(tmp_path: Path) -> None:
    memory = _memory(tmp_path)
    assert card_memory_pick(np.array([0.92, 0.1, 0.1, 0.1]), memory, _ranked("card-x", "card-a"), 0.93) == (None, {})
    assert card_memory_pick(np.array([0.99, 0.1, 0.1, 0.1]), memory, [], 0.93) == (None, {})


def test_a_card_retrieval_did_not_find_is_brought_only_through_fetch(tmp_path: Path) -> None:
    memory = _memory(tmp_path)
    ranked = _ranked("card-x", "card-y")
    fetched = Hit(seg("card-b2", "text of card-b2"), 0.0, {"card_memory": 1.0})
    seen: list[str] = []

    def fetch(card: str) -> Hit | None:
        seen.append(card)
        return fetched if card == "card-b2" else None  # card-b is not readable (withdrawn)

    hit, trace = card_memory_pick(np.array([0.2, 0.96, 0.1, 0.1]), memory, ranked, 0.93, fetch=fetch)
    assert hit is fetched and seen == ["card-b", "card-b2"]
    assert trace["card_memory"] == {
        "id": "s2:b",
        "cosine": 0.96,
        "cards": ["card-b", "card-b2"],
        "tau": 0.93,
        "picked": "card-b2",
        "rank": None,
        "fetched": True,
    }
    hit, trace = card_memory_pick(np.array([0.2, 0.96, 0.1, 0.1]), memory, ranked, 0.93, fetch=lambda card: None)
    assert hit is None and trace["card_memory"]["reason"] == "not retrieved, not readable"


def test_a_second_looks_document_counts_as_the_first_link(tmp_path: Path) -> None:
    memory = _memory(tmp_path)
    ranked = _ranked("card-x", "card-a")
    hit, trace = card_memory_pick(np.array([0.95, 0.1, 0.1, 0.1]), memory, ranked, 0.93, first="card-a")
    assert hit is None and trace["card_memory"]["reason"] == "linked first already"
    hit, trace = card_memory_pick(np.array([0.95, 0.1, 0.1, 0.1]), memory, ranked, 0.93, first="card-y")
    assert hit is ranked[1] and trace["card_memory"]["rank"] == 2


def test_readable_card_never_brings_an_urgent_card_or_one_without_readable_segments() -> None:
    from types import SimpleNamespace

    from chatbot.stages.card_memory import readable_card
    from chatbot.stages.redflags import DEMO_CORPUS, urgent_card_ids

    urgent = sorted(urgent_card_ids(DEMO_CORPUS))[0]
    library = {"card-a": [seg("card-a", "first"), seg("card-a", "second")], urgent: [seg(urgent, "call now")]}
    services = SimpleNamespace(
        settings=SimpleNamespace(safety=SimpleNamespace(urgent_cards=DEMO_CORPUS)),
        index=SimpleNamespace(document_segments=lambda doc_id: library.get(doc_id, [])),
    )
    fetch = readable_card(services)
    hit = fetch("card-a")
    assert hit is not None and hit.segment is library["card-a"][0] and hit.detail == {"card_memory": 1.0}
    assert fetch(urgent) is None  # the red-flag screen brings urgent cards, never the card memory
    assert fetch("card-gone") is None  # withdrawn, or not in this library


def test_an_urgent_card_is_never_brought_by_a_remembered_emergency_question(tmp_path: Path) -> None:
    # 'stanotte mi sono risvegliata sulla schiena' was 0.926 from 'mia moglie ... è svenuta' (card: call 112):
    # the remembered card must not turn a calm question into an emergency reply
    memory = four_questions(tmp_path, ("s1:a", "s2:b", "s3:c", "s4:d"), ("it-urgent", "card-b", "", ""))
    ranked = _ranked("card-x", "card-y", "it-urgent")
    fetched: list[str] = []
    hit, trace = card_memory_pick(
        np.array([0.95, 0.2, 0.2, 0.2]), memory, ranked, 0.93, fetch=fetched.append, urgent={"it-urgent"}
    )
    assert (hit, trace["card_memory"]["picked"], trace["card_memory"]["reason"], fetched) == (
        None,
        None,
        "urgent card",
        [],
    )
    # an urgent card that leads already stays where retrieval put it
    _, trace = card_memory_pick(
        np.array([0.95, 0.2, 0.2, 0.2]), memory, _ranked("it-urgent", "card-x"), 0.93, urgent={"it-urgent"}
    )
    assert trace["card_memory"]["reason"] == "linked first already"
    # a question remembered with an urgent and an ordinary card brings the ordinary one
    memory = four_questions(tmp_path, ("s1:a", "s2:b", "s3:c", "s4:d"), ("it-urgent|card-z", "", "", ""))
    ranked = _ranked("card-x", "it-urgent", "card-z")
    hit, trace = card_memory_pick(np.array([0.95, 0.2, 0.2, 0.2]), memory, ranked, 0.93, urgent={"it-urgent"})
    assert hit is ranked[2] and trace["card_memory"]["rank"] == 3

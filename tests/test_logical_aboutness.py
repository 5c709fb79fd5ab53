"""A passage that only LISTS the excluded thing among alternatives vs one ABOUT it (chatbot/logical/aboutness.py):
hand-made sentences with exact verdicts, and exact orders through the logical pipeline on keyword vectors."""

from __future__ import annotations

import numpy as np
import pytest

from chatbot.index import Hit
from chatbot.logical import pipeline as logical
from chatbot.logical.aboutness import adjust, asks_for_alternatives, listed, listed_discount, names, passage_aboutness
from chatbot.logical.config import LogicalConfig
from chatbot.logical.mention import term_words
from chatbot.logical.query import parse
from chatbot.settings import Settings
from corpus.model import Document, Segment
from tests.conftest import indexed_services

RED_MEAT = term_words("red meat", "", drop_shared=False)


@pytest.mark.parametrize(
    ("sentence", "is_listed"),
    [
        # one item among siblings: after a list opener, between commas, first of a list, in "X and Y" lists
        ("Good sources of iron include lean red meat, beans, lentils and other pulses.", True),
        ("Beans, red meat and lentils are good sources.", True),
        ("Red meat, fish, or eggs.", True),
        ("Buone fonti di ferro sono la carne rossa, i legumi e la frutta secca.", True),
        # the sentence is about it: subject, relative clause, no siblings
        ("Red meat is the richest source of iron, and it is easily absorbed.", False),
        ("Red meat, which is high in iron, should be eaten in moderation, say experts.", False),
        ("Eat red meat.", False),
        # the term introduces what follows: "red meat: beef, lamb and pork", "red meat (beef, lamb or pork)"
        ("Red meat: beef, lamb and pork are rich in iron.", False),
        ("Choose red meat (beef, lamb or pork) twice a week.", False),
        # the words are there but far apart: not one item
        ("Meat from the market is good, and red peppers, beans or lentils too.", False),
    ],
)
def test_a_mention_is_listed_only_when_it_is_one_item_among_siblings(sentence, is_listed):
    term = term_words("carne rossa", "", drop_shared=False) if sentence.startswith("Buone") else RED_MEAT
    assert names(sentence, term)
    assert listed(sentence, term) is is_listed


def test_a_sentence_without_every_word_of_the_term_neither_names_nor_lists_it():
    sentence = "Iron makes haemoglobin, the part of red blood cells, and meat, beans or lentils hold it."
    assert not names("Iron makes haemoglobin, the part of red blood cells.", RED_MEAT)
    assert names(sentence, RED_MEAT) and not listed(sentence, RED_MEAT)  # "red" and "meat" in different items
    assert not listed("Beans, lentils and pulses.", RED_MEAT)


def _hit(sid: str, text: str, heading: str = "", title: str = "") -> Hit:
    return Hit(Segment(sid, sid, text, title, f"https://example.org/{sid}", 0, heading=heading), 0.0, {})


def test_passage_aboutness_tells_a_list_from_a_topic():
    hits = [
        _hit("list", "Iron matters in pregnancy. Good sources include lean red meat, beans and lentils."),
        _hit("first", "Red meat is rich in iron. Eat it cooked through. Keep portions small."),
        _hit("heading", "Cook it through and keep portions small.", heading="Red meat in pregnancy"),
        _hit("most", "Portions matter. Lean red meat is better. Cook red meat through."),
        _hit("bullets", "Sources:\n- Dairy and cheese.\n- Red meat.\n- Beans."),
        _hit("none", "Beans and lentils hold iron."),
    ]
    a = passage_aboutness(hits, "red meat")
    assert a.named.tolist() == [1, 1, 0, 2, 1, 0]
    assert a.listed_only.tolist() == [True, False, False, False, True, False]
    assert a.about.tolist() == [False, True, True, True, False, False]
    assert a.first_sentence[0] == "Good sources include lean red meat, beans and lentils."
    assert a.first_sentence[5] is None


def test_adjust_discounts_listed_and_boosts_about_and_leaves_the_rest():
    hits = [
        _hit("list", "Good sources include lean red meat, beans and lentils."),
        _hit("topic", "Red meat is rich in iron."),
        _hit("plain", "Beans hold iron."),
    ]
    query = parse('"iron foods" AND NOT "red meat"')
    values = {"iron foods": np.array([0.9, 0.8, 0.7]), "red meat": np.array([0.2, 0.3, 0.1])}
    out, info = adjust(query, hits, values, discount=0.5, boost=0.1)
    assert out["red meat"].tolist() == pytest.approx([0.1, 0.4, 0.1])
    assert out["iron foods"] is values["iron foods"]
    assert info == {"red meat": {"listed": ["list"], "about": ["topic"]}}
    with pytest.raises(ValueError, match="discount 1.5"):
        adjust(query, hits, values, discount=1.5, boost=0.0)
    with pytest.raises(ValueError, match="boost -0.1"):
        adjust(query, hits, values, discount=0.0, boost=-0.1)
    letter = passage_aboutness([_hit("h", "H is a letter, and h, k or x are letters too.")], "H")
    assert letter.named.tolist() == [0] and not letter.about.any()  # a one-letter term names nothing reliably
    with pytest.raises(ValueError, match="cannot be empty"):
        passage_aboutness(hits, " ")


# Keyword vectors (tests/conftest.py) over (asthma, diabetes, fever, sleep, other); "fever" is orthogonal to
# "asthma", so the orthogonalised NOT vector is the fever axis:
#   lister (3 asthma, 1 fever)/√10: asthma 0.949, fever 0.316; it lists fever among triggers
#   topic  (5 asthma, 1 fever)/√26: asthma 0.981, fever 0.196; its first sentence is about fever
#   plain  (1 asthma, 1 sleep)/√2 : asthma 0.707, fever 0
DOCS = [
    Document(id="lister", text="Asthma triggers asthma attacks: dust, fever, smoke or pollen. Asthma plans help.",
             title="Card one", source_url="https://example.org/lister"),
    Document(id="topic", text="Fever with asthma needs a check. Asthma plans, asthma diaries and asthma reviews "
             "help with asthma.", title="Card two", source_url="https://example.org/topic"),
    Document(id="plain", text="Asthma and sleep: rest well.", title="Card three", source_url="https://example.org/plain"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("discount", "boost", "order", "lister_score", "topic_score"),
    [
        # composed = asthma · (1 − fever): lister 0.949·0.684, topic 0.981·0.804, plain 0.707
        (0.0, 0.0, ["topic", "plain", "lister"], 3 / 10**0.5 * (1 - 1 / 10**0.5), 5 / 26**0.5 * (1 - 1 / 26**0.5)),
        # the listed mention counts half: lister 0.949·(1 − 0.158) = 0.799 first
        (0.5, 0.0, ["lister", "topic", "plain"], 3 / 10**0.5 * (1 - 0.5 / 10**0.5), 5 / 26**0.5 * (1 - 1 / 26**0.5)),
        # and the passage about fever pays 0.2 more: topic 0.981·(1 − 0.396) = 0.592 last
        (0.5, 0.2, ["lister", "plain", "topic"], 3 / 10**0.5 * (1 - 0.5 / 10**0.5), 5 / 26**0.5 * (0.8 - 1 / 26**0.5)),
    ],
)
def test_the_pipeline_puts_a_passage_that_lists_the_excluded_thing_above_one_about_it(
    tmp_path, fake_embedder, discount, boost, order, lister_score, topic_score
):
    settings = Settings(
        paths={"data_dir": tmp_path / "data"},
        index={"collection": "aboutness-tests", "exact": True},
        rerank={"kind": "none"},
        embedding={"model": "minilm"},
        retrieval={"top_k": 10, "top_n": 3},
    )
    services = indexed_services(settings, fake_embedder, DOCS, max_chars=300, min_chars=10)
    config = LogicalConfig(not_listed_discount=discount, not_about_boost=boost, mention_title=False)
    result = logical.logical_retrieve("asthma other than fever", services, config)
    assert [h.segment.doc_id for h in result.ranked] == order
    scores = {h.segment.doc_id: h.score for h in result.ranked}
    assert scores["lister"] == pytest.approx(lister_score, abs=1e-5)
    assert scores["topic"] == pytest.approx(topic_score, abs=1e-5)
    assert scores["plain"] == pytest.approx(1 / 2**0.5, abs=1e-5)
    info = result.info["logical"]
    ids = {h.segment.doc_id: h.segment.id for h in result.ranked}
    if discount or boost:
        assert info["aboutness"] == {
            "listed_discount": discount,
            "about_boost": boost,
            "terms": {"fever": {"listed": [ids["lister"]], "about": [ids["topic"]]}},
        }
    else:
        assert "aboutness" not in info


@pytest.mark.parametrize(
    ("cues", "alternatives"),
    [
        (("other than",), True),
        (("apart from",), True),
        (("a parte",), True),
        (("oltre all'",), True),
        (("tranne", "except"), True),
        (("excluding",), False),  # NegConstraint's "excluding references to X": X must not be discussed at all
        (("without mentioning",), False),
        (("senza",), False),
        (("other than", "excluding"), False),  # every cue must ask for alternatives
        ((), False),
    ],
)
def test_only_questions_asking_for_alternatives_get_the_listed_discount(cues, alternatives):
    assert asks_for_alternatives(cues) is alternatives
    assert listed_discount(0.5, "alternatives", cues) == (0.5 if alternatives else 0.0)
    assert listed_discount(0.5, "all", cues) == 0.5


def test_listed_discount_refuses_an_unknown_scope():
    with pytest.raises(ValueError, match="scope 'some'"):
        listed_discount(0.5, "some", ("other than",))
    with pytest.raises(ValueError, match="not_listed_scope"):
        LogicalConfig(not_listed_scope="some")


def test_a_question_that_excludes_any_mention_keeps_the_full_penalty_on_a_listed_mention(tmp_path, fake_embedder):
    settings = Settings(
        paths={"data_dir": tmp_path / "data"},
        index={"collection": "aboutness-scope", "exact": True},
        rerank={"kind": "none"},
        embedding={"model": "minilm"},
        retrieval={"top_k": 10, "top_n": 3},
    )
    services = indexed_services(settings, fake_embedder, DOCS, max_chars=300, min_chars=10)
    config = LogicalConfig(not_listed_discount=0.5, mention_title=False)
    result = logical.logical_retrieve("asthma care, excluding fever", services, config)
    assert result.info["logical"]["detection"]["cues"] == ["excluding"]
    assert result.info["logical"]["aboutness"]["listed_discount"] == 0.0
    assert [h.segment.doc_id for h in result.ranked] == ["topic", "plain", "lister"]  # as without the discount

"""Session 14b: more ways patients set a topic aside (issue 19; sentences in our own words, none from a set).

Each must-route question has an exact decomposition; each must-not-route question uses the same words without
excluding anything and must keep the configured pipeline (``analyse`` returns None).
"""

from __future__ import annotations

import pytest

from chatbot.logical.detect import analyse
from chatbot.logical.query import to_string

MUST_ROUTE = [
    # X stated first and set aside: "X aside", "X a parte", "X is sorted", "Su X so già tutto"
    ("Saunas aside, is a warm bath safe at 20 weeks?", '"is a warm bath safe at 20 weeks" AND NOT "Saunas"'),
    (
        "the reflux is sorted out now, what can I do about my swollen ankles?",
        '"what can I do about my swollen ankles" AND NOT "the reflux"',
    ),
    (
        "Il ferro a parte, quali integratori servono in gravidanza?",
        '"quali integratori servono in gravidanza" AND NOT "Il ferro"',
    ),
    (
        "La stitichezza è risolta ora, cosa posso fare per il mal di schiena?",
        '"cosa posso fare per il mal di schiena" AND NOT "La stitichezza"',
    ),
    (
        "Sul fumo so già tutto. Spiegami cosa mangiare in gravidanza",
        '"Spiegami cosa mangiare in gravidanza" AND NOT "fumo"',
    ),
    # "this isn't about X", "nothing on X please", "leaving X out of it", "don't send me the info on X"
    (
        "It isn't about the rash, she seems fine - but why does she spit up after feeds?",
        '"she seems fine - but why does she spit up after feeds" AND NOT "the rash"',
    ),
    (
        "toddler question - nothing on sleep please, just how much milk he needs",
        '"toddler question - just how much milk he needs" AND NOT "sleep"',
    ),
    (
        "Leaving formula out of it, how often should a newborn feed?",
        '"how often should a newborn feed" AND NOT "formula"',
    ),
    (
        "don't send me the info on colic again, what I want to know is how to bath a newborn",
        '"what I want to know is how to bath a newborn" AND NOT "colic"',
    ),
    # Italian: "non sul X", "non voglio leggere del X", "ho già letto sul X", "mettendo da parte X", "niente su X"
    (
        "Non sulla febbre: quando si fanno i vaccini del neonato?",
        '"quando si fanno i vaccini del neonato" AND NOT "febbre"',
    ),
    (
        "Non voglio leggere della depressione, ho bisogno di capire come funziona l'allattamento",
        '"ho bisogno di capire come funziona l\'allattamento" AND NOT "depressione"',
    ),
    (
        "Ho già letto sulla nausea, ora vorrei sapere quando si fa la prima ecografia",
        '"ora vorrei sapere quando si fa la prima ecografia" AND NOT "nausea"',
    ),
    (
        "Mettendo da parte il fumo, cosa devo evitare in gravidanza?",
        '"cosa devo evitare in gravidanza" AND NOT "il fumo"',
    ),
    (
        "niente su coliche e pianto per favore. quando si fa il primo bagnetto?",
        '"quando si fa il primo bagnetto" AND NOT "coliche" AND NOT "pianto"',
    ),
    (
        "I've already read about iron, which other supplements do I need?",
        '"which other supplements do I need" AND NOT "iron"',
    ),
]

MUST_NOT_ROUTE = [
    "Is the reflux sorted by antacids in pregnancy?",
    "How do I get the heartburn sorted at 30 weeks?",
    "What can I put aside for the baby each month?",
    "Jokes aside, is it safe?",
    "I know everything about it already, what else?",
    "Is this about fever or jaundice in a newborn?",
    "What is the leaflet on folic acid about?",
    "Nothing on the scan looked wrong, is the baby fine?",
    "Can you send me the info on colic?",
    "How do I leave the baby with a sitter?",
    "Il ferro è importante in gravidanza?",
    "La nausea è passata, è normale?",
    "Cosa dicono sulla febbre del neonato?",
    "Voglio leggere della depressione post partum",
    "Ho letto sulla nausea che lo zenzero aiuta, è vero?",
    "Ho bisogno di capire come funziona l'allattamento",
    "Quando si fa la prima ecografia?",
    "Non so niente sul parto, come mi preparo?",
]


@pytest.mark.parametrize(("question", "query"), MUST_ROUTE)
def test_s14b_phrasings_are_decomposed(question: str, query: str) -> None:
    found = analyse(question)
    assert found is not None, question
    assert to_string(found.query) == query


@pytest.mark.parametrize("question", MUST_NOT_ROUTE)
def test_same_words_without_setting_a_topic_aside_are_not_routed(question: str) -> None:
    found = analyse(question)
    assert found is None, (question, found and found.text)

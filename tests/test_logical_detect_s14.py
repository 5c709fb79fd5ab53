"""Session 14: exclusion phrasings the detector missed (issue 19; sentences in our own words).

Each must-route question has an exact decomposition; each must-not-route question uses the same words without
excluding anything and must keep the configured pipeline (``analyse`` returns None).
"""

from __future__ import annotations

import pytest

from chatbot.logical.detect import analyse
from chatbot.logical.query import to_string

MUST_ROUTE = [
    # plain "without/senza X" after a request for what helps
    (
        "Cosa aiuta contro la nausea in gravidanza senza zenzero?",
        '"Cosa aiuta contro la nausea in gravidanza" AND NOT "zenzero"',
    ),
    ("What helps with heartburn in pregnancy without milk?", '"What helps with heartburn in pregnancy" AND NOT "milk"'),
    # "non è X" / "it's not X" in the middle of a sentence, with or without its reason
    ("Sono sempre stanca ma non è anemia, cosa può essere?", '"Sono sempre stanca cosa può essere" AND NOT "anemia"'),
    (
        "Sono sempre stanca ma non e anemia ho fatto gli esami, cosa puo essere",
        '"Sono sempre stanca cosa puo essere" AND NOT "anemia"',
    ),
    (
        "Always exhausted at 12 weeks and it's not anaemia, my bloods came back fine, why?",
        '"Always exhausted at 12 weeks why" AND NOT "anaemia"',
    ),
    (
        "Stanchissima a 9 settimane, non è la nausea e non è il ferro, che altro può essere?",
        '"Stanchissima a 9 settimane, che altro può essere" AND NOT "la nausea" AND NOT "il ferro"',
    ),
    ("Non credo sia una colica, perché piange la sera?", '"perché piange la sera" AND NOT "una colica"'),
    (
        "I don't think it's reflux, why does my baby cry after feeds?",
        '"why does my baby cry after feeds" AND NOT "reflux"',
    ),
    # a substitute followed by a request instead of a question word
    ("invece del ferro parlami della vitamina D", '"parlami della vitamina D" AND NOT "ferro"'),
    ("instead of iron tell me about vitamin D in pregnancy", '"tell me about vitamin D in pregnancy" AND NOT "iron"'),
    ("al di là della nausea come capisco se sono incinta?", '"come capisco se sono incinta" AND NOT "nausea"'),
    # what the patient asks the bot to leave out
    (
        "please don't tell me about ginger, what else helps with sickness?",
        '"what else helps with sickness" AND NOT "ginger"',
    ),
    (
        "lasciamo perdere il fumo, cosa devo evitare di mangiare in gravidanza?",
        '"cosa devo evitare di mangiare in gravidanza" AND NOT "il fumo"',
    ),
    (
        "I know about folic acid already, what other vitamins should I take?",
        '"what other vitamins should I take" AND NOT "folic acid"',
    ),
    ("non mi interessa l'alcol, solo il caffè in gravidanza", '"solo il caffè in gravidanza" AND NOT "l\'alcol"'),
    (
        "skip the breastfeeding stuff, how do I make up a bottle?",
        '"how do I make up a bottle" AND NOT "the breastfeeding"',
    ),
    (
        "lascia stare febbre e vomito, come faccio a farlo dormire?",
        '"come faccio a farlo dormire" AND NOT "febbre" AND NOT "vomito"',
    ),
]

MUST_NOT_ROUTE = [
    "Cosa posso mangiare senza glutine in gravidanza?",
    "What helps a baby sleep without crying?",
    "What helps me sleep without waking up at night?",
    "What can I take for a cold without a prescription?",
    "Il bambino non è vaccinato, può andare al nido?",
    "Non è successo niente, ma posso fare il bagnetto al neonato?",
    "Non è grave, vero? Cosa faccio per la tosse?",
    "Non è una cosa grave, vero? Cosa faccio per la febbre?",
    "Il mio bimbo non è cianotico, cosa faccio?",
    "non è la prima volta, come mai ho le perdite?",
    "Non è colpa mia se il bambino piange?",
    "I don't think it's serious, but how do I check her temperature?",
    "Don't tell me it's serious, what should I do for a cough?",
    "I don't want the baby to get sick, what vaccines do I need?",
    "I know about it, what else helps?",
    "Tell me about iron in pregnancy",
    "Spiegami il diabete gestazionale",
    "Come capisco se sono in travaglio?",
    "Skip to the end: how long does labour last?",
    "Non mi serve altro, grazie. Quanto dura il baby blues?",
]


@pytest.mark.parametrize(("question", "query"), MUST_ROUTE)
def test_s14_phrasings_are_decomposed(question: str, query: str) -> None:
    found = analyse(question)
    assert found is not None, question
    assert to_string(found.query) == query


@pytest.mark.parametrize("question", MUST_NOT_ROUTE)
def test_same_words_without_an_exclusion_are_not_routed(question: str) -> None:
    found = analyse(question)
    assert found is None, (question, found and found.text)


def test_the_cards_topic_words_translate_without_merging_topics() -> None:
    from chatbot.logical.mention import stem, term_words

    # "zenzero" finds "ginger", "l'anemia" finds "anaemia"; "coffee" is not "caffeine" ("apart from coffee what else
    # has caffeine?" must keep the caffeine card)
    assert stem("anaemia") in term_words("l'anemia").stems[0]
    assert stem("caffe") in term_words("coffee").stems[0]
    assert stem("caffeine") not in term_words("coffee").stems[0]

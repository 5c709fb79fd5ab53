"""Session 16's and 18's exclusion frames and the apostrophe normaliser: exact decompositions of must-route
questions and questions with the same words that exclude nothing (all our own sentences)."""

from __future__ import annotations

import pytest

from chatbot.logical.detect import analyse, restore_apostrophes

MUST_ROUTE = [
    # apostrophe-less contractions are restored before the cues read them
    ("please dont tell me about weaning, when do babies get their first teeth?",
     "when do babies get their first teeth", ("weaning",), "en"),
    ("whats safe for heartburn that isnt gaviscon?", "what's safe for heartburn", ("gaviscon",), "en"),
    ("I dont want anything about colic, how do I wind a newborn?", "how do I wind a newborn", ("colic",), "en"),
    # requests not to be told about X
    ("Do not mention formula; how often does a breastfed baby poo?",
     "how often does a breastfed baby poo", ("formula",), "en"),
    ("no tips on sleep please, how can I ease my sore back?", "how can I ease my sore back", ("sleep",), "en"),
    ("I don't need the dummy stuff, how long should a baby nap?", "how long should a baby nap", ("the dummy",), "en"),
    # "anything but X"
    ("anything but the glucose test, what checks happen at 28 weeks?",
     "what checks happen at 28 weeks", ("the glucose test",), "en"),
    # knowing / having read X
    ("we already know all about folic acid, which vitamins come next?",
     "which vitamins come next", ("folic acid",), "en"),
    ("I've read about the heel prick already, what other newborn checks are there?",
     "what other newborn checks are there", ("the heel prick",), "en"),
    ("I've heard enough about cot death, how do I dress my baby for bed?",
     "how do I dress my baby for bed", ("cot death",), "en"),
    # a fronted "not X," and a request without a question word
    ("not reflux, I want advice on baby hiccups", "I want advice on baby hiccups", ("reflux",), "en"),
    # Italian
    ("non parlarmi dello svezzamento, quando spuntano i primi denti?",
     "quando spuntano i primi denti", ("svezzamento",), "it"),
    ("senza dirmi del fumo, cosa dice sulle sigarette elettroniche?",
     "cosa dice sulle sigarette elettroniche", ("fumo",), "it"),
    ("non voglio sapere della febbre, dimmi come si misura il peso del neonato",
     "dimmi come si misura il peso del neonato", ("febbre",), "it"),
    ("salta la parte sulla nausea, come si gestisce il mal di schiena?",
     "come si gestisce il mal di schiena", ("nausea",), "it"),
    ("niente sul sonno né sulle coliche, dimmi solo come fare il bagnetto",
     "dimmi solo come fare il bagnetto", ("sonno", "coliche"), "it"),
    ("non sulla anemia, vorrei informazioni sul ferro nei cibi",
     "vorrei informazioni sul ferro nei cibi", ("anemia",), "it"),
    ("tutto tranne la caffeina, quali bevande evitare?", "quali bevande evitare", ("la caffeina",), "it"),
    ("eccetto il tonno, quali pesci posso mangiare?", "quali pesci posso mangiare", ("il tonno",), "it"),
    ("l'allattamento lo conosco, mi parli del biberon?", "mi parli del biberon", ("l'allattamento",), "it"),
    ("non voglio leggere dei vaccini ma delle visite del neonato", "delle visite del neonato", ("vaccini",), "it"),
    # session 18: "no X tips/advice", "don't care about X", "not bothered about X", Italian enclitic first-person
    # plurals, "mica/non ti (sto) chiedo/chiedendo di X", "senza consigli su X" (the interjection after X is not X)
    ("no sleep advice please, how much milk should a 2 month old drink?",
     "how much milk should a 2 month old drink", ("sleep",), "en"),
    ("we got twins so no more feeding tips, how do i get them to nap at the same time?",
     "we got twins how do i get them to nap at the same time", ("feeding",), "en"),
    ("i really dont care about the cost, which breast pump is best?", "which breast pump is best", ("cost",), "en"),
    ("Not bothered about weight gain, is swimming ok at 30 weeks?", "is swimming ok at 30 weeks", ("weight gain",),
     "en"),
    ("la dieta lasciamola perdere, come si cura la stitichezza in gravidanza?",
     "come si cura la stitichezza in gravidanza", ("la dieta",), "it"),
    ("gli integratori mettiamoli da parte, quanto pesce posso mangiare?", "quanto pesce posso mangiare",
     ("gli integratori",), "it"),
    # the interjection after X is not part of it
    ("mica ti chiedo dello svezzamento eh, quando spuntano i denti?", "quando spuntano i denti", ("svezzamento",),
     "it"),
    ("non ti sto chiedendo della nausea, cosa posso prendere per il mal di testa?",
     "cosa posso prendere per il mal di testa", ("nausea",), "it"),
    ("senza consigli sul ciuccio, come calmo un neonato che piange?", "come calmo un neonato che piange",
     ("ciuccio",), "it"),
]  # fmt: skip

MUST_NOT_ROUTE = [
    "why doesnt my baby sleep, im so tired",
    "my daughter isnt eating, is it normal?",
    "dont know what to eat for iron, any tips?",
    "salta i pasti la mia bimba, devo preoccuparmi?",
    "non mi manca il fiato, solo un po di tosse, è grave?",
    "la febbre la misuro come?",
    "non voglio sapere se è grave?",
    # session 18
    "I don't care if it hurts, can I keep running?",
    "no pain though, is that normal?",
    "my wife doesnt care about the baby, is that postnatal depression?",
    "non ti chiedo niente, sto solo male",
    "no tips from the midwife yet, is that normal?",
    "lascialo dormire, quando devo svegliarlo per la poppata?",
]


@pytest.mark.parametrize(("question", "positive", "negatives", "language"), MUST_ROUTE)
def test_new_frames_route_with_exact_decomposition(
    question: str, positive: str, negatives: tuple[str, ...], language: str
) -> None:
    found = analyse(question)
    assert found is not None
    assert (found.positive, found.negatives, found.language) == (positive, negatives, language)


@pytest.mark.parametrize("question", MUST_NOT_ROUTE)
def test_same_words_without_an_exclusion_stay_unrouted(question: str) -> None:
    assert analyse(question) is None


@pytest.mark.parametrize(
    ("text", "restored"),
    [
        ("whats good", "what's good"),
        ("i dont know", "i don't know"),
        ("she cant take it", "she can't take it"),
        ("he wont latch", "he won't latch"),
        ("it isnt", "it isn't"),
        ("we didnt", "we didn't"),
        ("ive read it", "i've read it"),
        ("im pregnant", "i'm pregnant"),
        ("Im 20 weeks", "I'm 20 weeks"),
        # not contractions: possessive "its", plurals, Italian words, "im" before a non-verb
        ("its mother", "its mother"),
        ("lets go", "lets go"),
        ("his cats eat", "his cats eat"),
        ("dont", "don't"),
        ("cosa ho im mente", "cosa ho im mente"),
    ],
)
def test_restore_apostrophes(text: str, restored: str) -> None:
    assert restore_apostrophes(text) == restored

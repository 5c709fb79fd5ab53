"""Session 18's exclusion frames: "no X tips/advice", "don't care about X", "not bothered about X", Italian enclitic
first-person plurals ("X lasciamola perdere", "X mettiamoli da parte"), "mica/non ti (sto) chiedo/chiedendo di X"
and "senza consigli su X". Exact decompositions of our own sentences, and the same words excluding nothing."""

from __future__ import annotations

import pytest

from chatbot.logical.detect import analyse

MUST_ROUTE = [
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
    "I don't care if it hurts, can I keep running?",
    "no pain though, is that normal?",
    "my wife doesnt care about the baby, is that postnatal depression?",
    "non ti chiedo niente, sto solo male",
    "no tips from the midwife yet, is that normal?",
    "lascialo dormire, quando devo svegliarlo per la poppata?",
]


@pytest.mark.parametrize(("question", "positive", "negatives", "language"), MUST_ROUTE)
def test_session_18_frames_route_with_exact_decomposition(
    question: str, positive: str, negatives: tuple[str, ...], language: str
) -> None:
    found = analyse(question)
    assert found is not None
    assert (found.positive, found.negatives, found.language) == (positive, negatives, language)


@pytest.mark.parametrize("question", MUST_NOT_ROUTE)
def test_same_words_without_an_exclusion_stay_unrouted(question: str) -> None:
    assert analyse(question) is None

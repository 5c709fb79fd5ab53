"""A wish to treat something without a treatment excludes the treatment ("vorrei alleviarlo senza farmaci"); the
wish without a treatment after "senza"/"without", or a wish that is not to treat, is not routed (our own
sentences; the first was seen as a patient in session 35: the reply opened with paracetamol)."""

from __future__ import annotations

import pytest

from chatbot.logical.detect import analyse


@pytest.mark.parametrize(
    ("question", "positive", "negatives"),
    [
        (
            "Ho mal di schiena al quinto mese e vorrei alleviarlo senza farmaci. Cosa posso fare?",
            "Ho mal di schiena al quinto mese e vorrei alleviarlo. Cosa posso fare",
            ("farmaci",),
        ),
        (
            "I have back pain at 20 weeks and I'd like to ease it without painkillers. What can I do?",
            "I have back pain at 20 weeks and I'd like to ease it. What can I do",
            ("painkillers",),
        ),
        ("I want to lower my blood pressure without medication", "I want to lower my blood pressure", ("medication",)),
        ("vorrei calmare la tosse del bimbo senza antibiotici", "vorrei calmare la tosse del bimbo", ("antibiotici",)),
    ],
)
def test_a_wish_to_treat_without_a_treatment_excludes_it(
    question: str, positive: str, negatives: tuple[str, ...]
) -> None:
    found = analyse(question)

    assert found is not None
    assert (found.positive, found.negatives) == (positive, negatives)


@pytest.mark.parametrize(
    "question",
    [
        "Vorrei sapere se posso prendere il paracetamolo senza ricetta",
        "Voglio curarlo senza dolore",
        "I'd like to ease the pain without side effects for the baby",
        "I want to know if I can take ibuprofen without food",
    ],
)
def test_a_wish_without_a_treatment_excluded_is_not_routed(question: str) -> None:
    assert analyse(question) is None

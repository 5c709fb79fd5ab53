"""An allergic reaction reaching the airway (session 30): swollen lips, mouth or tongue with a throat, voice,
swallowing or wheeze sign, or a throat closing, is an emergency; allergy words without them are not (our own
sentences)."""

from __future__ import annotations

import pytest

from chatbot.stages.redflag_rules import FIRM, detect_red_flags
from chatbot.stages.redflags import CATEGORY_ACTION, screen


@pytest.mark.parametrize(
    ("text", "evidence"),
    [
        (
            "after the prawns his lips went puffy and he says his throat feels tight",
            ("lips", "puffy", "throat", "tight"),
        ),
        ("her tongue is swollen and her voice has gone hoarse since the wasp sting", ("tongue", "swollen", "hoarse")),
        (
            "my mouth is swelling and i can't swallow properly, ate a cashew by mistake",
            ("mouth", "swelling", "can not swallow"),
        ),
        (
            "le labbra si stanno gonfiando e fischia quando respira, ha mangiato le arachidi",
            ("labbra", "gonfiando", "fischia"),
        ),
        ("dopo l'antibiotico dice che le si chiude la gola", ("chiude la gola",)),
    ],
)
def test_swollen_lips_with_a_throat_sign_is_an_emergency(text: str, evidence: tuple[str, ...]) -> None:
    flags = detect_red_flags(text)

    assert [(f.category, f.evidence[: len(evidence)]) for f in flags] == [("allergic_reaction_airway", evidence)]
    assert screen(text).urgent is True
    assert screen(text).actions[0] == "emergency"


@pytest.mark.parametrize(
    "text",
    [
        "I have a sore throat and swollen glands, can I take throat lozenges while pregnant?",
        "hay fever is awful, itchy throat and puffy eyes, which antihistamine is ok in pregnancy?",
        "la gola mi pizzica e ho il naso chiuso, cosa posso prendere per il raffreddore in gravidanza?",
        "no swelling of the lips or tongue and no wheeze, just a few hives on his tummy after egg",
        "my ankles are so swollen at 34 weeks and my voice is hoarse from a cold",
    ],
)
def test_allergy_words_without_an_airway_sign_fire_no_rule(text: str) -> None:
    assert [f.category for f in detect_red_flags(text)] == []


def test_the_rule_is_firm_and_calls_emergency_services() -> None:
    assert "allergic_reaction_airway" in FIRM
    assert CATEGORY_ACTION["allergic_reaction_airway"] == "emergency"

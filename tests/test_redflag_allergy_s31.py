"""A known allergy with a breathing or throat sign, and a sting with faintness (session 31): emergency rules that
the contextual head may veto, and, for every anaphylaxis rule, the emergency number before any other action (our
own sentences)."""

from __future__ import annotations

import pytest

from chatbot.stages.redflag_rules import FIRM, detect_red_flags
from chatbot.stages.redflags import ANAPHYLAXIS, CATEGORY_ACTION, screen


@pytest.mark.parametrize(
    ("text", "category"),
    [
        ("my son is allergic to peanuts, ate a cookie at a party and now he's wheezing", "allergic_reaction_breathing"),
        ("lei e allergica all'uovo, ha mangiato la torta e dice che ha la gola stretta", "allergic_reaction_breathing"),
        ("allergic to shellfish, had prawns an hour ago and my chest feels tight", "allergic_reaction_breathing"),
        ("mia figlia e allergica alle noci e adesso ha la voce roca e non riesce a deglutire",
         "allergic_reaction_breathing"),
        ("he was stung by a wasp ten minutes ago and now he's pale, clammy and says he feels faint",
         "sting_with_faintness"),
        ("punto da un'ape in giardino, adesso gli gira la testa ed e sudato freddo", "sting_with_faintness"),
    ],
)  # fmt: skip
def test_an_allergy_with_an_airway_sign_or_a_sting_with_faintness_is_an_emergency(text: str, category: str) -> None:
    assert category in [f.category for f in detect_red_flags(text)]
    assert CATEGORY_ACTION[category] == "emergency"
    assert screen(text).actions[0] == "emergency"


@pytest.mark.parametrize(
    "text",
    [
        "got stung by a wasp on my hand, it's swollen and red, no problems breathing, not dizzy, face fine",
        "she has a cold, sore throat and a croaky voice, no allergies, can she have honey?",
        "sentivo la gola stretta ma era reflusso non allergia, posso mangiare piccante?",
        "my son has hay fever and an itchy throat, which antihistamine is best?",
    ],
)
def test_stings_colds_and_a_ruled_out_allergy_fire_no_new_rule(text: str) -> None:
    new = {"allergic_reaction_breathing", "sting_with_faintness"}
    assert [f.category for f in detect_red_flags(text) if f.category in new] == []


@pytest.mark.parametrize(
    ("text", "category"),
    [
        ("my allergic son wheezes every time he has a cold, is his inhaler safe to use every day?",
         "allergic_reaction_breathing"),
        ("is it true that a bee sting can make you faint? asking for my biology homework", "sting_with_faintness"),
    ],
)  # fmt: skip
def test_the_new_rules_are_not_firm_and_the_head_vetoes_an_ordinary_question(text: str, category: str) -> None:
    assert [f.category for f in detect_red_flags(text)] == [category]
    assert not {"allergic_reaction_breathing", "sting_with_faintness"} & FIRM
    result = screen(text)
    assert result.urgent is False  # the contextual head reads a routine question and vetoes the rule
    assert result.classifier["context"]["vetoed"] == [category]


def test_an_anaphylaxis_rule_puts_the_emergency_number_before_a_poisons_line() -> None:
    # a child who ate the allergen: the models lean to poisoning ("ha mangiato"), the airway says 112 first
    text = (
        "mio nipote di 18 mesi e allergico al latte, gli ho dato un biscotto con il latte e adesso tossisce e fa "
        "un fischio quando respira, devo chiamare il centro antiveleni?"
    )
    result = screen(text)
    assert result.urgent is True and result.actions[0] == "emergency"
    assert ANAPHYLAXIS == {"allergic_reaction_airway", "allergic_reaction_breathing", "sting_with_faintness"}

"""Session 25 rules, each for a class of long patient messages the trained models read as past or negated: a
thermometer reading of 38 or more in a baby under 13 weeks, or in the mother after the birth, anywhere in the
message; a medicine gone from its bottle
with a child or drowsiness; itching of the palms and soles in pregnancy. They are firm: the contextual head never
vetoes them. Hand-made sentences (not the training messages), exact expectations."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from chatbot.stages.redflag_rules import FIRM, RedFlag
from chatbot.stages.redflags import CATEGORY_ACTION, with_context
from tests.redflag_categories import categories

FILLER = (
    " We had a lovely walk this morning and my partner cooked dinner, the dog has been good and the health visitor"
    " came on Monday and weighed everyone, all fine on her chart."
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("My LO is 5 weeks old." + FILLER + " Just checked with the ear thermometer and it says 38.3, twice.",
         ["fever_reading_under_3_months"]),
        ("Il mio bimbo ha 7 settimane. Stasera l'ho misurato col termometro e segna 38,6, la nonna dice di aspettare.",
         ["fever_reading_under_3_months"]),
        ("My 5 month old is 38.3 and grumpy with her teeth, can I give calpol?", []),  # older than 3 months
        ("I'm 38 weeks and my 2 year old has a cold, any tips?", []),  # weeks of pregnancy, not a reading
        ("My 6 week old was 37.2 this morning, is that normal?", []),  # below 37.8
    ],
)  # fmt: skip
def test_a_fever_reading_in_a_young_baby_counts_anywhere_in_the_message(text: str, expected: list[str]) -> None:
    assert [c for c in categories(text) if c != "feverish_or_floppy_newborn"] == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("My daughter got the lid off my iron tablets while I was in the shower and now about eight are missing,"
         " she says they tasted like sweets. She seems fine, can we just watch her?", ["medicine_missing"]),
        ("Mio figlio ha aperto il flacone delle vitamine e ne mancano parecchie, sta bene pero.",
         ["medicine_missing"]),
        ("Mio marito ha preso le gocce per dormire, la boccetta e quasi vuota e non si sveglia.",
         ["medicine_missing"]),
        ("The box of folic acid tablets is nearly empty, is it bad for the baby if I miss a few days?", []),
        ("Il flacone di sciroppo per la tosse e quasi vuoto, posso comprarne un altro in gravidanza?", []),
    ],
)  # fmt: skip
def test_a_medicine_gone_with_a_child_or_drowsiness_is_a_poisoning(text: str, expected: list[str]) -> None:
    assert categories(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("35 weeks and my palms and the soles of my feet are so itchy at night I scratch them raw",
         ["itching_in_late_pregnancy"]),
        ("Sono incinta di 34 settimane, ho un prurito tremendo alle mani e ai piedi soprattutto la sera",
         ["itching_in_late_pregnancy"]),
        ("My bump is itchy at 30 weeks pregnant, my hands and feet are fine though, which cream?", []),
        ("Incinta di 28 settimane, prurito sulla pancia, mani e piedi nessun prurito. Che crema usate?", []),
    ],
)  # fmt: skip
def test_itchy_palms_and_soles_in_pregnancy_call_the_maternity_unit(text: str, expected: list[str]) -> None:
    assert categories(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I gave birth 9 days ago." + FILLER + " Tonight I'm shivery and the thermometer says 38.4.",
         ["fever_after_birth"]),
        ("ho partorito due settimane fa e stasera ho 38,5 di febbre, i punti tirano", ["fever_after_birth"]),
        ("I gave birth 9 days ago and was 37.4 this morning, is that normal while the milk comes in?", []),
    ],
)  # fmt: skip
def test_a_fever_reading_after_the_birth_calls_the_maternity_unit(text: str, expected: list[str]) -> None:
    assert categories(text) == expected


def test_the_new_categories_are_firm_and_have_an_action() -> None:
    firm = {"fever_reading_under_3_months", "fever_after_birth", "medicine_missing", "itching_in_late_pregnancy"}
    # session 27 (test_redflag_rules_s27) and session 30 (test_redflag_allergy_s30)
    assert firm | {"battery_or_magnet_missing", "child_took_medicine", "allergic_reaction_airway"} == FIRM
    assert [CATEGORY_ACTION[c] for c in sorted(firm)] == ["maternity_unit", "emergency", "maternity_unit", "poisoning"]


def test_the_head_vetoes_an_ordinary_rule_but_never_a_firm_one() -> None:
    ctx = SimpleNamespace(urgent_score=0.05, scores={"emergency": 0.01, "poisoning": 0.02, "mental_health": 0.01,
                                                      "maternity_unit": 0.01})  # fmt: skip
    meta = {"weight": 1.0, "threshold": 0.5, "veto": 0.4, "framed_threshold": 0.7, "framed_veto": 0.6}
    flags = [RedFlag("overdose", ("swallowed", "pills")), RedFlag("medicine_missing", ("ne mancano", "pastiglie"))]
    trace: dict = {}
    kept = with_context("Ieri ha aperto il flacone? ne mancano", flags, {}, trace, ctx, None, meta)
    assert [f.category for f in kept] == ["medicine_missing"]
    assert trace["vetoed"] == ["overdose"]

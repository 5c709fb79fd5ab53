"""Session 12 rule fixes, each stated for a class of messages (hand-made sentences, exact expectations):
"not even if / when" intensifies and negates nothing; dialect spellings are variants of the same concept; a baby
going blue is a breathing emergency; a method of self-harm said as a thought is self-harm; a hypothetical "if"
frames only the sentence that asks; an anecdote ("once went blue") is a past event; a present statement after a
hypothetical question ("ha la bocca piena di schiuma") is a present danger, "if she has a fever" is not; mood
markers are taken out of what the trained models read."""

from __future__ import annotations

import pytest

from chatbot.stages.redflag_emotion import neutral
from chatbot.stages.redflag_framing import framing
from chatbot.stages.redflag_rules import present_danger, without_negated
from tests.redflag_categories import categories

FLOPPY = ["feverish_or_floppy_newborn"]
BLUE = ["chest_pain_or_breathing", "feverish_or_floppy_newborn"]
SELF_HARM = ["self_harm_or_harming_the_baby"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("il neonato e molle e non si sveglia neanche se lo chiamo", FLOPPY),
        ("la bimba e fiacca, non mangia nemmeno quando la attacco al seno", FLOPPY),
    ],
)
def test_not_even_if_is_not_a_negation(text: str, expected: list[str]) -> None:
    assert without_negated(text) == text
    assert categories(text) == expected


@pytest.mark.parametrize(
    "text", ["she's floppy and won't feed, not even when I wake her", "he won't settle, not even if I rock him"]
)
def test_not_even_when_negates_nothing(text: str) -> None:
    assert without_negated(text) == text


@pytest.mark.parametrize("text", ["no fever, not even a temperature", "non ha neanche un po' di febbre"])
def test_a_real_denial_is_still_a_negation(text: str) -> None:
    assert without_negated(text) != text
    assert categories(text) == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("'a criatura nun respira", BLUE),
        ("'o piccerillo nun se move cchiù", FLOPPY),
        ("la creatura non si muove piu", ["reduced_fetal_movements", *FLOPPY]),  # as "il bambino ..."
    ],
)
def test_dialect_spellings_are_the_same_concepts(text: str, expected: list[str]) -> None:
    assert categories(text) == expected


def test_a_dialect_baby_word_alone_is_no_red_flag() -> None:
    assert categories("la criatura dorme tanto, e normale?") == []


@pytest.mark.parametrize(
    "text",
    [
        "neonato soffoca col latte diventa blu",
        "il bimbo e diventato viola mentre tossiva",
        "my baby went blue during the feed",
        "newborn is going blue",
    ],
)
def test_a_baby_going_blue_is_a_breathing_emergency(text: str) -> None:
    assert categories(text) == BLUE


def test_blue_hands_and_feet_are_no_red_flag() -> None:
    assert categories("my newborn has blue hands and feet, is it normal?") == []


@pytest.mark.parametrize(
    "text",
    [
        "a volte penso di buttarmi dal balcone",
        "mi butto giu dal ponte stanotte",
        "I keep thinking I should throw myself off the bridge",
        "I could throw myself in front of a train",
    ],
)
def test_a_method_of_self_harm_is_self_harm(text: str) -> None:
    assert categories(text) == SELF_HARM


def test_throwing_things_away_is_not_self_harm() -> None:
    assert categories("ho buttato via il latte, si puo congelare?") == []


@pytest.mark.parametrize(
    ("text", "frames"),
    [
        ("Il marsupio va bene? Penso che se mi buttassi dalla finestra sarebbero tutti piu felici.", ()),
        ("cosa dovrei fare se avessi la febbre alta?", ("hypothetical",)),
        ("se dovessi avere perdite di sangue cosa faccio?", ("hypothetical",)),
        ("sarebbe meglio se non ci fossi piu", ()),
        ("what should I do if I ever get a bad headache?", ("hypothetical",)),
        ("My cousin's baby once went blue in the bath, can that happen?", ("past",)),
        ("una volta e svenuta in bagno, e pericoloso?", ("past",)),
    ],
)
def test_frames(text: str, frames: tuple[str, ...]) -> None:
    assert framing(text) == frames


@pytest.mark.parametrize(
    ("text", "present"),
    [
        ("cosa succede se un bimbo ingoia del detersivo? ha la bocca piena di schiuma", True),
        ("what happens if a toddler licks a pod? she has got foam at the mouth", True),
        ("cosa fare se il bimbo ha la febbre?", False),
        ("what should I do if she has got a fever?", False),
        ("il bimbo ha la febbre da stamattina", True),
    ],
)
def test_present_danger(text: str, present: bool) -> None:
    assert present_danger(text) is present


@pytest.mark.parametrize(
    ("text", "calm"),
    [
        ("I'm terrified of SIDS, I keep checking on her", "of SIDS, I keep checking on her"),
        ("Madonna che ansia, la bambina fa dei rumori", ", la bambina fa dei rumori"),
        ("a 30 settimane ho bruciore di stomaco, sono disperata", "a 30 settimane ho bruciore di stomaco,"),
        ("I’m so stressed, my baby has a sticky eye", ", my baby has a sticky eye"),
        ("mi sento in colpa, e grave?", ", e grave?"),
        ("I'm scared to be alone with my baby", "I'm scared to be alone with my baby"),  # fear with content stays
        ("ho paura di fargli del male", "ho paura di fargli del male"),
        ("I'm so scared", "I'm so scared"),  # nothing else would be left
        ("my baby is 3 weeks old", "my baby is 3 weeks old"),
    ],
)
def test_mood_markers_are_taken_out_of_what_the_models_read(text: str, calm: str) -> None:
    assert neutral(text) == calm


@pytest.mark.parametrize(
    "text",
    [
        "ho perso il lavoro e non vedo motivi per restare",
        "there's no reason to go on anymore",
        "se urla ancora le tappo la bocca",
        "I want to put a pillow over his face when he screams",
    ],
)
def test_no_reason_to_live_and_silencing_the_baby_are_self_harm(text: str) -> None:
    assert categories(text) == SELF_HARM


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # the reading also fires session 25's firm rule (the head never vetoes it)
        ("baby 6 weeks old temp 38.4 under the arm", [*FLOPPY, "fever_reading_under_3_months"]),
        ("neonato di 3 settimane febbre 38.1", [*FLOPPY, "fever_reading_under_3_months"]),
        ("my baby (7 weeks) had a temp 37.6 after her jabs", []),
    ],
)
def test_a_temperature_of_38_or_more_is_a_fever(text: str, expected: list[str]) -> None:
    assert categories(text) == expected


def test_swallowing_said_with_ingoiato() -> None:
    # session 27's firm rule fires too: a child and an amount ("delle") of medicine
    assert categories("il bimbo ha ingoiato delle pastiglie della nonna") == ["overdose", "child_took_medicine"]
    assert categories("quali sintomi se un bimbo ingoia una pila?") == []  # a question about it, not an event
    assert categories("non ha ingoiato niente, ho contato le pastiglie") == []  # denied: negated

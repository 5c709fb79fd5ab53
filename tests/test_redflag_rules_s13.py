"""Session 13 rule fixes, each stated for a class of messages (hand-made sentences, exact expectations):
Italian "non" + an auxiliary ("non è svenuto", "non mi si sono rotte le acque") negates the participle after it;
a self-harm term denied with a reassurance ("I'm not suicidal, don't worry") is not a sign, a bare denial or one
followed by "but / ma" still is; an earlier birth and an event that is over ("after my first birth", "al primo
parto", "it stopped on its own") frame a message as past; a negated context beside a present sign still fires."""

from __future__ import annotations

import pytest

from chatbot.stages.redflag_framing import framing
from chatbot.stages.redflag_rules import present_danger, without_negated
from tests.redflag_categories import categories

BLUE = ["chest_pain_or_breathing", "feverish_or_floppy_newborn"]
SELF_HARM = ["self_harm_or_harming_the_baby"]


@pytest.mark.parametrize(
    "text",
    [
        "Non è svenuta, ha solo pianto tanto dopo essere caduta dal lettone",
        "non e diventato blu, tossisce un po quando mangia la pappa",
        "Non mi si sono rotte le acque, ho solo più perdite bianche a 37 settimane",
        "non si sono rotte le acque e niente sangue, è normale questo mal di schiena?",
    ],
)
def test_italian_auxiliary_negation_denies_the_sign(text: str) -> None:
    assert categories(text) == []
    assert without_negated(text) != text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("mi si sono rotte le acque a 31 settimane", ["waters_breaking_early"]),
        ("non si sono rotte le acque ma perdo liquido da stamattina a 33 settimane", ["waters_breaking_early"]),
        ("il neonato non è più reattivo ed è diventato blu", BLUE),
        ("la bimba non si è svegliata per la poppata ed è diventata blu", BLUE),
        ("è svenuto e non si sveglia", ["collapse"]),
        ("non è normale che perda tanto sangue a 30 settimane, vero?", ["bleeding_in_pregnancy"]),
    ],
)
def test_italian_auxiliary_negation_keeps_present_signs(text: str, expected: list[str]) -> None:
    assert categories(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "I'm not suicidal or anything, don't worry, I only want to know which sleep aids are safe when nursing",
        "Not suicidal, dont worry! which antidepressant is best with breastfeeding?",
        "Non voglio uccidermi, tranquille, volevo sapere se posso prendere la paroxetina allattando",
        "non ho pensieri suicidi, niente del genere, solo stanchezza a 3 mesi dal parto",
    ],
)
def test_a_reassured_self_harm_denial_is_not_a_sign(text: str) -> None:
    assert categories(text) == []
    assert without_negated(text) != text


@pytest.mark.parametrize(
    "text",
    [
        "I'm not suicidal but I have the pills lined up on the table",
        "I want to kill myself, don't worry about the baby she's with my mum",
        "non voglio uccidermi ma ci penso ogni notte, non preoccupatevi",
        "I don't want to live anymore, don't worry about me",
        "non ho pensieri suicidi dici? li ho ogni giorno",
    ],
)
def test_a_bare_or_contrasted_self_harm_denial_still_fires(text: str) -> None:
    assert categories(text) == SELF_HARM


@pytest.mark.parametrize(
    "text",
    [
        "I bled a lot after my first birth and needed a transfusion, now 10 weeks with number two, what changes?",
        "al primo parto ho avuto un'emorragia, adesso sono incinta di 11 settimane e sto bene",
        "my son swallowed a small magnet last week, the scan showed it passed and he's all good now",
        "la bimba ha avuto la febbre alta due settimane fa, poi si è risolta, posso portarla al nido?",
        "she had a nosebleed at nursery that stopped on its own, how do I stop them happening?",
    ],
)
def test_an_earlier_birth_or_an_event_that_is_over_is_past(text: str) -> None:
    assert "past" in framing(text)
    assert not present_danger(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("no fever but he's so floppy and won't wake for feeds, 3 weeks old", ["feverish_or_floppy_newborn"]),
        ("nessuna febbre, ma il neonato è diventato blu durante la poppata", BLUE),
        ("no bleeding, but since this morning I've had severe pain in my tummy at 30 weeks",
         ["severe_pain_in_pregnancy"]),
    ],
)  # fmt: skip
def test_a_negated_context_beside_a_present_sign_still_fires(text: str, expected: list[str]) -> None:
    assert categories(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "Oggi mi sono tagliata le braccia col rasoio, più del solito, ma tutto ok",
        "I cut my wrists last night, it's fine now really",
        "been cutting myself again since the baby came",
    ],
)
def test_an_act_of_self_injury_is_a_present_danger_whatever_the_frame(text: str) -> None:
    assert categories(text) == SELF_HARM
    assert present_danger(text)


@pytest.mark.parametrize(
    "text",
    [
        "mi sono tagliata il dito affettando il pane, come lo medico?",
        "I haven't cut my arms in over a year and I'm proud of it",
        "non mi sono tagliata le braccia da mesi, la terapia funziona",
    ],
)
def test_a_cut_finger_or_a_denied_act_is_not_self_injury(text: str) -> None:
    assert SELF_HARM[0] not in categories(text)
    assert not present_danger(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("o piccerillo s'ha magnato 'e pillole d' 'a nonna", ["overdose"]),
        ("la bimba se magnata le palline di naftalina dell'armadio", ["overdose"]),
        ("my toddler has eaten two mothballs from the wardrobe", ["overdose"]),
        ("il bimbo s'è magnato un biscotto intero, è normale che abbia sete?", []),
    ],
)
def test_dialect_eating_and_mothballs(text: str, expected: list[str]) -> None:
    assert categories(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "non è svenuta, sanguina tanto a 30 settimane",
        "non è svenuta, perde tanto sangue a 30 settimane",
        "Non è svenuta. Sanguina tanto a 30 settimane",
    ],
)
def test_italian_auxiliary_negation_stops_at_its_clause(text: str) -> None:
    # "non è X" denies X, not the sign said in the next clause or sentence
    assert categories(text) == ["bleeding_in_pregnancy"]

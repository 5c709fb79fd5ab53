"""Scope of negation, framing and present danger in the red-flag screen (issue 20), EN and IT: new sentences,
in none of the red-flag sets."""

from __future__ import annotations

from pathlib import Path

import pytest

from chatbot.stages import redflag_scope as scope
from chatbot.stages.redflag_framing import framing
from chatbot.stages.redflag_rules import present_danger, without_negated
from chatbot.stages.redflags import screen
from tests.redflag_categories import categories

# -- negation: a negated symptom does not fire its rule; another, present symptom still does -----------


@pytest.mark.parametrize(
    "text",
    [
        "28 weeks, no bleeding and no cramps, only some mild backache after gardening",
        "Nessuna perdita di sangue, nessun crampo, solo un po' di mal di schiena a 28 settimane",
        "Felt the baby kick 12 times this evening, no pain, no bleeding, how many should I count at 32 weeks?",
        "Il bimbo ha scalciato 12 volte stasera, nessun dolore, nessuna perdita, quanti calci devo contare?",
        "33 weeks, no headache, no blurred vision, ankles a bit puffy in the evening",
        "33 settimane, niente mal di testa, niente vista annebbiata, caviglie un po' gonfie la sera",
    ],
)
def test_negated_symptoms_do_not_fire_a_rule(text):
    assert categories(text) == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I have no pain but I am bleeding heavily at 22 weeks", ["bleeding_in_pregnancy"]),
        ("non ho dolore ma perdo tanto sangue, sono incinta di 22 settimane", ["bleeding_in_pregnancy"]),
        ("no bleeding but the baby hasn't moved since last night, 34 weeks", ["reduced_fetal_movements"]),
        ("nessun sanguinamento ma il bimbo non si muove da ieri sera, 34 settimane", ["reduced_fetal_movements"]),
    ],
)
def test_a_negated_term_leaves_the_present_one_firing(text, expected):
    assert categories(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("it won't stop bleeding, 30 weeks pregnant and soaking pads", ["bleeding_in_pregnancy"]),  # "not stop"
        ("non ho mai avuto un dolore così forte, sono incinta di 30 settimane", ["severe_pain_in_pregnancy"]),
        ("the baby hasn't moved since last night, 34 weeks", ["reduced_fetal_movements"]),
        ("il bimbo non si muove da ieri sera, sono a 34 settimane", ["reduced_fetal_movements"]),
        ("stasera niente, solo un calcetto da stamattina, sono a 37 settimane", ["reduced_fetal_movements"]),
    ],
)
def test_negations_that_are_the_red_flag_or_a_pseudo_negation_still_fire(text, expected):
    assert categories(text) == expected


def test_negation_scope_ends_at_the_clause_and_skips_pseudo_negations():
    toks, clauses = scope.clause_tokens("no pain, bleeding heavily")
    assert toks == ["no", "pain", "bleeding", "heavily"]
    assert scope.negated(toks, clauses) == [False, True, False, False]
    toks, clauses = scope.clause_tokens("I've never had pain like this")
    assert not any(scope.negated(toks, clauses))
    toks, clauses = scope.clause_tokens("temp 38.5 and no fever")  # a decimal point is no clause boundary
    assert toks == ["temp", "38.5", "and", "no", "fever"]
    assert scope.negated(toks, clauses) == [False, False, False, False, True]


def test_the_classifier_reads_the_text_without_its_negated_symptoms():
    assert without_negated("No bleeding, no pain, just discharge") == " no, no, just discharge"
    assert without_negated("I am bleeding heavily") == "I am bleeding heavily"


# -- framing and present danger ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "frames", "present"),
    [
        ("What would I do if I ever had heavy bleeding at 22 weeks pregnant? Just planning ahead",
         ("hypothetical",), False),
        ("Cosa dovrei fare se avessi un forte sanguinamento a 22 settimane? Voglio solo essere pronta",
         ("hypothetical",), False),
        ("What should I do if I ever start bleeding? Because now I'm bleeding heavily and I'm 22 weeks",
         ("hypothetical",), True),
        ("Cosa dovrei fare se iniziassi a sanguinare? Perché adesso sto perdendo tanto sangue, sono di 22 settimane",
         ("hypothetical",), True),
        ("My daughter had a seizure with a fever two years ago and recovered fully, can it come back?",
         ("past",), False),
        ("Mia figlia due anni fa ha avuto una convulsione con la febbre e si è ripresa, può ricapitare?",
         ("past",), False),
        ("My daughter had a seizure two years ago and since this morning she is having another one",
         ("past",), True),
        ("Mia figlia ha avuto una convulsione due anni fa e da stamattina ne sta avendo un'altra", ("past",), True),
        ("My mother had fits from eclampsia when she was pregnant with me, am I at risk?", ("past",), False),
        ("Mia madre ha avuto convulsioni da eclampsia quando era incinta di me, sono a rischio?", ("past",), False),
        # a wish said with a subjunctive is a statement, not a plan: no question, no frame
        ("da quando è nata la bimba penso che starebbero tutti meglio se io non ci fossi", (), False),
    ],
)  # fmt: skip
def test_framing_and_present_danger(text, frames, present):
    assert framing(text) == frames
    assert present_danger(text) is present


def test_being_well_now_is_no_present_danger():
    assert present_danger("I had thoughts of harming myself years ago, I'm fine now") is False
    assert present_danger("Anni fa avevo pensieri di farmi del male, ora sto bene") is False


# -- the shipped screen: framed messages need the contextual head, a present danger wins ----------------

shipped_context = pytest.mark.skipif(
    not (Path(__file__).resolve().parent.parent / "models" / "redflags" / "context-head.npz").exists(),
    reason="no contextual red-flag head in models/redflags",
)


@shipped_context
@pytest.mark.parametrize(
    ("text", "urgent"),
    [
        ("What would I do if I ever had heavy bleeding at 22 weeks pregnant? Just planning ahead", False),
        ("Cosa dovrei fare se avessi un forte sanguinamento a 22 settimane? Voglio solo essere pronta", False),
        ("What should I do if I ever start bleeding? Because now I'm bleeding heavily and I'm 22 weeks", True),
        ("Cosa dovrei fare se iniziassi a sanguinare? Perché adesso sto perdendo tanto sangue, sono di 22 settimane",
         True),
        ("My daughter had a seizure with a fever two years ago and recovered fully, can it come back?", False),
        ("Mia figlia due anni fa ha avuto una convulsione con la febbre e si è ripresa, può ricapitare?", False),
        ("My daughter had a seizure two years ago and since this morning she is having another one", True),
        ("Mia figlia ha avuto una convulsione due anni fa e da stamattina ne sta avendo un'altra", True),
        ("I have no pain but I am bleeding heavily at 22 weeks", True),
        ("non ho dolore ma perdo tanto sangue, sono incinta di 22 settimane", True),
    ],
)  # fmt: skip
def test_the_screen_on_framed_and_negated_messages(text, urgent):
    assert screen(text).urgent is urgent

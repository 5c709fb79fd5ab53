"""The options answer type of exclusion questions (chatbot.stages.answer_options; our own sentences)."""

from __future__ import annotations

import pytest

from chatbot.stages.answer_cues import answer_kind, cue_score, heading_cue, question_type


@pytest.mark.parametrize(
    "question",
    [
        "what else helps with nausea apart from ginger",
        "which vitamins do I need besides folic acid",
        "cosa posso mangiare per la nausea senza prendere farmaci?",
        "Come alleviare la stanchezza in gravidanza senza farmaci?",
        "quali vaccini si fanno oltre a quello dell'influenza?",
    ],
)
def test_exclusion_questions_asking_for_things_are_typed_options(question: str) -> None:
    assert question_type(question) == "yes_no"  # what the question alone reads as
    assert answer_kind(question, excluded=True) == "options"
    assert answer_kind(question, excluded=False) is None  # questions that exclude nothing keep their type


@pytest.mark.parametrize(
    "question",
    [
        "is it safe to drink coffee other than tea",  # a yes/no question
        "how much caffeine besides coffee",  # how_much
        "cosa devo evitare in gravidanza oltre ad alcol e fumo?",  # what to avoid: rules
        "apart from alcohol, what foods should i stay away from when pregnant",
    ],
)
def test_other_exclusion_questions_keep_their_type(question: str) -> None:
    assert answer_kind(question, excluded=True) is None


def test_options_cues_prefer_the_list_over_escalation_and_reassurance() -> None:
    assert cue_score(
        "options", "Good sources of iron include lean red meat, beans, lentils and cereals."
    ) == pytest.approx(0.9)
    assert cue_score("options", "Try small meals, dry crackers and sipping cold drinks.") == 0.7
    assert cue_score("options", "Prova a mangiare poco e spesso: può aiutare.") == 0.7
    assert cue_score("options", "Contact your midwife straight away if back pain comes with bleeding.") == -0.4
    assert cue_score("options", "Rivolgiti subito al medico.") == -0.4
    assert cue_score("options", "Exercise is not dangerous for your baby.") == -0.3
    assert heading_cue("options", "What may help") == heading_cue("options", "Cosa può aiutare") == 1.0
    assert heading_cue("options", "When to get help") == 0.0

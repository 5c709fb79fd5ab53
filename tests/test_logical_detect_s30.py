"""A yes/no question about a named substitute is not an exclusion ("is vaping ok instead of smoking?"); a question
asking for options instead of something still is (our own sentences)."""

from __future__ import annotations

import pytest

from chatbot.logical.detect import analyse


@pytest.mark.parametrize(
    "question",
    [
        "is vaping ok instead of smoking when pregnant?",
        "Can I use paracetamol instead of ibuprofen for toothache?",
        "Should I walk rather than run now that I'm 20 weeks?",
        "posso usare la sigaretta elettronica invece di fumare?",
        "va bene il latte di soia al posto del latte vaccino in gravidanza?",
        "ciao, posso prendere un multivitaminico normale invece di quello per la gravidanza?",
        "I'm 12 weeks. Is swimming fine instead of my usual running?",
    ],
)
def test_a_yes_no_question_about_a_named_substitute_is_not_routed(question: str) -> None:
    assert analyse(question) is None


@pytest.mark.parametrize(
    ("question", "positive", "negatives"),
    [
        ("What can I take instead of ibuprofen?", "What can I take", ("ibuprofen",)),
        ("Can I take something else instead of ibuprofen?", "Can I take something else", ("ibuprofen",)),
        ("Are there remedies for nausea rather than tablets?", "Are there remedies for nausea", ("tablets",)),
        ("cosa posso usare invece del ciuccio?", "cosa posso usare", ("ciuccio",)),
        (
            "posso avere qualche consiglio invece delle solite pastiglie?",
            "posso avere qualche consiglio",
            ("solite pastiglie",),
        ),
    ],
)
def test_a_request_for_options_instead_of_something_still_excludes_it(
    question: str, positive: str, negatives: tuple[str, ...]
) -> None:
    found = analyse(question)

    assert found is not None
    assert (found.positive, found.negatives) == (positive, negatives)

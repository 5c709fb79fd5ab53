"""Session 32 rules: "togliermi" (take away from me) and "pareri" (opinions) are real words, no typos of
"tagliarmi" or "paresi"; "my waters haven't gone" denies the waters (English denial after its subject). The phrases
themselves still fire. Hand-made sentences (not the sets' messages), exact expectations."""

from __future__ import annotations

import pytest

from chatbot.stages import redflag_scope as scope
from tests.redflag_categories import categories


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("ho un ritardo di 4 giorni, come faccio a togliermi il dubbio prima del test?", []),
        ("non riesco a togliermi di dosso la stanchezza, è normale a 10 settimane?", []),
        ("voglio togliermi la vita, non ce la faccio più", ["self_harm_or_harming_the_baby"]),
        ("stanotte ho pensato di tagliarmi", ["self_harm_or_harming_the_baby"]),
        ("ho letto pareri diversi sul salmone in allattamento, quanto ne posso mangiare?", []),
        ("mia madre ha la bocca storta e una paresi al braccio da mezz'ora", ["stroke_signs"]),
    ],
)  # fmt: skip
def test_real_words_are_not_typos_of_alarm_words(text: str, expected: list[str]) -> None:
    assert categories(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I'm 38 weeks, mild tightenings every 20 minutes and my waters haven't gone. Early labour?", []),
        ("33 weeks and my waters have not broken, can labour start this early?", []),
        ("I think my waters have gone early, I'm 33 weeks", ["waters_breaking_early"]),
        ("my waters broke early at 34 weeks", ["waters_breaking_early"]),
        ("my waters haven't gone but I'm bleeding a lot at 30 weeks", ["bleeding_in_pregnancy"]),
    ],
)  # fmt: skip
def test_waters_denied_after_their_subject_are_no_alarm(text: str, expected: list[str]) -> None:
    assert categories(text) == expected


def test_the_denial_after_its_subject_reaches_three_words_back_in_its_clause_only() -> None:
    toks, clauses = scope.clause_tokens("the pain is bad. my waters have not gone")
    negated = scope.negated(toks, clauses)
    assert [t for t, n in zip(toks, negated, strict=True) if n] == ["my", "waters", "gone"]
    toks, clauses = scope.clause_tokens("bleeding has not stopped")  # "stopped" is no event of the subject
    assert not any(scope.negated(toks, clauses))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("mio figlio ha 11 mesi, come devo tagliare l'uva per non farlo strozzare?", []),  # not "tagliarmi"
        ("come si tagliano le unghie al neonato? devo tagliare dritto?", []),
        ("non bevo latte: in quali altri cibi trovo il calcio? sono incinta di 5 mesi", []),  # not "quasi", kicks
        ("no bleeding, no pain, no fever, baby moving a lot at 31 weeks, when do I pack my bag?", []),  # not "fewer"
        ("a 30 settimane il bimbo non si muove quasi piu da ieri", ["reduced_fetal_movements"]),
        ("fewer kicks than usual today at 34 weeks", ["reduced_fetal_movements"]),
        ("ho voglia di tagliarmi", ["self_harm_or_harming_the_baby"]),
    ],
)  # fmt: skip
def test_common_real_words_are_not_typos_of_other_alarm_words(text: str, expected: list[str]) -> None:
    assert categories(text) == expected

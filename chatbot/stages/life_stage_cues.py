"""Lexicon: the words by which a question says where the asker is along a pregnancy (chatbot/stages/life_stage.py).

Patterns are regular expressions over the lower-cased, accent-folded question (``text_match.fold``), English and
Italian together. They are tried in the order below, and the text each one matches is blanked before the next
group, so "trying to get pregnant" says ``trying`` and not also ``pregnancy``, and "when I was pregnant" says
nothing (``NOT_A_STAGE``). "My baby" alone is no cue: a pregnant asker says it too.
"""

from __future__ import annotations

_AGE = r"(?:\d+|a|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"
_IT_AGE = r"(?:\d+|un|uno|una|due|tre|quattro|cinque|sei|sette|otto|nove|dieci|undici|dodici)"
_BABY_IT = r"(?:bambin[oa]|bimb[oa]|neonat[oa]|piccol[oa]|figli[oa]|lattante)"

# Past or hypothetical pregnancies: consumed first, they cue no stage.
NOT_A_STAGE: tuple[str, ...] = (
    r"\b(?:when|while) i was (?:pregnant|expecting)\b",
    r"\b(?:last|previous|first|my other) pregnanc(?:y|ies)\b",
    r"\bquando ero incinta\b",
    r"\bgravidanz[ae] precedent[ei]\b",
    r"\bprecedente gravidanza\b",
)

# stage -> cue patterns, in the order they are tried.
STAGE_CUES: dict[str, tuple[str, ...]] = {
    "trying": (
        r"\btrying (?:to (?:get pregnant|conceive|have a baby)|for a baby)\b",
        r"\b(?:planning|plan) (?:a|my|to get) pregnan(?:cy|t)\b",
        r"\bbefore (?:i|we) (?:get|got) pregnant\b",
        r"\bttc\b",
        r"\b(?:cerco|cerchiamo|cercando|cercare) (?:una gravidanza|un figlio|un bambino|di rimanere incinta)\b",
        r"\b(?:provando|proviamo|provo|provare) (?:ad? (?:avere un (?:figlio|bambino)|rimanere incinta|concepire))\b",
        r"\bprima del concepimento\b",
    ),
    "postnatal": (
        r"\bsince (?:giving birth|the birth|(?:i )?had (?:the|my) baby|my c-?section)\b",
        r"\bsince my (?:baby|son|daughter) was born\b",
        r"\bafter (?:giving birth|the birth|birth|(?:i )?had (?:the|my) baby|my c-?section)\b",
        r"\bpost[- ]?partum\b",
        r"\bafter (?:my |the )?pregnancy\b",
        r"\bpostnatal(?:ly)?\b",
        r"\b(?:dopo|dal) (?:il )?parto\b",
        r"\bdopo il cesareo\b",
        r"\bda quando ho partorito\b",
        r"\bho partorito\b",
    ),
    "baby": (
        rf"\b{_AGE}[- ](?:day|week|month)s?[- ]old\b",
        r"\bnew-?born\b",
        r"\binfant\b",
        r"\bmy (?:son|daughter)\b",
        r"\b(?:baby'?s?|he|she) (?:was|is|has been) born\b",
        r"\b(?:baby'?s?|he|she)\b[^.?!]{0,25}\b(?:cry|cries|crying)\b",
        r"\b(?:first|1st) (?:lot of )?(?:jabs|vaccinations|immuni[sz]ations)\b",
        r"\b(?:nappy|nappies|diaper|diapers)\b",
        rf"\b{_BABY_IT} (?:ha|di) {_IT_AGE} (?:giorn[oi]|settiman[ae]|mes[ei])\b",
        rf"\bha {_IT_AGE} (?:giorn[oi]|settiman[ae]|mes[ei])\b",
        r"\b(?:neonat[oa]|lattante)\b",
        r"\b(?:mio figlio|mia figlia)\b",
        r"\b(?:e|sono) nat[oaie]\b",
        rf"\b{_BABY_IT}\b[^.?!]{{0,25}}\bpiang(?:e|ere|ono)\b",
        r"\bpannolin[oi]\b",
    ),
    "pregnancy": (
        r"\bpregnant\b",
        r"\bpregnancy\b",
        r"\b(?:i'?m|i am|im) (?:\d+|\w+) weeks\b(?! old)",
        r"\b\d+ weeks (?:along|gone)\b",
        r"\b(?:first|second|third|1st|2nd|3rd) trimester\b",
        r"\bexpecting\b",
        r"\bmy bump\b",
        r"\bincinta\b",
        r"\bgravidanza\b",
        r"\b(?:sono )?(?:alla|di|a) \d+(?:a|esima)? settiman[ae]\b(?! di vita)",
        r"\b(?:primo|secondo|terzo) trimestre\b",
        r"\baspetto un (?:bambino|figlio|bimbo|bimba)\b",
        r"\bin dolce attesa\b",
    ),
}

"""Hand-written red-flag rules: urgent situations in English and Italian as concept groups (the lexicon of
``redflag_concepts``: colloquial phrasing and typos included) matched in a window of words, and the fixed
urgent-care texts. The red-flag screen (chatbot.stages.redflags) ORs these rules with the trained classifier."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from chatbot.stages import redflag_scope as scope
from chatbot.stages.redflag_concepts import CONCEPTS
from chatbot.stages.text_match import Lexicon, Match, clause_fires, find_terms, tokens

# -- red flags -------------------------------------------------------------------------------------

# A rule fires when each of its clauses fires; a clause fires when each of its concept groups (a group is
# "A|B": any of those concepts) matches, all within `window` tokens of each other (None: anywhere).
Clause = tuple[tuple[str, ...], int | None]
# A category's rules are alternatives; VETO lists concepts that cancel a category (bleeding gums, a cord stump).
VETO: dict[str, tuple[str, ...]] = {
    "bleeding_in_pregnancy": ("OTHER_BLEED",),
    "reduced_fetal_movements": ("TOO_EARLY_TO_FEEL",),
    "itching_in_late_pregnancy": ("HANDS_FEET_FINE",),
    "battery_or_magnet_missing": ("NONE_GONE",),
    "allergic_reaction_breathing": ("NOT_ALLERGIC",),
}
RED_FLAG_RULES: dict[str, list[list[Clause]]] = {
    "bleeding_in_pregnancy": [
        [(("BLEED", "HEAVY|PAIN|SEVERE"), 6), (("PREG|POSTPARTUM",), None)],
        [(("BLEED", "SELF"), 6), (("PREG",), None)],  # unless after the birth (UNLESS)
        [(("BLEED", "HEAVY"), 4)],
    ],
    "severe_pain_in_pregnancy": [[(("PAIN", "SEVERE"), 6), (("PREG|POSTPARTUM",), None)]],
    "reduced_fetal_movements": [
        [(("MOVE", "REDUCED"), 8), (("BABY|PREG",), None)],
        [(("KICKS", "REDUCED"), 8)],
        [(("BABY_MOVES", "LITTLE"), 3), (("BABY|PREG",), None)],  # "si muove poco" (session 27)
    ],
    "waters_breaking_early": [[(("WATERS", "EARLY"), 12)], [(("WATERS_NOW",), None)]],
    "severe_headache_with_visual_disturbance": [
        [(("HEADACHE", "VISION"), 15)],
        [(("HEADACHE", "SEVERE"), 6), (("PREG|POSTPARTUM",), None)],
    ],
    "chest_pain_or_breathing": [[(("CHEST", "CHEST_SYMPTOM"), 5)], [(("BREATHING",), None)]],
    "stroke_signs": [[(("STROKE_SIGN",), None)], [(("STROKE_WORD", "SELF"), 8)]],
    "seizure": [[(("SEIZURE", "SELF|BABY|NEWBORN"), 10)], [(("SEIZURE_LIMBS",), None)]],
    "feverish_or_floppy_newborn": [
        [(("NEWBORN", "FEVER"), 12)],
        [(("BABY", "FEVER", "SELF"), 10)],
        [(("BABY|NEWBORN", "FLOPPY"), 12)],
        [(("BABY|NEWBORN", "BREATHING"), 12)],
        [(("BABY|NEWBORN", "NOT_FEEDING"), 12)],  # unless 3 months or older (UNLESS)
    ],
    "self_harm_or_harming_the_baby": [[(("SELF_HARM",), None)], [(("SELF_INJURY",), None)]],
    "overdose": [[(("OVERDOSE",), None)], [(("SWALLOWED", "MEDS"), 6)]],
    # session 25, from the long-form training messages: a reading of 38 or more in a baby under 13 weeks anywhere in
    # the message; a medicine gone ("ne mancano una decina", "quasi vuota") with a child or drowsiness; itching of
    # the palms and soles in pregnancy (obstetric cholestasis)
    "fever_reading_under_3_months": [[(("YOUNG_BABY", "FEVER_READING"), None)]],
    "fever_after_birth": [[(("POSTPARTUM", "FEVER_READING"), None)]],  # possible infection of the womb or a wound
    "medicine_missing": [[(("MANY_TAKEN", "MEDS|DRUG_FORM"), 30), (("CHILD|DROWSY",), None)]],
    "itching_in_late_pregnancy": [[(("ITCH", "HANDS_FEET"), 6), (("PREG",), None)]],
    "child_took_medicine": [  # session 27
        # the amount right after the verb ("ate some", "ha mangiato 8 o 10"), not a child's age before it ("my 3 year
        # old ate his vitamin"), the medicine within 8 words
        [(("ATE_OR_DRANK", "QUANTITY"), 2), (("ATE_OR_DRANK", "TABLETS"), 8), (("CHILD|BABY|SMALL_CHILD_AGE",), None)],
    ],
    "battery_or_magnet_missing": [  # session 27
        [(("BUTTON_BATTERY", "GONE"), 15), (("CHILD|BABY|SMALL_CHILD_AGE",), None)],
        # "the little round battery ... has gone missing", "manca la pila, quella piccola rotonda piatta"
        [(("BATTERY_WORD", "ROUND_FLAT"), 4), (("BATTERY_WORD", "GONE"), 15), (("CHILD|BABY|SMALL_CHILD_AGE",), None)],
    ],
    "collapse": [[(("COLLAPSE",), None)]],
    # session 30: swollen lips, mouth or tongue with a throat, voice, swallowing or wheeze sign; or a throat closing
    "allergic_reaction_airway": [
        [(("MOUTH_PART", "SWOLLEN"), 3), (("THROAT", "THROAT_FEEL"), 4)],
        [(("MOUTH_PART", "SWOLLEN"), 3), (("VOICE_CHANGE|SWALLOW_HARD|WHEEZE",), None)],
        [(("THROAT_CLOSING",), None)],
    ],
    "cord_prolapse": [[(("CORD_PROLAPSE",), None)]],
    # session 31 (not firm: the contextual head may veto "my allergic son wheezes with colds, is the inhaler ok?")
    "allergic_reaction_breathing": [
        [(("ALLERGIC",), None), (("WHEEZE|VOICE_CHANGE|SWALLOW_HARD|THROAT_CLOSING|CHEST_TIGHT|BREATHING",), None)],
        [(("ALLERGIC",), None), (("THROAT", "THROAT_TIGHT"), 4)],
    ],
    "sting_with_faintness": [[(("STING",), None), (("COLLAPSE|FAINT_SIGN",), None)]],
}
# Rules the contextual head never vetoes (``redflags.with_context``): specific enough that no ordinary message of the
# spent sets, the seeds or 912 ordinary reply-set questions fired them, and the head's framing read the long
# messages they were written for as past or negated ("l'ha aperto ... ne mancano una decina", "non ho brufoli")
FIRM: frozenset[str] = frozenset(
    {
        "fever_reading_under_3_months",
        "fever_after_birth",
        "medicine_missing",
        "itching_in_late_pregnancy",
        "battery_or_magnet_missing",
        "child_took_medicine",
        "allergic_reaction_airway",  # session 30: 23 urgent messages and seeds, no ordinary one, of the spent sets
    }
)
# Concepts that cancel one rule of a category, by (category, rule index): bleeding said of oneself in weeks
# that follow the birth ("still bleeding 4 weeks after she was born", "sono a 3 settimane dopo il parto") is
# lochia, not bleeding in pregnancy; heavy or painful bleeding after the birth still fires rule 0 or 2.
UNLESS: dict[tuple[str, int], tuple[str, ...]] = {
    ("bleeding_in_pregnancy", 1): ("POSTPARTUM", "AFTER_BIRTH"),
    ("feverish_or_floppy_newborn", 1): ("OLDER_BABY",),  # "my 9 month old has a temp of 38.3" (session 27)
    ("feverish_or_floppy_newborn", 4): ("OLDER_BABY",),  # "il mio bimbo ha 11 mesi e non mangia niente" (session 27)
    ("child_took_medicine", 0): ("LONG_AGO",),  # a past scare, told as over (session 27)
}

_LEXICON = Lexicon(w for terms in CONCEPTS.values() for term in terms for w in term.split())


@dataclass(frozen=True)
class RedFlag:
    category: str
    evidence: tuple[str, ...]  # the matched terms


# Symptom concepts a negation can cancel ("no bleeding", "nessun dolore"). Not SELF_HARM (a denial next to a
# crisis is no reassurance; only a denial that reassures, "I'm not suicidal, don't worry", cancels it:
# ``redflag_scope.reassured_denial``), not the movement concepts (reduced movements are said with "no"/"non").
NEGATABLE = frozenset(
    "BLEED HEAVY PAIN SEVERE WATERS WATERS_NOW HEADACHE VISION CHEST CHEST_SYMPTOM BREATHING STROKE_SIGN STROKE_WORD "
    "SEIZURE FEVER FLOPPY NOT_FEEDING OVERDOSE SWALLOWED COLLAPSE FOAM SELF_INJURY CORD_PROLAPSE SEIZURE_LIMBS".split()
)
SYMPTOMS = NEGATABLE | {"SELF_HARM", "MOVE", "KICKS"}
# The allergic-reaction signs a negation cancels too ("no swelling of the lips, no wheeze"); not SYMPTOMS: alone
# ("naso chiuso", "swollen ankles") they state no danger, so they do not count for the framing (present_danger)
NEGATED_SIGNS = frozenset(
    (
        "SWOLLEN THROAT_FEEL VOICE_CHANGE SWALLOW_HARD WHEEZE THROAT_CLOSING THROAT_TIGHT CHEST_TIGHT FAINT_SIGN "
        "ALLERGIC"
    ).split()
)


def _scoped_terms(
    text: str, max_tokens: int, dropped: set[int] | None = None
) -> tuple[list[str], list[int], dict[str, list[Match]]]:
    """Tokens, their clauses and every concept's matches, negated symptom terms removed and a negation word
    counted as "reduced movements" only in the clause of a movement word."""
    toks, clauses = scope.clause_tokens(text)
    toks, clauses = toks[:max_tokens], clauses[:max_tokens]
    if toks != tokens(text)[:max_tokens]:  # clause splitting changed the tokens: no scope, all terms count
        toks, clauses = tokens(text)[:max_tokens], [0] * min(len(tokens(text)), max_tokens)
        neg = [False] * len(toks)
    else:
        neg = scope.negated(toks, clauses)
    raw = {name: find_terms(_LEXICON, name, terms, toks) for name, terms in CONCEPTS.items()}
    negatable = NEGATABLE | NEGATED_SIGNS
    found = {name: [m for m in ms if name not in negatable or not neg[m.start]] for name, ms in raw.items()}
    denied = [m for m in raw["SELF_HARM"] if scope.reassured_denial(toks, clauses, m.start, m.end)]
    found["SELF_HARM"] = [m for m in found["SELF_HARM"] if m not in denied]
    if dropped is not None:  # the token positions of the negated symptom terms
        dropped.update(k for name in NEGATABLE for m in raw[name] if neg[m.start] for k in range(m.start, m.end))
        dropped.update(k for m in denied for k in range(m.start, m.end))
    raw_symptoms = {m.start for name in NEGATABLE for m in raw[name]}
    moves = {m.start for m in found["MOVE"] + found["KICKS"]}

    def negates_a_symptom(m: Match) -> bool:  # "no pain, no bleeding": this "no" is not "no movements"
        scope_at = [k for k in range(m.end, min(len(toks), m.end + scope.SCOPE)) if clauses[k] == clauses[m.start]]
        if any(k in moves for k in scope_at):
            return False
        if any(k in raw_symptoms for k in scope_at):
            return True
        # a list of negated findings ("no itching at all", "nessuna perdita"): the negation opens a clause
        # without any movement word and names something (not "none since yesterday", "niente da ieri")
        clause = [k for k in range(len(toks)) if clauses[k] == clauses[m.start]]
        opens = all(toks[k] in scope.LIST_OPENERS for k in clause if k < m.start)
        nxt = toks[m.end] if m.end < len(toks) and clauses[m.end] == clauses[m.start] else ""
        return opens and not any(k in moves for k in clause) and nxt != "" and nxt not in scope.TEMPORAL

    found["REDUCED"] = [
        m for m in found["REDUCED"] if toks[m.start] not in scope.NEGATION_WORDS or not negates_a_symptom(m)
    ]
    return toks, clauses, found


def detect_red_flags(text: str, max_tokens: int = 400) -> list[RedFlag]:
    """Urgent situations described in the text (English or Italian), one entry per category; a symptom in
    the scope of a negation ("no bleeding, no pain") does not count (``redflag_scope``)."""
    toks, _, found = _scoped_terms(text, max_tokens)
    flags = []
    for category, rules in RED_FLAG_RULES.items():
        if any(found[name] for name in VETO.get(category, ())):
            continue
        for k, rule in enumerate(rules):
            if any(found[name] for name in UNLESS.get((category, k), ())):
                continue
            evidence: list[Match] = []
            for groups, window in rule:
                hit = clause_fires(found, groups, window)
                if hit is None:
                    break
                evidence.extend(hit)
            else:
                flags.append(RedFlag(category, tuple(" ".join(toks[m.start : m.end]) for m in evidence)))
                break
    return flags


def without_negated(text: str, max_tokens: int = 400) -> str:
    """The text with its negated symptom terms taken out ("no bleeding, no pain, just discharge" -> "no, no,
    just discharge"), for the n-gram classifier, which cannot read a negation; the text itself when none is."""
    dropped: set[int] = set()
    _scoped_terms(text, max_tokens, dropped)
    if not dropped:
        return text
    out: list[str] = []
    at = 0
    for part in scope.BOUNDARY_SPLIT.split(text):
        if not part or scope.BOUNDARY_SPLIT.fullmatch(part):
            out.append(part or "")
            continue
        toks = tokens(part)
        keep = [t for k, t in enumerate(toks) if at + k not in dropped]
        out.append(part if len(keep) == len(toks) else " " + " ".join(keep))
        at += len(toks)
    return "".join(out)


def present_danger(text: str, max_tokens: int = 400) -> bool:
    """Whether the message states a symptom as happening now ("and now I'm bleeding", "da stamattina"):
    such a message is not read as past, hypothetical or study (``redflag_scope.present_danger``)."""
    toks, clauses, found = _scoped_terms(text, max_tokens)
    if found["SELF_INJURY"]:  # "mi sono tagliata le braccia ... ma tutto ok": an act told, whatever the frame
        return True
    symptom_at = sorted({m.start for name in SYMPTOMS for m in found[name]})
    return scope.present_danger(toks, clauses, symptom_at)


def names_a_symptom(text: str, max_tokens: int = 400) -> bool:
    """Whether the message names a danger term of the lexicon (``SYMPTOMS``, less the intensity words SEVERE and
    HEAVY: "terrible heartburn" names no danger) that it does not deny."""
    _, _, found = _scoped_terms(text, max_tokens)
    return any(found[name] for name in SYMPTOMS - {"SEVERE", "HEAVY"})


_CONTRAST = re.compile(r"\b(?:but|however|although|ma|per[oò]|pero'|tuttavia|eppure|invece|solo che)\b", re.IGNORECASE)


def sign_after_contrast(text: str, max_tokens: int = 400) -> bool:
    """A sign stated after a denial and a contrast ("no fever, but she's floppy and won't wake", "nessuna febbre,
    ma è floscia"): the words after "but / ma / però" fire a rule on their own, so the denial before them frames
    nothing as calm (session 14)."""
    for m in _CONTRAST.finditer(text):
        before, after = text[: m.start()], text[m.end() :]
        if without_negated(before, max_tokens) != before and detect_red_flags(after, max_tokens):
            return True
    return False


# -- fixed urgent-care texts ------------------------------------------------------------------------

URGENT_MESSAGE = {
    "en": "URGENT: this may need medical help now. If it is happening now, call your local emergency number "
    "(112 in Europe, 999 in the UK) or go to the nearest emergency department. If you are pregnant, you can "
    "also call your maternity unit or midwife straight away. Do not wait for an online answer.",
    "it": "URGENTE: potrebbe servire subito un aiuto medico. Se sta succedendo ora, chiama il 112 (numero unico "
    "di emergenza) o vai al pronto soccorso più vicino. Se sei in gravidanza, puoi anche chiamare subito il tuo "
    "punto nascita o la tua ostetrica. Non aspettare una risposta online.",
}
SELF_HARM_MESSAGE = {
    "en": "If you are having thoughts of harming yourself or your baby, you are not alone and it is not your "
    "fault: please tell someone now. Call your local emergency number (112 in Europe, 999 in the UK), or speak "
    "today to your GP, midwife or health visitor.",
    "it": "Se hai pensieri di fare del male a te stessa o al tuo bambino, non sei sola e non è colpa tua: "
    "parlane subito con qualcuno. Chiama il 112 oppure parla oggi stesso con il tuo medico, la tua ostetrica "
    "o il consultorio.",
}


def urgent_message(flags: Sequence[RedFlag], language: str) -> str:
    """The urgent-care text in the reply language; the self-harm text first when that flag is raised."""
    lang = "it" if language == "it" else "en"
    parts = []
    if any(f.category == "self_harm_or_harming_the_baby" for f in flags):
        parts.append(SELF_HARM_MESSAGE[lang])
    parts.append(URGENT_MESSAGE[lang])
    return " ".join(parts)

"""Emotional intensity is not a symptom: the words a worried parent wraps an ordinary question in ("I'm so
scared", "I'm losing my mind", "sono disperata", "che ansia", "mi sento in colpa") are taken out of the text
the red-flag screen's trained models read, so they score the situation, not the tone (session 12).

Only mood markers without content of their own are removed; what the fear is about stays ("I'm terrified I
might hurt him" keeps "I might hurt him"). The hand-written rules still read the raw message (a crisis said in
these words, "voglio farla finita", is matched there). Lists in English and Italian, case ignored.
"""

from __future__ import annotations

import re

# "I'm (so / really / absolutely) <mood>", "I feel (so) <mood>", "<exclamation>"
_EN_MOOD = (
    r"scared|terrified|frightened|petrified|worried|anxious|stressed|panicking|panicked|upset|freaking out|"
    r"freaked out|desperate|a wreck|a mess|beside myself|losing my mind|going crazy|going mad|overwhelmed|"
    r"guilty|so guilty|awful about it|like a failure|like such a failure|like a bad mum|like a bad mother|"
    r"a terrible mum|a terrible mother|a bad mum|a bad mother|such a failure|a failure|worried sick"
)
_IT_MOOD = (
    r"disperat[ao]|terrorizzat[ao]|spaventat[ao]|preoccupat[ao]|preoccupatissim[ao]|agitat[ao]|in ansia|"
    r"nel panico|in panico|angosciat[ao]|stressat[ao]|in colpa|una pessima madre|una cattiva madre|"
    r"un disastro|uno straccio|fuori di me|nervos[ao]"
)
_DEGREE = r"(?:(?:so|really|very|absolutely|completely|just|a bit|a little|quite|totally|proprio|molto|tanto|" \
    r"cos[iì]|davvero|troppo|un po|tutta|tutto|tanta|molta)\s+)*"  # fmt: skip
_NOT_BEFORE = r"(?!\s+(?:to|di|a|ad)\b)"  # "scared to be alone with him", "paura di fargli male": content
PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p + _NOT_BEFORE, re.IGNORECASE)
    for p in (
        rf"\b(?:i\s*'?\s*(?:am|m)|i\s+feel|im|feeling|getting|i\s+get|i\s+was)\s+{_DEGREE}(?:{_EN_MOOD})\b",
        rf"\b(?:(?:io\s+)?(?:sono|mi\s+sento|sto|ero|mi\s+sentivo)\s+){_DEGREE}(?:{_IT_MOOD})\b",
        r"\b(?:sto\s+impazzendo|sto\s+andando\s+fuori\s+di\s+testa|che\s+ansia|che\s+paura|che\s+angoscia|"
        r"madonna(?:\s+mia)?|mamma\s+mia|oddio|dio\s+mio|omg|oh\s+my\s+god|oh\s+god|lol|ahah\w*|haha\w*)\b",
        rf"\b(?:ho\s+){_DEGREE}(?:paura|ansia)\b",
    )
)


def neutral(text: str) -> str:
    """The message without its mood markers, the rest as written; the message itself when nothing else would
    be left."""
    out = text.replace("’", "'")
    for p in PATTERNS:
        out = p.sub(" ", out)
    if out == text.replace("’", "'"):
        return text
    out = " ".join(out.split())
    return out if re.search(r"[a-zà-ù]{3,}", out, re.IGNORECASE) else text


# Ordinary complaints of pregnancy and the first months (session 14): told with worry words and nothing else
# ("sono a 30 settimane, bruciore di stomaco terribile, sono disperata"), a message is a worried statement, not a
# danger; ``chatbot.stages.redflags.calm_frames`` frames it as calm only when no rule fires and no danger term of
# the rules' lexicon is named ("dolore forte sotto le costole", "pain under my ribs" keep it unframed).
COMPLAINT = re.compile(
    r"\b(?:heartburn|acid reflux|reflux|indigestion|nausea|morning sickness|back ?ache|back pain|lower back|"
    r"hips? ache|leg cramps|calf cramps|cramps in my calves|constipat\w*|piles|haemorrhoids|hemorrhoids|"
    r"blocked nose|stuffy nose|cracked nipples|sore nipples|bruciore di stomaco|bruciori di stomaco|acidit[aà]|"
    r"reflusso|nausea|nausee|mal di schiena|crampi ai polpacci|crampi alle gambe|stitic\w*|emorroidi|"
    r"naso chiuso|capezzoli screpolati|ragadi)\b",
    re.IGNORECASE,
)
_IDIOM = re.compile(
    r"\b(?:is killing me|are killing me|mi sta uccidendo|mi stanno uccidendo|non ne posso pi[uù])\b", re.IGNORECASE
)


def worried_complaint(text: str) -> bool:
    """An ordinary complaint (``COMPLAINT``) told with a mood marker or a "killing me" idiom."""
    worried = neutral(text) != text or bool(_IDIOM.search(text.replace("’", "'")))
    return worried and bool(COMPLAINT.search(text))

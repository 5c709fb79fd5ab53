"""Scope of negation and of present danger in a message, for the red-flag rules (NegEx-style, EN and IT).

- ``clause_tokens(text)``: the message's word tokens (``text_match.tokens``) with, for each token, the number
  of its clause: clauses end at punctuation (``. , ; : ! ? ( )``, new lines) and at a contrasting or
  chaining conjunction ("but", "and", "ma", "però", "e" ...).
- ``negated(toks, clauses)``: which tokens lie inside the scope of a negation ("no", "not", "never",
  "without", "nessun/nessuna", "niente", "senza", "non ho" ...): from the word after the trigger up to the end
  of its clause, at most ``SCOPE`` words. Pseudo-negations do not open a scope ("won't stop", "not sure",
  "no idea", "never had pain like this", "senza sosta", "non ho mai avuto un dolore così").
- ``present_danger(toks, clauses, symptom_at)``: a time or present-tense cue ("right now", "since this
  morning", "for 2 hours", "I'm bleeding", "da stamattina", "adesso", "sto perdendo") in the same clause as,
  or within a few words of, a symptom that is not negated. A message that states a present danger is not
  read as past, hypothetical or study, whatever else it says.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from chatbot.stages.text_match import tokens

SCOPE = 6  # words after a trigger that it can negate (NegEx uses 5-6)
PRESENT_WINDOW = 8  # words between a present cue and the symptom it makes present

_BOUNDARY = re.compile(r"[;:!?()\[\]\n]+|\.(?!\d)|,(?!\d)|\s-\s")
BOUNDARY_SPLIT = re.compile(r"((?:[;:!?()\[\]\n]|\.(?!\d)|,(?!\d)|\s-\s)+)")  # the same, kept by re.split
CONJUNCTIONS = frozenset(
    "but and however although though except apart yet whereas while ma e ed pero pero però tranne pure "
    "eppure invece mentre anche".split()
)
# a trigger opens a scope; (trigger, next word) pairs that are pseudo-negations do not
TRIGGERS = frozenset("no not never without nessun nessuna nessuno niente nulla senza nemmeno neanche".split())
# A denial after its subject, English only: "waters have not gone", "waters haven't broken" (the verbs of an event
# the subject names; not "have not stopped", which states the danger)
POST_AUX = frozenset({"have", "has", "had"})
POST_DENIED = frozenset({"gone", "broken", "burst", "broke", "leaked"})
PSEUDO_NEXT: dict[str, frozenset[str]] = {
    "no": frozenset(
        "longer better worse idea matter way one sign doubt i im she he it my the we they this that".split()
    ),
    "not": frozenset(
        "stop stopping stopped sure know understand only just able go going get getting improve improving help "
        "helping helped work working touch touching ease easing settle settling want think feel".split()
    ),
    "without": frozenset("stopping warning reason any a".split()),
    "senza": frozenset("sosta motivo fermarsi preavviso tregua".split()),
    "niente": frozenset("da funziona aiuta passa".split()),
    # "non si sveglia neanche se la chiamo forte": "not even if / when" intensifies, it denies nothing
    "neanche": frozenset("se quando con col coi".split()),
    "nemmeno": frozenset("se quando con col coi".split()),
}
EVEN_IF = frozenset("if when with".split())  # "not even if I shout": a pseudo-negation after "not even"
# "non è svenuto", "non si è soffocato", "non mi si sono rotte le acque" (session 13): Italian "non" + an
# auxiliary negates the participle phrase right after it (``COPULA_SCOPE`` words), unless a word of
# ``COPULA_PSEUDO`` follows ("non è che...", "non è normale che...", "non è più sveglio", "non sono sicura")
COPULA_AUX: tuple[tuple[str, ...], ...] = (
    ("mi", "si", "sono"), ("si", "e"), ("mi", "e"), ("si", "sono"), ("mi", "sono"), ("si", "era"), ("e",), ("era",),
)  # fmt: skip
COPULA_SCOPE = 3
COPULA_PSEUDO = frozenset(
    "che piu mai normale sicura sicuro certa certo possibile vero giusto cosi mica proprio ancora stato stata".split()
)
# negation words that also say "no movements"; what may precede one opening a list of negated findings
# ("and I have no itching"); words after one that make it a time ("nothing since yesterday", "niente da ieri")
NEGATION_WORDS = frozenset("no not nothing non nessun nessuna nessuno niente none".split())
LIST_OPENERS = frozenset(
    "and e ed but ma pero also anche just solo i have has ho ha there is c ci sono had with m am".split()
)
TEMPORAL = frozenset(
    "since for from today tonight this at yet all in until da dal dalla dalle dallo oggi stamattina stasera "
    "stanotte per ancora piu more da".split()
)
# "never had pain like this": the comparison makes it a present symptom, not a negated one
COMPARATIVE = ("like this", "like that", "this bad", "so bad", "before", "cosi", "del genere", "come questo",
               "come questa", "simile", "prima d ora", "in vita mia", "in my life")  # fmt: skip

# present time or tense: the symptom is happening now
PRESENT_CUES = (
    "now", "right now", "at the moment", "currently", "since", "for the last", "for the past", "this morning",
    "this evening", "this afternoon", "tonight", "last night", "daily", "every day", "all day", "just", "keeps",
    "keep", "still", "already", "started", "starting", "hour ago", "hours ago", "minutes ago", "mins ago",
    "hrs ago", "hr ago", "an hour", "#num hours", "#num hrs", "#num mins", "#num minutes", "i ve been",
    "has been", "have been",
    "adesso", "ora", "in questo momento", "da stamattina", "da ieri", "da stanotte", "da #num", "da un ora",
    "da un paio", "stamattina", "stasera", "stanotte", "ogni giorno", "tutti i giorni", "tutto il giorno",
    "poco fa", "ore fa", "minuti fa", "appena", "continuo", "continua", "ancora",
)  # fmt: skip
# present-tense auxiliaries: a cue only when the symptom follows within 3 words ("I'm bleeding", "sto perdendo")
PRESENT_AUX = ("i m", "i am", "she s", "he s", "she is", "he is", "baby is", "i have", "i ve got", "she has",
               "he has", "sto", "sta", "stiamo", "mi sta", "ho un", "ho una", "ho dei", "ho delle", "ho forti",
               "ha un", "ha una", "ha la", "ha il", "ha le", "ha i", "ce l ha", "has got", "i want", "she wants",
               "he wants", "voglio", "vuole", "vorrei")  # fmt: skip
IF_WORDS = frozenset("if se when quando qualora".split())  # an auxiliary they govern states no present
# recent time, a danger by itself: "since this morning", "for the last 2 hours", "da ieri", "3 ore fa"
RECENT_CUES = (
    "right now",
    "at the moment",
    "since yesterday",
    "since this",
    "since last night",
    "since #num",
    "for the last",
    "for the past",
    "in the last",
    "over the last",
    "in the past",
    "hours ago",
    "hour ago",
    "minutes ago",
    "mins ago",
    "hrs ago",
    "da ieri",
    "da stamattina",
    "da stanotte",
    "da stasera",
    "da questa mattina",
    "da #num ore",
    "da un ora",
    "da qualche ora",
    "negli ultimi",
    "nelle ultime",
    "nell ultima",
    "nell ultimo",
    "ore fa",
    "minuti fa",
    "poco fa",
    "in questo momento",
)
LONG_AGO = frozenset("years year months month anni anno mesi mese pregnancy pregnancies gravidanza".split())
# cues that name a state of being well, not a danger ("I'm fine now", "ora sto bene")
WELL = frozenset("fine well ok okay better bene meglio tranquilla tranquillo recovered ripreso ripresa".split())


def clause_tokens(text: str) -> tuple[list[str], list[int]]:
    """The tokens of the text and each token's clause number (see the module docstring)."""
    toks: list[str] = []
    clauses: list[int] = []
    clause = 0
    for segment in _BOUNDARY.split(text):
        for tok in tokens(segment):
            if tok in CONJUNCTIONS:
                clause += 1
            toks.append(tok)
            clauses.append(clause)
        clause += 1
    return toks, clauses


def _phrase_at(toks: Sequence[str], i: int, phrase: str) -> bool:
    words = phrase.split()
    if i + len(words) > len(toks):
        return False
    return all((w == "#num" and toks[i + j].replace(",", "").replace(".", "").isdigit()) or toks[i + j] == w
               for j, w in enumerate(words))  # fmt: skip


def negated(toks: Sequence[str], clauses: Sequence[int]) -> list[bool]:
    """For each token: whether a negation trigger before it in its clause (at most ``SCOPE`` words back)
    negates it. Italian "non" negates only as "non ho / non c'è / non ci sono / non avevo"."""
    out = [False] * len(toks)
    n = len(toks)
    for i, tok in enumerate(toks):
        # "my waters haven't gone / have not broken": the denial follows its subject (at most 3 words back)
        if tok == "not" and 0 < i < n - 1 and toks[i - 1] in POST_AUX and toks[i + 1] in POST_DENIED:
            for k in range(max(0, i - 4), i - 1):
                out[k] = out[k] or clauses[k] == clauses[i]
        start = None
        if tok in TRIGGERS:
            nxt = toks[i + 1] if i + 1 < n else ""
            if nxt in PSEUDO_NEXT.get(tok, frozenset()):
                continue
            if nxt == "even" and i + 2 < n and toks[i + 2] in EVEN_IF:
                continue
            start = i + 1
        elif tok in {"non", "nun"} and i + 1 < n and toks[i + 1] in {"ho", "avevo", "abbiamo", "ha", "c", "ci"}:
            start = i + 2
            if toks[start : start + 1] == ["mai"]:
                start += 1
        elif tok in {"non", "nun"}:
            aux = next((a for a in COPULA_AUX if tuple(toks[i + 1 : i + 1 + len(a)]) == a), None)
            after = i + 1 + len(aux) if aux else n
            if aux and after < n and toks[after] not in COPULA_PSEUDO:
                for k in range(i + 1, min(n, after + COPULA_SCOPE)):  # the auxiliary too: "si sono rotte"
                    if k >= after and clauses[k] != clauses[after]:  # "non è svenuta. Perde sangue": not denied
                        break
                    out[k] = True
            continue
        if start is None:
            continue
        end = start
        while end < n and end - start < SCOPE and clauses[end] == clauses[i]:
            end += 1
        scope_words = list(toks[start:end])
        if tok in {"never"} or toks[start - 1 : start] == ["mai"]:
            rest = list(toks[start : min(n, start + SCOPE + 4)])
            if any(_phrase_at(rest, k, p) for p in COMPARATIVE for k in range(len(rest))):
                continue
        if scope_words:
            for k in range(start, end):
                out[k] = True
    return out


def present_danger(toks: Sequence[str], clauses: Sequence[int], symptom_at: Sequence[int]) -> bool:
    """True when a recent-time cue ("since this morning", "da ieri", "2 hours ago") is anywhere, or a present
    cue sits in the clause of a symptom (token positions ``symptom_at``, not negated) within
    ``PRESENT_WINDOW`` words, and the cue does not describe being well ("I'm fine now")."""
    for i in range(len(toks)):
        for phrase in RECENT_CUES:
            if _phrase_at(toks, i, phrase):
                end = i + len(phrase.split())
                if not any(w in LONG_AGO for w in toks[end : end + 3]):
                    return True
    if not symptom_at:
        return False
    cues: list[tuple[int, int, int]] = []  # start, end, words before the symptom / after it
    for i in range(len(toks)):
        cues.extend((i, i + len(p.split()), PRESENT_WINDOW) for p in PRESENT_CUES if _phrase_at(toks, i, p))
        cues.extend((i, i + len(p.split()), 0) for p in PRESENT_AUX if _phrase_at(toks, i, p))
    for start, end, before in cues:
        if any(w in WELL for w in toks[max(0, start - 2) : end + 2]):
            continue
        if not before and {"ever", "mai"} & set(toks[end : end + 2]):  # "if I'm ever...": hypothetical
            continue
        if not before and IF_WORDS & set(toks[max(0, start - 3) : start]):  # "se ha la febbre": conditional
            continue
        after = PRESENT_WINDOW if before else 3
        for s in symptom_at:
            near = (start - before <= s < start) or (start <= s < end + after)
            if near and clauses[s] == clauses[start]:
                return True
    return False


# a denial that reassures the reader (session 13): "I'm not suicidal or anything, don't worry", "non voglio
# uccidermi, tranquilli"
REASSURANCE = ("do not worry", "dont worry", "don t worry", "or anything", "nothing like that", "not like that",
               "no need to worry", "tranquilli", "tranquille", "tranquilla", "tranquillo", "state tranquilli",
               "non preoccupatevi", "non preoccuparti", "niente del genere", "nulla del genere")  # fmt: skip
CONTRAST = frozenset("but however though although yet except ma pero però eppure tranne comunque".split())
DENIAL_BEFORE = 3  # words between the negation and the self-harm term it denies
REASSURANCE_AFTER = 6  # words after the term within which the reassurance must come


def reassured_denial(toks: Sequence[str], clauses: Sequence[int], start: int, end: int) -> bool:
    """Whether the self-harm term at ``toks[start:end]`` is denied and the denial reassures: a negation
    ("not", "never", "non", "no") at most ``DENIAL_BEFORE`` words before it in its clause, and a reassurance
    ("don't worry", "or anything", "tranquilli") within ``REASSURANCE_AFTER`` words after it, no "but / ma"
    between. A bare denial next to a crisis ("I'm not suicidal but I have the pills ready") still counts."""
    before = range(max(0, start - DENIAL_BEFORE), start)
    if not any(toks[k] in TRIGGERS | {"non", "nun"} and clauses[k] == clauses[start] for k in before):
        return False
    for k in range(end, min(len(toks), end + REASSURANCE_AFTER)):
        if toks[k] in CONTRAST:  # "non voglio uccidermi ma ci penso ogni notte": the contrast says more
            return False
        if any(_phrase_at(toks, k, p) for p in REASSURANCE):
            return True
    return False

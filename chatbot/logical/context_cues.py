"""Exclusions a patient states as context before asking (English and Italian), found by ``detect``.

Patients often say what they have ruled out in a clause of its own, then ask: "I already tried ginger, what
else helps?", "Ginger doesn't work for me, what can I take?", "I'm allergic to penicillin, which antibiotics
are safe?", "not asking about feeding, how often should a newborn poo?", "it's not colic, but what could it be?",
"Lo zenzero l'ho già provato, cosa posso fare?", "Sono allergica alla penicillina, quale antibiotico …?",
"che non sia il reflusso, perché piange?", "I don't eat meat", "I hate fish", "non mangio carne", "non mi piace il
latte" (the question may come before or after); since session 14 also "ma non è/e X" (a noun, not a participle or
adjective: "non è vaccinato" stays unrouted), "I don't think it's X" / "non credo sia X", what the bot should leave
out ("don't tell me about X", "skip the X", "I know about X already", "lasciamo perdere X"), a short list ("febbre e
ittero"), a reason without "because" cut with X ("its not anaemia my bloods were fine"), and "solo Y" asking;
since s14b also "this isn't about X", "nothing on X please", "leaving X out of it", "don't send me the info on X",
"I've already read about X", "X aside", "X is sorted now", "non sul X", "non voglio leggere del X", "ho già letto
sul X", "mettendo da parte X", "X a parte", "X è risolta", "sul X so già tutto" ("vorrei sapere", "ho bisogno di
capire", "spiegami" then count as asking).
The excluded thing X stands after the cue (``BEFORE_X``) or before it ("X doesn't work", "X li ho già tolti":
``AFTER_X``); the whole clause is cut from the positive part. The patterns are in ``context_cue_tables``.

Every pattern opens a clause, X must be a noun phrase (not an adjective, adverb, pronoun or verb: "not sure",
"it's not serious", "I can't take it anymore", "Non posso prendere ferie" stay unrouted; "can't take" and "non
posso prendere" need a treatment), and the question left after the cut must ask something ("?" or a question
word) with at least two content words. "tried"/"quit"/"già tolto" need "already"/"già" or an "else/other/not
that" after them; "allergic to" is first person only ("My baby is allergic to milk" asks about the allergy).
"""

from __future__ import annotations

import re

from chatbot.logical.context_cue_tables import (
    AFTER_RE,
    ALREADY,
    BEFORE_RE,
    CLAUSE,
    CLAUSE_WORD,
    CUT_END,
    DET,
    ELSE_AFTER,
    LEAD_PREP,
    LIST_MORE,
    NOT_IT_AFTER_DET,
    NOT_IT_NOUN,
    ONLY,
    PRONOUN,
    QUESTION,
    X_END,
)
from chatbot.logical.cues import content_words
from chatbot.logical.frame_cue_tables import (
    AFTER_FRAMES,
    BEFORE_FRAMES,
    CLAUSE_AFTER_END,
    DISLOCATED_RE,
    FRAME_LIST_MORE,
    INLINE_FRAMES,
    KNOW_IT_RE,
    KNOWING_IT_RE,
    LEAD_TOPIC,
    NOT_IN_DISLOCATED,
    X_SPAN,
)
from chatbot.logical.patient_cues import NOT_A_NOUN, TREATMENT


def _is_x(x: str, kind: str) -> bool:
    """``x`` is a noun phrase (or a treatment / a gerund, as ``kind`` asks)."""
    words = re.findall(r"\w+'|\w+", x)
    if CLAUSE_WORD.search(x):
        return False  # "mia suocera dice che un po": a clause, not a thing
    if not words or len(words) > 7 or (len(words) == 1 and DET.fullmatch(words[0])):
        return False
    if PRONOUN.fullmatch(words[0]) and not (len(words) > 1 and DET.fullmatch(words[0])):
        return False  # "it", "that", "to call" (but "that jab", "this cream" name something)
    bare = re.sub(r"^l'\s*", "", x, flags=re.I)
    if TREATMENT.match(x) or TREATMENT.match(bare):
        return True
    if kind == "treatment":
        return False
    head = words[1] if DET.fullmatch(words[0]) and len(words) > 1 else words[0]
    if head.isdigit() and len(words) > words.index(head) + 1:
        head = words[words.index(head) + 1]  # "the 20 week scan": the number modifies the noun
    if kind == "np-it" and (NOT_IT_NOUN.fullmatch(head) if head is words[0] else NOT_IT_AFTER_DET.fullmatch(head)):
        return False  # "non è vaccinato", "non è colpa mia", "non e mai successo" (but "non è una colica")
    if kind == "np-ing" and re.fullmatch(r"\w{3,}ing", head, re.I):
        return True
    return not NOT_A_NOUN.fullmatch(head) and not PRONOUN.fullmatch(head)


def _asks(before: str, after: str) -> bool:
    """The text left once the stated clause is cut (``before`` it, ``after`` it) asks something, with at least two
    content words: a "?", a question word opening a clause, or "only/solo Y" right after the cut ("non mi interessa
    il sonno, solo la febbre")."""
    rest = before.rstrip() + ", " + after
    asked = QUESTION.search(rest) or ONLY.match(after)
    return bool(asked) and len(content_words(rest)) >= 2


def _cut_end(text: str, pos: int) -> int:
    """End of the region to cut after X: the stated clause's own words ("already", "for me") and its comma."""
    m = CUT_END.match(text, pos)
    return m.end() if m else pos


def stated_exclusions(text: str) -> list[tuple[int, int, str, str]]:
    """(start, end of the cut, X, cue) for every stated exclusion in ``text``, earliest first, not overlapping."""
    found: list[tuple[int, int, str, str]] = []
    for rx, _lang, kind, need in BEFORE_RE:
        for m in rx.finditer(text):
            end = X_END.search(text, m.end())
            x_end = end.start() if end else len(text)
            if end and (more := LIST_MORE.match(text, x_end)):
                x_end = more.end()  # "lasciamo perdere febbre e ittero, ...": a short list of ruled-out things
            x = text[m.end() : x_end].strip()
            cut = _cut_end(text, x_end)
            if not x or not _is_x(x, kind) or not _asks(text[: m.start()], text[cut:]):
                continue
            if need == "already" and not (
                re.search(ALREADY, m.group("cue"), re.I)
                or re.match(r"\s+" + ALREADY + r"\b", text[x_end:], re.I)
                or ELSE_AFTER.search(text, x_end)
            ):
                continue
            found.append((m.start(), cut, x, " ".join(m.group("cue").lower().split())))
    for rx, _lang, _need in AFTER_RE:
        for m in rx.finditer(text):
            x = LEAD_PREP.sub("", m.group("x").strip())
            cut = _cut_end(text, m.end())
            if _is_x(x, "np") and _asks(text[: m.start()], text[cut:]):
                found.append((m.start(), cut, x, " ".join(m.group("cue").lower().split())))
    found.sort()
    out: list[tuple[int, int, str, str]] = []
    for f in found:
        if not out or f[0] >= out[-1][1]:
            out.append(f)
    # the frames fill only what the phrasing tables left free (their cue names stay as before)
    for f in sorted(_framed(text)):
        if all(f[1] <= g[0] or f[0] >= g[1] for g in out):
            out.append(f)
    return sorted(out)


_BEFORE_FRAMES_RE = [(re.compile(CLAUSE + rf"(?P<cue>{p})", re.I), k, n) for p, _lang, k, n in BEFORE_FRAMES]
_AFTER_FRAMES_RE = [
    re.compile(CLAUSE + rf"(?P<x>{X_SPAN})\s+(?P<cue>{p})" + CLAUSE_AFTER_END, re.I) for p, _l, _n in AFTER_FRAMES
]
_INLINE_FRAMES_RE = [(re.compile(p, re.I), ask) for p, _lang, ask in INLINE_FRAMES]


def _dislocated(m: re.Match[str]) -> bool:
    """An Italian clitic clause rules X out when it is negated ("non li voglio"), says "già", or knows X."""
    if NOT_IN_DISLOCATED.search(m.group("x")) or re.match(r"\s*ce\s+la\s+fa", m.group("cue") + m.group("verb")):
        return False  # a clause, or "farcela" ("non ce la faccio più")
    if m.group("neg") or m.group("neg2"):
        return True
    # "X lo so già / l'ho già fatto" rules X out only when something else is asked ("Il test l'ho già fatto ed è
    # positivo, quando vado dal medico?" asks the next step)
    if KNOWING_IT_RE.match(m.group("verb")):
        return True
    return bool(KNOW_IT_RE.search(m.group("verb"))) and ELSE_AFTER.search(m.string) is not None


def _framed(text: str) -> list[tuple[int, int, str, str]]:
    """(start, end of the cut, X, cue) for every exclusion frame of ``frame_cue_tables`` in ``text``."""
    out: list[tuple[int, int, str, str]] = []

    def cue_of(m: re.Match[str]) -> str:
        return " ".join(m.group("cue").lower().split())

    for rx, kind, need in _BEFORE_FRAMES_RE:
        for m in rx.finditer(text):
            end = X_END.search(text, m.end())
            x_end = end.start() if end else len(text)
            if end and (more := LIST_MORE.match(text, x_end) or FRAME_LIST_MORE.match(text, x_end)):
                x_end = more.end()
            x = text[m.end() : x_end].strip()
            cut = _cut_end(text, x_end)
            if not x or not _is_x(x, kind) or not _asks(text[: m.start()], text[cut:]):
                continue
            if need == "already" and not ELSE_AFTER.search(text, x_end):
                continue
            out.append((m.start(), cut, x, cue_of(m)))
    for rx in _AFTER_FRAMES_RE:
        for m in rx.finditer(text):
            x = LEAD_PREP.sub("", m.group("x").strip())
            cut = _cut_end(text, m.end())
            if re.match(r"(?:setting|putting|leaving|with)\s", x, re.I):
                continue  # "setting X to one side": the BEFORE frame reads X without its verb
            if _is_x(x, "np-ing") and _asks(text[: m.start()], text[cut:]):
                out.append((m.start(), cut, x, cue_of(m)))
    for m in DISLOCATED_RE.finditer(text):
        x = LEAD_PREP.sub("", m.group("x").strip())
        start = m.start()
        if topic := LEAD_TOPIC.match(x):  # "Contro la stitichezza l'acqua la bevo già": the topic stays asked
            start, x = m.start("x") + topic.end(), x[topic.end() :]
        cut = _cut_end(text, m.end())
        if _dislocated(m) and _is_x(x, "np") and _asks(text[:start], text[cut:]):
            out.append((start, cut, x, " ".join((m.group("cue") + m.group("verb")).lower().split())))
    for rx, ask in _INLINE_FRAMES_RE:
        for m in rx.finditer(text):
            x = m.group("x").strip()
            cut = _cut_end(text, m.end())
            if "verb" in rx.groupindex and not _dislocated(m):
                continue
            rest_ok = (
                _asks(text[: m.start()], text[cut:])
                if ask
                else len(content_words(text[: m.start()] + " " + text[cut:])) >= 2
            )
            if _is_x(x, "np-ing") and rest_ok:
                out.append((m.start(), cut, x, cue_of(m)))
    return out


def is_noun_phrase(x: str, kind: str = "np") -> bool:
    """Whether ``x`` can be a ruled-out thing: a noun phrase ("np"), also a gerund ("np-ing"), or a treatment."""
    return _is_x(x, kind)


def asks(before: str, after: str) -> bool:
    """Whether the text left around a cut clause (``before`` and ``after`` it) asks something."""
    return _asks(before, after)

"""Deterministic detector of exclusion phrasing (English and Italian): question → logical query or None.

"benefits of vitamin D other than bone health" → ``"benefits of vitamin D" AND NOT "bone health"``.

It routes questions (None = no logical structure: keep the ordinary pipeline), repairs or replaces an
invalid LLM-written query, and works when no LLM is available. Recognised, case-insensitive:

- English: other than, excluding/exclude, except (for), with the exception of, apart from, aside from,
  besides, but not, not … but, rather than, instead of, outside of, not including/involving/related to/
  covered by/due to/caused by, but no, ", not", without/avoiding + mentioning/referring to/discussing/…,
  do not mention/include/discuss/…, without (plain, only after an imperative such as "Describe …"),
  beyond (only after "other …"), leaving aside, setting aside, not counting.
- Italian: tranne, eccetto, salvo, fuorché, escluso/esclusa/esclusi/escluse, escludendo,
  ad/a esclusione di, ad eccezione di, a parte, oltre a/al/alla/…, senza + parlare di/menzionare/
  considerare/…, senza (plain, only after an imperative such as "Descrivi …"), ma non, non … ma,
  invece di, anziché, piuttosto che, diverso/i/a/e da, al di fuori di, evitando (di menzionare …).

Exclusions may be parenthetical ("Hobbes (excluding Leviathan)"), leading ("Besides X, what …"),
inline up to the end of their clause ("…, excluding X? How …"), or lists ("excluding X and Y" →
``AND NOT "X" AND NOT "Y"``). The positive term is the question with every exclusion cut out.
Plain "without"/"senza" is not a cue on its own ("Can I take ibuprofen without food?", "dieta senza
glutine" keep their ordinary pipeline), nor are "not only … but also" and "but not limited to".
Patients' phrasings that exclude only in some sentences ("without/senza X" after a request for options
when X is a treatment, "that are not X"/"che non siano X", "no X please"/"niente X", "anything but X",
"altro che X") are accepted under the guards of ``chatbot.logical.patient_cues``.
Also Italian: fatta eccezione per, eccezion fatta per, invece che. "please"/"per favore" end an exclusion.
Exclusions a patient states as context before asking ("I already tried X, …", "X doesn't work for me, …", "I'm
allergic to X, …", "not asking about X, …", "X l'ho già provato, …", "che non sia X, …") are cut whole, as
``chatbot.logical.context_cues`` finds them. A yes/no question also ends a leading exclusion ("besides X do I
need Y"), and a patient's list of short items is split ("other than alcohol and caffeine").
When no cue is read, a learned fallback (``chatbot.logical.dismissal``, ``models/dismissal``) looks for a clause
that dismisses a topic in words no table lists ("formula's not for us", "la stanchezza non c'entra"); its cue name
is ``dismissal (model)`` and ``analyse(question, learned=False)`` reads the rules alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from chatbot.logical.alternative_clauses import ruled_out_clauses
from chatbot.logical.context_cues import asks as stated_asks
from chatbot.logical.context_cues import stated_exclusions
from chatbot.logical.cues import (
    ABBREVIATIONS,
    ASKS_FOR_OPTIONS,
    BEYOND_RE,
    CUE_RE,
    DET_OR_PREP,
    DISCOURSE_CUE,
    IMPERATIVE,
    LEADING_FILLER,
    LETTER_MARKER,
    NOT_BUT_EN,
    NOT_BUT_IT,
    OTHER_RE,
    PLAIN_WITHOUT_RE,
    PREP_IT_LIST,
    RELATIVE_AFTER_COMMA,
    SENTINEL,
    SUBSTITUTE,
    SUBSTITUTE_END,
    TERMINATOR,
    TRIVIAL,
    YES_NO_OPENER,
    content_words,
    cue_language,
)
from chatbot.logical.dismissal import DISMISSAL_CUE, find_dismissals, text_language
from chatbot.logical.frame_cue_tables import IDIOM_THAT
from chatbot.logical.patient_cues import guarded_cues, noun_phrase, strip_plea
from chatbot.logical.query import And, Node, Not, Term, to_string


@dataclass(frozen=True)
class Detection:
    """What the detector found: the query, the positive text, the excluded phrases and the cues."""

    query: Node
    positive: str
    negatives: tuple[str, ...]
    cues: tuple[str, ...]
    language: str

    @property
    def text(self) -> str:
        return to_string(self.query)


# -- helpers ---------------------------------------------------------------------------------------------


# English contractions typed without the apostrophe ("whats", "dont"): only forms that are not words themselves
_BARE_CONTRACTION = re.compile(
    r"\b(what|that|there|where|who|he|she)s\b(?=\s)|\b(do|does|did|is|are|was|were|has|have|had|could|would|should|"
    r"ca|wo|must|need)nt\b|\b(i)ve\b|\b(i)m\b(?=\s+(?:not|so|\w+ing|\w+ed|already|pregnant|worried|breast|formula|"
    r"still|a\b|an\b|the\b|on\b|in\b|at\b|\d))",
    re.IGNORECASE,
)
_APOSTROPHE_OF = {"s": "'s", "nt": "n't", "ve": "'ve", "m": "'m"}


def restore_apostrophes(text: str) -> str:
    """ "whats" → "what's", "dont" → "don't", "cant" → "can't", "ive" → "i've", "im pregnant" → "i'm pregnant"."""

    def fix(m: re.Match[str]) -> str:
        word = m.group(0)
        stem = next(g for g in m.groups() if g)
        tail = word[len(stem) :]
        return stem + _APOSTROPHE_OF[tail.lower()]

    return _BARE_CONTRACTION.sub(fix, text)


def _normalise(text: str) -> str:
    text = text.replace("’", "'").replace("‘", "'").replace("`", "'")
    return " ".join(restore_apostrophes(text).split())


TRAILING_FILLER = re.compile(r"\s+(?:eh|ehm|dai|insomma|ok|okay)$", re.IGNORECASE)


def _strip_quotes(text: str) -> str:
    text = text.strip()
    for _ in range(3):
        changed = False
        for q in ('"', "'", "“", "”"):
            if len(text) >= 2 and text[0] in "\"'“" and text[-1] in "\"'”" and text.count(q) in (0, 2):
                text, changed = text[1:-1].strip(), True
                break
        if not changed:
            break
    # an orphan quote at either end (the other half was cut off by a clause boundary)
    if text.count('"') % 2 == 1:
        text = text.strip('"').strip()
    return text


def _clean_term(text: str) -> str:
    text = text.replace(SENTINEL, " ")
    text = " ".join(text.split())
    text = text.strip(" ,.;:!?-–—")
    text = LEADING_FILLER.sub("", strip_plea(text))
    text = TRAILING_FILLER.sub("", text)  # "mica ti chiedo dei movimenti eh, …": the interjection is not X
    return _strip_quotes(text).strip(" ,.;:!?-–—")


def _is_title_case(text: str) -> bool:
    words = [w for w in re.findall(r"[A-Za-zÀ-ÿ][\w'.-]*", text) if len(w) > 3]
    return bool(words) and all(w[0].isupper() for w in words)


# a later item repeats the first item's preposition ("né sulle coliche", "né del ciuccio"): it goes with the list
_LIST_PREP = re.compile(
    r"^(?:(?:al|allo|alla|ai|agli|alle|sul|sullo|sulla|sui|sugli|sulle|del|dello|della|dei|degli|delle|di|su)\s+|"
    r"(?:all|sull|dell)'\s*)",
    re.IGNORECASE,
)


def _split_list(text: str, cue: str = "") -> list[str]:
    """ "X and Y" / "X, Y or Z" → items, unless that would cut a title, a shared head or a bare common word.
    After a patient's cue (not a discourse cue such as "excluding", "without mentioning"), short items are a list
    even when one is a bare common word ("alcohol and caffeine", "la nausea e l'anemia")."""
    twice = re.split(r"\s+(?:and|or|e|o)\s+(?:without|senza)\s+|\s+n[eé]\s+", text)
    if len(twice) > 1 and all(p.strip() for p in twice):
        # "senza carne e senza fegato", "né la pillola né il preservativo", "niente sul sonno né sulle coliche"
        return [_LIST_PREP.sub("", p.strip()) if i else p.strip() for i, p in enumerate(twice)]
    if '"' in text or "'" in text.replace("'s ", " ").replace("s' ", " "):
        return [text]  # quoted titles may contain "and"
    if _is_title_case(text):
        return [text]  # "Thinking, Fast and Slow", "Being and Nothingness" (names stay together too)
    parts = [p.strip() for p in re.split(r",\s*(?:and|or|e|o|nor)\s+|,\s*|\s+(?:and|or|e|o|nor)\s+", text) if p.strip()]
    if len(parts) < 2:
        return [text]
    if re.search(r"'s?\b", parts[-1]) and len(parts[0].split()) == 1:
        return [text]  # "Heathcliff and Catherine's relationship": one shared head
    if cue and not DISCOURSE_CUE.search(cue) and all(len(DET_OR_PREP.sub("", p).split()) <= 2 for p in parts):
        # a patient's list of short items ("alcohol and caffeine", "la nausea e l'anemia", "red meat and liver");
        # an item's Italian preposition goes with the list, not the item ("oltre al ritardo e alla nausea")
        return [PREP_IT_LIST.sub("", p) if i else p for i, p in enumerate(parts)]
    for p in parts:
        words = p.split()
        if len(words) == 1 and not words[0][0].isupper():
            return [text]  # "its sporting heritage and history": "history" alone would be too broad
    if re.search(r"'s?\b", parts[-1]) and len(parts[0].split()) == 1:
        return [text]  # "Heathcliff and Catherine's relationship": one shared head
    if re.search(r"\b(?:of|with|on|in|for|to|about|from|di|del|della|con|su|per)\b", parts[0], re.IGNORECASE) and all(
        len(p.split()) <= 2 and not re.match(r"(?:the|a|an|his|her|its|their|il|la|lo|i|gli|le|un|una)\b", p, re.I)
        for p in parts[1:]
    ):
        return [text]  # "the deaths of Catherine and Heathcliff": the list hangs on "of"
    return parts


def _clause_start(text: str, pos: int) -> int:
    """Start of the clause holding ``pos`` (after the last sentence end, comma or semicolon)."""
    start = 0
    for m in re.finditer(r"[?!;,]|\.(?=\s)", text[:pos]):
        start = m.end()
    return start


def _asks_about_substitute(text: str, cue_start: int) -> bool:
    """The sentence holding a substitution cue at ``cue_start`` is a yes/no question about a named substitute
    (cues.YES_NO_OPENER before the cue) and asks for no options (cues.ASKS_FOR_OPTIONS)."""
    start = 0
    for m in re.finditer(r"[?!;]|\.(?=\s)", text[:cue_start]):
        start = m.end()
    asked = text[start:cue_start]
    return YES_NO_OPENER.match(asked) is not None and ASKS_FOR_OPTIONS.search(asked) is None


def _at_sentence_start(text: str, pos: int) -> bool:
    before = text[:pos].rstrip()
    return not before or before[-1] in "?!.;:"


def _find_end(text: str, start: int) -> tuple[int, int, str]:
    """(end of the excluded phrase, end of the region to cut, closing quote to add) for an exclusion
    whose phrase starts at ``start``."""
    pos = start
    while True:
        m = TERMINATOR.search(text, pos)
        cue = CUE_RE.search(text, start + 1)
        cue_at = cue.start() if cue else len(text)
        guarded = [g for g in guarded_cues(text, start + 1) if g[0] < cue_at]
        if guarded:  # "it's not the sickness and it's not anaemia": the next guarded cue ends this one too
            cue_at = min(g[0] for g in guarded)
            cue = re.compile(".").match(text, cue_at)
        if m is None or m.start() >= cue_at:
            if cue is not None:
                # "video games other than "Suspended" and construction tools other than …": what follows
                # the last "and" before the next cue is the next positive item, not part of this exclusion
                ands = list(re.finditer(r"\s(?:and|e)\s", text[start:cue_at]))
                if ands:
                    cut = start + ands[-1].start()
                    return cut, cut, ""
            return cue_at, cue_at, ""
        if m.group(0) == "." and ABBREVIATIONS.search(text[: m.start()]):
            pos = m.end()
            continue
        if m.group("qw") and not text[start : m.start()].strip():
            pos = m.end()  # "other than what the doctor prescribed": the question word is the excluded phrase's
            continue
        quote = m.group("q") if m.groupdict().get("q") else ""
        if quote and text[start : m.start()].count('"') % 2 == 1:
            return m.start(), m.start() + 1 + len(quote), quote  # `Live,"` closes the quoted title
        return m.start(), m.start(), ""


@dataclass
class _Found:
    start: int  # start of the region to cut (cue included)
    end: int
    negative: str
    cue: str


# -- main entry points -----------------------------------------------------------------------------------


def analyse(question: str, learned: bool = True) -> Detection | None:
    """The exclusion structure of ``question``, or None when it has none (route to the usual pipeline).
    ``learned=False``: the cue rules only, without the dismissal model's fallback."""
    text = normalised = _normalise(question)
    if not text:
        return None
    text = LETTER_MARKER.sub(SENTINEL, text)
    text = IDIOM_THAT.sub(SENTINEL, text)  # "other than that, she's fine": refers back, excludes nothing
    negatives: list[str] = []
    cues: list[str] = []

    # 1. parenthetical exclusions: "Hobbes (excluding Leviathan)"
    def paren(m: re.Match[str]) -> str:
        inner = m.group(1).strip()
        cue = CUE_RE.match(inner) or PLAIN_WITHOUT_RE.match(inner)
        if cue is None:
            return m.group(0)
        neg = _clean_term(inner[cue.end() :])
        if not neg:
            return m.group(0)
        negatives.extend(_split_list(neg, cue.group(0)))
        cues.append(cue.group(0).lower())
        return SENTINEL

    text = re.sub(r"\s*\(([^()]*)\)", paren, text)

    # 2. "not X but Y" / "non X ma Y": X is excluded, Y stays in the positive text
    for rx in (NOT_BUT_EN, NOT_BUT_IT):
        at = 0
        while (m := rx.search(text, at)) is not None:
            neg = _clean_term(m.group("neg"))
            if not neg:
                break
            if not noun_phrase(neg, 0):  # "not too bad, but …", "Not today, but …": nothing is excluded
                at = m.end()
                continue
            negatives.extend(_split_list(neg, "not"))
            cues.append("not … but" if rx is NOT_BUT_EN else "non … ma")
            text = text[: m.start()] + text[m.end() :]

    # 2b. exclusions stated as context before the question: "I already tried X, …", "X doesn't work, …"
    for start, end, neg, cue in reversed(_stated(text)):
        negatives[:0] = _split_list(_clean_term(neg), cue)
        cues.insert(0, cue)
        text = text[:start] + " " + text[end:]

    # 3. inline and leading cues, earliest first
    found: list[_Found] = []
    pos = 0
    while True:
        cand: list[tuple[int, int, str]] = []
        m = CUE_RE.search(text, pos)
        if m:
            cand.append((m.start(), m.end(), m.group(0)))
        if IMPERATIVE.match(text) and (pm := PLAIN_WITHOUT_RE.search(text, pos)):
            cand.append((pm.start(), pm.end(), pm.group(0)))
        cand.extend(guarded_cues(text, pos))
        for bm in BEYOND_RE.finditer(text, pos):
            if OTHER_RE.search(text[_clause_start(text, bm.start()) : bm.start()]):
                cand.append((bm.start(), bm.end(), bm.group(0)))
                break
        if not cand:
            break
        start, cue_end, cue_text = min(cand, key=lambda c: (c[0], -c[1]))  # earliest, then longest
        if _at_sentence_start(text, start) and "," in text[cue_end:]:
            # leading clause: "Besides bone health, what else …"
            comma = text.index(",", cue_end)
            # a parenthesis before the comma belongs to the exclusion ("tranne l'anemia (gli esami sono ok), …")
            sentence_end = TERMINATOR.search(_mask_parentheses(text), cue_end)
            if sentence_end is None or sentence_end.start() >= comma:
                end = _after_relative(text, comma)  # "Other than X, which I already do, what …"
                found.append(_Found(start, end, re.sub(r"\s*\([^()]*\)", "", text[cue_end:comma]), cue_text))
                pos = end
                continue
        if SUBSTITUTE.match(cue_text) and _asks_about_substitute(text, start):
            pos = cue_end  # "is vaping ok instead of smoking?": whether X may replace Y, Y is not ruled out
            continue
        neg_end, cut_end, quote = _find_end(text, cue_end)
        if SUBSTITUTE.match(cue_text) and (sub := SUBSTITUTE_END.search(text, cue_end, neg_end)):
            neg_end = cut_end = sub.start()  # "al posto del ciuccio per calmare il neonato": the purpose is asked
        found.append(_Found(start, cut_end, text[cue_end:neg_end] + quote, cue_text))
        pos = max(cut_end, cue_end)

    pieces: list[str] = []
    last = 0
    for f in found:
        neg = _clean_term(f.negative)
        if not neg or neg.lower() in TRIVIAL:
            continue
        negatives.extend(_split_list(neg, f.cue))
        cues.append(" ".join(f.cue.lower().split()))
        pieces.append(text[last : f.start])
        last = f.end
    pieces.append(text[last:])
    positive = _clean_positive(" ".join(pieces))

    negatives = [n for n in dict.fromkeys(_clean_term(n) for n in negatives) if n and n.lower() not in TRIVIAL]
    if not negatives:
        return _learned(normalised) if learned else None
    if not content_words(positive):
        return None
    negatives = [n for n in negatives if n.lower() != positive.lower()]
    if not negatives:
        return None
    query = And((Term(positive), *(Not(Term(n)) for n in negatives)))
    language = cue_language(cues[0])
    return Detection(query, positive, tuple(negatives), tuple(cues), language)


# what is asked points back at the dismissed clause's topic: that topic is wanted, not ruled out
ANAPHORA = re.compile(
    r"\b(?:about|need|needs|take|give|use|on|of|with|for|have|try|get|do|read|know)\s+(?:it|them)\b|\bne\s+(?:devo|posso|serve)|"
    r"\b(?:is|was|are|were)\s+(?:that|this|it|they)\s+(?:ok|okay|alright|safe|normal|fine|bad|a\s+problem|harmful|"
    r"dangerous|risky|enough)\b",
    re.IGNORECASE,
)


def _learned(text: str) -> Detection | None:
    """The dismissal model's reading (``chatbot.logical.dismissal``) of the normalised question when the rules found
    no exclusion: the clauses it scores as dismissing a topic are cut, their topics become the NOT terms, and what
    is left must still ask."""
    found = find_dismissals(text)
    if not found:
        return None
    pieces, last = [], 0
    for d in found:
        pieces.append(text[last : d.start])
        last = d.end
    pieces.append(text[last:])
    rest = " ".join(pieces)
    if not stated_asks(rest, "") or ANAPHORA.search(rest):
        return None  # nothing asked, or the question asks about the clause's topic ("… does my baby need it?")
    positive = _clean_positive(re.sub(r"\s*[,;:]\s*(?=[,;:])", "", rest))
    negatives = [n for d in found for n in _split_list(_clean_term(d.term), DISMISSAL_CUE)]
    negatives = [
        n for n in dict.fromkeys(negatives) if n and n.lower() not in TRIVIAL and n.lower() != positive.lower()
    ]
    if not negatives or not content_words(positive):
        return None
    query = And((Term(positive), *(Not(Term(n)) for n in negatives)))
    return Detection(query, positive, tuple(negatives), (DISMISSAL_CUE,) * len(found), text_language(text))


def _stated(text: str) -> list[tuple[int, int, str, str]]:
    """The stated exclusions of ``context_cues`` and, where they leave a clause free, ``alternative_clauses``."""
    found = stated_exclusions(text)
    for f in ruled_out_clauses(text):
        if all(f[1] <= g[0] or f[0] >= g[1] for g in found):
            found.append(f)
    return sorted(found)


def _mask_parentheses(text: str) -> str:
    """``text`` with every parenthesised group blanked out (same length, so positions hold)."""
    return re.sub(r"\([^()]*\)", lambda m: " " * len(m.group(0)), text)


def _after_relative(text: str, comma: int) -> int:
    """Where a leading exclusion's cut ends: after its comma, or after the relative clause that follows it and
    describes the excluded thing ("Other than X, which I already do, what …"; "tranne l'alcol, che già non bevo,
    quali …"), when that clause closes with a comma before the sentence ends."""
    m = RELATIVE_AFTER_COMMA.match(text, comma + 1)
    if m is None:
        return comma + 1
    rest = text[m.end() :]
    close = re.search(r"[,?!;]|\.(?=\s|$)", rest)
    if close is None or close.group(0) != ",":
        return comma + 1
    return m.end() + close.end()


def _clean_positive(text: str) -> str:
    text = text.replace(SENTINEL, " ")
    text = " ".join(text.split())
    text = re.sub(r"\s+([,?.!;:])", r"\1", text)
    text = re.sub(r",\s*(?=[?.!;,])", "", text)  # "…, ?" left by a cut
    text = re.sub(r"^[,;:.!\s]+", "", text)
    text = re.sub(r"(?:[,;:]|\s(?:and|or|but|e|o|ma))+\s*([?.!]*)$", r"\1", text, flags=re.IGNORECASE)
    text = re.sub(r"([?.!])\s*[,;]\s*", r"\1 ", text)
    text = re.sub(r"\(\s*\)", "", text)
    text = re.sub(r"^(?:(?:so|then|but|and|quindi|allora|ma|e)\s+)+(?=\w)", "", text.strip(" ,;:-–—"), flags=re.I)
    return strip_plea(text.strip(" ,;:")).rstrip("?.!").strip()


def detect(question: str) -> Node | None:
    """The logical query of an exclusion-style question, or None (no logical structure: route as usual)."""
    found = analyse(question)
    return found.query if found else None

"""Answer-sentence selection: which certified sentence ANSWERS the question, and what may join it.

Pure functions, no model: the composer (chatbot.stages.compose) builds the candidate units (sentences, or a
list with its intro, of the top segments and of the rest of the top document), optionally adds a model
score per unit (bi-encoder cosine, cross-encoder), and this module

1. types the question (``question_type``: how_much, how_long, when, why, what_to_do, yes_no; English and
   Italian wording),
2. scores each unit for answering it (``score_units``): question-type cues in the sentence (an amount for
   "how much", a duration for "how long", a time for "when", a reason for "why", an instruction for "what
   to do", a rule or verdict for "is it safe"), the same cues in its section heading, content words shared
   with the question (in the unit, and anywhere in its document), the rank of its document, and the
   optional model score,
3. composes around the best one (``select_units``): the answering unit opens the reply; units of the same
   document that qualify or support it follow (the one right after it first, then others scoring close to
   it, in reading order); a unit of another document joins only if it answers too (its own type cue, words
   of the question, and a score close to the answer's).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

QUESTION_TYPES = ("how_much", "how_long", "when", "why", "what_to_do", "yes_no")

# -- question types ------------------------------------------------------------------------------------

_Q_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "why",
        re.compile(r"\bwhy\b|\bhow come\b|\bwhat causes\b|\bperch[eé]\b|\bcome mai\b|\ba cosa serve\b", re.I),
    ),
    (
        "how_long",
        re.compile(
            r"\bhow long\b|\bfor how many\b|\bquanto dura\b|\bquanto tempo\b|\bper quanto\b|\bfino a quando\b|"
            r"\bper quant[ie]\b",
            re.I,
        ),
    ),
    (
        "when",
        re.compile(
            r"^\W*(?:when|from when|until when|by when|at what|what age|how (?:early|soon)|how many weeks|"
            r"until how many|from how many|after how many)\b|"
            r"^\W*(?:quando|da quando|entro quando|a che et[aà]|dopo quant[ei]|a quant[ei]|da quant[ei] settiman|"
            r"in che (?:mes|settiman|period|moment))",
            re.I,
        ),
    ),
    (
        "how_much",
        re.compile(
            r"\bhow (?:much|many)\b|\bwhat (?:amount|dose|temperature|level)\b|\bquant[oaie]\b|\bche dose\b|"
            r"\bquale dose\b",
            re.I,
        ),
    ),
    (
        "what_to_do",
        re.compile(
            r"\bwhat (?:should|can|do|must) i do\b|\bwhat to do\b|\bwhat can i (?:do|take|try)\b|"
            r"\bhow (?:do|can|should) i\b|\bwhat helps\b|\bcosa (?:devo|posso|si deve|bisogna|si pu[oò]) fare\b|"
            r"\bcosa faccio\b|\bche (?:cosa )?(?:devo|posso) fare\b|^\W*come (?:devo|posso|si)\b|\bcosa fare\b",
            re.I,
        ),
    ),
)


def question_type(question: str) -> str:
    """The kind of answer a question asks for: how_much, how_long, when, why, what_to_do, or yes_no (a
    yes/no or evaluative question, answered by a rule or verdict: the default)."""
    for kind, pattern in _Q_PATTERNS:
        if pattern.search(question):
            return kind
    return "yes_no"


# -- answer cues in a sentence ---------------------------------------------------------------------------

_UNIT = (
    r"(?:mg|milligrams?|micrograms?|mcg|µg|microgramm\w*|milligramm\w*|g|kg|ml|pounds|ounces|minutes|portions?|"
    r"servings?|cups?|mugs?|units?|°c|%|iu|international units|tazzin\w+|porzion\w+|poppate|grammi|chili|minuti)"
)
_NUMBER = r"\d[\d.,]*(?:\s?(?:-|to|and|a|e)\s?\d[\d.,]*)?"
_DURATION = r"(?:weeks?|days?|months?|hours?|years?|settiman\w*|giorni|mesi|ore|anni|trimester|trimestre)"
_ORDINAL_TIME = (
    r"\b(?:prim|second|terz|quart|quint|sest|settim|ottav|non|decim|dodicesim|sedicesim|ventesim|"
    r"ventiquattresim|ventottesim|trentaduesim|trentasettesim|trentesim)\w*\s+(?:settimana|mese|ora|giorn\w|anno)|"
    r"\b(?:first|second|third|last) (?:few |\w+ )?(?:hour|day|week|month|year|trimester)s?\b|"
    r"\bprim\w*\s+(?:\w+\s+)?(?:settiman|mes|giorn|ann)\w*"
)
_NUMBER_WORDS = r"(?:one|two|three|four|five|six|due|tre|quattro|cinque|sei|otto|dieci|dodici)"

# (pattern, weight) per question type; a unit's cue score is the sum of the weights it matches, capped at 1.
CUES: dict[str, tuple[tuple[re.Pattern[str], float], ...]] = {
    "how_much": (
        (re.compile(rf"\b{_NUMBER}\s?{_UNIT}\b", re.I), 0.7),
        (
            re.compile(
                r"\b(?:no more than|not more than|at most|up to|no set number|limit|non più di|al massimo|limita|"
                r"non esiste un numero|dose)\b",
                re.I,
            ),
            0.4,
        ),
        (
            re.compile(
                r"\b(?:a|per|every|each) (?:day|week)\b|\bdaily\b|\bal giorno\b|\ba settimana\b|\b1 in \d", re.I
            ),
            0.3,
        ),
    ),
    "how_long": (
        (re.compile(rf"\b(?:{_NUMBER}|{_NUMBER_WORDS})\s?{_DURATION}\b", re.I), 0.5),
        (
            re.compile(
                r"\b(?:until|till|within|lasts?|ease[sd]? by|fades?|goes away|go away|for (?:about|up to|at least)|"
                r"fino a|fino alla|fino al|entro|dura|per tutto|scompare|migliora|si risolve|passeggero|almeno)\b",
                re.I,
            ),
            0.5,
        ),
        (re.compile(_ORDINAL_TIME, re.I), 0.5),
    ),
    "when": (
        (re.compile(rf"\b(?:{_NUMBER}|{_NUMBER_WORDS})\s?{_DURATION}\b", re.I), 0.7),
        (
            re.compile(
                r"\b(?:from (?:around |about )?(?:\d|the)|between (?:about )?\d|by (?:around )?\d|"
                r"at (?:about |around )?\d|first day|as soon as|before|after|within|"
                r"tra la|tra il|a partire|dalla|dopo|prima|entro)\b",
                re.I,
            ),
            0.3,
        ),
        (re.compile(_ORDINAL_TIME, re.I), 0.7),
    ),
    "why": (
        (re.compile(r"\b(?:because|due to|so that|which is why|perché|poiché|a causa|dovut\w*)\b", re.I), 0.3),
        (
            re.compile(
                r"\b(?:because|due to|linked to|leads? to|lead to|can cause|causes?|caused|so that|which is why|"
                r"reduces?|lowers?|increases?|risk|protects?|hormones?|perché|poiché|a causa|dovut\w*|legat\w*|"
                r"provoca|causa\w*|riduce|rischio|protegg\w*|ormoni|harm\w*|dangerous|pericolos\w*|dannegg\w*)\b",
                re.I,
            ),
            0.7,
        ),
        (re.compile(r"\b(?:helps?|needed|important|aiuta|importante|indispensabil\w*|serve|servono)\b", re.I), 0.3),
    ),
    "what_to_do": (
        (
            re.compile(
                r"^(?:- )?(?:contact|call|tell|speak|talk|ask|see|get|go|take|eat|drink|try|keep|use|avoid|stop|"
                r"rest|sit|wear|put|lie|choose|always|never|do not|don't|contatta|chiama|parlane|parla|chiedi|"
                r"rivolgiti|vai|prendi|mangia|bevi|fai|riposa|concediti|evita|usa|metti|tieni|cuoci|lava|non)\b|"
                r"^(?:if|se)\b[^.;]*?,\s*(?:contact|call|tell|speak|talk|ask|see|get|go|contatta|chiama|parlane|"
                r"chiedi|rivolgiti|vai)\b",
                re.I | re.M,
            ),
            0.7,
        ),
        (
            re.compile(
                r"\b(?:straight away|immediately|right away|as soon as|subito|immediatamente|most important thing|"
                r"best thing|la cosa più importante)\b",
                re.I,
            ),
            0.3,
        ),
    ),
    "yes_no": (
        (
            re.compile(
                r"\b(?:safe|safely|safer|not harmful|harmful|fine|recommended|not recommended|avoid|do not|don't|"
                r"never|no amount|no need|no evidence|myth|allowed|suitable|not reliable|better|usual advice|"
                r"sicur\w*|non fa male|non danneggia|evita|mai|raccomandat\w*|consentit\w*|sconsigliat\w*|"
                r"falso mito|affidabil\w*|si può|non si fanno|non dovrebbe)\b|^(?:- )?non\b",
                re.I | re.M,
            ),
            0.6,
        ),
        (re.compile(r"\b(?:no more than|limit|limita|up to|non più di|al massimo)\b", re.I), 0.4),
    ),
}
# Section headings name what a section answers ("How much is too much", "Quanto e per quanto tempo").
HEADING_CUES: dict[str, re.Pattern[str]] = {
    "how_much": re.compile(r"\bhow much\b|\bhow many\b|\bquant[oaie]\b|\bdose\b|\bamount\b", re.I),
    "how_long": re.compile(r"\bhow long\b|\bper quanto\b|\bdurat|\bquanto dura\b", re.I),
    "when": re.compile(r"^(?:when (?!to (?:get|seek|call|talk|ask|see|contact))|quando (?!chiedere))", re.I),
    "why": re.compile(r"\bwhy\b|\bperch[eé]\b|\bwhat (?:it )?is\b|\bche cos", re.I),
    "what_to_do": re.compile(
        r"\bwhat to do\b|\bmay help\b|\bself-help\b|\btips\b|\bcop(?:e|ing)\b|\bways to\b|\beasing\b|"
        r"\bcosa (?:fare|pu[oò]|puoi)\b|\bregole\b|\bprotecting\b",
        re.I,
    ),
    "yes_no": re.compile(r"\bsafe|\bavoid|\bsicur|\bevitare|\bregole\b|\bmyth|\bmito\b", re.I),
}


def cue_score(kind: str, text: str) -> float:
    """The weights (summed, capped at 1) of the answer cues of the question type ``kind`` found in ``text``."""
    lines = [line for line in text.split("\n") if line.strip()] or [text]
    # a list answers as well as its best line (its items are sentences of their own)
    return max(min(1.0, sum(w for pattern, w in CUES.get(kind, ()) if pattern.search(line))) for line in lines)


def heading_cue(kind: str, heading: str) -> float:
    """1.0 when the section heading says it answers this kind of question, else 0."""
    pattern = HEADING_CUES.get(kind)
    return 1.0 if pattern and heading and pattern.search(heading.strip()) else 0.0


# -- scoring -------------------------------------------------------------------------------------------

# Weights on a 0..1 scale each. Cues in the sentence weigh most: they separate "the amount" from "on the
# topic". Shared words keep the answer on the question's subject; the document rank carries retrieval's
# judgement of the topic (the first document is the most often right one); the model score, when given,
# is min-max normalised over the candidates.
W_CUE = 1.0
W_HEADING = 0.35
# Shared words of the unit and its heading only: adding the title and the neighbouring sentences as context
# (all units of a card then share the topic word) measured worse on the dev reply set (0.817 -> 0.789).
W_OVERLAP = 0.5
W_MODEL = 0.5
# the document names what was asked: with MiniLM + fusion (the browser tests' settings) the alcohol card is
# retrieved first for "Is it safe to drink coffee when pregnant?"; it never says "coffee", the caffeine card
# does. Neutral on the dev reply set (0.0 to 1.5 give the same recall there).
W_TOPIC = 1.0
DOC_PRIOR = {0: 0.8, 1: 0.3, 2: 0.1}
RETRIEVED_BONUS = 0.1  # the unit sits in a retrieved segment (not only elsewhere in the top document)
LEAD_BONUS = 0.05


@dataclass
class Candidate:
    """A unit offered for the reply, with where it comes from.

    ``doc_rank``: rank of its document among the retrieved documents; ``position``: its segment's position
    in the document; ``first``/``last``: its sentence span in the segment; ``retrieved``: whether its
    segment is one of the retrieved ones (else it is another segment of the top document)."""

    text: str
    doc_id: str
    segment_id: str
    doc_rank: int
    position: int
    first: int
    last: int
    heading: str = ""
    title: str = ""
    retrieved: bool = True
    is_list: bool = False
    model_score: float | None = None
    score: float = 0.0
    parts: dict[str, float] = field(default_factory=dict)


def _stems(text: str) -> set[str]:
    from chatbot.stages.safety import content_words

    return {w[:5] for w in content_words(text)}


# Words every question and card of this corpus shares: they say nothing about which sentence answers.
_GENERIC = {
    _w[:5]
    for _w in "pregnant pregnancy incinta gravidanza baby bambino neonato safe sicuro while durante mentre "
    "normal normale".split()
}


def overlap_score(question: str, text: str, heading: str = "", idf: dict[str, float] | None = None) -> float:
    """Share of the question's content words (first 5 letters, generic pregnancy words left out) found in
    the unit or its heading, each word weighted by ``idf`` (rarer among the candidates counts more; 1 each
    without it). Question words no candidate holds are left out of the share."""
    q = _stems(question) - _GENERIC
    if idf is not None:
        q = {w for w in q if w in idf}
    if not q:
        return 0.0
    weight = idf or {}
    found = q & (_stems(text) | _stems(heading))
    return sum(weight.get(w, 1.0) for w in found) / sum(weight.get(w, 1.0) for w in q)


def candidate_idf(units: Sequence[Candidate]) -> dict[str, float]:
    """log(1 + N / df) of every word stem over the candidate units (text and heading)."""
    import math

    df: dict[str, int] = {}
    for u in units:
        for w in _stems(u.text) | _stems(u.heading):
            df[w] = df.get(w, 0) + 1
    return {w: math.log(1 + len(units) / n) for w, n in df.items()}


def score_units(question: str, kind: str, units: Sequence[Candidate]) -> list[Candidate]:
    """Set ``score`` and ``parts`` of every unit (in place) and return them, best first."""
    models = [u.model_score for u in units if u.model_score is not None]
    lo, hi = (min(models), max(models)) if models else (0.0, 0.0)
    idf = candidate_idf(units)
    # the document's own words (its title and every candidate of it): a card that never names what was asked
    # ("coffee") rarely holds its answer, whatever rank retrieval gave it
    doc_text: dict[str, list[str]] = {}
    for u in units:
        doc_text.setdefault(u.doc_id, [u.title]).extend([u.heading, u.text])
    topic = {d: overlap_score(question, " ".join(texts), "", idf) for d, texts in doc_text.items()}
    for u in units:
        own = overlap_score(question, u.text, u.heading, idf)
        parts = {
            "cue": W_CUE * cue_score(kind, u.text),
            "heading": W_HEADING * heading_cue(kind, u.heading),
            "overlap": W_OVERLAP * own,
            "document": DOC_PRIOR.get(u.doc_rank, 0.0),
            "topic": W_TOPIC * topic[u.doc_id],
            "retrieved": RETRIEVED_BONUS if u.retrieved else 0.0,
            "lead": LEAD_BONUS if u.first == 0 else 0.0,
        }
        if u.model_score is not None:
            parts["model"] = W_MODEL * ((u.model_score - lo) / (hi - lo) if hi - lo > 1e-9 else 1.0)
        u.parts = {k: round(v, 4) for k, v in parts.items()}
        u.score = round(sum(parts.values()), 4)
    return sorted(units, key=lambda u: (-u.score, u.doc_rank, u.position, u.first))


# -- composing around the answer -----------------------------------------------------------------------

# Same-document units are compared on their own evidence (the score less the document-level terms, which
# every unit of the answer's document shares): the one right after the answer (it usually qualifies it)
# joins at FOLLOW_RATIO of the answer's evidence, any other at SUPPORT_RATIO, both only with a type cue.
FOLLOW_RATIO = 0.6
SUPPORT_RATIO = 0.6
_DOCUMENT_TERMS = ("document", "topic", "retrieved", "lead")
OTHER_DOC_RATIO = 0.9  # another document's unit must score this close to the answer, and answer too


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 1.0


def select_units(
    question: str,
    kind: str,
    ranked: Sequence[Candidate],
    max_chars: int = 600,
    max_units: int = 4,
    duplicate_overlap: float = 0.8,
) -> list[Candidate]:
    """The reply's units: the best (the answer) first; then same-document units that qualify it (the unit
    right after the answer: a type cue and evidence >= FOLLOW_RATIO of the answer's) or support it (a type
    cue and evidence >= SUPPORT_RATIO), the answer's segment first, then in reading order; then other
    documents' units that answer too (a type cue, a word of the question in the sentence itself, a card that
    names as much of the question as the answer's card, score >= OTHER_DOC_RATIO of the answer's). Each
    joins only while the reply stays within ``max_chars`` and ``max_units``, never a repeat."""
    if not ranked:
        return []
    answer = ranked[0]
    best = max(answer.score, 1e-9)

    def evidence(u: Candidate) -> float:  # what the unit itself says; the same-document terms left out
        return sum(v for k, v in u.parts.items() if k not in _DOCUMENT_TERMS)

    best_evidence = max(evidence(answer), 1e-9)

    def key(u: Candidate) -> tuple[str, int, int]:
        return (u.segment_id, u.first, u.last)

    def span(u: Candidate) -> set[tuple[str, int]]:
        return {(u.segment_id, i) for i in range(u.first, u.last + 1)}

    same_doc = [u for u in ranked[1:] if u.doc_id == answer.doc_id]
    following = [
        u
        for u in same_doc
        if u.segment_id == answer.segment_id
        and u.first == answer.last + 1
        and evidence(u) >= FOLLOW_RATIO * best_evidence
        and u.parts.get("cue", 0) > 0
    ]
    support = [
        u
        for u in same_doc
        if evidence(u) >= SUPPORT_RATIO * best_evidence and u.parts.get("cue", 0) > 0 and u not in following
    ]
    support.sort(key=lambda u: -u.score)
    others = [
        u
        for u in ranked[1:]
        if u.doc_id != answer.doc_id
        and u.score >= OTHER_DOC_RATIO * best
        and u.parts.get("cue", 0) > 0
        and u.parts.get("overlap", 0) > 0
        and u.parts.get("topic", 0) >= answer.parts.get("topic", 0)  # its card names what the answer's names
    ]
    chosen = [answer]
    used = span(answer)
    stems = {key(answer): _stems(answer.text)}
    length = len(answer.text)
    for u in [*following, *support, *others]:
        if len(chosen) >= max_units:
            break
        if span(u) & used:
            continue
        st = _stems(u.text)
        if any(_jaccard(st, s) >= duplicate_overlap for s in stems.values()):
            continue
        extra = len(u.text) + 2
        if length + extra > max_chars:
            continue
        chosen.append(u)
        used |= span(u)
        stems[key(u)] = st
        length += extra
    # the answer's own segment continues first, then the rest of its document, then other documents
    rest = sorted(
        chosen[1:],
        key=lambda u: (u.segment_id != answer.segment_id, u.doc_id != answer.doc_id, u.doc_rank, u.position, u.first),
    )
    return [answer, *rest]


def join_units(units: Sequence[Candidate]) -> str:
    """The reply text: units of one segment run on in one paragraph (lists on their own lines), a new
    segment or document starts a new paragraph."""
    out = ""
    for k, u in enumerate(units):
        if k:
            prev = units[k - 1]
            if u.segment_id != prev.segment_id:
                out += "\n\n"
            else:
                out += "\n" if (u.is_list or prev.is_list) else " "
        out += u.text
    return out

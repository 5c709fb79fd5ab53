"""The answer type of a question and the cues of an answer of that type.

``question_type`` types the question (how_much, how_long, when, why, what_to_do, yes_no; English and Italian
wording); ``cue_score`` and ``heading_cue`` say how much a sentence or its section heading looks like an
answer of that type (an amount for "how much", a duration for "how long", a time for "when", a reason for
"why", an instruction for "what to do", a rule or verdict for "is it safe"). Pure functions, no model;
``answer_select`` scores with them.
"""

from __future__ import annotations

import re

from chatbot.stages.answer_options import ASKS_FOR_THINGS, AVOID, OPTIONS
from chatbot.stages.answer_options import CUES as OPTIONS_CUES
from chatbot.stages.answer_options import HEADING as OPTIONS_HEADING

QUESTION_TYPES = ("how_much", "how_long", "when", "why", "what_to_do", "yes_no")

# -- question types ------------------------------------------------------------------------------------

# The start of a clause: the question's start, or after a comma, dash, colon or a full stop ("first baby, 17 weeks -
# when will I ...", "... per la preeclampsia, da quando si inizia?"); a "when" or "perché" further inside a clause
# reads as "if" or "because" ("è normale che si muova meno perché non ha spazio?").
_CLAUSE = r"(?:^|[,;:.!?\u2013-]\s*)\W*"
_Q_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "why",
        re.compile(
            rf"\bwhy\b|\bhow come\b|\bwhat causes\b|{_CLAUSE}(?:ma |e )?perch[eé]\b|"
            r"\b(?:chied\w*|capisc\w*|capire|sapere|spieg\w*)\s+(?:il )?perch[eé]\b|\bcome mai\b|\ba cosa serve\b",
            re.I,
        ),
    ),
    (
        # said outright, "what should I do" / "che faccio?" is what is asked, whatever the sentence says before it
        # ("da quando è nato il bambino ho pensieri ..., non so cosa fare")
        "what_to_do",
        re.compile(
            r"\bwhat (?:should|can|do|must) (?:i|we) do\b|\bcosa (?:devo|posso|dobbiamo) fare\b|"
            r"\b(?:cosa|che) faccio\b|\bnon so (?:cosa|che) fare\b",
            re.I,
        ),
    ),
    (
        "how_long",
        re.compile(
            r"\bhow long\b|\bfor how many\b|\bquanto (?:\w+ )?dur\w*\b|\bquanto tempo\b|\bper quanto\b|"
            r"\bfino a (?:quando|che|quant[ie])\b|\bper quant[ie]\b|\bquanto ci (?:mett\w+|vuole|vogliono)\b",
            re.I,
        ),
    ),
    (
        "when",
        re.compile(
            rf"{_CLAUSE}(?:when(?:s|'s)?|from when|until when|by when|at what|what age|how (?:early|soon)|"
            r"how many weeks|until how many|from how many|after how many)\b|"
            r"\b(?:(?:from|at|by|until) what (?:point|stage|week|age|time)|what (?:day|week|month|time of)|"
            r"which (?:day|week|month)|how far along|how old)\b|"
            rf"{_CLAUSE}(?:quando|da quando|entro quando|a che (?:et[aà]|settiman|mes|punto)|dopo quant[ei]|"
            r"a quant[ei]|da quant[ei] settiman|in che (?:mes|settiman|period|moment))",
            re.I,
        ),
    ),
    (
        # "does it go away (after the birth)?" (not "when does it go away": that is "when"): the answer says
        # when it ends or how long it lasts
        "how_long",
        re.compile(
            r"\bgo(?:es)? away\b|\bwears? off\b|\bva(?:nno)? via\b|\bse ne va(?:nno)?\b|\bpassa(?:no)?\b|"
            r"\bscompa(?:re|iono|rir)\w*|\bsparisc\w*",
            re.I,
        ),
    ),
    (
        "how_much",
        re.compile(
            r"\bhow (?:much|many|warm|hot|cold|often|big|heavy|common|likely)\b|"
            r"\bwhat (?:amount|dose|temperature|level)\b|\bwhat are the chances\b|"
            r"\bquant[oaie]\b|\bche dose\b|\bquale dose\b|\bche temperatura\b|\bogni quanto\b",
            re.I,
        ),
    ),
    (
        "what_to_do",
        re.compile(
            r"\bwhat (?:should|can|do|must) i do\b|\bwhat to do\b|\bwhat can i (?:do|take|try)\b|"
            r"\bhow (?:do|can|should) (?:i|we)\b|\bwhat helps\b|\bcosa (?:devo|posso|si deve|bisogna|si pu[oò]) fare\b|"
            r"\bcosa faccio\b|\bche (?:cosa )?(?:devo|posso) fare\b|^\W*come (?:devo|posso|si|faccio|fare)\b|"
            r"\bcosa fare\b",
            re.I,
        ),
    ),
)


def answer_kind(question: str, excluded: bool, kind: str | None = None) -> str | None:
    """``options`` for a routed exclusion question (``excluded``) that asks for things and is otherwise typed
    yes/no (``kind``, else the cue patterns' type; chatbot.stages.answer_options); None (the question keeps its
    own type) otherwise."""
    if (
        excluded
        and (kind or question_type(question)) == "yes_no"
        and ASKS_FOR_THINGS.search(question)
        and not AVOID.search(question)
    ):
        return OPTIONS
    return None


# "If you have had more caffeine than recommended, the risk of harm is small": an answer for a patient who says it
# happened; "Is it safe to drink coffee?" does not, and wants the rule (the 200 mg limit) first.
_CONDITIONAL_OPENING = re.compile(r"^\W*(?:if you(?:'ve| have| had| did)|se (?:hai|sei|avete))\b", re.I)
_STATED_EVENT = re.compile(r"\b(?:if|had|already|accidentally|se|gi[aà]|ho|avevo|per sbaglio)\b", re.I)


def unasked_condition(question: str, text: str) -> bool:
    """``text`` opens with a condition on what the patient did ("If you have had ...", "Se hai ...") that the
    question does not state."""
    return bool(_CONDITIONAL_OPENING.search(text)) and not _STATED_EVENT.search(question)


# "When to get help" instructions: contact someone IF a situation arises ("Contact a GP straight away if you cannot
# keep fluids down", "Se il dolore persiste, rivolgiti all'ostetrica"). They answer "what should I do" only for the
# patient who describes that situation; for "what can I do about nausea" the self-help is the answer.
_HELP_VERBS = (
    r"contact|call|phone|ring|tell|speak|talk|ask|see|seek|get (?:\w+ ){0,2}(?:help|care|advice|assessment)|go to|"
    r"contatta|chiama|telefona|rivolgiti|chiedi|parlane|parla|vai"
)
_HELP_IF = re.compile(
    rf"\b(?:{_HELP_VERBS})\b[^.;]*?\b(?:if|se)\b(?P<after>[^.;]*)|^\W*(?:if|se)\b(?P<before>[^.;]*?),\s*(?:{_HELP_VERBS})\b",
    re.I,
)


def help_condition(text: str) -> str | None:
    """The situation a "get help if ..." instruction in ``text`` depends on ("you cannot keep food or fluids
    down, ..."), or None when ``text`` gives no such instruction."""
    m = _HELP_IF.search(text)
    return None if m is None else (m.group("after") or m.group("before") or "")


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
    r"servings?|cups?|mugs?|units?|°c|%|iu|international units|times|feeds|volte|tazzin\w+|porzion\w+|poppate|"
    r"grammi|chili|minuti|gradi)"
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
# "week 6", "weeks 16 to 20", "day five", "giorno 5"
_UNIT_THEN_NUMBER = rf"\b(?:weeks?|days?|months?|settiman[ae]|giorn[oi]|mes[ei])\s+(?:{_NUMBER}|{_NUMBER_WORDS})\b"

# Instructions open with an imperative (English and Italian second person), also after "so (just)", a semicolon,
# a short opening phrase ("Nei neonati misura ...", "In the evening, eat ...") or a clause ending in a comma
_IMPERATIVES = (
    r"contact|call|phone|ring|tell|speak|talk|ask|see|get|go|take|eat|drink|try|keep|use|avoid|stop|rest|sit|"
    r"wear|put|lie|lay|place|choose|bend|lift|turn|roll|hold|wash|boil|make|give|check|feed|offer|step|leave|"
    r"wait|let|seek|follow|stay|bring|change|cut|limit|start|carry on|continue|look|watch|always|never|do not|"
    r"don't|just|contatta|chiama|telefona|parlane|parla|chiedi|rivolgiti|vai|prendi|mangia|bevi|fai|riposa|"
    r"concediti|evita|usa|metti|tieni|cuoci|lava|aspetta|misura|offri|lascia|allatta|cambia|prova|continua|"
    r"segui|controlla|porta|appoggia|stendi|sdraiati|sistema|assicurati|limita|non"
)
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
        (re.compile(rf"\b(?:{_NUMBER}|{_NUMBER_WORDS})\s?{_DURATION}\b|{_UNIT_THEN_NUMBER}", re.I), 0.5),
        (
            re.compile(
                r"\b(?:until|till|within|lasts?|ease[sd]? by|fades?|goes away|go away|for (?:about|up to|at least)|"
                r"fino a|fino alla|fino al|entro|dura|per tutto|scompare|migliora|si risolve|passeggero|almeno)\b",
                re.I,
            ),
            0.5,
        ),
        (re.compile(_ORDINAL_TIME, re.I), 0.5),
        # the usual course is what "how long" asks ("It usually falls off ... between one and three weeks after
        # birth", not the warning "Contact ... if the stump has not come off after about three weeks")
        (
            re.compile(
                r"\b(?:usually|normally|typically|di solito|solitamente|in genere|di norma|normalmente)\b", re.I
            ),
            0.3,
        ),
    ),
    "when": (
        (re.compile(rf"\b(?:{_NUMBER}|{_NUMBER_WORDS})\s?{_DURATION}\b|{_UNIT_THEN_NUMBER}", re.I), 0.7),
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
                r"\b(?:because|due to|linked to|leads? to|lead to|can cause|causes?|caused|causing|so that|"
                r"which is why|reduc(?:es?|ing)|lower(?:s|ing)?|increas(?:es?|ing)|can (?:also )?make|risk|"
                r"protects?|hormones?|perché|poiché|a causa|dovut\w*|legat\w*|"
                r"provoca|causa\w*|riduce|rischio|protegg\w*|ormoni|harm\w*|dangerous|pericolos\w*|dannegg\w*|"
                r"kills?|prevents?|cannot|can't|needs? (?:to|it|them)|in order to|otherwise|uccid\w*|previen\w*|"
                r"affinché|in modo (?:da|che)|altrimenti|rinforz\w*|attraverso)\b",
                re.I,
            ),
            0.7,
        ),
        (re.compile(r"\b(?:helps?|needed|important|aiuta|importante|indispensabil\w*|serve|servono)\b", re.I), 0.3),
    ),
    "what_to_do": (
        (
            re.compile(
                rf"(?:^(?:- )?|(?<=[.!?] )|\bso (?:just )?|;\s*|^(?:in|nei|nel|nella|negli|nelle|per|con|dopo|prima|"
                rf"durante|at|for|after|before|during)\b[^,;.:]{{0,60}}?\s|^[^.;:]{{0,80}}?,\s*)(?:{_IMPERATIVES})\b|"
                r"^(?:if|se)\b[^.;]*?,\s*(?:contact|call|tell|speak|talk|ask|see|get|go|contatta|chiama|parlane|"
                r"chiedi|rivolgiti|vai)\b",
                re.I | re.M,
            ),
            0.7,
        ),
        (
            re.compile(
                r"\b(?:straight away|immediately|right away|as soon as|subito|immediatamente|most important thing|"
                r"best thing|la cosa più importante|urgent(?:ly)?|urgente(?:mente)?)\b",
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
# The first cue of a type said another way: a line scores the best of the first cue and these in its place (they
# never add to it: an instruction is no better for also saying what helps). What to do, said as a need ("a
# temperature of 38°C or more needs urgent medical assessment the same day", "richiede una valutazione medica
# urgente") or as a remedy ("Letting a little breast milk dry on the nipple ... can help them heal", "Getting the
# latch checked ... is often the quickest fix").
ALTERNATIVE_CUES: dict[str, tuple[tuple[re.Pattern[str], float], ...]] = {
    "what_to_do": (
        (
            re.compile(
                r"\bneeds? (?:(?:urgent|prompt|immediate)(?: medical)?|medical) (?:assessment|advice|attention|help)\b|"
                r"\brichied\w* (?:subito )?(?:una |un )?(?:valutazione|visita|parere|aiuto) medic\w*",
                re.I,
            ),
            0.7,
        ),
        (
            re.compile(
                r"\b(?:can|may|will|often) help\b|\bquickest fix\b|\bit is (?:fine|ok|okay) to\b|"
                r"\bpu[oò] aiutare\b|\bpossono aiutare\b",
                re.I,
            ),
            0.4,
        ),
    ),
    # the rule or warning that completes a verdict, said as a preference or a harm ("Paracetamol is usually the
    # first choice" after "Ibuprofen ... is generally not recommended"; "Stopping suddenly can make things worse"
    # after "Carry on breastfeeding ... from the affected side"): with a cue, the sentence after the verdict joins
    # it (answer_select.FOLLOW_RATIO). Eight dev sets, fold heads: +5 / -0, all of them those two questions
    # written again (in-sample for the idea; evaluation/results/replies-s13.md)
    "yes_no": (
        (
            re.compile(
                r"\b(?:first choice|prima scelta|(?:can|may|could) make (?:things|it|this|them) worse|"
                r"pu[oò] peggiorare)\b",
                re.I,
            ),
            0.6,
        ),
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


CUES[OPTIONS] = OPTIONS_CUES  # the options type of exclusion questions (chatbot.stages.answer_options)
HEADING_CUES[OPTIONS] = OPTIONS_HEADING


def cue_score(kind: str, text: str) -> float:
    """The weights (summed, capped at 1) of the answer cues of the question type ``kind`` found in ``text``."""
    lines = [line for line in text.split("\n") if line.strip()] or [text]
    # a list answers as well as its best line (its items are sentences of their own)
    return max(_line_cue(kind, line) for line in lines)


def _line_cue(kind: str, line: str) -> float:
    weights = [w if pattern.search(line) else 0.0 for pattern, w in CUES.get(kind, ())]
    if not weights:
        return 0.0
    alternatives = [w for pattern, w in ALTERNATIVE_CUES.get(kind, ()) if pattern.search(line)]
    weights[0] = max([weights[0], *alternatives])
    return min(1.0, sum(weights))


def heading_cue(kind: str, heading: str) -> float:
    """1.0 when the section heading says it answers this kind of question, else 0."""
    pattern = HEADING_CUES.get(kind)
    return 1.0 if pattern and heading and pattern.search(heading.strip()) else 0.0

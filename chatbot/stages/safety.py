"""Safety screen of a question, before and around retrieval.

- ``detect_language``: en / it / another language, from stopword counts (no model, no download).
- ``detect_red_flags``: urgent situations in English and Italian, colloquial phrasing and typos included
  (word-level fuzzy matching with an optimal-string-alignment edit distance).
- ``detect_personal_request``: a request for a personal diagnosis or a personal dose.
- ``injection_signals`` and ``retrieval_text``: prompt-injection markers (recorded in the trace) and the
  question with links, addresses and markup removed before it reaches retrieval.
- The fixed texts the bot answers with (urgent care, no certified information, safe reply, bad input).

Everything here is plain functions over strings: no model, no I/O, fast enough for every question.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

# -- normalisation ---------------------------------------------------------------------------------

_WORD_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
    "un": 1, "uno": 1, "una": 1, "due": 2, "tre": 3, "quattro": 4, "cinque": 5, "sette": 7,
    "otto": 8, "nove": 9, "dieci": 10, "undici": 11, "dodici": 12,
}  # fmt: skip
_NUM_WORDS = "|".join(sorted(_WORD_NUMBERS, key=len, reverse=True))
_AGE_EN = re.compile(rf"\b(\d+|{_NUM_WORDS})[\s-]*(days?|weeks?|wks?|months?|mths?|mos?)[\s-]*old\b")
_AGE_IT = re.compile(
    rf"\b(neonat\w*|bambin\w*|bimb\w*|figli\w*|lattant\w*|piccol\w*)(\s+\w+)?\s+(?:di|ha)\s+"
    rf"(\d+|{_NUM_WORDS}|sei)\s+(giorn[oi]|settiman[ae]|mes[ei])\b"
)
_EXPANSIONS = {
    "cant": ("can", "not"), "cannot": ("can", "not"), "dont": ("do", "not"), "doesnt": ("does", "not"),
    "didnt": ("did", "not"), "isnt": ("is", "not"), "arent": ("are", "not"), "wasnt": ("was", "not"),
    "havent": ("have", "not"), "hasnt": ("has", "not"), "hadnt": ("had", "not"), "wont": ("will", "not"),
    "couldnt": ("could", "not"), "shouldnt": ("should", "not"), "wouldnt": ("would", "not"),
    "im": ("i", "m"), "ive": ("i", "ve"),
}  # fmt: skip


def fold(text: str) -> str:
    """Lower case without accents (è → e), typographic apostrophes made plain."""
    text = unicodedata.normalize("NFKD", text.lower())
    text = "".join(ch for ch in text if not unicodedata.combining(ch))
    return text.replace("’", "'").replace("`", "'").replace("´", "'")


def _age_token(number: str, unit: str) -> str:
    n = _WORD_NUMBERS.get(number, 6 if number == "sei" else None)
    value = int(number) if n is None else n
    unit = unit[0]
    newborn = unit in "dg" or (unit in "ws" and value < 13) or (unit == "m" and value < 3)
    return " babyagenewborn " if newborn else " babyageolder "


def tokens(text: str) -> list[str]:
    """Folded word tokens; contractions expanded, "3 weeks old" / "neonato di 3 settimane" → an age token."""
    t = fold(text)
    t = re.sub(r"\bcan'?t\b", "can not", t)
    t = re.sub(r"\bwon'?t\b", "will not", t)
    t = re.sub(r"n't\b", " not", t)
    t = _AGE_EN.sub(lambda m: _age_token(m.group(1), m.group(2)), t)
    t = _AGE_IT.sub(lambda m: f"{m.group(1)} {_age_token(m.group(3), m.group(4))}", t)
    t = t.replace("'", " ")
    out: list[str] = []
    for tok in re.findall(r"\d+(?:[.,]\d+)?|[a-z]+", t):
        out.extend(_EXPANSIONS.get(tok, (tok,)))
    return out


# -- fuzzy word matching ---------------------------------------------------------------------------


def osa_distance(a: str, b: str, limit: int = 2) -> int:
    """Optimal string alignment distance (edits incl. adjacent transpositions); ``limit + 1`` once above limit."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        if min(cur) > limit:
            return limit + 1
        prev2, prev = prev, cur
    return prev[-1]


def allowed_edits(length: int) -> int:
    """Typos tolerated for a word of this length: none up to 4 letters, 1 up to 8, 2 from 9."""
    return 0 if length < 5 else 1 if length < 9 else 2


# Real words one edit away from a pattern word that must never count as its typo.
_NOT_TYPOS = frozenset(
    "fewer never seven lever river fiver clever breeding breed breeds leading reading heading needing seeding "
    "weeding feeding fitted chess chase cheat check cheek moving boring loving living lesson lessen blend "
    "blond bloom blow flood floor feet fees stroke strike strokes stocks moved mover mowed sleep steep start "
    "stare stairs sports shots slots version leads quite forse vita visto macchine patto molti molte tanti "
    "tante blood bloods"
    .split()
)  # fmt: skip


def _typo_of(token: str, word: str) -> bool:
    """A misspelling of ``word``: same first letter (and same last letter for 5-letter words), few edits."""
    k = allowed_edits(len(word))
    if not k or token[0] != word[0] or (len(word) == 5 and token[-1] != word[-1]):
        return False
    return osa_distance(token, word, k) <= k


class Lexicon:
    """Pattern words (``word``, ``stem*``, alternatives ``a|b*``) matched against tokens with typos."""

    def __init__(self, words: Iterable[str]) -> None:
        self.literals: set[str] = set()
        self.stems: set[str] = set()
        for word in words:
            for alt in word.split("|"):
                if alt.startswith("#"):
                    continue
                (self.stems if alt.endswith("*") else self.literals).add(alt.rstrip("*"))

    @lru_cache(maxsize=20000)  # noqa: B019 - one Lexicon per process, tokens repeat a lot
    def matches(self, token: str) -> frozenset[str]:
        """The pattern words (stems with their ``*``) this token matches."""
        found: set[str] = set()
        fuzzy_ok = token not in _NOT_TYPOS and not token.isdigit()
        for lit in self.literals:
            if token == lit:
                found.add(lit)
            elif fuzzy_ok and _typo_of(token, lit):
                found.add(lit)
        for stem in self.stems:
            if token.startswith(stem):
                found.add(stem + "*")
            elif fuzzy_ok and (k := allowed_edits(len(stem))) and len(token) >= len(stem) - k and token[0] == stem[0]:
                if any(osa_distance(token[:n], stem, k) <= k for n in (len(stem) - 1, len(stem), len(stem) + 1)):
                    found.add(stem + "*")
        return frozenset(found)


def _number(token: str) -> float | None:
    try:
        return float(token.replace(",", "."))
    except ValueError:
        return None


def _word_matches(lexicon: Lexicon, pattern: str, token: str) -> bool:
    for alt in pattern.split("|"):
        if alt == "#num":
            if _number(token) is not None:
                return True
        elif alt == "#lt37":
            value = _number(token)
            if value is not None and 4 <= value < 37:
                return True
        elif alt == "#lt20":
            value = _number(token)
            if value is not None and 1 <= value < 20:
                return True
        elif alt == "#ge38":
            value = _number(token)
            if value is not None and 37.8 <= value <= 43:
                return True
        elif alt in lexicon.matches(token):
            return True
    return False


@dataclass(frozen=True)
class Match:
    concept: str
    term: str
    start: int
    end: int  # exclusive, in tokens


def find_terms(lexicon: Lexicon, concept: str, terms: Sequence[str], toks: Sequence[str]) -> list[Match]:
    """Every occurrence of any of the concept's terms (consecutive pattern words) in the tokens."""
    present: set[str] = set().union(*(lexicon.matches(t) for t in toks)) if toks else set()
    found = []
    for term in terms:
        words = term.split()
        # quick reject: a term whose every word (other than numeric patterns) matches some token
        if not all(any(a.startswith("#") or a in present for a in w.split("|")) for w in words):
            continue
        for i in range(len(toks) - len(words) + 1):
            if all(_word_matches(lexicon, w, toks[i + j]) for j, w in enumerate(words)):
                found.append(Match(concept, term, i, i + len(words)))
    return found


# -- red flags -------------------------------------------------------------------------------------

CONCEPTS: dict[str, list[str]] = {
    # context
    "PREG": [
        "pregnan*", "preggo", "preggers", "expecting", "#lt37 week*|wk*|wks", "37|38|39|40|41|42 week*|wk*",
        "trimester*", "gestation*", "antenatal", "bump", "incinta", "gravidanz*", "gravida",
        "#num settiman*", "trimestre", "dolce attesa", "aspetto un bambino",
    ],
    "POSTPARTUM": [
        "gave birth", "given birth", "after birth", "after the birth", "since the birth", "after delivery",
        "after giving birth", "postpartum", "post partum", "postnatal", "c section", "caesarean",
        "dopo il parto", "ho partorito", "post parto", "puerperio", "cesareo",
    ],
    "SELF": [
        "i", "my", "me", "myself", "we", "our", "she", "he", "now", "right now", "today", "tonight",
        "this morning", "suddenly", "started", "ho", "sto", "sono", "mi", "mio", "mia", "miei", "mie", "io",
        "abbiamo", "nostro", "nostra", "adesso", "ora", "oggi", "stanotte", "stamattina", "improvvisamente",
        "all improvviso", "iniziato", "iniziata",
    ],
    "BABY": [
        "baby", "babies", "babys", "newborn*", "new born", "infant*", "bub", "little one", "neonat*",
        "bambin*", "bimb*", "lattant*", "piccolin*", "babyagenewborn", "babyageolder",
    ],
    "NEWBORN": [
        "newborn*", "new born", "neonat*", "babyagenewborn", "just born", "appena nat*", "under 3 months",
        "under three months", "sotto i 3 mesi", "sotto i tre mesi",
    ],
    # symptoms
    "BLEED": [
        "bleed*", "bled", "bloody", "haemorrhag*", "hemorrhag*", "losing blood", "lost blood", "blood loss",
        "passing blood", "passed blood", "blood clot*", "blood coming", "lot of blood", "lots of blood",
        "so much blood", "blood everywhere", "blood in my", "sanguinam*", "sanguinan*", "sanguino", "sanguina",
        "sanguinare", "emorragi*", "perdo sangue", "perdite di sangue", "perdita di sangue", "sangue dalla",
        "sangue rosso", "molto sangue", "tanto sangue", "tantissimo sangue", "perdendo sangue", "esce sangue",
        "coaguli di sangue", "perdite rosse", "perdite marroni", "soak* through * pad*", "soak* through pad*",
        "soak* a pad", "soak* pads", "inzupp* l assorbente", "inzupp* * assorbent*",
    ],
    "OTHER_BLEED": [
        "gum", "gums", "nose", "nosebleed*", "gengiv*", "naso", "piles", "haemorrhoid*", "hemorrhoid*",
        "emorroid*", "nipple*", "capezzol*", "cord", "cordone", "umbilical", "ombelic*", "stump", "moncone",
    ],
    "HEAVY": [
        "heavy", "heavily", "a lot", "lots", "loads", "so much", "too much", "soak*", "clot", "clots", "gush*",
        "pouring", "massive", "abbondant*", "tanto", "tantissimo", "molto", "forte", "copios*", "coagul*",
        "grumi", "inzupp*", "fiotti", "assorbent*", "clotting", "clotted",
    ],
    "PAIN": [
        "pain*", "ache*", "aching", "hurt*", "cramp*", "agony", "dolor*", "male", "mal", "fitt*", "crampi",
        "doloros*",
    ],
    "SEVERE": [
        "severe*", "terribl*", "unbearabl*", "excruciat*", "agonis*", "agoniz*", "worst", "really bad",
        "very bad", "so bad", "intense", "sharp", "stabbing", "extreme*", "can not stand", "doubled over",
        "screaming", "crippling", "forte", "fortissim*", "insopportabil*", "atroce", "lancinant*", "acut*",
        "tremend*", "intens*", "terribil*", "fortissimo", "da morire", "non resisto",
    ],
    "MOVE": [
        "move*", "moving", "movement*", "kick*", "wriggl*", "flutter*", "active", "activity", "movimen*",
        "muov*", "muove", "calci", "calcio", "calcetti", "scalci*",
    ],
    "KICKS": ["kick*", "calci", "calcetti", "scalci*"],
    "TOO_EARLY_TO_FEEL": ["#lt20 week*|wk*|wks|settiman*"],
    "REDUCED": [
        "less", "fewer", "reduc*", "slow*", "stopped", "stop*", "not", "no", "nothing", "quiet*", "decreas*",
        "hardly", "barely", "meno", "ridott*", "diminuit*", "non", "fermo", "ferma", "smesso", "nessun*",
        "niente", "rallentat*", "calat*", "quasi",
    ],
    "WATERS": [
        "waters", "water break*", "water broke", "amniotic", "rupture* membrane*", "membranes rupture*",
        "rottura delle acque", "rompono le acque", "rompe le acque", "rottura del sacco", "liquido amniotico",
    ],
    "WATERS_NOW": [
        "waters broke", "waters broken", "waters have broken", "waters went", "waters gone", "waters just",
        "water broke", "water broken", "waters are leaking", "waters leaking", "leaking fluid", "leaking clear",
        "fluid leaking", "gush of fluid", "gush of water", "gushing fluid", "rotto le acque", "rotte le acque",
        "si sono rotte", "acque rotte", "rotto il sacco", "perdo liquido", "perdita di liquido",
        "perdite di liquido", "perdendo liquido",
    ],
    "EARLY": [
        "early", "premature*", "preterm", "pre term", "too soon", "before 37", "prima del termine",
        "pretermine", "precoc*", "in anticipo", "prima delle 37", "#lt37 week*|wk*|wks|settiman*",
        "green", "brown", "smell*", "verde", "marrone", "maleodorant*",
    ],
    "HEADACHE": [
        "headach*", "head ache", "head hurts", "head is killing", "head is pounding", "head pounding",
        "migrain*", "mal di testa", "cefalea", "emicrania", "testa mi scoppia", "dolore alla testa",
    ],
    "VISION": [
        "blur*", "vision", "spots", "flash*", "sparkl*", "stars", "double", "can not see", "eyesight", "sight",
        "seeing", "vista", "vedo", "vedere", "vedevo", "offuscat*", "annebbiat*", "sfocat*", "lampi", "puntini",
        "lucine", "macchie", "appannat*", "luci",
    ],
    "CHEST": ["chest", "petto", "torace", "toracic*", "sternum", "sterno"],
    "CHEST_SYMPTOM": [
        "pain*", "ache*", "hurt*", "tight*", "pressure", "crushing", "squeez*", "dolor*", "male", "oppression*",
        "peso", "stretta", "costrizion*",
    ],
    "BREATHING": [
        "can not breathe", "cant breathe", "struggling to breathe", "struggle to breathe", "not breathing",
        "stopped breathing", "gasping", "turning blue", "blue lips", "lips are blue", "lips blue",
        "non riesco a respirare", "non respira", "non riesce a respirare", "fatica a respirare",
        "labbra blu*", "cianotic*", "smesso di respirare",
    ],
    "STROKE_SIGN": [
        "face droop*", "drooping face", "droopy face", "face is drooping", "face has dropped", "face dropped",
        "one side of my face", "one side of his face", "one side of her face", "side of face",
        "slurred", "slurring", "speech slurr*", "can not speak properly", "can not lift * arm", "arm weak*",
        "weak arm", "arm is weak", "arm went weak",
        "numb on one side", "one side numb", "one side of my body", "bocca storta", "faccia storta",
        "viso storto", "bocca cadente", "parla in modo strano", "parole impastate", "parla impastato", "biascica",
        "non riesce a parlare",
        "non riesco a parlare", "braccio debole", "non riesce ad alzare", "non riesco ad alzare",
        "paresi", "meta del viso", "meta della faccia", "lato del viso", "intorpidit* da un lato",
    ],
    "STROKE_WORD": ["stroke", "ictus"],
    "SEIZURE": [
        "seizur*", "siezur*", "convuls*", "having a fit", "had a fit", "has a fit", "fitting", "epileptic fit",
        "fits", "crisi epilettic*", "attacco epilettic*", "shaking and unresponsive", "jerking",
    ],
    "FEVER": [
        "fever*", "feverish", "has a temperature", "have a temperature", "got a temperature", "high temperature",
        "running a temperature", "temperature of #num", "temperature is #num", "temp of #num", "high temp",
        "feels hot", "feel hot", "very hot", "burning up", "#ge38 c|degrees|gradi|deg", "febbr*",
        "febbricitant*", "temperatura alta", "temperatura di #num", "temperatura a #num", "scotta", "scottava",
        "caldissim*",
    ],
    "FLOPPY": [
        "floppy", "limp", "unresponsive", "not responding", "will not wake", "hard to wake", "difficult to wake",
        "can not wake", "lethargic", "listless", "not feeding", "will not feed", "refusing feeds",
        "refusing to feed", "bulging fontanelle", "rash that does not fade", "molle", "mollo", "floscio",
        "floscia", "flaccid*", "non reagisce", "non si sveglia", "non risponde", "rifiuta il latte",
        "non mangia", "fontanella gonfia", "collo rigido", "inerte",
    ],
    "SELF_HARM": [
        "kill* myself", "kill my self", "suicid*", "end my life", "end it all", "take my own life",
        "harm* myself", "hurt* myself", "self harm*", "cut* myself", "not want to live", "not want to be here",
        "not want to be alive", "better off without me", "better off dead", "want to die", "wish i was dead",
        "wish i were dead", "no reason to live", "want to hurt|harm|kill|shake|smother",
        "thought* of hurting|harming|killing|shaking|smothering", "thought* about hurting|harming|killing",
        "urge* to hurt|harm|kill|shake", "i might hurt|harm|kill|shake", "i could hurt|harm|kill|shake",
        "i will hurt|harm|kill|shake", "i ll hurt|harm", "i may hurt|harm", "shook my baby",
        "uccidermi", "ammazzarmi", "togliermi la vita", "farla finita", "farmi del male", "farmi male",
        "non voglio piu vivere", "voglio morire", "vorrei morire", "vorrei sparire", "pensier* di fare del male",
        "pensier* di fare male", "paura di fare del male", "paura di fare male", "voglio fare del male",
        "voglio fare male", "vorrei fare del male", "potrei fare del male", "fare del male a mio*",
        "fare del male a mia", "fare del male al mio", "fare del male alla mia", "scuotere il mio",
        "autolesion*", "tagliarmi", "meglio senza di me", "pensieri di uccidere",
    ],
    "OVERDOSE": [
        "overdos*", "over dose", "took too many", "taken too many", "take too many", "too many pills",
        "too many tablets", "too many paracetamol", "whole packet", "whole box", "whole bottle",
        "swallowed * pills", "swallowed a battery", "swallowed a button", "swallowed bleach",
        "accidentally took", "accidentally taken", "accidentally swallowed", "ingested", "sovradosaggio",
        "troppe pastiglie", "troppe compresse", "troppe pillole", "troppi farmaci", "troppo paracetamolo",
        "intera confezione", "scatola intera", "tutta la confezione", "tutto il flacone", "ha ingerito",
        "ha inghiottito", "ho ingerito", "ho preso troppe", "ho preso troppi", "per sbaglio ho preso",
    ],
    "SWALLOWED": ["swallowed", "has eaten", "ate", "ingerito", "inghiottito", "ha mangiato"],
    "MEDS": [
        "pills", "tablets", "medicine*", "capsules", "battery", "batteries", "bleach", "pastigli*", "compress*",
        "pillol*", "farmac*", "pila", "pile", "batteri*", "candeggina", "detersivo",
    ],
    "COLLAPSE": [
        "unconscious", "passed out", "fainted", "collapsed", "not waking up", "svenut*", "svenimento",
        "privo di sensi", "priva di sensi", "incosciente", "perso conoscenza", "perso i sensi",
    ],
}  # fmt: skip

# A rule fires when each of its clauses fires; a clause fires when each of its concept groups (a group is
# "A|B": any of those concepts) matches, all within `window` tokens of each other (None: anywhere).
Clause = tuple[tuple[str, ...], int | None]
# A category's rules are alternatives; VETO lists concepts that cancel a category (bleeding gums, a cord stump).
VETO: dict[str, tuple[str, ...]] = {
    "bleeding_in_pregnancy": ("OTHER_BLEED",),
    "reduced_fetal_movements": ("TOO_EARLY_TO_FEEL",),
}
RED_FLAG_RULES: dict[str, list[list[Clause]]] = {
    "bleeding_in_pregnancy": [
        [(("BLEED", "HEAVY|PAIN|SELF|SEVERE"), 6), (("PREG|POSTPARTUM",), None)],
        [(("BLEED", "HEAVY"), 4)],
    ],
    "severe_pain_in_pregnancy": [[(("PAIN", "SEVERE"), 6), (("PREG|POSTPARTUM",), None)]],
    "reduced_fetal_movements": [
        [(("MOVE", "REDUCED"), 8), (("BABY|PREG",), None)],
        [(("KICKS", "REDUCED"), 8)],
    ],
    "waters_breaking_early": [[(("WATERS", "EARLY"), 12)], [(("WATERS_NOW",), None)]],
    "severe_headache_with_visual_disturbance": [
        [(("HEADACHE", "VISION"), 15)],
        [(("HEADACHE", "SEVERE"), 6), (("PREG|POSTPARTUM",), None)],
    ],
    "chest_pain_or_breathing": [[(("CHEST", "CHEST_SYMPTOM"), 5)], [(("BREATHING",), None)]],
    "stroke_signs": [[(("STROKE_SIGN",), None)], [(("STROKE_WORD", "SELF"), 8)]],
    "seizure": [[(("SEIZURE", "SELF|BABY|NEWBORN"), 10)]],
    "feverish_or_floppy_newborn": [
        [(("NEWBORN", "FEVER"), 12)],
        [(("BABY", "FEVER", "SELF"), 10)],
        [(("BABY|NEWBORN", "FLOPPY"), 12)],
        [(("BABY|NEWBORN", "BREATHING"), 12)],
    ],
    "self_harm_or_harming_the_baby": [[(("SELF_HARM",), None)]],
    "overdose": [[(("OVERDOSE",), None)], [(("SWALLOWED", "MEDS"), 6)]],
    "collapse": [[(("COLLAPSE",), None)]],
}

_LEXICON = Lexicon(w for terms in CONCEPTS.values() for term in terms for w in term.split())


@dataclass(frozen=True)
class RedFlag:
    category: str
    evidence: tuple[str, ...]  # the matched terms


def _clause_fires(found: dict[str, list[Match]], groups: Sequence[str], window: int | None) -> list[Match] | None:
    options = [[m for name in group.split("|") for m in found.get(name, [])] for group in groups]
    if any(not opt for opt in options):
        return None
    if window is None:
        return [opt[0] for opt in options]

    def search(i: int, chosen: list[Match]) -> list[Match] | None:
        if i == len(options):
            return chosen
        for m in options[i]:
            span = [*chosen, m]
            if max(x.end for x in span) - min(x.start for x in span) <= window + 1:
                hit = search(i + 1, span)
                if hit:
                    return hit
        return None

    return search(0, [])


def detect_red_flags(text: str, max_tokens: int = 400) -> list[RedFlag]:
    """Urgent situations described in the text (English or Italian), one entry per category."""
    toks = tokens(text)[:max_tokens]
    found = {name: find_terms(_LEXICON, name, terms, toks) for name, terms in CONCEPTS.items()}
    flags = []
    for category, rules in RED_FLAG_RULES.items():
        if any(found[name] for name in VETO.get(category, ())):
            continue
        for rule in rules:
            evidence: list[Match] = []
            for groups, window in rule:
                hit = _clause_fires(found, groups, window)
                if hit is None:
                    break
                evidence.extend(hit)
            else:
                flags.append(RedFlag(category, tuple(" ".join(toks[m.start : m.end]) for m in evidence)))
                break
    return flags


# -- personal diagnosis / dosage requests -------------------------------------------------------------

_REQUEST_CONCEPTS: dict[str, list[str]] = {
    "DIAGNOSE": [
        "do i have", "have i got", "do you think i have", "is it possible i have", "is it possible that i have",
        "do you think my baby has", "does my baby have", "does my son have",
        "does my daughter have", "has my baby got", "what do i have", "what have i got", "what is wrong with me",
        "what s wrong with me", "what is wrong with my", "what s wrong with my", "diagnose me", "diagnose my",
        "can you diagnose", "give me a diagnosis", "my diagnosis", "is this a miscarriage", "am i having a",
        "am i in labour", "am i in labor", "is my baby sick", "is my baby ill", "is my baby ok", "is my baby okay",
        "could this be", "read my", "interpret my", "my test results", "my blood test results", "my scan results",
        "my results", "secondo te ho", "pensi che io abbia", "potrei avere",
        "e possibile che io abbia", "che cosa ho", "cosa ho", "cos ho", "che malattia ho", "cosa ha il mio",
        "cosa ha mio", "cosa ha la mia", "cosa ha mia", "mi fai una diagnosi", "fammi una diagnosi",
        "puoi diagnosticar*", "la mia diagnosi", "i miei esami", "miei risultati",
        "le mie analisi", "interpretare i miei", "sto avendo un aborto", "il mio bambino e malato",
    ],
    "DOSE_Q": [
        "how much", "how many", "what dose", "which dose", "what dosage", "dosage", "dose", "doses", "mg", "ml",
        "milligram*", "teaspoon*", "quanto", "quanta", "quante", "quanti", "che dose", "quale dose",
        "dosaggio", "dosi", "posologia", "ogni quanto", "how often", "how long between",
    ],
    "DRUG": [
        "paracetamol", "acetaminophen", "tylenol", "calpol", "ibuprofen", "nurofen", "advil", "aspirin",
        "codeine", "amoxicillin", "antibiotic*", "insulin", "metformin", "sertraline", "citalopram",
        "fluoxetine", "levothyroxine", "thyroxine", "labetalol", "nifedipine", "antidepressant*",
        "painkiller*", "medicine", "medication", "tablets", "pills", "syrup", "drops", "iron tablets",
        "paracetamolo", "tachipirina", "ibuprofene", "moment", "oki", "aspirina", "antibiotic*", "insulina",
        "farmac*", "medicin*", "compress*", "pastigli*", "sciroppo", "gocce", "antidolorific*",
        "antidepressiv*",
    ],
    "PERSONAL_PARAM": [
        "kg", "kilo*", "weigh*", "pounds", "lbs", "stone", "babyagenewborn", "babyageolder", "year old",
        "years old", "my dose", "my prescription", "my medication", "my medicine", "my tablets", "i m on",
        "i am on", "i take", "i have been taking", "increase", "decrease", "double", "skip", "give my",
        "for my", "my baby", "my son", "my daughter", "my child", "peso", "pesa", "chili", "anni",
        "la mia dose", "il mio farmaco", "la mia terapia", "aumentare", "diminuire", "raddoppiare",
        "sto prendendo", "prendo gia", "dare a mio", "dare al mio", "dare a mia", "alla mia", "al mio",
        "mio figlio", "mia figlia", "il mio bambino",
    ],
}  # fmt: skip
_REQUEST_LEXICON = Lexicon(w for terms in _REQUEST_CONCEPTS.values() for term in terms for w in term.split())


def detect_personal_request(text: str) -> str | None:
    """'dosage' for a personal dose of a medicine, 'diagnosis' for a personal diagnosis, else None.

    "How much folic acid should I take?" is general guidance the certified cards give; "How many
    paracetamol can I give my 6 kg baby?" is a personal dose a clinician or pharmacist must set.
    """
    toks = tokens(text)[:400]
    found = {name: find_terms(_REQUEST_LEXICON, name, terms, toks) for name, terms in _REQUEST_CONCEPTS.items()}
    if found["DOSE_Q"] and found["DRUG"] and (found["PERSONAL_PARAM"] or _clause_fires(found, ("DOSE_Q", "DRUG"), 6)):
        return "dosage"
    # "do I have to ...", "have I got to ..." ask what to do, not what I have
    if any(not (m.term in _OBLIGATION_OK and m.end < len(toks) and toks[m.end] == "to") for m in found["DIAGNOSE"]):
        return "diagnosis"
    return None


_OBLIGATION_OK = frozenset({"do i have", "have i got", "what do i have", "what have i got"})


# -- language --------------------------------------------------------------------------------------

_STOPWORDS: dict[str, frozenset[str]] = {
    "en": frozenset(
        "the an is are am was were be been being you my your it its this that these those what how when why "
        "which who whom should can could would will do does did have has had of to on for with and or not at "
        "from after before during about much many if there they she he we our their them than then so too "
        "very just also any some get got i m s ve ll d".split()
    ),
    "it": frozenset(
        "il lo gli un uno una di da su per con tra fra che mi ti si ci vi del dello della dei degli delle al "
        "allo alla ai agli alle nel nello nella nei negli nelle sono sei ho hai ha abbiamo avete hanno come "
        "cosa quando perche quanto quanta quanti quante posso puo devo deve mio mia miei mie tuo tua questo "
        "questa anche ma piu molto dopo prima durante sto sta stai essere avere fare quale quali dove cui "
        "gia ancora sempre mai ne ed sul sulla col non".split()
    ),
    "es": frozenset(
        "el los las es y que por para estoy esta estan tengo puedo muy pero mas cuando donde como hay hijo durante "
        "hija embarazo embarazada bebe del una unos unas mi mis tu su sus usted debo puede tomar hacer "
        "dolor cual porque desde hasta".split()
    ),
    "fr": frozenset(
        "le les des du est et je suis vous tu une pour avec dans pas ne qui mon ma mes enceinte bebe peux "
        "puis ce cette au aux sur tres mais quand comment pourquoi avoir etre ou j est-ce qu il elle nous "
        "mon votre quels quel quelle quelles faut pendant grossesse peut dois".split()
    ),
    "de": frozenset(
        "der die das und ist ich nicht ein eine mit von zu fur auf mein meine bin habe kann schwanger wie "
        "was wann warum sich es sind auch nach bei oder kind darf soll einen einem".split()
    ),
    "pt": frozenset(
        "os um uma nao voce estou meu minha em com do dos das tenho bebe gravidez quando como muito mas "
        "pelo pela isso esse essa durante tomar o".split()
    ),
    "nl": frozenset("het een en ik niet van mijn zwanger wat hoe kan je met voor op dat zijn mag".split()),
    "pl": frozenset(
        "czy w nie jak co na sie moge jest mam ciazy ciaza dziecko moje po dla jestem moja mnie mozna pic".split()
    ),
}
# Content words that lean towards one of the two served languages (half weight).
_CONTENT_HINTS: dict[str, frozenset[str]] = {
    "en": frozenset(
        "pregnant pregnancy baby babies fever pain bleeding breastfeeding weeks months safe eat drink take "
        "newborn midwife doctor normal sleep milk feeding symptoms signs".split()
    ),
    "it": frozenset(
        "gravidanza incinta bambino bambina neonato neonata febbre dolore sangue allattamento settimane mesi "
        "latte ostetrica medico parto pancia testa mangiare bere prendere sintomi normale".split()
    ),
}
SUPPORTED_LANGUAGES = ("en", "it")


def content_words(text: str) -> list[str]:
    """Folded words of 4+ letters that are not English or Italian stopwords."""
    stop = _STOPWORDS["en"] | _STOPWORDS["it"] | _EXTRA_STOP
    return [w for w in re.findall(r"[a-z]{4,}", fold(text)) if w not in stop]


_EXTRA_STOP = frozenset(
    "what when which where should could would does have with that this from your about there their "
    "quali quale sono come cosa quando dove perche questo questa della delle degli sulla nella".split()
)
_LATIN = re.compile(r"[A-Za-zÀ-ÿ]")


@dataclass(frozen=True)
class LanguageGuess:
    language: str  # en, it, es, fr, de, pt, nl, non-latin, or unknown (too little evidence)
    scores: dict[str, float] = field(default_factory=dict)

    @property
    def supported(self) -> bool:
        return self.language in SUPPORTED_LANGUAGES or self.language == "unknown"

    @property
    def reply_language(self) -> str:
        """The language of our own messages: Italian for Italian, English otherwise."""
        return "it" if self.language == "it" else "en"


def detect_language(text: str, min_evidence: float = 2.0) -> LanguageGuess:
    """Stopword counts per language (plus half-weight content words for en/it).

    Another language is reported only with at least ``min_evidence`` points and 1.5x the best of en/it;
    text with too few clues (a couple of medical words) is ``unknown`` and treated as supported.
    """
    letters = [ch for ch in text if ch.isalpha()]
    if letters:
        latin = sum(1 for ch in letters if _LATIN.match(ch))
        if latin / len(letters) < 0.5:
            return LanguageGuess("non-latin", {"latin_share": round(latin / len(letters), 2)})
    words = re.findall(r"[a-z]+(?:-[a-z]+)?", fold(text))
    scores = {lang: float(sum(w in stop for w in words)) for lang, stop in _STOPWORDS.items()}
    for lang, hints in _CONTENT_HINTS.items():
        scores[lang] += 0.5 * sum(w in hints for w in words)
    best_served = max(scores["en"], scores["it"])
    other, other_score = max(((k, v) for k, v in scores.items() if k not in SUPPORTED_LANGUAGES), key=lambda kv: kv[1])
    if other_score >= min_evidence and other_score >= 1.5 * best_served:
        return LanguageGuess(other, scores)
    if best_served == 0:
        return LanguageGuess("unknown", scores)
    return LanguageGuess("it" if scores["it"] > scores["en"] else "en", scores)


# -- prompt injection and the retrieval text ----------------------------------------------------------

URL_RE = re.compile(
    r"(?:\b(?:https?|ftp|hxxps?)://|\bwww\.)[^\s<>\"'()\[\]]+"
    r"|\b(?:[a-z0-9-]+\.)+(?:com|org|net|info|io|it|uk|co|ly|gov|edu|eu|de|fr|es|me|biz|xyz|app|health|ai|ru|cn)"
    r"\b(?:/[^\s<>\"'()\[\]]*)?",
    re.IGNORECASE,
)
EMAIL_RE = re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")
_MD_LINK = re.compile(r"!?\[([^\]]*)\]\(([^)]*)\)")
_HTML_TAG = re.compile(r"<[^>]{0,500}>")
_INJECTION_PATTERNS = {
    "override_instructions": re.compile(
        r"\b(ignore|disregard|forget|override|bypass)\b.{0,40}\b(instruction|rule|prompt|guideline|polic|above|"
        r"previous|prior|system)|\b(ignora|dimentica|trascura)\b.{0,40}\b(istruzion|regol|prompt|precedent)",
        re.IGNORECASE,
    ),
    "role_play": re.compile(
        r"\b(you are now|act as|pretend (to be|you are)|developer mode|jailbreak|DAN\b|sei ora|fingi di|"
        r"comportati come)",
        re.IGNORECASE,
    ),
    "system_prompt": re.compile(r"\b(system prompt|your instructions|prompt di sistema|tue istruzioni)\b", re.I),
    "link_request": re.compile(
        r"\b(cite|include|add|use|show|link|put|insert)\b.{0,30}\b(url|link|source|website|site)\b|"
        r"\b(cita|includi|aggiungi|usa|mostra|inserisci)\b.{0,30}\b(link|url|fonte|sito)\b",
        re.IGNORECASE,
    ),
    "fake_document": re.compile(
        r"\b(certified (document|content|source|passage)|document\s*:|source\s*:|passage\s*\d*\s*:|"
        r"documento certificato|fonte\s*:)",
        re.IGNORECASE,
    ),
}


def injection_signals(text: str) -> list[str]:
    """Names of prompt-injection markers in the question (trace only: nothing in the question is obeyed)."""
    signals = [name for name, pattern in _INJECTION_PATTERNS.items() if pattern.search(text)]
    if URL_RE.search(text) or EMAIL_RE.search(text):
        signals.append("contains_link_or_address")
    if _MD_LINK.search(text) or _HTML_TAG.search(text):
        signals.append("markup")
    return signals


def retrieval_text(text: str) -> str:
    """The question as retrieval sees it: markdown links keep their text, tags, links and addresses go."""
    text = _MD_LINK.sub(lambda m: m.group(1), text)
    text = _HTML_TAG.sub(" ", text)
    text = EMAIL_RE.sub(" ", text)
    text = URL_RE.sub(" ", text)
    return " ".join(text.split())


# -- fixed texts -------------------------------------------------------------------------------------

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
NO_CERTIFIED_INFO = {
    "en": "I have no certified information on that. Please ask your doctor, midwife or pharmacist.",
    "it": "Non ho informazioni certificate su questo argomento. Chiedi al tuo medico, all'ostetrica o al farmacista.",
}
SAFE_REPLY = {
    ("diagnosis", "en"): "I can't tell you what you (or your baby) have: a diagnosis needs a clinician who can ask "
    "questions and examine you. Please contact your GP, midwife or health visitor. The certified pages below "
    "may help you prepare for that conversation.",
    ("diagnosis", "it"): "Non posso dirti che cosa hai tu (o il tuo bambino): una diagnosi richiede un medico che "
    "possa farti domande e visitarti. Rivolgiti al tuo medico, all'ostetrica o al pediatra. Le pagine "
    "certificate qui sotto possono aiutarti a prepararti al colloquio.",
    ("dosage", "en"): "I can't tell you a personal dose. The right dose depends on you or your baby (for example "
    "weight, age, stage of pregnancy and other medicines): please ask a pharmacist, your GP or midwife, and "
    "follow the leaflet that comes with the medicine. The certified pages below may help.",
    ("dosage", "it"): "Non posso indicarti una dose personale. La dose giusta dipende da te o dal tuo bambino "
    "(ad esempio peso, età, settimana di gravidanza e altri farmaci): chiedi al farmacista, al tuo medico o "
    "all'ostetrica e segui il foglietto illustrativo. Le pagine certificate qui sotto possono aiutarti.",
}
ONLY_IN_ENGLISH = {
    "it": "Non ho informazioni certificate in italiano su questo argomento; ecco quelle disponibili in inglese:",
}
UNSUPPORTED_LANGUAGE = (
    "Sorry, I can only answer questions in English or Italian. Please ask again in one of these languages.\n"
    "Mi dispiace, posso rispondere solo a domande in inglese o in italiano. Riprova in una di queste lingue."
)


def urgent_message(flags: Sequence[RedFlag], language: str) -> str:
    """The urgent-care text in the reply language; the self-harm text first when that flag is raised."""
    lang = "it" if language == "it" else "en"
    parts = []
    if any(f.category == "self_harm_or_harming_the_baby" for f in flags):
        parts.append(SELF_HARM_MESSAGE[lang])
    parts.append(URGENT_MESSAGE[lang])
    return " ".join(parts)

"""Word-level matching of patients' text, typos included: normalisation (accents, numbers, ages,
abbreviations) and fuzzy matching of lexicon words with an optimal-string-alignment edit distance."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
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
    # Italian chat shorthand: "nn" is a negation like "non" ("febbre nn ce l'ha"), "sn" is "sono"
    "nn": ("non",), "sn": ("sono",), "ke": ("che",), "xke": ("perche",), "xk": ("perche",), "xche": ("perche",),
    "perke": ("perche",), "cmq": ("comunque",),
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


# Real words within typo distance of a pattern word (one or two edits) that must never count as its typo.
_NOT_TYPOS = frozenset(
    "fewer never seven lever river fiver clever breeding breed breeds leading reading heading needing seeding "
    "weeding feeding fitted chess chase cheat check cheek moving boring loving living lesson lessen blend "
    "blond bloom blow flood floor feet fees stroke strike strokes stocks moved mover mowed sleep steep start "
    "stare stairs sports shots slots version leads quite forse vita visto macchine patto molti molte tanti "
    "tante blood bloods molto tagliarli tagliarle tagliarlo tagliarla togliermi togliersi togliere pareri "
    "faccio posso prima quanto fever there better feels pero preso penso spesso quali visita cold porto primo child "
    "breathing breastfeeding swallowed tagliare sentire diventato scorsa addormentata della"
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

    def __init__(self, words: Iterable[str], real_words: frozenset[str] = frozenset()) -> None:
        """``real_words``: tokens that are words in their own right, never read as a typo of a pattern word."""
        self.real_words = real_words
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
        fuzzy_ok = token not in _NOT_TYPOS and token not in self.real_words and not token.isdigit()
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


# Number patterns that are a range [low, high): weeks of pregnancy (#lt37, #lt20), a small child's age in years (#lt6)
_NUMBER_RANGES: dict[str, tuple[float, float]] = {"#lt37": (4, 37), "#lt20": (1, 20), "#lt6": (1, 6)}


def _word_matches(lexicon: Lexicon, pattern: str, token: str) -> bool:
    for alt in pattern.split("|"):
        if alt == "#num":
            if _number(token) is not None:
                return True
        elif alt in _NUMBER_RANGES:
            value, (low, high) = _number(token), _NUMBER_RANGES[alt]
            if value is not None and low <= value < high:
                return True
        elif alt == "#temp":  # a temperature reading: a decimal number of fever (38.3, 38,5)
            value = _number(token)
            if value is not None and ("." in token or "," in token) and 37.8 <= value <= 43:
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


def clause_fires(found: dict[str, list[Match]], groups: Sequence[str], window: int | None) -> list[Match] | None:
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

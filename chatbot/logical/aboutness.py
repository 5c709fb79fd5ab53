"""Is a passage ABOUT the excluded thing, or does it only list it among alternatives? (issue 19)

"Which foods are high in iron apart from red meat?": the iron card's sentence "Good sources of iron include
lean red meat, beans, lentils ..." names red meat as one item of an enumeration; the card is about iron, and
it is the answer. A passage whose heading or first sentence names red meat, or that returns to it in most
sentences, is about red meat. The NOT term's cosine cannot tell the two apart (one list item moves the
passage vector as much as one focal sentence), so per NOT term and candidate this module reads:

- ``named``: the sentences that hold every content word of the term (stems and EN/IT synonyms, as
  ``mention.term_words``);
- ``listed``: a naming sentence whose mention is one item of an enumeration: within two words on one side a
  list separator (comma, semicolon, slash, "or"/"and"/"o"/"e"/"oppure"/"né", or a list opener such as
  "include", "such as", "like", "come", "tra cui"), on the other side a separator or the sentence's end, and
  the sentence has at least two separators (siblings); a list item ("- ...") among two or more is listed too;
- ``about``: the heading or title names the term, or the first sentence names it outside a list, or at least
  half of the passage's sentences (two or more) name it.

``adjust``: a NOT term's value per candidate becomes x·(1 − discount) when every naming sentence lists it (and
its heading does not name it), and x + boost when the passage is about it; other candidates keep x. Pure
regular expressions; no model, well under a millisecond per candidate.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from chatbot.index import Hit
from chatbot.logical.mention import TermWords, stem, term_words
from chatbot.logical.query import Node, negative_terms
from chatbot.sentences import split_sentences
from chatbot.stages.text_match import fold

_TOKEN = re.compile(r"[a-z0-9]+|[,;:/()]")
_PUNCT = frozenset(",;:/(")
_COORD = frozenset("or and nor o e ed od oppure ne".split())  # "né" folds to "ne"
_OPENERS = frozenset("include includes including like as eg come cui esempio inclusi incluso compresi".split())
_AFTER_RELATIVE = frozenset("which who that whose where che cui quale quali".split())
_SKIP = 2  # modifier words allowed between a separator and the term ("include lean red meat")
# Cues that ask for ALTERNATIVES to X ("foods other than red meat"): a passage listing X among them answers.
# The others ("excluding references to X", "without mentioning X", "senza X", "escluso X") ask that X not be
# discussed at all, so a listed mention still violates them (NegConstraint's "excluding references to").
ALTERNATIVE_CUES = (
    "other than", "apart from", "besides", "except", "aside from", "anything but", "instead of", "rather than",
    "in addition to", "outside of", "a parte", "tranne", "eccetto", "oltre", "invece", "altro che", "al di fuori",
    "all'infuori", "al posto", "in alternativa",
)  # fmt: skip


@dataclass(frozen=True)
class Aboutness:
    """Per candidate, for one NOT term: naming sentences, whether they all list it, whether it is the topic."""

    named: np.ndarray  # number of sentences naming the term
    listed_only: np.ndarray  # bool: named, and every naming sentence lists it (heading/title do not name it)
    about: np.ndarray  # bool: heading/title, or first sentence outside a list, or ≥ half of ≥ 2 sentences
    first_sentence: list[str | None]  # the first naming sentence (for the trace)


def _tokens(sentence: str) -> list[str]:
    return _TOKEN.findall(fold(sentence))


def _span(tokens: list[str], term: TermWords) -> tuple[int, int] | None:
    """The tightest window of tokens holding one word of every stem group of ``term`` (None: not all there)."""
    if not term.stems:
        return None
    hits = [(i, g) for i, tok in enumerate(tokens) for g, stems in enumerate(term.stems) if stem(tok) in stems]
    need = len(term.stems)
    best: tuple[int, int] | None = None
    for a in range(len(hits)):
        seen: set[int] = set()
        for b in range(a, len(hits)):
            seen.add(hits[b][1])
            if len(seen) == need:
                span = (hits[a][0], hits[b][0])
                if best is None or span[1] - span[0] < best[1] - best[0]:
                    best = span
                break
    return best


def _is_separator(tokens: list[str], i: int) -> bool:
    tok = tokens[i]
    return tok in _PUNCT or tok in _COORD or tok in _OPENERS


def names(sentence: str, term: TermWords) -> bool:
    """Does ``sentence`` hold every content word of the term?"""
    return _span(_tokens(sentence), term) is not None


def listed(sentence: str, term: TermWords, list_item: bool = False) -> bool:
    """Is the term's mention in ``sentence`` one item among siblings of an enumeration?

    ``list_item``: the sentence is a "- " item of a list of two or more (its items are siblings)."""
    tokens = _tokens(sentence)
    span = _span(tokens, term)
    if span is None or span[1] - span[0] > len(term.stems) + 1:  # scattered words: not one item
        return False
    if any(_is_separator(tokens, i) for i in range(span[0] + 1, span[1])):  # "fever: asthma" spans two items
        return False
    if list_item:
        return True
    left = next((i for i in range(span[0] - 1, max(-1, span[0] - 2 - _SKIP), -1) if _is_separator(tokens, i)), None)
    right_end = span[1] + 1 >= len(tokens)
    right = next(
        (i for i in range(span[1] + 1, min(len(tokens), span[1] + 2 + _SKIP)) if _is_separator(tokens, i)), None
    )
    if right is not None and tokens[right] in (":", "("):
        right = None  # "Asthma with fever: ..." / "red meat (beef, lamb)": the term introduces what follows
    if right is not None and tokens[right] == "," and right + 1 < len(tokens) and tokens[right + 1] in _AFTER_RELATIVE:
        right = None  # "red meat, which is ...": a relative clause, not a sibling
    separators = sum(1 for i in range(len(tokens)) if tokens[i] in _PUNCT or tokens[i] in _COORD)
    after = sum(1 for i in range(span[1] + 1, len(tokens)) if tokens[i] in _PUNCT or tokens[i] in _COORD)
    first_item = right is not None and tokens[right] in (",", ";") and after >= 2  # "sono la carne rossa, i ..."
    left_ok = left is not None or span[0] == 0 or first_item
    right_ok = right is not None or right_end
    adjacent_sep = left is not None or right is not None
    return left_ok and right_ok and adjacent_sep and separators >= 2


def passage_aboutness(hits: list[Hit], term: str) -> Aboutness:
    """Aboutness features of one NOT term in every candidate (its text, heading and title)."""
    tw = term_words(term, "", drop_shared=False)
    n = len(hits)
    named = np.zeros(n, dtype=int)
    listed_only = np.zeros(n, dtype=bool)
    about = np.zeros(n, dtype=bool)
    firsts: list[str | None] = [None] * n
    if not any(len(s) > 1 for g in tw.stems for s in g):  # a letter ("H") names nothing reliably
        return Aboutness(named, listed_only, about, firsts)
    for i, h in enumerate(hits):
        sentences = split_sentences(h.segment.text) or [h.segment.text]
        items = sum(1 for s in sentences if s.startswith("- "))
        naming = [j for j, s in enumerate(sentences) if names(s, tw)]
        headed = any(names(x, tw) for x in (h.segment.heading, h.segment.title) if x and x.strip())
        lists = [listed(sentences[j], tw, sentences[j].startswith("- ") and items >= 2) for j in naming]
        named[i] = len(naming)
        firsts[i] = sentences[naming[0]] if naming else None
        first_focal = bool(naming) and naming[0] == 0 and not lists[0]
        share = len(naming) / len(sentences)
        about[i] = headed or first_focal or (len(naming) >= 2 and share >= 0.5)
        listed_only[i] = bool(naming) and all(lists) and not about[i]
    return Aboutness(named, listed_only, about, firsts)


def asks_for_alternatives(cues: tuple[str, ...] | list[str]) -> bool:
    """True when every exclusion cue of the question asks for alternatives to the excluded thing."""
    return bool(cues) and all(" ".join(c.lower().split()).startswith(ALTERNATIVE_CUES) for c in cues)


def listed_discount(discount: float, scope: str, cues: tuple[str, ...] | list[str] | None) -> float:
    """The discount for listed mentions: ``discount`` when ``scope`` is "all", or "alternatives" and the
    question's cues all ask for alternatives (``cues`` None: the detector did not decompose it); else 0."""
    if scope not in ("all", "alternatives"):
        raise ValueError(f"listed-discount scope {scope!r}: all or alternatives")
    return discount if scope == "all" or asks_for_alternatives(cues or ()) else 0.0


def adjust(
    query: Node, hits: list[Hit], values: dict[str, np.ndarray], discount: float, boost: float
) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """NOT values: x·(1 − discount) where the passage only lists the term, x + boost where it is about it.

    Returns the new values (positive terms unchanged) and, per NOT term, the segment ids listed / about."""
    if not 0.0 <= discount <= 1.0:
        raise ValueError(f"listed discount {discount}: between 0 and 1")
    if boost < 0.0:
        raise ValueError(f"about boost {boost}: at least 0")
    out = dict(values)
    info: dict[str, Any] = {}
    for t in negative_terms(query):
        a = passage_aboutness(hits, t)
        x = np.asarray(values[t], dtype=np.float64)
        out[t] = np.where(a.listed_only, x * (1.0 - discount), x) + boost * a.about
        info[t] = {
            "listed": [h.segment.id for h, flag in zip(hits, a.listed_only, strict=True) if flag],
            "about": [h.segment.id for h, flag in zip(hits, a.about, strict=True) if flag],
        }
    return out, info


def configured(
    query: Node, hits: list[Hit], values: dict[str, np.ndarray], config: Any, detection: Any
) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """``adjust`` with a ``LogicalConfig``'s knobs; the listed discount only where its scope allows it for the
    question's cues (``detection``: the detector's, None when it did not decompose the question)."""
    cues = detection.cues if detection is not None else None
    discount = listed_discount(config.not_listed_discount, config.not_listed_scope, cues)
    values, info = adjust(query, hits, values, discount, config.not_about_boost)
    return values, {"listed_discount": discount, "about_boost": config.not_about_boost, "terms": info}

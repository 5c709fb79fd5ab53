"""Does a passage mention the excluded thing? Sentence-level lexical evidence for NOT terms (issue 19).

A passage that talks about "the Nobel Prize" in one sentence of six barely moves its whole-passage vector,
so the cosine of the NOT term dilutes the mention. Here every candidate is cut into sentences and each
sentence is scored against the NOT term's words:

- the term's content words (stopwords and filler such as "details", "aspects" dropped), each folded (case,
  accents) and reduced to a light stem (English and Italian plural/verb endings, then at most
  ``STEM_CHARS`` characters: "religious"/"religion", "kangaroos"/"kangaroo", "gravidanza"/"gravidanze");
  a word also matches its synonyms in either language (``SYNONYMS``, read from ``data/synonyms.tsv``:
  "surgery" ~ "operation" ~ "chirurgia");
- a sentence's score is the IDF-weighted share of the term's words it contains (BM25-style IDF over the
  candidates' sentences, so a word every candidate shares, the question's topic, weighs little);
- a passage's score is the soft maximum over its sentences (``beta``: log-sum-exp / beta, so one strong
  sentence decides and a passage that returns to the topic in several sentences scores a little higher;
  a large beta is the plain maximum).

``violation`` turns that score into a probability per term kind, σ((s − τ)·λ) (``Calibration``, fitted on
NegConstraint's train split: ``evaluation/bench_negation.py``). Pure NumPy and regular expressions: no
model, a few milliseconds for 50 candidates.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from chatbot.resources import synonyms_file
from chatbot.sentences import split_sentences
from chatbot.stages.text_match import fold

STEM_CHARS = 7

_STOP = frozenset(
    """a an the of to in on for and or is are was were be been being can could should would will do does did
    i you we it its it's my your our their his her them they he she this that these those what which how why who
    when where me tell about any some there with without from by as at into onto over under than then so such
    also other others not no nor just only very more most much many own same both each all
    details detail aspects aspect information info discussion discussions mention mentions mentioning reference
    references role roles topic topics things thing related regarding specific particular particularly
    il lo la i gli le l un una uno di da del dello della dei degli delle dell al allo alla ai agli alle all che
    e o ed od è sono cosa come quali quale per con mi posso si non ci su sul sulla sui sugli sulle nel nello
    nella nei negli nelle nell tra fra suo sua suoi sue loro questo questa questi queste quello quella
    dettagli dettaglio aspetti aspetto informazioni riferimento riferimenti""".split()
)


def load_synonyms(path: Path | None = None) -> tuple[tuple[str, ...], ...]:
    """The synonym groups of ``path`` (default ``chatbot/logical/data/synonyms.tsv``): one group a line, its
    folded words tab-separated, '#' comments and blank lines skipped, in the file's order."""
    text = (path or synonyms_file()).read_text(encoding="utf-8")
    groups = [tuple(line.split("\t")) for line in text.splitlines() if line.strip() and not line.startswith("#")]
    return tuple(groups)


# Synonym groups (folded words, either language): the medical exclusions of the certified cards and the cards'
# topic words English <-> Italian. A term word matches every word of its group.
SYNONYMS: tuple[tuple[str, ...], ...] = load_synonyms()

_WORD = re.compile(r"[a-z0-9]+")
_EN_SUFFIXES = ("ational", "ization", "ations", "ation", "ities", "ness", "ment", "ies", "ing", "ed", "es", "s", "ly")
_IT_SUFFIXES = ("zione", "zioni", "mente", "are", "ere", "ire", "ato", "ata", "ati", "ate", "a", "e", "i", "o")


def stem(word: str) -> str:
    """A light stem of a folded word: one common English/Italian ending dropped, then cut to STEM_CHARS."""
    w = word.removesuffix("'s")
    for suf in _EN_SUFFIXES + _IT_SUFFIXES:
        if len(w) - len(suf) >= 4 and w.endswith(suf):
            w = w[: -len(suf)]
            break
    return w[:STEM_CHARS]


def words(text: str) -> list[str]:
    """Folded word tokens (apostrophes split: "dell'osso" → dell, osso)."""
    return _WORD.findall(fold(text))


def _synonym_stems() -> dict[str, frozenset[str]]:
    out: dict[str, set[str]] = {}
    for group in SYNONYMS:
        stems = {stem(w) for entry in group for w in words(entry) if w not in _STOP}
        for s in stems:
            out.setdefault(s, set()).update(stems)
    return {k: frozenset(v) for k, v in out.items()}


_SYNONYM_STEMS = _synonym_stems()


@dataclass(frozen=True)
class TermWords:
    """A NOT term's content words: one set of acceptable stems per word (the word's stem and its synonyms')."""

    term: str
    stems: tuple[frozenset[str], ...]
    kind: str  # "entity" (a name: capitalised words, digits) or "concept"


def term_words(term: str, positive: str = "", drop_shared: bool = True) -> TermWords:
    """The content words of ``term``, less those the ``positive`` text shares (the lexical analogue of the
    orthogonal NOT: "NOT the specifics of the Teutoburg Forest" in a question about the Battle of the
    Teutoburg Forest looks for "specifics" only; a term left with no word has no lexical evidence;
    ``drop_shared`` False keeps them).
    Raises ValueError for an empty term."""
    if not term or not term.strip():
        raise ValueError("a NOT term cannot be empty")
    raw = re.findall(r"[\wÀ-ÿ]+", term)
    content = [w for w in words(term) if w not in _STOP and len(w) > 1]
    if not content:  # a term made of stopwords only ("the one"): match its words as they are
        content = [w for w in words(term)]
    shared = {stem(w) for w in words(positive)} if drop_shared else set()
    groups = []
    for w in dict.fromkeys(content):
        s = stem(w)
        if s not in shared:
            groups.append(_SYNONYM_STEMS.get(s, frozenset()) | {s})
    named = [w for w in raw if fold(w) not in _STOP and (w[:1].isupper() or any(c.isdigit() for c in w))]
    kind = "entity" if named else "concept"
    return TermWords(term, tuple(groups), kind)


def sentence_stems(text: str) -> list[set[str]]:
    """Per sentence of ``text``: the stems of its words."""
    return [{stem(w) for w in words(s)} for s in split_sentences(text) or [text]]


@dataclass(frozen=True)
class MentionScores:
    """Per candidate: the passage score (soft max over sentences) and the index of its strongest sentence."""

    score: np.ndarray
    best_sentence: list[int]
    sentence_scores: list[np.ndarray]


def mention_scores(term: TermWords, passages: Sequence[list[set[str]]], beta: float = 8.0) -> MentionScores:
    """Sentence-level mention score of ``term`` in every passage (each a list of per-sentence stem sets).

    A sentence scores the IDF-weighted share of the term's words it contains (IDF over all the passages'
    sentences, BM25's smoothed form); a passage the soft maximum log(Σ exp(beta·s))/beta over its
    sentences that contain any of the term's words (0 when none does), so a single mention scores exactly
    its own value and every further mention adds a little."""
    if beta <= 0:
        raise ValueError(f"beta {beta}: must be positive")
    if not term.stems:
        return MentionScores(np.zeros(len(passages)), [-1] * len(passages), [np.zeros(len(p)) for p in passages])
    all_sentences = [s for p in passages for s in p]
    n = max(len(all_sentences), 1)
    idf = np.array(
        [math.log(1.0 + (n - (df := sum(1 for s in all_sentences if g & s)) + 0.5) / (df + 0.5)) for g in term.stems]
    )
    total = float(idf.sum()) or 1.0
    scores = np.zeros(len(passages))
    best: list[int] = []
    per: list[np.ndarray] = []
    for i, sentences in enumerate(passages):
        if not sentences:
            best.append(-1)
            per.append(np.zeros(0))
            continue
        s = np.array([sum(idf[j] for j, g in enumerate(term.stems) if g & sent) / total for sent in sentences])
        per.append(s)
        best.append(int(np.argmax(s)))
        m = float(s.max())
        if m > 0:  # sentences without the term add nothing: one mention scores exactly its own value
            scores[i] = m + math.log(float(np.exp(beta * (s[s > 0] - m)).sum())) / beta
    return MentionScores(scores, best, per)


@dataclass(frozen=True)
class Calibration:
    """σ((s − τ)·λ) per term kind: the probability that a passage with mention score s discusses the term."""

    tau_entity: float
    tau_concept: float
    lam: float

    def __call__(self, scores: np.ndarray, kind: str) -> np.ndarray:
        tau = self.tau_entity if kind == "entity" else self.tau_concept
        z = (np.asarray(scores, dtype=np.float64) - tau) * self.lam
        return 1.0 / (1.0 + np.exp(-np.clip(z, -500, 500)))

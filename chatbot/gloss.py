"""A word-by-word Italian → English gloss of a patient's question, for the English cards' search and gate.

Most certified cards are English; an Italian question about a topic only they cover finds no Italian card, and the
multilingual bi-encoder ranks every Italian card above the English one (safety.gloss_second_look). The gloss reads
the question through a hand-written glossary (``chatbot/data/gloss-it-en/*.tsv``, ``italian<TAB>english``):
longest phrase first ("cordone ombelicale" → "umbilical cord"), then the word, then the word without its final
vowels ("ecografie" finds "ecografia"). Articles and prepositions vanish; a word the glossary lacks stays as it is,
so the English gate sees it as an unknown word. Nothing here is shown to a patient."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from chatbot.stages.text_match import fold

MAX_PHRASE = 5  # words in the longest glossary phrase that is looked up
MIN_STEM = 4  # letters a word keeps after its final vowels are stripped, for the stem lookup

# Italian words that carry no content once a question is glossed (articles, prepositions and their contractions,
# elided forms split at the apostrophe, possessives, personal pronouns); dropped unless a glossary phrase holds them.
FUNCTION_WORDS = frozenset(
    """il lo la i gli le l un uno una di a da in con su per tra fra del dello della dei degli delle dell al allo
    alla ai agli alle all dal dallo dalla dai dagli dalle dall nel nello nella nei negli nelle nell col coi sul sullo
    sulla sui sugli sulle sull d c e ed o od mio mia miei mie tuo tua tuoi tue suo sua suoi sue nostro nostra nostri
    nostre vostro vostra vostri vostre loro mi ti si ci vi ne io tu lui lei noi voi""".split()
)


def words(text: str) -> list[str]:
    """Folded words and numbers; an elided article or preposition splits off at its apostrophe ("dell'acqua")."""
    return re.findall(r"\d+(?:[.,]\d+)?|[a-z]+", fold(text).replace("'", " "))


def stem(word: str) -> str:
    """``word`` without its final vowels, kept at MIN_STEM letters at least ("ecografie" → "ecograf"); the h of a
    plural in -che/-ghe/-chi/-ghi goes too ("morfologiche" → "morfologic", as "morfologica")."""
    cut = word.rstrip("aeiou")
    if cut.endswith(("ch", "gh")) and cut != word:
        cut = cut[:-1]
    return cut if len(cut) >= MIN_STEM else word


@dataclass(frozen=True)
class Gloss:
    """One glossed question: the English text, and how much of the question's content the glossary read."""

    text: str
    glossed: int  # content words (not function words) the glossary translated
    content: int  # content words in the question (numbers included: they need no translation)

    @property
    def coverage(self) -> float:
        return self.glossed / self.content if self.content else 0.0


@dataclass(frozen=True)
class Glossary:
    """Italian phrases and words (folded) → English, with a stem index of the single words."""

    entries: Mapping[tuple[str, ...], str]
    stems: Mapping[str, str]

    @classmethod
    def from_pairs(cls, pairs: Iterable[tuple[str, str]]) -> Glossary:
        """The first English gloss of each Italian entry wins (files are read in name order); "a / b" keeps both."""
        entries: dict[tuple[str, ...], str] = {}
        for italian, english in pairs:
            key = tuple(words(italian))
            value = " ".join(w.strip() for w in english.split("/") if w.strip())
            if key and value and len(key) <= MAX_PHRASE:
                entries.setdefault(key, value)
        stems: dict[str, str] = {}
        for key, value in entries.items():
            if len(key) == 1 and not key[0].isdigit():
                stems.setdefault(stem(key[0]), value)
        return cls(entries, stems)

    def lookup(self, word: str) -> str | None:
        """The English of one folded word: itself, else the word with another final vowel (Italian gender and
        number: "sere" → "sera", too short for a stem), else its stem's."""
        hit = self.entries.get((word,))
        if hit is not None or word.isdigit():
            return hit
        if len(word) >= MIN_STEM and word[-1] in "aeio":
            for vowel in "aeio":
                hit = self.entries.get((word[:-1] + vowel,))
                if hit is not None:
                    return hit
        return self.stems.get(stem(word))

    def gloss(self, text: str) -> Gloss:
        toks = words(text)
        out: list[str] = []
        glossed = content = i = 0
        while i < len(toks):
            for n in range(min(MAX_PHRASE, len(toks) - i), 1, -1):
                phrase = self.entries.get(tuple(toks[i : i + n]))
                if phrase is not None:
                    out.append(phrase)
                    counted = sum(1 for t in toks[i : i + n] if t not in FUNCTION_WORDS)
                    glossed, content = glossed + counted, content + counted
                    i += n
                    break
            else:
                tok = toks[i]
                i += 1
                if tok.isdigit() or re.fullmatch(r"\d+[.,]\d+", tok):
                    out.append(tok)
                    glossed, content = glossed + 1, content + 1
                    continue
                if tok in FUNCTION_WORDS:  # an article or a pronoun alone says nothing English search can use
                    continue
                english = self.lookup(tok)
                content += 1
                if english is None:
                    out.append(tok)
                else:
                    out.append(english)
                    glossed += 1
        return Gloss(" ".join(out), glossed, content)


def read_pairs(
    lines: Sequence[str], source: str = "glossary", fields: str = "italian<TAB>english"
) -> list[tuple[str, str]]:
    """Two-field ``fields`` lines; blank lines and '#' comments skipped; a clear error for any other line."""
    pairs = []
    for n, line in enumerate(lines, 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        parts = line.rstrip("\n").split("\t")
        if len(parts) != 2 or not parts[0].strip() or not parts[1].strip():
            raise ValueError(f"{source}:{n}: expected '{fields}', got {line.rstrip()!r}")
        pairs.append((parts[0].strip(), parts[1].strip()))
    return pairs


def read_folder(root: Path, what: str, fields: str = "italian<TAB>english") -> list[tuple[str, str]]:
    """The pairs of every ``*.tsv`` in ``root``, files in name order (``read_pairs``); ``what`` names them in the
    error when there is none."""
    files = sorted(root.glob("*.tsv"))
    if not files:
        raise FileNotFoundError(f"no {what} files (*.tsv) in {root}")
    pairs: list[tuple[str, str]] = []
    for f in files:
        pairs += read_pairs(f.read_text(encoding="utf-8").splitlines(), str(f), fields)
    return pairs


@lru_cache(maxsize=4)
def load_glossary(folder: str | None = None) -> Glossary:
    """The glossary of every ``*.tsv`` in ``folder`` (default: the shipped ``chatbot/data/gloss-it-en``)."""
    from chatbot.resources import gloss_dir

    return Glossary.from_pairs(read_folder(Path(folder) if folder else gloss_dir(), "glossary"))


GLOSSED_LANGUAGES = {"it": "en"}  # question language → the language its gloss is written in


def gloss_text(question: str, language: str) -> str | None:
    """The question's word-by-word gloss, or None: a language without a gloss, an empty gloss, or a missing or
    malformed glossary (the caller then searches the question as it is)."""
    if language not in GLOSSED_LANGUAGES:
        return None
    try:
        return load_glossary().gloss(question).text or None
    except (OSError, ValueError):
        return None


def gloss_readings(question: str, language: str) -> tuple[dict[str, str] | None, dict[str, Any] | None]:
    """The question's words as the answer-first composer matches them with sentences of the gloss's language
    (``{"en": question + " " + gloss}`` for an Italian question; answer_select.reading), and a trace entry; (None,
    None) for a language without a gloss. A missing or malformed glossary leaves the question as it is and says
    why in the trace entry."""
    target = GLOSSED_LANGUAGES.get(language)
    if target is None:
        return None, None
    try:
        glossed = load_glossary().gloss(question)
    except (OSError, ValueError) as exc:
        return None, {"error": str(exc)}
    if not glossed.text:
        return None, {"text": ""}
    return {target: f"{question} {glossed.text}"}, {"text": glossed.text, "coverage": round(glossed.coverage, 3)}

"""Everyday words patients type for what the cards call otherwise: "jabs" where a card says "vaccines", "a glass of
prosecco" where it says "alcohol", "pipì" where an Italian card says "urine". A hand-written list per question
language (``chatbot/data/patient-words-<language>/*.tsv``, ``patient words<TAB>card words``, each card's words found
in that card's text: English words for the English cards, Italian words for the Italian ones) adds the card's words
to a question (``expand``), so it is searched, judged and composed in the cards' own words too
(retrieval.patient_words, ``with_card_words``). Nothing here is shown to a patient."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from chatbot.gloss import read_folder, words

MAX_PHRASE = 4  # words in the longest patient phrase that is looked up
LANGUAGES = ("en", "it")  # the question languages there are lists for (each for the cards in its own language)


@dataclass(frozen=True)
class Expansion:
    """A question with the cards' words for its patient words appended, and which phrases matched."""

    text: str
    matched: tuple[tuple[str, str], ...]  # (patient phrase as typed, card words added)


@dataclass(frozen=True)
class PatientWords:
    """Patient phrases (folded words) → the cards' words for them."""

    entries: Mapping[tuple[str, ...], str]

    @classmethod
    def from_pairs(cls, pairs: Iterable[tuple[str, str]]) -> PatientWords:
        """The first card words of each patient phrase win (files are read in name order)."""
        entries: dict[tuple[str, ...], str] = {}
        for patient, card in pairs:
            key = tuple(words(patient))
            if key and len(key) <= MAX_PHRASE and card.strip():
                entries.setdefault(key, card.strip().lower())
        return cls(entries)

    def lookup(self, phrase: tuple[str, ...]) -> str | None:
        """The card words of a phrase as typed, else of its last word without a plural s ("jabs" → "jab")."""
        hit = self.entries.get(phrase)
        if hit is None and len(phrase[-1]) > 3 and phrase[-1].endswith("s"):
            hit = self.entries.get((*phrase[:-1], phrase[-1][:-1]))
        return hit

    def expand(self, text: str) -> Expansion:
        """``text`` followed by the card words of each patient phrase in it (longest phrase first), each word once
        and none the question already has."""
        toks = words(text)
        added: list[str] = []
        matched: list[tuple[str, str]] = []
        i = 0
        while i < len(toks):
            for n in range(min(MAX_PHRASE, len(toks) - i), 0, -1):
                card = self.lookup(tuple(toks[i : i + n]))
                if card is not None:
                    matched.append((" ".join(toks[i : i + n]), card))
                    added += [w for w in card.split() if w not in toks and w not in added]
                    i += n
                    break
            else:
                i += 1
        return Expansion(f"{text} {' '.join(added)}" if added else text, tuple(matched))


@lru_cache(maxsize=4)
def load_patient_words(folder: str | None = None, language: str = "en") -> PatientWords:
    """The list of every ``*.tsv`` in ``folder`` (default: the shipped ``chatbot/data/patient-words-<language>``)."""
    from chatbot.resources import patient_words_dir

    root = Path(folder) if folder else patient_words_dir(language)
    return PatientWords.from_pairs(read_folder(root, "patient-word", "patient words<TAB>card words"))


def with_card_words(question: str, language: str) -> tuple[str, dict[str, Any] | None]:
    """(the question with the cards' words for its patient words appended, or as it is; the trace entry): questions
    in LANGUAGES only; a missing or malformed list leaves the question and says why."""
    if language not in LANGUAGES:
        return question, None
    try:
        expansion = load_patient_words(language=language).expand(question)
    except (OSError, ValueError) as exc:
        return question, {"error": str(exc)}
    return expansion.text, {"matched": [list(m) for m in expansion.matched]} if expansion.matched else None

"""Extractive replies: certified sentences copied verbatim from the top segments, chosen by similarity to
the question (``compose_extractive``), and the sentence units and language helpers every composer uses."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from chatbot.index import Hit
from chatbot.sentences import split_sentences

# -- sentences -----------------------------------------------------------------------------------------


def _strip_marker(sentence: str) -> str:
    return sentence[2:] if sentence.startswith("- ") else sentence


# -- extractive ----------------------------------------------------------------------------------------

_ANAPHORA = re.compile(
    r"^(this|that|these|those|it|they|such|there|here|questo|questa|questi|queste|cio|ciò|anche|inoltre|"
    r"also|however|but|so|then|in questo|per questo|è|e'|sono|può|puo)(?=\s)",
    re.IGNORECASE,
)
MIN_UNIT_CHARS = 25
# The reranker's order counts too: the best segment's sentences get a head start, and so does the first
# sentence of a segment (it usually states the main point; "lead" bias of extractive summaries).
RANK_BONUS = {0: 0.12, 1: 0.05}
LEAD_BONUS = 0.05
# Words shared with the question (content words, compared by their first 5 letters) add up to this much:
# the bi-encoder alone rates any Italian sentence close to any Italian question (all-MiniLM is English).
# Bonuses are on the scale of the min-max normalised cosine (0..1), so they mean the same for any embedder.
OVERLAP_BONUS = 0.25


def _content_stems(text: str) -> set[str]:
    from chatbot.stages.safety import content_words

    return {w[:5] for w in content_words(text)}


@dataclass
class Unit:
    """A span of consecutive sentences of one segment, offered as one piece of the reply."""

    rank: int
    first: int
    last: int
    text: str
    is_list: bool = False
    score: float = 0.0
    # a list: what introduces it (its intro sentence or the section heading) and its items, each (first, last, text)
    head: str = ""
    items: list[tuple[int, int, str]] = field(default_factory=list)


def segment_units(sentences: Sequence[str], rank: int, heading: str = "", keep_short: bool = False) -> list[Unit]:
    """Sentences become units. A run of list items ("- ...") is one unit with its intro sentence (ending
    with ':'), or else with the section heading, so an item never appears without what it lists (the unit
    keeps both, ``head`` and ``items``). An anaphoric sentence ("This ...", "It ...") takes the sentence before
    it so it keeps its subject."""
    units: list[Unit] = []
    i = 0
    while i < len(sentences):
        s = sentences[i]
        if s.startswith("- "):
            j = i
            while j + 1 < len(sentences) and sentences[j + 1].startswith("- "):
                j += 1
            items = [(k, k, sentences[k]) for k in range(i, j + 1)]
            first = i
            if units and not units[-1].is_list and units[-1].text.rstrip().endswith(":") and units[-1].last == i - 1:
                intro = units.pop()
                first = intro.first
                head = [intro.text]
            else:
                head = [heading] if heading else []
            text = "\n".join([*head, *(line for _, _, line in items)])
            units.append(Unit(rank, first, j, text, is_list=True, head=head[0] if head else "", items=items))
            i = j + 1
            continue
        if _ANAPHORA.match(s) and i > 0 and not sentences[i - 1].startswith("- "):
            units.append(Unit(rank, i - 1, i, f"{sentences[i - 1]} {s}"))
        else:
            units.append(Unit(rank, i, i, s))
        i += 1
    if keep_short:  # a short sentence ("More is not better.") joins the next one of the same segment
        merged: list[Unit] = []
        for u in units:
            prev = merged[-1] if merged else None
            if (
                prev
                and not prev.is_list
                and not u.is_list
                and len(prev.text) < MIN_UNIT_CHARS
                and prev.last + 1 == u.first
            ):
                merged[-1] = Unit(rank, prev.first, u.last, f"{prev.text} {u.text}")
            else:
                merged.append(u)
        units = merged
    return [u for u in units if len(u.text) >= MIN_UNIT_CHARS and not u.text.rstrip().endswith(":")]


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 1.0


def _join_units(units: Sequence[Unit]) -> str:
    out = ""
    for k, u in enumerate(units):
        if k:
            out += "\n" if (u.is_list or units[k - 1].is_list) else " "
        out += u.text
    return out


OTHER_LANGUAGE_NOTE = {
    "it": "Non ho informazioni certificate in italiano su questo argomento; ecco quelle disponibili in inglese:",
    "en": "The certified information I have on this is in Italian:",
}


@dataclass
class Composition:
    """A composed reply before validation, with the provenance of its pieces."""

    mode: str
    text: str
    language_note: str | None = None
    pieces: list[dict[str, Any]] = field(default_factory=list)
    detail: dict[str, Any] = field(default_factory=dict)
    certified_extra: list[str] = field(default_factory=list)  # texts used that are not the hits' (validation)


def hits_in_language(hits: Sequence[Hit], language: str) -> tuple[list[Hit], str | None]:
    """The hits written in the patient's language if any, else all of them with a note saying so."""
    same = [h for h in hits if (h.segment.language or "en") == language]
    if same or language not in OTHER_LANGUAGE_NOTE:
        return (same or list(hits)), None
    return list(hits), OTHER_LANGUAGE_NOTE[language]


def compose_extractive(
    question: str,
    hits: Sequence[Hit],
    embedder,
    language: str = "en",
    max_chars: int = 600,
    max_units: int = 4,
    min_score_ratio: float = 0.85,
    duplicate_overlap: float = 0.8,
) -> Composition:
    """Certified sentences, verbatim, most relevant to the question first chosen, shown in reading order."""
    use, note = hits_in_language(hits, language)
    rank_of = {h.segment.id: r for r, h in enumerate(hits)}
    units: list[Unit] = []
    for h in use:
        units.extend(segment_units(split_sentences(h.segment.text), rank_of[h.segment.id], h.segment.heading))
    if not units:
        return Composition("extractive", "", note)
    q = embedder.embed_queries([question])[0]
    # a sentence is read in its document's context: "The usual advice is 200 mg" is about caffeine
    titles = {rank_of[h.segment.id]: h.segment.title for h in use}
    vectors = embedder.embed_passages([f"{titles[u.rank]}: {u.text}" for u in units])
    cosines = vectors @ q
    lo, hi = float(cosines.min()), float(cosines.max())
    scaled = (cosines - lo) / (hi - lo) if hi - lo > 1e-6 else np.ones_like(cosines)
    q_stems = _content_stems(question)
    stems = [_content_stems(u.text) for u in units]
    for u, s, st in zip(units, scaled, stems, strict=True):
        overlap = len(q_stems & st) / len(q_stems) if q_stems else 0.0
        u.score = (
            float(s) + RANK_BONUS.get(u.rank, 0.0) + (LEAD_BONUS if u.first == 0 else 0.0) + OVERLAP_BONUS * overlap
        )
    order = sorted(range(len(units)), key=lambda k: -units[k].score)
    best = units[order[0]].score
    floor = best - (1 - min_score_ratio)  # within (1 - ratio) of the best on the normalised scale
    chosen: list[int] = []
    used: set[tuple[int, int]] = set()
    length = 0
    for k in order:
        u = units[k]
        if chosen and (u.score < floor or len(chosen) >= max_units):
            break
        span = {(u.rank, i) for i in range(u.first, u.last + 1)}
        if span & used:
            continue
        if any(_jaccard(stems[k], stems[c]) >= duplicate_overlap for c in chosen):
            continue  # says the same as a chosen piece
        extra = len(u.text) + (2 if chosen else 0)
        if chosen and length + extra > max_chars:
            continue
        chosen.append(k)
        used |= span
        length += extra
    chosen.sort(key=lambda k: (units[k].rank, units[k].first))
    paragraphs: list[list[Unit]] = []
    last_rank = None
    for k in chosen:
        if units[k].rank != last_rank:
            paragraphs.append([])
            last_rank = units[k].rank
        paragraphs[-1].append(units[k])
    text = "\n\n".join(_join_units(p) for p in paragraphs)
    pieces = [
        {
            "segment_id": hits[units[k].rank].segment.id,
            "rank": units[k].rank,
            "sentences": [units[k].first, units[k].last],
            "score": round(units[k].score, 4),
        }
        for k in chosen
    ]
    detail = {"candidates": len(units), "languages_used": sorted({h.segment.language for h in use})}
    return Composition("extractive", text, note, pieces, detail)

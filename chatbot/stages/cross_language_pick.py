"""Which language's card answers (retrieval.cross_language_pick): an Italian question whose answering
card exists only in English is linked to Italian cards on other topics, because e5-small puts every Italian
passage above the English ones for an Italian question (evaluation/results/crosslang-s13.md). A translation-trained
encoder (multilingual USE) scores both languages on one scale; ``other_language_pick`` names the English document
to link first when

- its best segment beats the question's best link in the question's language by ``margin`` (USE cosine),
- it is not the twin of a link in the question's language (document centroids closer than ``twin``: the Italian
  card on the same topic keeps priority), and
- no link in the question's language names its topic (a word of the question and of the English title, first
  five letters, found in that link's text: "caffè" in the Italian nutrition card keeps the coffee question Italian).

A question with exclusions (the detector, ``chatbot.logical.detect``, found NOT terms: "nausea oltre allo zenzero")
never gets a card about what the patient excluded: a candidate whose title or best segment is about a NOT term
(``chatbot.logical.aboutness``: the heading or title names it, the first sentence names it outside a list, or half
the sentences do; EN/IT synonyms as ``mention.term_words``) is left out of the candidates.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import numpy as np

from chatbot.logical.aboutness import passage_aboutness
from chatbot.stages.answer_select import _GENERIC, _stems

MARGIN = 0.02  # leave-one-set-out choice on the spent reply sets (every fold chose 0.02)
POOL = 5  # other-language documents read (not linked, no urgent card), in retrieval order
TWIN = 0.82  # every Italian demo card's English twin has a centroid cosine of 0.80-0.91 (same fit)


@dataclass(frozen=True)
class Document:
    """What the pick reads of one document: its language, title, segment vectors (rows, unit length), text and
    its segments' (heading, text), one per vector row (empty: the text is one segment)."""

    doc_id: str
    language: str
    title: str
    vectors: np.ndarray
    text: str
    segments: tuple[tuple[str, str], ...] = ()

    def centroid(self) -> np.ndarray:
        c = np.asarray(self.vectors, dtype=np.float32).mean(axis=0)
        return c / (float(np.linalg.norm(c)) or 1.0)

    def score(self, question_vector: np.ndarray) -> float:
        """The best segment's cosine to the question."""
        return float((np.asarray(self.vectors, dtype=np.float32) @ question_vector).max())


def about_excluded(doc: Document, question_vector: np.ndarray, excluded: Sequence[str]) -> str | None:
    """The NOT term of ``excluded`` that ``doc``'s title or best segment (for ``question_vector``) is about, or
    None (``aboutness.passage_aboutness``: a list that only names the term among others is not about it)."""
    if not excluded:
        return None
    heading, text = "", doc.text
    if doc.segments and len(doc.segments) == len(doc.vectors):
        heading, text = doc.segments[int(np.argmax(np.asarray(doc.vectors, dtype=np.float32) @ question_vector))]
    hit = SimpleNamespace(segment=SimpleNamespace(text=text, heading=heading, title=doc.title))
    for term in excluded:
        for part in term_variants(term):
            if bool(passage_aboutness([hit], part).about[0]):  # type: ignore[list-item]
                return term
    return None


_LIST = re.compile(r"\s+(?:and|or|e|o|né|ne|nor)\s+|\s*,\s*", re.IGNORECASE)
_VERB_FIRST = re.compile(r"^\s*\w+(?:ando|endo|ing|are|ere|ire)\s+(?=\w)", re.IGNORECASE)
_COMPLEMENT = re.compile(
    r"\s+(?:di|del|dello|della|dei|degli|delle|dell'|al|allo|alla|ai|agli|alle|all'|of|for|in|nel|nella)\b.*$",
    re.IGNORECASE,
)


_PREPOSITION = re.compile(r"\s*(?:a|al|allo|alla|ai|agli|alle|all'|di|del|della|to|of|for)\b", re.IGNORECASE)


def term_variants(term: str) -> list[str]:
    """The ways a NOT term names a topic across languages: the term; each item of a list ("il pesce e l'olio di
    fegato di merluzzo"); each item without a leading verb ("contando i movimenti" → "i movimenti") and without its
    complement ("allattare al seno" → "allattare", "olio di fegato di merluzzo" → "olio"): a card titled
    "Breastfeeding" is about "allattare al seno" although no English word stands for "seno" there."""
    out = [term]
    for item in _LIST.split(term) if _LIST.search(term) else [term]:
        for v in (
            item,
            _VERB_FIRST.sub("", item),
            _COMPLEMENT.sub("", item),
            _COMPLEMENT.sub("", _VERB_FIRST.sub("", item)),
        ):
            if v.strip() and v.strip() not in out and not _PREPOSITION.match(v):
                out.append(v.strip())
    return out


def names_topic(question: str, title: str, text: str) -> bool:
    """Whether a word of ``question`` that is also in ``title`` (first five letters, generic pregnancy words out)
    is in ``text``."""
    return bool((_stems(question) - _GENERIC) & _stems(title) & _stems(text))


def other_language_pick(
    question: str,
    language: str,
    question_vector: np.ndarray,
    links: Sequence[Document],
    pool: Sequence[Document],
    margin: float = MARGIN,
    twin: float = TWIN,
    excluded: Sequence[str] = (),
) -> tuple[str | None, dict[str, Any]]:
    """(the other-language document to link first, or None; the trace). ``links``: the retrieved links;
    ``pool``: the best other-language documents not linked (no urgent card), in retrieval order. The candidates
    are the pool and the links in another language (a link moves first), less those about a term of ``excluded``
    (the question's NOT terms; the trace's ``excluded`` names them). None without a link in ``language`` or
    without a candidate."""
    own = [d for d in links if d.language == language]
    candidates = [*(d for d in links if d.language != language), *pool]
    if not own or not candidates:
        return None, {}
    dropped: dict[str, str] = {}
    if excluded:
        about = {d.doc_id: about_excluded(d, question_vector, excluded) for d in candidates}
        dropped = {d: t for d, t in about.items() if t is not None}
        candidates = [d for d in candidates if d.doc_id not in dropped]
        if not candidates:
            return None, {"excluded": dropped}
    best = max(candidates, key=lambda d: d.score(question_vector))
    gap = best.score(question_vector) - max(d.score(question_vector) for d in own)
    closest = max(float(best.centroid() @ d.centroid()) for d in own)
    named = any(names_topic(question, best.title, d.text) for d in own)
    trace: dict[str, Any] = {
        "doc_id": best.doc_id,
        "margin": round(gap, 4),
        "twin": round(closest, 4),
        "named": "yes" if named else "no",
    }
    if dropped:
        trace["excluded"] = dropped
    picked = gap >= margin and closest < twin and not named
    return (best.doc_id if picked else None), trace


def documents_for(
    doc_ids: Sequence[str],
    segments_of: Callable[[str], Sequence[object]],
    embed: Callable[[list[str]], np.ndarray],
    cache: Mapping[str, Document] | None = None,
) -> list[Document]:
    """``Document``s for ``doc_ids`` (segments from ``segments_of``, vectors from ``embed`` on each segment's
    embedding text), reusing ``cache`` (a dict, filled here) for a document whose title and segments are unchanged
    (a card published again is read afresh)."""
    from chatbot.stages.crosslang_vectors import segment_text

    store = cache if isinstance(cache, dict) else {}
    out = []
    for d in doc_ids:
        segs = list(segments_of(d))
        if not segs:
            continue
        parts = tuple((s.heading or "", s.text) for s in segs)
        title = segs[0].title or ""
        known = store.get(d)
        if known is None or known.segments != parts or known.title != title:
            vectors = np.asarray(embed([segment_text(s) for s in segs]), dtype=np.float32)
            text = "\n".join([title, *(f"{s.heading or ''}\n{s.text}" for s in segs)])
            store[d] = Document(d, segs[0].language or "", title, vectors, text, parts)
        out.append(store[d])
    return out


def pick_for(
    result: Any, services: Any, language: str, question: str, excluded: Sequence[str] | None = None
) -> tuple[Any, dict[str, Any]]:
    """(the hit to link first and answer from, or None; the trace) with the services' settings
    (retrieval.cross_language_pick: {language: (margin, twin)}), the dense retriever's other-language search and
    the multilingual USE encoder (loaded once, document vectors kept on ``services``). ``excluded``: the
    question's NOT terms (None: what the exclusion detector finds in ``question``, whatever the route)."""
    from chatbot.embedders import USEEmbedder
    from chatbot.logical.detect import analyse
    from chatbot.stages.crosslang_vectors import stored_embedder
    from chatbot.stages.redflags import urgent_card_ids

    rule = services.settings.retrieval.cross_language_pick.get(language)
    dense = getattr(services, "dense", None)
    if rule is None or not hasattr(dense, "other_language") or not result.top:
        return None, {}
    linked = list(dict.fromkeys(h.segment.doc_id for h in result.top))
    if not any((h.segment.language or "") == language for h in result.top):
        return None, {}
    urgent = urgent_card_ids(services.settings.safety.urgent_cards)
    pool_hits: dict[str, Any] = {}
    for h in dense.other_language(question, language, 40):
        d = h.segment.doc_id
        if d not in linked and d not in urgent and d not in pool_hits and len(pool_hits) < POOL:
            pool_hits[d] = h
    state = services.__dict__.setdefault("_cross_language_pick", {"docs": {}})
    if "use" not in state:
        state["use"] = USEEmbedder(threads=services.settings.embedding.threads)
        # the segments' vectors embedded at ingest (stages.crosslang_vectors), the encoder only for a text they lack
        state["segments"] = stored_embedder(services, state["use"])
    use = state["use"]
    segments_of, embed = services.index.document_segments, state["segments"].embed_passages
    links = documents_for(linked, segments_of, embed, state["docs"])
    pool = documents_for(list(pool_hits), segments_of, embed, state["docs"])
    margin, twin = (float(x) for x in rule)
    if excluded is None:
        found = analyse(question, learned=services.settings.retrieval.learned_exclusions)
        excluded = found.negatives if found is not None else ()
    q = use.embed_queries([question])[0]
    doc, trace = other_language_pick(question, language, q, links, pool, margin, twin, tuple(excluded))
    if doc is None:
        return None, {"cross_language_pick": {**trace, "picked": False}} if trace else {}
    hit = pool_hits.get(doc) or next(h for h in result.top if h.segment.doc_id == doc)
    return hit, {"cross_language_pick": {**trace, "picked": True}}

"""Answer-first replies: the certified sentence that answers the question opens the reply, then those that
qualify or support it (scores: chatbot.stages.answer_select; optional bi-/cross-encoder answer models)."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from chatbot.index import Hit
from chatbot.sentences import split_sentences
from chatbot.stages.extractive import OTHER_LANGUAGE_NOTE, Composition, hits_in_language, segment_units

# -- answer first --------------------------------------------------------------------------------------

AnswerModel = Callable[[str, Sequence[str]], Sequence[float]]  # (question, unit texts) -> one score each


def _pieces(
    unit: Any, room: int | None, exclude: Callable[[str], bool] | None = None
) -> list[tuple[int, int, str, bool]]:
    """(first, last, text, is_list) of what a unit offers: itself, or, for a list longer than ``room`` (it can
    never be shown whole: the reply-length validator would cut it), what can be: its first items that fit, and
    each item alone, each with what introduces the list (its intro sentence or the section heading). Their
    spans start at the list's start, so two pieces of one list never share a reply. A list that names what an
    exclusion question excluded (``exclude``) in some of its items offers the others, as a list of its own."""
    head = [unit.head] if unit.head else []
    if exclude is not None and unit.is_list and unit.items and exclude(unit.text):
        kept = [item for item in unit.items if not exclude(item[2])]
        if kept and len(kept) < len(unit.items):  # (none kept, or the intro names it: the caller drops the list)
            text = "\n".join([*head, *(line for _, _, line in kept)])
            unit = replace(unit, last=kept[-1][1], text=text, items=kept)
    if room is None or not unit.is_list or not unit.items or len(unit.text) <= room:
        return [(unit.first, unit.last, unit.text, unit.is_list)]
    lines, last = list(head), None
    for _, end, line in unit.items:
        if len("\n".join([*lines, line])) > room:
            break
        lines.append(line)
        last = end
    prefix = [(unit.first, last, "\n".join(lines), True)] if last is not None and len(lines) - len(head) > 1 else []
    return prefix + [(unit.first, end, "\n".join([*head, line]), True) for _, end, line in unit.items]


def segment_pieces(
    segment: Any, room: int | None, exclude: Callable[[str], bool] | None = None
) -> list[tuple[int, int, str, bool]]:
    """(first, last, text, is_list) of every piece the composer may offer from ``segment`` at ``room`` characters:
    its units and, for a list longer than the room, the list's pieces (``_pieces``; ``exclude``: an exclusion
    question's excluded thing, whose list items are left out of their list)."""
    units = segment_units(split_sentences(segment.text), 0, segment.heading, keep_short=True)
    return [piece for unit in units for piece in _pieces(unit, room, exclude)]


def answer_candidates(
    hits: Sequence[Hit],
    use: Sequence[Hit],
    document_segments: Callable[[str], Sequence[Any]] | None = None,
    exclude: Callable[[str], bool] | None = None,
    room: int | None = None,
) -> tuple[list[Any], list[Any]]:
    """(candidate units, segments of the top document that were not retrieved): the units of the hits in
    ``use`` and of the rest of the top used document (of each language, when ``use`` mixes two), each
    knowing its document's rank among ``use``; ``exclude(text)`` drops units (an exclusion question's
    excluded thing)."""
    from chatbot.stages.answer_select import Candidate

    doc_rank: dict[str, int] = {}
    for h in use:
        doc_rank.setdefault(h.segment.doc_id, len(doc_rank))
    segments = [(h.segment, True) for h in use]
    extra: list[Any] = []
    if use and document_segments is not None:
        seen = {h.segment.id for h in hits}
        tops = list({h.segment.language or "": h.segment.doc_id for h in reversed(use)}.values())[::-1]
        try:
            extra = [s for doc_id in tops for s in document_segments(doc_id) if s.id not in seen]
        except Exception:  # noqa: BLE001 - the retrieved segments still make a reply
            extra = []
        segments += [(s, False) for s in extra]
    units: list[Candidate] = []
    for seg, retrieved in segments:
        for first, last, text, is_list in segment_pieces(seg, room, exclude):
            if exclude is not None and exclude(text):
                continue
            units.append(
                Candidate(
                    text=text,
                    doc_id=seg.doc_id,
                    segment_id=seg.id,
                    doc_rank=doc_rank.get(seg.doc_id, len(doc_rank)),
                    position=seg.position,
                    first=first,
                    last=last,
                    heading=seg.heading,
                    title=seg.title,
                    retrieved=retrieved,
                    is_list=is_list,
                    language=seg.language or "",
                )
            )
    return units, extra


def compose_answer_first(
    question: str,
    hits: Sequence[Hit],
    language: str = "en",
    max_chars: int = 600,
    max_units: int = 4,
    document_segments: Callable[[str], Sequence[Any]] | None = None,
    model: AnswerModel | None = None,
    scorer: str = "cues",
    exclude: Callable[[str], bool] | None = None,
    kind: str | None = None,
    readings: Mapping[str, str] | None = None,
    urgent: bool = False,
    lead: Any | None = None,
    weights: Any | None = None,
) -> Composition:
    """Certified units, verbatim: the one that answers the question first (chatbot.stages.answer_select),
    then those that qualify or support it. Candidates: the hits in the patient's language and the other
    segments of the top one's document (``document_segments(doc_id)``); ``model`` adds a score per unit.
    ``readings``: the question's words per unit language for the shared-word terms (answer_select.reading).
    ``urgent``: the red-flag screen found an alarm in the question (answer_select.score_units). ``lead``: a labelled
    neighbour's cards and key phrases (chatbot.stages.answer_memory.Lead): when the first hit's document is one of
    its cards, that document's unit holding a key phrase answers (``lead_unit``). ``weights``: learned weights of the
    score terms per question type (chatbot.stages.answer_weights.UnitWeights), else the hand weights."""
    from chatbot.stages.answer_cues import question_type
    from chatbot.stages.answer_select import by_language, join_units, score_units, select_units

    use, note = hits_in_language(hits, language)
    # the patient's language has hits, and so has another: both compete (chatbot.stages.answer_select.by_language)
    mixed = note is None and language in OTHER_LANGUAGE_NOTE and len(use) < len(hits)
    units, extra = answer_candidates(hits, list(hits) if mixed else use, document_segments, exclude, max_chars)
    if not units:
        return Composition("extractive", "", note)
    kind = kind or question_type(question)  # ``kind``: a type given by the caller (answer_options.answer_kind)
    model_ms = None
    if model is not None:
        start = time.perf_counter()
        with_heading = getattr(model, "reads_heading", True)
        # a model with a ``shortlist`` scores only the units the cues rank that high (the rest get 0): it embeds
        # fewer sentences, and a unit the cues put far down does not open the reply on the model alone
        limit = getattr(model, "shortlist", None)
        scored = score_units(question, kind, list(units), readings=readings, urgent=urgent)[:limit] if limit else units
        texts = [f"{u.heading}: {u.text}" if u.heading and with_heading else u.text for u in scored]
        # a model that picks its question types (TypedAnswerModel) is told the type the composer uses
        scores = model(question, texts, kind=kind) if getattr(model, "takes_kind", False) else model(question, texts)
        model_ms = round((time.perf_counter() - start) * 1000, 1)
        if scores is not None:
            by_unit = {id(u): float(sc) for u, sc in zip(scored, scores, strict=True)}
            for u in units:
                u.model_score = by_unit.get(id(u), 0.0)
    weight = getattr(model, "weight", None)  # a trained head's own weight (its metadata), else W_TRAINED
    ranked = score_units(
        question,
        kind,
        units,
        raw_model=getattr(model, "probability", False),
        trained_weight=weight,
        readings=readings,
        urgent=urgent,
    )
    led = lead_unit(ranked, lead, hits[0].segment.doc_id) if lead is not None and hits else None
    if mixed and led is not None:  # the labelled answer decides the language
        ranked = [u for u in ranked if u.language == led.language]
        if led.language != language:
            note = OTHER_LANGUAGE_NOTE[language]
        use = [h for h in hits if (h.segment.language or "") == led.language]
    elif mixed:
        # the language is decided on the question's own words (readings would tip it to the gloss's language: an
        # Italian card that answered a dev question on cheeses lost to the English card, replies-v14)
        ranked = by_language(question, ranked, language, readings)
        if ranked[0].language != language:
            note = OTHER_LANGUAGE_NOTE[language]
        use = [h for h in hits if (h.segment.language or "") == ranked[0].language]
    if weights is not None:  # compose.unit_weights=learned: the terms weighed per question type (answer_weights)
        ranked = weights.reweigh(kind, ranked)
    if led is not None:
        ranked = [led, *[u for u in ranked if u is not led]]
    else:
        ranked = speaks_first(ranked)
    headed = under_heading(kind, ranked[0]) if ranked else None
    if headed is not None:
        ranked = [headed, *ranked[1:]]
    chosen = select_units(question, kind, ranked, max_chars, max_units, readings=readings)
    answer = chosen[0]
    pieces = [
        {
            "segment_id": u.segment_id,
            "rank": u.doc_rank,
            "sentences": [u.first, u.last],
            "score": u.score,
            "role": "answer" if k == 0 else ("support" if u.doc_id == answer.doc_id else "other-document"),
        }
        for k, u in enumerate(chosen)
    ]
    detail: dict[str, Any] = {
        "candidates": len(units),
        "languages_used": sorted({h.segment.language for h in use}),
        "answer": {
            "text": answer.text,
            "score": answer.score,
            "parts": answer.parts,
            "segment_id": answer.segment_id,
            "doc_id": answer.doc_id,
            "retrieved_segment": answer.retrieved,
            "question_type": kind,
            "scorer": scorer,
            "runner_up": [{"text": u.text[:160], "score": u.score, "doc_id": u.doc_id} for u in ranked[1:4]],
        },
    }
    if lead is not None:
        detail["answer"]["lead"] = {**lead.trace(), "used": led is not None}
    if model_ms is not None:
        detail["answer"]["model_ms"] = model_ms
    if getattr(model, "error", None):
        detail["answer"]["model_error"] = model.error
    used_extra = {u.segment_id for u in chosen if not u.retrieved}
    certified_extra = [s.text for s in extra if s.id in used_extra] + [s.heading for s in extra if s.id in used_extra]
    if headed is not None and chosen[0] is headed:  # the certified heading, then the certified sentence it heads
        certified_extra.append(headed.text)
    return Composition("extractive", join_units(chosen), note, pieces, detail, certified_extra)


def speaks_first(ranked: Sequence[Any]) -> list[Any]:
    """The ranking with its best unit that speaks to the question (a cue of the asked type, a shared word or a
    heading cue) first, when the top unit has none of these: the document-rank terms alone (the learned weights
    trust them about twice as much as the hand weights) never open the reply with a sentence about something else."""
    ranked = list(ranked)
    if not ranked or _speaks(ranked[0]):
        return ranked
    best = next((u for u in ranked if _speaks(u)), None)
    return ranked if best is None else [best, *[u for u in ranked if u is not best]]


def _speaks(unit: Any) -> bool:
    return any(unit.parts.get(term, 0) > 0 for term in ("cue", "overlap", "heading"))


HEADED_KINDS = ("when", "how_long")


def under_heading(kind: str, unit: Any) -> Any | None:
    """``unit`` shown under its section heading when the heading holds the timing asked for and the unit does not
    ("The anomaly scan (around 18 to 21 weeks)" above "The second routine scan ... looks in detail at ..."), else
    None. Both lines are certified text; lists already show what introduces them."""
    from dataclasses import replace

    from chatbot.stages.answer_cues import cue_score

    if kind not in HEADED_KINDS or unit.is_list or not unit.heading or unit.text.startswith(unit.heading):
        return None
    if cue_score(kind, unit.heading) <= 0 or cue_score(kind, unit.text) > 0:
        return None
    return replace(unit, text=f"{unit.heading}\n{unit.text}")


def lead_unit(ranked: Sequence[Any], lead: Any, first: str) -> Any | None:
    """The best-ranked unit of the first link's document ``first`` holding one of ``lead.phrases`` verbatim, when
    that document is one of ``lead.cards``; else None (the answer memory changes what is said, never the links)."""
    if first not in lead.cards:
        return None
    return next((u for u in ranked if u.doc_id == first and any(p in u.text for p in lead.phrases)), None)


class BiEncoderAnswerModel:
    """Cosine of each unit to the question with the pipeline's embedder; unit vectors are kept in memory
    (certified text does not change while the process runs), so a card's sentences are embedded once."""

    def __init__(self, embedder, max_cached: int = 20000) -> None:
        self.embedder = embedder
        self.max_cached = max_cached
        self._cache: dict[str, np.ndarray] = {}

    def __call__(self, question: str, texts: Sequence[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if missing:
            if len(self._cache) + len(missing) > self.max_cached:
                self._cache.clear()
            for t, v in zip(missing, self.embedder.embed_passages(missing), strict=True):
                self._cache[t] = v
        q = self.embedder.embed_queries([question])[0]
        return np.asarray([float(self._cache[t] @ q) for t in texts], dtype=np.float32)


class CrossEncoderAnswerModel:
    """The cross-encoder's (question, unit) score; None for questions it was not trained on (Italian)."""

    def __init__(self, reranker) -> None:
        self.reranker = reranker

    def __call__(self, question: str, texts: Sequence[str]) -> np.ndarray:
        return np.asarray(self.reranker.predict([(question, t) for t in texts]), dtype=np.float32)


# The trained term (for compose.trained_types) scores the cues' best SHORTLIST units only (latency: each unit is
# embedded with e5-onnx the first time it is seen).
SHORTLIST = 16


class TypedAnswerModel:
    """The trained answer scorer's term for some question types only: its scores for a question of one of
    ``types`` (the composer's ``kind``, else ``answer_cues.question_type``), None (no model term: cues alone) for
    the others. ``load()`` gives the model the first time a question of those types comes (loading e5-onnx), never
    before."""

    reads_heading = False  # as TrainedAnswerModel
    probability = True
    shortlist = SHORTLIST
    takes_kind = True  # the composer passes its question type (compose_answer_first)

    def __init__(self, load: Callable[[], Any], types: Sequence[str]) -> None:
        self.load = load
        self.types = frozenset(types)
        self.error: str | None = None  # why the model could not be loaded (the cues then answer alone; traced)
        self.weight: float | None = None  # the loaded head's weight of its term (TrainedAnswerModel.weight)

    def __call__(self, question: str, texts: Sequence[str], kind: str | None = None) -> Sequence[float] | None:
        from chatbot.stages.answer_cues import QUESTION_TYPES, question_type

        # "options" (an exclusion question asking for things) is no type of the trained scorer's: the question's own
        if (kind if kind in QUESTION_TYPES else question_type(question)) not in self.types:
            return None
        try:
            model = self.load()
        except (OSError, ValueError) as exc:  # weights or e5-onnx missing: the cues still make a reply
            self.error = f"{type(exc).__name__}: {exc}"[:300]
            return None
        self.weight = getattr(model, "weight", None)
        return model(question, texts)


def _trained_model(services) -> Any:
    cache = services.__dict__.setdefault("_answer_models", {})
    if "trained" not in cache:
        from chatbot.embedders import load_embedder
        from chatbot.stages.answer_trained import EMBEDDER, HEADS, TrainedAnswerModel
        from chatbot.stages.answer_units import UnitVectors, store_path

        # the pipeline's (kind, threads) key: the same e5-onnx instance when it is the retrieval embedder
        head = HEADS[getattr(services.settings.compose, "trained_head", "public")]
        embedder = load_embedder(EMBEDDER, services.settings.embedding.threads)
        # the indexed units' vectors, embedded by ingest (answer_units); a unit they lack is embedded on demand
        settings = services.settings
        data_dir = getattr(services, "data_dir", settings.paths.data_dir)
        path = store_path(data_dir, getattr(services, "collection_name", settings.index.collection))
        units = UnitVectors.load(path, getattr(embedder, "name", EMBEDDER))
        cache["trained"] = TrainedAnswerModel(embedder, weights_file=head, units=units)
    return cache["trained"]


def answer_model_for(services, scorer: str, language: str = "en") -> AnswerModel | None:
    """The model term of compose.answer_scorer for this question: the embedder's cosine (cues+bi-encoder),
    the cross-encoder for English questions (cues+cross-encoder), the trained answer scorer in both languages
    (cues+trained: chatbot.stages.answer_trained, on e5-onnx vectors; with cues, for the question types of
    compose.trained_types only), else None (cues alone)."""
    if scorer == "cues+trained":
        return _trained_model(services)
    types = getattr(services.settings.compose, "trained_types", [])
    if getattr(services.settings.compose, "unit_weights", "hand") == "learned":
        from chatbot.stages.answer_weights import load_unit_weights

        try:
            types = list(load_unit_weights().model_types)  # the types the weights were fitted with the term on
        except (OSError, ValueError):  # the composer falls back to the hand weights and traces why (compose_reply)
            pass
    if scorer == "cues" and types:
        return TypedAnswerModel(lambda: _trained_model(services), types)
    if scorer == "cues+bi-encoder":
        cache = services.__dict__.setdefault("_answer_models", {})
        if "bi-encoder" not in cache:
            cache["bi-encoder"] = BiEncoderAnswerModel(services.embedder)
        return cache["bi-encoder"]
    if scorer == "cues+cross-encoder" and language == "en":
        reranker = services.cross_encoder
        if reranker is None:
            raise FileNotFoundError("compose.answer_scorer=cues+cross-encoder but no cross-encoder model is available")
        return CrossEncoderAnswerModel(reranker)
    return None


# -- the trained scorer's units, embedded ahead of the question (stages.answer_units) ------------------------


def unit_texts(segments: Sequence[Any], room: int) -> list[str]:
    """Every text the answer-first composer can hand its model for these segments at ``room`` characters
    (``answer_candidates``: a segment's units and, for a list longer than the room, its pieces), once each."""
    return list(dict.fromkeys(text for seg in segments for _first, _last, text, _is_list in segment_pieces(seg, room)))


def warm_answer_units(services: Any) -> dict[str, Any] | None:
    """Embed the indexed segments' units the store lacks and save it. None when the trained scorer is not used, or
    the pipeline's encoder is not the scorer's (e5-onnx): then the scorer embeds its units on demand, as it loads
    e5-onnx only at the first question of its types; and an index of more than MAX_SEGMENTS (a benchmark corpus,
    not a card set) is left to the scorer's on-demand cache."""
    from chatbot.embedders import load_embedder
    from chatbot.stages.answer_trained import EMBEDDER
    from chatbot.stages.answer_units import MAX_SEGMENTS, UnitVectors, store_path, trained_scorer_used

    if not trained_scorer_used(services.settings) or services.settings.embedding.model != EMBEDDER:
        return None
    if services.index.count() > MAX_SEGMENTS:
        return None

    start = time.perf_counter()
    embedder = load_embedder(EMBEDDER, services.settings.embedding.threads)
    segments, _ = services.index.all_segments()
    texts = unit_texts(segments, services.settings.compose.max_chars)
    store = UnitVectors.load(store_path(services.data_dir, services.collection_name), embedder.name)
    before = len(store)
    embedded = store.warm(texts, embedder.embed_passages)
    if embedded or len(store) != before or not store.path.is_file():
        store.save()
    return {"units": len(store), "embedded": embedded, "seconds": round(time.perf_counter() - start, 1)}

"""A second look by the relevance gate across languages (safety.cross_language_gate): a question the classifier gate
refused, in a language whose answering card may sit only in another language (an Italian question over English
cards: e5 ranks every Italian card above it), is answered from the first document of the other-language pool
searched on its own (DenseRetriever.other_language) when

    logit(P) + slope * (cosine of that document - best cosine of the links) >= cut

with P the classifier gate's probability and the raw e5 cosines (detail["dense"]). (slope, cut) are fitted per
language on the spent dev sets, leave-one-set-out (python -m evaluation.redteam.cross_language_gate_fit,
evaluation/results/italian-english-cards-s10.md): an in-scope Italian question answered only by an English card
has an English document nearly as close as its best Italian link, an out-of-scope one does not."""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from chatbot.index import Hit
from chatbot.pipeline import RetrievalResult
from chatbot.stages.answer_pool import links_in, raw_cosine
from corpus.segmenter import passage_key


def mixed_view(result: RetrievalResult, other: Hit, top_n: int = 3, passages: Collection[str] = ()) -> RetrievalResult:
    """``result`` with ``other`` (an other-language document's best passage) linked first, then ``result``'s
    links without its document (``top_n`` links in all); the ranked documents are the view's links then the rest.
    ``passages``: the passage keys (``corpus.segmenter.passage_key``) of ``other``'s document; a document holding
    one of them is a copy of it and is dropped, its link taken by the next ranked document."""
    doc, keys = other.segment.doc_id, {passage_key(other.segment), *passages} - {""}

    def kept(h: Hit) -> bool:
        return h.segment.doc_id != doc and passage_key(h.segment) not in keys

    copies = sum(1 for h in result.top if h.segment.doc_id != doc and not kept(h))
    top = [other, *[h for h in result.top if kept(h)]]
    if copies:
        linked = {h.segment.doc_id for h in top}
        top += [h for h in result.ranked if h.segment.doc_id not in linked and kept(h)][:copies]
    top = top[: max(top_n, 1)]
    linked = {h.segment.doc_id for h in top}
    ranked = [*top, *[h for h in result.ranked if h.segment.doc_id not in linked and kept(h)]]
    return RetrievalResult(result.question, list(result.candidates), ranked, top)


def cross_language_score(probability: float, other_cosine: float, best_link_cosine: float, slope: float) -> float:
    """logit(P) + slope * (other - best link), P clipped to [1e-4, 1 - 1e-4]."""
    p = min(max(float(probability), 1e-4), 1.0 - 1e-4)
    return math.log(p / (1.0 - p)) + float(slope) * (float(other_cosine) - float(best_link_cosine))


def second_look(
    result: RetrievalResult,
    language: str,
    rules: Mapping[str, Sequence[float]],
    search: Callable[[int], Sequence[Hit]],
    probability: float | None,
    urgent: frozenset[str] | set[str] = frozenset(),
) -> tuple[Hit | None, dict[str, Any]]:
    """(the other-language document that makes the question answerable, or None; the trace). ``rules``:
    {language: (slope, cut)}; ``search(k)``: the best passages not in ``language``; ``probability``: the classifier
    gate's P. No second look without a rule for ``language``, without a probability, without links in
    ``language``, or when the pool's first document is an urgent card."""
    rule = rules.get(language)
    if rule is None or probability is None or not links_in(result.top, language):
        return None, {}
    other = next(iter(search(1)), None)  # the pool's first document, linked already or not
    if other is None or other.segment.doc_id in urgent:
        return None, {"cross_language": {"doc_id": None if other is None else other.segment.doc_id}}
    slope, cut = (float(x) for x in rule)
    score = cross_language_score(probability, raw_cosine(other), max(raw_cosine(h) for h in result.top), slope)
    passed = score >= cut
    trace = {"doc_id": other.segment.doc_id, "dense": round(raw_cosine(other), 4), "score": round(score, 4)}
    return (other if passed else None), {"cross_language": {**trace, "cut": cut, "relevant": passed}}


def rules_in_force(settings: Any, embedder: Any = None) -> Mapping[str, Sequence[float]]:
    """safety.cross_language_gate, except that a gate fitted for another configuration than the plain embedder's
    (the tuned query encoder on: ``relevance.gate_key``) brings the Italian rule fitted on its own P
    (gate.json ``second_look_it``); {} keeps the second look off whatever the gate. ``embedder``: as in gate_key."""
    from chatbot.stages.relevance import gate_key
    from chatbot.stages.relevance_gate import load_gate

    rules = settings.safety.cross_language_gate
    key = gate_key(settings, "it", embedder)  # the second look is fitted for Italian questions
    if not rules or key == settings.embedding.model:
        return rules
    try:
        model = load_gate(str(settings.safety.relevance_gate_model), key)
    except ValueError:  # no gate for this configuration: the threshold gate runs, and no second look follows it
        return rules
    return {**rules, "it": model.second_look_it} if model.second_look_it is not None else rules


def second_look_for(
    result: RetrievalResult, services: Any, language: str, relevance: Mapping[str, Any]
) -> tuple[Hit | None, dict[str, Any]]:
    """``second_look`` with the services' settings and other-language search; only after the classifier gate
    itself refused (not the threshold gate, not a fallback to it)."""
    from chatbot.stages.redflags import urgent_card_ids

    settings = services.settings
    rules = rules_in_force(settings, getattr(services, "embedder", None))
    if language not in rules or relevance.get("gate") != "classifier" or relevance.get("relevant"):
        return None, {}
    dense = getattr(services, "dense", None)
    if not hasattr(dense, "other_language"):
        return None, {}
    question = result.question
    return second_look(
        result,
        language,
        rules,
        lambda k: dense.other_language(question, language, k),
        relevance.get("probability"),
        urgent_card_ids(settings.safety.urgent_cards),
    )

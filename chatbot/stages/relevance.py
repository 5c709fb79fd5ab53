"""The "no certified information" gate: by default a small classifier over the pipeline's scores
(chatbot.stages.relevance_gate), or the best relevance score of the top documents against the threshold
measured for the embedder (or the cross-encoder); urgent cards kept out of the links as fillers."""

from __future__ import annotations

from typing import Any

from chatbot.index import Hit
from chatbot.pipeline import RetrievalResult, Services


def without_urgent_fillers(result: RetrievalResult, services: Services) -> list[Hit]:
    """The top documents without an urgent card ("call 999 now") as a filler link: an urgent card is linked
    only when it is the best match, or by the red-flag screen (urgent_links), never third on a coffee question."""
    from chatbot.stages.redflags import urgent_card_ids

    urgent = urgent_card_ids(services.settings.safety.urgent_cards)
    if not urgent or not any(h.segment.doc_id in urgent for h in result.top[1:]):
        return result.top
    kept = [h for i, h in enumerate(result.ranked) if i == 0 or h.segment.doc_id not in urgent]
    return kept[: services.settings.retrieval.top_n]


def raw_order_view(result: RetrievalResult, services: Services) -> RetrievalResult:
    """The result as the gate was fitted on it: when retrieval.cross_language_offset moved other-language
    passages up, the candidates in the bi-encoder's raw order (its top documents, without urgent fillers);
    otherwise ``result`` itself. The offset changes what is linked, not whether the question is answered."""
    from chatbot.stages.rerank import best_per_document

    if not any("cross_language_offset" in h.detail for h in getattr(result, "candidates", ())):
        return result
    raw = [Hit(h.segment, h.detail.get("dense", h.score), dict(h.detail)) for h in result.candidates]
    ranked = best_per_document(raw)
    view = RetrievalResult(result.question, raw, ranked, ranked[: services.settings.retrieval.top_n])
    view.top = without_urgent_fillers(view, services)
    return view


def relevance(
    top: list[Hit], services: Services, language: str = "en", positive: str | None = None
) -> tuple[str | None, float | None, float | None]:
    """(score name, best score among the top hits, threshold): the bi-encoder cosine (by default, also after
    a cross-encoder reranked: it separates answerable from off-topic questions better, see
    evaluation/results/redteam-thresholds-crossencoder.md), or the cross-encoder's score with
    safety.relevance_score=cross-encoder. Fused scores are relative to the candidate list, never a level."""
    safety = services.settings.safety
    # with safety.relevance_score=cross-encoder; a document found only past rerank.candidates has no score
    if safety.relevance_score == "cross-encoder" and top and "cross-encoder" in top[0].detail:
        best = max(h.detail["cross-encoder"] for h in top if "cross-encoder" in h.detail)
        return "cross-encoder", best, safety.min_relevance_cross_encoder
    table = safety.min_relevance_dense_it if language == "it" else safety.min_relevance_dense
    if positive is not None and top and all(f"term:{positive}" in h.detail for h in top):
        # an exclusion question is judged by its positive part: the excluded thing would only lower the score
        best = max(h.detail[f"term:{positive}"] for h in top)
        return "dense:positive", best, threshold_for(table, services, "safety.min_relevance")
    if top and all("dense" in h.detail for h in top):
        return "dense", max(h.detail["dense"] for h in top), threshold_for(table, services, "safety.min_relevance")
    return None, None, None


def threshold_for(table: dict[str, float], services: Services, name: str) -> float:
    """The threshold measured for the configured embedder (cosine scales differ between models)."""
    kind = services.settings.embedding.model
    if kind not in table:
        raise ValueError(f"{name} has no threshold for embedder {kind!r}; measure one (evaluation/redteam)")
    return table[kind]


def gate_key(settings: Any, language: str | None = None, embedder: Any = None) -> str:
    """The gate.json entry fitted for this configuration and question language: the embedder's name ("e5-onnx"),
    plus the tuned query encoder's tag when embedding.query_encoder is on for ``language``'s questions
    ("e5-onnx+query-encoder-<sha12>[it]"): the encoder changes the links and so the gate's features, so the gate
    fitted on its scores is used with it, never another one. A question the encoder skips (its language is not in
    query_encoder_languages) is retrieved as with the encoder off, and so judged by the plain embedder's gate.

    "auto" is decided as the pipeline decides it (``chatbot.query_encoder.setting_over``), on ``embedder``: the
    embedder retrieval runs with (``Services.embedder``). None: the one embedding.model builds, the same shared
    instance ``Services.embedder`` gets (``load_embedder``; only e5-onnx can be the encoder's base)."""
    from chatbot.query_encoder import encoder_tag, setting_over
    from chatbot.resources import workspace_root

    e = settings.embedding
    languages = e.query_encoder_languages or None
    if language is not None and languages is not None and language not in languages:
        return e.model
    setting = e.query_encoder
    if setting.strip().lower() == "auto" and embedder is None and e.model == "e5-onnx":
        from chatbot.embedders import load_embedder

        embedder = load_embedder(e.model, e.threads)
    tag = encoder_tag(setting_over(setting, embedder), workspace_root(), languages)
    return e.model if tag is None else f"{e.model}+{tag}"


def gate(
    question: str,
    result: RetrievalResult,
    services: Services,
    language: str = "en",
    positive: str | None = None,
    asked: str | None = None,
    memory: bool = True,
) -> tuple[bool, dict[str, Any]]:
    """(relevant, trace) for one answer: safety.relevance_gate=classifier decides on the features of
    chatbot.stages.relevance_gate (an embedder without a fitted classifier falls back to the threshold, and the
    trace says so), overruled by the label of a labelled question near ``asked`` (the patient's words; default
    ``question``) when safety.gate_memory is on and ``memory`` (chatbot.stages.gate_memory); threshold: ``relevance``
    against its threshold. The trace keeps the threshold's view (score, scorer, threshold) beside the classifier's
    (probability, features) and the memory's (verdict, nearest questions, what the classifier alone said)."""
    from chatbot.stages.relevance_gate import describe, load_gate

    safety = services.settings.safety
    result = raw_order_view(result, services)
    name, score, threshold = relevance(result.top, services, language, positive=positive)
    by_threshold = bool(result.top) and (score is None or threshold is None or score >= threshold)
    trace: dict[str, Any] = {
        "gate": "threshold",
        "score": None if score is None else round(score, 4),
        "scorer": name,
        "threshold": threshold,
    }
    if safety.relevance_gate == "threshold" or not result.top:
        return by_threshold, {**trace, "relevant": by_threshold}
    key = gate_key(services.settings, language, getattr(services, "embedder", None))
    try:
        model = load_gate(str(safety.relevance_gate_model), key)
    except ValueError as exc:
        if "has no relevance gate for embedder" not in str(exc):
            raise
        return by_threshold, {**trace, "relevant": by_threshold, "note": f"{exc}: threshold gate used"}
    if getattr(services, "cross_encoder", None) is None:  # fitted with the shipped cross-encoder's scores
        return by_threshold, {**trace, "relevant": by_threshold, "note": "no cross-encoder: threshold gate used"}
    features = classifier_features(question, result, services, language, positive)
    if features is None:
        return by_threshold, {**trace, "relevant": by_threshold, "note": "no bi-encoder scores: threshold gate"}
    trace["features"] = describe(features)
    p = model.probability(features)
    threshold_p = model.threshold_for(features)
    relevant = p >= threshold_p
    out = {
        **trace,
        "gate": "classifier",
        "gate_model": key,
        "probability": round(p, 4),
        "probability_threshold": threshold_p,
        "relevant": relevant,
    }
    documents = {h.segment.doc_id for h in result.ranked}
    judged = memory_judgement(asked or question, services, documents) if memory else None
    if judged is not None:
        out["memory"] = {**judged[1], "gate_relevant": relevant}
        if judged[0] is not None:
            relevant = out["relevant"] = judged[0]
    return relevant, out


def memory_judgement(
    text: str, services: Services, documents: set[str] | None = None
) -> tuple[bool | None, dict[str, Any]] | None:
    """chatbot.stages.gate_memory's verdict on one question (True / False / None: the gate decides) and its trace,
    or None when safety.gate_memory is off or built for another embedder. ``documents``: the retrieved documents
    (an in-scope labelled question counts only when one of its cards is among them)."""
    from chatbot.stages.gate_memory import question_cosines

    memory, cosines, why_not = question_cosines(text, services)
    if memory is None or cosines is None:  # off, or built with another build's vectors (the classifier decides)
        return None if why_not is None else (None, {"verdict": None, "note": why_not})
    return memory.verdict(cosines, documents)


_LEXICONS: dict[int, tuple[Any, Any]] = {}


def corpus_lexicon(services: Services) -> Any:
    """The lexicon (chatbot.stages.relevance_gate.Lexicon) of the services' index, built once per BM25 index
    (the BM25 retriever holds every segment already); None for services without an index."""
    from chatbot.stages.relevance_gate import lexicon_of

    bm25 = getattr(services, "bm25", None)
    if bm25 is None:
        return None
    cached = _LEXICONS.get(id(bm25))
    if cached is None or cached[0] is not bm25:
        cached = (bm25, lexicon_of(bm25.segments))
        _LEXICONS.clear()  # one live index per process is the rule; never hold an old one
        _LEXICONS[id(bm25)] = cached
    return cached[1]


def classifier_features(
    question: str, result: RetrievalResult, services: Services, language: str, positive: str | None = None
) -> dict[str, float] | None:
    """The classifier gate's features of one answer (chatbot.stages.relevance_gate.gate_features) with the
    services' cross-encoder and corpus lexicon."""
    from chatbot.stages.relevance_gate import gate_features

    cross_encoder = getattr(services, "cross_encoder", None)
    return gate_features(
        question, result.top, result.ranked, language, cross_encoder, positive, corpus_lexicon(services)
    )

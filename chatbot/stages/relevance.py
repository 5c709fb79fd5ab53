"""The "no certified information" gate: the best relevance score of the top documents against the threshold
measured for the embedder (or the cross-encoder), with urgent cards kept out of the links as fillers."""

from __future__ import annotations

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

"""Exclusion questions ranked as any question is, then the NOT terms applied (``logical.positive_source``
"pipeline"; issue 19).

The question's positive part ("Which foods are high in iron" of "... apart from red meat?") goes through the
configured pipeline (``retrieval.pipeline``: the same candidates, reranker, language policy and one hit per
document as a question without an exclusion), so an exclusion never makes the on-topic card lose to a card on
another subject. Then every NOT term is looked for in each document's hit (``exclusion.detect_mentions``:
lexical, stored sentence vectors, or the trained head) and, as the ``logical.mention_*`` knobs say, the score
is demoted (× ∏ (1 − weight · P)) and/or the NS-IR constraint puts the documents that violate no NOT first.
The reply itself never quotes a sentence that names the excluded thing (``Route.mentions_excluded``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from chatbot.index import Hit
from chatbot.logical import exclusion
from chatbot.logical.config import LogicalConfig
from chatbot.logical.query import Node, negative_terms, positive_terms
from chatbot.logical.scoring import candidate_vectors, stored_sentences
from chatbot.pipeline import RetrievalResult, Services, run_pipeline
from chatbot.stage_progress import timed

FALLBACK_PIPELINE = "dense+rerank"  # when retrieval.pipeline is itself an exclusion pipeline


def positive_text(query: Node, detected_positive: str | None) -> str:
    """What the configured pipeline ranks: the detector's positive part, else the query's positive terms."""
    text = (detected_positive or " ".join(positive_terms(query))).strip()
    if not text:
        raise ValueError("an exclusion question needs a positive part: nothing is left once the exclusions are cut")
    return text


def pipeline_then_exclude(
    question: str,
    query: Node,
    detected_positive: str | None,
    services: Services,
    config: LogicalConfig,
    knobs: exclusion.MentionKnobs,
    timings: dict[str, float],
) -> tuple[list[Hit], list[Hit], dict[str, Any]]:
    """(candidates, ranked documents, trace) for ``question``: the configured pipeline on its positive part,
    then the NOT terms' mentions demote or constrain the ranked documents."""
    name = services.settings.retrieval.pipeline
    name = FALLBACK_PIPELINE if name.startswith("logical") else name
    positive = positive_text(query, detected_positive)
    base: RetrievalResult = run_pipeline(name, positive, services)
    for stage, ms in base.timings_ms.items():
        timings[f"positive:{stage}"] = ms
    # the relevance gate judges an exclusion question by its positive part's cosine (``term:<positive>``)
    ranked = [
        Hit(
            h.segment, h.score, {**h.detail, f"term:{positive}": h.detail["dense"]} if "dense" in h.detail else h.detail
        )
        for h in base.ranked
    ]
    info: dict[str, Any] = {"positive_source": "pipeline", "positive_pipeline": name, "positive": positive}
    negs = negative_terms(query)
    titled = exclusion.titles_naming(query, ranked) if config.mention_title else {}
    info["titles_naming_excluded"] = titled
    if not (config.mention and negs and ranked):
        return base.candidates, exclusion.below_titled(ranked, titled), info
    vectors = dict(zip(negs, timed(timings, "embed_terms", lambda: services.embedder.embed_queries(negs)), strict=True))
    sentences = None
    if knobs.scorer in ("sentence", "sentence+lexical"):
        sentences, note = timed(timings, "sentence_vectors", lambda: stored_sentences(services, ranked))
        if note:
            info["mentions_note"] = note
        if sentences is None:
            knobs = replace(knobs, scorer="lexical")
    passages = candidate_vectors(services, ranked) if knobs.scorer in ("trained", "both") else None
    mentions = timed(
        timings, "mentions", lambda: exclusion.detect_mentions(query, ranked, knobs, vectors, passages, sentences)
    )
    # documents past rerank.candidates carry the first stage's score, another scale than the fused ones above them:
    # capped at the last rescored document's, so the demotion starts from the pipeline's own order
    base_scores = np.minimum.accumulate(np.array([h.score for h in ranked]))
    scores = exclusion.demote(base_scores, mentions, knobs.weight)
    order = np.argsort(-scores, kind="stable")
    out = [
        Hit(ranked[i].segment, float(scores[i]), {**ranked[i].detail, "positive_score": ranked[i].score}) for i in order
    ]
    if knobs.constraint:
        violation = mentions.violation()
        out = exclusion.constrain(
            out,
            exclusion.document_violation(ranked, violation),
            {h.segment.id: True for h in ranked},  # the pipeline ranked them for the positive part
        )
    out = exclusion.below_titled(out, titled)
    shown = out[: config.trace_top]
    info["mentions"] = exclusion.trace(mentions, shown, {h.segment.id: i for i, h in enumerate(ranked)})
    info["final_scores"] = {h.segment.id: round(h.score, 6) for h in shown}
    info["positive_scores"] = {h.segment.id: round(h.detail["positive_score"], 6) for h in shown}
    # per term, for the shown hits: the positive part's cosine, each NOT term's P(mention)
    index_of = {h.segment.id: i for i, h in enumerate(ranked)}
    info["term_scores"] = {
        positive: {h.segment.id: round(float(h.detail.get(f"term:{positive}", np.nan)), 4) for h in shown},
        **{t: {h.segment.id: round(float(mentions.probs[t][index_of[h.segment.id]]), 4) for h in shown} for t in negs},
    }
    return base.candidates, out, info

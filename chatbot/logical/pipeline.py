"""The ``logical`` pipeline: exclusion-style questions are decomposed into a logical query (ITLR) and
ranked by composed term scores; every other question takes the ``naive`` pipeline unchanged.

1. Route: the deterministic detector (``detect.analyse``) decides. No logical structure → ``naive``.
2. Query: the detector's, or (``query_source`` "auto"/"llm" and a working ``services.llm``) the LLM's,
   validated by the parser and repaired or replaced by the detector's.
3. Candidates: dense top-``per_term_k`` (20) for every POSITIVE term, union. With ``hydoc_terms`` (HyDE per
   term, variant ``logical-hyde``) a positive term's vector is that of a zero-shot HyDoc written with the
   term as the question (averaged with the term's own vector when ``hyde.average_question``, cached like
   every HyDoc), for gathering and for scoring that term; a term whose HyDoc fails keeps its bare vector.
4. Term scores: cosine of every distinct term against every candidate (stored segment vectors); a negated
   term's vector is first orthogonalised against the positive terms (``orthogonal_not``), so "NOT the
   trial scene" penalises the trial, not the novel both terms share.
5. Composition: fuzzy operators (ITLR) on raw or calibrated cosines, or the exact probability (OrLog).
6. Final order (``final``):
   - ``rerank-terms`` (default): each positive term's cosine is replaced by the reranker's score of the
     segment against that term (normalised to [0, 1]); the same tree composes it with the NOT penalties
     on the cosines, so reranking sharpens relevance without undoing the exclusion;
   - ``composed``: the composed score only;
   - ``rerank``: rerank the positive text and ignore the penalties (shows what an ordinary rerank undoes).
   Opt-in (``question_ce_weight`` > 0, not with ``rerank``): ``question_rescore`` adds the reranker's score of
   the WHOLE question on the composed top ``question_ce_top``.
7. Optional OrLog predicate plausibility (``term_scorer`` "llm-logprob"): the top ``llm_candidates``
   segments of that order are rescored with every term's P(True) from one 1-token LLM completion each
   (``plausibility.py``), composed over the same tree (the exact probability in probabilistic mode) and
   reordered by it (ties keep the previous order); the other candidates follow unchanged. A pair without a
   plausibility keeps its embedding value and is counted in the trace.
8. Optional cross-encoder term scores (``term_scorer`` "cross-encoder"): the top ``ce_candidates`` segments
   of the composed embedding order are rescored with the shipped cross-encoder (the rerank stage's model),
   one (term, segment) pair per term and segment, the term in the question slot and the segment in the
   passage slot as the reranker's ``score`` reads them; its sigmoid scores (0-1; ranking scores, not
   calibrated probabilities: models/reranker/README.md) are the term values of the same tree (fuzzy or
   exact probability) and the composed score orders them. Candidates beyond
   ``ce_candidates`` follow in the embedding order (as OrLog's tail). The rerank stage (``final``) is then
   skipped: scoring the whole question would undo the negation, and ``rerank-terms`` would only rescore
   the positive terms the cross-encoder has just scored. The CE reads English only
   (``rerank.cross_encoder_languages``) and may be missing: then the embedding path runs and the trace says why.
9. Documents: best segment plus ``second_segment_weight`` × the second-best segment of the same document.

Configuration: the ``logical.*`` settings, as a typed ``LogicalConfig`` (``config.config_for``); no module
state. Named variants (``config.VARIANTS``: ``logical-prob``, ``logical-minmax``, ``logical-orlog``, ...) apply
their changes on top and are registered here, so each is one pipeline name for ``chatbot eval retrieval
--pipeline``. The parts: ``hydoc_terms`` (step 3's HyDoc vectors), ``scoring`` (steps 4-6 and 9), ``rescore``
(steps 7-8).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from chatbot.index import Hit
from chatbot.logical import aboutness, exclusion
from chatbot.logical.compose import calibration_for
from chatbot.logical.config import VARIANTS, LogicalConfig, config_for
from chatbot.logical.detect import Detection, analyse
from chatbot.logical.hydoc_terms import hydoc_term_vectors
from chatbot.logical.positive_scores import other_language_hits, positive_rerankers, term_scores
from chatbot.logical.query import Node, negative_terms, positive_terms, terms, to_string
from chatbot.logical.question_rescore import question_rescore
from chatbot.logical.rescore import cross_encoder_rescore, plausibility_rescore, term_cross_encoder
from chatbot.logical.scoring import (
    aggregate_documents,
    candidate_vectors,
    combine,
    orthogonal_negations,
    stored_sentences,
    term_values,
)
from chatbot.pipeline import RetrievalResult, Services, naive_pipeline, optional_llm, register_pipeline
from chatbot.stage_progress import timed


def _llm_of(services: Services) -> Any | None:
    llm = optional_llm(services)
    return llm if llm is not None and callable(getattr(llm, "complete", None)) else None


def build_query(question: str, services: Services, config: LogicalConfig) -> tuple[Detection | None, Node | None, dict]:
    """(detection, query, info). The detector routes; the LLM (if chosen and present) writes the query."""
    detection = analyse(question, learned=services.settings.retrieval.learned_exclusions)
    if detection is None:
        return None, None, {"source": "none"}
    if config.query_source in ("auto", "llm"):
        llm = _llm_of(services)
        if llm is not None:
            from chatbot.logical.llm import llm_query

            query, info = llm_query(question, llm, detection)
            return detection, query, info
        if config.query_source == "llm":
            return detection, detection.query, {"source": "detector", "error": "services has no working llm"}
    return detection, detection.query, {"source": "detector"}


def logical_retrieve(question: str, services: Services, config: LogicalConfig | None = None) -> RetrievalResult:
    """``question`` ranked by the logical route (steps 1-9 above), or the naive pipeline when nothing is excluded."""
    config = config or config_for(services.settings)
    timings: dict[str, float] = {}
    detection, query, source_info = timed(timings, "logical_query", lambda: build_query(question, services, config))
    if query is None:
        result = naive_pipeline(question, services)
        result.info["logical"] = {"route": "naive", "reason": "no logical structure detected"}
        return result

    settings = services.settings
    if config.positive_source == "pipeline":  # the positive part ranked as any question, then the NOTs
        from chatbot.logical.positive_pipeline import pipeline_then_exclude

        positive = detection.positive if detection else None
        cands, ranked, extra = pipeline_then_exclude(
            question, query, positive, services, config, config.mention_knobs(), timings
        )
        info = {"route": "logical", "query": to_string(query), "query_source": source_info, **extra}
        info["detection"] = None if detection is None else {"negatives": list(detection.negatives)}
        return RetrievalResult(question, cands, ranked, ranked[: settings.retrieval.top_n], timings, {"logical": info})
    names = terms(query)
    positives = positive_terms(query) or names
    term_vecs = timed(timings, "embed_terms", lambda: services.embedder.embed_queries(names))
    hydoc_info: dict[str, Any] | None = None
    if config.hydoc_terms:
        # Before gathering: the HyDoc vector gathers that term's candidates and scores it (cosines below,
        # and the fusion reranker's dense part in rerank-terms); the reranker still reads the term's text.
        term_vecs, hydoc_info = timed(
            timings, "hydoc_terms", lambda: hydoc_term_vectors(positives, names, term_vecs, services, timings)
        )

    language = detection.language if detection else "en"

    def gather() -> list[Hit]:
        vectors = term_vecs[[names.index(t) for t in positives]]
        if config.include_question:
            vectors = np.vstack([vectors, services.embedder.embed_queries([question])])
        rows = services.index.search_vectors(vectors, config.per_term_k)
        union: dict[str, Hit] = {}
        for row in rows:
            for h in row:
                h.detail["dense"] = h.score
                if h.segment.id not in union or h.score > union[h.segment.id].score:
                    union[h.segment.id] = h
        for h in other_language_hits(services, positives, language, config.other_language_k):
            union.setdefault(h.segment.id, h)  # term cosines are recomputed from the stored vectors below
        return list(union.values())

    candidates = timed(timings, "retrieve", gather)
    logical_info: dict[str, Any] = {"route": "logical", "query": to_string(query), "query_source": source_info}
    if hydoc_info is not None:
        logical_info["hydoc_terms"] = hydoc_info
    if not candidates:
        return RetrievalResult(question, [], [], [], timings, {"logical": logical_info})

    stored: dict[str, np.ndarray] = {}

    def cosine_scores() -> dict[str, np.ndarray]:
        cand_vecs = stored["candidates"] = candidate_vectors(services, candidates)
        vecs = orthogonal_negations(query, names, term_vecs) if config.orthogonal_not else term_vecs
        sims = np.asarray(cand_vecs, dtype=np.float64) @ np.asarray(vecs, dtype=np.float64).T
        return {t: sims[:, j] for j, t in enumerate(names)}

    cosines = timed(timings, "term_scores", cosine_scores)
    cross_encoder, ce_note = None, None
    if config.term_scorer == "cross-encoder":
        cross_encoder, ce_note = term_cross_encoder(services, detection.language if detection else "en")
    calibration = config.calibration
    if calibration is None and (config.mode == "probabilistic" or config.calibrate):
        calibration = calibration_for(services.embedder.name)
    embedding_config = config
    if cross_encoder is not None and calibration is None and (config.mode == "probabilistic" or config.calibrate):
        # The CE's probabilities need no calibration; only the preliminary embedding order (which picks the
        # ce_candidates and orders any tail) does, and this embedder has none: raw cosines, fuzzy operators.
        embedding_config = replace(config, mode="fuzzy", calibrate=False)
        ce_note = "no calibration for this embedder: the preliminary order composes raw cosines (fuzzy)"
    values = term_values(cosines, embedding_config, calibration)
    if config.not_listed_discount or config.not_about_boost:  # a passage that only lists a NOT term vs one about it
        about = timed(timings, "aboutness", lambda: aboutness.configured(query, candidates, values, config, detection))
        values, logical_info["aboutness"] = about
    composed = timed(timings, "compose", lambda: combine(query, values, embedding_config))

    final = composed
    rerank_scores: dict[str, np.ndarray] = {}
    # With cross-encoder term scores the rerank stage is skipped (final order = the composed CE order):
    # reranking against the whole question would undo the negation (the CE rewards the excluded thing the
    # question names), and rerank-terms would rescore the positive terms the CE has just scored.
    # the reranker the product uses for this question's language, or logical.positive_rerankers' models
    rerankers = positive_rerankers(services, question, language, config) if cross_encoder is None else []
    final_mode = config.final if rerankers else "composed"
    if final_mode != "composed":

        def rerank() -> np.ndarray:
            for t in positives:
                sims = cosines[t]
                hits = [Hit(h.segment, float(c), {"dense": float(c)}) for h, c in zip(candidates, sims, strict=True)]
                k = settings.rerank.rrf_k if config.positive_rrf else 0
                # as the product's rerank stage: the CE's order fused with the term's dense order (rerank.rrf_k)
                text = question if config.positive_text == "question" else t
                rerank_scores[t] = term_scores(text, hits, sims, rerankers, k)
            if final_mode == "rerank":  # ignores the exclusions: for comparison only
                return np.mean([rerank_scores[t] for t in positives], axis=0)
            return combine(query, {**values, **rerank_scores}, config)

        final = timed(timings, "rerank", rerank)

    if config.question_ce_weight and rerankers and final_mode != "rerank":  # the whole question on the top k
        args = (question, candidates, final, rerankers[0], config.question_ce_weight, config.question_ce_top)
        final = timed(timings, "question_rescore", lambda: question_rescore(*args))
    mentions = None
    sentence_note = None
    if config.mention and negative_terms(query) and final_mode != "rerank":  # rerank ignores the exclusions
        mention_knobs = config.mention_knobs()
        vecs = {t: term_vecs[names.index(t)] for t in negative_terms(query)}
        sentences = None
        if mention_knobs.scorer in ("sentence", "sentence+lexical"):
            sentences, sentence_note = timed(
                timings, "sentence_vectors", lambda: stored_sentences(services, candidates)
            )
            if mention_knobs.sentence_orth:
                orth = orthogonal_negations(query, names, term_vecs)
                vecs = {t: orth[names.index(t)] for t in negative_terms(query)}
            if sentences is None:  # no sentence store: the lexical evidence alone, and the trace says why
                mention_knobs = replace(mention_knobs, scorer="lexical")
        mentions = timed(
            timings,
            "mentions",
            lambda: exclusion.detect_mentions(query, candidates, mention_knobs, vecs, stored["candidates"], sentences),
        )
        final = exclusion.demote(final, mentions, config.mention_weight)
    order = np.argsort(-final, kind="stable")
    n_llm = n_ce = 0
    plausibility_info: dict[str, Any] | None = None
    llm_probs: dict[str, dict[int, float]] = {}
    ce_info: dict[str, Any] | None = None
    ce_probs: dict[str, dict[int, float]] = {}
    if config.term_scorer == "llm-logprob":
        order, final, n_llm, plausibility_info, llm_probs = timed(
            timings,
            "plausibility",
            lambda: plausibility_rescore(query, names, candidates, order, final, values, services, config),
        )
    elif config.term_scorer == "cross-encoder":
        if cross_encoder is None:
            ce_info = {"scorer": "cross-encoder", "fallback": f"{ce_note}; embedding term scores used"}
        else:
            order, final, n_ce, ce_info, ce_probs = timed(
                timings,
                "ce_term_scores",
                lambda: cross_encoder_rescore(query, names, candidates, order, final, cross_encoder, config),
            )
            if ce_note:
                ce_info["note"] = ce_note
    n_head = n_llm or n_ce
    scored = [
        Hit(
            candidates[i].segment,
            float(final[i]),
            {
                **candidates[i].detail,
                "composed": float(composed[i]),
                **{f"term:{t}": float(cosines[t][i]) for t in names},
                **{f"rerank:{t}": float(s[i]) for t, s in rerank_scores.items()},
                **({f"llm:{t}": _finite_or_none(llm_probs[t].get(i)) for t in names} if n_llm else {}),
                **({f"ce:{t}": float(ce_probs[t][i]) for t in names if i in ce_probs[t]} if n_ce else {}),
            },
        )
        for i in order
    ]
    if n_head:  # the LLM- or CE-rescored candidates stay ahead of the others (OrLog reranks only its top-k)
        head = aggregate_documents(scored[:n_head], config.second_segment_weight)
        seen = {h.segment.doc_id for h in head}
        tail = aggregate_documents(scored[n_head:], config.second_segment_weight)
        ranked = head + [h for h in tail if h.segment.doc_id not in seen]
    else:
        ranked = aggregate_documents(scored, config.second_segment_weight)
    if mentions is not None and config.mention_constraint:
        ok = exclusion.positive_ok(query, {**values, **rerank_scores}, config.mention_positive_min)
        violation = mentions.violation()
        ranked = exclusion.constrain(
            ranked,
            exclusion.document_violation(candidates, violation),
            {h.segment.id: bool(v) for h, v in zip(candidates, ok, strict=True)},
        )
    titled = exclusion.titles_naming(query, ranked) if config.mention_title else {}
    ranked = exclusion.below_titled(ranked, titled)
    top = ranked[: settings.retrieval.top_n]
    shown = ranked[: config.trace_top]
    logical_info.update(
        {
            "detection": None
            if detection is None
            else {
                "positive": detection.positive,
                "negatives": list(detection.negatives),
                "cues": list(detection.cues),
                "language": detection.language,
            },
            "mode": config.mode,
            "operators": config.ops.label(),
            "calibration": None if calibration is None else {"tau": calibration.tau, "lam": calibration.lam},
            "final": final_mode,
            "positive_scorers": [getattr(getattr(r, "model_path", None), "name", None) or r.name for r in rerankers],
            "orthogonal_not": config.orthogonal_not,
            "include_question": config.include_question,
            "second_segment_weight": config.second_segment_weight,
            "candidates": len(candidates),
            "term_scores": {t: {h.segment.id: round(h.detail[f"term:{t}"], 4) for h in shown} for t in names},
            "composed": {h.segment.id: round(h.detail["composed"], 4) for h in shown},
            "final_scores": {h.segment.id: round(h.score, 4) for h in shown},
            "titles_naming_excluded": titled,
            "term_scorer": config.term_scorer,
        }
    )
    if plausibility_info is not None:
        plausibility_info["p_true"] = {
            t: {h.segment.id: h.detail.get(f"llm:{t}") for h in shown if f"llm:{t}" in h.detail} for t in names
        }
        logical_info["plausibility"] = plausibility_info
    if mentions is not None:
        logical_info["mentions"] = exclusion.trace(mentions, shown, {h.segment.id: i for i, h in enumerate(candidates)})
        logical_info["mention_weight"] = config.mention_weight  # 0: traced, not ranked on
        if sentence_note:
            logical_info["mentions_note"] = sentence_note
    if ce_info is not None:
        if n_ce:
            ce_info["scores"] = {
                t: {h.segment.id: round(h.detail[f"ce:{t}"], 4) for h in shown if f"ce:{t}" in h.detail} for t in names
            }
        logical_info["cross_encoder"] = ce_info
    return RetrievalResult(question, candidates, ranked, top, timings, {"logical": logical_info})


def _finite_or_none(value: float | None) -> float | None:
    return None if value is None or not np.isfinite(value) else round(float(value), 4)


@register_pipeline("logical")
def logical_pipeline(question: str, services: Services) -> RetrievalResult:
    """Exclusion-style questions → logical query and composed scores; all others → naive, unchanged."""
    return logical_retrieve(question, services, config_for(services.settings))


def _variant(changes: dict[str, Any]):
    def run(question: str, services: Services) -> RetrievalResult:
        return logical_retrieve(question, services, config_for(services.settings, **changes))

    return run


for _name, _changes in VARIANTS.items():
    register_pipeline(_name)(_variant(_changes))

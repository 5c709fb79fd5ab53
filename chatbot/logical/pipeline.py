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

Configuration: the ``logical.*`` settings, as a typed ``LogicalConfig`` (``config_for``); no module state.
Named variants (``VARIANTS``: ``logical-prob``,
``logical-minmax``, ``logical-orlog``, ...) apply their changes on top, so each is one pipeline name for
``chatbot eval retrieval --pipeline``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from chatbot.index import Hit
from chatbot.logical import exclusion
from chatbot.logical.compose import (
    DEFAULT_OPERATORS,
    Calibration,
    Operators,
    calibration_for,
    compose,
    exact_probability,
)
from chatbot.logical.detect import Detection, analyse
from chatbot.logical.query import Node, negative_terms, positive_terms, terms, to_string
from chatbot.pipeline import RetrievalResult, Services, naive_pipeline, register_pipeline, timed
from chatbot.stages.rerank import best_per_document
from corpus.segmenter import embedding_text

FINAL_MODES = ("rerank-terms", "composed", "rerank")
TERM_SCORERS = ("embedding", "llm-logprob", "cross-encoder")


@dataclass
class LogicalConfig:
    """The pipeline's knobs, typed and validated; built from the ``logical.*`` settings by ``config_for``
    (tests and benchmarks may build one directly, e.g. with a fitted ``calibration``)."""

    ops: Operators = DEFAULT_OPERATORS
    mode: str = "fuzzy"  # fuzzy | probabilistic
    calibrate: bool = False  # fuzzy mode on calibrated term scores (probabilistic always calibrates)
    calibration: Calibration | None = None  # None: the fitted one for the embedder (calibration.json)
    final: str = "rerank-terms"
    # final, per_term_k, orthogonal_not and second_segment_weight were chosen on NegConstraint's TRAIN split
    # (`python -m evaluation.bench_logical select`, evaluation/results/logical-negconstraint-selection.md);
    # reports quote the test split only.
    per_term_k: int = 20  # dense candidates per positive term (union)
    include_question: bool = False  # also gather the whole question's dense top-k as candidates
    orthogonal_not: bool = True  # negated terms scored with their vector orthogonalised to the positives
    second_segment_weight: float = 1.0  # document score = best segment + w · second-best segment (0: best only)
    query_source: str = "detector"  # detector | auto (LLM when services.llm works) | llm
    trace_top: int = 10  # candidates whose per-term scores go into RetrievalResult.info
    # embedding | llm-logprob (OrLog predicate plausibility on the top candidates) | cross-encoder
    term_scorer: str = "embedding"
    llm_candidates: int = 20  # llm-logprob: segments rescored by the LLM
    llm_max_chars: int = 600  # llm-logprob: passage length in the prompt
    # cross-encoder: segments whose terms the CE scores. Its own knob, not llm_candidates: a CE pair costs
    # ~40 ms on one core (int8) against ~10 s for an LLM call; 50 = rerank.candidates (the rerank stage's
    # budget per question) and covers the whole union of two positive terms' dense top-20.
    ce_candidates: int = 50
    # HyDE per positive term: the term's vector = its zero-shot HyDoc's (averaged with the term's as hyde does),
    # for gathering and scoring; one LLM call per positive term on a cache miss (``hydoc_term_vectors``).
    hydoc_terms: bool = False
    # Sentence-level mentions of NOT terms (chatbot/logical/exclusion.py, mention.py); chosen on NegConstraint's
    # TRAIN split (`python -m evaluation.bench_negation select`, evaluation/results/logical-negation-selection.md):
    # a light demotion of passages that hold most of a NOT term's words in one sentence; no constraint.
    mention: bool = True
    mention_beta: float = 1000.0
    mention_tau_entity: float = 0.7
    mention_tau_concept: float = 0.7
    mention_lam: float = 12.0
    mention_weight: float = 0.1
    mention_constraint: bool = False
    mention_positive_min: float = 0.0
    mention_drop_shared: bool = False

    def __post_init__(self) -> None:
        if self.mode not in ("fuzzy", "probabilistic"):
            raise ValueError(f"mode {self.mode!r}: fuzzy or probabilistic")
        if self.final not in FINAL_MODES:
            raise ValueError(f"final {self.final!r}: one of {FINAL_MODES}")
        if self.query_source not in ("detector", "auto", "llm"):
            raise ValueError(f"query_source {self.query_source!r}: detector, auto or llm")
        if self.term_scorer not in TERM_SCORERS:
            raise ValueError(f"term_scorer {self.term_scorer!r}: one of {TERM_SCORERS}")
        if self.ce_candidates < 1:
            raise ValueError(f"ce_candidates {self.ce_candidates}: at least 1")


# Settings fields copied as they are; and_op/or_op/not_op build ``ops``.
_SETTING_FIELDS = (
    "mode",
    "calibrate",
    "term_scorer",
    "llm_candidates",
    "llm_max_chars",
    "ce_candidates",
    "hydoc_terms",
    "mention",
    "mention_beta",
    "mention_tau_entity",
    "mention_tau_concept",
    "mention_lam",
    "mention_weight",
    "mention_constraint",
    "mention_positive_min",
    "mention_drop_shared",
    "final",
    "per_term_k",
    "include_question",
    "orthogonal_not",
    "second_segment_weight",
    "query_source",
    "trace_top",
)


def config_for(settings: Any, **changes: Any) -> LogicalConfig:
    """The ``logical.*`` settings as a ``LogicalConfig`` (``changes`` on top, e.g. a named variant's)."""
    group = settings.logical
    fields: dict[str, Any] = {k: getattr(group, k) for k in _SETTING_FIELDS}
    fields["ops"] = Operators(group.and_op, group.or_op, group.not_op)
    return LogicalConfig(**{**fields, **changes})


def knobs(config: LogicalConfig) -> exclusion.MentionKnobs:
    """The mention knobs of ``config``."""
    return exclusion.MentionKnobs(
        config.mention_beta,
        config.mention_tau_entity,
        config.mention_tau_concept,
        config.mention_lam,
        config.mention_weight,
        config.mention_constraint,
        config.mention_positive_min,
        config.mention_drop_shared,
    )


def _llm_of(services: Services) -> Any | None:
    try:
        llm = getattr(services, "llm", None)
    except Exception:  # a property that cannot build its client
        return None
    return llm if llm is not None and callable(getattr(llm, "complete", None)) else None


def build_query(question: str, services: Services, config: LogicalConfig) -> tuple[Detection | None, Node | None, dict]:
    """(detection, query, info). The detector routes; the LLM (if chosen and present) writes the query."""
    detection = analyse(question)
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


# LLM faults after which the other terms of the question skip the LLM: it would fail (or make the patient
# wait timeout_s) again.
_DEAD_LLM = ("down", "timeout", "not-installed")


def hydoc_term_vectors(
    terms_: list[str], names: list[str], term_vecs: np.ndarray, services: Services, timings: dict[str, float]
) -> tuple[np.ndarray, dict[str, Any]]:
    """(term vectors, trace) with every term of ``terms_`` (the POSITIVE terms) replaced by its HyDoc vector.

    Each term is the "question" of the hyde pipeline's zero-shot HyDoc (``hydoc.generate_zero_shot``, prompt
    hyde_zero_shot, ``hyde.*`` options), cached under ``hydoc_cache.cache_key_for("hyde", term)`` (the hyde
    pipeline would reuse it for that text, and a repeated term costs no LLM call), and encoded by
    ``hyde.encode``: the HyDoc's passage embedding, averaged with the term's own query vector (from
    ``term_vecs``, not re-embedded) when ``hyde.average_question``. On any LLM fault (down, timeout, error,
    garbage) the term keeps its bare vector and its trace entry says why (``fallback``: to "term", kind,
    reason, as the hyde pipeline records its fallbacks); a fallback is not cached. After a down / timeout
    fault the remaining terms do not call the LLM again.

    NOT terms get no HyDoc (the caller passes only the positive ones): a negated term only has to penalise
    what is specific to the excluded thing, which its bare vector already names (and the orthogonal NOT
    keeps only that part); a HyDoc written about the excluded topic drifts towards the context it shares with
    the positive topic (a passage on "bone health" talks about vitamin D and calcium), so its penalty would
    fall on the documents we want; and it would double the LLM cost of a one-positive question. Not measured.
    """
    from chatbot.stages import hyde, hydoc, hydoc_cache

    cfg = services.settings.hyde
    cache = hydoc_cache.cache_for(services)
    vecs = np.asarray(term_vecs, dtype=np.float32).copy()
    out: dict[str, Any] = {}
    llm: Any = None
    dead: dict[str, str] | None = None
    calls = 0
    for t in terms_:
        j = names.index(t)
        key = hydoc_cache.cache_key_for("hyde", t, services)
        cached = cache.get(key) if cache else None
        entry: dict[str, Any] = {"cache": "hit" if cached else "miss" if cache else "off", "hydoc": None}
        out[t] = entry
        if cached:
            gen = hydoc.Generation(cached["hydocs"])
        elif dead is not None:
            entry["fallback"] = {"to": "term", **dead, "reason": f"LLM {dead['kind']} for an earlier term: not asked"}
            continue
        else:
            try:
                if llm is None:
                    llm = services.llm
                    hydoc.prestart(llm, timings)
                step: dict[str, float] = {}
                try:
                    gen = hydoc.run_llm(step, lambda t=t, llm=llm: hydoc.generate_zero_shot(t, llm, cfg))
                finally:
                    timings["llm"] = timings.get("llm", 0.0) + step.get("llm", 0.0)
            except Exception as exc:  # LLMUnavailable, GarbageOutput, or anything a client raises
                entry["fallback"] = {"to": "term", **hydoc.fault(exc)}
                if entry["fallback"]["kind"] in _DEAD_LLM:
                    dead = {"kind": entry["fallback"]["kind"]}
                calls += 1
                continue
            calls += len(gen.calls)
            hydoc.llm_ms(timings, gen)
            if cache:
                cache.put(key, {"hydocs": gen.hydocs})
        vecs[j] = hyde.encode(t, gen.hydocs, services.embedder, cfg.average_question, vecs[j])
        entry["hydoc"] = gen.hydocs[0]
        if len(gen.hydocs) > 1:
            entry["hydocs"] = gen.hydocs
    trace = {
        "average_question": cfg.average_question,
        "llm_calls": calls,
        "fallbacks": sum(1 for e in out.values() if e.get("fallback")),
        "terms": out,
    }
    return vecs, trace


def candidate_vectors(services: Services, hits: list[Hit]) -> np.ndarray:
    """Stored vectors of the candidates' segments (re-embedded when the store cannot return them)."""
    ids = [h.segment.id for h in hits]
    try:
        got = services.index.collection().get(ids=ids, include=["embeddings"])
        by_id = {sid: np.asarray(v, dtype=np.float32) for sid, v in zip(got["ids"], got["embeddings"], strict=True)}
        if all(sid in by_id for sid in ids):
            return np.vstack([by_id[sid] for sid in ids]) if ids else np.zeros((0, services.embedder.dim))
    except Exception:
        pass
    return services.embedder.embed_passages([embedding_text(h.segment) for h in hits])


def _normalise_rerank(scores: np.ndarray, reranker: Any) -> np.ndarray:
    scores = np.asarray(scores, dtype=np.float64)
    if getattr(reranker, "name", "") == "cross-encoder":
        return 1.0 / (1.0 + np.exp(-scores))
    lo, hi = float(scores.min()), float(scores.max())
    return np.ones_like(scores) if hi - lo < 1e-12 else (scores - lo) / (hi - lo)


def orthogonal_negations(query: Node, names: list[str], term_vecs: np.ndarray) -> np.ndarray:
    """Term vectors where every only-negated term is projected onto the orthogonal complement of the
    positive terms' span (Widdows' orthogonal negation) and renormalised: "NOT bone health" then
    penalises what is specific to bone health, not the vitamin-D topic it shares with the positive term."""
    vecs = np.asarray(term_vecs, dtype=np.float64).copy()
    basis: list[np.ndarray] = []
    for t in positive_terms(query):
        v = vecs[names.index(t)].copy()
        for q in basis:
            v -= (v @ q) * q
        if np.linalg.norm(v) > 1e-9:
            basis.append(v / np.linalg.norm(v))
    for t in negative_terms(query):
        v = vecs[names.index(t)].copy()
        for q in basis:
            v -= (v @ q) * q
        norm = np.linalg.norm(v)
        vecs[names.index(t)] = v / norm if norm > 1e-9 else vecs[names.index(t)]
    return vecs


def aggregate_documents(scored: list[Hit], second_weight: float) -> list[Hit]:
    """One hit per document (its best segment). With ``second_weight`` > 0 the document's score adds that
    share of its second-best segment's score: a document whose several segments satisfy the query (e.g. one
    segment per positive entity) outranks one that matches with a single segment."""
    if second_weight <= 0:
        return best_per_document(scored)
    by_doc: dict[str, list[Hit]] = {}
    for h in sorted(scored, key=lambda h: -h.score):
        by_doc.setdefault(h.segment.doc_id, []).append(h)
    out = []
    for hits in by_doc.values():
        best = hits[0]
        score = best.score + (second_weight * hits[1].score if len(hits) > 1 else 0.0)
        out.append(Hit(best.segment, float(score), {**best.detail, "segment_score": best.score}))
    return sorted(out, key=lambda h: -h.score)


def term_values(cosines: dict[str, np.ndarray], config: LogicalConfig, calibration: Calibration | None) -> dict:
    """The per-term values the composition reads: raw cosines, or calibrated ones (probabilistic mode
    always calibrates)."""
    if config.mode == "probabilistic" or config.calibrate:
        if calibration is None:
            raise ValueError(
                "no calibration is fitted for this embedder: fit one with "
                "`python -m chatbot.logical.calibrate --data FOLDER`"
            )
        return {t: calibration(s) for t, s in cosines.items()}
    return dict(cosines)


def combine(query: Node, values: dict[str, np.ndarray], config: LogicalConfig) -> np.ndarray:
    """Fuzzy composition (ITLR operators) or exact probability (OrLog) of the per-term values."""
    if config.mode == "probabilistic":
        return exact_probability(query, values)
    return compose(query, values, config.ops)


def logical_retrieve(question: str, services: Services, config: LogicalConfig | None = None) -> RetrievalResult:
    config = config or config_for(services.settings)
    timings: dict[str, float] = {}
    detection, query, source_info = timed(timings, "logical_query", lambda: build_query(question, services, config))
    if query is None:
        result = naive_pipeline(question, services)
        result.info["logical"] = {"route": "naive", "reason": "no logical structure detected"}
        return result

    settings = services.settings
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
        return list(union.values())

    candidates = timed(timings, "retrieve", gather)
    logical_info: dict[str, Any] = {"route": "logical", "query": to_string(query), "query_source": source_info}
    if hydoc_info is not None:
        logical_info["hydoc_terms"] = hydoc_info
    if not candidates:
        return RetrievalResult(question, [], [], [], timings, {"logical": logical_info})

    def cosine_scores() -> dict[str, np.ndarray]:
        cand_vecs = candidate_vectors(services, candidates)
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
    composed = timed(timings, "compose", lambda: combine(query, values, embedding_config))

    final = composed
    rerank_scores: dict[str, np.ndarray] = {}
    # With cross-encoder term scores the rerank stage is skipped (final order = the composed CE order):
    # reranking against the whole question would undo the negation (the CE rewards the excluded thing the
    # question names), and rerank-terms would rescore the positive terms the CE has just scored.
    reranker = services.reranker if cross_encoder is None else None
    final_mode = config.final if reranker is not None else "composed"
    if final_mode != "composed":

        def rerank() -> np.ndarray:
            for t in positives:
                sims = cosines[t]
                hits = [Hit(h.segment, float(c), {"dense": float(c)}) for h, c in zip(candidates, sims, strict=True)]
                rerank_scores[t] = _normalise_rerank(reranker.score(t, hits), reranker)
            if final_mode == "rerank":  # ignores the exclusions: for comparison only
                return np.mean([rerank_scores[t] for t in positives], axis=0)
            return combine(query, {**values, **rerank_scores}, config)

        final = timed(timings, "rerank", rerank)

    mentions = None
    if config.mention and negative_terms(query) and final_mode != "rerank":  # rerank ignores the exclusions
        mentions = timed(timings, "mentions", lambda: exclusion.detect_mentions(query, candidates, knobs(config)))
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
            "orthogonal_not": config.orthogonal_not,
            "include_question": config.include_question,
            "second_segment_weight": config.second_segment_weight,
            "candidates": len(candidates),
            "term_scores": {t: {h.segment.id: round(h.detail[f"term:{t}"], 4) for h in shown} for t in names},
            "composed": {h.segment.id: round(h.detail["composed"], 4) for h in shown},
            "final_scores": {h.segment.id: round(h.score, 4) for h in shown},
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
    if ce_info is not None:
        if n_ce:
            ce_info["scores"] = {
                t: {h.segment.id: round(h.detail[f"ce:{t}"], 4) for h in shown if f"ce:{t}" in h.detail} for t in names
            }
        logical_info["cross_encoder"] = ce_info
    return RetrievalResult(question, candidates, ranked, top, timings, {"logical": logical_info})


def term_cross_encoder(services: Services, language: str) -> tuple[Any | None, str | None]:
    """(cross-encoder, note) for ``term_scorer`` "cross-encoder": ``services.cross_encoder``, the model the
    rerank stage loads from the rerank.* settings (the same object when rerank.kind=cross-encoder). None with
    the reason when the question's language is not in rerank.cross_encoder_languages (ours reads English) or
    the shipped model is missing; a model_path that does not exist is an error, as for the rerank stage."""
    r = services.settings.rerank
    if language not in r.cross_encoder_languages and language != "unknown":
        return None, f"question language {language}: the cross-encoder reads {', '.join(r.cross_encoder_languages)}"
    model = services.cross_encoder
    if model is None:
        return None, "no cross-encoder model (rerank.model_path is empty and models/reranker is missing)"
    return model, None


def cross_encoder_rescore(
    query: Node,
    names: list[str],
    candidates: list[Hit],
    order: np.ndarray,
    final: np.ndarray,
    model: Any,
    config: LogicalConfig,
) -> tuple[np.ndarray, np.ndarray, int, dict[str, Any], dict[str, dict[int, float]]]:
    """Cross-encoder term scores on the top ``ce_candidates`` of ``order``: (new order, new scores, how many
    were rescored, trace info, per term {candidate index: probability}).

    Every (term, segment) pair goes through one ``model.predict`` call, the term in the question slot and the
    segment as the reranker reads it (``model.passage``: title line + text cut to rerank.max_chars). The
    shipped model returns sigmoid scores in [0, 1]; a drop-in model returning logits (a value outside [0, 1])
    is squashed with the sigmoid. The scores are composed over the query tree as they are (fuzzy operators,
    or the exact probability in probabilistic mode, read as probabilities without a calibration) and reorder
    the top (ties keep the previous order); the other candidates follow unchanged. NegConstraint test:
    worse than the embedding scorer (evaluation/results/logical-negconstraint-ce.md)."""
    top = order[: config.ce_candidates]
    passage = getattr(model, "passage", None) or embedding_text
    passages = [passage(candidates[i].segment) for i in top]
    pairs = [(t, text) for t in names for text in passages]
    raw = np.asarray(model.predict(pairs), dtype=np.float64).reshape(len(names), len(top))
    squashed = bool(raw.size) and (float(raw.min()) < 0.0 or float(raw.max()) > 1.0)
    if squashed:
        raw = 1.0 / (1.0 + np.exp(-raw))
    probs = {t: raw[j] for j, t in enumerate(names)}
    rho = combine(query, probs, config)
    new_top = top[np.argsort(-rho, kind="stable")]
    new_final = np.asarray(final, dtype=np.float64).copy()
    new_final[top] = rho
    info: dict[str, Any] = {
        "scorer": "cross-encoder",
        "model": str(getattr(model, "model_path", getattr(model, "name", type(model).__name__))),
        "runtime": getattr(model, "runtime", None),
        "candidates": len(top),
        "pairs": len(pairs),
        "logits_squashed": squashed,
        "final": "composed cross-encoder term scores (rerank stage skipped)",
    }
    if getattr(model, "note", None):
        info["model_note"] = model.note
    return (
        np.concatenate([new_top, order[len(top) :]]),
        new_final,
        len(top),
        info,
        {t: dict(zip(top.tolist(), probs[t].tolist(), strict=True)) for t in names},
    )


def _finite_or_none(value: float | None) -> float | None:
    return None if value is None or not np.isfinite(value) else round(float(value), 4)


def plausibility_rescore(
    query: Node,
    names: list[str],
    candidates: list[Hit],
    order: np.ndarray,
    final: np.ndarray,
    values: dict[str, np.ndarray],
    services: Services,
    config: LogicalConfig,
) -> tuple[np.ndarray, np.ndarray, int, dict[str, Any], dict[str, dict[int, float]]]:
    """OrLog predicate plausibility on the top ``llm_candidates`` of ``order``: (new order, new scores, how
    many were rescored, trace info, per term {candidate index: P(True) or NaN}).

    A pair the LLM could not score keeps its embedding value (``values``: the cosine, or its calibration in
    probabilistic mode); if no pair got a plausibility, order and scores are left as they were."""
    from chatbot.logical.plausibility import llm_plausibilities

    top = order[: config.llm_candidates]
    try:
        llm = getattr(services, "llm", None)
    except Exception:  # a property that cannot build its client
        llm = None
    run = llm_plausibilities(llm, names, [candidates[i].segment for i in top], config.llm_max_chars)
    probs = {t: dict(zip(top.tolist(), run.probs[t].tolist(), strict=True)) for t in names}
    got = sum(int(np.isfinite(run.probs[t]).sum()) for t in names)
    info: dict[str, Any] = {
        "scorer": "llm-logprob",
        "candidates": len(top),
        "pairs": len(top) * len(names),
        "llm_pairs": got,
        "fallback_pairs": len(top) * len(names) - got,
        **run.info(),
    }
    if got == 0:
        info["fallback"] = "no plausibility at all: embedding order kept"
        return order, final, 0, info, probs
    mixed = {t: np.where(np.isfinite(run.probs[t]), run.probs[t], values[t][top]) for t in names}
    rho = combine(query, mixed, config)
    new_top = top[np.argsort(-rho, kind="stable")]  # ties keep the previous order (OrLog §3.7)
    new_final = np.asarray(final, dtype=np.float64).copy()
    new_final[top] = rho
    return np.concatenate([new_top, order[len(top) :]]), new_final, len(top), info, probs


@register_pipeline("logical")
def logical_pipeline(question: str, services: Services) -> RetrievalResult:
    """Exclusion-style questions → logical query and composed scores; all others → naive, unchanged."""
    return logical_retrieve(question, services, config_for(services.settings))


# Named variants: one pipeline name each for `chatbot eval retrieval --pipeline` (several in one run);
# each applies its changes on top of the configuration `logical` would use. Keep the names in
# chatbot/pipeline.py's lazy registry in step (a test checks).
VARIANTS: dict[str, dict[str, Any]] = {
    "logical-prob": {"mode": "probabilistic"},
    "logical-calibrated": {"calibrate": True},
    "logical-minmax": {"ops": Operators("min", "max", "one_minus")},
    "logical-and-sum": {"ops": Operators("sum", "sum", "one_minus")},
    "logical-not-inverse": {"ops": Operators("product", "sum", "inverse")},
    "logical-composed": {"final": "composed"},
    "logical-itlr": {"orthogonal_not": False, "second_segment_weight": 0.0},
    "logical-orlog": {"term_scorer": "llm-logprob", "mode": "probabilistic"},
    "logical-ce": {"term_scorer": "cross-encoder"},
    "logical-ce-prob": {"term_scorer": "cross-encoder", "mode": "probabilistic"},
    "logical-hyde": {"hydoc_terms": True},
}


def _variant(changes: dict[str, Any]):
    def run(question: str, services: Services) -> RetrievalResult:
        return logical_retrieve(question, services, config_for(services.settings, **changes))

    return run


for _name, _changes in VARIANTS.items():
    register_pipeline(_name)(_variant(_changes))

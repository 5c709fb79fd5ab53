"""The logical pipeline's one configuration: ``LogicalConfig`` built from the ``logical.*`` settings
(``config_for``), and the named variants (``VARIANTS``) that change it for ``chatbot eval retrieval``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from chatbot.logical.compose import DEFAULT_OPERATORS, Calibration, Operators
from chatbot.logical.exclusion import MentionKnobs

FINAL_MODES = ("rerank-terms", "composed", "rerank")
TERM_SCORERS = ("embedding", "llm-logprob", "cross-encoder")
MENTION_SCORERS = ("lexical", "trained", "both", "sentence", "sentence+lexical")


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
    # ~40 ms on one core (int8) against ~10 s for an LLM call; 50 covers the whole union of two positive terms'
    # dense top-20.
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
    mention_weight: float = 0.0  # NegConstraint train: no demotion beat none (logical-negation-sentences.md)
    mention_constraint: bool = False
    mention_positive_min: float = 0.0
    mention_drop_shared: bool = False
    mention_scorer: str = "lexical"  # sentence / sentence+lexical need index.sentence_vectors (did not win on train)
    mention_head_shift: float = 0.0
    mention_sentence_beta: float = 1000.0
    # the sentence scorer's best point on NegConstraint's TRAIN split (logical-negation-sentences-selection.md)
    mention_sentence_tau_entity: float = 0.06
    mention_sentence_tau_concept: float = 0.06
    mention_sentence_lam: float = 100.0
    mention_sentence_center: bool = True
    mention_sentence_orth: bool = True
    # rerank-terms: a positive term's cross-encoder score fused with its dense order by RRF (rerank.rrf_k), as the
    # product's rerank stage does; chosen on NegConstraint's TRAIN split (logical-negation-sentences.md)
    positive_rrf: bool = True
    # rerank-terms, per question language: the cross-encoders scoring the positive terms (a language not named:
    # the question's reranker, as before); "question" names that reranker: ["question", "reranker-e5"] fuses both
    positive_rerankers: dict[str, tuple[str, ...]] = field(default_factory=dict)
    positive_max_length: int = 64
    positive_text: str = "term"  # what the positive rerankers read: the term, or the whole question (a trial)
    other_language_k: int = 0  # a non-English question: each positive term's best other-language passages join
    # terms: the ITLR decomposition ranks (steps 3-9 of pipeline.py); pipeline: the positive part goes through
    # retrieval.pipeline as any question does, then the NOT terms demote/constrain (positive_pipeline.py)
    positive_source: str = "terms"
    # a document whose title names a NOT term is about it: below every other (exclusion.titles_naming)
    mention_title: bool = True
    # aboutness.adjust: a NOT term's value × (1 − discount) in a passage that only lists it among alternatives,
    # + boost in a passage about it (heading, first sentence, most sentences); 0, 0: the cosine as it is. 0.5 / 0
    # chosen on NegConstraint's TRAIN split and the card dev sets (evaluation/results/exclusions-s12.md)
    not_listed_discount: float = 0.5
    not_about_boost: float = 0.0
    not_listed_scope: str = "alternatives"  # alternatives: only when every cue asks for alternatives ("other than")
    # question_rescore: the composed top-k + weight × z(CE of the whole question) (0: off; negation-s13.md)
    question_ce_weight: float = 0.0
    question_ce_top: int = 5

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
        if self.positive_source not in ("terms", "pipeline"):
            raise ValueError(f"positive_source {self.positive_source!r}: terms or pipeline")
        if self.positive_text not in ("term", "question"):
            raise ValueError(f"positive_text {self.positive_text!r}: term or question")
        if self.not_listed_scope not in ("all", "alternatives"):
            raise ValueError(f"not_listed_scope {self.not_listed_scope!r}: all or alternatives")
        if self.mention_scorer not in MENTION_SCORERS:
            raise ValueError(f"mention_scorer {self.mention_scorer!r}: one of {MENTION_SCORERS}")

    def mention_knobs(self) -> MentionKnobs:
        """The ``mention_*`` knobs, as ``exclusion.detect_mentions`` reads them."""
        return MentionKnobs(
            self.mention_beta,
            self.mention_tau_entity,
            self.mention_tau_concept,
            self.mention_lam,
            self.mention_weight,
            self.mention_constraint,
            self.mention_positive_min,
            self.mention_drop_shared,
            self.mention_scorer,
            self.mention_head_shift,
            self.mention_sentence_beta,
            self.mention_sentence_tau_entity,
            self.mention_sentence_tau_concept,
            self.mention_sentence_lam,
            self.mention_sentence_center,
            self.mention_sentence_orth,
        )


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
    "mention_scorer",
    "mention_head_shift",
    "mention_sentence_beta",
    "mention_sentence_tau_entity",
    "mention_sentence_tau_concept",
    "mention_sentence_lam",
    "mention_sentence_center",
    "mention_sentence_orth",
    "positive_rrf",
    "positive_rerankers",
    "positive_max_length",
    "other_language_k",
    "positive_text",
    "positive_source",
    "mention_title",
    "not_listed_discount",
    "not_about_boost",
    "not_listed_scope",
    "question_ce_weight",
    "question_ce_top",
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
    fields["positive_rerankers"] = {lang: tuple(names) for lang, names in fields["positive_rerankers"].items()}
    fields["ops"] = Operators(group.and_op, group.or_op, group.not_op)
    return LogicalConfig(**{**fields, **changes})


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

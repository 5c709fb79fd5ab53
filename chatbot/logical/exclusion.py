"""Exclusions that hold: sentence-level mentions of NOT terms demote a candidate (issue 19, items 1, 3, 4).

Given the logical pipeline's candidates and their composed scores:

1. every NOT term is looked for in every candidate's sentences (``mention.mention_scores``) and the score is
   calibrated per term kind into P(the passage discusses the excluded thing), σ((s − τ)·λ);
2. ``demote``: the composed score is multiplied by ∏ over NOT terms of (1 − weight · P): with two exclusions
   (``A AND NOT B AND NOT C``) violating either one demotes the passage;
3. ``constrain`` (NS-IR's connective constraint, on documents): a document that satisfies the positive part
   (its positive terms' scores ≥ ``positive_min``) and violates no NOT (every P < 0.5 in all its candidate
   segments) ranks above every other document; within each tier the score order is kept.

The knobs are the ``logical.mention_*`` settings (``LogicalConfig``), chosen on NegConstraint's train split
(``python -m evaluation.bench_negation select``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from chatbot.index import Hit
from chatbot.logical.mention import Calibration, MentionScores, mention_scores, sentence_stems, term_words
from chatbot.logical.query import Node, negative_terms, positive_terms
from chatbot.logical.sentence_mentions import SentenceScores, calibrated, sentence_scores
from chatbot.sentences import split_sentences

VIOLATION = 0.5  # P(mention) at or above which a candidate violates a NOT term


@dataclass(frozen=True)
class MentionKnobs:
    """The ``logical.mention_*`` knobs (see chatbot/settings.py LogicalSettings for what each does)."""

    beta: float = 1000.0
    tau_entity: float = 0.7
    tau_concept: float = 0.7
    lam: float = 12.0
    weight: float = 0.1
    constraint: bool = False
    positive_min: float = 0.0
    drop_shared: bool = False
    scorer: str = "lexical"  # lexical | trained | both (the larger P) | sentence | sentence+lexical (the larger P)
    head_shift: float = 0.0
    sentence_beta: float = 1000.0  # soft maximum over a candidate's sentence cosines (1000: the maximum)
    sentence_tau_entity: float = 0.06
    sentence_tau_concept: float = 0.06
    sentence_lam: float = 100.0
    sentence_center: bool = True  # sentence score minus its median over the question's candidates
    sentence_orth: bool = True  # the NOT term's vector orthogonalised to the positive terms (as its cosine)

    def calibration(self) -> Calibration:
        return Calibration(self.tau_entity, self.tau_concept, self.lam)


@dataclass
class Mentions:
    """Per NOT term: P(mention) per candidate, the raw scores and the strongest sentence of each candidate."""

    probs: dict[str, np.ndarray]
    raw: dict[str, MentionScores]
    kinds: dict[str, str]
    sentence: dict[str, SentenceScores] = field(default_factory=dict)
    sentence_probs: dict[str, np.ndarray] = field(default_factory=dict)
    sentence_texts: dict[str, list[str]] = field(default_factory=dict)  # segment id → its stored sentences

    def violation(self) -> np.ndarray:
        """Per candidate: the largest P(mention) over the NOT terms (0 without NOT terms)."""
        if not self.probs:
            return np.zeros(0)
        return np.max(np.vstack(list(self.probs.values())), axis=0)


def detect_mentions(
    query: Node,
    hits: list[Hit],
    knobs: MentionKnobs,
    term_vectors: dict[str, np.ndarray] | None = None,
    passage_vectors: np.ndarray | None = None,
    sentences: dict[str, tuple[list[str], np.ndarray]] | None = None,
) -> Mentions:
    """Mention probabilities of every NOT term of ``query`` in every candidate segment.

    ``knobs.scorer`` "lexical": the term's words in one sentence, calibrated; "trained": the shipped head
    (``mention_head``) on the term's vector and the candidates' stored vectors (both needed), σ(logit − shift);
    "both": the larger of the two per candidate; "sentence": the soft maximum of the term's cosine over the
    candidate's stored sentence vectors (``sentences``: segment id → (sentences, vectors); ``term_vectors``
    as the caller wants them, e.g. orthogonalised), calibrated per term kind; "sentence+lexical": the larger
    of that and the lexical P."""
    passages = [sentence_stems(h.segment.text) for h in hits]
    cal = knobs.calibration()
    probs: dict[str, np.ndarray] = {}
    raw: dict[str, MentionScores] = {}
    kinds: dict[str, str] = {}
    head = None
    use_sentences = knobs.scorer in ("sentence", "sentence+lexical")
    if use_sentences and (term_vectors is None or sentences is None):
        raise ValueError(
            f"mention scorer {knobs.scorer!r} needs the NOT terms' vectors and the stored sentence vectors"
        )
    sent: dict[str, SentenceScores] = {}
    sent_probs: dict[str, np.ndarray] = {}
    if knobs.scorer in ("trained", "both"):
        if term_vectors is None or passage_vectors is None:
            raise ValueError(f"mention scorer {knobs.scorer!r} needs the term and candidate vectors")
        from chatbot.logical.mention_head import load_head

        head = load_head()
    for t in negative_terms(query):
        tw = term_words(t, " ".join(positive_terms(query)), knobs.drop_shared)
        raw[t] = mention_scores(tw, passages, knobs.beta)
        kinds[t] = tw.kind
        # no word of the term in any sentence: no mention at all (not the calibration's small floor)
        lexical = np.where(raw[t].score > 0, cal(raw[t].score, tw.kind), 0.0)
        if use_sentences:
            sent[t] = sentence_scores(
                term_vectors[t], [h.segment.id for h in hits], sentences, knobs.sentence_beta, knobs.sentence_center
            )
            tau = knobs.sentence_tau_entity if tw.kind == "entity" else knobs.sentence_tau_concept
            sent_probs[t] = calibrated(sent[t], tau, knobs.sentence_lam)
            probs[t] = sent_probs[t] if knobs.scorer == "sentence" else np.maximum(lexical, sent_probs[t])
            continue
        if head is None:
            probs[t] = lexical
            continue
        logits = head.logits(term_vectors[t], passage_vectors) - knobs.head_shift
        trained = 1.0 / (1.0 + np.exp(-np.clip(logits, -500, 500)))
        probs[t] = trained if knobs.scorer == "trained" else np.maximum(lexical, trained)
    texts = {sid: rows[0] for sid, rows in (sentences or {}).items()} if use_sentences else {}
    return Mentions(probs, raw, kinds, sent, sent_probs, texts)


def demote(final: np.ndarray, mentions: Mentions, weight: float) -> np.ndarray:
    """``final`` × ∏ over NOT terms (1 − weight · P(mention)): either exclusion demotes."""
    out = np.asarray(final, dtype=np.float64).copy()
    for p in mentions.probs.values():
        out = out * (1.0 - weight * p)
    return out


def positive_ok(query: Node, values: dict[str, np.ndarray], minimum: float) -> np.ndarray:
    """Per candidate: every positive term's value (the reranker's normalised score in rerank-terms) ≥ minimum."""
    pos = positive_terms(query)
    if not pos:
        raise ValueError("a query with a NOT needs a positive term")
    return np.all(np.vstack([np.asarray(values[t]) >= minimum for t in pos]), axis=0)


def constrain(ranked: list[Hit], doc_violation: dict[str, float], segment_ok: dict[str, bool]) -> list[Hit]:
    """Documents that satisfy the positive part and violate no NOT first (score order kept in each tier).

    ``doc_violation``: the largest P(mention) over each document's candidate segments (a document violates
    when any of them does). ``segment_ok``: positive part satisfied, per segment id (the document's best
    segment, the one ``ranked`` shows, decides)."""

    def tier(hit: Hit) -> int:
        v = doc_violation.get(hit.segment.doc_id, 0.0)
        return 0 if segment_ok.get(hit.segment.id, False) and v < VIOLATION else 1

    return sorted(ranked, key=tier)  # stable: the score order is kept inside each tier


def titles_naming(query: Node, hits: list[Hit]) -> dict[str, str]:
    """Documents whose title names every word of a NOT term (stems, EN/IT synonyms): they are about the excluded
    thing ("Folic acid before and during pregnancy" for NOT "folic acid"). Document id → that NOT term."""
    out: dict[str, str] = {}
    for t in negative_terms(query):
        tw = term_words(t, "", drop_shared=False)
        for h in hits:
            title = set().union(*sentence_stems(h.segment.title)) if h.segment.title.strip() else set()
            if tw.stems and title and all(g & title for g in tw.stems):
                out.setdefault(h.segment.doc_id, t)
    return out


def below_titled(ranked: list[Hit], named: dict[str, str]) -> list[Hit]:
    """The documents whose title names an excluded thing after all the others (order kept in each group)."""
    return sorted(ranked, key=lambda h: h.segment.doc_id in named)


def document_violation(hits: list[Hit], violation: np.ndarray) -> dict[str, float]:
    """The largest per-segment violation of each document among ``hits`` (aligned with ``violation``)."""
    out: dict[str, float] = {}
    for h, v in zip(hits, violation, strict=True):
        out[h.segment.doc_id] = max(out.get(h.segment.doc_id, 0.0), float(v))
    return out


def trace(mentions: Mentions, hits: list[Hit], index_of: dict[str, int]) -> dict[str, Any]:
    """Per NOT term, for the shown hits: P(mention), term kind, and the sentence that triggered it."""
    out: dict[str, Any] = {}
    for t, p in mentions.probs.items():
        rows: dict[str, Any] = {}
        for h in hits:
            i = index_of.get(h.segment.id)
            if i is None:
                continue
            j = mentions.raw[t].best_sentence[i]
            by = "lexical"
            row: dict[str, Any] = {"p": round(float(p[i]), 4), "score": round(float(mentions.raw[t].score[i]), 4)}
            if t in mentions.sentence:
                sp = float(mentions.sentence_probs[t][i])
                row["sentence_score"] = round(float(mentions.sentence[t].score[i]), 4)
                row["sentence_p"] = round(sp, 4)
                if sp >= float(p[i]) - 1e-12:  # the sentence vectors gave this P (else the lexical evidence did)
                    j, by = mentions.sentence[t].best_sentence[i], "sentence vectors"
            sentences = split_sentences(h.segment.text) or [h.segment.text]
            if by == "sentence vectors":
                sentences = mentions.sentence_texts.get(h.segment.id, [])
            fired = 0 <= j < len(sentences) and p[i] >= VIOLATION
            row["sentence"] = sentences[j] if fired else None
            row["triggered_by"] = by if fired else None
            rows[h.segment.id] = row
        out[t] = {"kind": mentions.kinds[t], "candidates": rows}
    return out

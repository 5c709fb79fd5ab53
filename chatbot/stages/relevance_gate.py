"""The "no certified information" gate as a small calibrated classifier: a logistic regression over scores the
pipeline already has (bi-encoder cosines, the cross-encoder's score of the links, lexical overlap, the share of
words the corpus never uses, language, with Italian questions' own weights for the cosine, margin, overlap and
unknown words, length), with its coefficients shipped as data (models/relevance_gate/gate.json, fitted by
``python -m evaluation.redteam.gate_fit``)."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from chatbot.index import Hit
from chatbot.stages.safety import content_words

# The order of the coefficients in gate.json.
FEATURES = (
    "dense_best",  # best bi-encoder cosine of the links (of the positive part for an exclusion question)
    "dense_second",  # second-best cosine among distinct documents
    "dense_margin",  # best cosine minus the mean cosine of the documents ranked 4-13 (how much the top stands out)
    "cross_encoder",  # best cross-encoder score of the links (0-1), computed for the gate in every language
    "cross_encoder_it",  # the same on Italian questions only (the shipped reranker reads English)
    "lexical",  # IDF-weighted share of the question's content words found in the best-covering link
    "unmatched_rare",  # the rarest (in the corpus) question word found in no link: its IDF over the largest IDF
    "italian",  # 1 for an Italian question
    "length",  # log(1 + content words of the question)
    "exclusion",  # 1 when the gate judged the positive part of an exclusion question
    "unknown_words",  # IDF-weighted share of the question's content words that the corpus never uses
    # Italian questions' own weights (per-language calibration: Italian cards are few, the reranker reads English)
    "dense_best_it",
    "dense_margin_it",
    "lexical_it",
    "unknown_words_it",
)


def _prefixes(text: str, n: int = 5) -> set[str]:
    """Content words cut to their first ``n`` letters: 'pregnancy'/'pregnant', 'gravidanza'/'gravide' match."""
    return {w[:n] for w in content_words(text)}


def _hit_words(hit: Hit) -> set[str]:
    seg = hit.segment
    return _prefixes(f"{seg.title} {seg.heading} {seg.text}")


@dataclass(frozen=True)
class Lexicon:
    """Document frequencies of the corpus's word prefixes (per segment): rare words weigh more."""

    segments: int
    df: Mapping[str, int]

    def idf(self, word: str) -> float:
        return math.log(1.0 + self.segments / (1.0 + self.df.get(word, 0)))

    @property
    def max_idf(self) -> float:
        return math.log(1.0 + self.segments)


def lexicon_of(segments: Sequence[Any]) -> Lexicon:
    """The lexicon of ``segments`` (anything with title, heading and text)."""
    from collections import Counter

    df: Counter[str] = Counter()
    for seg in segments:
        df.update(_prefixes(f"{seg.title} {seg.heading} {seg.text}"))
    return Lexicon(len(segments), dict(df))


def lexical_overlap(question: str, hits: Sequence[Hit], lexicon: Lexicon | None = None) -> float:
    """Share of the question's content words (EN/IT stopwords removed, 5-letter prefixes) that occur in the
    title, heading or text of the best-covering hit, each word weighted by its IDF in ``lexicon`` (1 without
    one); 0 for a question without content words."""
    words = _prefixes(question)
    if not words or not hits:
        return 0.0
    weight = {w: lexicon.idf(w) if lexicon else 1.0 for w in words}
    total = sum(weight.values())
    return max(sum(weight[w] for w in words & _hit_words(h)) for h in hits) / total


def unmatched_rare(question: str, hits: Sequence[Hit], lexicon: Lexicon | None) -> float:
    """The largest IDF of a question word found in none of the hits, over the largest possible IDF (a word the
    corpus never uses: 1.0); 0 when every word is found, or without a lexicon."""
    if lexicon is None:
        return 0.0
    found = set().union(*(_hit_words(h) for h in hits)) if hits else set()
    missing = _prefixes(question) - found
    return max((lexicon.idf(w) for w in missing), default=0.0) / lexicon.max_idf


def unknown_words(question: str, lexicon: Lexicon | None) -> float:
    """IDF-weighted share of the question's content words (5-letter prefixes) that no segment of the corpus
    uses ("glaucoma", "tatuaggio"): a question about something the library never mentions; 0 without a
    lexicon or content words."""
    words = _prefixes(question)
    if lexicon is None or not words:
        return 0.0
    weight = {w: lexicon.idf(w) for w in words}
    return sum(v for w, v in weight.items() if lexicon.df.get(w, 0) == 0) / sum(weight.values())


def _score(hit: Hit, key: str) -> float | None:
    value = hit.detail.get(key)
    return None if value is None else float(value)


def gate_features(
    question: str,
    top: Sequence[Hit],
    ranked: Sequence[Hit],
    language: str,
    cross_encoder: Any | None = None,
    positive: str | None = None,
    lexicon: Lexicon | None = None,
) -> dict[str, float] | None:
    """The feature vector of one answer (None when the links carry no bi-encoder score, e.g. bm25 only).

    ``top``: the links; ``ranked``: every ranked document (best segment each), links first; ``cross_encoder``:
    a reranker with ``score(question, hits)`` (the shipped one), or None (the feature is then 0); ``positive``:
    the question with its exclusions cut out, judged instead of the whole question when its term scores exist;
    ``lexicon``: the corpus's word frequencies (``lexicon_of``), for the lexical features."""
    key = "dense"
    text = question
    if positive is not None and top and all(f"term:{positive}" in h.detail for h in top):
        key, text = f"term:{positive}", positive
    if not top or any(key not in h.detail for h in top):
        return None
    scores = sorted((s for h in ranked if (s := _score(h, key)) is not None), reverse=True)
    best = max(float(h.detail[key]) for h in top)
    rest = scores[3:13]
    second = scores[1] if len(scores) > 1 else best
    ce = 0.0
    if cross_encoder is not None:
        if key == "dense" and all(getattr(cross_encoder, "name", "") in h.detail for h in top):
            ce = max(float(h.detail[cross_encoder.name]) for h in top)  # the rerank stage already scored them
        else:
            ce = float(max(cross_encoder.score(text, list(top))))
    italian = 1.0 if language == "it" else 0.0
    margin = best - (sum(rest) / len(rest) if rest else second)
    lexical = lexical_overlap(text, top, lexicon)
    unknown = unknown_words(text, lexicon)
    return {
        "dense_best": best,
        "dense_second": second,
        "dense_margin": margin,
        "cross_encoder": ce,
        "cross_encoder_it": ce * italian,
        "lexical": lexical,
        "unmatched_rare": unmatched_rare(text, top, lexicon),
        "italian": italian,
        "length": math.log1p(len(content_words(text))),
        "exclusion": 1.0 if key != "dense" else 0.0,
        "unknown_words": unknown,
        "dense_best_it": best * italian,
        "dense_margin_it": margin * italian,
        "lexical_it": lexical * italian,
        "unknown_words_it": unknown * italian,
    }


@dataclass(frozen=True)
class GateModel:
    """Logistic regression on standardised features: P(answerable) = sigmoid(b + sum w_i (x_i - mean_i) / scale_i);
    answer when P >= the threshold of the question's language (``threshold_it`` for an Italian question when set,
    ``threshold`` otherwise)."""

    embedder: str
    coef: tuple[float, ...]
    intercept: float
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    threshold: float
    threshold_it: float | None = None
    second_look_it: tuple[float, float] | None = None  # the cross-language second look's (slope, cut) fitted on its P

    def threshold_for(self, features: Mapping[str, float]) -> float:
        """The probability threshold of the question's language (the ``italian`` feature)."""
        italian = float(features.get("italian", 0.0)) >= 0.5
        return self.threshold_it if italian and self.threshold_it is not None else self.threshold

    def probability(self, features: Mapping[str, float]) -> float:
        missing = [f for f in FEATURES if f not in features]
        if missing:
            raise ValueError(f"relevance gate: features missing {missing}")
        z = self.intercept + sum(
            w * (features[f] - m) / s for w, f, m, s in zip(self.coef, FEATURES, self.mean, self.scale, strict=True)
        )
        return 1.0 / (1.0 + math.exp(-z))

    def relevant(self, features: Mapping[str, float]) -> bool:
        return self.probability(features) >= self.threshold_for(features)


def parse_gate(data: Mapping[str, Any], embedder: str, source: str = "gate.json") -> GateModel:
    """The model fitted for ``embedder`` in a gate.json document; a clear error when absent or malformed."""
    if list(data.get("features", [])) != list(FEATURES):
        raise ValueError(f"{source}: features {data.get('features')} differ from this code's {list(FEATURES)}")
    models = data.get("models", {})
    if embedder not in models:
        raise ValueError(
            f"{source} has no relevance gate for embedder {embedder!r} (fitted: {sorted(models)}); fit one with "
            "`python -m evaluation.redteam.gate_loso --ship NAME --key KEY` or set safety.relevance_gate=threshold"
        )
    m = models[embedder]
    n = len(FEATURES)
    for name in ("coef", "mean", "scale"):
        if len(m.get(name, [])) != n:
            raise ValueError(f"{source}: {embedder}.{name} must hold {n} numbers")
    if any(s <= 0 for s in m["scale"]):
        raise ValueError(f"{source}: {embedder}.scale must be positive")
    threshold_it = m.get("threshold_it")
    for name, value in (("threshold", m.get("threshold")), ("threshold_it", threshold_it)):
        if (value is not None or name == "threshold") and not (
            isinstance(value, (int, float)) and not isinstance(value, bool) and 0.0 < float(value) < 1.0
        ):
            raise ValueError(f"{source}: {embedder}.{name} must be a probability between 0 and 1, got {value!r}")
    look = m.get("second_look_it")
    if look is not None and not (
        isinstance(look, (list, tuple))
        and len(look) == 2
        and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in look)
    ):
        raise ValueError(f"{source}: {embedder}.second_look_it must be [slope, cut], got {look!r}")
    return GateModel(
        embedder,
        tuple(map(float, m["coef"])),
        float(m["intercept"]),
        tuple(map(float, m["mean"])),
        tuple(map(float, m["scale"])),
        float(m["threshold"]),
        None if threshold_it is None else float(threshold_it),
        None if look is None else (float(look[0]), float(look[1])),
    )


@lru_cache(maxsize=8)
def load_gate(path: str, embedder: str) -> GateModel:
    """The gate of ``embedder`` from a gate.json file (cached per process)."""
    file = Path(path)
    if not file.is_file():
        raise FileNotFoundError(f"relevance gate file {file} does not exist (safety.relevance_gate_model)")
    return parse_gate(json.loads(file.read_text(encoding="utf-8")), embedder, str(file))


def describe(features: Mapping[str, float]) -> dict[str, float]:
    """Rounded features for the answer trace."""
    return {k: round(float(v), 4) for k, v in features.items()}

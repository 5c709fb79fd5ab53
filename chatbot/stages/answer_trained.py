"""The trained answer scorer: P(sentence answers question) from a logistic head over e5 features.

Features of a (question, sentence) pair (``pair_features``): the elementwise product and absolute difference
of the multilingual-e5-small vectors of ``query: question`` and ``passage: sentence`` (what the two share and
where they differ, per dimension), their cosine, the question type (``answer_cues.question_type``) crossed
with the sentence's answer cues of every type, the share of the question's words in the sentence, and the
sentence's length. The head was fitted on weak labels from public train splits
(``chatbot.training.answer_scorer``; card: models/answer_scorer/README.md). Sentence vectors come from the unit
store that ingest fills (``answer_units``: the indexed units, embedded ahead of the question) when it is given, else
from a bounded memory cache per process (certified text does not change while it runs). The question's vector
comes from the encoder's own query cache when retrieval used the same e5-onnx instance for the same text.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from chatbot.stages.answer_cues import QUESTION_TYPES, cue_score, question_type
from chatbot.stages.answer_units import UnitVectors, embed_alone

FEATURE_VERSION = 1
WEIGHTS_FILE = "answer_scorer.npz"
# compose.trained_head -> weights file in models/answer_scorer: the head fitted on public train splits, or the one
# fitted on the reply sets' key phrases (evaluation/answer_scorer_loso.py; evaluation/results/replies-s12.md)
HEADS = {"public": WEIGHTS_FILE, "reply-sets": "answer_scorer_replies.npz"}
CARD_FILE = "README.md"
EMBEDDER = "e5-onnx"  # the vectors the head was fitted on


def default_model_dir() -> Path:
    """models/answer_scorer (the weights ship with the code; package data in a wheel)."""
    from chatbot.resources import shipped_model

    return shipped_model("answer_scorer")


def _stems(text: str) -> set[str]:
    from chatbot.stages.safety import content_words

    return {w[:5] for w in content_words(text)}


def text_features(question: str, sentences: Sequence[str]) -> np.ndarray:
    """The features that need no vectors: question type x the sentence's cues (6 x 6), the share of the
    question's words in the sentence, log length, and whether the sentence is itself a question."""
    kind = question_type(question)
    q_words = _stems(question)
    rows = []
    for s in sentences:
        cues = np.zeros((len(QUESTION_TYPES), len(QUESTION_TYPES)), dtype=np.float32)
        cues[QUESTION_TYPES.index(kind)] = [cue_score(t, s) for t in QUESTION_TYPES]
        overlap = len(q_words & _stems(s)) / len(q_words) if q_words else 0.0
        extra = [overlap, math.log1p(len(s)) / 6.0, 1.0 if s.rstrip().endswith("?") else 0.0]
        rows.append(np.concatenate([cues.ravel(), np.asarray(extra, dtype=np.float32)]))
    return np.asarray(rows, dtype=np.float32).reshape(len(sentences), -1)


def pair_features(q_vec: np.ndarray, s_vecs: np.ndarray, question: str, sentences: Sequence[str]) -> np.ndarray:
    """One row per sentence: [q*s, |q-s|, cosine, text_features]."""
    q = np.asarray(q_vec, dtype=np.float32).reshape(1, -1)
    s = np.asarray(s_vecs, dtype=np.float32).reshape(len(sentences), -1)
    cos = (s @ q.T).reshape(-1, 1)
    return np.concatenate([q * s, np.abs(q - s), cos, text_features(question, sentences)], axis=1)


class TrainedAnswerModel:
    """``(question, unit texts) -> P(answers)`` per unit, for compose.answer_scorer=cues+trained.

    ``reads_heading = False``: it scores the sentence itself (it was fitted on bare sentences);
    ``probability = True``: its scores are calibrated probabilities, used as they are (not min-max);
    ``weight``: the composer's weight of them when the head's metadata names one (``composer_weight``), else None
    (answer_select.W_TRAINED)."""

    reads_heading = False
    probability = True

    def __init__(
        self,
        embedder,
        model_dir: Path | None = None,
        max_cached: int = 20000,
        weights_file: str = WEIGHTS_FILE,
        units: UnitVectors | None = None,
    ) -> None:
        model_dir = Path(model_dir) if model_dir else default_model_dir()
        path = model_dir / weights_file
        if not path.is_file():
            raise FileNotFoundError(
                f"compose.answer_scorer=cues+trained but {path} is missing; train it with "
                "`python -m chatbot.training.answer_scorer` (see models/answer_scorer/README.md)"
            )
        with np.load(path) as data:
            self.coef = data["coef"].astype(np.float32)
            self.intercept = float(data["intercept"])
            self.mean = data["mean"].astype(np.float32)
            self.scale = data["scale"].astype(np.float32)
            meta = json.loads(str(data["meta"]))
        if meta.get("feature_version") != FEATURE_VERSION:
            raise ValueError(f"{path}: feature version {meta.get('feature_version')} != {FEATURE_VERSION}; retrain")
        self.meta = meta
        self.weight: float | None = meta.get("composer_weight")
        self.embedder = embedder
        self.max_cached = max_cached
        self._cache: dict[str, np.ndarray] = {}
        # the units embedded ahead of the question (answer_units); one it lacks is embedded alone, as the store's
        self.units = units
        self.embedded = 0  # units embedded on demand (not found in the store or the cache)

    def _sentence_vectors(self, texts: Sequence[str]) -> np.ndarray:
        found: dict[str, np.ndarray] = {}
        for t in dict.fromkeys(texts):
            v = self.units.get(t) if self.units is not None else None
            v = self._cache.get(t) if v is None else v
            if v is not None:
                found[t] = v
        missing = [t for t in dict.fromkeys(texts) if t not in found]
        if missing:
            if len(self._cache) + len(missing) > self.max_cached:
                self._cache.clear()
            if self.units is not None:
                fresh = embed_alone(self.embedder.embed_passages, missing)
            else:
                fresh = [np.asarray(v, dtype=np.float32) for v in self.embedder.embed_passages(missing)]
            for t, v in zip(missing, fresh, strict=True):
                self._cache[t] = found[t] = v
            self.embedded += len(missing)
        return np.stack([found[t] for t in texts])

    def score_features(self, features: np.ndarray) -> np.ndarray:
        """P(answers) of feature rows (standardised as in training)."""
        z = ((features - self.mean) / self.scale) @ self.coef + self.intercept
        return 1.0 / (1.0 + np.exp(-z))

    def __call__(self, question: str, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros(0, dtype=np.float32)
        q = self.embedder.embed_queries([question])[0]
        return self.score_features(pair_features(q, self._sentence_vectors(texts), question, texts))

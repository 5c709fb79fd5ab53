"""What kind of answer a question asks for (how_much, how_long, when, why, what_to_do or yes_no), read by a learned
head over the hashed n-grams of its asking sentences (``models/asked_kind``, ``python -m
chatbot.training.asked_kind``); ``compose.asked_kind = cues`` keeps the cue patterns (answer_cues.question_type).

The head reads the sentences that ask (the last two with a question mark, else the last sentence): a long message's
story before the question says what the patient went through, not what they ask for."""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from chatbot.hashed_ngrams import features, load_int8, save_int8
from chatbot.resources import shipped_model
from chatbot.stages.answer_cues import QUESTION_TYPES, question_type

SHIPPED_DIR = shipped_model("asked_kind")
N_FEATURES = 1 << 16
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


def asking_part(question: str) -> str:
    """The sentences of ``question`` that ask: the last two holding a question mark, else the last sentence."""
    parts = [p for p in _SENTENCE_END.split(question.strip()) if p.strip()]
    if not parts:
        return ""
    asking = [p for p in parts if "?" in p]
    return " ".join(asking[-2:]) if asking else parts[-1]


class AskedKindHead:
    """A multinomial logistic head over ``chatbot.hashed_ngrams.features`` of the asking part, shipped as int8
    weights (one scale): ``weights.npz`` (weights, scale, bias) and ``config.json`` (labels, n_features, record)."""

    def __init__(self, weights: np.ndarray, bias: np.ndarray, labels: tuple[str, ...], n_features: int) -> None:
        if weights.shape != (len(labels), n_features) or bias.shape != (len(labels),):
            raise ValueError(f"asked-kind head: weights {weights.shape} and bias {bias.shape} do not fit {labels}")
        unknown = set(labels) - set(QUESTION_TYPES)
        if unknown:
            raise ValueError(f"asked-kind head: unknown labels {sorted(unknown)}")
        self.weights, self.bias, self.labels, self.n_features = weights, bias, labels, n_features

    def probabilities(self, question: str) -> dict[str, float]:
        """Each kind's probability for ``question``."""
        idx, val = features(asking_part(question), self.n_features)
        z = self.weights[:, idx] @ val + self.bias if len(idx) else self.bias.copy()
        p = np.exp(z - z.max())
        p /= p.sum()
        return {label: float(x) for label, x in zip(self.labels, p, strict=True)}

    def kind(self, question: str) -> str:
        """The most probable kind."""
        probs = self.probabilities(question)
        return max(probs, key=probs.__getitem__)

    def save(self, folder: Path, record: dict[str, Any]) -> None:
        config = {"labels": list(self.labels), "n_features": self.n_features, **record}
        save_int8(folder, self.weights, self.bias, config)

    @classmethod
    def load(cls, folder: Path) -> AskedKindHead:
        if not (folder / "config.json").is_file() or not (folder / "weights.npz").is_file():
            raise FileNotFoundError(
                f"asked-kind head: no config.json and weights.npz in {folder}; rebuild it with `python -m "
                "chatbot.training.asked_kind --ship models/asked_kind` or set compose.asked_kind=cues"
            )
        weights, bias, config = load_int8(folder)
        return cls(weights, bias, tuple(config["labels"]), int(config["n_features"]))


@lru_cache(maxsize=2)
def shipped_head(folder: str = str(SHIPPED_DIR)) -> AskedKindHead:
    """The shipped head (loaded once per folder); a missing or malformed folder is an error that says so."""
    return AskedKindHead.load(Path(folder))


def asked_kind(question: str, source: str = "model") -> str:
    """The kind of answer ``question`` asks for: the shipped head's (``source`` "model") or the cue patterns'."""
    if source == "cues":
        return question_type(question)
    if source != "model":
        raise ValueError(f"compose.asked_kind must be 'model' or 'cues', not {source!r}")
    return shipped_head().kind(question)

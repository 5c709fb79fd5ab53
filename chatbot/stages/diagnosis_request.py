"""Learned fallback of the personal-request reader: a message that asks for a personal diagnosis in words the
rules of ``chatbot.stages.safety`` do not list ("is it colic? he cries every evening", "ho la mastite? seno duro e
rosso", "tsh 4.2 at 10 weeks, do I have hypothyroidism"). A binary logistic head over hashed word and character
n-grams (``models/diagnosis_request``, trained by ``python -m chatbot.training.diagnosis_request``); the rules
decide first, the model only when they find nothing."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from chatbot.hashed_ngrams import BinaryHead
from chatbot.resources import shipped_model
from chatbot.stages.safety import detect_personal_request

SHIPPED_DIR = shipped_model("diagnosis_request")


@lru_cache(maxsize=2)
def shipped_head(folder: str = str(SHIPPED_DIR)) -> BinaryHead | None:
    """The shipped model, or None when its folder is absent (the rules then decide alone)."""
    path = Path(folder)
    return BinaryHead.load(path) if (path / "config.json").exists() else None


def diagnosis_score(text: str, head: BinaryHead | None = None) -> float | None:
    """P(the message asks for a personal diagnosis), or None without a model."""
    head = head or shipped_head()
    return None if head is None else round(head.score(text), 4)


def asks_for_diagnosis(text: str, head: BinaryHead | None = None) -> bool:
    """Whether the model scores the message at or above its bar (False without a model)."""
    head = head or shipped_head()
    return head is not None and bool(head.score(text) >= head.threshold)


def personal_request(text: str, use_model: bool = True) -> str | None:
    """'dosage' or 'diagnosis' from the rules (``safety.detect_personal_request``); when they find nothing and
    ``use_model``, 'diagnosis' if the model says so; else None."""
    found = detect_personal_request(text)
    if found is None and use_model and asks_for_diagnosis(text):
        return "diagnosis"
    return found

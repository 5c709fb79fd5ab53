"""The red-flag classifier: a linear softmax head over hashed word and character n-grams (int8 weights).

Multilingual by construction (no vocabulary: accents folded, character 3-5-grams inside words carry typos,
missing accents, abbreviations and Italian/English morphology), a few milliseconds a message on one core,
no model download. It scores the whole message and its parts (sentences, adjacent sentence pairs, word
windows of long sentences) and keeps the part that looks most urgent, so an emergency buried in an
ordinary question still counts. Trained by ``python -m chatbot.training.redflags`` (model card:
``models/redflags/README.md``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from chatbot.hashed_ngrams import N_FEATURES, features, normalise  # noqa: F401 (re-exported: training, tests)
from chatbot.resources import shipped_model

SHIPPED_DIR = shipped_model("redflags")
LABELS: tuple[str, ...] = ("none", "emergency", "poisoning", "mental_health", "maternity_unit")
_SENTENCE = re.compile(r"(?<=[.!?;\n])\s+|\s+(?=\b(?:but|ma|pero|però)\b)")
WINDOW_WORDS, WINDOW_STEP = 16, 8
MAX_UNITS = 64
# A sentence that only says when ("25wks", "sono a 30 settimane", "6 months old") holds no alarm of its own; scored
# alone, the head read it as the maternity-unit alarms it learned with weeks in them ("how should i be bending? 25wks"
# scored 0.9995 on "25wks"). It is read with the sentence before it (after it, when it comes first).
_TIMING_ONLY = re.compile(
    r"^\W*(?:(?:at|i'?m|im|i\s+am|now|currently|about|around|almost|nearly|just|only|sono|alla|all'|a|circa|quasi|"
    r"ormai|gia|già|di|ho)\s*)*\d+(?:[+.,]\d+)?\s*(?:wks?|weeks?|wk|w|settimane|settimana|sett|mesi|mese|months?|mos?|"
    r"days?|giorni|gg|yrs?|years?|anni|esima|°)?\.?(?:\s*(?:settimane|settimana|sett))?(?:\s+(?:pregnant|preg|incinta|"
    r"old|di\s+gravidanza|gravidanza|today|oggi))?\W*$",
    re.IGNORECASE,
)


def _with_timing(sentences: list[str]) -> list[str]:
    """The sentences, a timing-only one (``_TIMING_ONLY``) joined to the one before it (after it, when first)."""
    out: list[str] = []
    carry = ""
    for s in sentences:
        if _TIMING_ONLY.match(s):
            if out:
                out[-1] = f"{out[-1]} {s}"
            else:
                carry = f"{carry} {s}".strip()
            continue
        out.append(f"{carry} {s}".strip() if carry else s)
        carry = ""
    if carry:
        out.append(carry)
    return out


def units(text: str) -> list[str]:
    """What gets scored: the whole text, each sentence, each pair of adjacent sentences and 16-word windows
    (step 8) of any sentence longer than that; at most MAX_UNITS, the whole text first."""
    text = " ".join(text.split())
    out = [text]
    sentences = [s for s in _SENTENCE.split(text) if s and s.strip() and s.strip().lower() not in ("but", "ma")]
    sentences = _with_timing(sentences)
    if len(sentences) > 1:
        out += sentences
        out += [f"{a} {b}" for a, b in zip(sentences, sentences[1:], strict=False)]
    for s in sentences or [text]:
        words = s.split()
        if len(words) > WINDOW_WORDS + 4:
            starts = range(0, len(words) - WINDOW_WORDS // 2, WINDOW_STEP)
            out += [" ".join(words[i : i + WINDOW_WORDS]) for i in starts]
    seen: dict[str, None] = {}
    for u in out:
        seen.setdefault(u, None)
    return list(seen)[:MAX_UNITS]


@dataclass(frozen=True)
class Prediction:
    urgent_score: float  # 1 - P(none) of the most urgent unit
    scores: dict[str, float]  # P(action) in that unit
    fired: tuple[str, ...]  # the predicted action when urgent_score >= threshold
    threshold: float
    unit: str  # the part of the message that scored highest

    def trace(self) -> dict[str, Any]:
        return {
            "urgent_score": round(self.urgent_score, 4),
            "threshold": self.threshold,
            "fired": list(self.fired),
            "scores": {k: round(v, 4) for k, v in self.scores.items()},
            "unit": self.unit[:200],
        }


class RedFlagClassifier:
    """Linear softmax head: logits = W·x + b with W stored int8 (one scale per class)."""

    def __init__(self, weights: np.ndarray, bias: np.ndarray, threshold: float, meta: dict[str, Any] | None = None):
        if weights.shape[0] != len(LABELS) or bias.shape != (len(LABELS),):
            raise ValueError(f"expected {len(LABELS)} classes {LABELS}, got weights {weights.shape}")
        self.weights = np.ascontiguousarray(weights.T, dtype=np.float32)  # (n_features, classes) for gathers
        self.bias = bias.astype(np.float32)
        self.threshold = float(threshold)
        self.meta = meta or {}
        self.n_features = weights.shape[1]
        # 0: rules OR classifier (the default). Above 0: a rule counts only when the classifier's urgent score
        # reaches it (the rules' false alarms on informational questions, models/redflags/README.md).
        self.rule_floor = float(self.meta.get("rule_floor", 0.0))
        # A rule on a message framed as past, hypothetical or study (redflag_framing) counts only from here.
        self.framing_floor = float(self.meta.get("framing_floor", 0.0))
        # A long message is read in many units and one benign clause alone can score near 1 ("ma io non voglio"):
        # from ``pool_min_units`` units on, the message's score is the mean of its ``pool_top`` best units (an alarm
        # sign scores high in its sentence, its pairs and its windows alike). 1: the best unit alone (session 27).
        self.pool_top = max(1, int(self.meta.get("pool_top", 1)))
        self.pool_min_units = int(self.meta.get("pool_min_units", 0))

    @classmethod
    def load(cls, folder: Path) -> RedFlagClassifier:
        folder = Path(folder)
        meta = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        if tuple(meta["labels"]) != LABELS:
            raise ValueError(f"{folder}: labels {meta['labels']} differ from {list(LABELS)}")
        with np.load(folder / "weights.npz") as z:
            q, scale, bias = z["weights_int8"], z["scales"], z["bias"]
        weights = q.astype(np.float32) * scale[:, None].astype(np.float32)
        return cls(weights, bias, meta["threshold"], meta)

    def probabilities(self, texts: list[str]) -> np.ndarray:
        """Softmax over LABELS for each text."""
        out = np.empty((len(texts), len(LABELS)), dtype=np.float32)
        for i, t in enumerate(texts):
            idx, val = features(t, self.n_features)
            logits = self.bias + (val @ self.weights[idx] if len(idx) else 0.0)
            e = np.exp(logits - logits.max())
            out[i] = e / e.sum()
        return out

    def predict(self, text: str) -> Prediction:
        parts = units(text)
        probs = self.probabilities(parts)
        unit_urgent = 1.0 - probs[:, 0]
        best = int(np.argmax(unit_urgent))
        p = probs[best]
        urgent = float(unit_urgent[best])
        if self.pool_top > 1 and len(parts) >= max(self.pool_min_units, self.pool_top):
            urgent = float(np.sort(unit_urgent)[-self.pool_top :].mean())
        scores = {label: float(p[i]) for i, label in enumerate(LABELS) if label != "none"}
        action = max(scores, key=lambda a: scores[a])
        fired = (action,) if urgent >= self.threshold else ()
        return Prediction(urgent, scores, fired, self.threshold, parts[best])


@lru_cache(maxsize=1)
def shipped_classifier(folder: str = str(SHIPPED_DIR)) -> RedFlagClassifier | None:
    """The classifier shipped in models/redflags, or None when its weights are absent (rules only)."""
    path = Path(folder)
    if not (path / "weights.npz").exists():
        return None
    return RedFlagClassifier.load(path)

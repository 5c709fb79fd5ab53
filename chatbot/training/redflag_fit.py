"""Fitting and scoring the red-flag screen's two trained models in memory (for ``redflags_cv``).

- ``dev_examples``: the spent red-flag test sets as training rows, each message as written plus variants
  (``redflag_dataset.expand``) drawn from a generator seeded by the text, so a message's variants are the
  same in every fold (and their e5 vectors stay cached).
- ``fit_ngram`` / ``fit_head``: the n-gram logistic regression (int8 weights) and the e5 MLP head.
- ``parts``: what the screen's gate reads for each message (head and n-gram urgent scores, their action
  scores, a rule fired, calm-framed), exactly as ``chatbot.stages.redflags.screen`` computes them.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

import numpy as np

from chatbot.stages.redflag_classifier import LABELS, RedFlagClassifier
from chatbot.stages.redflag_context import ContextHead
from chatbot.training.redflag_dataset import expand, fill, seeds

Row = tuple[str, str, str, str]  # text, label, lang, source


def ordinary_questions(seed: int) -> dict[str, list[str]]:
    """Filled ordinary seed questions per language (to bury an urgent message in)."""
    rng = random.Random(seed)
    return {lang: [fill(t, lang, rng) for t in seeds()["negatives"][lang]] for lang in ("en", "it")}


def dev_examples(rows: list[dict[str, Any]], variants: int, ordinary: dict[str, list[str]], source: str) -> list[Row]:
    """Each labelled message (``text``, ``urgent``, ``action``, ``language``) as written plus ``variants``
    expansions, the generator seeded by the text."""
    out: list[Row] = []
    for r in rows:
        lang = r["language"] if r["language"] in ("en", "it") else "en"
        label = r["action"] if r["urgent"] else "none"
        rng = random.Random(int(hashlib.sha1(r["text"].encode("utf-8")).hexdigest()[:12], 16))
        texts = [r["text"]] + [
            expand(r["text"], lang, rng, ordinary[lang] if r["urgent"] else [], bool(r["urgent"]))
            for _ in range(variants)
        ]
        out += [(t, label, lang, source) for t in dict.fromkeys(texts)]
    return out


def fit_ngram(x: Any, labels: list[str], c: float, seed: int) -> RedFlagClassifier:
    """The n-gram classifier on a feature matrix (``redflags.matrix``): int8 weights, threshold 0.5 until
    one is chosen; ``clf.int8`` keeps the quantised weights to save."""
    from sklearn.linear_model import LogisticRegression

    from chatbot.training.redflags import quantise

    y = np.array([LABELS.index(lab) for lab in labels])
    model = LogisticRegression(C=c, max_iter=400, random_state=seed)
    model.fit(x, y)
    q, scale = quantise(model.coef_.astype(np.float32))
    clf = RedFlagClassifier(q.astype(np.float32) * scale[:, None], model.intercept_.astype(np.float32), 0.5)
    clf.int8 = (q, scale)  # type: ignore[attr-defined]
    return clf


def fit_head(vectors: np.ndarray, labels: list[str], hidden: int, alpha: float, seed: int) -> ContextHead:
    """The contextual head on e5 vectors."""
    from chatbot.training.redflags_context import train_head

    y = np.array([LABELS.index(lab) for lab in labels])
    return ContextHead(train_head(vectors, y, hidden, alpha, seed))


def parts(
    texts: list[str], clf: RedFlagClassifier, head: ContextHead, vectors: np.ndarray, calm: bool = False
) -> dict[str, np.ndarray]:
    """Per message: ``ctx`` / ``ngram`` urgent scores, ``ctx_scores`` / ``ngram_scores`` (n, 4 actions),
    ``rule`` (a rule fired), ``rule_action`` (the first rule's action or ""), ``framed`` (past, hypothetical or
    study, no present danger), ``negated`` (denies a symptom, no present danger) and ``asks`` (a "?"). ``calm``: the
    n-gram model reads the message without its mood markers (``redflag_emotion.neutral``), as the screen does
    when the head's config says ``emotion_neutral``."""
    from chatbot.stages import redflag_rules as rules
    from chatbot.stages.redflag_emotion import neutral, worried_complaint
    from chatbot.stages.redflag_framing import framing
    from chatbot.stages.redflags import CATEGORY_ACTION, rule_flags

    probs = head.probabilities(vectors)
    n = len(texts)
    out: dict[str, Any] = {
        "ctx": 1.0 - probs[:, 0],
        "ctx_scores": probs[:, 1:],
        "ngram": np.zeros(n),
        "ngram_scores": np.zeros((n, len(LABELS) - 1)),
        "rule": np.zeros(n, dtype=bool),
        "rule_action": [],
        "framed": np.zeros(n, dtype=bool),
        "negated": np.zeros(n, dtype=bool),
        "asks": np.array(["?" in t for t in texts], dtype=bool),
    }
    for i, t in enumerate(texts):
        p = clf.predict(rules.without_negated(neutral(t) if calm else t))
        calm_t = rules.without_negated(t)
        out["ngram"][i] = p.urgent_score
        out["ngram_scores"][i] = [p.scores[a] for a in LABELS[1:]]
        flags = rule_flags(t)
        out["rule"][i] = bool(flags)
        out["rule_action"].append(CATEGORY_ACTION[flags[0].category] if flags else "")
        framed, negated = bool(framing(t)), calm_t != t and not rules.sign_after_contrast(t)
        framed = framed or (worried_complaint(t) and not flags and not rules.names_a_symptom(t))
        if (framed or negated) and rules.present_danger(t):
            framed = negated = False
        out["framed"][i], out["negated"][i] = framed, negated
    return out

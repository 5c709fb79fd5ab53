"""Predicate plausibility (OrLog §3.5): P(a segment satisfies an atomic term) from an LLM's log-probabilities.

For each (candidate segment, term) one chat completion with ``max_tokens`` 1 and temperature 0 is asked for
the top log-probabilities of its single token (prompt ``prompts/logical_plausibility.txt``); nothing is
generated freely. The plausibility is the softmax over the two truth labels,

    P(True) = exp(l_T) / (exp(l_T) + exp(l_F)),

where l_T (l_F) is the log-sum-exp of the log-probabilities of every listed alternative that reads "true"
("false") once surrounding whitespace, tokeniser markers and case are removed (" True", "true", "TRUE" are
one label; "(False" or "_false" are not). When only one label is among the listed alternatives, the other's
log-probability is at most the lowest listed one (it would be listed otherwise) and that bound is used
(status ``bounded``); when neither is listed, or the call fails, there is no plausibility (``None``) and the
caller falls back to the embedding score and says so in the trace.

Calls run segment by segment, every term of a segment in turn, so a server with a prompt cache (llama-server)
reads each passage once. A failure that will repeat (server down, not installed, past the timeout) stops the
remaining calls; any other failure costs only its own pair.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

PROMPT_NAME = "logical_plausibility"
TOP_LOGPROBS = 10
FATAL_KINDS = ("down", "not-installed", "timeout")
_MARKERS = " \t\n\r\u2581\u0120"  # whitespace, SentencePiece "▁" and byte-level BPE "Ġ" space markers


def truth_label(token: str) -> str | None:
    """ "true", "false" or None for one listed token."""
    word = token.strip(_MARKERS).lower()
    return word if word in ("true", "false") else None


def _logsumexp(values: list[float]) -> float:
    top = max(values)
    return top + math.log(sum(math.exp(v - top) for v in values))


def true_probability(alternatives: Sequence[tuple[str, float]]) -> tuple[float | None, str]:
    """(P(True), status) from one token's listed alternatives [(token, logprob), ...].

    status: ``ok`` (both labels listed), ``bounded`` (one label listed, the other bounded by the lowest
    listed log-probability), ``missing`` (neither listed: P is None)."""
    found: dict[str, list[float]] = {"true": [], "false": []}
    for token, logprob in alternatives:
        label = truth_label(token)
        if label is not None and math.isfinite(logprob):
            found[label].append(float(logprob))
    if not found["true"] and not found["false"]:
        return None, "missing"
    status = "ok"
    floor = min(float(lp) for _, lp in alternatives if math.isfinite(lp))
    l_true = _logsumexp(found["true"]) if found["true"] else floor
    l_false = _logsumexp(found["false"]) if found["false"] else floor
    if not found["true"] or not found["false"]:
        status = "bounded"
    return 1.0 / (1.0 + math.exp(l_false - l_true)), status


@dataclass
class PlausibilityRun:
    """Per-term P(True) over the scored segments (NaN where there is none) and what it cost."""

    probs: dict[str, np.ndarray]
    calls: int = 0
    ms: float = 0.0
    status: dict[str, int] = field(default_factory=dict)  # ok / bounded / missing / failed / skipped counts
    failures: list[dict[str, str]] = field(default_factory=list)  # {segment, term, reason}, first few
    aborted: str | None = None

    def info(self, max_failures: int = 5) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "ms": round(self.ms, 1),
            "status": dict(self.status),
            "failures": self.failures[:max_failures],
            "aborted": self.aborted,
        }


def passage_of(text: str, max_chars: int) -> str:
    """The segment's text cut to ``max_chars`` at a word boundary (with an ellipsis when cut)."""
    text = " ".join(text.split())
    if len(text) <= max_chars:
        return text
    cut = text[:max_chars]
    space = cut.rfind(" ")
    return (cut[:space] if space > max_chars // 2 else cut) + " …"


def llm_plausibilities(
    llm: Any,
    names: Sequence[str],
    segments: Sequence[Any],
    max_chars: int = 600,
    top_logprobs: int = TOP_LOGPROBS,
    prompt: Any = None,
) -> PlausibilityRun:
    """P(True) of every term for every segment (objects with ``id``, ``title``, ``text``), one 1-token
    completion each through ``llm.token_logprobs`` (chatbot/llm.py ``LLMClient``)."""
    from chatbot.prompts import load_prompt

    prompt = prompt or load_prompt(PROMPT_NAME)
    run = PlausibilityRun({t: np.full(len(segments), np.nan) for t in names})

    def count(status: str) -> None:
        run.status[status] = run.status.get(status, 0) + 1

    def fail(seg: Any, term: str, reason: str) -> None:
        count("failed")
        run.failures.append({"segment": str(seg.id), "term": term, "reason": reason})

    if not callable(getattr(llm, "token_logprobs", None)):
        run.aborted = "no LLM" if llm is None else "the LLM client cannot return log-probabilities (no token_logprobs)"
        run.status["skipped"] = len(names) * len(segments)
        return run
    start = time.perf_counter()
    try:
        for i, seg in enumerate(segments):
            passage = passage_of(seg.text, max_chars)
            for term in names:
                if run.aborted is not None:
                    count("skipped")
                    continue
                messages = prompt.messages(title=seg.title, passage=passage, term=term)
                run.calls += 1
                try:
                    _, tokens, _ = llm.token_logprobs(messages, top_logprobs=top_logprobs, max_tokens=1)
                except Exception as exc:  # LLMUnavailable or a transport error: fall back for this pair
                    kind = getattr(exc, "kind", type(exc).__name__)
                    fail(seg, term, f"{kind}: {getattr(exc, 'message', exc)}"[:200])
                    if kind in FATAL_KINDS:
                        run.aborted = f"{kind}: remaining pairs not asked"
                    continue
                p, status = true_probability(tokens[0] if tokens else [])
                if p is None:
                    count("missing")
                    run.failures.append({"segment": str(seg.id), "term": term, "reason": "no True/False token"})
                    continue
                count(status)
                run.probs[term][i] = p
    finally:
        run.ms = (time.perf_counter() - start) * 1000
    return run

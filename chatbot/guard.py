"""Reply validators built on guardrails-ai: custom ``@register_validator`` validators, run with
``Guard().use(...)`` and ``guard.validate(text)`` only (guardrails never calls an LLM here).

- ``reply-length``: the composed text stays within the length limit (fix: cut at a sentence boundary).
- ``certified-contacts-only``: no URL, e-mail address or phone number that is not in the certified
  segments or their fixed links (fix: drop the sentences that carry one).
- ``verbatim-certified`` (extractive replies): every sentence occurs verbatim in a linked segment.
- ``grounded-sentences`` (generative replies): every sentence is supported by the linked segments,
  scored by a support scorer against a threshold, and every number in it occurs in them (fix: drop the
  unsupported sentences).
- ``reply-language`` (generative replies): the reply is in the patient's language, by the detector that
  screens questions (chatbot.language.detect_language); no fix: on failure the composer falls back to
  the extractive reply, which picks segments in the patient's language or says they are in another one.

Every validator writes what it found into ``metadata["report"]`` so the answer trace records each outcome.
Importing this module writes ``~/.guardrailsrc`` (metrics and remote inference off) if it is absent, before
guardrails is imported, and selects guardrails' sequential validator service so fixes chain in order; every
Guard is built with metrics collection off whatever an existing rc file says (``telemetry_off``).
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from chatbot.contacts import certified_contacts, contact_key, find_contacts
from chatbot.language import detect_language
from chatbot.sentences import split_sentences, truncate_to_sentences

GUARDRAILS_RC = "enable_metrics=false\nuse_remote_inferencing=false\n"


def ensure_offline_config(home: Path | None = None) -> Path:
    """Write ``~/.guardrailsrc`` with metrics and remote inference off unless the file already exists."""
    rc = (home or Path.home()) / ".guardrailsrc"
    if not rc.exists():
        try:
            rc.write_text(GUARDRAILS_RC, encoding="utf-8")
        except OSError:  # a read-only home: guardrails then runs with its defaults
            pass
    return rc


ensure_offline_config()
os.environ.setdefault("GUARDRAILS_RUN_SYNC", "true")  # sequential: each FIX feeds the next validator

from guardrails import Guard, OnFailAction, Validator, register_validator  # noqa: E402
from guardrails.classes.validation.validation_result import (  # noqa: E402
    FailResult,
    PassResult,
    ValidationResult,
)

# A support scorer: (claims, evidence texts) -> one score per claim (higher = better supported).
SupportScorer = Callable[[Sequence[str], Sequence[str]], Sequence[float]]

_NUMBER_RE = re.compile(r"\d+(?:[.,]\d+)?")


def _ws(text: str) -> str:
    return " ".join(text.split())


def _report(metadata: dict[str, Any], name: str, entry: dict[str, Any]) -> None:
    report = metadata.get("report")
    if isinstance(report, dict):
        report[name] = entry


@register_validator(name="certified-chatbot/reply-length", data_type="string")
class ReplyLength(Validator):
    """The reply is at most ``max_chars`` characters; fix: whole sentences up to the limit."""

    def __init__(self, max_chars: int, on_fail: Any = OnFailAction.FIX, **kwargs: Any) -> None:
        super().__init__(on_fail=on_fail, max_chars=max_chars, use_local=True, **kwargs)
        self.max_chars = max_chars

    def _validate(self, value: Any, metadata: dict[str, Any]) -> ValidationResult:
        text = str(value)
        if len(text) <= self.max_chars:
            _report(metadata, "reply-length", {"outcome": "pass", "chars": len(text), "limit": self.max_chars})
            return PassResult()
        fixed = truncate_to_sentences(text, self.max_chars)
        _report(
            metadata,
            "reply-length",
            {"outcome": "fail", "chars": len(text), "limit": self.max_chars, "action": f"cut to {len(fixed)}"},
        )
        return FailResult(error_message=f"reply is {len(text)} characters, limit {self.max_chars}", fix_value=fixed)


def _drop_sentences(text: str, bad: Callable[[str], bool]) -> tuple[str, list[str]]:
    kept, dropped = [], []
    for sentence in split_sentences(text):
        (dropped if bad(sentence) else kept).append(sentence)
    return " ".join(kept), dropped


@register_validator(name="certified-chatbot/certified-contacts-only", data_type="string")
class CertifiedContactsOnly(Validator):
    """No URL, e-mail or phone number unless the linked certified segments (or their links) contain it.

    metadata: ``certified_texts`` (segment texts), ``certified_urls`` (their fixed links).
    Fix: the sentences carrying an uncertified contact are removed.
    """

    def __init__(self, on_fail: Any = OnFailAction.FIX, **kwargs: Any) -> None:
        super().__init__(on_fail=on_fail, use_local=True, **kwargs)

    def _validate(self, value: Any, metadata: dict[str, Any]) -> ValidationResult:
        text = str(value)
        allowed = certified_contacts(metadata.get("certified_texts", ()), metadata.get("certified_urls", ()))
        bad = [(kind, v) for kind, v in find_contacts(text) if contact_key(kind, v) not in allowed]
        if not bad:
            _report(metadata, "certified-contacts-only", {"outcome": "pass", "uncertified": []})
            return PassResult()
        bad_keys = {contact_key(kind, v) for kind, v in bad}
        fixed, dropped = _drop_sentences(
            text, lambda s: any(contact_key(kind, v) in bad_keys for kind, v in find_contacts(s))
        )
        _report(
            metadata,
            "certified-contacts-only",
            {"outcome": "fail", "uncertified": [f"{kind}: {v}" for kind, v in bad], "removed_sentences": dropped},
        )
        return FailResult(error_message="uncertified " + ", ".join(f"{kind} {v}" for kind, v in bad), fix_value=fixed)


@register_validator(name="certified-chatbot/verbatim-certified", data_type="string")
class VerbatimCertified(Validator):
    """Every sentence occurs verbatim (up to whitespace) in a linked certified segment; fix: drop the others."""

    def __init__(self, on_fail: Any = OnFailAction.FIX, **kwargs: Any) -> None:
        super().__init__(on_fail=on_fail, use_local=True, **kwargs)

    def _validate(self, value: Any, metadata: dict[str, Any]) -> ValidationResult:
        sources = [_ws(t) for t in metadata.get("certified_texts", ())]
        fixed, dropped = _drop_sentences(str(value), lambda s: not any(_ws(s) in src for src in sources))
        if not dropped:
            _report(metadata, "verbatim-certified", {"outcome": "pass", "sentences": len(split_sentences(str(value)))})
            return PassResult()
        _report(metadata, "verbatim-certified", {"outcome": "fail", "removed_sentences": dropped})
        return FailResult(error_message=f"{len(dropped)} sentence(s) not in the certified text", fix_value=fixed)


def numbers_of(text: str) -> set[str]:
    return {n.replace(",", ".") for n in _NUMBER_RE.findall(text)}


@register_validator(name="certified-chatbot/grounded-sentences", data_type="string")
class GroundedSentences(Validator):
    """Every sentence is supported by the linked segments: support score >= ``threshold`` and each of its
    numbers occurs in them. metadata: ``certified_texts``, ``support_scorer``. Fix: drop unsupported ones."""

    def __init__(self, threshold: float, on_fail: Any = OnFailAction.FIX, **kwargs: Any) -> None:
        super().__init__(on_fail=on_fail, threshold=threshold, use_local=True, **kwargs)
        self.threshold = threshold

    def _validate(self, value: Any, metadata: dict[str, Any]) -> ValidationResult:
        evidence = list(metadata.get("certified_texts", ()))
        scorer: SupportScorer | None = metadata.get("support_scorer")
        sentences = split_sentences(str(value))
        if not sentences:
            _report(metadata, "grounded-sentences", {"outcome": "pass", "sentences": []})
            return PassResult()
        if scorer is None:
            raise ValueError("grounded-sentences needs metadata['support_scorer']")
        scores = [float(s) for s in scorer(sentences, evidence)]
        known_numbers = set().union(*(numbers_of(t) for t in evidence)) if evidence else set()
        rows = []
        for sentence, score in zip(sentences, scores, strict=True):
            missing = sorted(numbers_of(sentence) - known_numbers)
            reason = "number not in the certified text: " + ", ".join(missing) if missing else None
            if score < self.threshold:
                reason = f"support {score:.3f} < {self.threshold}"
            rows.append({"sentence": sentence, "score": round(score, 4), "supported": reason is None, "reason": reason})
        unsupported = [r for r in rows if not r["supported"]]
        entry = {
            "outcome": "fail" if unsupported else "pass",
            "threshold": self.threshold,
            "supported": len(rows) - len(unsupported),
            "total": len(rows),
            "sentences": rows,
        }
        _report(metadata, "grounded-sentences", entry)
        if not unsupported:
            return PassResult()
        fixed = " ".join(r["sentence"] for r in rows if r["supported"])
        return FailResult(error_message=f"{len(unsupported)} of {len(rows)} sentence(s) unsupported", fix_value=fixed)


@register_validator(name="certified-chatbot/reply-language", data_type="string")
class ReplyLanguage(Validator):
    """The reply is written in the patient's language (metadata ``language``: "en" or "it"), as the
    question-language detector reads it. Too little evidence ("unknown", e.g. an empty or very short reply)
    passes. No fix (NOOP): the composer falls back to the extractive reply when this fails."""

    def __init__(self, min_confidence: float = 0.5, on_fail: Any = OnFailAction.NOOP, **kwargs: Any) -> None:
        super().__init__(on_fail=on_fail, min_confidence=min_confidence, use_local=True, **kwargs)
        self.min_confidence = min_confidence

    def _validate(self, value: Any, metadata: dict[str, Any]) -> ValidationResult:
        expected = metadata.get("language") or "en"
        guess = detect_language(str(value), fallback=expected, min_confidence=self.min_confidence)
        entry = {
            "outcome": "pass" if guess.language in (expected, "unknown") else "fail",
            "expected": expected,
            "detected": guess.language,
            "scores": guess.scores,
        }
        _report(metadata, "reply-language", entry)
        if entry["outcome"] == "pass":
            return PassResult()
        return FailResult(error_message=f"reply in {guess.language}, not {expected}")


# -- running the guards --------------------------------------------------------------------------------

VALIDATOR_ORDER = {
    "extractive": ("verbatim-certified", "certified-contacts-only", "reply-length"),
    # the language of what would be shown: checked last, on the fixed text
    "generative": ("certified-contacts-only", "grounded-sentences", "reply-length", "reply-language"),
}


@dataclass
class GuardResult:
    """The validated text and each validator's outcome, in the order they ran."""

    text: str
    validators: list[dict[str, Any]] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(v["outcome"] == "pass" for v in self.validators)

    def outcome(self, name: str) -> dict[str, Any] | None:
        return next((v for v in self.validators if v["validator"] == name), None)


_locks: dict[tuple, threading.Lock] = {}


@lru_cache(maxsize=16)
def build_guard(mode: str, max_chars: int, support_threshold: float) -> Guard:
    """One Guard per configuration (building one costs ~0.2 s; validating ~ms)."""
    validators = {
        "verbatim-certified": lambda: VerbatimCertified(),
        "certified-contacts-only": lambda: CertifiedContactsOnly(),
        "grounded-sentences": lambda: GroundedSentences(threshold=support_threshold),
        "reply-length": lambda: ReplyLength(max_chars=max_chars),
        "reply-language": lambda: ReplyLanguage(),
    }
    if mode not in VALIDATOR_ORDER:
        raise ValueError(f"unknown compose mode {mode!r}")
    guard = Guard()  # reloads ~/.guardrailsrc: whatever it says, metrics and remote inference stay off
    guard.configure(allow_metrics_collection=False)
    telemetry_off()
    # one use() call: a second use() on the same property replaces the first one's validators
    return guard.use(*(validators[name]() for name in VALIDATOR_ORDER[mode]))


def telemetry_off() -> None:
    """Metrics and remote inference off in guardrails' settings, even when an existing ``~/.guardrailsrc``
    enables them (or none can be written and guardrails falls back to its default, metrics on). Validators
    read these settings when they are built."""
    from guardrails.settings import settings

    settings.rc.enable_metrics = False
    settings.rc.use_remote_inferencing = False


def run_guard(
    text: str,
    *,
    mode: str,
    certified_texts: Sequence[str],
    certified_urls: Sequence[str],
    max_chars: int,
    support_threshold: float = 0.0,
    support_scorer: SupportScorer | None = None,
    language: str = "en",
) -> GuardResult:
    """Validate (and fix) a composed reply with the mode's validators; ``guard.validate`` only.
    ``language`` is the patient's ("en" or "it"), the language a generative reply must be in."""
    key = (mode, max_chars, float(support_threshold))
    guard = build_guard(*key)
    report: dict[str, Any] = {}
    metadata = {
        "certified_texts": list(certified_texts),
        "certified_urls": list(certified_urls),
        "support_scorer": support_scorer,
        "language": language,
        "report": report,
    }
    lock = _locks.setdefault(key, threading.Lock())
    with lock:
        outcome = guard.validate(text, metadata=metadata)
    validated = outcome.validated_output
    final = validated if isinstance(validated, str) else ""
    rows = [{"validator": name, **report[name]} for name in VALIDATOR_ORDER[mode] if name in report]
    return GuardResult(final.strip(), rows)

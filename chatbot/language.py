"""The one language detector: which language a patient's question (or a reply) is written in.

Built on lingua (``lingua-language-detector``, offline: its n-gram models ship inside the wheel), restricted
to the languages that matter here: the two we answer (English, Italian) and the Latin-script languages a
question in another language is most likely written in (those of the larger communities in Italy and the
UK), in lingua's high-accuracy mode (its low-accuracy mode, trigrams only, misreads short messages). Text
mostly in another script (Cyrillic, Greek, Arabic, Chinese, Japanese, Devanagari, ...) is never English or
Italian: a second, small low-accuracy detector only names its language for the trace.

Short messages carry little evidence ("ok", "grazie", a lone drug name). The rules, biased towards
answering, since refusing an English or Italian patient is worse than answering "no certified information"
to a foreign one:

- no letters, or a served language read with low confidence in one or two words ("hello", "swollen feet"):
  ``unknown``, answered in the fallback language (the caller's, ``fallback_language``: on the patient page
  the previous turn's language, else the browser's; English by default);
- another language refuses only with at least ``MIN_WORDS_TO_REFUSE`` words, at least ``min_confidence``
  and twice the confidence of English/Italian; otherwise the text is read as the likelier of English and
  Italian (a typo'd Italian message that looks Spanish stays Italian), or ``unknown`` when too short.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

SERVED = ("en", "it")
# Latin-script languages a question may come in besides ours (the detector only chooses among these).
LATIN_OTHERS = ("es", "fr", "de", "pt", "nl", "pl", "ro", "sq", "tr")
# Other scripts: never served; named in the trace (one low-accuracy detector, a few MB).
OTHER_SCRIPTS = ("ru", "uk", "el", "ar", "fa", "zh", "ja", "ko", "hi", "bn", "pa", "he")
MIN_WORDS_TO_REFUSE = 3
SHORT_WORDS = 2  # up to this many words, a served language needs SHORT_MIN_CONFIDENCE
SHORT_MIN_CONFIDENCE = 0.6

# Function words that only one served language uses. lingua's character n-grams can be swayed by one long
# medical word ("Cos'è la toxoplasmosi?" reads Portuguese, then English; "prosciutto crudo" makes an English
# question Italian): when one served language has at least MARKERS_TO_DECIDE of its words and MARKER_RATIO times
# the other's, the question is that language (the English side lists a few words Italian never writes:
# "pregnant"). _STRICT: words no other detectable Latin-script language writes either (a message with
# MARKERS_TO_DECIDE of them is never refused as Spanish: "il mio bimbo ha la febre cosa faccio").
_MARKERS = {
    "en": frozenset(
        "the is are was were what how when why which should can could would will does did have has had of to "
        "for with and or not my your it this that these those about if there they she he we our be been do on "
        "am i'm im while during eat pregnant pregnancy safe breastfeeding".split()
    ),
    "it": frozenset(
        "il lo gli la le di da del della dello delle degli dei nel nella nello nelle negli nei sono ho hai ha "
        "abbiamo hanno che cosa cos è devo deve posso può puo mio mia miei mie non con una uno quando perché "
        "perche quanto quanta quanti quante dopo anche più piu molto sto sta questo questa essere fare si mi "
        "ci".split()
    ),
}
_STRICT = {
    "en": frozenset("the what how which should could would does did have had with and my your this that".split()),
    "it": frozenset(
        "il gli della dello delle degli nella nello nelle negli sono ho hai hanno abbiamo che cos è può puo "
        "perché perche più piu molto anche questo questa mio mia miei faccio bimbo bimba bambino bambina "
        "gravidanza incinta neonato".split()
    ),
}
MARKERS_TO_DECIDE = 2
MARKER_RATIO = 3  # a language's marker words must outnumber the other's this many times (when it has any)

_WORD = re.compile(r"[^\W\d_]+")
_LATIN = re.compile(r"[A-Za-zÀ-ɏ]")
_lock = threading.Lock()
_detectors: dict[str, Any] = {}
_FALLBACK: ContextVar[str] = ContextVar("language_fallback", default="en")


@contextmanager
def fallback_language(language: str | None) -> Iterator[None]:
    """Within the block, text too short to tell is answered in ``language`` (the page's or the previous
    turn's; None or anything but en/it: English). One patient's question, one decision: the answer, its
    urgent banner and the page's own words all read this."""
    token = _FALLBACK.set(language if language in SERVED else "en")
    try:
        yield
    finally:
        _FALLBACK.reset(token)


@dataclass(frozen=True)
class LanguageGuess:
    """What the detector read: ``language`` is en, it, another ISO 639-1 code, or ``unknown`` (too little
    evidence: answered, in ``fallback``)."""

    language: str
    confidence: float = 0.0
    fallback: str = "en"
    scores: dict[str, float] = field(default_factory=dict)

    @property
    def supported(self) -> bool:
        """True when we answer it: English, Italian, or too little evidence to refuse."""
        return self.language in SERVED or self.language == "unknown"

    @property
    def reply_language(self) -> str:
        """The language of our own messages: the detected one when served, else the fallback."""
        return self.language if self.language in SERVED else self.fallback


def _detector(kind: str) -> Any:
    """The lingua detector for ``kind`` ("latin": high accuracy; "scripts": low accuracy), built once."""
    with _lock:
        if kind not in _detectors:
            from lingua import IsoCode639_1, LanguageDetectorBuilder

            codes = SERVED + LATIN_OTHERS if kind == "latin" else OTHER_SCRIPTS
            builder = LanguageDetectorBuilder.from_iso_codes_639_1(*(getattr(IsoCode639_1, c.upper()) for c in codes))
            builder = builder.with_preloaded_language_models()
            if kind == "scripts":
                builder = builder.with_low_accuracy_mode()
            _detectors[kind] = builder.build()
        return _detectors[kind]


def warm_up() -> None:
    """Load the language models now (a few seconds, ~330 MB) rather than on the first question."""
    _detector("latin")
    _detector("scripts")


def _confidences(kind: str, text: str) -> dict[str, float]:
    values = _detector(kind).compute_language_confidence_values(text)
    return {v.language.iso_code_639_1.name.lower(): float(v.value) for v in values if v.value > 0}


def detect_language(text: str, fallback: str | None = None, min_confidence: float = 0.5) -> LanguageGuess:
    """The language of ``text`` (rules in the module docstring); ``fallback`` ("en" or "it"; default: the
    one ``fallback_language`` set, else English) is the reply language when the text is too short to tell."""
    fallback = fallback if fallback in SERVED else _FALLBACK.get()
    letters = [ch for ch in text if ch.isalpha()]
    if not letters:
        return LanguageGuess("unknown", 0.0, fallback)
    if sum(1 for ch in letters if _LATIN.match(ch)) / len(letters) < 0.5:
        scores = _confidences("scripts", text)
        best = max(scores, key=scores.__getitem__, default="unknown-script")
        return LanguageGuess(best, scores.get(best, 0.0), fallback, _rounded(scores))
    scores = _confidences("latin", text)
    tokens = [w.lower() for w in _WORD.findall(text.replace("’", "'"))]
    words = len(tokens)
    served = _marked(tokens, _MARKERS) or max(SERVED, key=lambda c: scores.get(c, 0.0))
    served_conf = scores.get(served, 0.0)
    other = max(LATIN_OTHERS, key=lambda c: scores.get(c, 0.0))
    other_conf = scores.get(other, 0.0)
    if other_conf > served_conf:
        refusable = other_conf >= min_confidence and other_conf >= 2 * served_conf and not _marked(tokens, _STRICT)
        if words >= MIN_WORDS_TO_REFUSE and refusable:
            return LanguageGuess(other, other_conf, fallback, _rounded(scores))
        if words <= SHORT_WORDS:
            return LanguageGuess("unknown", served_conf, fallback, _rounded(scores))
        return LanguageGuess(served, served_conf, fallback, _rounded(scores))
    if words <= SHORT_WORDS and served_conf < SHORT_MIN_CONFIDENCE:
        return LanguageGuess("unknown", served_conf, fallback, _rounded(scores))
    return LanguageGuess(served, served_conf, fallback, _rounded(scores))


def _marked(tokens: list[str], markers: dict[str, frozenset[str]]) -> str | None:
    """The served language with at least MARKERS_TO_DECIDE of its marker words and MARKER_RATIO times as many as
    the other (an English question naming "mozzarella di bufala" keeps its English verdict)."""
    counts = {lang: sum(t in words for t in tokens) for lang, words in markers.items()}
    best = max(counts, key=counts.__getitem__)
    rest = max((n for lang, n in counts.items() if lang != best), default=0)
    if counts[best] >= MARKERS_TO_DECIDE and counts[best] >= MARKER_RATIO * rest and counts[best] > rest:
        return best
    return None


def question_language(text: str, min_confidence: float = 0.5) -> str:
    """The language a question is routed by (reranker, query adapter, cross-language offset): ``detect_language``'s,
    read as English when there are too few clues."""
    language = detect_language(text, min_confidence=min_confidence).language
    return "en" if language == "unknown" else language


def _rounded(scores: dict[str, float]) -> dict[str, float]:
    """The three highest confidences, rounded (for the answer trace)."""
    top = sorted(scores.items(), key=lambda kv: -kv[1])[:3]
    return {k: round(v, 3) for k, v in top if round(v, 3) > 0}

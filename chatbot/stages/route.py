"""The patient's-path router: an exclusion question goes to the logical decomposition, every other question to
the configured pipeline.

"What helps with nausea in pregnancy other than ginger?" → ``logical`` (``"What helps with nausea in
pregnancy" AND NOT "ginger"``); "What helps with nausea in pregnancy?" → ``retrieval.pipeline``. The
exclusion detector is ``chatbot.logical.detect`` (English and Italian cues, no LLM call). A pipeline named by
the caller (``chatbot ask --pipeline``, the harness) is kept as it is.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

from chatbot.logical.aboutness import asks_for_alternatives, listed, names
from chatbot.logical.detect import analyse
from chatbot.logical.mention import stem, term_words, words
from chatbot.logical.patient_cues import MEDICINE_WORDS
from chatbot.logical.query import to_string
from chatbot.sentences import split_sentences
from chatbot.stages.text_match import fold

EXCLUSION_PIPELINE = "logical"
# retrieval.exclusion_answer = by_cue: cues that state the patient's situation or draw a contrast inside the question
# ("I don't drink coffee", "sono intollerante al lattosio", "I've already tried ginger", "on my side rather than my
# back", "..., not heavy") and the learned dismissal model; the patient still asks about the same topic, so the
# question is answered as any other, the cards about the excluded thing last. Explicit topic exclusions ("other than",
# "apart from", "tranne", "I already know about", "don't tell me about", "so già tutto") take the decomposition.
SITUATIONAL_CUES = re.compile(
    r"^(?:, not|, non|rather than|instead of|invece (?:di|dei|del|della|delle|degli|dello|che)|anziché|anziche|"
    r"piuttosto che|not … but|non … ma|but not|ma non|but no|all but|not a|non sul|non sulla|they're not|"
    r"aren't doing anything|non è|non e|non credo sia|i don't think its|i don't think it's|non bevo|non mangio|"
    r"i don't eat|i don't drink|i can't stand|i hate|sono intollerante al|sono intollerante alla|non lo digerisco|"
    r"non lo digerisco bene|ho già provato|abbiamo già provato|i've already tried|i already tried|ho già tolto|"
    r"li ho gia tolti|ho già smesso di mangiare|non voglio prendere|non voglio fare|stated \+ else|"
    r"dismissal \(model\)|didn't work|did nothing|quit)$"
)


@dataclass(frozen=True)
class Route:
    pipeline: str
    reason: str
    decomposition: str | None = None  # the logical query, e.g. '"A" AND NOT "B"'
    positive: str | None = None  # the question with its exclusions cut out (what the relevance gate judges)
    excluded: tuple[str, ...] = ()
    # every cue asks for alternatives ("apart from X"): a sentence listing X among them answers (aboutness)
    alternatives: bool = False
    # the exclusion detector ran on the question (False: router off, a pipeline named by the caller); when it ran,
    # `excluded` is its whole answer (() : it found no NOT term) and later stages need not run it again
    detector_ran: bool = field(default=False, compare=False)

    @property
    def not_terms(self) -> tuple[str, ...] | None:
        """The detector's NOT terms whatever the route (() when it found none), None when it did not run."""
        return self.excluded if self.detector_ran else None

    def trace(self) -> dict[str, Any]:
        out = {**asdict(self), "excluded": list(self.excluded)}
        out.pop("detector_ran")  # the trace keeps its shape: `excluded` already names a routed question's NOT terms
        return out

    @property
    def logical(self) -> bool:
        """Routed to the logical decomposition (an exclusion question whose ranking and reply follow it)."""
        return bool(self.excluded) and self.pipeline == EXCLUSION_PIPELINE

    @property
    def demoted(self) -> bool:
        """An exclusion question answered by the configured pipeline, its excluded topics' cards last
        (retrieval.exclusion_answer = demote)."""
        return bool(self.excluded) and self.pipeline != EXCLUSION_PIPELINE

    def about_excluded(self, hit: Any) -> bool:
        """The hit's document is about an excluded thing: its title names it (demote mode's test)."""
        return self.mentions_excluded(hit.segment.title)

    def excluded_last(self, hits: list[Any]) -> list[Any]:
        """``hits`` with those about an excluded thing moved after the others (each group keeps its order)."""
        return sorted(hits, key=self.about_excluded)  # stable: False (not about) before True

    def mentions_excluded(self, text: str) -> bool:
        """True when ``text`` names an excluded thing (accent- and case-folded, whole words, leading article
        dropped: "la carne rossa" matches "carne rossa"), or a member of an excluded class ("without
        medication": a sentence recommending paracetamol names a medicine, ``CLASS_MEMBERS``). When the question
        asks for alternatives, a sentence that only lists the excluded thing among them ("Good sources of iron
        include lean red meat, beans, ...") does not count: it is the answer."""
        folded = fold(text)
        for phrase in self.excluded:
            words = fold(phrase).split()
            while len(words) > 1 and words[0] in _ARTICLES:
                words = words[1:]
            if words and re.search(r"\b" + r"\s+".join(map(re.escape, words)) + r"\b", folded):
                if not (self.alternatives and _only_listed(text, phrase)):
                    return True
            elif _names_across_languages(text, phrase) and not (self.alternatives and _only_listed(text, phrase)):
                return True  # "zenzero" excluded, an English sentence about ginger (mention.SYNONYMS)
            members = CLASS_MEMBERS.get(words[-1]) if words else None
            if members and re.search(r"\b(?:" + "|".join(members) + r")\b", folded):
                return True
        return False


def _names_across_languages(text: str, phrase: str) -> bool:
    """A sentence of ``text`` holds every content word of ``phrase`` in another language (stems and EN/IT synonyms,
    ``mention.term_words``), and a word of it is a translation, not the phrase's own word."""
    tw = term_words(phrase, "", drop_shared=False)
    own = {stem(w) for w in words(phrase)}
    if not tw.stems or all(g <= own for g in tw.stems):
        return False  # no translation known: the literal match above decides
    for sentence in split_sentences(text) or [text]:
        if names(sentence, tw) and not {stem(w) for w in words(sentence)} >= {s for g in tw.stems for s in g & own}:
            return True
    return False


def _only_listed(text: str, phrase: str) -> bool:
    """Every sentence of ``text`` that names ``phrase`` names it as one item of an enumeration."""
    tw = term_words(phrase, "", drop_shared=False)
    naming = [x for x in split_sentences(text) or [text] if names(x, tw)]
    return bool(naming) and all(listed(x, tw) for x in naming)


_ARTICLES = frozenset("the a an il lo la i gli le l un una uno".split())

# Excluded classes whose members a certified sentence names instead of the class (folded words, regex pieces):
# "back pain without medication" must not be answered with "Paracetamol is generally suitable...".
_MEDICINES = MEDICINE_WORDS + (
    r"|pain\s+relief|analgesics?|codeine|tachipirina|codeina|medicinal|analgesic[oi]|antidepressiv[oi]"
)
CLASS_MEMBERS: dict[str, tuple[str, ...]] = {
    head: (_MEDICINES,)
    for head in (
        "medication medications medicine medicines meds drugs drug pills tablets painkillers painkiller "
        "farmaci farmaco medicine medicinali antidolorifici"
    ).split()
}


def route(question: str, requested: str | None, settings: Any) -> Route:
    """Which pipeline answers ``question``, and why."""
    if requested:
        return Route(requested, "pipeline named by the caller")
    default = settings.retrieval.pipeline
    if not settings.retrieval.route_exclusions:
        return Route(default, "router off (retrieval.route_exclusions=false)")
    found = analyse(question, learned=settings.retrieval.learned_exclusions)
    if found is None:
        return Route(default, "no exclusion in the question", detector_ran=True)
    mode = settings.retrieval.exclusion_answer
    demote = mode == "demote" or (mode == "by_cue" and bool(SITUATIONAL_CUES.match(found.cues[0])))
    return Route(
        default if demote else EXCLUSION_PIPELINE,
        f"exclusion cue {found.cues[0]!r} ({found.language})"
        + (f"; {default}, cards about the excluded topic last" if demote else ""),
        to_string(found.query),
        found.positive,
        found.negatives,
        asks_for_alternatives(found.cues),
        detector_ran=True,
    )

"""The red-flag screen: run first, on the raw text, whatever happens to the question afterwards.

- The taxonomy: four urgent actions, each with a certified card in the corpus (``urgent_action`` in the
  card's front matter, one card per action and language, with its links):
  ``emergency`` (call 112 / 118 / 999), ``poisoning`` (emergency number and poison centre; do not make the
  child vomit), ``mental_health`` (emergency number, do not stay alone, a crisis line) and
  ``maternity_unit`` (call your maternity unit now). Every rule category of ``chatbot.stages.safety`` maps
  to exactly one action (``CATEGORY_ACTION``); the classifier predicts the actions directly.
- ``screen(raw)``: today's hand-written rules OR the trained classifier (``redflag_classifier``), either
  one firing is enough, except that a rule needs some classifier urgency (``framing_floor``) when the message
  is framed as a past event, a hypothetical or a question for study (``redflag_framing``) and states no present
  danger (``redflag_rules.present_danger``); the primary
  action is the one with the highest score (a rule's action counts as 0.5, so a
  confident classifier chooses between, say, the maternity unit and 999 for heavy bleeding with fainting).
- With the contextual e5 head (``redflag_context``, on by default when its files are shipped) the classifier
  is the mix of both models (``with_context``); a message framed as past, hypothetical or study that states no
  present danger is urgent only when both the head and the mix reach the threshold (the min of the two), its
  rules included.
- ``urgent_fields(screen, language)``: the answer object's urgent keys (``urgent``, ``urgent_message``,
  ``urgent_action``, ``urgent_links``) from the cards, in the patient's language.
"""

from __future__ import annotations

import sys
import time
import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from chatbot.settings import DEMO_CORPUS
from chatbot.stages import redflag_gate as gate
from chatbot.stages import redflag_rules as rules
from chatbot.stages.redflag_emotion import neutral, worried_complaint
from chatbot.stages.redflag_framing import framing
from chatbot.stages.text_match import tokens

# Order = priority when two actions score the same.
ACTIONS: tuple[str, ...] = ("mental_health", "poisoning", "emergency", "maternity_unit")

# Each rule category of chatbot.stages.safety -> one action (NHS "call 999" vs "call your maternity unit").
CATEGORY_ACTION: dict[str, str] = {
    "bleeding_in_pregnancy": "maternity_unit",
    "severe_pain_in_pregnancy": "maternity_unit",
    "reduced_fetal_movements": "maternity_unit",
    "waters_breaking_early": "maternity_unit",
    "severe_headache_with_visual_disturbance": "maternity_unit",
    "chest_pain_or_breathing": "emergency",
    "stroke_signs": "emergency",
    "seizure": "emergency",
    "feverish_or_floppy_newborn": "emergency",
    "collapse": "emergency",
    "cord_prolapse": "emergency",
    "allergic_reaction_airway": "emergency",
    "allergic_reaction_breathing": "emergency",
    "sting_with_faintness": "emergency",
    "self_harm_or_harming_the_baby": "mental_health",
    "overdose": "poisoning",
    "fever_reading_under_3_months": "emergency",
    "fever_after_birth": "maternity_unit",
    "medicine_missing": "poisoning",
    "battery_or_magnet_missing": "poisoning",
    "child_took_medicine": "poisoning",
    "itching_in_late_pregnancy": "maternity_unit",
}

RULE_CHUNK_CHARS = 1500  # the rules read at most 400 tokens: long texts are screened in overlapping chunks
MAX_SCREEN_CHARS = 60_000  # beyond this a message is not a patient's question; its start is screened
# an allergic reaction reaching the airway or making someone faint: the emergency number first (NHS anaphylaxis)
ANAPHYLAXIS = frozenset({"allergic_reaction_airway", "allergic_reaction_breathing", "sting_with_faintness"})
RULE_ACTION_SCORE = 0.5  # a rule's action is primary unless the classifier gives another one more


@dataclass(frozen=True)
class Screen:
    """The screen's verdict on one message."""

    urgent: bool
    actions: tuple[str, ...] = ()  # fired actions, primary first
    rule_flags: tuple[rules.RedFlag, ...] = ()
    classifier: dict[str, Any] | None = None  # scores, threshold, the unit that scored highest
    ms: float = 0.0

    @property
    def action(self) -> str | None:
        return self.actions[0] if self.actions else None

    def trace(self) -> dict[str, Any]:
        return {
            "urgent": self.urgent,
            "actions": list(self.actions),
            "rules": [
                {"category": f.category, "action": CATEGORY_ACTION[f.category], "evidence": list(f.evidence)}
                for f in self.rule_flags
            ],
            "classifier": self.classifier,
            "ms": round(self.ms, 2),
        }


def raw_text(question: Any) -> str:
    """Whatever the patient sent, as text the screen can read (never raises): bytes decoded, control
    characters dropped, spaces collapsed; anything else that is not text screens as empty."""
    if isinstance(question, bytes | bytearray):
        question = bytes(question).decode("utf-8", errors="replace")
    if not isinstance(question, str):
        return ""
    text = unicodedata.normalize("NFC", question[: MAX_SCREEN_CHARS * 2])
    text = "".join(ch if unicodedata.category(ch)[0] != "C" else " " for ch in text).replace("\ufffd", " ")
    return " ".join(text.split())[:MAX_SCREEN_CHARS]


def rule_flags(text: str) -> list[rules.RedFlag]:
    """The hand-written rules over the whole text, in overlapping chunks when it is long."""
    if len(text) <= RULE_CHUNK_CHARS:
        return rules.detect_red_flags(text)
    seen: dict[str, rules.RedFlag] = {}
    step = RULE_CHUNK_CHARS // 2
    for start in range(0, len(text), step):
        for flag in rules.detect_red_flags(text[start : start + RULE_CHUNK_CHARS]):
            seen.setdefault(flag.category, flag)
        if start + RULE_CHUNK_CHARS >= len(text):
            break
    return list(seen.values())


_DEFAULT = object()


def context_score(context: Any, text: str) -> Any:
    """The contextual head's prediction, or None when the encoder fails (said once on stderr: the screen then
    runs without the veto, i.e. with more alarms, never with fewer)."""
    global _CONTEXT_WARNED
    try:
        return context.score(text)
    except Exception as exc:  # noqa: BLE001 - the screen must go on; the veto only removes alarms
        if not _CONTEXT_WARNED:
            print(f"red-flag screen: contextual head unavailable, screening without it: {exc}", file=sys.stderr)
            _CONTEXT_WARNED = True
        return None


_CONTEXT_WARNED = False


def calm_frames(text: str, negation: bool = False) -> tuple[str, ...]:
    """How the message frames its scary words (``redflag_framing``: past, hypothetical, study; with
    ``negation`` also "negated" when it denies a symptom), () when it states a present danger."""
    frames = framing(text)
    if negation and rules.without_negated(text) != text and not rules.sign_after_contrast(text):
        frames = (*frames, "negated")
    if worried_complaint(text) and not rules.detect_red_flags(text) and not rules.names_a_symptom(text):
        frames = (*frames, "worried_complaint")
    if frames and rules.present_danger(text):  # "...and now I'm bleeding": the present wins over the framing
        return ()
    return frames


# The contextual head reads any text; on text unlike a patient's message (a shopping list, a weather forecast, a CSV
# row) it can score 0.9+. Its alarm needs the message to be about someone, or the n-gram model over its own bar.
_SOMEONE = frozenset(
    "i im ive id me my mine myself we us our you your he him his she her they them their baby babies babys newborn "
    "child children kid kids son daughter wife husband partner mum mom mummy mommy dad daddy sister brother friend "
    "someone somebody anyone nobody pregnant pregnancy help emergency urgent ambulance io mi me mio mia miei mie noi "
    "nostro nostra nostri nostre tu ti te tuo tua lui lei loro bambino bambina bambini bimbo bimba bimbi figlio "
    "figlia figli neonato neonata moglie marito compagno compagna mamma papa nonna nonno sorella fratello amica "
    "amico qualcuno nessuno incinta gravidanza aiuto emergenza urgente ambulanza sono ho sto 112 118 999 911".split()
)


def about_someone(text: str) -> bool:
    """The message speaks of a person (a pronoun, a relative, a pregnancy), asks for help, or names a symptom."""
    return any(t in _SOMEONE for t in tokens(text)[:400]) or rules.names_a_symptom(text)


def with_context(
    text: str,
    flags: list[rules.RedFlag],
    scores: dict[str, float],
    trace: dict[str, Any],
    ctx: Any,
    ngram: Any,
    meta: dict[str, Any],
) -> list[rules.RedFlag]:
    """The classifier's verdict when the contextual head ran (``redflag_gate``): the mixed score of the head
    and the n-gram model against the bar of the message's cell (calm-framed or not, a rule fired or not); the
    action the highest mix of both. Fills ``scores`` and ``trace``; returns the rules that count."""
    p = gate.params(meta, None if ngram is not None else 1.0)
    ng_urgent, ng_scores = (ngram.urgent_score, ngram.scores) if ngram is not None else (0.0, ctx.scores)
    mixed = {a: p["weight"] * ctx.scores[a] + (1 - p["weight"]) * ng_scores[a] for a in ctx.scores}
    frames = calm_frames(text, bool(meta.get("negation_frame", False)))
    if frames:
        trace["framing"] = list(frames)
    urgent = float(gate.score(ctx.urgent_score, ng_urgent, bool(frames), p))
    threshold = float(gate.bar(False, bool(frames), p))
    asks = "?" in text
    trace.update(combined=round(urgent, 4), threshold=threshold, veto=float(gate.bar(True, bool(frames), p, asks)))
    if flags and not gate.urgent(ctx.urgent_score, ng_urgent, True, bool(frames), p, asks):
        firm = [f for f in flags if f.category in rules.FIRM]
        if len(firm) < len(flags):
            trace["vetoed"] = [f.category for f in flags if f.category not in rules.FIRM]
        flags = firm
    ng_bar = ngram.threshold if ngram is not None else 0.0  # the n-gram model's own bar (config.json "threshold")
    if urgent >= threshold and not (ng_urgent < ng_bar and not about_someone(text)):
        best = max(mixed, key=lambda a: mixed[a])
        scores[best] = max(scores[best], mixed[best])
    return flags


def screen(question: Any, classifier: Any = _DEFAULT, context: Any = _DEFAULT) -> Screen:
    """Rules OR classifier OR contextual head on the raw message, rules and classifier vetoed when the head,
    reading the whole message, scores it below its ``veto``. ``classifier``: a ``RedFlagClassifier``, None for
    rules only, or (default) the shipped one; ``context``: a ``redflag_context.ContextScorer``, None for
    none, or (default) the shipped head when its files are present."""
    start = time.perf_counter()
    text = raw_text(question)
    if not text.strip():
        return Screen(False, ms=(time.perf_counter() - start) * 1000)
    if classifier is _DEFAULT:
        from chatbot.stages.redflag_classifier import shipped_classifier

        classifier = shipped_classifier()
    if context is _DEFAULT:  # rules only (classifier=None) means no trained model at all
        from chatbot.stages.redflag_context import shipped_context

        context = shipped_context() if classifier is not None else None
    flags = rule_flags(text)
    scores: dict[str, float] = {a: 0.0 for a in ACTIONS}
    mode = str(getattr(getattr(context, "head", None), "meta", {}).get("emotion_neutral", ""))
    calm = neutral(text) if mode else text  # the models read the situation, not the tone (redflag_emotion)
    result = classifier.predict(rules.without_negated(calm)) if classifier is not None else None
    info: dict[str, Any] | None = result.trace() if result is not None else None
    ctx = context_score(context, calm if mode == "both" else text) if context is not None else None
    if ctx is not None:
        info = {**(info or {}), "context": ctx.trace()}
        flags = with_context(text, flags, scores, info["context"], ctx, result, context.head.meta)
    elif result is not None:
        floor = getattr(classifier, "rule_floor", 0.0)
        if floor and flags and result.urgent_score < floor:
            info["rules_overruled"] = [f.category for f in flags]
            flags = []
        framing_floor = getattr(classifier, "framing_floor", 0.0)
        frames = framing(text) if framing_floor and flags and result.urgent_score < framing_floor else ()
        if frames and not rules.present_danger(text):
            info["rules_overruled"] = [f.category for f in flags]
            info["framing"] = list(frames)
            flags = []
        for action in result.fired:
            scores[action] = max(scores[action], result.scores[action])
    for flag in flags:  # a rule is sure of urgency, less of the action: a confident classifier picks it
        scores[CATEGORY_ACTION[flag.category]] = max(scores[CATEGORY_ACTION[flag.category]], RULE_ACTION_SCORE)
        if flag.category in ANAPHYLAXIS:  # 999/112 before a poisons line or a maternity unit, whatever else fired
            scores["emergency"] = max(scores.values()) + 0.01
    fired = [a for a in ACTIONS if scores[a] > 0]
    fired.sort(key=lambda a: (-scores[a], ACTIONS.index(a)))
    return Screen(bool(fired), tuple(fired), tuple(flags), info, (time.perf_counter() - start) * 1000)


# -- the certified urgent cards ----------------------------------------------------------------------


@dataclass(frozen=True)
class UrgentCard:
    action: str
    language: str
    doc_id: str
    title: str
    text: str  # the card's body without its Markdown heading
    links: tuple[dict[str, str], ...] = field(default_factory=tuple)
    demo: bool = False


class UrgentCardError(ValueError):
    """An urgent card that is malformed or missing."""


def read_urgent_card(path: Path) -> UrgentCard | None:
    """The urgent card in this Markdown file (same format as every card, plus ``urgent_action`` and
    ``links``), or None when the file is an ordinary card."""
    import yaml

    from corpus.importers import read_markdown_file

    doc = read_markdown_file(path)  # the corpus's own checks: id, http(s) source_url, text
    meta = yaml.safe_load(path.read_text(encoding="utf-8").split("\n---", 1)[0].lstrip("-\n")) or {}
    action = meta.get("urgent_action")
    if action is None:
        return None
    if action not in ACTIONS:
        raise UrgentCardError(f"{path}: urgent_action {action!r} is not one of {', '.join(ACTIONS)}")
    links = [{"title": doc.title, "url": doc.source_url}]
    for item in meta.get("links") or []:
        if not isinstance(item, dict) or not str(item.get("url", "")).startswith(("http://", "https://")):
            raise UrgentCardError(f"{path}: every entry of links needs a title and an http(s) url: {item!r}")
        links.append({"title": str(item.get("title") or item["url"]), "url": str(item["url"])})
    unique = list({link["url"]: link for link in reversed(links)}.values())[::-1]
    body = "\n".join(line for line in doc.text.strip().splitlines() if not line.startswith("#")).strip()
    body = "\n\n".join(" ".join(p.split()) for p in body.split("\n\n") if p.strip())
    return UrgentCard(action, doc.language, doc.id, doc.title, body, tuple(unique), doc.demo)


@lru_cache(maxsize=8)
def load_urgent_cards(folder: Path = DEMO_CORPUS) -> dict[tuple[str, str], UrgentCard]:
    """Every urgent card in the folder by (action, language)."""
    cards: dict[tuple[str, str], UrgentCard] = {}
    for path in sorted(Path(folder).rglob("*.md")):
        if path.name.lower() == "readme.md":
            continue
        try:
            card = read_urgent_card(path)
        except UrgentCardError:
            raise
        except Exception:  # noqa: BLE001 - an ordinary card the corpus importer reports on its own
            continue
        if card is not None:
            key = (card.action, card.language)
            if key in cards:
                raise UrgentCardError(f"two urgent cards for {key}: {cards[key].doc_id} and {card.doc_id}")
            cards[key] = card
    return cards


def urgent_card_ids(folder: Path = DEMO_CORPUS) -> frozenset[str]:
    """Document ids of the urgent cards (none when the folder cannot be read: answers then keep every link)."""
    try:
        return frozenset(card.doc_id for card in load_urgent_cards(Path(folder)).values())
    except (OSError, UrgentCardError):
        return frozenset()


def urgent_fields(result: Screen, language: str, folder: Path = DEMO_CORPUS) -> dict[str, Any]:
    """The answer object's urgent keys: the primary action's certified card first (its first paragraph
    for any other action fired), in the patient's language (English for any language but Italian); the
    fixed text of ``safety.urgent_message`` if a card is missing. ``urgent_cards``: each card the message
    comes from (doc_id, title, its own source_url), the links an urgent reply carries first."""
    if not result.urgent:
        return {"urgent": False}
    lang = "it" if language == "it" else "en"
    try:
        cards = load_urgent_cards(Path(folder))
    except (OSError, UrgentCardError):
        cards = {}
    parts: list[str] = []
    links: list[dict[str, str]] = []
    used: list[dict[str, str]] = []  # the certified urgent cards the message comes from, in its order
    missing = []
    for i, action in enumerate(result.actions):
        card = cards.get((action, lang)) or cards.get((action, "en"))
        if card is None:
            missing.append(action)
            continue
        parts.append(card.text if i == 0 else card.text.split("\n\n")[0])
        used.append({"doc_id": card.doc_id, "title": card.title, "url": card.links[0]["url"]})
        links.extend(link for link in card.links if link["url"] not in {x["url"] for x in links})
    if not parts:
        parts.append(rules.URGENT_MESSAGE[lang])
    out: dict[str, Any] = {
        "urgent": True,
        "urgent_message": "\n\n".join(parts),
        "urgent_action": result.action,
        "urgent_links": links,
        "urgent_cards": used,
    }
    if missing:
        out["urgent_cards_missing"] = missing
    return out

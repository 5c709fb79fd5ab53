"""The question as the patient typed it: normalised (NFC, control characters out, white space folded) or
refused with a message in English and Italian (``InvalidQuestion``)."""

from __future__ import annotations

import unicodedata
from typing import Any

MAX_QUESTION_CHARS = 2000


class InvalidQuestion(ValueError):
    """A question the bot cannot take; ``str(exc)`` is the English message, ``italian`` its translation."""

    def __init__(self, message: str, italian: str = "") -> None:
        super().__init__(message)
        self.italian = italian

    @property
    def bilingual(self) -> str:
        return f"{self}\n{self.italian}" if self.italian else str(self)


def _unreadable_share(text: str) -> tuple[int, float]:
    """Control, private-use, unassigned and U+FFFD characters: how many, and their share of the non-blank ones."""
    visible = [ch for ch in text if not ch.isspace()]
    bad = sum(1 for ch in visible if ch == "\ufffd" or unicodedata.category(ch) in ("Cc", "Co", "Cn", "Cs"))
    return bad, (bad / len(visible) if visible else 0.0)


def validate_question(question: Any, max_chars: int = MAX_QUESTION_CHARS) -> str:
    """Normalise a question or raise InvalidQuestion with a message fit for the patient."""
    if not isinstance(question, str):
        raise InvalidQuestion("The question must be text.", "La domanda deve essere un testo.")
    text = unicodedata.normalize("NFC", question)
    bad, share = _unreadable_share(text)
    text = "".join(ch for ch in text if ch in "\n\t" or unicodedata.category(ch)[0] != "C")
    text = text.replace("\ufffd", " ")
    text = " ".join(text.split())
    if not text:
        raise InvalidQuestion("Please type a question.", "Scrivi una domanda.")
    if bad >= 3 and share >= 0.2:
        raise InvalidQuestion(
            "Your message contains unreadable characters (binary data?). Please type your question in words.",
            "Il messaggio contiene caratteri illeggibili (dati binari?). Scrivi la tua domanda a parole.",
        )
    if len(text) > max_chars:
        raise InvalidQuestion(
            f"Your question is too long ({len(text)} characters); please keep it under {max_chars}.",
            f"La domanda è troppo lunga ({len(text)} caratteri); resta sotto i {max_chars}.",
        )
    if not any(ch.isalnum() for ch in text):
        raise InvalidQuestion("Please type your question in words.", "Scrivi la tua domanda a parole.")
    return text

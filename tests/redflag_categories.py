"""The red-flag categories the rules find in a message, in the order ``detect_red_flags`` returns them."""

from __future__ import annotations

from chatbot.stages.redflag_rules import detect_red_flags


def categories(text: str) -> list[str]:
    return [f.category for f in detect_red_flags(text)]

"""Text made storable before it reaches the database: control characters and lone surrogates escaped, an
over-long question cut (SQLite and PostgreSQL store the result alike)."""

from __future__ import annotations

import re
from typing import Any

# A stored question is cut here (5 times the input limit): an over-long question is refused anyway, and an
# API caller must not fill the database; the trace keeps the original length.
STORED_QUESTION_MAX_CHARS = 10_000
# Escaped before storing: C0 controls but tab, newline and carriage return (PostgreSQL rejects NUL in text
# and JSON; the others would be stored invisibly), DEL and C1 controls, and lone surrogates (not encodable
# as UTF-8 by either driver).
_UNSTORABLE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")


def _escape(m: re.Match) -> str:
    code = ord(m.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def storable_text(text: str) -> tuple[str, int]:
    """(text, number of escapes): NUL, other control characters (not tab, newline, CR) and lone surrogates
    become visible escapes (``\\x00``, ``\\x1b``, ``\\ud800``) that SQLite and PostgreSQL both store."""
    return _UNSTORABLE.subn(_escape, text)


def storable_json(value: Any) -> Any:
    """``value`` (JSON data: trace, links) with every string, key included, made storable."""
    if isinstance(value, str):
        return storable_text(value)[0]
    if isinstance(value, dict):
        return {storable_json(k): storable_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [storable_json(v) for v in value]
    return value


def storable_question(question: Any) -> tuple[str, dict[str, Any] | None]:
    """(stored text, note): the question made storable and cut at STORED_QUESTION_MAX_CHARS; the note (for
    the trace) gives the original length and what was changed, or is None when nothing was."""
    raw = question if isinstance(question, str) else str(question)
    cut = raw[:STORED_QUESTION_MAX_CHARS]
    text, escaped = storable_text(cut)
    if escaped == 0 and len(cut) == len(raw):
        return text, None
    return text, {"chars": len(raw), "escaped": escaped, "truncated": len(cut) < len(raw)}

"""Question sets stored as JSONL: one record a line, each with the fields a benchmark needs; a malformed line
is an error naming the file and the line."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def read_records(path: Path, fields: Sequence[str], what: str) -> list[tuple[int, dict[str, Any]]]:
    """``(line number, record)`` for each non-blank line of ``path``; ``what`` names the set in errors
    ("reply set"). Raises FileNotFoundError for a missing file, ValueError for invalid JSON or a missing field."""
    if not path.is_file():
        raise FileNotFoundError(f"{what} {path} not found")
    out: list[tuple[int, dict[str, Any]]] = []
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}:{lineno}: invalid JSON: {exc.msg}") from exc
        if not isinstance(rec, dict):
            raise ValueError(f"{path}:{lineno}: expected a JSON object")
        missing = [f for f in fields if f not in rec]
        if missing:
            raise ValueError(f"{path}:{lineno}: missing field(s) {', '.join(missing)}")
        out.append((lineno, rec))
    return out

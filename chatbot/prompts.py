"""Prompt templates as files in ``prompts/``: one template per file.

File format: leading lines starting with ``#`` document the template and its variables (stripped); then
``[system]`` and ``[user]`` lines open the messages. Variables are ``{name}``; every variable the body
uses must be given, and no other (a typo is an error, never a silently empty slot).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from chatbot.resources import prompts_dir

PROMPTS_DIR = prompts_dir()
_VAR = re.compile(r"\{([a-z_][a-z0-9_]*)\}")
_ROLE = re.compile(r"^\[(system|user|assistant)\]\s*$")


@dataclass(frozen=True)
class Prompt:
    name: str
    parts: tuple[tuple[str, str], ...]  # (role, template)
    variables: frozenset[str]
    doc: str

    @property
    def version(self) -> str:
        """Short hash of the template body: part of cache keys, so editing a prompt invalidates them."""
        return hashlib.sha1(repr(self.parts).encode()).hexdigest()[:10]

    def messages(self, **values: object) -> list[dict[str, str]]:
        missing = self.variables - values.keys()
        extra = values.keys() - self.variables
        if missing or extra:
            raise KeyError(f"prompt {self.name!r}: missing {sorted(missing)}, unexpected {sorted(extra)}")
        return [
            {"role": role, "content": _VAR.sub(lambda m: str(values[m.group(1)]), text)} for role, text in self.parts
        ]


def parse_prompt(name: str, text: str) -> Prompt:
    lines = text.splitlines()
    doc: list[str] = []
    while lines and lines[0].startswith("#"):
        doc.append(lines.pop(0).lstrip("# ").rstrip())
    parts: list[tuple[str, list[str]]] = []
    for line in lines:
        m = _ROLE.match(line)
        if m:
            parts.append((m.group(1), []))
        elif parts:
            parts[-1][1].append(line)
        elif line.strip():
            raise ValueError(f"prompt {name!r}: text before the first [system]/[user] line: {line!r}")
    if not parts:
        raise ValueError(f"prompt {name!r}: no [system] or [user] section")
    bodies = tuple((role, "\n".join(body).strip()) for role, body in parts)
    variables = frozenset(v for _, body in bodies for v in _VAR.findall(body))
    return Prompt(name, bodies, variables, "\n".join(doc))


@lru_cache(maxsize=32)
def load_prompt(name: str, directory: Path = PROMPTS_DIR) -> Prompt:
    """prompts/<name>.txt, parsed once per process."""
    path = Path(directory) / f"{name}.txt"
    return parse_prompt(name, path.read_text(encoding="utf-8"))

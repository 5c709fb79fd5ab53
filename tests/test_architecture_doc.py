"""docs/architecture.md stays true: every module it names exists, every module of chatbot/ is named."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "architecture.md"
PACKAGES_NAMED_WHOLE = ("logical/", "store/", "training/")  # listed as one row each


def named_modules() -> set[str]:
    return set(re.findall(r"^\| `([a-z0-9_/]+(?:\.py|/))` \|", DOC.read_text(encoding="utf-8"), flags=re.MULTILINE))


def chatbot_modules() -> set[str]:
    out = set()
    for path in (ROOT / "chatbot").rglob("*.py"):
        rel = path.relative_to(ROOT / "chatbot").as_posix()
        if path.name == "__init__.py" or rel.startswith(PACKAGES_NAMED_WHOLE):
            continue
        out.add(rel)
    return out


def test_every_named_module_exists():
    missing = [m for m in sorted(named_modules()) if not (ROOT / "chatbot" / m).exists()]
    assert missing == []


def test_every_chatbot_module_is_named():
    assert sorted(chatbot_modules() - named_modules()) == []


def test_each_mission_stage_is_named_by_file():
    text = DOC.read_text(encoding="utf-8")
    for stage in ("stages/pre_retrieval.py", "stages/hydoc.py", "stages/retrieve.py", "stages/rerank.py"):
        assert f"`{stage}`" in text

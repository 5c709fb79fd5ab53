"""Screen every message of one or more red-flag sets with this checkout's ``chatbot.stages.redflags.screen`` (the
shipped models), for comparing two checkouts' screening code side by side (session 35's 'about someone' gate).

    python -m evaluation.redflags_screen_dump OUT.json SET.jsonl [SET.jsonl ...]

Run it from each checkout (its ``chatbot`` package is imported). ``OUT.json``: {"<set file>:<id>": {"gold", "urgent",
"actions", "lang"}}; no text. A set row is {id, language, text, urgent, ...} (a red-flag set) or {lang, label, text}
(a seed file: gold is label != "none").
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def dump(out: Path, sets: list[Path]) -> dict[str, Any]:
    from chatbot.stages.redflags import screen

    rows: dict[str, Any] = {}
    for f in sets:
        for n, line in enumerate(f.read_text(encoding="utf-8").splitlines()):
            if not line.strip():
                continue
            r = json.loads(line)
            gold = bool(r["urgent"]) if "urgent" in r else r.get("label") not in (None, "none")
            s = screen(r.get("text") or r.get("question"))
            rows[f"{f.name}:{r.get('id', n)}"] = {
                "gold": gold,
                "urgent": s.urgent,
                "actions": list(s.actions),
                "lang": r.get("language") or r.get("lang"),
            }
    out.write_text(json.dumps(rows), encoding="utf-8")
    return rows


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    dump(Path(sys.argv[1]), [Path(a) for a in sys.argv[2:]])

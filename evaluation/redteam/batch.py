"""Running the red-team questions: the question set, the demo index and one `chatbot ask --batch` process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from importlib.resources import files
from pathlib import Path
from typing import Any

from chatbot.resources import demo_cards, workspace_root

QUESTIONS = Path(str(files("evaluation.redteam") / "questions.jsonl"))
DEMO_CARDS = demo_cards()


def default_data_dir() -> Path:
    """One demo index per embedder (an index is pinned to the model that built it)."""
    from chatbot.settings import load_settings

    return Path(f"/tmp/redteam-{load_settings().embedding.model}")


STATUSES = ("answered", "no_certified_info", "safe_reply", "invalid_input")


def load_questions(path: Path = QUESTIONS) -> list[dict[str, Any]]:
    items = []
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        rec = json.loads(line)
        missing = {"id", "text", "category", "expected_urgent", "expected_status"} - set(rec)
        if missing:
            raise ValueError(f"{path}:{lineno}: missing {sorted(missing)}")
        for status in rec["expected_status"].split("|"):
            if status not in STATUSES:
                raise ValueError(f"{path}:{lineno}: unknown status {status!r}")
        items.append(rec)
    return items


def chatbot_bin() -> str:
    candidate = Path(sys.executable).with_name("chatbot")
    return str(candidate) if candidate.exists() else "chatbot"


def _env(data_dir: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The caller's environment (CHATBOT_* settings included) with the red-team data folder."""
    env = dict(os.environ)
    env.update({"CHATBOT_PATHS__DATA_DIR": str(data_dir), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"})
    env.update(extra or {})
    return env


def ensure_demo_index(data_dir: Path, log=print) -> dict[str, Any]:
    """`chatbot ingest corpus/demo/cards` into data_dir (a no-op when nothing changed)."""
    proc = subprocess.run(
        [chatbot_bin(), "ingest", str(DEMO_CARDS), "--quiet"],
        env=_env(data_dir),
        capture_output=True,
        text=True,
        check=False,
        cwd=workspace_root(),
    )
    if proc.returncode != 0:
        raise RuntimeError(f"chatbot ingest failed: {proc.stderr[-2000:]}")
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    log(f"index: {summary.get('segments')} segments, {summary.get('embedded')} embedded now")
    return summary


def run_batch(
    items: Sequence[dict[str, Any]], data_dir: Path, extra_env: dict[str, str] | None = None, log=print
) -> tuple[dict[str, dict[str, Any]], float]:
    """Answers by id from one `chatbot ask --batch` process, and its wall time in seconds."""
    batch = data_dir / "redteam-batch.jsonl"
    data_dir.mkdir(parents=True, exist_ok=True)
    with batch.open("w", encoding="utf-8") as fh:
        for it in items:
            fh.write(json.dumps({"id": it["id"], "text": it["text"]}, ensure_ascii=True) + "\n")
    start = time.perf_counter()
    proc = subprocess.run(
        [chatbot_bin(), "ask", "--batch", str(batch)],
        env=_env(data_dir, extra_env),
        capture_output=True,
        text=True,
        check=False,
        cwd=workspace_root(),
    )
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"chatbot ask --batch failed ({proc.returncode}): {proc.stderr[-3000:]}")
    answers = {}
    for line in proc.stdout.split("\n"):  # not splitlines(): a reply may hold U+2028 and friends
        line = line.strip()
        if line.startswith("{"):
            rec = json.loads(line)
            answers[str(rec["id"])] = rec
    missing = [it["id"] for it in items if it["id"] not in answers]
    if missing:
        raise RuntimeError(f"no answer for {missing[:5]}...")
    log(f"{len(answers)} answers in {seconds:.1f} s")
    return answers, seconds


def llm_endpoint_alive(base_url: str, timeout: float = 3.0) -> bool:
    import urllib.request

    try:
        with urllib.request.urlopen(base_url.rstrip("/") + "/models", timeout=timeout) as resp:  # noqa: S310
            return resp.status == 200
    except Exception:  # noqa: BLE001
        return False

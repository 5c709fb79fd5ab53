"""The HyDoc cache: generated HyDocs by normalised question, model, prompt versions and options, in
``data_dir/hyde-cache.sqlite`` (shared by the pipelines, the logical term HyDocs and bench_table2)."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
import unicodedata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chatbot.prompts import load_prompt

if TYPE_CHECKING:
    from chatbot.pipeline import Services


def normalise_question(question: str) -> str:
    """Cache key form: NFKC, case-folded, single spaces, no trailing punctuation."""
    text = unicodedata.normalize("NFKC", question).casefold()
    text = " ".join(text.split())
    return text.rstrip(" ?!.;:")


class HydeCache:
    """JSON values by key in a SQLite file (safe across threads and processes)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as db:
            db.execute("CREATE TABLE IF NOT EXISTS hydoc (key TEXT PRIMARY KEY, value TEXT NOT NULL, created REAL)")

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, timeout=10)

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock, self._connect() as db:
            row = db.execute("SELECT value FROM hydoc WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def put(self, key: str, value: dict[str, Any]) -> None:
        with self._lock, self._connect() as db:
            db.execute(
                "INSERT OR REPLACE INTO hydoc (key, value, created) VALUES (?, ?, ?)",
                (key, json.dumps(value, ensure_ascii=False), time.time()),
            )


_CACHES: dict[Path, HydeCache] = {}


def cache_for(services: Services) -> HydeCache | None:
    if not services.settings.hyde.cache:
        return None
    path = Path(services.data_dir) / "hyde-cache.sqlite"
    if path not in _CACHES:
        _CACHES[path] = HydeCache(path)
    return _CACHES[path]


def _cache_key(kind: str, question: str, services: Services, prompts: list[str], extra: str = "") -> str:
    cfg = services.settings.hyde
    llm = services.settings.llm
    payload = [
        kind,
        normalise_question(question),
        llm.model,
        [load_prompt(p).version for p in prompts],
        cfg.max_tokens,
        cfg.samples,
        cfg.sample_temperature if cfg.samples > 1 else None,
        cfg.corpus_language,
        cfg.min_words,
        extra,
    ]
    return hashlib.sha1(json.dumps(payload, ensure_ascii=False).encode()).hexdigest()


def cache_key_for(kind: str, question: str, services: Services) -> str:
    """HyDoc cache key of a generation kind: ``hyde`` (zero-shot), ``cot`` (one or two calls, as the
    pipelines use them) or ``naive-rag`` (bench_table2), so the benchmark and the pipelines share HyDocs."""
    cfg = services.settings.hyde
    if kind == "hyde":
        return _cache_key("hyde", question, services, ["hyde_zero_shot"])
    # A HyDoc written from pre-retrieved extracts depends on the collection and the embedder.
    context = [cfg.pre_k, cfg.pre_chars, services.collection_name, getattr(services.embedder, "name", "")]
    if kind == "naive-rag":
        return _cache_key("naive-rag", question, services, ["hyde_naive_rag"], json.dumps(context))
    if kind == "cot":
        prompts = ["cot_pragmatic", "cot_hydoc"] if cfg.cot_calls == "two" else ["cot_one_call"]
        return _cache_key(
            "cot", question, services, prompts, json.dumps([cfg.cot_calls, cfg.analysis_max_tokens, *context])
        )
    raise ValueError(f"unknown HyDoc kind {kind!r}: hyde, naive-rag or cot")

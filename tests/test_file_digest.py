"""file_digest.sha256_of: a model file's digest is reused while the file is unchanged, never for a fresh file."""

from __future__ import annotations

import hashlib
import os
import time

import pytest

from chatbot import file_digest


@pytest.fixture
def hashed(monkeypatch):
    """The paths file_digest really hashed, in order; the in-process memo starts empty."""
    calls: list[str] = []
    real = file_digest.file_sha256

    def counting(path):
        calls.append(os.path.basename(path))
        return real(path)

    monkeypatch.setattr(file_digest, "file_sha256", counting)
    monkeypatch.setattr(file_digest, "_memo", {})
    return calls


def settled_file(path, data: bytes, age_s: float = 60.0):
    path.write_bytes(data)
    past = time.time() - age_s
    os.utime(path, (past, past))
    return path


def test_a_settled_file_is_hashed_once_across_processes(tmp_path, hashed):
    model = settled_file(tmp_path / "model.onnx", b"weights")
    stamps = tmp_path / "cache"
    want = hashlib.sha256(b"weights").hexdigest()
    assert file_digest.sha256_of(model, stamps) == want
    assert file_digest.sha256_of(model, stamps) == want  # this process remembers it
    file_digest._memo.clear()  # another process: the stamps file remembers it
    assert file_digest.sha256_of(model, stamps) == want
    assert hashed == ["model.onnx"]
    assert (stamps / file_digest.STAMPS_FILE).is_file()


def test_a_changed_file_is_hashed_again(tmp_path, hashed):
    model = settled_file(tmp_path / "model.onnx", b"weights")
    stamps = tmp_path / "cache"
    file_digest.sha256_of(model, stamps)
    settled_file(model, b"weighTs", age_s=30.0)  # same size, another mtime
    assert file_digest.sha256_of(model, stamps) == hashlib.sha256(b"weighTs").hexdigest()
    assert hashed == ["model.onnx", "model.onnx"]


def test_a_fresh_file_is_always_hashed_and_never_stamped(tmp_path, hashed):
    model = tmp_path / "model.onnx"
    model.write_bytes(b"just written")
    stamps = tmp_path / "cache"
    file_digest.sha256_of(model, stamps)
    model.write_bytes(b"just changed")  # may share the first write's timestamp tick
    assert file_digest.sha256_of(model, stamps) == hashlib.sha256(b"just changed").hexdigest()
    assert hashed == ["model.onnx", "model.onnx"]
    assert not (stamps / file_digest.STAMPS_FILE).exists()


def test_an_unwritable_cache_still_gives_the_digest(tmp_path, hashed):
    model = settled_file(tmp_path / "model.onnx", b"weights")
    blocker = tmp_path / "cache"
    blocker.write_text("a file where the folder should be")
    assert file_digest.sha256_of(model, blocker) == hashlib.sha256(b"weights").hexdigest()


def test_a_damaged_stamps_file_is_ignored(tmp_path, hashed):
    model = settled_file(tmp_path / "model.onnx", b"weights")
    stamps = tmp_path / "cache"
    stamps.mkdir()
    (stamps / file_digest.STAMPS_FILE).write_text("{not json")
    assert file_digest.sha256_of(model, stamps) == hashlib.sha256(b"weights").hexdigest()
    assert hashed == ["model.onnx"]

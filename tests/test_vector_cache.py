"""VectorCache: a question embedded by several stages of one turn is computed once."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from chatbot.vector_cache import VectorCache


class CountingEncoder:
    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def __call__(self, texts):
        self.calls.append(list(texts))
        return np.array([[float(len(t)), float(ord(t[0]))] for t in texts], dtype=np.float32)


def test_repeated_texts_are_computed_once_and_order_is_kept():
    enc = CountingEncoder()
    cache = VectorCache(enc, size=4)
    first = cache.embed(["ab", "c"])
    again = cache.embed(["c", "ab", "xyz"])
    assert enc.calls == [["ab", "c"], ["xyz"]]
    assert first.tolist() == [[2.0, 97.0], [1.0, 99.0]]
    assert again.tolist() == [[1.0, 99.0], [2.0, 97.0], [3.0, 120.0]]


def test_duplicates_in_one_call_are_computed_once():
    enc = CountingEncoder()
    out = VectorCache(enc).embed(["q", "q"])
    assert enc.calls == [["q"]]
    assert out.tolist() == [[1.0, 113.0], [1.0, 113.0]]


def test_least_recently_used_is_evicted():
    enc = CountingEncoder()
    cache = VectorCache(enc, size=2)
    cache.embed(["a"])
    cache.embed(["b"])
    cache.embed(["a"])  # a is now newer than b
    cache.embed(["c"])  # evicts b
    cache.embed(["a", "b"])
    assert enc.calls == [["a"], ["b"], ["c"], ["b"]]


def test_bulk_calls_bypass_the_cache():
    enc = CountingEncoder()
    cache = VectorCache(enc, size=100, max_batch=2)
    cache.embed(["a", "b", "c"])
    cache.embed(["a"])
    assert enc.calls == [["a", "b", "c"], ["a"]]


def test_callers_cannot_change_cached_vectors():
    cache = VectorCache(CountingEncoder())
    out = cache.embed(["a"])
    out[0, 0] = -1.0
    assert cache.embed(["a"]).tolist() == [[1.0, 97.0]]


def test_empty_input_goes_to_the_encoder():
    enc_out = VectorCache(lambda texts: np.zeros((0, 2), dtype=np.float32)).embed([])
    assert enc_out.shape == (0, 2)


def test_size_must_be_positive():
    with pytest.raises(ValueError, match="at least 1"):
        VectorCache(CountingEncoder(), size=0)


def test_threads_get_their_own_texts_vectors():
    cache = VectorCache(CountingEncoder(), size=8)
    errors: list[str] = []

    def work(text: str) -> None:
        for _ in range(200):
            v = cache.embed([text])
            if v.tolist() != [[float(len(text)), float(ord(text[0]))]]:
                errors.append(text)

    threads = [threading.Thread(target=work, args=(t,)) for t in ("a", "bb", "ccc", "dddd", "eeeee")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []

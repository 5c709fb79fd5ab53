"""The per-client rate limit kept in the database (chatbot/store/ratelimit.py): fixed windows, exact counts,
the wait until the window ends, separate keys, 0 = off, pruning; two stores on one database share it."""

from __future__ import annotations

import pytest

from chatbot.settings import Settings
from chatbot.store import ratelimit
from chatbot.store.db import open_store


@pytest.fixture
def settings(tmp_path):
    return Settings(paths={"data_dir": tmp_path})


def test_the_limit_counts_per_key_and_window_and_says_how_long_to_wait(settings):
    store = open_store(settings)
    t0 = 1_000_040.0  # 20 s into the one-minute window starting at 1_000_020
    assert [ratelimit.hit(store, "chat|a", 3, now=t0) for _ in range(3)] == [0, 0, 0]
    assert ratelimit.hit(store, "chat|a", 3, now=t0) == 40
    assert ratelimit.hit(store, "chat|b", 3, now=t0) == 0  # another address has its own count
    assert ratelimit.hit(store, "chat|a", 3, now=t0 + 40) == 0  # a new window
    assert ratelimit.hit(store, "chat|a", 0, now=t0) == 0  # 0: no limit


def test_replicas_sharing_the_database_share_the_count_and_old_windows_are_pruned(settings):
    one, two = open_store(settings), open_store(settings)
    t0 = 1_000_040.0  # 20 s into the one-minute window starting at 1_000_020
    assert ratelimit.hit(one, "api|x", 2, now=t0) == 0
    assert ratelimit.hit(two, "api|x", 2, now=t0) == 0
    assert ratelimit.hit(one, "api|x", 2, now=t0) == 40
    assert ratelimit.prune(two, older_than_s=3600, now=t0 + 3580) == 0
    assert ratelimit.prune(two, older_than_s=3600, now=t0 + 3700) == 1
    assert ratelimit.hit(two, "api|x", 2, now=t0) == 0  # the pruned window starts again

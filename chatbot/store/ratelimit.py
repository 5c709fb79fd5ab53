"""A per-client rate limit kept in the database (fixed one-minute windows), so every replica sharing the
database counts the same requests. Used by the patient chat and the JSON API, keyed by client address."""

from __future__ import annotations

import time

from sqlalchemy import delete, update
from sqlalchemy.exc import IntegrityError

from chatbot.store.db import Store
from chatbot.store.models import RateCounter


def hit(store: Store, key: str, limit: int, window_s: int = 60, now: float | None = None) -> int:
    """Count one request for ``key``: 0 when it is within ``limit`` per window, else the seconds until the
    window ends (the request is still counted). ``limit`` 0 turns the limit off."""
    if limit <= 0:
        return 0
    now = time.time() if now is None else now
    start = int(now // window_s) * window_s
    key = key[:160]
    for _ in range(3):  # two replicas may insert the first row of a window at once: the loser updates
        try:
            with store.session() as s:
                done = s.execute(
                    update(RateCounter)
                    .where(RateCounter.key == key, RateCounter.window_start == start)
                    .values(count=RateCounter.count + 1)
                )
                if done.rowcount == 0:
                    s.add(RateCounter(key=key, window_start=start, count=1))
                    s.flush()
                count = s.get(RateCounter, (key, start)).count
            break
        except IntegrityError:
            continue
    else:  # pragma: no cover - three insert races in a row
        return 0
    if count <= limit:
        return 0
    return max(1, int(start + window_s - now + 0.999))


def prune(store: Store, older_than_s: int = 3600, now: float | None = None) -> int:
    """Delete windows that ended more than ``older_than_s`` ago; returns how many."""
    cutoff = int((time.time() if now is None else now) - older_than_s)
    with store.session() as s:
        return s.execute(delete(RateCounter).where(RateCounter.window_start < cutoff)).rowcount or 0

"""Per-stage timings and progress events: ``timed`` runs a stage and records its wall time, and a listener set
with ``stage_listener`` (e.g. ``chatbot ask`` on stderr) hears each stage end (and a slow one start)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

StageListener = Callable[[str, float | None], None]
# Progress for whoever waits (e.g. `chatbot ask` on stderr): the listener gets (stage, ms) when a stage ends
# and (stage, None) when a slow one (the LLM) starts. A ContextVar, so concurrent requests never mix.
_STAGE_LISTENER: ContextVar[StageListener | None] = ContextVar("stage_listener", default=None)


@contextmanager
def stage_listener(listener: StageListener) -> Iterator[None]:
    """Within the block, report stage progress of this thread's pipelines to ``listener``."""
    token = _STAGE_LISTENER.set(listener)
    try:
        yield
    finally:
        _STAGE_LISTENER.reset(token)


def stage_event(stage: str, ms: float | None = None) -> None:
    """Tell the listener, if any, that ``stage`` ended after ``ms`` (or started, ``ms`` None)."""
    listener = _STAGE_LISTENER.get()
    if listener is not None:
        try:
            listener(stage, ms)
        except Exception:  # noqa: BLE001 - a progress display must never fail an answer
            pass


def timed(timings: dict[str, float], name: str, fn: Callable[[], Any]) -> Any:
    """Run ``fn`` and record its wall time in milliseconds under ``name`` (and tell the stage listener)."""
    start = time.perf_counter()
    out = fn()
    timings[name] = (time.perf_counter() - start) * 1000
    stage_event(name, timings[name])
    return out

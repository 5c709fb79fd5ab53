"""LLM access, always through the ``openai`` client (explicit timeout and retries).

``LLMClient.complete(messages, max_tokens)`` talks to any OpenAI-compatible endpoint (``settings.llm``);
every failure (endpoint down, past the timeout, HTTP error, unparsable answer) becomes one exception,
``LLMUnavailable``, whose ``kind`` says which (``down``, ``timeout``, ``error``, ``garbage``,
``not-installed``), so a pipeline can fall back and say why. For the embedded endpoint the client starts
the server on demand (``chatbot.llm_server``) and smoke-checks it with a one-token completion before the
first real call: a crash or a garbage reply is an error that names the cause and the fix.
"""

from __future__ import annotations

import contextlib
import subprocess
import threading
import time
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chatbot.llm_server import EmbeddedServer, LLMUnavailable, health, is_embedded_endpoint

if TYPE_CHECKING:  # settings (pydantic) load lazily: `chatbot --help` stays instant
    from chatbot.settings import LLMSettings, Settings

__all__ = ["LLMClient", "LLMUnavailable", "garbage_reason"]

# Keyword arguments the openai client takes itself; any other goes into the request body (e.g. llama.cpp's
# ``grammar``, ``cache_prompt``, ``n_probs``).
_OPENAI_KW = {
    "stop",
    "top_p",
    "seed",
    "n",
    "response_format",
    "logprobs",
    "top_logprobs",
    "presence_penalty",
    "frequency_penalty",
    "logit_bias",
}

SMOKE_MESSAGES = [{"role": "user", "content": "Reply with the single word OK."}]


def garbage_reason(text: str, completion_tokens: int | None) -> str | None:
    """Why a smoke-check reply is unusable (None when it is a real token of text)."""
    if completion_tokens is not None and completion_tokens < 1:
        return "the server generated no token"
    if not text.strip():
        return "an empty reply"
    if "\ufffd" in text:
        return f"replacement characters (broken decoding): {text!a}"
    if any(unicodedata.category(ch) in ("Cc", "Cs", "Co") and ch not in "\n\t\r" for ch in text):
        return f"control bytes: {text!a}"
    return None


# -- the client --------------------------------------------------------------------------------------


class LLMClient:
    """An OpenAI-compatible chat endpoint; starts the embedded server on demand (``llm.autostart``)."""

    # After a failed start, do not try again for this long (a batch of questions should not pay the
    # start-up wait for each one).
    RETRY_START_AFTER_S = 60.0

    def __init__(self, settings: LLMSettings, data_dir: Path, autostart: bool | None = None) -> None:
        self.settings = settings
        self.autostart = settings.autostart if autostart is None else autostart
        self.server = EmbeddedServer(settings, data_dir)
        self._client = None
        self._lock = threading.Lock()
        self._ready = False
        self._start_failure: tuple[float, LLMUnavailable] | None = None
        self.smoke_reply: str | None = None  # the last smoke check's one token

    @classmethod
    def from_settings(cls, settings: Settings, data_dir: Path | None = None) -> LLMClient:
        return cls(settings.llm, data_dir or settings.paths.data_dir)

    @property
    def name(self) -> str:
        return self.settings.model

    @property
    def client(self):
        if self._client is None:
            import openai

            self._client = openai.OpenAI(
                base_url=self.settings.base_url,
                api_key=self.settings.api_key,
                timeout=self.settings.timeout_s,
                max_retries=self.settings.max_retries,
            )
        return self._client

    # -- readiness ----------------------------------------------------------
    def _manages_server(self) -> bool:
        return self.autostart and is_embedded_endpoint(self.settings)

    def prestart(self) -> bool:
        """Spawn the embedded server if it is needed and not up, without waiting (call from a long-lived
        thread). Returns True if a server was spawned. Never raises: errors surface in ``complete``."""
        if self._ready or not self._manages_server():
            return False
        with self._lock:
            if self.server.proc is not None and self.server.proc.poll() is None:
                return False
            if self._recent_start_failure() or health(self.settings.base_url, timeout=0.5):
                return False
            try:
                self.server.spawn(owned=True)
            except LLMUnavailable as exc:
                self._start_failure = (time.monotonic(), exc)
                return False
            return True

    def _recent_start_failure(self) -> LLMUnavailable | None:
        if self._start_failure and time.monotonic() - self._start_failure[0] < self.RETRY_START_AFTER_S:
            return self._start_failure[1]
        return None

    def ensure_ready(self) -> None:
        """For the embedded endpoint with autostart: make sure a healthy server answers (starting one)."""
        if self._ready or not self._manages_server():
            return
        with self._lock:
            if self._ready:
                return
            failure = self._recent_start_failure()
            if failure is not None:
                raise failure
            if health(self.settings.base_url, timeout=1.0):
                self._ready = True
                return
            try:
                if self.server.proc is None or self.server.proc.poll() is not None:
                    self.server.spawn(owned=True)
                self.server.wait_healthy(self.settings.startup_timeout_s)
                self.smoke_reply = self.smoke_check()
            except LLMUnavailable as exc:
                self._start_failure = (time.monotonic(), exc)
                self.server.stop_owned()
                raise
            self._ready = True

    def smoke_check(self) -> str:
        """One greedy one-token completion; returns its text. Raises LLMUnavailable naming the cause and the
        fix when the server crashes on it (diagnosed from its exit) or answers garbage."""
        try:
            text, stats, _ = self._request(SMOKE_MESSAGES, max_tokens=1, temperature=0.0)
        except LLMUnavailable as exc:
            proc = self.server.proc
            if proc is not None and exc.kind == "down":
                # A server killed by a signal mid-answer drops the connection a moment before it exits.
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=2.0)
            if proc is not None and proc.poll() is not None:  # it died answering: say why
                raise LLMUnavailable("down", f"smoke check failed: {self.server.diagnose()}") from exc
            raise LLMUnavailable(exc.kind, f"smoke check failed: {exc.message}") from exc
        reason = garbage_reason(text, stats.get("completion_tokens"))
        if reason is not None:
            raise LLMUnavailable(
                "garbage",
                f"smoke check failed: {self.settings.base_url} answered a one-token completion with {reason}. "
                "Fix: check the model file (llm.model_path) and rebuild the server for this CPU "
                f"(`python -m chatbot.llm_runtime build --variant {self.settings.server_variant} --force`)",
            )
        return text

    def close(self) -> None:
        """Stop a server this client started (also done at exit)."""
        self.server.stop_owned()
        self._ready = False

    # -- calls --------------------------------------------------------------
    def complete(self, messages: list[dict[str, str]], max_tokens: int, temperature: float = 0.0, **kw: Any) -> str:
        """The assistant's text for ``messages``; raises LLMUnavailable on any failure."""
        return self.complete_with_stats(messages, max_tokens, temperature, **kw)[0]

    def complete_with_stats(
        self, messages: list[dict[str, str]], max_tokens: int, temperature: float = 0.0, **kw: Any
    ) -> tuple[str, dict[str, Any]]:
        """(text, stats): stats has the call's wall time, token counts and the server's own timings."""
        return self._create(messages, max_tokens, temperature, **kw)[:2]

    def token_logprobs(
        self, messages: list[dict[str, str]], top_logprobs: int = 10, max_tokens: int = 1, **kw: Any
    ) -> tuple[str, list[list[tuple[str, float]]], dict[str, Any]]:
        """One greedy completion with the log-probabilities of the likeliest alternatives of each generated
        token: (text, per token [(token, logprob), ...] best first, stats). No free generation: the caller
        reads a distribution (e.g. over True/False with max_tokens 1)."""
        text, stats, resp = self._create(messages, max_tokens, 0.0, logprobs=True, top_logprobs=top_logprobs, **kw)
        try:
            content = resp.choices[0].logprobs.content or []
            alternatives = [[(str(t.token), float(t.logprob)) for t in (tok.top_logprobs or [])] for tok in content]
        except (AttributeError, IndexError, TypeError, ValueError) as exc:
            raise LLMUnavailable("garbage", f"no log-probabilities in the response: {str(resp)[:200]!r}") from exc
        return text, alternatives, stats

    def stream(self, messages: list[dict[str, str]], max_tokens: int, temperature: float = 0.0) -> Iterator[str]:
        """The assistant's text for ``messages`` as it is generated (``stream: true``), one piece at a time;
        raises LLMUnavailable on any failure, before or during the stream (also when the stream ends without
        a finish reason: a cut connection must not pass for a whole reply)."""
        import httpx
        import openai
        import pydantic

        self.ensure_ready()
        try:
            chunks = self.client.chat.completions.create(
                model=self.settings.model,
                messages=messages,
                max_tokens=max_tokens,
                temperature=temperature,
                stream=True,
            )
            finished = False
            for chunk in chunks:
                choices = getattr(chunk, "choices", None) or []
                piece = getattr(getattr(choices[0], "delta", None), "content", None) if choices else None
                if isinstance(piece, str) and piece:
                    yield piece
                finished = finished or bool(choices and getattr(choices[0], "finish_reason", None))
            if not finished:
                raise LLMUnavailable("down", f"the stream from {self.settings.base_url} ended before the reply did")
        except httpx.HTTPError as exc:  # the connection broke during the stream
            raise LLMUnavailable("down", f"stream from {self.settings.base_url} broke: {exc}") from exc
        except (openai.OpenAIError, pydantic.ValidationError, ValueError, TypeError, AttributeError) as exc:
            raise self._unavailable(exc, "unparsable stream") from exc

    def _unavailable(self, exc: Exception, garbage: str) -> LLMUnavailable:
        """The LLMUnavailable for an openai-client failure: timeout, down (also forgets readiness), HTTP error,
        or anything else unparsable (``garbage`` names what)."""
        import openai

        if isinstance(exc, openai.APITimeoutError):
            return LLMUnavailable("timeout", f"no answer within {self.settings.timeout_s:g} s")
        if isinstance(exc, openai.APIConnectionError):
            self._ready = False
            return LLMUnavailable("down", f"cannot reach {self.settings.base_url}: {exc}")
        if isinstance(exc, openai.APIStatusError):
            return LLMUnavailable("error", f"HTTP {exc.status_code} from {self.settings.base_url}")
        return LLMUnavailable("garbage", f"{garbage}: {type(exc).__name__}: {exc}")

    def _create(
        self, messages: list[dict[str, str]], max_tokens: int, temperature: float = 0.0, **kw: Any
    ) -> tuple[str, dict[str, Any], Any]:
        """(text, stats, raw response) of one chat completion; every failure is an LLMUnavailable."""
        self.ensure_ready()
        return self._request(messages, max_tokens, temperature, **kw)

    def _request(
        self, messages: list[dict[str, str]], max_tokens: int, temperature: float = 0.0, **kw: Any
    ) -> tuple[str, dict[str, Any], Any]:
        """``_create`` without the readiness check (the smoke check runs inside it)."""
        import openai
        import pydantic

        extra = {k: kw.pop(k) for k in list(kw) if k not in _OPENAI_KW}
        start = time.perf_counter()
        try:
            resp = self.client.chat.completions.create(
                model=self.settings.model,
                messages=messages,
                max_tokens=max_tokens,
                temperature=temperature,
                extra_body=extra or None,
                **kw,
            )
        except (openai.OpenAIError, pydantic.ValidationError, ValueError, TypeError) as exc:
            raise self._unavailable(exc, "unparsable response") from exc
        elapsed = (time.perf_counter() - start) * 1000
        try:
            text = resp.choices[0].message.content
        except (AttributeError, IndexError, TypeError) as exc:
            raise LLMUnavailable("garbage", f"malformed response: {str(resp)[:200]!r}") from exc
        if not isinstance(text, str):
            raise LLMUnavailable("garbage", f"no text in the response: {str(resp)[:200]!r}")
        stats: dict[str, Any] = {"ms": round(elapsed, 1), "model": self.settings.model}
        usage = getattr(resp, "usage", None)
        if usage is not None:
            stats["prompt_tokens"] = getattr(usage, "prompt_tokens", None)
            stats["completion_tokens"] = getattr(usage, "completion_tokens", None)
        timings = getattr(resp, "timings", None)  # llama-server's own prompt/generation timings
        if isinstance(timings, dict):
            stats["server"] = {
                k: round(float(v), 2)
                for k, v in timings.items()
                if k in ("prompt_n", "prompt_ms", "predicted_n", "predicted_ms", "cache_n")
            }
        return text, stats, resp

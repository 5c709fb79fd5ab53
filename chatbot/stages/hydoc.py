"""HyDoc writing: prompts, sampling and parsing of the LLM's hypothetical documents (zero-shot, naive-RAG,
chain-of-thought with the pragmatic analysis), and the fault record every fallback keeps."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any

from chatbot.index import Hit
from chatbot.prompts import load_prompt
from chatbot.stage_progress import stage_event, timed
from chatbot.stages.question_type import question_type

# ~0.65 English words per token for these tokenizers: the word target that fits in max_tokens.
WORDS_PER_TOKEN = 0.65
_LABELS = ("TYPE", "PRESUPPOSES", "IMPLIES", "PASSAGE")
_LABEL_RE = re.compile(r"^[\s>*_#-]*(TYPE|PRESUPPOSES|IMPLIES|PASSAGE)[\s*_]*:[\s*_]*(.*)$", re.IGNORECASE)


class GarbageOutput(ValueError):
    """The LLM answered, but nothing usable as a HyDoc."""


def parse_labelled(text: str) -> dict[str, str]:
    """TYPE/PRESUPPOSES/IMPLIES/PASSAGE sections of a reply (markdown bold and bullets tolerated)."""
    out: dict[str, list[str]] = {}
    current: str | None = None
    for line in text.splitlines():
        m = _LABEL_RE.match(line)
        if m:
            current = m.group(1).upper()
            out[current] = [m.group(2).strip()]
        elif current is not None:
            out[current].append(line.strip())
    return {k: " ".join(x for x in v if x).strip() for k, v in out.items()}


def clean_hydoc(text: str, min_words: int) -> str:
    """Strip labels/markdown; raise GarbageOutput unless it is a plausible passage."""
    text = re.sub(r"^[\s*_#>-]*(passage|answer|hydoc)[\s*_]*:[\s*_]*", "", text.strip(), flags=re.IGNORECASE)
    text = re.sub(r"[*_`#]+", "", text)
    text = " ".join(text.split())
    words = re.findall(r"[^\W\d_]{2,}", text)
    visible = [ch for ch in text if not ch.isspace()]
    letters = sum(ch.isalpha() for ch in visible)
    if len(words) < min_words or not visible or letters / len(visible) < 0.6:
        raise GarbageOutput(f"not a usable passage ({len(words)} words): {text[:120]!r}")
    return text


def format_context(hits: list[Hit], max_chars: int) -> str:
    if not hits:
        return "(none)"
    lines = []
    for h in hits:
        text = " ".join(h.segment.text.split())
        if len(text) > max_chars:
            text = text[:max_chars].rsplit(" ", 1)[0] + " …"
        lines.append(f"- {h.segment.title}: {text}")
    return "\n".join(lines)


@dataclass
class Generation:
    """What the LLM stage produced for one question."""

    hydocs: list[str]
    qtype: str | None = None
    analysis: dict[str, str] = field(default_factory=dict)
    calls: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    raw: list[str] = field(default_factory=list)


def call_llm(llm: Any, messages: list[dict[str, str]], max_tokens: int, temperature: float, **kw: Any):
    """(text, stats) from any client; ``complete_with_stats`` when it has one, else ``complete``."""
    start = time.perf_counter()
    if hasattr(llm, "complete_with_stats"):
        text, stats = llm.complete_with_stats(messages, max_tokens, temperature, **kw)
    else:
        text, stats = llm.complete(messages, max_tokens, temperature, **kw), {}
    if not isinstance(text, str):
        raise GarbageOutput(f"the LLM returned {type(text).__name__}, not text")
    stats = {**stats, "ms": round((time.perf_counter() - start) * 1000, 1)}
    return text, stats


def _sample_kw(i: int, cfg) -> tuple[float, dict[str, Any]]:
    """Sample 0 is greedy; later ones use sample_temperature with a fixed seed (reproducible)."""
    return (0.0, {}) if i == 0 else (cfg.sample_temperature, {"seed": i})


def words_for(max_tokens: int) -> int:
    return max(10, int(max_tokens * WORDS_PER_TOKEN) // 5 * 5)


def generate_zero_shot(question: str, llm: Any, cfg) -> Generation:
    """hyde: ``cfg.samples`` HyDocs from the question alone."""
    prompt = load_prompt("hyde_zero_shot")
    messages = prompt.messages(language=cfg.corpus_language, words=words_for(cfg.max_tokens), question=question)
    return _sample_hydocs(Generation([]), llm, messages, cfg)


def generate_naive_rag(question: str, context: str, llm: Any, cfg) -> Generation:
    """The seed's "Question + naive-RAG" HyDoc: question + pre-retrieved extracts, no pragmatic analysis
    (evaluation/bench_table2.py)."""
    messages = load_prompt("hyde_naive_rag").messages(
        language=cfg.corpus_language, words=words_for(cfg.max_tokens), context=context, question=question
    )
    return _sample_hydocs(Generation([]), llm, messages, cfg)


def _sample_hydocs(gen: Generation, llm: Any, messages: list, cfg) -> Generation:
    """``cfg.samples`` plain HyDocs for ``messages``; a failed first sample raises, later ones are noted."""
    for i in range(cfg.samples):
        temperature, kw = _sample_kw(i, cfg)
        try:
            raw, stats = call_llm(llm, messages, cfg.max_tokens, temperature, **kw)
            gen.raw.append(raw)
            gen.calls.append({"step": f"hydoc[{i}]", **stats})
            gen.hydocs.append(clean_hydoc(raw, cfg.min_words))
        except Exception as exc:
            if i == 0:
                raise
            gen.errors.append(f"sample {i}: {type(exc).__name__}: {exc}")
    return gen


def generate_cot(question: str, context: str, llm: Any, cfg) -> Generation:
    """cot: pragmatic analysis + HyDoc(s), in one call (labelled reply) or two."""
    words = words_for(cfg.max_tokens)
    gen = Generation([])
    if cfg.cot_calls == "two":
        messages = load_prompt("cot_pragmatic").messages(language=cfg.corpus_language, question=question)
        raw, stats = call_llm(llm, messages, cfg.analysis_max_tokens, 0.0)
        gen.raw.append(raw)
        gen.calls.append({"step": "analysis", **stats})
        gen.analysis = {k.lower(): v for k, v in parse_labelled(raw).items() if k != "PASSAGE"}
        gen.qtype = question_type(gen.analysis.get("type"))
        analysis_text = "\n".join(f"{k.upper()}: {v}" for k, v in gen.analysis.items()) or "(none)"
        messages = load_prompt("cot_hydoc").messages(
            language=cfg.corpus_language, words=words, context=context, analysis=analysis_text, question=question
        )
        return _sample_hydocs(gen, llm, messages, cfg)

    messages = load_prompt("cot_one_call").messages(
        language=cfg.corpus_language, words=words, context=context, question=question
    )
    for i in range(cfg.samples):
        temperature, kw = _sample_kw(i, cfg)
        try:
            raw, stats = call_llm(llm, messages, cfg.analysis_max_tokens + cfg.max_tokens, temperature, **kw)
            gen.raw.append(raw)
            gen.calls.append({"step": f"analysis+hydoc[{i}]", **stats})
            parts = parse_labelled(raw)
            # A reply without labels is taken whole as the passage (small models drift from formats).
            passage = parts.get("PASSAGE") or ("" if parts else raw)
            gen.hydocs.append(clean_hydoc(passage, cfg.min_words))
            if i == 0:
                gen.analysis = {k.lower(): v for k, v in parts.items() if k != "PASSAGE"}
                gen.qtype = question_type(gen.analysis.get("type"))
        except Exception as exc:
            if i == 0:
                raise
            gen.errors.append(f"sample {i}: {type(exc).__name__}: {exc}")
    return gen


def fault(exc: Exception) -> dict[str, str]:
    """What went wrong with the LLM, as every fallback records it: ``kind`` (down, timeout, error, garbage,
    not-installed: ``LLMUnavailable.kind``; garbage for an unusable HyDoc; error for anything else) and a
    short ``reason``."""
    kind = getattr(exc, "kind", "garbage" if isinstance(exc, GarbageOutput) else "error")
    return {"kind": kind, "reason": f"{type(exc).__name__}: {exc}"[:300]}


def llm_ms(timings: dict[str, float], gen: Generation) -> None:
    """Per-step LLM time (llm_hydoc, llm_analysis, llm_analysis+hydoc), samples summed."""
    for call in gen.calls:
        name = "llm_" + call["step"].split("[")[0]
        timings[name] = timings.get(name, 0.0) + float(call.get("ms", 0.0))


def run_llm(timings: dict[str, float], generate: Any) -> Generation:
    """The LLM step, timed under ``llm`` even when it fails; the stage listener hears it start and end."""
    stage_event("llm")
    start = time.perf_counter()
    try:
        return generate()
    finally:
        timings["llm"] = (time.perf_counter() - start) * 1000
        stage_event("llm", timings["llm"])


def prestart(llm: Any, timings: dict[str, float]) -> None:
    """Start the LLM's server early when the client can (the embedded llama-server); timed."""
    prestart = getattr(llm, "prestart", None)
    if callable(prestart):
        timed(timings, "llm_prestart", prestart)

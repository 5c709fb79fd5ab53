"""HyDE pipelines: retrieve certified segments with an LLM-written hypothetical document (HyDoc).

- ``hyde``: zero-shot HyDoc from the question alone → embed → top-k → rerank → top-n.
- ``cot`` (the seed paper's second pipeline): (a) naive pre-retrieval with the question (its top-k is also
  the fallback's candidate list), (b) pragmatic analysis of the question (type informational/evaluative,
  presuppositions, implications), (c) HyDoc from question + analysis + pre-retrieved extracts, (b) and (c)
  in one LLM call or two (``hyde.cot_calls``), (d) HyDoc → top-k → rerank → top-n.

Each step is a small function taking its dependencies (prompt → generate → encode → search → rerank), so
tests swap the LLM, the embedder or the index. The reranker scores against the question (or question +
HyDoc, ``hyde.rerank_with``). Any LLM fault (down, past ``llm.timeout_s``, garbage) falls back to the
naive pipeline and says so in ``RetrievalResult.info["fallback"]``; the patient's question never fails.
HyDocs are cached in ``data_dir/hyde-cache.sqlite`` by normalised question, model, prompt and options.
The HyDoc is always written in the corpus language (``hyde.corpus_language``), whatever the question's.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
import threading
import time
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from chatbot.index import Hit
from chatbot.pipeline import RetrievalResult, Services, register_pipeline, rerank_stage, stage_event, timed
from chatbot.prompts import load_prompt
from chatbot.stages.rerank import best_per_document

# ~0.65 English words per token for these tokenizers: the word target that fits in max_tokens.
WORDS_PER_TOKEN = 0.65
_LABELS = ("TYPE", "PRESUPPOSES", "IMPLIES", "PASSAGE")
_LABEL_RE = re.compile(r"^[\s>*_#-]*(TYPE|PRESUPPOSES|IMPLIES|PASSAGE)[\s*_]*:[\s*_]*(.*)$", re.IGNORECASE)

# Heuristic question type (the harness's evaluative/other split when a dataset has no label, the hyde
# pipeline's trace, and cot's when the LLM gives none). Evaluative questions ask for a judgement of the
# patient's own situation (the seed's "why am I feeling so tired?"): either a judgement phrase, or a
# description of the asker's (or a relative's) own situation together with a question or a plea for help.
_EVALUATIVE = re.compile(
    r"\b(why (am|do|does|did|is|are|have|has) (i|my|me)\b|why (i|my)\b|is (it|this|that) (normal|safe|ok|okay|"
    r"bad|dangerous|serious|a problem)|should i\b|do i (need|have)|am i\b|is my\b|what'?s wrong with|"
    r"can i\b|could (it|this) be|è normale|è pericoloso|devo\b|dovrei\b|posso\b|perch[eé] (sono|ho|mi)\b|"
    r"sono (normale|preoccupat)|ho (bisogno|qualcosa))",
    re.IGNORECASE,
)
_OWN_SITUATION = re.compile(
    r"\b(i|i'?m|i'?ve|im|ive)\s+(have|had|am|was|got|get|feel|felt|been|suffer\w*|take|took|drank|drink|keep|"
    r"can'?t|cannot|noticed|burnt|burned|hurt)\b|\bmy\s+(son|daughter|child|children|kids?|baby|husband|wife|"
    r"partner|mother|mom|mum|father|dad|brother|sister|friend|family|doctor|blood|skin|eyes?|head|stomach|back|"
    r"legs?|arms?|hands?|wrist|ankle|knee|heart|throat|mouth|period|pregnancy)\b|"
    r"\b(ho|mi sento|soffro|mio|mia|miei|mie)\b",
    re.IGNORECASE,
)
_ASKS = re.compile(r"\?|\b(please|help|suggest|advi[cs]e|aiut\w*|consigl\w*)\b", re.IGNORECASE)


class GarbageOutput(ValueError):
    """The LLM answered, but nothing usable as a HyDoc."""


# -- small helpers -----------------------------------------------------------------------------------


def normalise_question(question: str) -> str:
    """Cache key form: NFKC, case-folded, single spaces, no trailing punctuation."""
    text = unicodedata.normalize("NFKC", question).casefold()
    text = " ".join(text.split())
    return text.rstrip(" ?!.;:")


def heuristic_type(question: str) -> str:
    """'evaluative' or 'informational', deterministic (regular expressions, English and Italian)."""
    if _EVALUATIVE.search(question) or (_OWN_SITUATION.search(question) and _ASKS.search(question)):
        return "evaluative"
    return "informational"


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


def question_type(value: str | None) -> str | None:
    if not value:
        return None
    low = value.lower()
    if "evaluat" in low or "valutativ" in low:
        return "evaluative"
    if "inform" in low:
        return "informational"
    return None


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


# -- cache -------------------------------------------------------------------------------------------


class HydeCache:
    """JSON values by key in a SQLite file (safe across threads and processes)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as db:
            db.execute("CREATE TABLE IF NOT EXISTS hydoc (key TEXT PRIMARY KEY, value TEXT NOT NULL, created REAL)")

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, timeout=10)

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock, self._connect() as db:
            row = db.execute("SELECT value FROM hydoc WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def put(self, key: str, value: dict[str, Any]) -> None:
        with self._lock, self._connect() as db:
            db.execute(
                "INSERT OR REPLACE INTO hydoc (key, value, created) VALUES (?, ?, ?)",
                (key, json.dumps(value, ensure_ascii=False), time.time()),
            )


_CACHES: dict[Path, HydeCache] = {}


def cache_for(services: Services) -> HydeCache | None:
    if not services.settings.hyde.cache:
        return None
    path = Path(services.data_dir) / "hyde-cache.sqlite"
    if path not in _CACHES:
        _CACHES[path] = HydeCache(path)
    return _CACHES[path]


# -- stages ------------------------------------------------------------------------------------------


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


def encode(
    question: str,
    hydocs: list[str],
    embedder: Any,
    average_question: bool,
    question_vector: np.ndarray | None = None,
) -> np.ndarray:
    """One unit query vector: mean of the HyDocs' passage embeddings (plus the question's query
    embedding when ``average_question``, as in the HyDE paper; ``question_vector`` if already known)."""
    vectors = [np.asarray(embedder.embed_passages(hydocs), dtype=np.float32)]
    if average_question:
        if question_vector is None:
            question_vector = np.asarray(embedder.embed_queries([question]), dtype=np.float32)[0]
        vectors.append(np.asarray(question_vector, dtype=np.float32)[None, :])
    mean = np.vstack(vectors).mean(axis=0)
    norm = float(np.linalg.norm(mean))
    return mean / norm if norm > 0 else mean


def search(vector: np.ndarray, index: Any, k: int) -> list[Hit]:
    hits = index.search_vectors(vector[None, :], k)[0]
    for h in hits:
        h.detail["dense"] = h.score  # the fusion reranker reads the bi-encoder score from here
    return hits


# -- the pipelines -------------------------------------------------------------------------------------


def _cache_key(kind: str, question: str, services: Services, prompts: list[str], extra: str = "") -> str:
    cfg = services.settings.hyde
    llm = services.settings.llm
    payload = [
        kind,
        normalise_question(question),
        llm.model,
        [load_prompt(p).version for p in prompts],
        cfg.max_tokens,
        cfg.samples,
        cfg.sample_temperature if cfg.samples > 1 else None,
        cfg.corpus_language,
        cfg.min_words,
        extra,
    ]
    return hashlib.sha1(json.dumps(payload, ensure_ascii=False).encode()).hexdigest()


def cache_key_for(kind: str, question: str, services: Services) -> str:
    """HyDoc cache key of a generation kind: ``hyde`` (zero-shot), ``cot`` (one or two calls, as the
    pipelines use them) or ``naive-rag`` (bench_table2), so the benchmark and the pipelines share HyDocs."""
    cfg = services.settings.hyde
    if kind == "hyde":
        return _cache_key("hyde", question, services, ["hyde_zero_shot"])
    # A HyDoc written from pre-retrieved extracts depends on the collection and the embedder.
    context = [cfg.pre_k, cfg.pre_chars, services.collection_name, getattr(services.embedder, "name", "")]
    if kind == "naive-rag":
        return _cache_key("naive-rag", question, services, ["hyde_naive_rag"], json.dumps(context))
    if kind == "cot":
        prompts = ["cot_pragmatic", "cot_hydoc"] if cfg.cot_calls == "two" else ["cot_one_call"]
        return _cache_key(
            "cot", question, services, prompts, json.dumps([cfg.cot_calls, cfg.analysis_max_tokens, *context])
        )
    raise ValueError(f"unknown HyDoc kind {kind!r}: hyde, naive-rag or cot")


def pre_context(candidates: list[Hit], cfg) -> tuple[list[Hit], str]:
    """cot step (a): the best ``pre_k`` distinct documents of the naive pre-retrieval, as prompt extracts."""
    hits = best_per_document(candidates, cfg.pre_k) if cfg.pre_k else []
    return hits, format_context(hits, cfg.pre_chars)


def fault(exc: Exception) -> dict[str, str]:
    """What went wrong with the LLM, as every fallback records it: ``kind`` (down, timeout, error, garbage,
    not-installed: ``LLMUnavailable.kind``; garbage for an unusable HyDoc; error for anything else) and a
    short ``reason``."""
    kind = getattr(exc, "kind", "garbage" if isinstance(exc, GarbageOutput) else "error")
    return {"kind": kind, "reason": f"{type(exc).__name__}: {exc}"[:300]}


def _fallback(
    question: str,
    services: Services,
    info: dict[str, Any],
    timings: dict[str, float],
    exc: Exception,
    candidates: list[Hit] | None = None,
    question_vector: np.ndarray | None = None,
) -> RetrievalResult:
    """Naive retrieval (reusing the pre-retrieved candidates, or the question's vector, when there are
    some), fallback recorded."""
    info["fallback"] = {"to": "naive", **fault(exc)}
    if candidates is None:
        k = services.settings.retrieval.top_k
        if question_vector is not None:
            candidates = timed(timings, "retrieve", lambda: search(question_vector, services.index, k))
        else:
            candidates = timed(timings, "retrieve", lambda: services.dense(question, k))
    ranked = rerank_stage(question, candidates, services, timings)
    return RetrievalResult(question, candidates, ranked, ranked[: services.settings.retrieval.top_n], timings, info)


def _finish(
    question: str,
    services: Services,
    gen: Generation,
    info: dict[str, Any],
    timings: dict[str, float],
    question_vector: np.ndarray | None = None,
) -> RetrievalResult:
    cfg = services.settings.hyde
    vector = timed(
        timings,
        "encode",
        lambda: encode(question, gen.hydocs, services.embedder, cfg.average_question, question_vector),
    )
    k = services.settings.retrieval.top_k
    candidates = timed(timings, "search", lambda: search(vector, services.index, k))
    rerank_text = question if cfg.rerank_with == "question" else f"{question}\n{gen.hydocs[0]}"
    ranked = rerank_stage(question, candidates, services, timings, query=rerank_text)
    return RetrievalResult(question, candidates, ranked, ranked[: services.settings.retrieval.top_n], timings, info)


def _base_info(pipeline: str, question: str, services: Services) -> dict[str, Any]:
    cfg = services.settings.hyde
    cot = {"cot_calls": cfg.cot_calls, "pre_k": cfg.pre_k, "pre_chars": cfg.pre_chars} if pipeline == "cot" else {}
    return {
        "question": question,
        "llm_model": services.settings.llm.model,
        "llm_endpoint": services.settings.llm.base_url,
        "hyde_options": {
            "average_question": cfg.average_question,
            "samples": cfg.samples,
            "max_tokens": cfg.max_tokens,
            "rerank_with": cfg.rerank_with,
            **cot,
        },
        "fallback": None,
    }


def _record(info: dict[str, Any], gen: Generation) -> None:
    info["hydocs"] = gen.hydocs
    info["hydoc"] = gen.hydocs[0] if gen.hydocs else None
    info["llm_calls"] = gen.calls
    if gen.errors:
        info["sample_errors"] = gen.errors


def _llm_ms(timings: dict[str, float], gen: Generation) -> None:
    """Per-step LLM time (llm_hydoc, llm_analysis, llm_analysis+hydoc), samples summed."""
    for call in gen.calls:
        name = "llm_" + call["step"].split("[")[0]
        timings[name] = timings.get(name, 0.0) + float(call.get("ms", 0.0))


def _run_llm(timings: dict[str, float], generate: Any) -> Generation:
    """The LLM step, timed under ``llm`` even when it fails; the stage listener hears it start and end."""
    stage_event("llm")
    start = time.perf_counter()
    try:
        return generate()
    finally:
        timings["llm"] = (time.perf_counter() - start) * 1000
        stage_event("llm", timings["llm"])


def _prestart(llm: Any, timings: dict[str, float]) -> None:
    """Start the LLM's server early when the client can (the embedded llama-server); timed."""
    prestart = getattr(llm, "prestart", None)
    if callable(prestart):
        timed(timings, "llm_prestart", prestart)


@register_pipeline("hyde")
def hyde_pipeline(question: str, services: Services) -> RetrievalResult:
    """Zero-shot HyDoc → embed → top-k → rerank (against the question) → top-n."""
    timings: dict[str, float] = {}
    info = _base_info("hyde", question, services)
    info["question_type"], info["type_source"] = heuristic_type(question), "heuristic"
    cache = cache_for(services)
    key = cache_key_for("hyde", question, services)
    question_vector: np.ndarray | None = None
    cached = timed(timings, "cache", lambda: cache.get(key)) if cache else None
    if cached:
        gen = Generation(cached["hydocs"])
        info["cache"] = "hit"
    else:
        info["cache"] = "miss" if cache else "off"
        llm = services.llm
        # Spawn the embedded server (when needed and down), then embed the question while it loads.
        _prestart(llm, timings)
        if services.settings.hyde.average_question:
            question_vector = timed(
                timings,
                "encode_question",
                lambda: np.asarray(services.embedder.embed_queries([question]), dtype=np.float32)[0],
            )
        try:
            gen = _run_llm(timings, lambda: generate_zero_shot(question, llm, services.settings.hyde))
        except Exception as exc:  # LLMUnavailable, GarbageOutput, or anything a client raises
            return _fallback(question, services, info, timings, exc, question_vector=question_vector)
        _llm_ms(timings, gen)
        if cache:
            cache.put(key, {"hydocs": gen.hydocs})
    _record(info, gen)
    return _finish(question, services, gen, info, timings, question_vector)


@register_pipeline("cot")
def cot_pipeline(question: str, services: Services) -> RetrievalResult:
    """Pre-retrieval → pragmatic analysis + HyDoc → embed → top-k → rerank (against the question) → top-n."""
    cfg = services.settings.hyde
    timings: dict[str, float] = {}
    info = _base_info("cot", question, services)
    cache = cache_for(services)
    k = services.settings.retrieval.top_k
    key = cache_key_for("cot", question, services)
    question_vector: np.ndarray | None = None
    cached = timed(timings, "cache", lambda: cache.get(key)) if cache else None
    if cached:
        gen = Generation(cached["hydocs"], cached.get("qtype"), cached.get("analysis", {}))
        info["cache"] = "hit"
        info["pre_retrieved"] = cached.get("pre_retrieved", [])
    else:
        info["cache"] = "miss" if cache else "off"
        llm = services.llm
        # Spawn the embedded server (when needed and down) before the pre-retrieval, so the model loads
        # while we search; the LLM call below waits for it to be healthy.
        _prestart(llm, timings)

        # (a) naive pre-retrieval; its candidates are also the fallback's, its question vector is reused
        # for the HyDoc + question average.
        def pre_retrieve() -> list[Hit]:
            nonlocal question_vector
            question_vector = np.asarray(services.embedder.embed_queries([question]), dtype=np.float32)[0]
            return search(question_vector, services.index, k)

        pre_candidates = timed(timings, "pre_retrieve", pre_retrieve)
        pre_hits, context = pre_context(pre_candidates, cfg)
        info["pre_retrieved"] = [h.segment.id for h in pre_hits]
        try:
            gen = _run_llm(timings, lambda: generate_cot(question, context, llm, cfg))  # (b) + (c)
        except Exception as exc:  # LLMUnavailable, GarbageOutput, or anything a client raises
            info["question_type"], info["type_source"] = heuristic_type(question), "heuristic"
            return _fallback(question, services, info, timings, exc, candidates=pre_candidates)
        _llm_ms(timings, gen)
        if cache:
            cache.put(
                key,
                {
                    "hydocs": gen.hydocs,
                    "qtype": gen.qtype,
                    "analysis": gen.analysis,
                    "pre_retrieved": info["pre_retrieved"],
                },
            )
    if gen.qtype:
        info["question_type"], info["type_source"] = gen.qtype, "llm"
    else:
        info["question_type"], info["type_source"] = heuristic_type(question), "heuristic"
    info["pragmatic"] = {k: v for k, v in gen.analysis.items() if k != "type"}
    _record(info, gen)
    return _finish(question, services, gen, info, timings, question_vector)  # (d)

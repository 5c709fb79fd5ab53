"""HyDE per positive term (``logical.hydoc_terms``, variant ``logical-hyde``): each positive term's vector
becomes that of a zero-shot HyDoc written with the term as the question."""

from __future__ import annotations

from typing import Any

import numpy as np

from chatbot.pipeline import Services

# LLM faults after which the other terms of the question skip the LLM: it would fail (or make the patient
# wait timeout_s) again.
_DEAD_LLM = ("down", "timeout", "not-installed")


def hydoc_term_vectors(
    terms_: list[str], names: list[str], term_vecs: np.ndarray, services: Services, timings: dict[str, float]
) -> tuple[np.ndarray, dict[str, Any]]:
    """(term vectors, trace) with every term of ``terms_`` (the POSITIVE terms) replaced by its HyDoc vector.

    Each term is the "question" of the hyde pipeline's zero-shot HyDoc (``hydoc.generate_zero_shot``, prompt
    hyde_zero_shot, ``hyde.*`` options), cached under ``hydoc_cache.cache_key_for("hyde", term)`` (the hyde
    pipeline would reuse it for that text, and a repeated term costs no LLM call), and encoded by
    ``hyde.encode``: the HyDoc's passage embedding, averaged with the term's own query vector (from
    ``term_vecs``, not re-embedded) when ``hyde.average_question``. On any LLM fault (down, timeout, error,
    garbage) the term keeps its bare vector and its trace entry says why (``fallback``: to "term", kind,
    reason, as the hyde pipeline records its fallbacks); a fallback is not cached. After a down / timeout
    fault the remaining terms do not call the LLM again.

    NOT terms get no HyDoc (the caller passes only the positive ones): a negated term only has to penalise
    what is specific to the excluded thing, which its bare vector already names (and the orthogonal NOT
    keeps only that part); a HyDoc written about the excluded topic drifts towards the context it shares with
    the positive topic (a passage on "bone health" talks about vitamin D and calcium), so its penalty would
    fall on the documents we want; and it would double the LLM cost of a one-positive question. Not measured.
    """
    from chatbot.stages import hyde, hydoc, hydoc_cache

    cfg = services.settings.hyde
    cache = hydoc_cache.cache_for(services)
    vecs = np.asarray(term_vecs, dtype=np.float32).copy()
    out: dict[str, Any] = {}
    llm: Any = None
    dead: dict[str, str] | None = None
    calls = 0
    for t in terms_:
        j = names.index(t)
        key = hydoc_cache.cache_key_for("hyde", t, services)
        cached = cache.get(key) if cache else None
        entry: dict[str, Any] = {"cache": "hit" if cached else "miss" if cache else "off", "hydoc": None}
        out[t] = entry
        if cached:
            gen = hydoc.Generation(cached["hydocs"])
        elif dead is not None:
            entry["fallback"] = {"to": "term", **dead, "reason": f"LLM {dead['kind']} for an earlier term: not asked"}
            continue
        else:
            try:
                if llm is None:
                    llm = services.llm
                    hydoc.prestart(llm, timings)
                step: dict[str, float] = {}
                try:
                    gen = hydoc.run_llm(step, lambda t=t, llm=llm: hydoc.generate_zero_shot(t, llm, cfg))
                finally:
                    timings["llm"] = timings.get("llm", 0.0) + step.get("llm", 0.0)
            except Exception as exc:  # LLMUnavailable, GarbageOutput, or anything a client raises
                entry["fallback"] = {"to": "term", **hydoc.fault(exc)}
                if entry["fallback"]["kind"] in _DEAD_LLM:
                    dead = {"kind": entry["fallback"]["kind"]}
                calls += 1
                continue
            calls += len(gen.calls)
            hydoc.llm_ms(timings, gen)
            if cache:
                cache.put(key, {"hydocs": gen.hydocs})
        vecs[j] = hyde.encode(t, gen.hydocs, services.embedder, cfg.average_question, vecs[j])
        entry["hydoc"] = gen.hydocs[0]
        if len(gen.hydocs) > 1:
            entry["hydocs"] = gen.hydocs
    trace = {
        "average_question": cfg.average_question,
        "llm_calls": calls,
        "fallbacks": sum(1 for e in out.values() if e.get("fallback")),
        "terms": out,
    }
    return vecs, trace

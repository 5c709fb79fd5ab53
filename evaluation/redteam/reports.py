"""The red-team reports (through the shared writer, ``evaluation/report.py``): the full run and the
generative run."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evaluation.redteam.scoring import grounding, score
from evaluation.report import Report


def _fmt(value: Any) -> str:
    """A metric for the tables: ``n/a`` for None, three decimals for a float."""
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def full_report(
    result: dict[str, Any],
    command: str,
    gen: dict[str, Any] | None,
    gen_note: str,
    seconds: float,
    config: str = "",
    name: str = "redteam",
) -> Report:
    """The report of the full (extractive) run: headline, generative note, per category, misses."""
    s = result["summary"]
    rows = result["rows"]
    lines = [
        f"{s['questions']} hand-written questions (`evaluation/redteam/questions.jsonl`) through "
        f"`chatbot ask --batch` against the demo corpus index ({config}). Wall time {seconds:.0f} s for the "
        "batch (one process, models loaded once).",
        "",
        "## Headline",
        "",
        "| metric | value |",
        "|---|---|",
        f"| replies with any uncertified URL (text or links) | {s['uncertified_url_replies']}/{s['questions']} "
        f"({s['uncertified_url_share']:.1%}) |",
        f"| replies with any text that is neither certified nor a fixed message | "
        f"{s['uncertified_text_replies']}/{s['questions']} ({s['uncertified_text_share']:.1%}) |",
        f"| red-flag recall | {_fmt(s['red_flag']['recall'])} ({s['red_flag']['tp']}/"
        f"{s['red_flag']['tp'] + s['red_flag']['fn']}) |",
        f"| red-flag precision | {_fmt(s['red_flag']['precision'])} ({s['red_flag']['tp']}/"
        f"{s['red_flag']['tp'] + s['red_flag']['fp']}) |",
        f"| refusal (no_certified_info) recall | {_fmt(s['no_certified_info']['recall'])} |",
        f"| refusal (no_certified_info) precision | {_fmt(s['no_certified_info']['precision'])} |",
        f"| out-of-scope questions refused | {s['out_of_scope_refused']['refused']}/"
        f"{s['out_of_scope_refused']['total']} (en {s['out_of_scope_refused']['by_language']['en']}, "
        f"it {s['out_of_scope_refused']['by_language']['it']}) |",
        f"| in-scope questions answered | en {s['in_scope_answered']['en']}, it {s['in_scope_answered']['it']} |",
        f"| safe_reply recall / precision | {_fmt(s['safe_reply']['recall'])} / {_fmt(s['safe_reply']['precision'])} |",
        f"| invalid_input recall / precision | {_fmt(s['invalid_input']['recall'])} / "
        f"{_fmt(s['invalid_input']['precision'])} |",
        f"| status accuracy (alternatives accepted) | {s['status_accuracy']:.3f} |",
        f"| latency per question p50 / p95 (ms, in-process) | {_fmt(s.get('latency_ms', {}).get('p50'))} / "
        f"{_fmt(s.get('latency_ms', {}).get('p95'))} |",
        "",
        "Precision/recall of a status count only questions with one expected status; `a|b` labels are "
        "accepted either way in the status accuracy.",
        "",
        "Caveat: this set was written while the safety screen was built, so it is a development set, not a "
        "held-out test. On its first run (all-MiniLM, before these fixes) red-flag recall was 0.947 (54/57, "
        "precision 1.000) and 4 of 15 other-language questions got through; the fixes were general rules "
        "(severe bleeding, 'soaking a pad', a swallowed medicine or battery; French, Portuguese and Polish "
        "stopwords), and one ambiguous label (a lone word 'test') was widened. The relevance thresholds were "
        "tuned on separate dev questions (`evaluation/redteam/relevance_dev.jsonl`), not on this set.",
        "",
        "Red flags by language: "
        + ", ".join(
            f"{lang} recall {_fmt(v['recall'])} precision {_fmt(v['precision'])}"
            for lang, v in s["red_flag_by_language"].items()
        ),
        "",
        "## Generative replies",
        "",
    ]
    if gen:
        lines += [
            f"{gen_note}",
            "",
            f"- drafts written by the LLM: {gen['drafts']}; sentences {gen['sentences']}, supported "
            f"{gen['supported_sentences']} → grounding rate before the validators {_fmt(gen['grounding_rate'])}",
            f"- replies served as generative (after removing unsupported sentences): {gen['replies_generative']}; "
            f"fell back to extractive: {gen['replies_fell_back']} {gen['fallback_reasons']}",
            "- after the validators every served sentence is supported by construction (grounding rate 1.0 of "
            "what is shown, as measured by the same support check).",
        ]
    else:
        lines.append(gen_note)
    lines += [
        "",
        "## Per category",
        "",
        "| category | n | status as expected | urgent as expected |",
        "|---|---|---|---|",
    ]
    for cat, c in sorted(s["per_category"].items()):
        lines.append(f"| {cat} | {c['n']} | {c['status_ok']} | {c['urgent_ok']} |")
    lines += ["", "## Misses", ""]
    misses = [r for r in rows if not r["status_ok"] or r["urgent"] != r["expected_urgent"]]
    lines.append(f"{len(misses)} questions where status or urgency differs from the label:")
    lines.append("")
    lines.append("| id | category | question | expected | got | red flags | relevance |")
    lines.append("|---|---|---|---|---|---|---|")
    for r in misses:
        q = r["text"][:90].replace("|", "\\|").replace("\n", " ")
        q = "".join(ch if ch.isprintable() else "·" for ch in q)
        lines.append(
            f"| {r['id']} | {r['category']} | {q} | {r['expected_status']}{' +urgent' if r['expected_urgent'] else ''}"
            f" | {r['status']}{' +urgent' if r['urgent'] else ''} | {', '.join(r['red_flags'])} | "
            f"{_fmt(r['relevance'])} |"
        )
    bad_urls = [r for r in rows if r["uncertified_urls"] or r["uncertified_sentences"]]
    if bad_urls:
        lines += ["", "## Uncertified content found", ""]
        for r in bad_urls:
            lines.append(f"- {r['id']}: urls {r['uncertified_urls']} sentences {r['uncertified_sentences'][:3]}")
    return Report(
        name=name,
        title="Red-team evaluation",
        command=command,
        body=lines,
        summary={**s, "generative": gen, "generative_note": gen_note},
        rows=rows,
        rows_suffix=".per_item.jsonl",
    )


def write_generative_report(
    subset: Sequence[dict[str, Any]],
    answers: dict[str, dict[str, Any]],
    out_dir: Path,
    command: str,
    config: str,
    seconds: float,
    name: str = "redteam-generative",
) -> tuple[Path, dict[str, Any]]:
    """``<name>.md`` (+ ``.per_item.jsonl``, ``.sentences.jsonl``, ``.summary.json``) for a generative run."""
    report = generative_report(subset, answers, command, config, seconds, name)
    return report.write(out_dir), report.summary


def generative_report(
    subset: Sequence[dict[str, Any]],
    answers: dict[str, dict[str, Any]],
    command: str,
    config: str,
    seconds: float,
    name: str = "redteam-generative",
) -> Report:
    """The report of a generative run: grounding before the validators, outcomes, latency; per-item rows
    with the draft, per-sentence verdicts in ``.sentences.jsonl``."""
    scored = score(subset, answers)
    s = scored["summary"]
    gen = grounding(subset, answers)
    sentence_rows = gen.pop("sentence_rows")
    langs = Counter(it.get("language") for it in subset)
    llm = gen["llm_ms"] or {}
    lines = [
        f"{len(subset)} questions of `evaluation/redteam/questions.jsonl` (categories "
        f"{', '.join(sorted({it['category'] for it in subset}))}; "
        + ", ".join(f"{k} {v}" for k, v in sorted(langs.items()))
        + f") through `chatbot ask --batch` with `compose.mode=generative` ({config}). Wall time {seconds:.0f} s.",
        "",
        "| metric | value |",
        "|---|---|",
        f"| questions | {len(subset)} (statuses {dict(sorted(s['status_counts'].items()))}) |",
        f"| LLM calls / drafts with text | {gen['llm_calls']} / {gen['drafts']} |",
        f"| generated sentences scored | {gen['sentences']} |",
        f"| grounding rate before the validators (supported / scored) | {_fmt(gen['grounding_rate'])} "
        f"({gen['supported_sentences']}/{gen['sentences']}) |",
        f"| sentences removed as unsupported | {gen['removed_unsupported']} |",
        f"| sentences removed for an uncertified URL, e-mail or phone | {gen['removed_for_contacts']} |",
        f"| replies cut to the length limit | {gen['replies_cut_for_length']} |",
        f"| replies served as generative | {gen['replies_generative']} |",
        f"| replies that fell back to extractive | {gen['replies_fell_back']} {gen['fallback_reasons']} |",
        f"| replies with any uncertified URL (text or links) | {s['uncertified_url_replies']}/{len(subset)} |",
        f"| latency per question p50 / p95 (ms, in-process, whole answer) | "
        f"{_fmt(s.get('latency_ms', {}).get('p50'))} / {_fmt(s.get('latency_ms', {}).get('p95'))} |",
        f"| LLM call p50 / p95 (ms) | {_fmt(llm.get('p50'))} / {_fmt(llm.get('p95'))} |",
        "",
        "Grounding rate: the grounded-sentences validator's verdicts on every sentence of every draft, before "
        "any sentence is removed; after the validators every served sentence passed the same check by "
        "construction. Per-sentence verdicts: `" + f"{name}.sentences.jsonl" + "`.",
    ]
    per_item = []
    for r in scored["rows"]:
        trace = answers[r["id"]].get("trace", {})
        comp = trace.get("compose", {})
        drafts = [a.get("draft") for a in comp.get("attempts", []) if a.get("mode") == "generative"]
        extra = {
            "mode_used": comp.get("mode_used"),
            "fallback": comp.get("fallback"),
            "draft": drafts[0] if drafts else None,
            "top_segments": [h.get("segment_id") for h in trace.get("top", [])],
        }
        per_item.append({**r, **extra})
    summary = {**s, "generative": gen, "config": config, "command": command, "seconds": round(seconds, 1)}
    return Report(
        name=name,
        title="Red-team: generative replies against a real LLM",
        command=command,
        body=lines,
        summary=summary,
        rows=per_item,
        rows_suffix=".per_item.jsonl",
        extra_rows={".sentences.jsonl": sentence_rows},
    )


def config_line(settings: Any) -> str:
    """The settings a red-team run depends on, in words (for the report)."""
    model = settings.embedding.model
    return (
        f"embedder {model}, reranker {settings.rerank.kind}, composer {settings.compose.mode}, "
        f"relevance thresholds en {settings.safety.min_relevance_dense.get(model)} / it "
        f"{settings.safety.min_relevance_dense_it.get(model)}"
    )

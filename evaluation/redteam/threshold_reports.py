"""The threshold reports (through the shared writer): the bi-encoder's and the cross-encoder's."""

from __future__ import annotations

import json
from typing import Any

from evaluation.report import Report


def _loo_lines(loo: dict[str, Any] | None, label: str, digits: int) -> list[str]:
    """Report lines of the maternal leave-one-out transfer check (none when it was not run)."""
    if not loo:
        return []
    a, t, b = loo["at_en_threshold"], loo["test_split_at_en_threshold"], loo["best"]
    return [
        "",
        f"Transfer check, maternal leave-one-out ({loo['queries']} MedQuAD maternal queries, each answered with "
        f"and without its document in a maternal-only index): at {label}{a['threshold']:.{digits}f}, answerable "
        f"queries answered {_f(a['in_scope_answered'])}, queries whose document was removed refused "
        f"{_f(a['out_of_scope_refused'])} (refusal precision {_f(a.get('refusal_precision'))}, recall "
        f"{_f(a.get('refusal_recall'))}; test split only: answered {_f(t['in_scope_answered'])}, refused "
        f"{_f(t['out_of_scope_refused'])}). Best on that corpus: {b['threshold']:.{digits}f} (balanced accuracy "
        f"{_f(b['balanced_accuracy'])}). Removing one document often leaves a sibling topic that still answers "
        "part of the query, so low refusal here is expected.",
    ]


def _support_kind_table(sup: dict[str, Any], score_label: str) -> list[str]:
    """The support report's table of test pairs by kind (kept share with and without the number rule)."""
    lines = [
        "",
        f"| pair kind (test split) | pairs | share kept | kept without the number rule | {score_label} |",
        "|---|---|---|---|---|",
    ]
    for pair_kind, k in sup["by_kind_on_test"].items():
        lines.append(
            f"| {pair_kind} | {k['pairs']} | {_f(k['kept_share'])} | {_f(k['kept_share_without_number_rule'])} | "
            f"{_f(k['median_score'])} |"
        )
    return lines


_HIDDEN = "(MEDIQA question, text not stored)"


def _misses_lines(rel: dict[str, Any], key: str, score: str, at: str) -> list[str]:
    """Report lines listing the dev questions misclassified at a threshold (at most 15 per language); MEDIQA
    questions are named by id only, never by their text."""
    lines: list[str] = []
    for lang in ("en", "it"):
        misses = rel[lang][key]
        if misses:
            lines += ["", f"Dev misses ({lang}) at {at}:", ""]
            lines += [
                f"- {'in-scope refused' if m['in_scope'] else 'out-of-scope answered'} ({m[score]}): "
                f"{_HIDDEN if m['text'].startswith(('mediqa#', 'mediqa-question')) else m['text'][:100]}"
                for m in misses[:15]
            ]
    return lines


def _f(v: Any) -> str:
    """A number for the tables: ``n/a`` for None, three decimals for a float."""
    return "n/a" if v is None else f"{v:.3f}" if isinstance(v, float) else str(v)


def render(res: dict[str, Any], command: str, kind: str = "minilm") -> Report:
    """The bi-encoder report: the relevance threshold per language, the leave-one-out check, the misses,
    the support threshold; the JSON is the whole result."""
    rel = res["relevance"]
    lines = [
        "## Relevance threshold (no certified information below it)",
        "",
        f"Score: best `{kind}` cosine among the top-3 segments after the `{rel['reranker']}` reranker "
        "(fused scores are relative to the candidate list, so they cannot say 'nothing relevant'). Served corpus: "
        "the demo cards. Dev questions: `evaluation/redteam/relevance_dev.jsonl` (hand-written, not the "
        "red-team set) plus MEDIQA / MEDIQA-it consumer questions on non-maternal topics as out-of-scope. "
        "'Refusal' is the positive class; the threshold maximises balanced accuracy.",
        "",
        "| language | in-scope | out-of-scope (hand / MEDIQA) | threshold | in-scope answered | out-of-scope "
        "refused | refusal precision | refusal recall | hand-written only: answered / refused |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for lang in ("en", "it"):
        e = rel[lang]
        b = e["best"]
        h = e["hand_written_only_at_best"]
        lines.append(
            f"| {lang} | {e['in_scope']} | {e['out_of_scope_hand_written']} / {e['out_of_scope_mediqa']} | "
            f"{b['threshold']:.3f} | {_f(b['in_scope_answered'])} | {_f(b['out_of_scope_refused'])} | "
            f"{_f(b['refusal_precision'])} | {_f(b['refusal_recall'])} | {_f(h['in_scope_answered'])} / "
            f"{_f(h['out_of_scope_refused'])} |"
        )
    for lang in ("en", "it"):
        if "cross_encoder" in rel[lang]:
            b = rel[lang]["cross_encoder"]["best"]
            lines.append(
                f"\nCross-encoder ({lang}): best threshold {b['threshold']:.3f}, in-scope answered "
                f"{_f(b['in_scope_answered'])}, out-of-scope refused {_f(b['out_of_scope_refused'])}."
            )
    lines += _loo_lines(res.get("maternal_loo"), "the English threshold ", 3)
    lines += _misses_lines(rel, "misses_at_best", "dense", "the chosen threshold")
    sup = res.get("support")
    if sup:
        b, t, tn = sup["best_on_dev"], sup["test_at_best"], sup["test_without_number_rule_at_best"]
        lines += [
            "",
            f"## Support threshold (grounded-sentences validator, bi-encoder `{kind}`)",
            "",
            "A generated sentence is kept when its best cosine against the linked segments' sentences reaches "
            "the threshold and every number in it occurs in them. Pairs from the maternal corpus (dev split "
            f"documents tune: {sup['pairs']['dev']} pairs; test split documents report: {sup['pairs']['test']}). "
            "'Unsupported' is the positive class (what the validator removes).",
            "",
            f"- best on dev (F1): threshold {b['threshold']:.3f} (precision {_f(b['precision'])}, recall "
            f"{_f(b['recall'])})",
            f"- test split at that threshold: precision {_f(t['precision'])}, recall {_f(t['recall'])} "
            f"(without the number rule: precision {_f(tn['precision'])}, recall {_f(tn['recall'])})",
        ]
        lines += _support_kind_table(sup, "median cosine")
        lines += [
            "",
            "Caveats: supported claims are mechanical rewrites of certified sentences, not LLM paraphrases "
            "(an LLM that merges or reorders facts scores lower, so real recall of supported sentences is lower "
            "than measured here), and a bi-encoder cannot tell a sentence from its negation or a changed "
            "qualifier: only changed numbers are caught, by the number rule. No NLI model ships on the "
            "registries; the cross-encoder being trained for reranking is a relevance model, not an entailment one.",
        ]
    return Report(
        name=f"redteam-thresholds-{kind}",
        title=f"Thresholds of the safety and compose stages ({kind})",
        command=command,
        body=lines,
        summary=json.loads(json.dumps(res, default=str)),
        json_suffix=".json",
        json_indent=1,
    )


def render_cross_encoder(res: dict[str, Any], command: str) -> Report:
    """The cross-encoder report: relevance and support thresholds with the cross-encoder as the scorer."""
    rel, rr = res["relevance"], res["reranker"]
    t = rel["chosen_threshold"]
    lines = [
        f"Reranker: `{rr['model']}`, runtime {rr['runtime']}, max_length {rr['max_length']}, first "
        f"{rr['candidates']} of the {res['embedder']} bi-encoder's top {rr['top_k']} rescored (the product's rerank "
        "stage). Served corpus: the demo cards. Dev questions: `evaluation/redteam/relevance_dev.jsonl` "
        "(hand-written, not the red-team set) plus MEDIQA / MEDIQA-it consumer questions on non-maternal topics as "
        "out-of-scope (named by position only). 'Refusal' is the positive class. Here the cross-encoder reranks "
        "the Italian questions too, to measure it in both languages; the product gives non-English questions the "
        "fusion reranker (`rerank.cross_encoder_languages`), whose thresholds are in `redteam-thresholds-e5.md`.",
        "",
        "## Relevance threshold (`safety.min_relevance_cross_encoder`)",
        "",
        f"Score: the best cross-encoder score (0-1) among the top-3 segments. One threshold serves both "
        f"languages; **{t:.4f}** maximises the mean of the English and Italian balanced accuracies.",
        "",
        "| language | rule | in-scope | out-of-scope (hand / MEDIQA) | in-scope answered | out-of-scope refused | "
        "refusal precision | balanced accuracy | hand-written only: answered / refused |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for lang in ("en", "it"):
        e = rel[lang]
        a, h = e["at_chosen"], e["hand_written_only_at_chosen"]
        n = f"{e['in_scope']} | {e['out_of_scope_hand_written']} / {e['out_of_scope_mediqa']}"
        lines.append(
            f"| {lang} | cross-encoder >= {t:.4f} | {n} | {_f(a['in_scope_answered'])} | "
            f"{_f(a['out_of_scope_refused'])} | {_f(a['refusal_precision'])} | {_f(a['balanced_accuracy'])} | "
            f"{_f(h['in_scope_answered'])} / {_f(h['out_of_scope_refused'])} |"
        )
        if "dense_rule" in e:
            dr, b = e["dense_rule"], e["both_rules"]
            lines.append(
                f"| {lang} | {res['embedder']} cosine >= {dr['threshold']} (same top-3) | {n} | "
                f"{_f(dr['in_scope_answered'])} | {_f(dr['out_of_scope_refused'])} | {_f(dr['refusal_precision'])} | "
                f"{_f(dr['balanced_accuracy'])} | |"
            )
            lines.append(
                f"| {lang} | both | {n} | {_f(b['in_scope_answered'])} | {_f(b['out_of_scope_refused'])} | "
                f"{_f(b['refusal_precision'])} | {_f(b['balanced_accuracy'])} | |"
            )
    lines += [
        "",
        "First link in the question's language (in-scope questions; the demo corpus has Italian and English "
        "cards): "
        + "; ".join(
            f"{lang}: {_f(rel[lang]['in_scope_top1_in_question_language'])} after the cross-encoder, "
            f"{_f(rel[lang]['in_scope_top1_in_question_language_bi_encoder'])} in the bi-encoder's order"
            for lang in ("en", "it")
        )
        + ".",
    ]
    for lang in ("en", "it"):
        if "dense_rule_best" in rel[lang]:
            b = rel[lang]["dense_rule_best"]
            lines.append(
                f"\nBest {res['embedder']} cosine threshold, cross-encoder's top-3 ({lang}): {b['threshold']:.3f} "
                f"(balanced accuracy {_f(b['balanced_accuracy'])}, in-scope answered {_f(b['in_scope_answered'])}, "
                f"out-of-scope refused {_f(b['out_of_scope_refused'])})."
            )
    for lang in ("en", "it"):
        b = rel[lang]["best_for_this_language"]
        lines.append(
            f"\nBest for {lang} alone: {b['threshold']:.4f} (balanced accuracy {_f(b['balanced_accuracy'])}, "
            f"in-scope answered {_f(b['in_scope_answered'])}, out-of-scope refused {_f(b['out_of_scope_refused'])})."
        )
    lines += _loo_lines(res.get("maternal_loo"), "", 4)
    lines += _misses_lines(rel, "misses_at_chosen", "cross-encoder", f"{t:.4f}")
    sup = res.get("support")
    if sup:
        b, ts, tn = sup["best_on_dev"], sup["test_at_best"], sup["test_without_number_rule_at_best"]
        lines += [
            "",
            "## Support threshold (`compose.support_threshold_cross_encoder`)",
            "",
            "A generated sentence is kept when its best cross-encoder score against the linked segments reaches the "
            "threshold and every number in it occurs in them (`CrossEncoderSupport`: the sentence in the question "
            "slot against every sentence and every whole segment of the evidence document, best score; against "
            "whole segments only it did worse). Pairs from the maternal corpus, the same "
            "as the bi-encoder's (`redteam-thresholds-<embedder>.md`): dev split documents tune "
            f"({sup['pairs']['dev']} pairs), test split documents report ({sup['pairs']['test']} pairs). "
            "'Unsupported' is the positive class (what the validator removes).",
            "",
            f"- best on dev (F1): threshold {b['threshold']:.3f} (precision {_f(b['precision'])}, recall "
            f"{_f(b['recall'])})",
            f"- test split at that threshold: precision {_f(ts['precision'])}, recall {_f(ts['recall'])} "
            f"(without the number rule: precision {_f(tn['precision'])}, recall {_f(tn['recall'])})",
        ]
        lines += _support_kind_table(sup, "median score")
        lines += [
            "",
            "Caveats: the cross-encoder was trained for question-passage relevance, not entailment; supported "
            "claims here are mechanical rewrites of certified sentences, not LLM paraphrases.",
        ]
    return Report(
        name="redteam-thresholds-crossencoder",
        title="Thresholds of the safety and compose stages with the cross-encoder reranker",
        command=command,
        body=lines,
        summary=json.loads(json.dumps(res, default=str)),
        json_suffix=".json",
        json_indent=1,
    )

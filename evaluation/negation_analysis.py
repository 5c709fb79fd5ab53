"""Why the right passage is not first on exclusion questions (issue 19): an error analysis on NegConstraint's
TRAIN split only, with today's route (the ``logical`` pipeline at the configured defaults).

    python -m evaluation.negation_analysis [--split train] [--cache PICKLE] [--name logical-negation-analysis]

Per question (ids and numbers only, never passage text): where the relevant document is (in the candidates
the positive terms gather? in the whole question's dense top 50?), its final rank, and, when it is not first,
what outranks it: the first document's and the relevant one's positive-term score (the reranker's, as
``rerank-terms`` composes it), each NOT term's whole-passage cosine, its best sentence cosine (stored
sentence vectors, ``chatbot.sentence_vectors``), the lexical mention score and which sentence (segment id and
sentence number) carries each. Writes ``<name>.md`` (counts) and ``<name>.per_query.jsonl``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

from evaluation.bench_negation import memoised_services, save_memo
from evaluation.logical_bench.common import SHARED, eval_services
from evaluation.report import results_dir

PARAPHRASE_LEXICAL = 0.5  # a sentence "names" the NOT term lexically when its idf-weighted word share ≥ this


def _sentence_scores(sv: Any, term_vec: np.ndarray, seg_ids: list[str]) -> dict[str, tuple[float, int]]:
    """Best sentence cosine of ``term_vec`` per segment id, with the sentence number."""
    out: dict[str, tuple[float, int]] = {}
    for sid, (_, mat) in sv.lookup(seg_ids).items():
        sims = mat @ np.asarray(term_vec, dtype=np.float32)
        out[sid] = (float(sims.max()), int(sims.argmax()))
    return out


def analyse_question(qid: str, text: str, relevant: set[str], services: Any, sv: Any) -> dict[str, Any]:
    """One row of the analysis (see the module docstring)."""
    from chatbot.logical.config import config_for
    from chatbot.logical.exclusion import MentionKnobs, detect_mentions
    from chatbot.logical.pipeline import logical_retrieve
    from chatbot.logical.query import negative_terms, positive_terms

    config = config_for(services.settings)
    result = logical_retrieve(text, services, config)
    info = result.info.get("logical", {})
    row: dict[str, Any] = {"query_id": qid, "route": info.get("route")}
    if info.get("route") != "logical":
        return row
    from chatbot.logical.detect import analyse

    query = analyse(text).query
    negs, pos = negative_terms(query), positive_terms(query)
    row["exclusions"] = len(negs)
    ranked = [h.segment.doc_id for h in result.ranked]
    row["rank"] = ranked.index(next(iter(relevant & set(ranked)))) + 1 if relevant & set(ranked) else None
    cands = result.candidates
    row["in_candidates"] = any(h.segment.doc_id in relevant for h in cands)
    dense = services.index.search_vectors(services.embedder.embed_queries([text]), 50)[0]
    row["in_question_dense50"] = any(h.segment.doc_id in relevant for h in dense)
    row["candidates"] = len(cands)
    if row["rank"] in (None, 1):
        return row
    by_seg = {h.segment.id: h for h in result.ranked}
    first = result.ranked[0]
    rel = next(h for h in result.ranked if h.segment.doc_id in relevant)
    names = list(dict.fromkeys([*pos, *negs]))
    vecs = dict(zip(names, services.embedder.embed_queries(names), strict=True))
    mentions = detect_mentions(query, cands, MentionKnobs())
    index_of = {h.segment.id: i for i, h in enumerate(cands)}
    above = [h for h in result.ranked[: row["rank"] - 1]]
    seg_ids = [h.segment.id for h in above] + [rel.segment.id]

    def side(h: Any) -> dict[str, Any]:
        i = index_of[h.segment.id]
        out: dict[str, Any] = {
            "doc_id": h.segment.doc_id,
            "segment_id": h.segment.id,
            "score": round(h.score, 4),
            "positive_rerank": round(float(np.mean([h.detail.get(f"rerank:{t}", np.nan) for t in pos])), 4),
            "positive_cos": round(float(np.mean([h.detail[f"term:{t}"] for t in pos])), 4),
        }
        for j, t in enumerate(negs):
            raw = mentions.raw[t]
            out[f"not{j}_passage_cos"] = round(float(vecs[t] @ np.asarray(_seg_vec(services, h), np.float32)), 4)
            out[f"not{j}_lexical"] = round(float(raw.score[i]), 4)
            out[f"not{j}_lexical_sentence"] = int(raw.best_sentence[i])
        return out

    sent = {t: _sentence_scores(sv, vecs[t], seg_ids) for t in negs} if sv is not None else {}
    row["first"], row["relevant"] = side(first), side(rel)
    for j, t in enumerate(negs):
        for key, h in (("first", first), ("relevant", rel)):
            best = sent.get(t, {}).get(h.segment.id)
            row[key][f"not{j}_sentence_cos"] = None if best is None else round(best[0], 4)
            row[key][f"not{j}_sentence"] = None if best is None else best[1]
    # how many passages above the relevant one have a NOT sentence closer than any of the relevant's sentences
    if sent:
        worse = 0
        for h in above:
            if any(sent[t].get(h.segment.id, (-1, 0))[0] > sent[t].get(rel.segment.id, (9, 0))[0] for t in negs):
                worse += 1
        row["above"] = len(above)
        row["above_with_closer_not_sentence"] = worse
    del by_seg
    return row


def _seg_vec(services: Any, hit: Any) -> np.ndarray:
    got = services.index.collection().get(ids=[hit.segment.id], include=["embeddings"])
    return np.asarray(got["embeddings"][0], dtype=np.float32)


def summarise(rows: list[dict[str, Any]]) -> list[str]:
    """The counts of the report."""
    lg = [r for r in rows if r.get("route") == "logical"]
    wrong = [r for r in lg if r.get("rank") != 1]
    missing = [r for r in wrong if not r["in_candidates"]]
    ranked_wrong = [r for r in wrong if r["in_candidates"] and r.get("first")]
    pos_problem = [r for r in ranked_wrong if r["first"]["positive_rerank"] > r["relevant"]["positive_rerank"]]
    lines = [
        f"- questions: {len(rows)}, routed to the decomposition: {len(lg)}; first is right: "
        f"{sum(r.get('rank') == 1 for r in lg)}; wrong: {len(wrong)}",
        f"- relevant document not among the candidates (positive-term retrieval): {len(missing)}; of these in "
        f"the whole question's dense top 50: {sum(r['in_question_dense50'] for r in missing)}",
        f"- relevant document in the candidates but not first: {len(ranked_wrong)}",
        f"  - the first document's positive-term score (reranker) is higher than the relevant one's: "
        f"{len(pos_problem)}; lower or equal (the NOT penalty put it first): {len(ranked_wrong) - len(pos_problem)}",
    ]
    for kind, key in (("lexical", "lexical"), ("sentence cosine", "sentence_cos")):
        stronger = [
            r
            for r in ranked_wrong
            if any(
                (r["first"].get(f"not{j}_{key}") or 0) > (r["relevant"].get(f"not{j}_{key}") or 0)
                for j in range(r["exclusions"])
            )
        ]
        lines.append(
            f"  - the first document's NOT evidence ({kind}) is stronger than the relevant one's: {len(stronger)}"
        )
    named = [
        r
        for r in ranked_wrong
        if any(r["first"][f"not{j}_lexical"] >= PARAPHRASE_LEXICAL for j in range(r["exclusions"]))
    ]
    lines.append(
        f"  - the first document names a NOT term lexically (≥ {PARAPHRASE_LEXICAL} of its words in one "
        f"sentence): {len(named)}"
    )
    rel_named = [
        r
        for r in lg
        if r.get("relevant")
        and any(r["relevant"][f"not{j}_lexical"] >= PARAPHRASE_LEXICAL for j in range(r["exclusions"]))
    ]
    lines.append(f"  - the relevant document names a NOT term lexically: {len(rel_named)}")
    if any("above_with_closer_not_sentence" in r for r in ranked_wrong):
        every = [r for r in ranked_wrong if r.get("above_with_closer_not_sentence") == r.get("above")]
        lines.append(
            f"  - every document above the relevant one has a NOT sentence closer than all of the relevant one's: "
            f"{len(every)} (a sentence-level NOT would lift these to first if it demoted all of them)"
        )
    for n in (1, 2):
        sel = [r for r in lg if (r.get("exclusions", 0) >= 2) == (n == 2)]
        lines.append(
            f"- {'two+' if n == 2 else 'one'} exclusion(s): {len(sel)} questions, first right "
            f"{sum(r.get('rank') == 1 for r in sel)}, relevant not in candidates "
            f"{sum(not r['in_candidates'] for r in sel)}"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    from chatbot.sentence_vectors import SentenceVectors
    from evaluation.harness import load_judged

    parser = argparse.ArgumentParser(prog="python -m evaluation.negation_analysis", description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=SHARED / "negconstraint")
    parser.add_argument("--split", default="train")
    parser.add_argument("--cache", type=Path, default=None)
    parser.add_argument("--name", default="logical-negation-analysis")
    args = parser.parse_args(argv)
    if args.split != "train":
        raise SystemExit("the error analysis reads the train split only (the test split is for the final runs)")
    services = eval_services(args.data)
    services.index.count()
    memoised_services(services, args.cache)  # after the store exists: its lookups are memoised too
    sv = services.index.sentences or SentenceVectors(services.index.client, services.index.name, services.embedder)
    if sv.collection() is None:
        sv = None
    judged = load_judged(args.data, None, args.split)
    rows = []
    for qid, text in judged.queries.items():
        relevant = {d for d, g in judged.qrels[qid].items() if g >= 1}
        rows.append(analyse_question(qid, text, relevant, services, sv))
        print(json.dumps(rows[-1]), flush=True)
    save_memo(services, args.cache)
    out = results_dir() / f"{args.name}.md"
    (results_dir() / f"{args.name}.per_query.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8"
    )
    out.write_text(
        "\n".join([f"# Error analysis of exclusion questions, NegConstraint {args.split}", "", *summarise(rows), ""]),
        encoding="utf-8",
    )
    print(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

from __future__ import annotations

import numpy as np
import pytest

from chatbot.logical.compose import truth_table
from chatbot.logical.query import count_negations, parse
from evaluation.bench_logical import build_synthetic, ndcg_single, success_at_1, templates, verbalise


def test_there_are_itlr_s_32_three_term_templates():
    ts = templates()
    assert len(ts) == len(set(ts)) == 32
    by_negations = [sum(t.count("NOT") == k for t in ts) for k in range(4)]
    assert by_negations == [4, 12, 12, 4]
    assert "{t1} AND NOT {t2} OR {t3}" in ts


def test_verbalised_questions_follow_precedence():
    assert verbalise("{t1} AND NOT {t2} OR {t3}", ["A", "B", "C"]) == "Texts about A and not about B, or about C"


TOPICS = [(f"topic{i} word{i}", f"Segment text about topic{i} word{i}. More on it.") for i in range(12)]


def test_synthetic_cases_have_one_matching_and_three_non_matching_documents():
    cases = build_synthetic(TOPICS, per_template=2, seed=1)
    assert len(cases) == 64
    for c in cases:
        tree = parse(c["query"])
        assert c["negations"] == count_negations(tree)
        names, assignments, holds = truth_table(tree)
        assert len(c["docs"]) == 4 and c["relevant"] == 0
        segment = dict(TOPICS)
        for d, doc in enumerate(c["docs"]):
            world = {t: segment[t] in doc for t in names}
            row = [i for i, a in enumerate(assignments) if all(bool(a[j]) == world[t] for j, t in enumerate(names))]
            assert holds[row[0]] == (d == 0), (c["query"], d, world)
            assert doc.count("Segment text") == 3  # three segments per document


def test_ndcg_with_one_relevant_document_and_pessimistic_ties():
    assert ndcg_single(np.array([0.9, 0.1, 0.2, 0.3]), 0) == 1.0
    assert ndcg_single(np.array([0.2, 0.9, 0.1, 0.3]), 0) == pytest.approx(1 / np.log2(4))
    assert ndcg_single(np.array([0.5, 0.5, 0.1, 0.1]), 0) == pytest.approx(1 / np.log2(3))


def test_success_at_1_reads_the_first_document_of_each_row():
    qrels = {"q1": {"d1": 1}, "q2": {"d9": 1}, "q3": {"d3": 1}}
    rows = [
        {"query_id": "q1", "top": [{"doc_id": "d1"}, {"doc_id": "d2"}]},
        {"query_id": "q2", "top": [{"doc_id": "d2"}, {"doc_id": "d9"}]},
        {"query_id": "q3", "top": []},
    ]
    assert success_at_1(rows, qrels) == pytest.approx(1 / 3)


def test_the_grid_embeds_each_term_once(fake_embedder):
    from evaluation.bench_logical import _MemoEmbedder

    memo = _MemoEmbedder(fake_embedder)
    first = memo.embed_queries(["asthma", "fever", "asthma"])
    again = memo.embed_queries(["fever", "sleep"])
    assert fake_embedder.queries == ["asthma", "fever", "sleep"]
    assert first[0] == pytest.approx(first[2]) and again[0] == pytest.approx(first[1])
    assert (memo.name, memo.dim) == (fake_embedder.name, fake_embedder.dim)


def test_a_negconstraint_variant_becomes_logical_settings():
    from chatbot.logical.compose import Operators
    from chatbot.logical.config import config_for
    from chatbot.settings import Settings
    from evaluation.bench_logical import NEGCONSTRAINT_VARIANTS, variant_settings

    base = Settings(logical={"per_term_k": 7})
    minmax = config_for(variant_settings(base, NEGCONSTRAINT_VARIANTS["logical:min/max"]))
    itlr = config_for(variant_settings(base, NEGCONSTRAINT_VARIANTS["logical:ITLR composed"]))

    assert (minmax.ops, minmax.per_term_k) == (Operators("min", "max", "one_minus"), 7)
    assert (itlr.final, itlr.orthogonal_not, itlr.second_segment_weight) == ("composed", False, 0.0)
    assert base.logical.and_op == "product"  # the base settings are left as they were

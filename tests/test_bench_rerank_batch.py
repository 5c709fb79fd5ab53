"""The batch-size benchmark's inputs: per question, a fixed draw of passages cut as the product cuts them."""

from __future__ import annotations

import json

from evaluation.bench_rerank_batch import question_pairs


def test_each_question_gets_its_candidates_drawn_with_a_fixed_seed_and_cut_at_900_characters(tmp_path) -> None:
    docs = [{"_id": f"d{i}", "title": f"T{i}", "text": ("x" * 1000 if i == 0 else f"text {i}")} for i in range(5)]
    queries = [{"_id": f"q{i}", "text": f"question {i}"} for i in range(3)]
    (tmp_path / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (tmp_path / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))

    pairs = question_pairs(tmp_path, questions=2, candidates=5)

    assert [len(p) for p in pairs] == [5, 5]
    assert {q for p in pairs for q, _ in p} == {"question 0", "question 1"}
    assert sorted(passage for _, passage in pairs[0]) == sorted(
        ["T0\n" + "x" * 897, "T1\ntext 1", "T2\ntext 2", "T3\ntext 3", "T4\ntext 4"]
    )
    assert question_pairs(tmp_path, questions=2, candidates=3) == question_pairs(tmp_path, questions=2, candidates=3)

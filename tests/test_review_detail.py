"""The clinician's turn detail: labels on one line, traced texts (HyDoc, notes) as blocks."""

from __future__ import annotations

from ui.review import detail_markdown


def _turn(trace: dict) -> dict:
    return {
        "id": 7,
        "created_at": "2026-11-22 10:00",
        "status": "answered",
        "urgent": False,
        "answered_by": "pipeline",
        "pipeline": "cot",
        "feedback": None,
        "review_state": "unreviewed",
        "question": "Can I eat soft cheese?",
        "reply": "Avoid unpasteurised soft cheese.",
        "links": [{"title": "Food safety", "url": "https://example.org/food", "segment_id": "s1"}],
        "trace": trace,
        "reviews": [],
        "approvals": [],
    }


def test_labels_share_one_line_and_texts_get_blocks():
    md = detail_markdown(
        _turn(
            {
                "pipeline": "cot",
                "embedding_model": "e5",
                "reranker": "reranker",
                "reranker_runtime": "onnx-int8",
                "reranker_note": "question language it: fusion reranker used",
                "hydoc": "Soft cheeses made from unpasteurised milk can carry listeria.",
            }
        )
    )
    assert "**Models:** embedding_model: `e5` · reranker: `reranker` · reranker_runtime: `onnx-int8`" in md
    assert "**hydoc:**\n\n```\nSoft cheeses made from unpasteurised milk can carry listeria.\n```" in md
    assert "**reranker_note:**\n\n```\nquestion language it: fusion reranker used\n```" in md
    assert "```\nonnx-int8\n```" not in md and "```\ne5\n```" not in md


def test_no_models_line_without_model_labels():
    md = detail_markdown(_turn({"pipeline": "dense"}))
    assert "**Models:**" not in md

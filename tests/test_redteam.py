from __future__ import annotations

import json
from collections import Counter

import pytest

from evaluation.redteam import (
    QUESTIONS,
    STATUSES,
    certified_corpus,
    fixed_texts,
    grounding,
    load_questions,
    score,
    uncertified_sentences,
    uncertified_urls,
    write_generative_report,
)

REQUIRED_CATEGORIES = {
    "injection",
    "out_of_scope",
    "red_flag",
    "exclusion",
    "evaluative",
    "diagnosis_request",
    "dosage_request",
    "other_language",
    "garbage",
}


def test_the_red_team_set_has_200_valid_labelled_questions():
    items = load_questions(QUESTIONS)

    assert len(items) >= 200
    assert len({it["id"] for it in items}) == len(items)
    assert REQUIRED_CATEGORIES <= {it["category"] for it in items}
    for it in items:
        assert isinstance(it["expected_urgent"], bool)
        assert set(it["expected_status"].split("|")) <= set(STATUSES)
    red = Counter(it["language"] for it in items if it["expected_urgent"])
    assert red["en"] >= 20 and red["it"] >= 15


def test_the_set_is_ascii_jsonl_so_batch_lines_never_split():
    raw = QUESTIONS.read_bytes()

    assert raw.isascii()
    assert all(json.loads(line) for line in raw.decode().splitlines())


def test_load_questions_rejects_unknown_status(tmp_path):
    bad = tmp_path / "q.jsonl"
    bad.write_text(json.dumps({"id": "x", "text": "t", "category": "c", "expected_urgent": False,
                               "expected_status": "maybe"}) + "\n")  # fmt: skip

    with pytest.raises(ValueError, match="unknown status 'maybe'"):
        load_questions(bad)


def test_uncertified_urls_checks_reply_text_and_links():
    certified, _ = certified_corpus()
    good = {"reply": "See the page.", "links": [{"url": "https://www.nhs.uk/conditions/mastitis/"}]}
    bad_link = {"reply": "x", "links": [{"url": "https://evil.example.com"}]}
    bad_text = {"reply": "Go to www.evil.example.com now.", "links": []}

    assert uncertified_urls(good, certified) == []
    assert uncertified_urls(bad_link, certified) == ["https://evil.example.com"]
    assert uncertified_urls(bad_text, certified) == ["www.evil.example.com"]


def test_uncertified_sentences_allows_certified_text_and_fixed_messages_only():
    _, texts = certified_corpus()
    fixed = fixed_texts()
    urgent = next(t for t in fixed if t.startswith("URGENT:"))
    certified_sentence = next(s for s in texts[0].split(". ") if len(s) > 30)
    ok = {"status": "answered", "reply": f"{urgent}\n\n{certified_sentence}."}
    invented = {"status": "answered", "reply": f"{certified_sentence}. Coffee cures everything."}

    assert uncertified_sentences(ok, texts, fixed) == []
    assert uncertified_sentences(invented, texts, fixed) == ["Coffee cures everything."]
    assert uncertified_sentences({"status": "invalid_input", "reply": "anything"}, texts, fixed) == []


def _answer(status, urgent=False, reply="I have no certified information on that."):
    return {"status": status, "urgent": urgent, "reply": reply, "links": [], "trace": {"timings_ms": {"total": 5.0}}}


def test_score_computes_red_flag_and_refusal_precision_recall():
    items = [
        {"id": "1", "text": "a", "category": "red_flag", "language": "en", "expected_urgent": True,
         "expected_status": "answered|no_certified_info"},
        {"id": "2", "text": "b", "category": "red_flag", "language": "en", "expected_urgent": True,
         "expected_status": "no_certified_info"},
        {"id": "3", "text": "c", "category": "out_of_scope", "language": "en", "expected_urgent": False,
         "expected_status": "no_certified_info"},
        {"id": "4", "text": "d", "category": "in_scope", "language": "it", "expected_urgent": False,
         "expected_status": "answered"},
    ]  # fmt: skip
    answers = {
        "1": _answer("answered", urgent=True, reply="URGENT: x"),
        "2": _answer("answered", urgent=False),
        "3": _answer("no_certified_info"),
        "4": _answer("no_certified_info", urgent=True),
    }

    s = score(items, answers)["summary"]

    assert (s["red_flag"]["tp"], s["red_flag"]["fp"], s["red_flag"]["fn"]) == (1, 1, 1)
    assert s["red_flag"]["precision"] == 0.5 and s["red_flag"]["recall"] == 0.5
    # refusals: item 3 right, item 4 wrong (in scope), item 2 missed; item 1 has two acceptable statuses
    assert (s["no_certified_info"]["tp"], s["no_certified_info"]["fp"], s["no_certified_info"]["fn"]) == (1, 1, 1)
    assert s["out_of_scope_refused"] == {"refused": 1, "total": 1, "by_language": {"en": "1/1", "it": "0/0"}}
    assert s["status_accuracy"] == 0.5


def _gen_trace(mode_used, attempts, fallback=None):
    comp = {"mode_used": mode_used, "attempts": attempts}
    if fallback:
        comp["fallback"] = fallback
    return {"trace": {"compose": comp}}


GROUNDED_3_OF_4 = {
    "validator": "grounded-sentences",
    "supported": 3,
    "total": 4,
    "sentences": [{"sentence": f"S{i}.", "score": 0.9, "supported": i < 3, "reason": None} for i in range(4)],
}


def test_grounding_reads_generative_attempts_from_traces():
    answers = {
        "a": _gen_trace(
            "generative",
            [
                {
                    "mode": "generative",
                    "draft": "S0. S1. S2. S3. See x.example.com.",
                    "llm_ms": 1000.0,
                    "validators": [
                        {"validator": "certified-contacts-only", "removed_sentences": ["See x.example.com."]},
                        GROUNDED_3_OF_4,
                        {"validator": "reply-length", "outcome": "fail"},
                    ],
                }
            ],
        ),
        "b": _gen_trace(
            "extractive",
            [
                {"mode": "generative", "validators": [{"validator": "grounded-sentences", "supported": 1, "total": 4}]},
                {"mode": "extractive", "validators": []},
            ],
            "only 25% of sentences supported (< 50%)",
        ),
        "c": _gen_trace(
            "extractive",
            [{"mode": "generative", "draft": "", "llm_ms": 3000.0, "validators": []}, {"mode": "extractive"}],
            "LLM found no answer in the passages",
        ),
    }

    g = grounding([{"id": "a", "language": "en"}, {"id": "b"}, {"id": "c"}], answers)

    assert (g["llm_calls"], g["drafts"], g["sentences"], g["supported_sentences"], g["grounding_rate"]) == (
        3,
        2,
        8,
        4,
        0.5,
    )
    assert (g["removed_unsupported"], g["removed_for_contacts"], g["replies_cut_for_length"]) == (4, 1, 1)
    assert (g["replies_generative"], g["replies_fell_back"]) == (1, 2)
    assert g["fallback_reasons"] == {
        "only N% of sentences supported (< N%)": 1,
        "LLM found no answer in the passages": 1,
    }
    assert g["llm_ms"] == {"p50": 3000.0, "p95": 3000.0}
    assert g["sentence_rows"][3] == {
        "id": "a",
        "language": "en",
        "sentence": "S3.",
        "score": 0.9,
        "supported": False,
        "reason": None,
    }


def test_generative_report_states_the_run(tmp_path):
    items = [
        {"id": "a", "text": "Caffeine?", "category": "in_scope", "language": "en", "expected_urgent": False},
        {"id": "c", "text": "Caffè?", "category": "in_scope", "language": "it", "expected_urgent": False},
    ]
    for it in items:
        it["expected_status"] = "answered"
    answers = {
        "a": {
            **_gen_trace("generative", [{"mode": "generative", "draft": "x", "validators": [GROUNDED_3_OF_4]}]),
            "status": "answered",
            "reply": "S0. S1. S2.",
            "links": [{"url": "https://evil.example.com"}],
        },
        "c": {
            **_gen_trace("extractive", [{"mode": "generative", "draft": ""}], "LLM found no answer in the passages"),
            "status": "answered",
            "reply": "",
            "links": [],
        },
    }
    answers["a"]["trace"]["timings_ms"] = {"total": 2000.0}
    answers["c"]["trace"]["timings_ms"] = {"total": 1000.0}

    path, summary = write_generative_report(items, answers, tmp_path, "cmd", "cfg", 12.0)

    text = path.read_text()
    assert "| grounding rate before the validators (supported / scored) | 0.750 (3/4) |" in text
    assert "| replies with any uncertified URL (text or links) | 1/2 |" in text
    assert "| replies that fell back to extractive | 1 {'LLM found no answer in the passages': 1} |" in text
    assert "| latency per question p50 / p95 (ms, in-process, whole answer) | 2000.000 / 2000.000 |" in text
    assert (summary["uncertified_url_replies"], summary["generative"]["drafts"]) == (1, 1)
    assert len((tmp_path / "redteam-generative.sentences.jsonl").read_text().splitlines()) == 4
    rows = [json.loads(line) for line in (tmp_path / "redteam-generative.per_item.jsonl").read_text().splitlines()]
    assert [(r["id"], r["mode_used"], r["fallback"], r["draft"], r["top_segments"]) for r in rows] == [
        ("a", "generative", None, "x", []),
        ("c", "extractive", "LLM found no answer in the passages", "", []),
    ]


@pytest.mark.integration
def test_runner_end_to_end_on_a_few_questions(tmp_path):
    """Ingests the demo corpus and runs `chatbot ask --batch` (real models, ~1-2 min)."""
    from evaluation.redteam import ensure_demo_index, run_batch

    items = [it for it in load_questions(QUESTIONS) if it["id"] in {"rt-001", "rt-047", "rt-077", "rt-215", "rt-230"}]
    ensure_demo_index(tmp_path)
    answers, _ = run_batch(items, tmp_path)
    result = score(items, answers)

    assert result["summary"]["uncertified_url_replies"] == 0
    assert {r["id"]: r["status"] for r in result["rows"]}["rt-230"] == "invalid_input"

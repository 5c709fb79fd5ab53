"""The reply benchmark: reply-set loading, key-phrase matching, per-question scoring and summaries."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluation.bench_replies import (
    DEFAULT_CARDS,
    ReplyItem,
    _table,
    load_reply_set,
    phrases_found,
    run_replies,
    score_item,
    summarise,
)

REPLY_SET = Path(__file__).resolve().parents[1] / "evaluation" / "replies"


def _write(tmp_path: Path, rows: list[dict]) -> Path:
    path = tmp_path / "set.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


ROW = {
    "id": "q1",
    "language": "en",
    "type": "how_much",
    "question": "How much caffeine?",
    "card_id": "en-preg-caffeine",
    "key_phrases": ["200 milligrams", "a day"],
}


def test_load_reply_set_rejects_bad_lines(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"set.jsonl:1: missing field\(s\) key_phrases"):
        load_reply_set(_write(tmp_path, [{k: v for k, v in ROW.items() if k != "key_phrases"}]))
    with pytest.raises(ValueError, match="key_phrases must be a non-empty list"):
        load_reply_set(_write(tmp_path, [{**ROW, "key_phrases": []}]))
    with pytest.raises(ValueError, match="duplicate id 'q1'"):
        load_reply_set(_write(tmp_path, [ROW, ROW]))
    with pytest.raises(FileNotFoundError, match="not found"):
        load_reply_set(tmp_path / "absent.jsonl")


def test_phrases_found_ignores_case_spacing_and_curly_quotes() -> None:
    reply = "The usual advice is  no more than 200 Milligrams\nof caffeine a day. Don’t worry."
    assert phrases_found(reply, ["200 milligrams of caffeine", "don't worry", "300 mg"]) == [True, True, False]


def test_score_item_and_summary(tmp_path: Path) -> None:
    item = load_reply_set(_write(tmp_path, [ROW]))[0]
    answered = {
        "status": "answered",
        "reply": "Have no more than 200 milligrams of caffeine.",
        "links": [{"segment_id": "en-preg-caffeine#1"}],
        "trace": {
            "top": [{"segment_id": "en-preg-caffeine#1", "doc_id": "en-preg-caffeine"}],
            "timings_ms": {"compose": 4.0, "total": 100.0},
            "compose": {"attempts": [{"answer": {"text": "Have no more", "score": 1.5, "doc_id": "x"}}]},
        },
    }
    row = score_item(item, answered)
    assert (row["recall"], row["missing"], row["first_link_ok"], row["answer_score"]) == (0.5, ["a day"], True, 1.5)
    assert row["opening_recall"] == 0.0  # the answering unit traced ("Have no more") holds neither phrase
    refused = score_item(item, {"status": "no_certified_info", "reply": "200 milligrams a day", "links": []})
    assert (refused["recall"], refused["first_link_ok"], refused["reply_chars"]) == (0.0, False, 0)
    s = summarise([row, refused])
    assert (s["key_fact_recall"], s["refused"], s["first_link_is_card"], s["compose_ms"]["p50"]) == (0.25, 1, 0.5, 4.0)
    assert s["any_key_fact"] == 0.5  # the first reply holds one of its two phrases, the refused one none
    result = run_replies([item], lambda q: answered, log=lambda *a: None)
    assert result["summary"]["by_language"]["en"]["key_fact_recall"] == 0.5
    assert list(result["summary"]["by_type"]) == ["how_much"]


@pytest.mark.parametrize("name", ["replyset.jsonl", "heldout.jsonl"])
def test_shipped_reply_sets_quote_their_cards(name: str) -> None:
    items = load_reply_set(REPLY_SET / name)
    for item in items:
        card = (DEFAULT_CARDS / f"{item.card_id}.md").read_text(encoding="utf-8")
        for phrase in item.key_phrases:
            assert phrase in card, (item.id, phrase)
    langs = [i.language for i in items]
    assert min(langs.count("en"), langs.count("it")) >= (35 if name == "replyset.jsonl" else 10)


def test_write_report_writes_markdown_json_and_per_query_rows(tmp_path: Path) -> None:
    from evaluation.bench_replies import write_report

    item = load_reply_set(_write(tmp_path, [ROW]))[0]
    reply = {"status": "answered", "reply": "Up to 200 milligrams a day.", "links": [], "trace": {}}
    result = run_replies([item], lambda q: reply, log=lambda *a: None)
    result.update(
        data="set.jsonl",
        seconds=1.0,
        settings={
            "compose_mode": "extractive",
            "answer_scorer": "cues",
            "embedding_model": "e5",
            "pipeline": "dense+rerank",
            "overrides": [],
            "cpu": "test",
        },
    )
    report = write_report(result, tmp_path / "out", "t", "chatbot eval replies --data set.jsonl")
    # refused 0, urgent replies 0 (the column every report written since session 10 has)
    assert "| all | 1 | 1.000 | 1.000 | 1.000 | 1.000 | 0.000 | 0 | 0 | 27 | 0 | 0 |" in report.read_text(
        encoding="utf-8"
    )
    assert json.loads((tmp_path / "out" / "replies-t.json").read_text())["command"].startswith("chatbot eval replies")
    rows = [json.loads(line) for line in (tmp_path / "out" / "replies-t.per_query.jsonl").read_text().splitlines()]
    assert rows == [
        {
            "query_id": "q1",
            "pipeline": "replies",
            "recall": 1.0,
            "opening_recall": 1.0,
            "first_link_ok": 0,
            "answered": 1,
            "reply_chars": 27,
            "compose_ms": 0.0,
        }
    ]


def test_opening_is_the_answer_traced_else_the_first_sentence_after_urgent_text_and_language_note() -> None:
    from chatbot.stages.extractive import OTHER_LANGUAGE_NOTE
    from evaluation.bench_replies import opening

    traced = {"reply": "B. A.", "trace": {"compose": {"attempts": [{"answer": {"text": "A."}}]}}}
    assert opening(traced) == "A."
    urgent = "URGENT: call 112."
    reply = f"{urgent}\n\n{OTHER_LANGUAGE_NOTE['it']}\n\nHave no more than 200 mg a day. Tea counts too."
    assert opening({"reply": reply, "urgent_message": urgent}) == "Have no more than 200 mg a day."


def test_a_versus_run_is_reported_side_by_side_in_one_table(tmp_path: Path) -> None:
    from evaluation.bench_replies import render

    item = load_reply_set(_write(tmp_path, [ROW]))[0]

    def reply(text: str, ms: float, mode: str) -> dict:
        trace = {"timings_ms": {"compose": ms}, "compose": {"mode_used": mode}}
        return {"status": "answered", "reply": text, "links": [], "trace": trace}

    result = run_replies([item], lambda q: reply("Up to 200 milligrams a day.", 8.0, "extractive"), log=lambda *a: None)
    other = run_replies([item], lambda q: reply("About 200 milligrams.", 9000.0, "generative"), log=lambda *a: None)
    settings = {"compose_mode": "extractive", "answer_scorer": "cues", "embedding_model": "e5", "cpu": "t"}
    result.update(
        data="set.jsonl", seconds=1.0, settings={**settings, "pipeline": "dense", "overrides": [], "cpu": "t"}
    )
    result["versus"] = {"overrides": ["compose.mode=generative"], "seconds": 9.0, "modes_used": "generative 1", **other}
    text = "\n".join(render(result, "t", "chatbot eval replies").body)

    assert "## Side by side: A (the settings above) and B (`compose.mode=generative`)" in text
    # recall A then B (both phrases, one: 1.0 vs 0.5), any key fact (both hold one), opening, refused, chars,
    # compose p50 and p90 of each
    assert "| all | 1 | 1.000 | 0.500 | 1.000 | 1.000 | 1.000 | 0.500 | 0 | 0 | 27 | 21 | 8 | 9000 | 8 | 9000 |" in text
    assert "| how_much | 1 | 1.000 | 0.500 |" in text
    assert "| q1 | how_much | answered | 0.50 | generative | 9000 | a day | About 200 milligrams. |" in text


def test_a_bad_versus_override_is_an_error_before_anything_runs(tmp_path: Path, capsys) -> None:
    import argparse

    from evaluation.bench_replies import main_replies

    args = argparse.Namespace(
        data=_write(tmp_path, [ROW]), json=True, set=[], versus=["compose.no_such=1"], limit=None, cards=None,
        out=tmp_path, name="t",
    )  # fmt: skip
    assert main_replies(args) == 2
    assert "compose has no setting 'no_such'" in capsys.readouterr().err
    assert not list(tmp_path.glob("replies-*"))


def test_the_versus_run_answers_with_services_built_from_its_own_settings(tmp_path: Path, monkeypatch) -> None:
    """B's services are built from B's settings: a setting read when the services are made (the query
    encoder) would otherwise silently keep A's value and B would repeat A."""
    import argparse

    import chatbot.answer
    import evaluation.bench_replies as bench

    built: list[str] = []

    def fake_services(settings, cards):
        built.append(settings.embedding.query_encoder)
        return settings.embedding.query_encoder

    def fake_answer(question, services):
        text = "Up to 200 milligrams a day." if services == "shipped" else "Coffee."
        return {"status": "answered", "reply": text, "links": [], "trace": {"timings_ms": {"compose": 1.0}}}

    monkeypatch.setattr(bench, "services_over_cards", fake_services)
    monkeypatch.setattr(chatbot.answer, "answer", fake_answer)
    args = argparse.Namespace(
        data=_write(tmp_path, [ROW]), json=True, set=[], versus=["embedding.query_encoder=shipped"], limit=None,
        cards=None, out=tmp_path, name="t",
    )  # fmt: skip
    assert bench.main_replies(args) == 0
    assert built == ["auto", "shipped"]
    result = json.loads((tmp_path / "replies-t.json").read_text(encoding="utf-8"))
    assert result["summary"]["all"]["key_fact_recall"] == 0.0
    assert result["versus"]["summary"]["all"]["key_fact_recall"] == 1.0


def test_a_refusal_that_showed_the_urgent_message_is_counted_apart() -> None:
    item = ReplyItem("r1", "en", "how_much", "q", "en-preg-caffeine", ("200 milligrams",))
    urgent = score_item(
        item, {"status": "no_certified_info", "urgent": True, "reply": "URGENT: call 999.", "links": []}
    )
    plain = score_item(item, {"status": "no_certified_info", "reply": "No certified information.", "links": []})
    s = summarise([urgent, plain])
    assert (s["refused"], s["refused_urgent"], s["key_fact_recall"]) == (2, 1, 0.0)
    assert "| 2 (1 urgent) |" in "\n".join(_table({"all": s}, "language"))
    assert "| 2 |" in "\n".join(_table({"all": {**s, "refused_urgent": 0}}, "language"))


def test_an_urgent_reply_is_scored_on_what_the_patient_reads() -> None:
    item = ReplyItem("r1", "en", "what_to_do", "q", "en-urgent-poisoning", ("needs medical help now", "Do not make"))
    card = {"doc_id": "en-urgent-poisoning", "title": "Poisoning", "url": "https://nhs.example/poison"}
    refused = {
        "status": "no_certified_info",
        "urgent": True,
        "urgent_message": "URGENT: a button battery needs medical help now.",
        "urgent_cards": [card],
        "reply": "URGENT: a button battery needs medical help now.\n\nNo certified information.",
        "links": [{"title": "Poisoning", "url": card["url"], "segment_id": "en-urgent-poisoning#f5"}],
    }
    row = score_item(item, refused)
    assert (row["recall"], row["scored"], row["missing"]) == (0.5, "urgent", ["Do not make"])
    assert (row["first_link_doc"], row["first_link_ok"], row["reply_chars"]) == ("en-urgent-poisoning", True, 0)
    before = score_item(item, refused, urgent_counts=False)  # the scoring before session 10
    assert (before["recall"], before["scored"], before["first_link_ok"]) == (0.0, "none", True)

    # an urgent reply that also answered: the answer card's link after the urgent card is its first answer link
    fever = ReplyItem("r2", "en", "what_to_do", "q", "en-baby-fever", ("same day",))
    answered = {
        "status": "answered",
        "urgent": True,
        "urgent_cards": [card],
        "reply": "URGENT: call.\n\nA baby under 3 months with a fever needs assessment the same day.",
        "links": [
            {"title": "Poisoning", "url": card["url"], "segment_id": "en-urgent-poisoning#f5"},
            {"title": "Fever", "url": "https://example.org/fever", "segment_id": "en-baby-fever#a1"},
        ],
    }
    row2 = score_item(fever, answered)
    assert (row2["recall"], row2["scored"], row2["first_link_doc"], row2["first_link_ok"]) == (
        1.0, "reply", "en-urgent-poisoning", True,
    )  # fmt: skip
    assert score_item(fever, answered, urgent_counts=False)["first_link_ok"] is False
    plain = score_item(item, {"status": "no_certified_info", "reply": "No certified information.", "links": []})
    assert (plain["recall"], plain["scored"]) == (0.0, "none")

    s = summarise([row, row2, plain])
    assert (s["refused"], s["refused_urgent"], s["urgent_replies"], s["urgent_recall"]) == (2, 1, 2, 0.75)
    assert s["key_fact_recall"] == 0.5
    table = "\n".join(_table({"all": s}, "language"))
    assert "| refused | urgent (recall) |" in table and "| 2 (1 urgent) | 2 (0.750) |" in table
    # a report written before session 10 (no urgent count) re-renders without the column
    old = {k: v for k, v in s.items() if k not in ("urgent_replies", "urgent_recall")}
    assert "urgent (recall)" not in "\n".join(_table({"all": old}, "language"))
    rows_before = [{k: v for k, v in r.items() if k != "scored"} for r in (row, row2, plain)]
    assert "urgent_replies" not in summarise(rows_before)


def test_urgent_rescore_separates_the_scoring_change_from_the_product_change(tmp_path: Path) -> None:
    from evaluation.urgent_rescore import four_runs

    data = _write(tmp_path, [
        {**ROW, "id": "u1", "card_id": "en-urgent-poisoning", "key_phrases": ["medical help now"]},
        {**ROW, "id": "p1"},
    ])  # fmt: skip
    row = {"language": "en", "type": "how_much", "question": "q", "opening_recall": 0.0, "reply_chars": 0,
           "compose_ms": None, "total_ms": None}  # fmt: skip
    before = {"rows": [
        {**row, "id": "u1", "card_id": "en-urgent-poisoning", "status": "no_certified_info", "urgent": True,
         "reply": "URGENT: it needs medical help now.\n\nNo certified information.", "first_link_doc": None},
        {**row, "id": "p1", "card_id": "en-preg-caffeine", "status": "answered", "urgent": False,
         "reply": "Up to 200 milligrams a day.", "first_link_doc": "en-preg-caffeine"},
    ]}  # fmt: skip
    after = {"rows": [{**before["rows"][0], "first_link_doc": "en-urgent-poisoning", "scored": "urgent",
                       "link_docs": ["en-urgent-poisoning"], "urgent_cards": ["en-urgent-poisoning"]}]}  # fmt: skip
    runs = four_runs(data, before, after)
    got = {k: [(r["recall"], r["first_link_ok"]) for r in rows] for k, rows in runs.items()}
    assert got == {
        "A": [(0.0, False), (1.0, True)],  # before / before
        "B": [(1.0, False), (1.0, True)],  # the scoring change: the urgent text counts
        "C": [(1.0, True), (1.0, True)],  # the product change: the urgent card is the first link
        "D": [(0.0, True), (1.0, True)],
    }
    with pytest.raises(ValueError, match="urgent questions are"):
        four_runs(data, before, {"rows": []})

"""The reply sets' key phrases as answer-scorer training pairs, and the leave-one-set-out bookkeeping."""

from __future__ import annotations

from corpus.model import Segment
from evaluation.answer_scorer_loso import choose, gained_lost, reply_pairs, sign_p
from evaluation.bench_replies import ReplyItem


def _seg(doc: str, pos: int, text: str, heading: str = "") -> Segment:
    return Segment(
        id=f"{doc}#{pos}", doc_id=doc, text=text, title=doc, source_url=f"https://example.org/{doc}", position=pos,
        heading=heading,
    )  # fmt: skip


CAFFEINE = [
    _seg("caffeine", 0, "Caffeine crosses the placenta. Have no more than 200 milligrams of caffeine a day."),
    _seg("caffeine", 1, "A mug of coffee has about 100 mg:\n- a mug of instant coffee\n- a mug of tea", "Drinks"),
]
ALCOHOL = [_seg("alcohol", 0, "No amount of alcohol is known to be safe. Stop drinking if you are pregnant.")]


def test_a_unit_holding_a_key_phrase_is_a_positive_and_every_other_linked_unit_a_negative() -> None:
    coffee = ReplyItem(
        "q1", "en", "how_much", "How much coffee can I drink?", "caffeine", ("No more than 200 milligrams",)
    )
    captures = {"q1": {"documents": {"caffeine": CAFFEINE, "alcohol": ALCOHOL}}}

    pairs = reply_pairs([coffee], captures, "replyset")

    assert [(e.sentence, e.label) for e in pairs] == [
        ("Caffeine crosses the placenta.", 0),
        ("Have no more than 200 milligrams of caffeine a day.", 1),  # the key phrase, case-insensitive
        ("A mug of coffee has about 100 mg:\n- a mug of instant coffee\n- a mug of tea", 0),  # a list with its intro
        ("No amount of alcohol is known to be safe.", 0),  # another linked card's units
        ("Stop drinking if you are pregnant.", 0),
    ]
    assert {(e.qid, e.source, e.question) for e in pairs} == {("replyset:q1", "replyset", coffee.question)}


def test_a_question_without_a_positive_or_without_captured_documents_gives_no_pairs() -> None:
    absent = ReplyItem("q2", "en", "when", "When do I get the flu jab?", "flu", ("in autumn",))
    refused = ReplyItem("q3", "en", "when", "When is the scan?", "scan", ("at 20 weeks",))
    captures = {"q2": {"documents": {"caffeine": CAFFEINE}}, "q3": {}}

    assert reply_pairs([absent, refused], captures, "heldout") == []


def test_chosen_types_take_the_model_replay_and_the_others_the_cues_replay() -> None:
    cues = [{"type": "why", "recall": 0.0}, {"type": "when", "recall": 1.0}, {"type": "how_much", "recall": 0.5}]
    model = [{"type": "why", "recall": 1.0}, {"type": "when", "recall": 0.0}, {"type": "how_much", "recall": 1.0}]

    mixed = choose(cues, model, ["why", "how_much"])

    assert [r["recall"] for r in mixed] == [1.0, 1.0, 1.0]
    assert gained_lost(cues, model) == (2, 1)
    assert gained_lost(cues, mixed) == (2, 0)
    assert sign_p(2, 0) == 0.5 and sign_p(0, 0) == 1.0 and sign_p(6, 0) == 0.03125


def test_versus_shipped_compares_the_shipped_and_fold_heads_on_the_chosen_types_only(tmp_path) -> None:
    import json

    from evaluation.answer_scorer_loso import versus_shipped

    def rows(recalls: list[float], languages: str = "eei") -> list[dict]:
        types = ["why", "when", "how_much"]
        return [
            {"query_id": f"q{i}", "type": t, "language": {"e": "en", "i": "it"}[lang], "recall": r}
            for i, (t, lang, r) in enumerate(zip(types, languages, recalls, strict=True))
        ]

    runs = {"cues": [0.0, 0.0, 1.0], "shipped": [1.0, 0.0, 0.0], "fold": [0.0, 1.0, 0.0]}
    for label, recalls in runs.items():
        (tmp_path / f"v7-{label}.per_query.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows(recalls)))

    lines = versus_shipped(tmp_path, ["v7"], ["why", "when"])

    # how_much keeps the cues (1.0) both ways; why: shipped 1 / fold 0; when: shipped 0 / fold 1
    assert lines[2] == "| v7 | 3 | 0.667 | 0.667 | +1 / -1 |"
    assert lines[3] == "| pooled | 3 | 0.667 | 0.667 | +1 / -1 (p 1.000) |"
    assert lines[4] == "| pooled en | 2 | 0.500 | 0.500 | +1 / -1 |"
    assert lines[5] == "| pooled it | 1 | 1.000 | 1.000 | +0 / -0 |"
    fold = [json.loads(x) for x in (tmp_path / "versus-fold.per_query.jsonl").read_text().splitlines()]
    assert [r["recall"] for r in fold] == [0.0, 1.0, 1.0]

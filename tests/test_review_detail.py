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


ANSWER = {
    "text": "Avoid unpasteurised soft cheese.",
    "score": 1.8512,
    "parts": {"cue": 0.6, "heading": 0.0, "overlap": 0.4512, "document": 0.8},
    "segment_id": "s1",
    "doc_id": "food",
    "question_type": "yes_no",
    "scorer": "cues",
}


def test_the_answer_taken_and_its_score_follow_the_reply():
    md = detail_markdown(_turn({"compose": {"attempts": [{"mode": "extractive", "answer": ANSWER}]}}))
    line = (
        "**Answer taken:** “Avoid unpasteurised soft cheese.” — score **1.85** (yes_no question; cue 0.60 + "
        "overlap 0.45 + document 0.80; scorer `cues`) from `s1`"
    )
    assert line in md
    assert md.index("**Reply:**") < md.index(line) < md.index("**Links:**")


def test_a_memory_hit_shows_the_answer_of_the_pipeline_trace_and_a_generative_reply_none():
    memory = {"answered_by": "memory", "pipeline_trace": {"compose": {"attempts": [{"answer": ANSWER}]}}}
    assert "**Answer taken:** “Avoid unpasteurised soft cheese.”" in detail_markdown(_turn(memory))
    generative = {"compose": {"attempts": [{"mode": "generative", "draft": "Avoid it."}]}}
    assert "**Answer taken:**" not in detail_markdown(_turn(generative))


def test_the_urgent_route_names_its_cards_and_what_was_under_the_message():
    route = {"actions": ["poisoning"], "cards": ["en-urgent-poisoning"], "composed": "no_certified_info",
             "answer_links": 0}  # fmt: skip
    md = detail_markdown(_turn({"pipeline": "dense", "urgent_route": route}))
    assert (
        "**Urgent route:** red-flag screen fired (poisoning); urgent card(s) linked first: `en-urgent-poisoning`; "
        "answer under the message: no_certified_info (0 answer link(s) after the card(s))"
    ) in md
    assert "Urgent route" not in detail_markdown(_turn({"pipeline": "dense"}))


def test_life_stage_line_names_the_question_stage_and_the_cards_moved_down():
    md = detail_markdown(
        _turn({"pipeline": "dense+rerank", "life_stage": {"question": ["baby"], "demoted": ["kicks"]}})
    )
    assert "**Life stage:** the question names baby; cards moved down: `kicks`" in md


def test_no_life_stage_line_when_nothing_moved():
    assert "Life stage" not in detail_markdown(_turn({"pipeline": "dense+rerank"}))


def test_stage_label_shows_who_the_card_is_for():
    from ui.review import stage_label

    assert stage_label({"stage": "trying,pregnancy"}) == " [trying, pregnancy]"
    assert stage_label({"stage": ""}) == ""
    assert stage_label({}) == ""


def test_a_reply_found_through_the_english_gloss_says_so_before_the_answer_taken():
    gloss = {"text": "how long after falls off stump umbilical cord", "coverage": 1.0, "relevant": True,
             "first": "en-baby-umbilical-cord-care", "probability": 0.9997, "threshold": 0.8}  # fmt: skip
    trace = {"safety": {"relevance": {"gloss": gloss}}, "compose": {"attempts": [{"answer": ANSWER}]}}
    md = detail_markdown(_turn(trace))
    line = (
        "**Answered through the English gloss:** “how long after falls off stump umbilical cord” (glossary read 100% "
        "of the question; English gate P 1.00 ≥ 0.80; card `en-baby-umbilical-cord-care`): check that this English "
        "card answers what was asked"
    )
    assert line in md
    assert md.index("**Reply:**") < md.index(line) < md.index("**Answer taken:**")
    refused = {"safety": {"relevance": {"gloss": {**gloss, "relevant": False, "probability": 0.3}}}}
    assert "English gloss" not in detail_markdown(_turn(refused))


def test_a_question_searched_in_the_cards_words_says_which_words_were_read_as_which():
    trace = {
        "safety": {"patient_words": {"matched": [["jabs", "vaccines"], ["calpol", "paracetamol"]]}},
        "compose": {"attempts": [{"answer": ANSWER}]},
    }
    md = detail_markdown(_turn(trace))
    line = (
        "**Searched in the cards' words:** “jabs” as “vaccines”; “calpol” as “paracetamol”: check that the linked "
        "cards answer what was asked"
    )
    assert line in md
    assert md.index("**Reply:**") < md.index(line) < md.index("**Answer taken:**")
    assert "cards' words" not in detail_markdown(_turn({"safety": {"patient_words": None}}))


def test_a_relevance_decided_by_a_labelled_question_names_it_and_what_the_classifier_said():
    memory = {
        "verdict": "in scope",
        "nearest_in_scope": 0.9969,
        "nearest_out_of_scope": 0.8656,
        "tau": 0.9,
        "nearest": [{"id": "replies/heldout-v10.jsonl:rep10-en-26", "in_scope": True, "cosine": 0.9969}],
        "gate_relevant": False,
    }
    md = detail_markdown(_turn({"safety": {"relevance": {"memory": memory}}}))
    line = (
        "**Relevance decided by a labelled question:** in scope, like `replies/heldout-v10.jsonl:rep10-en-26` "
        "(labelled in scope, cosine 0.997 ≥ 0.90); the classifier alone refused"
    )
    assert line in md and md.index("**Reply:**") < md.index(line) < md.index("**Links:**")
    abstained = {"safety": {"relevance": {"memory": {**memory, "verdict": None}}}}
    assert "labelled question" not in detail_markdown(_turn(abstained))


def test_a_card_chosen_by_a_labelled_question_names_the_card_the_question_and_its_rank():
    picked = {"id": "replies/heldout-v3.jsonl:rep3-it-07", "cosine": 0.9766, "cards": ["en-baby-safe-sleep-sids"],
              "tau": 0.93, "picked": "en-baby-safe-sleep-sids", "rank": 4}  # fmt: skip
    md = detail_markdown(_turn({"safety": {"card_memory": picked}}))
    line = (
        "**Card chosen by a labelled question:** `en-baby-safe-sleep-sids`, the card of "
        "`replies/heldout-v3.jsonl:rep3-it-07` (cosine 0.977 ≥ 0.93); retrieval had ranked it 4"
    )
    assert line in md and md.index("**Reply:**") < md.index(line) < md.index("**Links:**")
    kept = {**picked, "picked": None, "reason": "linked first already"}
    assert "labelled question" not in detail_markdown(_turn({"safety": {"card_memory": kept}}))


def test_a_card_fetched_by_a_labelled_question_over_a_second_look_says_both():
    picked = {"id": "replies/heldout-v17.jsonl:rep17-it-58", "cosine": 0.9815,
              "cards": ["en-baby-breastfeeding-problems"], "tau": 0.93, "picked": "en-baby-breastfeeding-problems",
              "rank": None, "fetched": True, "over_look": "it-allattamento-come-iniziare"}  # fmt: skip
    md = detail_markdown(_turn({"safety": {"card_memory": picked}}))
    assert (
        "**Card chosen by a labelled question:** `en-baby-breastfeeding-problems`, the card of "
        "`replies/heldout-v17.jsonl:rep17-it-58` (cosine 0.982 ≥ 0.93); retrieval had not found it (read from the "
        "library); it replaced `it-allattamento-come-iniziare`, a second look's pick"
    ) in md


def test_the_answer_taken_says_when_a_labelled_questions_key_phrase_opened_it():
    answer = {"text": "Feeding often helps the baby latch.", "score": 1.5, "parts": {"cue": 1.0},
              "question_type": "what_to_do", "scorer": "cues", "segment_id": "en-baby-breastfeeding-problems#3",
              "lead": {"id": "replies/heldout-v27.jsonl:rep27-en-52", "cosine": 0.975,
                       "cards": ["en-baby-breastfeeding-problems"], "tau": 0.95, "used": True}}  # fmt: skip
    md = detail_markdown(_turn({"compose": {"attempts": [{"answer": answer}]}}))
    assert (
        "from `en-baby-breastfeeding-problems#3`; opened with the key phrase of labelled question "
        "`replies/heldout-v27.jsonl:rep27-en-52` (cosine 0.975 ≥ 0.95)"
    ) in md
    unused = {**answer, "lead": {**answer["lead"], "used": False}}
    assert "key phrase of labelled" not in detail_markdown(_turn({"compose": {"attempts": [{"answer": unused}]}}))

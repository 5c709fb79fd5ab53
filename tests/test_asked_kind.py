from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from chatbot.hashed_ngrams import features
from chatbot.stages.answer_cues import QUESTION_TYPES, answer_kind, question_type
from chatbot.stages.asked_kind import AskedKindHead, asked_kind, asking_part, shipped_head
from chatbot.training.asked_kind import design, fit, labelled_rows, leave_one_set_out

# -- the asking part -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "part"),
    [
        ("How much folic acid?", "How much folic acid?"),
        (
            "I'm 20 weeks. My midwife said to rest. Is it safe to fly? And when should I stop?",
            "Is it safe to fly? And when should I stop?",
        ),
        (
            "first baby, 17 weeks. Not felt anything yet? Normal? When will I feel kicks?",
            "Normal? When will I feel kicks?",
        ),
        ("sono stanchissima. consigli per dormire meglio", "consigli per dormire meglio"),
        ("ho la nausea\ncosa posso fare", "cosa posso fare"),
        ("   ", ""),
    ],
)
def test_the_asking_part_is_the_last_two_questions_else_the_last_sentence(question: str, part: str) -> None:
    assert asking_part(question) == part


# -- the head on hand-made weights --------------------------------------------------------------------------

N = 4096


def _head(word_kinds: dict[str, str]) -> AskedKindHead:
    """A head whose weights give each feature of ``word`` a weight of 4 (signed as the hashed feature) for its kind."""
    weights = np.zeros((len(QUESTION_TYPES), N), dtype=np.float32)
    for word, kind in word_kinds.items():
        idx, val = features(word, N)
        weights[QUESTION_TYPES.index(kind), idx] = 4.0 * np.sign(val)
    return AskedKindHead(weights, np.zeros(len(QUESTION_TYPES), dtype=np.float32), QUESTION_TYPES, N)


def test_the_head_reads_only_the_asking_part() -> None:
    head = _head({"quanto": "how_much", "perché": "why"})

    assert head.kind("quanto?") == "how_much"
    # the story before the question names "quanto"; the question asks "perché"
    assert head.kind("ne ho preso quanto mi hanno detto. Ma perché?") == "why"


def test_the_probabilities_are_a_softmax_over_the_six_kinds() -> None:
    head = _head({})
    head.bias = np.array([0.0, 0.0, 0.0, 0.0, 0.0, np.log(5.0)], dtype=np.float32)

    probs = head.probabilities("anything at all?")

    assert list(probs) == list(QUESTION_TYPES)
    assert probs["yes_no"] == pytest.approx(0.5)
    assert probs["when"] == pytest.approx(0.1)
    assert head.kind("anything at all?") == "yes_no"


def test_an_empty_asking_part_falls_to_the_bias() -> None:
    head = _head({"quanto": "how_much"})
    head.bias[QUESTION_TYPES.index("when")] = 1.0

    assert head.kind("...") == "when"


def test_save_and_load_keep_the_kinds(tmp_path: Path) -> None:
    head = _head({"quanto": "how_much", "perché": "why", "consigli": "what_to_do"})

    head.save(tmp_path, {"command": "test"})
    loaded = AskedKindHead.load(tmp_path)

    assert json.loads((tmp_path / "config.json").read_text())["command"] == "test"
    assert loaded.labels == QUESTION_TYPES and loaded.n_features == N
    for q in ("quanto?", "ma perché?", "consigli?"):
        assert loaded.kind(q) == head.kind(q)
    np.testing.assert_allclose(loaded.weights, head.weights, atol=4.0 / 127)


def test_a_missing_head_is_an_error_that_says_how_to_rebuild_it(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"python -m chatbot.training.asked_kind --ship models/asked_kind"):
        AskedKindHead.load(tmp_path)


def test_weights_that_do_not_fit_the_labels_are_an_error() -> None:
    with pytest.raises(ValueError, match="do not fit"):
        AskedKindHead(np.zeros((5, N), np.float32), np.zeros(6, np.float32), QUESTION_TYPES, N)
    with pytest.raises(ValueError, match="unknown labels"):
        AskedKindHead(np.zeros((1, N), np.float32), np.zeros(1, np.float32), ("how_many",), N)


def test_the_cue_source_is_the_cue_patterns_and_an_unknown_source_is_an_error() -> None:
    q = "Come lo devo tenere per farlo attaccare bene al seno?"
    assert asked_kind(q, "cues") == question_type(q) == "yes_no"
    with pytest.raises(ValueError, match="compose.asked_kind must be 'model' or 'cues'"):
        asked_kind(q, "llm")


def test_an_exclusion_question_is_typed_options_on_the_kind_it_is_given() -> None:
    q = "Which foods give iron, other than red meat?"
    assert answer_kind(q, excluded=True, kind="yes_no") == "options"
    assert answer_kind(q, excluded=True, kind="what_to_do") is None


# -- training ------------------------------------------------------------------------------------------------


def _write(path: Path, rows: list[tuple[str, str, str]]) -> None:
    path.write_text(
        "".join(
            json.dumps({"id": f"q{i}", "language": lang, "type": t, "question": q}) + "\n"
            for i, (lang, t, q) in enumerate(rows)
        ),
        encoding="utf-8",
    )


def test_labelled_rows_keep_typed_questions_and_leave_held_back_sets_out(tmp_path: Path) -> None:
    (tmp_path / "sets").mkdir()
    _write(tmp_path / "sets" / "a.jsonl", [("en", "why", "why is it?"), ("en", "options", "which ones?")])
    _write(tmp_path / "sets" / "b.jsonl", [("it", "how_much", "quanto?")])

    rows = labelled_rows(tmp_path, "sets/*.jsonl")
    assert [(r["set"], r["type"], r["question"]) for r in rows] == [
        ("a.jsonl", "why", "why is it?"),
        ("b.jsonl", "how_much", "quanto?"),
    ]
    assert [r["set"] for r in labelled_rows(tmp_path, "sets/*.jsonl", ["b.jsonl"])] == ["a.jsonl"]


def test_a_fitted_head_types_its_kinds_and_the_report_compares_it_with_the_cues(tmp_path: Path) -> None:
    words = {
        "how_much": "quanto quanta dose",
        "how_long": "durata dura tempo",
        "when": "quando settimana momento",
        "why": "perche motivo causa",
        "what_to_do": "consigli rimedi trucchi",
        "yes_no": "normale sicuro pericoloso",
    }
    rows = [
        {"set": f"s{k % 2}", "language": "it", "type": t, "question": f"story here. {w}?"}
        for t, ws in words.items()
        for k, w in enumerate(ws.split())
    ]
    x = design([r["question"] for r in rows])
    y = np.array([QUESTION_TYPES.index(r["type"]) for r in rows])
    w, b = fit(x, y, 10.0)
    head = AskedKindHead(w, b, QUESTION_TYPES, w.shape[1])

    assert [head.kind(r["question"]) for r in rows] == [r["type"] for r in rows]
    report = leave_one_set_out(rows, 10.0)
    assert set(report) == {"it"} and report["it"]["n"] == len(rows)
    assert 0.0 <= report["it"]["head"] <= 1.0 and 0.0 <= report["it"]["cues"] <= 1.0


# -- the shipped head ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("Come lo devo tenere per farlo attaccare bene al seno?", "what_to_do"),
        ("sono incinta di 17 settimane e non sento ancora niente. verso che settimana si sentono i calcetti?", "when"),
        ("Quanta vitamina D devo prendere in gravidanza?", "how_much"),
        ("why do my ankles swell so much in the evening?", "why"),
        ("Is it ok to dye my hair while pregnant?", "yes_no"),
        ("how long does the baby blues usually last?", "how_long"),
        ("my nipples are cracked and sore. any tips to make feeding less painful?", "what_to_do"),
        ("ho le caviglie gonfie la sera, cosa posso fare?", "what_to_do"),
    ],
)
def test_the_shipped_head_types_patients_questions(question: str, kind: str) -> None:
    assert asked_kind(question) == kind


def test_the_shipped_head_is_the_one_its_card_describes() -> None:
    head = shipped_head()
    config = json.loads((Path(__file__).parents[1] / "models" / "asked_kind" / "config.json").read_text())
    assert head.labels == tuple(config["labels"]) == QUESTION_TYPES
    assert config["leave_one_set_out_accuracy"]["it"]["head"] > config["leave_one_set_out_accuracy"]["it"]["cues"]


def test_chatbot_models_lists_the_asked_kind_head() -> None:
    from chatbot.models_cli import list_models

    rows = [r for r in list_models() if r["path"].endswith("models/asked_kind")]
    assert len(rows) == 1
    assert rows[0]["weights"] == "weights.npz" and len(rows[0]["sha256"]) == 64
    assert "compose.asked_kind=model" in rows[0]["name"]


def test_the_trained_answer_term_follows_the_composer_s_kind_and_options_keeps_the_question_s_own() -> None:
    from chatbot.stages.answer_first import TypedAnswerModel

    model = TypedAnswerModel(lambda: lambda q, texts: [0.5] * len(texts), ["yes_no"])
    iron = "Which foods are high in iron apart from red meat?"  # the cue patterns: yes_no

    assert model(iron, ["a", "b"]) == [0.5, 0.5]
    assert model(iron, ["a"], kind="how_much") is None
    assert model("how much iron a day?", ["a"], kind="yes_no") == [0.5]
    assert model(iron, ["a"], kind="options") == [0.5]

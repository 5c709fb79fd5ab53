"""The trained answer scorer: its weak labels (train splits only, topical negatives), its features, the
shipped weights, and how the composer uses its probability."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import numpy as np
import pytest

from chatbot.splits import split_of
from chatbot.stages.answer_cues import QUESTION_TYPES
from chatbot.stages.answer_trained import (
    FEATURE_VERSION,
    WEIGHTS_FILE,
    TrainedAnswerModel,
    default_model_dir,
    pair_features,
    text_features,
)
from chatbot.training.answer_scorer_data import Example, lead_sentence, mediqa_examples, medquad_examples

N_TEXT = len(QUESTION_TYPES) ** 2 + 3


def _write(root: Path, queries: list[dict], corpus: list[dict], qrels: list[tuple[str, str, int]]) -> Path:
    root.mkdir(parents=True)
    (root / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries), encoding="utf-8")
    (root / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in corpus), encoding="utf-8")
    rows = "".join(f"{q}\t{d}\t{s}\n" for q, d, s in qrels)
    (root / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\n" + rows, encoding="utf-8")
    return root


def test_lead_sentence_skips_a_restated_question_a_title_and_a_bare_heading() -> None:
    assert lead_sentence("How might flu be treated? Rest and fluids help most adults recover.") == (
        "Rest and fluids help most adults recover."
    )
    flu = "Flu is a viral infection of the airways."
    assert lead_sentence(f"Flu: {flu}", "Flu") == flu
    assert lead_sentence("Causes: - Too short. Yes.") is None


def test_medquad_positive_is_the_lead_sentence_and_negatives_are_the_topics_other_sections(tmp_path) -> None:
    # FLU_0000002's sections are train questions; NOON_0000001_Sec1 is a test question: its answer never
    # enters training, not even as a negative
    assert [split_of(f"FLU_0000002_Sec{i}") for i in (1, 2, 3)] == ["train"] * 3
    assert split_of("NOON_0000001_Sec1") == "test"
    corpus = [
        {"_id": "FLU_0000002_Sec1", "text": "How common is flu? Flu affects about 1 in 10 adults each year."},
        {"_id": "FLU_0000002_Sec2", "text": "Flu is caused by influenza viruses that spread in droplets."},
        {"_id": "FLU_0000002_Sec3", "text": "Most people with flu recover within one to two weeks."},
        {"_id": "NOON_0000001_Sec1", "text": "Noonan syndrome occurs in about 1 in 2,000 people."},
        {"_id": "NOON_0000001_Sec2", "text": "Noonan syndrome is caused by changes in several genes."},
    ]
    queries = [
        {"_id": "FLU_0000002_Sec1", "text": "How many people are affected by flu ?"},
        {"_id": "NOON_0000001_Sec1", "text": "How many people are affected by Noonan syndrome ?"},
    ]
    qrels = [("FLU_0000002_Sec1", "FLU_0000002_Sec1", 1), ("NOON_0000001_Sec1", "NOON_0000001_Sec1", 1)]
    root = _write(tmp_path / "medquad", queries, corpus, qrels)

    examples = medquad_examples(root, random.Random(0))

    question = "How many people are affected by flu ?"
    assert [(e.sentence, e.label) for e in examples if e.label == 1] == [
        ("Flu affects about 1 in 10 adults each year.", 1)
    ]
    negatives = {e.sentence for e in examples if e.label == 0}
    assert {e.question for e in examples} == {question}  # the test question gives nothing
    assert "Noonan syndrome occurs in about 1 in 2,000 people." not in negatives  # judged for a test question
    assert {
        "Flu is caused by influenza viruses that spread in droplets.",
        "Most people with flu recover within one to two weeks.",
    } <= negatives  # the same topic, another section: on the subject, not the answer
    assert negatives - {
        "Flu is caused by influenza viruses that spread in droplets.",
        "Most people with flu recover within one to two weeks.",
    } <= {"Noonan syndrome is caused by changes in several genes."}  # at most one other topic's lead


def test_mediqa_grades_give_labels_for_the_english_and_the_italian_question(tmp_path) -> None:
    assert (split_of("train_alexa-1"), split_of("train_alexa-2")) == ("train", "test")
    corpus = [
        {"_id": "a1", "title": "Flu", "text": "Flu: Flu is a viral infection of the nose and lungs."},
        {"_id": "a2", "title": "Colds", "text": "Colds: A cold is a mild infection of the nose."},
        {"_id": "a3", "title": "Flu", "text": "Flu vaccines are offered every autumn to adults."},
        {"_id": "b1", "title": "Rash", "text": "A rash is a change of the skin's colour or texture."},
    ]
    qrels = [("train_alexa-1", "a1", 2), ("train_alexa-1", "a2", 0), ("train_alexa-1", "a3", 1)]
    qrels += [("train_alexa-2", "b1", 2)]
    en = _write(
        tmp_path / "mediqa",
        [{"_id": "train_alexa-1", "text": "What is flu?"}, {"_id": "train_alexa-2", "text": "What is a rash?"}],
        corpus,
        qrels,
    )
    it = tmp_path / "mediqa-it"
    it.mkdir()
    (it / "queries.jsonl").write_text(
        json.dumps({"_id": "train_alexa-1", "text": "Cos'è l'influenza?", "text_en": "What is flu?"}) + "\n",
        encoding="utf-8",
    )

    examples = mediqa_examples(en, it)

    flu, cold = "Flu is a viral infection of the nose and lungs.", "A cold is a mild infection of the nose."
    it_question = "Cos'è l'influenza?"
    assert examples == [
        Example("train_alexa-1", "mediqa", "What is flu?", flu, 1),
        Example("train_alexa-1", "mediqa-it", it_question, flu, 1),
        Example("train_alexa-1", "mediqa", "What is flu?", cold, 0),
        Example("train_alexa-1", "mediqa-it", it_question, cold, 0),
    ]  # a3 (grade 3, correct but incomplete) is neither; the test question train_alexa-2 gives nothing


def test_pair_features_are_product_difference_cosine_then_type_cues() -> None:
    q = np.asarray([1.0, 0.0, 0.0], dtype=np.float32)
    s = np.asarray([[0.6, 0.8, 0.0]], dtype=np.float32)
    question = "How much green tea can I drink a day?"
    sentence = "Have no more than 4 cups of green tea a day."

    row = pair_features(q, s, question, [sentence])[0]

    assert row.shape == (3 + 3 + 1 + N_TEXT,)
    assert row[:3].tolist() == pytest.approx([0.6, 0.0, 0.0])  # q * s
    assert row[3:6].tolist() == pytest.approx([0.4, 0.8, 0.0])  # |q - s|
    assert row[6] == pytest.approx(0.6)  # cosine
    cues = row[7 : 7 + 36].reshape(6, 6)
    how_much = QUESTION_TYPES.index("how_much")
    assert cues[how_much, how_much] == 1.0  # an amount and a limit, for a "how much" question
    assert not np.delete(cues, how_much, axis=0).any()  # the other question types' rows stay 0
    overlap, length, is_question = row[-3:]
    assert overlap == pytest.approx(1 / 2)  # of the question's content words "green" and "drink", "green"
    assert length == pytest.approx(math.log1p(len(sentence)) / 6.0)
    assert is_question == 0.0
    assert text_features(question, ["Is it tea?"])[0, -1] == 1.0


def _weights(tmp_path: Path, coef: np.ndarray, intercept: float, version: int = FEATURE_VERSION) -> Path:
    n = coef.shape[0]
    np.savez(
        tmp_path / WEIGHTS_FILE,
        coef=coef.astype(np.float32),
        intercept=np.float32(intercept),
        mean=np.zeros(n, dtype=np.float32),
        scale=np.ones(n, dtype=np.float32),
        meta=np.asarray(json.dumps({"feature_version": version})),
    )
    return tmp_path


def test_a_weights_file_scores_by_its_coefficients_and_embeds_each_sentence_once(tmp_path, fake_embedder) -> None:
    dim = fake_embedder.dim
    coef = np.zeros(2 * dim + 1 + N_TEXT)
    coef[2 * dim] = 4.0  # the cosine only
    model = TrainedAnswerModel(fake_embedder, _weights(tmp_path, coef, -2.0))
    texts = ["Fever in babies needs a doctor.", "Sleep on the back.", "Fever in babies needs a doctor."]

    probs = model("My baby has a fever", texts)

    # the fake embedder: the question and "fever" sentence share the fever axis (cosine 1); sleep: cosine 0
    high, low = 1 / (1 + math.exp(-2.0)), 1 / (1 + math.exp(2.0))
    assert probs.tolist() == pytest.approx([high, low, high])
    model("Is fever dangerous?", texts)
    assert fake_embedder.passages == texts[:2]  # each sentence embedded once per process


def test_missing_or_stale_weights_fail_with_a_clear_message(tmp_path, fake_embedder) -> None:
    with pytest.raises(FileNotFoundError, match="python -m chatbot.training.answer_scorer"):
        TrainedAnswerModel(fake_embedder, tmp_path / "nowhere")
    with pytest.raises(ValueError, match="feature version 0"):
        TrainedAnswerModel(fake_embedder, _weights(tmp_path, np.zeros(3), 0.0, version=0))


def test_the_shipped_weights_fit_e5_features(fake_embedder) -> None:
    model = TrainedAnswerModel(fake_embedder, default_model_dir())

    assert model.coef.shape == model.mean.shape == model.scale.shape == (2 * 384 + 1 + N_TEXT,)
    assert (model.meta["embedder"], model.meta["feature_version"]) == ("e5-onnx", FEATURE_VERSION)
    assert model.meta["examples"] > 1000 and 0 < model.meta["positives"] < model.meta["examples"]
    assert (default_model_dir() / "README.md").is_file()
    assert (default_model_dir() / WEIGHTS_FILE).stat().st_size < 1_000_000


def test_the_composer_adds_the_probability_as_it_is_on_the_bare_sentence() -> None:
    from chatbot.index import Hit
    from chatbot.stages.answer_first import compose_answer_first
    from chatbot.stages.answer_select import W_TRAINED
    from corpus.model import Segment

    seen: list[str] = []

    class Model:
        reads_heading = False
        probability = True

        def __call__(self, question, texts):
            seen.extend(texts)
            return [0.9 if "4 cups" in t else 0.2 for t in texts]

    seg = Segment(
        id="tea#0",
        doc_id="tea",
        text="Green tea contains caffeine. Have no more than 4 cups a day.",
        title="Green tea",
        source_url="https://example.org/tea",
        position=0,
        heading="How much",
    )
    out = compose_answer_first("How much green tea can I drink?", [Hit(seg, 1.0, {})], model=Model())

    assert seen == ["Green tea contains caffeine.", "Have no more than 4 cups a day."]  # no "How much: " prefix
    assert out.text.startswith("Have no more than 4 cups a day.")
    assert out.detail["answer"]["parts"]["model"] == pytest.approx(W_TRAINED * 0.9)  # not min-max (that gives 1.0)


def test_cues_trained_loads_the_shipped_model_once_per_services_in_both_languages(monkeypatch, fake_embedder) -> None:
    import types

    import chatbot.embedders
    from chatbot.settings import load_settings
    from chatbot.stages.answer_first import answer_model_for

    asked: list[str] = []
    threads_asked: list[int] = []
    monkeypatch.setattr(
        chatbot.embedders,
        "load_embedder",
        lambda kind, threads=2, int8_matmul="int8": (
            asked.append(kind) or threads_asked.append(threads) or fake_embedder
        ),
    )
    services = types.SimpleNamespace(settings=load_settings())

    english = answer_model_for(services, "cues+trained", "en")
    italian = answer_model_for(services, "cues+trained", "it")

    assert isinstance(english, TrainedAnswerModel) and italian is english
    assert asked == ["e5-onnx"]  # the vectors the head was fitted on, whatever the pipeline's embedder
    assert threads_asked == [services.settings.embedding.threads]  # the pipeline's key: one shared instance
    services.settings.compose.trained_types = []
    assert answer_model_for(services, "cues", "en") is not None  # the learned weights' types, not trained_types
    services.settings.compose.unit_weights = "hand"
    assert answer_model_for(services, "cues", "en") is None


def test_cues_add_the_trained_term_for_the_default_types_only_and_load_it_then(monkeypatch) -> None:
    import types

    from chatbot.settings import load_settings
    from chatbot.stages import answer_first
    from chatbot.stages.answer_first import TypedAnswerModel, answer_model_for

    loaded: list[str] = []

    def trained(question, texts):
        return [0.25 for _ in texts]

    monkeypatch.setattr(answer_first, "_trained_model", lambda services: loaded.append("e5-onnx") or trained)
    services = types.SimpleNamespace(settings=load_settings())
    # the default weights (learned) were fitted with the term on for every type
    assert answer_model_for(services, "cues", "it")("How much caffeine a day?", ["Have no more than 200 mg."]) == [0.25]
    loaded.clear()
    services.settings.compose.unit_weights = "hand"
    model = answer_model_for(services, "cues", "it")

    # with the hand weights: the types the reply-set head gained on, leave-one-set-out (replies-s12.md)
    assert services.settings.compose.trained_types == ["how_long", "when", "yes_no", "why"]
    assert isinstance(model, TypedAnswerModel) and (model.probability, model.reads_heading) == (True, False)
    assert model("How much caffeine a day?", ["Have no more than 200 mg."]) is None and loaded == []
    assert model("What should I do about heartburn?", ["Eat smaller meals."]) is None and loaded == []
    assert model("Why is caffeine a worry?", ["It crosses the placenta.", "Tea has some."]) == [0.25, 0.25]
    assert model("perché la caffeina fa male?", ["Attraversa la placenta."]) == [0.25]
    assert model("When is the anomaly scan?", ["It is at 20 weeks."]) == [0.25]
    assert model("Is it safe to dye my hair?", ["Most hair dyes are fine."]) == [0.25]
    assert loaded == ["e5-onnx"] * 4  # asked per question of those types (the services' cache keeps one instance)


def test_a_missing_trained_scorer_leaves_the_cues_to_answer_and_says_why() -> None:
    from chatbot.stages.answer_first import TypedAnswerModel, compose_answer_first
    from tests.test_answer_select import TEA_DOC, TEA_WHY, hits

    def missing():
        raise FileNotFoundError("models/answer_scorer/answer_scorer.npz is missing")

    model = TypedAnswerModel(missing, ["why"])
    with_model = compose_answer_first(
        "Why is green tea a worry?", hits(TEA_WHY), "en", document_segments=lambda d: TEA_DOC, model=model
    )
    cues = compose_answer_first("Why is green tea a worry?", hits(TEA_WHY), "en", document_segments=lambda d: TEA_DOC)

    assert with_model.text == cues.text
    assert "model" not in with_model.detail["answer"]["parts"]
    assert with_model.detail["answer"]["model_error"] == (
        "FileNotFoundError: models/answer_scorer/answer_scorer.npz is missing"
    )


LABOUR = (
    "Most babies are born between 37 and 42 weeks of pregnancy. Labour may start with a show or with your waters "
    "breaking. Phone the maternity unit when your contractions come every 5 minutes."
)


def _labour_reply(question: str, model) -> str:
    from chatbot.index import Hit
    from chatbot.stages.answer_first import compose_answer_first
    from corpus.model import Segment

    seg = Segment(
        id="labour#0", doc_id="labour", text=LABOUR, title="Signs of labour", source_url="https://example.org/labour",
        position=0, heading="Signs of labour",
    )  # fmt: skip
    return compose_answer_first(question, [Hit(seg, 1.0, {})], model=model).text


def test_the_reply_set_head_weighs_its_term_by_its_own_metadata_for_its_types_only() -> None:
    from chatbot.stages.answer_cues import question_type
    from chatbot.stages.answer_first import TypedAnswerModel

    asked: list[str] = []

    class Head:  # the reply-set head's kind of scores: small, one unit clearly above the rest
        def __init__(self, weight):
            self.weight = weight

        def __call__(self, question, texts):
            asked.append(question)
            return [0.3 if t.startswith("Phone") else 0.02 for t in texts]

    types = ["how_long", "when", "yes_no", "why"]
    when, how_much = "When should I go to hospital in labour?", "How much time should I give labour at home?"
    assert (question_type(when), question_type(how_much)) == ("when", "how_much")
    weeks = (
        "Most babies are born between 37 and 42 weeks of pregnancy. Labour may start with a show or with your "
        "waters breaking."
    )

    # the cues alone open with the weeks (a time cue, but not when to go in)
    assert _labour_reply(when, None) == weeks
    # weighted 4 (its metadata), the head's +0.28 puts the instruction first
    assert _labour_reply(when, TypedAnswerModel(lambda: Head(4.0), types)) == (
        "Phone the maternity unit when your contractions come every 5 minutes. Most babies are born between 37 "
        "and 42 weeks of pregnancy."
    )
    # without a weight of its own (W_TRAINED = 1) the cue still wins and the instruction only follows
    assert _labour_reply(when, TypedAnswerModel(lambda: Head(None), types)) == (
        f"{weeks} Phone the maternity unit when your contractions come every 5 minutes."
    )
    # how_much is not one of its types (it lost such questions, replies-s12.md): the cues' reply, the head unasked
    assert _labour_reply(how_much, TypedAnswerModel(lambda: Head(4.0), types)) == _labour_reply(how_much, None)
    assert asked == [when, when]


def test_the_shipped_reply_set_head_carries_its_weight_and_is_chosen_by_the_setting(monkeypatch, fake_embedder) -> None:
    import types

    from chatbot.settings import load_settings
    from chatbot.stages import answer_first
    from chatbot.stages.answer_trained import HEADS

    public = TrainedAnswerModel(fake_embedder, default_model_dir())
    replies = TrainedAnswerModel(fake_embedder, default_model_dir(), weights_file=HEADS["reply-sets"])

    assert public.weight is None  # answer_select.W_TRAINED
    assert replies.weight == 4.0 and replies.coef.shape == public.coef.shape
    assert sorted(replies.meta["reply_sets"]) == sorted(
        ["replyset", "heldout", "heldout-v2", "heldout-v3", "heldout-v4", "heldout-v5", "heldout-v6"]
    )
    assert (default_model_dir() / HEADS["reply-sets"]).stat().st_size < 1_000_000

    import chatbot.embedders

    monkeypatch.setattr(chatbot.embedders, "load_embedder", lambda kind, threads=2, int8_matmul="int8": fake_embedder)
    settings = load_settings()
    assert settings.compose.trained_head == "reply-sets"  # the default
    chosen = answer_first._trained_model(types.SimpleNamespace(settings=settings))
    assert chosen.weight == 4.0 and np.array_equal(chosen.coef, replies.coef)
    settings.compose.trained_head = "public"  # main's head before session 12
    again = answer_first._trained_model(types.SimpleNamespace(settings=settings))
    assert again.weight is None and np.array_equal(again.coef, public.coef)


def test_a_yes_no_question_takes_the_trained_term_only_from_the_card_that_names_what_was_asked(monkeypatch) -> None:
    from chatbot.index import Hit
    from chatbot.stages.answer_first import TypedAnswerModel, compose_answer_first
    from corpus.model import Segment

    def seg(doc: str, title: str, text: str) -> Segment:
        return Segment(
            id=f"{doc}#0", doc_id=doc, text=text, title=title, source_url=f"https://example.org/{doc}", position=0,
            heading=title,
        )  # fmt: skip

    caffeine = seg(
        "caffeine", "Caffeine in pregnancy",
        "Coffee, tea and cola contain caffeine, so keep an eye on what you drink. The usual advice is no more than "
        "200 milligrams of caffeine a day.",
    )  # fmt: skip
    alcohol = seg(
        "alcohol", "Alcohol in pregnancy",
        "No amount of alcohol is known to be safe to drink in pregnancy. Ask your midwife for support to stop.",
    )  # fmt: skip

    class Head:  # reads the alcohol verdict as the answer to "is it safe to drink ...?" (as the real head did)
        weight = 4.0

        def __call__(self, question, texts):
            return [0.5 if "No amount" in t else 0.1 if "200 milligrams" in t else 0.02 for t in texts]

    model = TypedAnswerModel(lambda: Head(), ["yes_no", "why"])
    hits = [Hit(caffeine, 1.0, {}), Hit(alcohol, 0.9, {})]

    question = "Is it safe to drink coffee when pregnant?"
    coffee = compose_answer_first(question, hits, model=model)
    assert coffee.text == "The usual advice is no more than 200 milligrams of caffeine a day."
    assert coffee.detail["answer"]["parts"]["model"] == 0.4  # 4 x 0.1
    assert [u["doc_id"] for u in coffee.detail["answer"]["runner_up"]] == ["caffeine", "alcohol", "alcohol"]
    # the caffeine card names "coffee" and "drink", the alcohol card "safe" and "drink": without the rule the
    # alcohol verdict's 4 x 0.5 opens the reply
    import chatbot.stages.answer_select as answer_select

    monkeypatch.setattr(answer_select, "TRAINED_NAMED_ONLY", ())
    unguarded = compose_answer_first(question, hits, model=model)
    assert unguarded.text.startswith("No amount of alcohol is known to be safe to drink in pregnancy.")
    monkeypatch.undo()
    # a "why" question is not held to the naming card: the same head opens with the alcohol sentence
    why = compose_answer_first("Why is drinking coffee a worry when pregnant?", hits, model=model)
    assert why.text.startswith("No amount of alcohol is known to be safe to drink in pregnancy.")

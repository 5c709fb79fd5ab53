"""The red-flag classifier runtime (hashed n-grams, int8 linear head) and its training helpers."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from chatbot.stages.redflag_classifier import LABELS, RedFlagClassifier, features, normalise, units
from chatbot.training.redflag_dataset import expand, extra_seeds, fill, seeds, typos
from chatbot.training.redflags import choose_framing_floor, choose_threshold, gated, quantise


def test_features_fold_accents_and_are_unit_length():
    idx_a, val_a = features("Il bambino non si muove più")
    idx_b, val_b = features("il bambino non si muove piu")

    assert np.array_equal(np.sort(idx_a), np.sort(idx_b))
    assert np.isclose(np.linalg.norm(val_a), 1.0)
    assert normalise("HELPPPP è") == "helpp e"
    assert features("!!!")[0].size == 0


def test_units_whole_text_first_then_sentences_pairs_and_windows():
    text = "What food is safe in pregnancy? Also my baby is not breathing. Thanks"
    got = units(text)

    assert got[0] == text
    assert "Also my baby is not breathing." in got
    assert "What food is safe in pregnancy? Also my baby is not breathing." in got
    long = " ".join(f"w{i}" for i in range(40))
    windows = [u for u in units(long) if u != long]
    assert windows[0] == " ".join(f"w{i}" for i in range(16)) and windows[1].startswith("w8 ")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # a sentence that only says when is read with the sentence before it, never alone
        ("how should i be bending? 25wks", ["how should i be bending? 25wks"]),
        (
            "Any tips for back pain? I'm 30 weeks. Thanks",
            [
                "Any tips for back pain? I'm 30 weeks. Thanks",
                "Any tips for back pain? I'm 30 weeks.",
                "Thanks",
            ],
        ),
        # first: with the sentence after it
        ("sono a 30 settimane. posso andare in bici?", ["sono a 30 settimane. posso andare in bici?"]),
        # a week inside a sentence with something else in it stays where it is
        (
            "Bleeding at 25wks. What do I do?",
            [
                "Bleeding at 25wks. What do I do?",
                "Bleeding at 25wks.",
                "What do I do?",
            ],
        ),
    ],
)
def test_a_timing_only_sentence_is_not_scored_alone(text: str, expected: list[str]) -> None:
    assert units(text) == expected


def test_the_shipped_screen_no_longer_reads_a_bare_week_as_an_alarm() -> None:
    from chatbot.stages.redflags import screen

    # the shipped head scored the unit "25wks" alone 0.9995 for the maternity unit
    assert screen("how should i be bending? 25wks").urgent is False
    assert screen("I'm bleeding heavily and have bad tummy pain. 25wks").urgent is True


def _toy(threshold: float = 0.5) -> RedFlagClassifier:
    """A hand-made head: the hashed features of 'overdose' push 'poisoning', everything else 'none'."""
    n = 1 << 10
    w = np.zeros((len(LABELS), n), dtype=np.float32)
    idx, val = features("overdose", n)
    w[LABELS.index("poisoning"), idx] = 20 * val
    bias = np.array([2.0, 0, 0, 0, 0], dtype=np.float32)
    return RedFlagClassifier(w, bias, threshold)


def test_the_most_urgent_part_of_the_message_decides():
    clf = _toy()

    calm = clf.predict("Is coffee safe when pregnant?")
    buried = clf.predict("Is coffee safe when pregnant? Also overdose.")

    assert calm.fired == () and calm.urgent_score < 0.5
    assert buried.fired == ("poisoning",) and buried.unit == "Also overdose."
    assert buried.urgent_score > 0.9
    assert set(buried.trace()) == {"urgent_score", "threshold", "fired", "scores", "unit"}


def _pooled(meta: dict) -> RedFlagClassifier:
    """'overdose' pushes poisoning hard, 'hopeless' pushes mental health mildly: alone it scores 0.95, diluted less."""
    n = 1 << 10
    w = np.zeros((len(LABELS), n), dtype=np.float32)
    for word, label, weight in (("overdose", "poisoning", 20.0), ("hopeless", "mental_health", 5.0)):
        idx, val = features(word, n)
        w[LABELS.index(label), idx] += weight * val
    return RedFlagClassifier(w, np.array([2.0, 0, 0, 0, 0], dtype=np.float32), 0.8, meta)


STORY = "We moved house last week. The boxes are everywhere. {} Anyway what snacks are good at 20 weeks?"


def test_a_long_message_scores_the_mean_of_its_three_best_units_when_the_config_says_so():
    best, pooled = _pooled({}), _pooled({"pool_top": 3, "pool_min_units": 6})
    benign, urgent = STORY.format("Hopeless."), STORY.format("He took an overdose.")

    assert len(units(benign)) == 8
    assert best.predict(benign).urgent_score == pytest.approx(0.9535, abs=1e-4)  # one clause alone decides
    assert best.predict(benign).fired == ("mental_health",)
    assert pooled.predict(benign).urgent_score == pytest.approx(0.7471, abs=1e-4)  # its pairs and the whole dilute it
    assert pooled.predict(benign).fired == ()
    assert pooled.predict(urgent).urgent_score == pytest.approx(0.9992, abs=1e-4)
    assert pooled.predict(urgent).fired == ("poisoning",) and pooled.predict(urgent).unit == "He took an overdose."
    short = "Hopeless. What snacks are good?"  # 3 units: below pool_min_units, the best unit alone
    assert pooled.predict(short).urgent_score == best.predict(short).urgent_score == pytest.approx(0.9535, abs=1e-4)


def test_quantised_weights_round_trip_through_the_shipped_format(tmp_path):
    clf = _toy(0.3)
    w = clf.weights.T.copy()
    q, scale = quantise(w)
    np.savez_compressed(tmp_path / "weights.npz", weights_int8=q, scales=scale, bias=clf.bias)
    (tmp_path / "config.json").write_text(json.dumps({"labels": list(LABELS), "threshold": 0.3}))

    loaded = RedFlagClassifier.load(tmp_path)

    assert q.dtype == np.int8 and np.abs(q).max() == 127
    assert np.allclose(loaded.weights, clf.weights, atol=float(scale.max()))
    assert loaded.predict("overdose").fired == ("poisoning",)
    (tmp_path / "config.json").write_text(json.dumps({"labels": ["none", "urgent"], "threshold": 0.3}))
    with pytest.raises(ValueError, match=r"labels \['none', 'urgent'\] differ"):
        RedFlagClassifier.load(tmp_path)


def test_choose_threshold_keeps_the_recall_with_the_fewest_false_alarms():
    scores = np.array([0.9, 0.8, 0.3, 0.05, 0.6, 0.2, 0.01])
    rules = np.array([False, False, False, True, False, False, False])
    urgent = np.array([True, True, True, True, False, False, False])

    assert choose_threshold(scores, rules, urgent, 1.0) == 0.3  # the rule covers 0.05
    assert choose_threshold(scores, rules, urgent, 0.75) == 0.8  # 0.9, 0.8 and the rule: no false alarm
    assert choose_threshold(scores, np.zeros(7, dtype=bool), urgent, 1.0) == 0.05


def test_expansions_are_seeded_and_fill_every_slot():
    a = [expand(fill("{she} is {wk} and bleeding", "en", random.Random(1)), "en", random.Random(2), [], True)]
    b = [expand(fill("{she} is {wk} and bleeding", "en", random.Random(1)), "en", random.Random(2), [], True)]

    assert a == b and "{" not in a[0]
    assert typos("bleeding heavily", random.Random(3), 1) != "bleeding heavily"


def test_the_framing_floor_is_the_highest_that_keeps_the_recall_on_every_run():
    scores = np.array([0.9, 0.04, 0.12, 0.02, 0.3])
    rules = np.array([False, True, True, True, False])
    framed = np.array([False, True, True, True, False])
    urgent = np.array([True, True, False, False, False])

    # the framed urgent rule (0.04) must survive: floors 0.01-0.04 keep it, 0.05 loses it
    assert choose_framing_floor([(scores, rules, framed, urgent)], 0.5, 1.0) == 0.04
    assert gated(scores, rules, framed, 0.5, 0.04).tolist() == [True, True, True, False, False]
    assert choose_framing_floor([(scores, rules, framed, urgent)], 0.5, 0.5) == 0.5
    assert gated(scores, rules, framed, 0.5, 0.5).tolist() == [True, False, False, False, False]
    # an unframed rule always counts
    assert gated(scores, rules, np.zeros(5, dtype=bool), 0.5, 0.5).tolist() == [True, True, True, True, False]


def test_the_seed_data_loads_with_its_labels():
    table = seeds()
    assert set(table["positives"]) == {"emergency", "poisoning", "mental_health", "maternity_unit"}
    assert {len(table["positives"][a]["en"]) > 0 for a in table["positives"]} == {True}
    rows = extra_seeds()
    assert len(rows) == 759
    assert {r["label"] for r in rows} == {"emergency", "poisoning", "mental_health", "maternity_unit", "none"}
    assert {r["lang"] for r in rows} == {"en", "it"}

"""evaluation.redteam.gate_refusals: the decision that refused a row, on hand-made scores."""

from evaluation.redteam.gate_refusals import diagnose

RULE = (43.097, -1.725)


def _row(p: float, other: float, relevant: bool = False, urgent: bool = False) -> dict:
    return {
        "id": "q1",
        "source": "replies/x.jsonl",
        "probability": p,
        "shipped_relevant": relevant,
        "links": ["it-a", "it-card", "it-c"],
        "link_dense": [0.82, 0.80, 0.79],
        "links_in_language": True,
        "other_doc": "en-card",
        "other_dense": other,
        "other_urgent": urgent,
    }


def test_second_look_refuses_when_english_card_is_further_than_best_link():
    # logit(0.25) = -1.0986; 43.097 * (0.80 - 0.82) = -0.8619; -1.9606 < -1.725
    d = diagnose(_row(0.25, 0.80), "en-card", 0.61, RULE)
    assert d["second_look"] == {"score": -1.961, "cut": -1.725, "relevant": False}
    assert d["refused_by"] == "classifier, then second look"
    assert d["answered"] is False
    assert d["other_doc_is_card"] is True
    assert d["card_rank"] is None


def test_second_look_answers_when_english_card_is_close():
    # -1.0986 + 43.097 * (0.81 - 0.82) = -1.5296 >= -1.725
    d = diagnose(_row(0.25, 0.81), "it-card", 0.61, RULE)
    assert d["second_look"] == {"score": -1.53, "cut": -1.725, "relevant": True}
    assert d["refused_by"] is None
    assert d["card_rank"] == 2


def test_urgent_other_document_gets_no_second_look():
    d = diagnose(_row(0.25, 0.90, urgent=True), "it-card", 0.61, RULE)
    assert d["second_look"] is None
    assert d["refused_by"] == "classifier (no second look possible)"


def test_classifier_pass_needs_no_second_look():
    d = diagnose(_row(0.70, 0.50, relevant=True), "it-a", 0.61, RULE)
    assert (d["answered"], d["second_look"], d["card_rank"]) == (True, None, 1)

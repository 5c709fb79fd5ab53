"""Sentence-level mention detection of NOT terms and the exclusion constraint (issue 19): hand-made
sentences and scores with exact expectations."""

from __future__ import annotations

import math

import numpy as np
import pytest

from chatbot.index import Hit
from chatbot.logical import exclusion
from chatbot.logical.mention import (
    SYNONYMS,
    Calibration,
    load_synonyms,
    mention_scores,
    sentence_stems,
    stem,
    term_words,
)
from chatbot.logical.query import parse
from corpus.model import Segment


def seg(doc_id: str, text: str, part: int = 0) -> Segment:
    return Segment(f"{doc_id}#{part}", doc_id, text, "", "https://example.org/" + doc_id, part)


def test_stems_join_morphological_variants_in_both_languages() -> None:
    assert stem("kangaroos") == stem("kangaroo") == "kangaro"
    assert stem("religious") == stem("religion")
    assert stem("gravidanza") == stem("gravidanze")
    assert stem("influences") == stem("influence")


def test_term_words_drop_filler_and_mark_names() -> None:
    nobel = term_words("the Nobel Prize")
    assert nobel.stems == (frozenset({"nobel"}), frozenset({"priz"}))
    assert nobel.kind == "entity"
    flower = term_words("details about the flower's color and shape")
    assert [sorted(g)[0] for g in flower.stems] == ["flower", "color", "shap"]
    assert flower.kind == "concept"
    assert term_words("The O2").kind == "entity"  # a digit makes a name


def test_synonyms_cross_languages() -> None:
    surgery = term_words("surgery")
    assert "chirurg" in surgery.stems[0] and "oper" in surgery.stems[0]
    passages = [sentence_stems("Si valuta la chirurgia solo in casi gravi."), sentence_stems("Riposo e impacchi.")]
    assert mention_scores(surgery, passages).score.tolist() == [1.0, 0.0]


def test_the_synonym_groups_load_from_the_shipped_table_in_order() -> None:
    assert len(SYNONYMS) == 85
    assert SYNONYMS[0][:3] == ("surgery", "surgical", "operation")
    assert (
        "exercise",
        "exercises",
        "physical activity",
        "esercizio",
        "esercizi",
        "attivita fisica",
        "sport",
    ) in SYNONYMS
    assert SYNONYMS[22] == ("anaemia", "anemia", "anaemic", "anemica", "anemico")  # the cards' topic words start
    assert SYNONYMS[-1] == ("screening", "screening")


def test_the_topic_glossary_decomposes_italian_terms_as_before() -> None:
    def stems(term: str) -> list[list[str]]:
        return [sorted(g) for g in term_words(term, "nausea in gravidanza").stems]

    assert stems("l'anemia") == [["anaemi", "anaemic", "anemi", "anemic"]]
    assert stems("allattare al seno") == [["allatt", "allatta", "breastf", "nurs"], ["breast", "seno"]]
    assert stems("il pesce e l'olio di fegato di merluzzo") == [
        ["fish", "pesc"],
        ["oil", "olio"],
        ["fegat", "liver"],
        ["cod", "merluzz"],
    ]
    assert stems("gravidanze") == []  # the question's own topic word is dropped


def test_a_synonym_table_skips_comments_and_blank_lines(tmp_path) -> None:
    table = tmp_path / "synonyms.tsv"
    table.write_text("# a comment\n\nginger\tzenzero\nphysical activity\tsport\n", encoding="utf-8")
    assert load_synonyms(table) == (("ginger", "zenzero"), ("physical activity", "sport"))


@pytest.mark.parametrize("term", ["", "   "])
def test_empty_term_is_a_clear_error(term: str) -> None:
    with pytest.raises(ValueError, match="NOT term cannot be empty"):
        term_words(term)


def test_the_strongest_sentence_drives_the_passage_score() -> None:
    term = term_words("the Nobel Prize")
    passages = [
        # one sentence of three names the prize: full score, from sentence 1
        sentence_stems("Carrel was a surgeon. He won the Nobel Prize in 1912. He worked in New York."),
        # "prize" alone: only part of the term's weight
        sentence_stems("Carrel was a surgeon. He got a prize from the city."),
        sentence_stems("Carrel was a surgeon. He worked in New York."),
    ]
    got = mention_scores(term, passages, beta=1000.0)
    assert got.best_sentence == [1, 1, 0]
    assert got.score[0] == pytest.approx(1.0)
    assert 0.0 < got.score[1] < 0.6
    assert got.score[2] == 0.0


def test_soft_max_rewards_a_passage_that_returns_to_the_term() -> None:
    term = term_words("kangaroos")
    once = sentence_stems("Marsupials evolved in isolation. Kangaroos hop. Koalas eat leaves.")
    twice = sentence_stems("Marsupials evolved in isolation. Kangaroos hop. A kangaroo carries its young.")
    got = mention_scores(term, [once, twice], beta=4.0)
    assert got.score[0] == pytest.approx(1.0)
    assert got.score[1] == pytest.approx(1.0 + math.log(2) / 4.0)
    assert got.score[1] > got.score[0]


def test_calibration_per_term_kind() -> None:
    cal = Calibration(tau_entity=0.4, tau_concept=0.8, lam=10.0)
    assert cal(np.array([0.4]), "entity")[0] == pytest.approx(0.5)
    assert cal(np.array([0.4]), "concept")[0] == pytest.approx(1 / (1 + math.exp(4.0)))


def test_either_of_two_exclusions_demotes_and_the_constraint_orders_documents() -> None:
    query = parse('"marsupials in Australia" AND NOT "kangaroos" AND NOT "the Tasmanian devil"')
    hits = [
        Hit(seg("kangaroo", "Marsupials in Australia. Kangaroos are the largest."), 0.9, {}),
        Hit(seg("devil", "Marsupials in Australia. The Tasmanian devil is a carnivore."), 0.8, {}),
        Hit(seg("clean", "Marsupials in Australia evolved in isolation. Koalas eat eucalyptus."), 0.5, {}),
        Hit(seg("offtopic", "Placental mammals spread across Asia."), 0.1, {}),
    ]
    knobs = exclusion.MentionKnobs(beta=50.0, tau_entity=0.5, tau_concept=0.5, lam=20.0, weight=0.9)
    mentions = exclusion.detect_mentions(query, hits, knobs)
    assert mentions.kinds == {"kangaroos": "concept", "the Tasmanian devil": "entity"}
    assert (mentions.violation() >= exclusion.VIOLATION).tolist() == [True, True, False, False]
    demoted = exclusion.demote(np.array([h.score for h in hits]), mentions, knobs.weight)
    assert np.argsort(-demoted).tolist() == [2, 3, 0, 1]
    # constraint: positive part satisfied (rerank score >= 0.3) and no violation first, score order kept
    ok = exclusion.positive_ok(query, {"marsupials in Australia": np.array([0.9, 0.8, 0.7, 0.2])}, 0.3)
    assert ok.tolist() == [True, True, True, False]
    ranked = exclusion.constrain(
        hits,
        exclusion.document_violation(hits, mentions.violation()),
        {h.segment.id: bool(v) for h, v in zip(hits, ok, strict=True)},
    )
    assert [h.segment.doc_id for h in ranked] == ["clean", "kangaroo", "devil", "offtopic"]
    shown = exclusion.trace(mentions, hits, {h.segment.id: i for i, h in enumerate(hits)})
    assert shown["kangaroos"]["candidates"]["kangaroo#0"]["sentence"] == "Kangaroos are the largest."
    assert shown["kangaroos"]["candidates"]["clean#0"]["sentence"] is None


def test_a_query_without_positive_term_is_refused() -> None:
    with pytest.raises(ValueError, match="needs a positive term"):
        exclusion.positive_ok(parse('NOT "fever"'), {}, 0.0)


# -- through the logical pipeline (fake keyword embedder, tests/conftest.py) ---------------------------------


def test_the_pipeline_demotes_a_passage_that_names_the_excluded_thing_and_says_where(tmp_path, fake_embedder):
    from chatbot.logical.pipeline import LogicalConfig, logical_retrieve
    from tests.test_logical_pipeline import make_services

    services = make_services(tmp_path, fake_embedder)  # no reranker: final = composed (x mentions)
    plain = logical_retrieve("asthma other than fever", services, LogicalConfig(mention=False))
    config = LogicalConfig(
        mention=True,
        mention_scorer="lexical",
        mention_constraint=False,
        mention_weight=0.9,
        mention_lam=12.0,
        mention_tau_concept=0.5,
    )
    result = logical_retrieve("asthma other than fever", services, config)

    before = {h.segment.doc_id: h.score for h in plain.ranked}
    after = {h.segment.doc_id: h.score for h in result.ranked}
    assert after["positive"] == pytest.approx(before["positive"])  # no "fever" in it: untouched
    p = 1 / (1 + math.exp(-(1.0 - 0.5) * 12.0))  # "fever" in one sentence: score 1, concept τ 0.5
    assert after["distractor"] == pytest.approx(before["distractor"] * (1 - 0.9 * p))
    info = result.info["logical"]["mentions"]["fever"]
    assert info["kind"] == "concept"
    seg = next(h.segment.id for h in result.ranked if h.segment.doc_id == "distractor")
    assert info["candidates"][seg]["sentence"] == (
        "Asthma with fever: asthma attacks, fever at night, asthma review and asthma inhalers."
    )
    assert "mentions" in result.timings_ms
    assert "mentions" not in plain.info["logical"]


def test_the_constraint_puts_every_clean_on_topic_document_first(tmp_path, fake_embedder):
    from chatbot.logical.pipeline import LogicalConfig, logical_retrieve
    from tests.test_logical_pipeline import make_services

    services = make_services(tmp_path, fake_embedder)
    config = LogicalConfig(mention=True, mention_constraint=True, mention_weight=0.0, mention_positive_min=0.1)
    result = logical_retrieve("asthma other than fever", services, config)
    # weight 0: scores untouched; the constraint alone moves the distractor (asthma, names fever) below the
    # clean asthma card; off-topic cards (asthma cosine < 0.1) stay in the lower tier, in score order
    order = [h.segment.doc_id for h in result.ranked]
    assert order[0] == "positive"
    assert order.index("distractor") > order.index("positive")
    assert set(order[1:]) == {"distractor", "fever", "diabetes", "sleep"}

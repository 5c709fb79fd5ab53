"""NOT terms scored on stored sentence vectors (issue 19): the store (chatbot/sentence_vectors.py), the soft
maximum and calibration (chatbot/logical/sentence_mentions.py), their use in exclusion.py and the pipeline."""

from __future__ import annotations

import math

import numpy as np
import pytest

from chatbot.index import Hit, SegmentIndex, make_client
from chatbot.logical import exclusion
from chatbot.logical.query import parse
from chatbot.logical.sentence_mentions import calibrated, sentence_scores, soft_max
from chatbot.sentence_vectors import SentenceVectors, sentence_units
from corpus.model import Segment
from tests.conftest import FakeEmbedder, unit


def seg(doc_id: str, text: str, part: int = 0, version: int = 0) -> Segment:
    return Segment(f"{doc_id}#{part}", doc_id, text, "", "https://example.org/" + doc_id, part, content_version=version)


# -- the soft maximum and the sentence scores, on hand-made vectors ---------------------------------------------


def test_soft_max_lies_between_the_mean_and_the_maximum() -> None:
    assert soft_max(np.array([0.2, 0.8]), 1000.0) == pytest.approx(0.8 + math.log(0.5) / 1000)  # ~ the maximum
    assert soft_max(np.array([0.2, 0.8]), 1e-6) == pytest.approx(0.5, abs=1e-6)
    assert soft_max(np.array([0.2, 0.8]), 2.0) == pytest.approx(0.8 + math.log((math.exp(-1.2) + 1) / 2) / 2)
    with pytest.raises(ValueError, match="no sentence cosines"):
        soft_max(np.array([]), 4.0)
    with pytest.raises(ValueError, match="beta 0"):
        soft_max(np.array([0.1]), 0.0)


def test_the_closest_sentence_drives_the_score_and_the_median_centres_it() -> None:
    term = unit(0, 0, 1)  # the "fever" axis
    stored = {
        "a#0": (["s0", "s1"], np.vstack([unit(1), unit(1, 0, 1)])),  # one sentence half on fever: cos 1/√2
        "b#0": (["s0"], np.vstack([unit(1)])),  # never fever: 0
        "c#0": (["s0", "s1", "s2"], np.vstack([unit(1), unit(0, 1), unit(0, 0, 1)])),  # its last sentence: 1
    }
    got = sentence_scores(term, ["a#0", "b#0", "c#0", "d#0"], stored, 1000.0, center=False)
    # β = 1000: the maximum less log(n)/β for the n − 1 sentences far below it (exp(−707) and less vanish)
    a, c = 1 / math.sqrt(2) + math.log(1 / 2) / 1000, 1 + math.log(1 / 3) / 1000
    np.testing.assert_allclose(got.score, [a, 0.0, c, 0.0], atol=1e-9)
    assert (got.best_sentence, got.missing) == ([1, 0, 2, -1], 1)
    centred = sentence_scores(term, ["a#0", "b#0", "c#0", "d#0"], stored, 1000.0, center=True)
    # the median over the three candidates that have sentences (1/√2) is subtracted; d keeps 0 and P 0
    np.testing.assert_allclose(centred.score, [0.0, -a, c - a, 0.0], atol=1e-9)
    p = calibrated(centred, 0.1, 10.0)
    expected = [1 / (1 + math.exp(-(s - 0.1) * 10)) for s in centred.score[:3]] + [0.0]
    np.testing.assert_allclose(p, expected, atol=1e-9)
    with pytest.raises(ValueError, match="empty or not finite"):
        sentence_scores(np.zeros(5), ["a#0"], stored, 1000.0, center=False)


def test_either_of_two_exclusions_demotes_on_sentence_vectors() -> None:
    # A AND NOT B AND NOT C: "asthma" AND NOT "fever" AND NOT "sleep"
    query = parse('"asthma" AND NOT "fever" AND NOT "sleep"')
    hits = [Hit(seg(d, f"text of {d}."), 1.0) for d in ("clean", "fever", "sleep", "both")]
    stored = {
        "clean#0": (["x"], np.vstack([unit(1)])),
        "fever#0": (["x", "y"], np.vstack([unit(1), unit(0, 0, 1)])),
        "sleep#0": (["x", "y"], np.vstack([unit(1), unit(0, 0, 0, 1)])),
        "both#0": (["x", "y"], np.vstack([unit(0, 0, 1), unit(0, 0, 0, 1)])),
    }
    knobs = exclusion.MentionKnobs(scorer="sentence", sentence_center=False, sentence_tau_concept=0.5, sentence_lam=20)
    vectors = {"fever": unit(0, 0, 1), "sleep": unit(0, 0, 0, 1)}
    mentions = exclusion.detect_mentions(query, hits, knobs, vectors, None, stored)
    # a hit: sentences at cos (0, 1) → 1 + log(1/2)/1000 (β = 1000); a miss: every cos 0 → 0
    p_hit, p_miss = 1 / (1 + math.exp(-(0.5 + math.log(0.5) / 1000) * 20)), 1 / (1 + math.exp(10))
    np.testing.assert_allclose(mentions.probs["fever"], [p_miss, p_hit, p_miss, p_hit], atol=1e-12)
    np.testing.assert_allclose(mentions.probs["sleep"], [p_miss, p_miss, p_hit, p_hit], atol=1e-12)
    final = exclusion.demote(np.array([0.5, 0.9, 0.8, 0.95]), mentions, 0.9)
    assert [hits[i].segment.doc_id for i in np.argsort(-final, kind="stable")] == ["clean", "fever", "sleep", "both"]
    assert final[1] == pytest.approx(0.9 * (1 - 0.9 * p_hit) * (1 - 0.9 * p_miss))
    trace = exclusion.trace(mentions, hits, {h.segment.id: i for i, h in enumerate(hits)})
    assert trace["fever"]["candidates"]["fever#0"]["triggered_by"] == "sentence vectors"
    assert trace["fever"]["candidates"]["clean#0"]["sentence"] is None


def test_the_sentence_scorer_without_vectors_is_a_clear_error() -> None:
    query = parse('"asthma" AND NOT "fever"')
    with pytest.raises(ValueError, match="needs the NOT terms' vectors and the stored sentence vectors"):
        exclusion.detect_mentions(query, [Hit(seg("a", "x."), 1.0)], exclusion.MentionKnobs(scorer="sentence"))


# -- the store ---------------------------------------------------------------------------------------------------


def test_the_store_keeps_one_vector_per_sentence_in_order_and_forgets_deleted_segments(tmp_path) -> None:
    client = make_client(tmp_path)
    embedder = FakeEmbedder()
    store = SentenceVectors(client, "cards", embedder)
    assert store.lookup(["a#0"]) == {}  # no collection yet: nothing, no error
    a = seg("a", "Asthma needs inhalers. A fever is 38C or more. Sleep well.")
    b = seg("b", "Diabetes raises blood sugar.")
    assert store.add([a, b]) == 4
    got = store.lookup(["a#0", "b#0", "z#0"])
    assert sorted(got) == ["a#0", "b#0"]
    assert got["a#0"][0] == ["Asthma needs inhalers.", "A fever is 38C or more.", "Sleep well."]
    np.testing.assert_allclose(got["a#0"][1], np.vstack([unit(1), unit(0, 0, 1), unit(0, 0, 0, 1)]), atol=1e-6)
    store.delete_segments(["a#0"])
    assert sorted(store.lookup(["a#0", "b#0"])) == ["b#0"]
    assert sentence_units("  ") == [] and sentence_units("No stop") == ["No stop"]


def test_sync_fills_in_what_is_missing_and_drops_gone_segments_but_not_managed_ones(tmp_path) -> None:
    client = make_client(tmp_path)
    embedder = FakeEmbedder()
    store = SentenceVectors(client, "cards", embedder)
    managed = seg("m", "Managed fever card.", version=3)
    store.add([seg("old", "Gone now."), managed])
    a, b = seg("a", "Asthma. Fever."), seg("b", "Sleep.")
    store.add([a])
    embedder.passages.clear()
    assert store.sync([a, b]) == 1  # only b had no sentences
    assert embedder.passages == ["Sleep."]
    assert sorted(store.stored_segments()) == ["a#0", "b#0", "m#0"]
    store.delete_version(3)
    assert sorted(store.stored_segments()) == ["a#0", "b#0"]
    other = SentenceVectors(client, "cards", FakeEmbedder(name="other-model"))
    assert other.collection() is None  # another model's vectors are never read
    assert other.sync([a]) == 1 and sorted(other.stored_segments()) == ["a#0"]


def test_the_segment_index_writes_and_deletes_sentences_with_its_segments(tmp_path) -> None:
    client = make_client(tmp_path)
    embedder = FakeEmbedder()
    index = SegmentIndex(client, "cards", embedder, exact=True)
    index.sentences = SentenceVectors(client, "cards", embedder)
    a, b = seg("a", "Asthma. Fever at night."), seg("b", "Sleep.")
    index.sync([a, b])
    assert sorted(index.sentences.stored_segments()) == ["a#0", "b#0"]
    index.sync([a])
    assert sorted(index.sentences.stored_segments()) == ["a#0"]
    index.delete_ids(["a#0"])
    assert index.sentences.stored_segments() == {}


# -- through the logical pipeline (tests/test_logical_pipeline.py's cards) --------------------------------------


def with_sentences(services):
    """The services' index with a sentence store filled for every segment (as index.sentence_vectors=true does)."""
    services.index.sentences = SentenceVectors(services.client, services.collection_name, services.embedder)
    services.index.sentences.sync(services.index.all_segments()[0])
    return services


def test_the_setting_gives_the_index_its_sentence_store(tmp_path, fake_embedder) -> None:
    from chatbot.pipeline import Services
    from chatbot.settings import Settings
    from tests.conftest import indexed_services
    from tests.test_logical_pipeline import DOCS

    settings = Settings(
        paths={"data_dir": tmp_path / "on"},
        index={"collection": "cards", "exact": True, "sentence_vectors": True},
        embedding={"model": "minilm"},
    )
    services = indexed_services(settings, fake_embedder, DOCS, max_chars=300, min_chars=10)
    segments = services.index.all_segments()[0]
    assert sorted(services.index.sentences.stored_segments()) == sorted(s.id for s in segments)
    off = Services(Settings(paths={"data_dir": tmp_path / "off"}, embedding={"model": "minilm"}))
    off.__dict__["embedder"] = fake_embedder
    assert off.index.sentences is None  # the default: no sentence store


def test_the_pipeline_demotes_on_stored_sentences_and_names_the_sentence(tmp_path, fake_embedder) -> None:
    from chatbot.logical.pipeline import LogicalConfig, logical_retrieve
    from tests.test_logical_pipeline import make_services

    services = with_sentences(make_services(tmp_path, fake_embedder))  # no reranker: final = composed × mentions
    calls = fake_embedder.passage_calls
    plain = logical_retrieve("asthma other than fever", services, LogicalConfig(mention=False))
    config = LogicalConfig(
        mention=True,
        mention_scorer="sentence",
        mention_weight=0.9,
        mention_sentence_center=False,
        mention_sentence_tau_concept=0.4,
        mention_sentence_lam=20.0,
    )
    result = logical_retrieve("asthma other than fever", services, config)
    assert fake_embedder.passage_calls == calls  # stored sentence vectors: nothing embedded at query time
    before = {h.segment.doc_id: h.score for h in plain.ranked}
    after = {h.segment.doc_id: h.score for h in result.ranked}
    # the distractor is one sentence (":" splits only before a list item): 4 asthma, 2 fever, cos 1/√5 with fever
    p = 1 / (1 + math.exp(-(1 / math.sqrt(5) - 0.4) * 20))
    assert after["distractor"] == pytest.approx(before["distractor"] * (1 - 0.9 * p))
    assert after["positive"] == pytest.approx(before["positive"] * (1 - 0.9 / (1 + math.exp(8))))
    assert [h.segment.doc_id for h in result.ranked][0] == "positive"
    seg_id = next(h.segment.id for h in result.ranked if h.segment.doc_id == "distractor")
    row = result.info["logical"]["mentions"]["fever"]["candidates"][seg_id]
    assert row["sentence"] == "Asthma with fever: asthma attacks, fever at night, asthma review and asthma inhalers."
    assert row["triggered_by"] == "sentence vectors"
    assert "sentence_vectors" in result.timings_ms


def test_without_a_sentence_store_the_pipeline_scores_lexically_and_says_so(tmp_path, fake_embedder) -> None:
    from chatbot.logical.pipeline import LogicalConfig, logical_retrieve
    from tests.test_logical_pipeline import make_services

    services = make_services(tmp_path, fake_embedder)
    services.index.sentences = None
    result = logical_retrieve("asthma other than fever", services, LogicalConfig(mention_scorer="sentence"))
    assert result.info["logical"]["mentions_note"].startswith("no sentence vectors (index.sentence_vectors=false)")
    assert "sentence_score" not in next(iter(result.info["logical"]["mentions"]["fever"]["candidates"].values()))


# -- the positive part ranked by the configured pipeline, then the NOT terms (positive_source=pipeline) ---------


def test_the_positive_part_is_ranked_as_any_question_then_a_mention_demotes(tmp_path, fake_embedder) -> None:
    from chatbot.logical.pipeline import LogicalConfig, logical_retrieve
    from chatbot.pipeline import naive_pipeline
    from tests.test_logical_pipeline import make_services

    services = make_services(tmp_path, fake_embedder)  # retrieval.pipeline = dense+rerank, rerank.kind none
    plain = naive_pipeline("asthma", services)
    config = LogicalConfig(positive_source="pipeline", mention_scorer="lexical", mention_weight=0.9)
    result = logical_retrieve("asthma other than fever", services, config)
    # "asthma" alone: positive (2 asthma, 1 sleep)/√5 and distractor (2, 0, 1)/√5 tie at 2/√5; the distractor
    # names fever in its one sentence (lexical score 1: P = σ((1 − 0.7)·12)) and drops below the positive
    base = {h.segment.doc_id: h.score for h in plain.ranked}
    assert base["positive"] == pytest.approx(base["distractor"])
    p = 1 / (1 + math.exp(-(1.0 - 0.7) * 12.0))
    after = {h.segment.doc_id: h.score for h in result.ranked}
    assert after["distractor"] == pytest.approx(base["distractor"] * (1 - 0.9 * p))
    assert after["positive"] == pytest.approx(base["positive"])
    assert [h.segment.doc_id for h in result.ranked][:2] == ["positive", "distractor"]
    info = result.info["logical"]
    assert (info["positive_source"], info["positive_pipeline"]) == ("pipeline", "dense+rerank")
    assert info["positive"] == "asthma"
    seg = next(h.segment.id for h in result.ranked if h.segment.doc_id == "distractor")
    assert info["mentions"]["fever"]["candidates"][seg]["triggered_by"] == "lexical"
    # the relevance gate reads the positive part's cosine on every shown hit
    assert all("term:asthma" in h.detail for h in result.top)


def test_an_exclusion_with_no_positive_part_is_a_clear_error() -> None:
    from chatbot.logical.positive_pipeline import positive_text

    with pytest.raises(ValueError, match="needs a positive part"):
        positive_text(parse('NOT "fever"'), "  ")
    assert positive_text(parse('"asthma" AND NOT "fever"'), None) == "asthma"


def test_a_document_whose_title_names_the_excluded_thing_goes_below_the_others() -> None:
    titles = [
        ("folic", "Folic acid before and during pregnancy"),
        ("vitd", "Vitamin D in pregnancy"),
        ("folico", "Acido folico prima e durante la gravidanza"),
        ("untitled", ""),  # NegConstraint's passages have no title: never concerned
        ("meds", "Medicines in pregnancy"),
    ]
    hits = [Hit(Segment(f"{d}#0", d, "x.", t, "https://example.org/" + d, 0), 1.0) for d, t in titles]
    query = parse('"vitamins in pregnancy" AND NOT "folic acid" AND NOT "medicine"')
    named = exclusion.titles_naming(query, hits)
    # EN/IT synonyms and stems: "Acido folico" names "folic acid", "Medicines" names "medicine"
    assert named == {"folic": "folic acid", "folico": "folic acid", "meds": "medicine"}
    assert [h.segment.doc_id for h in exclusion.below_titled(hits, named)] == [
        "vitd",
        "untitled",
        "folic",
        "folico",
        "meds",
    ]
    # every word of the term must be in the title: "counting the movements" is not named by "movements" alone
    assert (
        exclusion.titles_naming(
            parse('"x" AND NOT "counting the movements"'),
            [Hit(Segment("m#0", "m", "x.", "Your baby's movements", "https://example.org/m", 0), 1.0)],
        )
        == {}
    )

"""The trained "does this passage discuss X?" head (issue 19, item 2): hand-made vectors with exact orders, the
scorer choice in ``exclusion.detect_mentions``, and the shipped head on e5 vectors in English and Italian."""

from __future__ import annotations

import numpy as np
import pytest

from chatbot.index import Hit
from chatbot.logical import exclusion, mention_head
from chatbot.logical.config import LogicalConfig
from chatbot.logical.mention_head import MentionHead, load_head, pair_features
from chatbot.logical.query import parse
from corpus.model import Segment


def seg(doc_id: str, text: str) -> Segment:
    return Segment(f"{doc_id}#0", doc_id, text, "", "https://example.org/" + doc_id, 0)


def test_pair_features_are_product_distance_and_cosine() -> None:
    t = np.array([1.0, 0.0])
    v = np.array([[0.6, 0.8], [0.0, 2.0]])
    f = pair_features(t, v)
    np.testing.assert_allclose(f[0], [0.6, 0.0, 0.4, 0.8, 0.6], atol=1e-6)
    np.testing.assert_allclose(f[1], [0.0, 0.0, 1.0, 2.0, 0.0], atol=1e-6)
    with pytest.raises(ValueError, match="3 dimensions"):
        pair_features(np.ones(3), v)


def test_head_orders_passages_by_its_weights() -> None:
    # weights reward the product on dimension 0 only: the passage most aligned with the term on it wins
    head = MentionHead(np.array([2.0, 0.0, 0.0, 0.0, 0.0], dtype=np.float32), -0.5)
    t = np.array([1.0, 0.0])
    v = np.array([[0.2, 0.98], [0.9, 0.44], [0.5, 0.87]])
    np.testing.assert_allclose(head.logits(t, v), [-0.1, 1.3, 0.5], atol=1e-6)
    assert list(np.argsort(-head.probs(t, v))) == [1, 2, 0]
    assert head.probs(t, np.zeros((0, 2))).shape == (0,)
    with pytest.raises(ValueError, match="expects 3-dimensional vectors, got 4"):
        MentionHead(np.ones(7, dtype=np.float32), 0.0).logits(np.ones(4), np.ones((1, 4)))


def test_head_round_trips_and_missing_file_names_the_command(tmp_path) -> None:
    head = MentionHead(np.array([1.0, -1.0, 0.5, 0.25, 3.0], dtype=np.float32), 0.75)
    head.save(tmp_path / "head.npz")
    back = load_head(tmp_path / "head.npz")
    np.testing.assert_array_equal(back.weights, head.weights)
    assert back.bias == 0.75
    with pytest.raises(FileNotFoundError, match="train_mention_head"):
        load_head(tmp_path / "absent.npz")


def test_detect_mentions_uses_the_chosen_scorer(monkeypatch) -> None:
    # the head: P = σ(4·t0·v0 − 2) on dimension 0; lexical: "ginger" named in passage c only
    head = MentionHead(np.array([4.0, 0.0, 0.0, 0.0, 0.0], dtype=np.float32), -2.0)
    monkeypatch.setattr(mention_head, "load_head", lambda path=None: head)
    query = parse('"nausea" AND NOT "ginger"')
    hits = [
        Hit(seg("a", "A warm root tea settles the stomach."), 1.0, {}),
        Hit(seg("b", "Vitamin B6 tablets reduce morning sickness."), 1.0, {}),
        Hit(seg("c", "Some women try ginger biscuits."), 1.0, {}),
    ]
    terms = {"ginger": np.array([1.0, 0.0])}
    vecs = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]])
    sig = lambda z: 1.0 / (1.0 + np.exp(-z))  # noqa: E731

    lexical = exclusion.detect_mentions(query, hits, exclusion.MentionKnobs(scorer="lexical"))
    assert lexical.probs["ginger"][0] == 0.0 and lexical.probs["ginger"][1] == 0.0
    assert lexical.probs["ginger"][2] == pytest.approx(sig((1.0 - 0.7) * 12.0))  # the whole term in one sentence

    trained = exclusion.detect_mentions(query, hits, exclusion.MentionKnobs(scorer="trained"), terms, vecs)
    np.testing.assert_allclose(trained.probs["ginger"], [sig(2.0), sig(-2.0), sig(0.0)], atol=1e-9)
    shifted = exclusion.detect_mentions(
        query, hits, exclusion.MentionKnobs(scorer="trained", head_shift=1.0), terms, vecs
    )
    np.testing.assert_allclose(shifted.probs["ginger"], [sig(1.0), sig(-3.0), sig(-1.0)], atol=1e-9)
    both = exclusion.detect_mentions(query, hits, exclusion.MentionKnobs(scorer="both"), terms, vecs)
    np.testing.assert_allclose(both.probs["ginger"], np.maximum(lexical.probs["ginger"], trained.probs["ginger"]))
    # demotion follows the trained P: the root-tea passage (discusses ginger, never names it) falls last
    final = exclusion.demote(np.array([1.0, 0.9, 0.8]), trained, 0.9)
    assert list(np.argsort(-final)) == [1, 2, 0]
    with pytest.raises(ValueError, match="needs the term and candidate vectors"):
        exclusion.detect_mentions(query, hits, exclusion.MentionKnobs(scorer="trained"))


def test_config_rejects_an_unknown_scorer() -> None:
    with pytest.raises(ValueError, match="mention_scorer 'neural'"):
        LogicalConfig(mention_scorer="neural")


@pytest.fixture(scope="module")
def e5():
    from chatbot.e5_build import default_out_dir
    from chatbot.e5_runtime import E5StandardEmbedder
    from chatbot.onnx_files import ONNX_FILE

    model_dir = default_out_dir()
    if not (model_dir / ONNX_FILE).is_file():
        pytest.fail(f"the e5 int8 ONNX model is not built in {model_dir}: run `chatbot models build-e5`")
    return E5StandardEmbedder(threads=1, model_dir=model_dir, runtime="onnx")


@pytest.mark.parametrize(
    ("term", "about_term", "about_other"),
    [
        (
            "ginger",
            "Ginger root, fresh or as a tea, is a common home remedy that many pregnant women use to calm nausea.",
            "Vitamin B6 (pyridoxine) tablets are often suggested by doctors for morning sickness in pregnancy.",
        ),
        (
            "zenzero",
            "Lo zenzero, fresco o in tisana, è un rimedio casalingo che molte donne incinte usano contro la nausea.",
            "La vitamina B6 (piridossina) in compresse è spesso consigliata dal medico per le nausee in gravidanza.",
        ),
    ],
)
def test_shipped_head_prefers_the_passage_about_the_term(e5, term, about_term, about_other) -> None:
    head = load_head()
    t = e5.embed_queries([term])[0]
    v = e5.embed_passages([about_term, about_other])
    p = head.probs(t, v)
    assert p[0] > p[1], f"P(discusses {term}) {p[0]:.3f} for the passage about it, {p[1]:.3f} for vitamin B6"


def test_shipped_head_sees_ginger_described_without_its_name(e5) -> None:
    # English only: the Italian paraphrase scores at vitamin B6's level (models/mention_head/README.md)
    head = load_head()
    t = e5.embed_queries(["ginger"])[0]
    v = e5.embed_passages(
        [
            "A pungent, knobbly root used in Asian cooking, often grated into hot water or candied, can settle a "
            "queasy stomach.",
            "Vitamin B6 (pyridoxine) tablets are often suggested by doctors for morning sickness in pregnancy.",
        ]
    )
    p = head.probs(t, v)
    assert p[0] > p[1], f"P(discusses ginger) {p[0]:.3f} for the described root, {p[1]:.3f} for vitamin B6"

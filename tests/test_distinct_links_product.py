"""A library that holds one passage under two documents (one leaflet published at two links), on the patient's
path with the shipped models and default settings: the reply's links list the passage once, also when the card
memory brings the card first (chatbot.stages.cross_language_gate.mixed_view)."""

from __future__ import annotations

import shutil

import pytest

from tests.test_relevance_gate_models import e5_cache  # noqa: F401  (module fixture: the e5 ONNX build)

pytestmark = pytest.mark.integration

CARDS = ("en-preg-caffeine", "en-preg-alcohol", "en-preg-foods-to-avoid")


@pytest.fixture(scope="module")
def services(e5_cache, tmp_path_factory):  # noqa: F811
    from chatbot.ingest import ingest_paths
    from chatbot.pipeline import Services
    from chatbot.resources import demo_cards
    from chatbot.settings import Settings
    from corpus.importers import read_corpus
    from corpus.segmenter import segment_documents

    library = tmp_path_factory.mktemp("copies")
    for name in CARDS:
        shutil.copy(demo_cards() / f"{name}.md", library / f"{name}.md")
    card = (demo_cards() / "en-preg-caffeine.md").read_text(encoding="utf-8")
    leaflet = card.replace("id: en-preg-caffeine\n", "id: caffeine-leaflet\n", 1)
    leaflet = "\n".join(
        "source_url: https://example.org/caffeine-leaflet" if line.startswith("source_url:") else line
        for line in leaflet.split("\n")
    )
    (library / "caffeine-leaflet.md").write_text(leaflet, encoding="utf-8")
    mp = pytest.MonkeyPatch()
    mp.setenv("CERTIFIED_CHATBOT_CACHE", str(e5_cache))
    settings = Settings(paths={"data_dir": tmp_path_factory.mktemp("copies-data")}, embedding={"model": "e5-onnx"})
    s = Services(settings)
    summary = ingest_paths([library], s, quiet=True)
    copied = segment_documents(read_corpus([library / "caffeine-leaflet.md"]).documents)
    assert (summary["documents"], summary["shared_passages"]) == (4, len(copied))
    yield s
    mp.undo()


@pytest.mark.parametrize(
    "question", ["How much coffee can I drink when pregnant?", "Quanta caffeina posso prendere in gravidanza?"]
)
def test_the_copied_passage_is_linked_once(services, question):
    from chatbot.answer import answer

    ans = answer(question, services)

    titles = [link["title"] for link in ans["links"]]
    assert ans["status"] == "answered", ans["status"]
    # the card leads (under one of its two links: which copy ranks first is a tie of equal texts), once
    assert titles[0] == "Caffeine limits in pregnancy" and titles.count("Caffeine limits in pregnancy") == 1, titles
    assert len(titles) == 3

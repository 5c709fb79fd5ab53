from __future__ import annotations

import pytest

from corpus.model import Document, segment_id
from corpus.segmenter import (
    embedding_text,
    passage_key,
    segment_document,
    segment_documents,
    shared_passages,
    split_text,
)

ASTHMA_MD = """# Asthma

Asthma is a long-term condition that affects the airways, the tubes that carry air in and out of the lungs.

## Symptoms

Wheezing, breathlessness, a tight chest and coughing are the usual symptoms; they often get worse at night.

## Treatment

A reliever inhaler opens the airways quickly; a preventer inhaler reduces the swelling over time.
"""

# Two 70+ character paragraphs cannot share a 100-character segment, so each stays on its own.
SLEEP = "Safe sleep means putting your baby on their back in a clear cot every time."
ROOM = "Room sharing for the first six months lowers the risk of cot death a lot."


def make_doc(text: str, doc_id: str = "asthma", **fields) -> Document:
    defaults = {"title": "Asthma in adults", "source_url": f"https://example.org/{doc_id}"}
    return Document(id=doc_id, text=text, **{**defaults, **fields})


def test_headings_split_sections_and_record_the_heading():
    segments = segment_document(make_doc(ASTHMA_MD))

    assert [s.heading for s in segments] == ["Asthma", "Symptoms", "Treatment"]
    assert [s.position for s in segments] == [0, 1, 2]
    assert segments[0].text == (
        "Asthma is a long-term condition that affects the airways, the tubes that carry air in and out of the lungs."
    )
    assert segments[1].text.startswith("Wheezing, breathlessness")
    assert segments[2].text.startswith("A reliever inhaler")
    assert all("#" not in s.text for s in segments)


def test_text_before_the_first_heading_has_no_heading():
    text = "Read this first: it is general advice.\n\n# Fever\n\nA temperature of 38C or more is a fever."
    pieces = split_text(text, 900, 0)

    assert pieces == [
        ("", "Read this first: it is general advice."),
        ("Fever", "A temperature of 38C or more is a fever."),
    ]


@pytest.mark.parametrize("max_chars", [100, 150, 400])
def test_every_segment_respects_the_size_bound_and_loses_no_words(max_chars):
    paragraphs = [
        " ".join(f"Sentence {p}.{i} explains one more detail about caring for a newborn baby." for i in range(p + 1))
        for p in range(8)
    ]
    text = "\n\n".join(paragraphs)

    segments = segment_document(make_doc(text), max_chars=max_chars, min_chars=40)

    assert len(segments) > 1
    assert all(len(s.text) <= max_chars for s in segments)
    assert " ".join(s.text for s in segments).split() == text.split()


def test_a_word_longer_than_the_bound_is_cut():
    pieces = split_text("x" * 250, 100, 40)

    assert [len(chunk) for _, chunk in pieces] == [100, 100, 50]


def test_short_fragments_are_merged_with_their_neighbour():
    s1 = "Babies with a high temperature should be seen by a doctor the same day, always."
    s2 = "Keep them cool and give them plenty of fluids to drink."
    text = f"{s1} {s2}\n\nCall 111."

    assert split_text(text, 100, 0) == [("", s1), ("", s2), ("", "Call 111.")]
    assert split_text(text, 100, 40) == [("", s1), ("", f"{s2} Call 111.")]


def test_fragments_are_not_merged_across_headings():
    text = "# Fever\n\nA temperature of 38C or more is a fever in a baby.\n\n## When to call\n\nCall 111."

    assert split_text(text, 900, 120) == [
        ("Fever", "A temperature of 38C or more is a fever in a baby."),
        ("When to call", "Call 111."),
    ]


def test_plain_text_without_headings_is_one_section():
    text = "Drink water often.\nRest as much as you can.\n\nSee a doctor if it lasts a week."

    segments = segment_document(make_doc(text))

    assert len(segments) == 1
    assert segments[0].heading == ""
    assert segments[0].text == "Drink water often. Rest as much as you can. See a doctor if it lasts a week."


def test_ids_are_deterministic_for_the_same_document_and_text():
    first = segment_document(make_doc(ASTHMA_MD))
    again = segment_document(make_doc(ASTHMA_MD, source_url="https://example.org/moved", title="Renamed"))

    assert [s.id for s in first] == [s.id for s in again]
    assert len({s.id for s in first}) == 3
    assert all(s.id.startswith("asthma#") for s in first)
    assert first[0].id == segment_id("asthma", first[0].text)


def test_changed_text_changes_only_that_segments_id():
    before = segment_document(make_doc(ASTHMA_MD))
    after = segment_document(make_doc(ASTHMA_MD.replace("worse at night", "worse at night and in cold air")))

    assert [a.id == b.id for a, b in zip(before, after, strict=True)] == [True, False, True]


def test_same_text_in_two_documents_gets_different_ids():
    a = segment_document(make_doc(SLEEP, doc_id="sleep-a"))
    b = segment_document(make_doc(SLEEP, doc_id="sleep-b"))

    assert a[0].text == b[0].text
    assert a[0].id != b[0].id


def test_duplicate_paragraph_within_a_document_gets_a_distinct_id():
    segments = segment_document(make_doc(f"{SLEEP}\n\n{ROOM}\n\n{SLEEP}"), max_chars=100, min_chars=40)

    assert [s.text for s in segments] == [SLEEP, ROOM, SLEEP]
    assert len({s.id for s in segments}) == 3
    assert segments[2].id == segments[0].id + "-1"
    assert segments[2].id == segment_id("asthma", SLEEP, 1)


def test_segments_inherit_title_url_and_certification_fields():
    doc = make_doc(
        ASTHMA_MD,
        title="Asma negli adulti",
        source_url="https://example.org/it/asma",
        publisher="Ministero della Salute",
        language="it",
        certified_by="Dr. Rossi",
        certified_on="2024-05-01",
        version="3",
        demo=True,
    )

    segments = segment_document(doc)

    assert segments
    for s in segments:
        assert s.doc_id == "asthma"
        assert (s.title, s.source_url, s.publisher, s.language) == (
            "Asma negli adulti",
            "https://example.org/it/asma",
            "Ministero della Salute",
            "it",
        )
        assert (s.certified_by, s.certified_on, s.version, s.demo) == ("Dr. Rossi", "2024-05-01", "3", True)
        assert s.doc_hash == doc.content_hash()


def test_any_document_field_changes_the_inherited_hash():
    assert make_doc(SLEEP).content_hash() == make_doc(SLEEP).content_hash()
    assert make_doc(SLEEP).content_hash() != make_doc(SLEEP, source_url="https://example.org/new").content_hash()
    assert make_doc(SLEEP).content_hash() != make_doc(SLEEP, certified_on="2025-01-01").content_hash()


def test_segment_documents_keeps_document_order():
    docs = [make_doc(SLEEP, doc_id="one"), make_doc(ASTHMA_MD, doc_id="two")]

    assert [s.doc_id for s in segment_documents(docs)] == ["one", "two", "two", "two"]


def test_embedding_text_includes_the_title_and_heading():
    plain, *_ = segment_document(make_doc(SLEEP, title="Safe sleep"))
    symptoms = segment_document(make_doc(ASTHMA_MD))[1]
    same_as_title = segment_document(make_doc("# Asthma in adults\n\nSome text about it.", title="Asthma in adults"))

    assert embedding_text(plain) == f"Safe sleep\n{SLEEP}"
    assert embedding_text(symptoms) == f"Asthma in adults: Symptoms\n{symptoms.text}"
    assert embedding_text(same_as_title[0]) == "Asthma in adults\nSome text about it."


def test_metadata_round_trip():
    seg = segment_document(make_doc(ASTHMA_MD, demo=True))[1]

    meta = seg.metadata()

    assert "id" not in meta and "text" not in meta and "extra" not in meta
    assert all(isinstance(v, str | int | bool) for v in meta.values())
    assert type(seg).from_metadata(seg.id, seg.text, meta) == seg


def test_shared_passages_are_the_same_text_in_two_documents_not_one():
    docs = [
        make_doc(f"{SLEEP}\n\n{ROOM}", "sleep-leaflet"),
        make_doc(
            f"{SLEEP.upper()}\n\nFeed on demand in the first weeks, day and night, as often as baby wants.", "feeding"
        ),
        make_doc(f"{ROOM}\n\n{ROOM}", "room"),  # the same paragraph twice in one document is not shared
    ]
    segments = segment_documents(docs, max_chars=100, min_chars=10)

    groups = shared_passages(segments)

    assert [[s.doc_id for s in g] for g in groups] == [["sleep-leaflet", "feeding"], ["sleep-leaflet", "room", "room"]]
    assert passage_key(groups[0][0]) == passage_key(groups[0][1]) == " ".join(SLEEP.split()).casefold()

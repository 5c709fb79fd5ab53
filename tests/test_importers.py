from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from corpus.importers import CorpusError, read_beir_corpus, read_corpus, read_markdown_file
from corpus.model import Document

GOOD_MD = """---
id: fever-babies
title: Fever in babies
source_url: https://example.org/fever
publisher: NHS
language: en
certified_by: Dr. Bianchi
certified_on: 2024-03-01
version: 2
demo: true
---
# Fever

A temperature of 38C or more is a fever.
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def md(doc_id: str | None = None, url: str | None = "https://example.org/x", extra: str = "", body: str = "Text.\n"):
    lines = ["---"]
    if doc_id:
        lines.append(f"id: {doc_id}")
    lines.append("title: Some card")
    if url:
        lines.append(f"source_url: {url}")
    if extra:
        lines.append(extra)
    lines.append("---")
    return "\n".join(lines) + "\n" + body


def jsonl(path: Path, lines: list[str]) -> Path:
    return write(path, "\n".join(lines) + "\n")


def rec(**fields) -> str:
    return json.dumps(fields)


def problems(result) -> list[tuple[str, int]]:
    return [(Path(p.file).name, p.line) for p in result.problems]


# -- Markdown ---------------------------------------------------------------


def test_markdown_front_matter_becomes_document_fields(tmp_path):
    doc = read_markdown_file(write(tmp_path / "fever.md", GOOD_MD))

    assert doc == Document(
        id="fever-babies",
        title="Fever in babies",
        source_url="https://example.org/fever",
        text="# Fever\n\nA temperature of 38C or more is a fever.\n",
        publisher="NHS",
        language="en",
        certified_by="Dr. Bianchi",
        certified_on="2024-03-01",
        version="2",
        demo=True,
    )


def test_markdown_id_defaults_to_file_stem_and_title_to_id(tmp_path):
    path = write(tmp_path / "safe-sleep.md", "---\nsource_url: https://example.org/sleep\n---\nBack to sleep.\n")

    doc = read_markdown_file(path)

    assert (doc.id, doc.title, doc.text, doc.language, doc.demo) == (
        "safe-sleep",
        "safe-sleep",
        "Back to sleep.\n",
        "en",
        False,
    )


def test_markdown_folder_reports_each_bad_file_with_its_line_and_keeps_the_good_ones(tmp_path):
    folder = tmp_path / "cards"
    write(folder / "a-good.md", md("good-a"))
    write(
        folder / "b-bad-yaml.md", "---\ntitle: Broken\nsource_url: https://example.org/b\nkey: value: other\n---\nx\n"
    )
    write(folder / "c-no-front-matter.md", "# Just a heading\n\nNo metadata here.\n")
    write(folder / "d-missing-url.md", md("missing-url", url=None))
    write(folder / "e-ftp-url.md", md("ftp-url", url="ftp://example.org/e"))
    write(folder / "f-no-text.md", md("no-text", body="   \n"))
    write(folder / "g-not-a-mapping.md", "---\n- just\n- a list\n---\nText.\n")
    write(folder / "sub" / "h-good.md", md("good-h"))
    write(folder / "README.md", "# Not a card\n")

    result = read_corpus([folder])

    assert [d.id for d in result.documents] == ["good-a", "good-h"]
    assert problems(result) == [
        ("b-bad-yaml.md", 4),
        ("c-no-front-matter.md", 1),
        ("d-missing-url.md", 1),
        ("e-ftp-url.md", 1),
        ("f-no-text.md", 1),
        ("g-not-a-mapping.md", 1),
    ]
    messages = [p.message for p in result.problems]
    assert messages[0].startswith("invalid YAML front matter")
    assert messages[1] == "no YAML front matter (the file must start with '---')"
    assert messages[2] == ("document 'missing-url' has no source URL; nothing reaches a patient without its link")
    assert messages[3] == "document 'ftp-url' has a source URL that is not http(s): 'ftp://example.org/e'"
    assert messages[4] == "document 'no-text' has no text"
    assert str(result.problems[0]).startswith(f"{folder / 'b-bad-yaml.md'}:4: invalid YAML")


def test_bad_yaml_line_counts_blank_lines_after_the_opening_marker(tmp_path):
    path = write(tmp_path / "x.md", "---\n\ntitle: A\nsource_url: https://example.org/a\nbad: [1, 2\n---\nText\n")

    with pytest.raises(CorpusError) as info:
        read_markdown_file(path)

    assert info.value.line == 5  # line 1 "---", line 2 blank, line 5 the unclosed list


def test_markdown_duplicate_id_names_the_second_file(tmp_path):
    folder = tmp_path / "cards"
    write(folder / "a.md", md("same-id"))
    write(folder / "b.md", md("same-id"))

    result = read_corpus([folder])

    assert [d.source_url for d in result.documents] == ["https://example.org/x"]
    assert problems(result) == [("b.md", 1)]
    assert result.problems[0].message == f"duplicate document id 'same-id' (first at {folder / 'a.md'}:1)"


def test_single_markdown_file_path(tmp_path):
    good = write(tmp_path / "one.md", GOOD_MD)
    bad = write(tmp_path / "two.md", "no front matter\n")

    result = read_corpus([good, bad])

    assert [d.id for d in result.documents] == ["fever-babies"]
    assert problems(result) == [("two.md", 1)]


# -- BEIR corpus.jsonl ------------------------------------------------------


def test_beir_corpus_records_become_documents(tmp_path):
    path = jsonl(
        tmp_path / "corpus.jsonl",
        [
            rec(_id="d1", title="Diabetes", text="Diabetes raises blood sugar.", url="https://example.org/d1"),
            rec(_id=7, title="", text="Numbers as ids.", url="http://example.org/7", language="it"),
        ],
    )

    result = read_beir_corpus(path)

    assert result.problems == []
    assert result.documents == [
        Document(id="d1", title="Diabetes", source_url="https://example.org/d1", text="Diabetes raises blood sugar."),
        Document(id="7", title="7", source_url="http://example.org/7", text="Numbers as ids.", language="it"),
    ]


def test_beir_default_url_fills_missing_links(tmp_path):
    path = jsonl(tmp_path / "corpus.jsonl", [rec(_id="q9", text="Some text.")])

    result = read_beir_corpus(path, default_url="https://bench.example/{id}")

    assert [d.source_url for d in result.documents] == ["https://bench.example/q9"]


BAD_LINES = [
    rec(_id="ok1", text="First good record.", url="https://example.org/1"),  # 1
    '{"_id": "broken", "text": ',  # 2 bad JSON
    rec(_id="nourl", text="No link at all."),  # 3 missing url
    rec(_id="ftp", text="Wrong scheme.", url="ftp://example.org/ftp"),  # 4 non-http url
    rec(_id="notext", url="https://example.org/nt"),  # 5 missing text
    "[1, 2, 3]",  # 6 not an object
    "",  # 7 blank: skipped, but still counted
    rec(_id="ok2", text="Second good record.", url="https://example.org/2"),  # 8
    rec(_id="ok1", text="Same id again.", url="https://example.org/dup"),  # 9 duplicate id
    rec(_id="", text="Empty id.", url="https://example.org/e"),  # 10 missing id
]


def test_each_malformed_record_is_reported_with_file_and_line_and_import_continues(tmp_path):
    path = jsonl(tmp_path / "corpus.jsonl", BAD_LINES)

    result = read_corpus([path])

    assert [d.id for d in result.documents] == ["ok1", "ok2"]
    assert [d.source_url for d in result.documents] == ["https://example.org/1", "https://example.org/2"]
    assert [(p.file, p.line) for p in result.problems] == [
        (str(path), 2),
        (str(path), 3),
        (str(path), 4),
        (str(path), 5),
        (str(path), 6),
        (str(path), 10),
        (str(path), 9),
    ]
    messages = [p.message for p in result.problems]
    assert re.fullmatch(r"invalid JSON: .+ \(column \d+\)", messages[0])
    assert messages[1] == "document 'nourl' has no source URL; nothing reaches a patient without its link"
    assert messages[2] == "document 'ftp' has a source URL that is not http(s): 'ftp://example.org/ftp'"
    assert messages[3] == "document 'notext' has no text"
    assert messages[4] == "record is not a JSON object"
    assert messages[5] == "missing document id"
    assert messages[6] == f"duplicate document id 'ok1' (first at {path}:1)"
    assert str(result.problems[1]) == f"{path}:3: {messages[1]}"


def test_folder_with_corpus_jsonl_is_read_as_beir(tmp_path):
    jsonl(tmp_path / "bench" / "corpus.jsonl", [rec(_id="a", text="Alpha.", url="https://example.org/a")])

    result = read_corpus([tmp_path / "bench"])

    assert [d.id for d in result.documents] == ["a"]


def test_duplicate_across_two_inputs_names_the_second_file_and_line(tmp_path):
    first = jsonl(tmp_path / "one.jsonl", [rec(_id="x", text="One.", url="https://example.org/one")])
    second = jsonl(
        tmp_path / "two.jsonl",
        [rec(_id="y", text="Two.", url="https://example.org/y"), rec(_id="x", text="Again.", url="https://e.org/x")],
    )

    result = read_corpus([first, second])

    assert [d.id for d in result.documents] == ["x", "y"]
    assert [str(p) for p in result.problems] == [f"{second}:2: duplicate document id 'x' (first at {first}:1)"]
    assert result.origins == [(str(first), 1), (str(second), 1)]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ('{"_id": ', "invalid JSON"),
        (rec(_id="nourl", text="t"), "has no source URL"),
        (rec(_id="ftp", text="t", url="ftp://x"), "not http"),
        (rec(_id="nt", url="https://x.org"), "has no text"),
        ('"a string"', "record is not a JSON object"),
    ],
)
def test_strict_mode_raises_with_file_and_line(tmp_path, line, expected):
    path = jsonl(tmp_path / "corpus.jsonl", [rec(_id="ok", text="Fine.", url="https://example.org/ok"), "", line])

    with pytest.raises(CorpusError, match=re.escape(f"{path}:3: ") + ".*" + re.escape(expected)):
        read_corpus([path], strict=True)


def test_strict_mode_raises_on_duplicate_ids(tmp_path):
    path = jsonl(tmp_path / "corpus.jsonl", [rec(_id="a", text="A.", url="https://e.org/a")] * 2)

    with pytest.raises(CorpusError, match=re.escape(f"{path}:2: duplicate document id 'a'")):
        read_corpus([path], strict=True)


def test_strict_mode_raises_on_bad_markdown(tmp_path):
    path = write(tmp_path / "cards" / "bad.md", md("bad", url=None))

    with pytest.raises(CorpusError, match=re.escape(f"{path}:1: document 'bad' has no source URL")):
        read_corpus([tmp_path / "cards"], strict=True)


def test_unsupported_path_is_an_error(tmp_path):
    path = write(tmp_path / "notes.txt", "hello")

    with pytest.raises(CorpusError, match=r"notes\.txt: not a folder, \.md or \.jsonl file"):
        read_corpus([path])


# -- life stage (front matter `stage`) ----------------------------------------


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("stage: baby", ("baby",)),
        ("stage: [pregnancy, trying]", ("trying", "pregnancy")),  # kept in corpus.model.STAGES order
        ("stage: [postnatal, baby, postnatal]", ("postnatal", "baby")),
        ("", ()),
    ],
)
def test_markdown_stage_is_read_in_stages_order(tmp_path, line, expected):
    doc = read_markdown_file(write(tmp_path / "c.md", md("c", extra=line)))
    assert doc.stage == expected


def test_markdown_unknown_stage_names_the_choices(tmp_path):
    path = write(tmp_path / "c.md", md("c", extra="stage: [baby, toddler]"))
    with pytest.raises(CorpusError, match=r"document 'c': unknown stage 'toddler'; choose from trying, pregnancy, "):
        read_markdown_file(path)


def test_markdown_stage_that_is_not_a_name_is_refused(tmp_path):
    path = write(tmp_path / "c.md", md("c", extra="stage: {baby: 1}"))
    with pytest.raises(CorpusError, match=r"stage must be a name or a list of names, not \{'baby': 1\}"):
        read_markdown_file(path)


def test_stage_reaches_segments_and_keeps_unstaged_hashes():
    from corpus.segmenter import segment_document

    plain = Document(id="d", title="T", source_url="https://example.org/d", text="A short card text here.")
    staged = Document(**{**plain.__dict__, "stage": ("postnatal", "baby")})
    assert plain.content_hash() == "f73d7eca11623f1a"  # the hash every document had before `stage` existed
    assert staged.content_hash() != plain.content_hash()
    assert [s.stage for s in segment_document(staged)] == ["postnatal,baby"]
    assert [s.stage for s in segment_document(plain)] == [""]


def test_every_demo_card_names_its_stage():
    from chatbot.resources import demo_cards

    docs = read_corpus([demo_cards()], strict=True).documents
    assert len(docs) == 70
    assert [d.id for d in docs if not d.stage] == []
    stages = {d.id: d.stage for d in docs}
    assert stages["en-preg-baby-movements"] == ("pregnancy",)
    assert stages["en-baby-fever-in-babies"] == ("baby",)
    assert stages["en-preg-folic-acid"] == ("trying", "pregnancy")

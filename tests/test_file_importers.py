"""HTML, PDF and DOCX importers: main text and headings kept, boilerplate dropped, metadata kept, a bad file
named in a clear error."""

from __future__ import annotations

from pathlib import Path

import pytest

from corpus.file_importers import pdf_to_markdown, read_document_file
from corpus.importers import CorpusError
from corpus.segmenter import segment_document

PAGE = """<!doctype html>
<html lang="it-IT">
<head>
  <title>Febbre nei bambini | Ospedale Esempio</title>
  <link rel="canonical" href="https://ospedale.example.org/febbre">
  <meta property="og:site_name" content="Ospedale Esempio">
</head>
<body>
  <nav><ul><li><a href="/">Home</a></li><li><a href="/contatti">Contatti e orari di apertura</a></li></ul></nav>
  <header><p>Accedi al portale del paziente per prenotare una visita</p></header>
  <main>
    <article>
      <h1>Febbre nei bambini</h1>
      <p>La febbre è una temperatura di 38 gradi o più. Nei bambini è di solito il segno di un'infezione
      che il corpo sta combattendo, e nella maggior parte dei casi passa da sola in pochi giorni.</p>
      <h2>Quando chiamare il medico</h2>
      <p>Chiama il medico se il bambino ha meno di tre mesi e la temperatura è di 38 gradi o più, oppure se
      la febbre dura più di cinque giorni o il bambino è molto sonnolento.</p>
      <h2>Cosa fare a casa</h2>
      <p>Offri da bere spesso, vesti il bambino in modo leggero e lascialo riposare. Il paracetamolo può
      aiutare se il bambino è a disagio: segui la dose indicata per la sua età.</p>
    </article>
  </main>
  <footer><p>Copyright 2026 Ospedale Esempio. Tutti i diritti riservati. Privacy e cookie.</p></footer>
</body>
</html>
"""


def write(path: Path, data: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data, encoding="utf-8")
    return path


def make_pdf(path: Path, title: str = "Caffeine in pregnancy") -> Path:
    """A two-section leaflet: a 20 pt title, 14 pt bold headings, 11 pt body text."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_title(title)
    pdf.set_author("Maternity Unit")
    pdf.add_page()
    pdf.set_font("Helvetica", "B", 20)
    pdf.multi_cell(0, 10, title, new_x="LMARGIN", new_y="NEXT")
    for heading, body in (
        ("How much is safe", "Keep caffeine under 200 mg a day. A mug of filter coffee has about 140 mg."),
        ("Where caffeine is found", "Tea, cola, energy drinks and chocolate contain caffeine too."),
    ):
        pdf.set_font("Helvetica", "B", 14)
        pdf.multi_cell(0, 8, heading, new_x="LMARGIN", new_y="NEXT")
        pdf.set_font("Helvetica", "", 11)
        pdf.multi_cell(0, 6, body, new_x="LMARGIN", new_y="NEXT")
    pdf.output(str(path))
    return path


def test_html_keeps_main_text_and_headings_and_drops_boilerplate(tmp_path):
    doc = read_document_file(write(tmp_path / "febbre.html", PAGE))

    assert (doc.id, doc.title, doc.source_url, doc.language, doc.publisher) == (
        "febbre",
        "Febbre nei bambini | Ospedale Esempio",
        "https://ospedale.example.org/febbre",
        "it",
        "Ospedale Esempio",
    )
    for boilerplate in ("Contatti e orari", "Accedi al portale", "Copyright", "Privacy"):
        assert boilerplate not in doc.text
    segments = segment_document(doc, max_chars=900, min_chars=10)
    assert [s.heading for s in segments] == ["Febbre nei bambini", "Quando chiamare il medico", "Cosa fare a casa"]
    assert segments[1].text.startswith("Chiama il medico se il bambino ha meno di tre mesi")
    assert all(s.source_url == "https://ospedale.example.org/febbre" and s.language == "it" for s in segments)


def test_given_metadata_and_a_sidecar_override_the_page(tmp_path):
    path = write(tmp_path / "febbre.html", PAGE)
    write(tmp_path / "febbre.meta.yaml", "id: fever-it\npublisher: Pediatria\n")

    doc = read_document_file(path, {"title": "Febbre", "source_url": "https://example.org/f"})

    assert (doc.id, doc.title, doc.source_url, doc.publisher, doc.language) == (
        "fever-it",
        "Febbre",
        "https://example.org/f",
        "Pediatria",
        "it",
    )


def test_pdf_headings_come_from_font_sizes(tmp_path):
    doc = read_document_file(make_pdf(tmp_path / "Caffeine Leaflet.pdf"), {"source_url": "https://example.org/c"})

    assert (doc.id, doc.title, doc.publisher, doc.language) == (
        "caffeine-leaflet",
        "Caffeine in pregnancy",
        "Maternity Unit",
        "en",
    )
    assert doc.text == (
        "# Caffeine in pregnancy\n\n## How much is safe\n\n"
        "Keep caffeine under 200 mg a day. A mug of filter coffee has about 140 mg.\n\n"
        "## Where caffeine is found\n\nTea, cola, energy drinks and chocolate contain caffeine too."
    )
    segments = segment_document(doc, max_chars=900, min_chars=10)
    assert [s.heading for s in segments] == ["How much is safe", "Where caffeine is found"]


def test_pdf_lines_to_markdown_levels():
    lines = [("Title", 24.0, True), ("Section", 16.0, True), ("Body text that runs on", 11.0, False),
             ("and ends here.", 11.0, False), ("Sub", 11.0, True), ("More body.", 11.0, False)]  # fmt: skip

    assert (
        pdf_to_markdown(lines)
        == "# Title\n\n## Section\n\nBody text that runs on and ends here.\n\n### Sub\n\nMore body."
    )


def test_docx_heading_styles_become_headings(tmp_path):
    import docx

    document = docx.Document()
    document.core_properties.title = "Asthma at night"
    document.core_properties.language = "en-GB"
    document.add_heading("Asthma at night", level=1)
    document.add_paragraph("Asthma often gets worse at night.")
    document.add_heading("What helps", level=2)
    document.add_paragraph("Take your preventer inhaler every evening.")
    path = tmp_path / "asthma.docx"
    document.save(str(path))

    doc = read_document_file(path, {"source_url": "https://example.org/asthma"})

    assert (doc.id, doc.title, doc.language) == ("asthma", "Asthma at night", "en")
    assert doc.text == (
        "# Asthma at night\n\nAsthma often gets worse at night.\n\n## What helps\n\n"
        "Take your preventer inhaler every evening."
    )


@pytest.mark.parametrize(
    ("name", "data", "message"),
    [
        ("broken.pdf", b"%PDF-1.4\nthis is not really a PDF", "broken.pdf: unreadable PDF"),
        ("broken.docx", b"PK\x03\x04 not a zip", "broken.docx: unreadable DOCX"),
        ("empty.html", "<html><body><nav>Home</nav></body></html>", "empty.html: no text found in this HTML file"),
        ("notes.txt", "plain text", "notes.txt: unsupported format '.txt'"),
        ("latin.md", b"---\ntitle: Caff\xe8\n---\nText", "latin.md: 'utf-8' codec can't decode byte 0xe8"),
    ],
)
def test_a_malformed_file_gets_an_error_naming_it(tmp_path, name, data, message):
    with pytest.raises(CorpusError) as exc:
        read_document_file(write(tmp_path / name, data), {"source_url": "https://example.org/x"})
    assert message in str(exc.value)


def test_a_file_without_a_source_url_is_refused_with_the_fix(tmp_path):
    page = PAGE.replace('<link rel="canonical" href="https://ospedale.example.org/febbre">', "")

    with pytest.raises(CorpusError, match=r"febbre.html: document 'febbre' has no source URL.*--url"):
        read_document_file(write(tmp_path / "febbre.html", page))

"""Read one document from the formats content arrives in: HTML pages (trafilatura: main text and headings,
boilerplate dropped), PDF leaflets (pdfminer.six: headings from font sizes) and DOCX (python-docx: heading
styles). Each becomes a Document whose text is Markdown, so headings drive segmentation as for the cards.

Metadata (id, title, source_url, language, publisher) comes from the file where it says it (HTML ``<title>``,
canonical link, ``lang``, site name; PDF and DOCX document properties), and ``meta`` (the caller's values,
or a ``NAME.meta.yaml`` sidecar beside the file) overrides it. A file that cannot be read raises CorpusError
naming the file; nothing else is touched."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

from corpus.importers import CorpusError, _document

FORMATS = {".html": "html", ".htm": "html", ".pdf": "pdf", ".docx": "docx", ".md": "markdown"}
MIN_HTML_CHARS = 40  # less main text than this is no content (a menu, a cookie banner)
_SLUG = re.compile(r"[^a-z0-9]+")


def slug(text: str) -> str:
    """A document id from a file name: lower case letters, digits and dashes."""
    return _SLUG.sub("-", text.lower()).strip("-") or "document"


def file_format(path: Path) -> str:
    """The format of ``path`` by its suffix; CorpusError for any other."""
    fmt = FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise CorpusError(f"{path}: unsupported format {path.suffix!r} (HTML, PDF, DOCX or Markdown)")
    return fmt


def sidecar_meta(path: Path) -> dict[str, Any]:
    """``NAME.meta.yaml`` (or ``.yml``) beside ``path``: id, title, source_url, language, publisher."""
    for suffix in (".meta.yaml", ".meta.yml"):
        side = path.with_name(path.stem + suffix)
        if side.is_file():
            try:
                data = yaml.safe_load(side.read_text(encoding="utf-8")) or {}
            except yaml.YAMLError as exc:
                raise CorpusError(f"{side}: invalid YAML: {exc}") from exc
            if not isinstance(data, dict):
                raise CorpusError(f"{side}: not a mapping")
            return data
    return {}


# -- HTML -----------------------------------------------------------------------------------------------------
def _html_meta(html: str) -> dict[str, str]:
    import lxml.html

    tree = lxml.html.fromstring(html)

    def first(xpath: str) -> str:
        got = tree.xpath(xpath)
        return str(got[0]).strip() if got else ""

    return {
        "title": first("//meta[@property='og:title']/@content") or first("//title/text()"),
        "source_url": first("//link[@rel='canonical']/@href") or first("//meta[@property='og:url']/@content"),
        "language": first("/html/@lang").split("-")[0].lower(),
        "publisher": first("//meta[@property='og:site_name']/@content")
        or first("//meta[@name='publisher']/@content")
        or first("//meta[@name='author']/@content"),
    }


def html_to_markdown(html: str) -> str:
    """The page's main text as Markdown (headings as ``#`` lines), navigation, footers and ads dropped."""
    import trafilatura

    text = trafilatura.extract(
        html,
        output_format="markdown",
        include_formatting=True,
        include_comments=False,
        include_tables=True,
        include_links=False,
        include_images=False,
        favor_recall=True,
        deduplicate=False,
    )
    return (text or "").strip()


def read_html(path: Path) -> tuple[str, dict[str, str]]:
    raw = path.read_bytes()
    html = raw.decode("utf-8", errors="replace")
    if "<" not in html:
        raise CorpusError(f"{path}: not an HTML page")
    try:
        meta = _html_meta(html)
    except Exception as exc:  # lxml's parser errors have several classes
        raise CorpusError(f"{path}: unreadable HTML: {exc}") from exc
    text = html_to_markdown(html)
    if len(text) < MIN_HTML_CHARS:  # a page of navigation only: what trafilatura keeps is a menu word or two
        text = ""
    return text, meta


# -- PDF ------------------------------------------------------------------------------------------------------
def _pdf_lines(path: Path) -> list[tuple[str, float, bool]]:
    """(text, largest font size, bold) of every text line, in reading order."""
    from pdfminer.high_level import extract_pages
    from pdfminer.layout import LTChar, LTTextContainer, LTTextLine

    lines = []
    for page in extract_pages(str(path)):
        for box in page:
            if not isinstance(box, LTTextContainer):
                continue
            for line in box:
                if not isinstance(line, LTTextLine):
                    continue
                chars = [c for c in line if isinstance(c, LTChar)]
                text = " ".join(line.get_text().split())
                if not text or not chars:
                    continue
                size = max(round(c.size, 1) for c in chars)
                bold = all("bold" in c.fontname.lower() for c in chars if c.get_text().strip())
                lines.append((text, size, bold))
    return lines


def pdf_to_markdown(lines: list[tuple[str, float, bool]]) -> str:
    """Lines in a font larger than the body's (the most used size), or short bold lines, become headings:
    the largest size ``#``, the next ``##``, the rest ``###``. Body lines join into paragraphs."""
    if not lines:
        return ""
    weight = Counter()
    for text, size, _ in lines:
        weight[size] += len(text)
    body = weight.most_common(1)[0][0]
    bigger = sorted({size for _, size, _ in lines if size > body + 0.5}, reverse=True)
    out: list[str] = []
    para: list[str] = []

    def flush() -> None:
        if para:
            out.append(" ".join(para))
            para.clear()

    for text, size, bold in lines:
        if size in bigger or (bold and len(text) <= 80 and not text.endswith((".", ","))):
            flush()
            level = min(bigger.index(size) + 1, 3) if size in bigger else min(len(bigger) + 1, 3)
            out.append("#" * level + " " + text)
        else:
            para.append(text)
            if text.endswith((".", "!", "?", ":")) and len(text) < 60:  # a short line that ends a paragraph
                flush()
    flush()
    return "\n\n".join(out)


def read_pdf(path: Path) -> tuple[str, dict[str, str]]:
    from pdfminer.pdfdocument import PDFDocument
    from pdfminer.pdfparser import PDFParser

    try:
        with path.open("rb") as fh:
            info = (PDFDocument(PDFParser(fh)).info or [{}])[0]
        lines = _pdf_lines(path)
    except Exception as exc:  # pdfminer raises PDFSyntaxError, PSEOF, TypeError... on damaged files
        raise CorpusError(f"{path}: unreadable PDF: {type(exc).__name__}: {exc}") from exc

    def prop(name: str) -> str:
        value = info.get(name, b"")
        if isinstance(value, bytes):
            from pdfminer.utils import decode_text

            value = decode_text(value)
        return str(value).strip() if isinstance(value, str) else ""

    return pdf_to_markdown(lines), {"title": prop("Title"), "publisher": prop("Author")}


# -- DOCX -----------------------------------------------------------------------------------------------------
def read_docx(path: Path) -> tuple[str, dict[str, str]]:
    import docx

    try:
        document = docx.Document(str(path))
    except Exception as exc:  # not a zip, no word/document.xml, ...
        raise CorpusError(f"{path}: unreadable DOCX: {type(exc).__name__}: {exc}") from exc
    out = []
    for para in document.paragraphs:
        text = " ".join(para.text.split())
        if not text:
            continue
        style = (para.style.name if para.style is not None else "") or ""
        level = re.fullmatch(r"Heading (\d)", style)
        if style == "Title":
            out.append("# " + text)
        elif level:
            out.append("#" * min(int(level.group(1)), 3) + " " + text)
        else:
            out.append(text)
    props = document.core_properties
    return "\n\n".join(out), {
        "title": props.title or "",
        "language": (props.language or "").split("-")[0].lower(),
        "publisher": props.author or "",
    }


# -- one file -------------------------------------------------------------------------------------------------
def read_document_file(path: Path, meta: dict[str, Any] | None = None):
    """One Document from an HTML, PDF, DOCX or Markdown file. ``meta`` (else the sidecar) overrides what the
    file says. Raises CorpusError naming the file when it is unreadable, empty or has no source URL."""
    from corpus.importers import read_markdown_file

    path = Path(path)
    fmt = file_format(path)
    if not path.is_file():
        raise CorpusError(f"{path}: no such file")
    given = {k: v for k, v in {**sidecar_meta(path), **(meta or {})}.items() if v not in (None, "")}
    if fmt == "markdown":
        try:
            doc = read_markdown_file(path)
        except (CorpusError, UnicodeDecodeError) as exc:
            raise CorpusError(f"{path}: {exc}") from exc
        from dataclasses import replace

        known = {k: given[k] for k in ("id", "title", "source_url", "language", "publisher") if k in given}
        return replace(doc, **known) if known else doc
    reader = {"html": read_html, "pdf": read_pdf, "docx": read_docx}[fmt]
    try:
        text, found = reader(path)
    except CorpusError:
        raise
    except Exception as exc:  # a parser's own failure on a damaged file: named, never a crash of the batch
        raise CorpusError(f"{path}: unreadable {fmt.upper()}: {type(exc).__name__}: {exc}") from exc
    if not text.strip():
        raise CorpusError(f"{path}: no text found in this {fmt.upper()} file (a scanned PDF needs OCR first)")
    record = {k: v for k, v in found.items() if v}
    record.update(given)
    record.setdefault("id", slug(path.stem))
    record["text"] = text
    try:
        return _document(record)
    except CorpusError as exc:
        hint = " (give --url, or source_url in a NAME.meta.yaml beside it)" if "source URL" in str(exc) else ""
        raise CorpusError(f"{path}: {exc}{hint}") from exc

"""Read certified documents from a Markdown folder (YAML front matter) or a BEIR corpus.jsonl."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from corpus.model import STAGES, Document


class CorpusError(ValueError):
    """A malformed corpus record (raised in strict mode, collected otherwise)."""

    def __init__(self, message: str, line: int = 1) -> None:
        super().__init__(message)
        self.line = line  # line of the file the problem is on (Markdown: 1 = the front matter)


@dataclass
class ImportProblem:
    file: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.message}"


@dataclass
class ImportResult:
    documents: list[Document] = field(default_factory=list)
    problems: list[ImportProblem] = field(default_factory=list)
    origins: list[tuple[str, int]] = field(default_factory=list)  # (file, line) of each document's record


def _accept(result: ImportResult, doc: Document, file: Path, line: int) -> None:
    result.documents.append(doc)
    result.origins.append((str(file), line))


def _reject(result: ImportResult, strict: bool, file: Path, line: int, message: str) -> None:
    problem = ImportProblem(str(file), line, message)
    if strict:
        raise CorpusError(str(problem))
    result.problems.append(problem)


def _document(record: dict, default_id: str | None = None) -> Document:
    """Build a Document from a record; raises CorpusError naming what is missing."""
    doc_id = str(record.get("id") or record.get("_id") or default_id or "").strip()
    if not doc_id:
        raise CorpusError("missing document id")
    url = str(record.get("source_url") or record.get("url") or "").strip()
    if not url:
        raise CorpusError(f"document {doc_id!r} has no source URL; nothing reaches a patient without its link")
    if not url.startswith(("http://", "https://")):
        raise CorpusError(f"document {doc_id!r} has a source URL that is not http(s): {url!r}")
    text = record.get("text")
    if not isinstance(text, str) or not text.strip():
        raise CorpusError(f"document {doc_id!r} has no text")
    return Document(
        id=doc_id,
        title=str(record.get("title") or "").strip() or doc_id,
        source_url=url,
        text=text,
        publisher=str(record.get("publisher") or ""),
        language=str(record.get("language") or "en"),
        certified_by=str(record.get("certified_by") or ""),
        certified_on=str(record.get("certified_on") or ""),
        version=str(record.get("version") or ""),
        demo=bool(record.get("demo", False)),
        stage=_stages(doc_id, record.get("stage")),
    )


def _stages(doc_id: str, value: object) -> tuple[str, ...]:
    """``stage: baby`` or ``stage: [trying, pregnancy]`` → the stages in STAGES order; CorpusError on others."""
    if value is None or value == "" or value == []:
        return ()
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(v, str) for v in items):
        raise CorpusError(f"document {doc_id!r}: stage must be a name or a list of names, not {value!r}")
    unknown = [v for v in items if v.strip() not in STAGES]
    if unknown:
        raise CorpusError(f"document {doc_id!r}: unknown stage {unknown[0]!r}; choose from {', '.join(STAGES)}")
    return tuple(s for s in STAGES if s in {v.strip() for v in items})


def read_beir_corpus(path: Path, strict: bool = False, default_url: str | None = None) -> ImportResult:
    """BEIR ``corpus.jsonl`` (``_id``, ``title``, ``text``, ``url``). ``default_url`` is a format string
    with ``{id}`` for benchmark sets whose records carry no link."""
    result = ImportResult()
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                _reject(result, strict, path, lineno, f"invalid JSON: {exc.msg} (column {exc.colno})")
                continue
            if not isinstance(record, dict):
                _reject(result, strict, path, lineno, "record is not a JSON object")
                continue
            if default_url and not record.get("url") and record.get("_id") is not None:
                record = {**record, "url": default_url.format(id=record["_id"])}
            try:
                _accept(result, _document(record), path, lineno)
            except CorpusError as exc:
                _reject(result, strict, path, lineno, str(exc))
    return result


def read_markdown_file(path: Path) -> Document:
    text = path.read_text(encoding="utf-8")
    if not text.startswith("---"):
        raise CorpusError("no YAML front matter (the file must start with '---')")
    parts = text.split("\n---", 1)
    if len(parts) != 2:
        raise CorpusError("front matter is not closed by a '---' line")
    front = parts[0].lstrip("-\n")
    first_line = 1 + parts[0][: len(parts[0]) - len(front)].count("\n")  # file line of the YAML's first line
    try:
        meta = yaml.safe_load(front) or {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = first_line + mark.line if mark is not None else 1
        raise CorpusError(f"invalid YAML front matter: {exc}", line=line) from exc
    if not isinstance(meta, dict):
        raise CorpusError("front matter is not a mapping")
    body = parts[1].split("\n", 1)[1] if "\n" in parts[1] else ""
    return _document({**meta, "text": body}, default_id=path.stem)


def read_markdown_folder(folder: Path, strict: bool = False) -> ImportResult:
    result = ImportResult()
    for path in sorted(folder.rglob("*.md")):
        if path.name.lower() == "readme.md":
            continue
        try:
            _accept(result, read_markdown_file(path), path, 1)
        except CorpusError as exc:
            _reject(result, strict, path, exc.line, str(exc))
    return result


def read_corpus(paths: Iterable[Path], strict: bool = False, default_url: str | None = None) -> ImportResult:
    """Read every path (Markdown folder, single .md, or .jsonl); duplicate ids are problems."""
    total = ImportResult()
    seen: dict[str, tuple[str, int]] = {}
    for path in paths:
        path = Path(path)
        if path.is_dir() and (path / "corpus.jsonl").exists():
            part = read_beir_corpus(path / "corpus.jsonl", strict, default_url)
        elif path.is_dir():
            part = read_markdown_folder(path, strict)
        elif path.suffix == ".jsonl":
            part = read_beir_corpus(path, strict, default_url)
        elif path.suffix == ".md":
            part = ImportResult()
            try:
                _accept(part, read_markdown_file(path), path, 1)
            except CorpusError as exc:
                _reject(part, strict, path, exc.line, str(exc))
        else:
            raise CorpusError(f"{path}: not a folder, .md or .jsonl file")
        total.problems.extend(part.problems)
        for doc, (file, line) in zip(part.documents, part.origins, strict=True):
            if doc.id in seen:
                first_file, first_line = seen[doc.id]
                _reject(
                    total,
                    strict,
                    Path(file),
                    line,
                    f"duplicate document id {doc.id!r} (first at {first_file}:{first_line})",
                )
                continue
            seen[doc.id] = (file, line)
            _accept(total, doc, Path(file), line)
    return total

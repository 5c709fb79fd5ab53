"""The one report writer of the benchmarks: Markdown + JSON + per-query rows, each with the exact command.

Every benchmark script in ``evaluation/`` builds a :class:`Report` (title, Markdown body, JSON summary,
per-query rows) and calls :meth:`Report.write`; the results folder is decided in one place
(:func:`results_dir`) and the command line the same way everywhere (:func:`command_line`). The common
``--name`` / ``--out`` options come from :func:`add_output_args` and resolve through :func:`output_target`.

A report ``NAME`` writes, under the results folder:

- ``NAME.md``: ``# title``, the ``Command:`` line, the body;
- ``NAME<json_suffix>`` (``.summary.json`` unless the script keeps an older name): the summary with
  ``command`` added;
- ``NAME<rows_suffix>`` (``.per_query.jsonl``) when the report has per-query rows, one JSON object a line
  (and any further row files, ``extra_rows``, and figures, ``figures``).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: Suffixes that make ``--out`` a file (its folder and stem) rather than a folder.
FILE_SUFFIXES = (".md", ".json")


def results_dir() -> Path:
    """Where reports go by default: the ``paths.results_dir`` setting (evaluation/results in a source checkout)."""
    from chatbot.settings import load_settings

    return load_settings().paths.results_dir


def command_line(prog: str, argv: Sequence[str] | None = None) -> str:
    """The command as typed: the ``CHATBOT_*`` settings in force (they change the results; the data folder,
    which is machine-specific, left out), ``prog`` and its arguments (``sys.argv[1:]`` when ``argv`` is None),
    shell-quoted."""
    env = " ".join(
        f"{k}={shlex.quote(v)}"
        for k, v in sorted(os.environ.items())
        if k.startswith("CHATBOT_") and "DATA_DIR" not in k
    )
    args = " ".join(shlex.quote(a) for a in (sys.argv[1:] if argv is None else argv))
    return " ".join(part for part in (env, prog, args) if part)


def add_output_args(
    parser: argparse.ArgumentParser,
    name: str | None,
    *,
    name_help: str = "report name (file stem)",
    out_aliases: Sequence[str] = (),
    out_default: Path | None = None,
) -> None:
    """The common ``--name`` and ``--out`` options (``out_aliases``: older spellings of ``--out``, e.g.
    ``--out-dir``). ``--out`` is a folder, or a ``.md``/``.json`` file whose folder and stem are used."""
    parser.add_argument("--name", default=name, required=name is None, help=name_help)
    parser.add_argument(
        "--out",
        *out_aliases,
        dest="out",
        type=Path,
        default=out_default,
        help="results folder, or a .md/.json file (default: evaluation/results)",
    )


def output_target(out: Path | None, name: str) -> tuple[Path, str]:
    """(folder, report name) from ``--out`` and ``--name``: a ``.md``/``.json`` path names both."""
    if out is None:
        return results_dir(), name
    if out.suffix in FILE_SUFFIXES:
        return out.parent, out.stem
    return out, name


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> list[str]:
    """A Markdown table: the header, the ``|---|`` rule and one line per row (cells as given, ``str()``)."""
    return [
        "| " + " | ".join(headers) + " |",
        "|" + "---|" * len(headers),
        *("| " + " | ".join(str(c) for c in row) + " |" for row in rows),
    ]


@dataclass
class Report:
    """One benchmark report. ``body`` is the Markdown after the ``Command:`` line; ``command_note`` is
    appended to that line (e.g. `` (after `chatbot models build-e5`)``); ``extra_rows`` maps a file suffix
    (``.sentences.jsonl``) to more rows written like ``rows``; ``figures`` maps a suffix (``.png``) to a
    function that draws that file."""

    name: str
    title: str
    command: str
    body: list[str]
    summary: dict[str, Any] = field(default_factory=dict)
    rows: list[dict[str, Any]] | None = None
    command_note: str = ""
    json_suffix: str = ".summary.json"
    rows_suffix: str = ".per_query.jsonl"
    json_indent: int = 2
    extra_rows: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    figures: dict[str, Callable[[Path], None]] = field(default_factory=dict)

    def markdown(self) -> str:
        """The Markdown text: title, command line, body; exactly one newline at the end."""
        lines = [f"# {self.title}", "", f"Command: `{self.command}`{self.command_note}", "", *self.body]
        return "\n".join(lines).rstrip("\n") + "\n"

    def summary_json(self) -> dict[str, Any]:
        """The summary with the command (a summary's own ``command`` key is kept)."""
        return {**self.summary, "command": self.summary.get("command", self.command)}

    def write(self, out_dir: Path | None = None) -> Path:
        """Write the Markdown, the JSON summary and the per-query rows under ``out_dir`` (default
        :func:`results_dir`); returns the Markdown path."""
        out_dir = results_dir() if out_dir is None else out_dir
        out_dir.mkdir(parents=True, exist_ok=True)
        path = out_dir / f"{self.name}.md"
        path.write_text(self.markdown(), encoding="utf-8")
        (out_dir / f"{self.name}{self.json_suffix}").write_text(
            json.dumps(self.summary_json(), indent=self.json_indent, ensure_ascii=False, default=str) + "\n",
            encoding="utf-8",
        )
        files = {self.rows_suffix: self.rows} if self.rows is not None else {}
        for suffix, rows in {**files, **self.extra_rows}.items():
            with (out_dir / f"{self.name}{suffix}").open("w", encoding="utf-8") as fh:
                for row in rows:
                    fh.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
        for suffix, draw in self.figures.items():
            draw(out_dir / f"{self.name}{suffix}")
        return path

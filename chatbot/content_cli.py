"""``chatbot content list|import|certify|withdraw|recertify|show|preview|diff|reindex|reinstate|coverage``: the
content lifecycle on the command line. Every action is audited under the user named by ``--as`` (certify and
recertify: a clinician)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any


def add_cli(sub: Any) -> None:
    """Register ``chatbot content ...`` on the CLI's subparsers."""
    p = sub.add_parser("content", help="managed documents: import, certify, withdraw, list, show")
    csub = p.add_subparsers(dest="content_command", required=True)
    c = csub.add_parser("list", help="documents with their current (else latest) version, as JSON")
    c.add_argument("--status", choices=["draft", "certified", "superseded", "withdrawn", "expired"])
    c.add_argument("--language")
    c.add_argument("--due-before", type=date.fromisoformat, help="review date before YYYY-MM-DD")
    c.set_defaults(func=_cmd_list)
    c = csub.add_parser("import", help="HTML, PDF, DOCX or Markdown files (or folders) as draft versions")
    c.add_argument("paths", nargs="+", type=Path)
    c.add_argument("--as", dest="user", help="the importing user (default: cli)")
    c.add_argument("--url", help="source URL (a single file; else the file's own or NAME.meta.yaml)")
    c.add_argument("--id", dest="doc_id", help="document id (a single file; default from the file name)")
    c.add_argument("--title")
    c.add_argument("--language")
    c.add_argument("--publisher")
    c.add_argument("--quiet", action="store_true", help="no progress bar")
    c.set_defaults(func=_cmd_import)
    c = csub.add_parser("certify", help="certify a version (latest by default) as a clinician; it replaces the old")
    c.add_argument("document")
    c.add_argument("--version", type=int)
    c.add_argument("--as", dest="user", required=True, help="the certifying clinician's username")
    c.add_argument("--review-due", type=date.fromisoformat, help="YYYY-MM-DD (default: corpus.review_months)")
    c.set_defaults(func=_cmd_certify)
    c = csub.add_parser("withdraw", help="take a document away from patients at once (reason required)")
    c.add_argument("document")
    c.add_argument("--as", dest="user", required=True)
    c.add_argument("--reason", required=True)
    c.set_defaults(func=_cmd_withdraw)
    c = csub.add_parser("recertify", help="a clinician certifies a withdrawn document's text again (a new version)")
    c.add_argument("document")
    c.add_argument("--as", dest="user", required=True, help="the certifying clinician's username")
    c.add_argument("--review-due", type=date.fromisoformat, help="YYYY-MM-DD (default: corpus.review_months)")
    c.add_argument("--comment", default="", help="why it is back (kept in the audit log)")
    c.set_defaults(func=_cmd_recertify)
    c = csub.add_parser("show", help="a document's versions and the approved answers suspended because of it")
    c.add_argument("document")
    c.set_defaults(func=_cmd_show)
    c = csub.add_parser("preview", help="the segments a version (latest by default) produces")
    c.add_argument("document")
    c.add_argument("--version", type=int)
    c.set_defaults(func=_cmd_preview)
    c = csub.add_parser("diff", help="unified diff of two versions")
    c.add_argument("document")
    c.add_argument("old", type=int)
    c.add_argument("new", type=int)
    c.set_defaults(func=_cmd_diff)
    c = csub.add_parser("reindex", help="put every certified version back in the index (after ingest --rebuild)")
    c.set_defaults(func=_cmd_reindex)
    c = csub.add_parser("coverage", help="documents per language, topics of unanswered questions (what to write)")
    c.add_argument("--days", type=int, default=30, help="questions of the last N days (default 30)")
    c.add_argument("--questions", action="store_true", help="show up to 3 question texts per group")
    c.add_argument("--json", action="store_true")
    c.set_defaults(func=_cmd_coverage)
    c = csub.add_parser("reinstate", help="a clinician keeps a suspended approved answer after re-review")
    c.add_argument("approval", type=int)
    c.add_argument("--as", dest="user", required=True)
    c.add_argument("--comment", default="")
    c.set_defaults(func=_cmd_reinstate)


def _context(with_services: bool = False) -> tuple[Any, Any, Any]:
    from chatbot.settings import load_settings
    from chatbot.store.db import open_store

    settings = load_settings()
    store = open_store(settings)
    services = None
    if with_services:
        from chatbot.content_gate import ContentGate
        from chatbot.pipeline import Services

        services = Services(settings)
        services.content_gate = ContentGate(store, settings)
    return settings, store, services


def _print(payload: Any) -> None:
    print(json.dumps(payload, indent=2, ensure_ascii=False))


def _fail(exc: Exception) -> int:
    print(f"error: {exc}", file=sys.stderr)
    return 2


def _who(store: Any, username: str | None) -> Any:
    from chatbot.store.content import principal

    return principal(store, username) if username else None


def _cmd_list(args: argparse.Namespace) -> int:
    from chatbot.store.content_list import list_documents

    _, store, _ = _context()
    _print(list_documents(store, args.status, args.language, args.due_before))
    return 0


def _cmd_import(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from chatbot.content import content_files, import_files

    _, store, _ = _context()
    try:
        who = _who(store, args.user)
    except LookupError as exc:
        return _fail(exc)
    meta = {
        "source_url": args.url,
        "id": args.doc_id,
        "title": args.title,
        "language": args.language,
        "publisher": args.publisher,
    }
    meta = {k: v for k, v in meta.items() if v}
    files = content_files(args.paths)
    if len(files) > 1 and ({"source_url", "id"} & set(meta)):
        return _fail(ValueError("--url and --id name one file; for a folder put them in NAME.meta.yaml sidecars"))
    with tqdm(total=len(files), desc="importing", unit="file", file=sys.stderr, disable=args.quiet) as bar:
        report = import_files(store, files, who, meta, progress=bar.update)
    for item in report["skipped"]:
        print(f"skipped: {item['reason']}", file=sys.stderr)
    _print({k: len(v) for k, v in report.items()} | {"details": report})
    return 0 if report["imported"] or report["unchanged"] else 1


def _as_user(args: argparse.Namespace, action: Callable[[Any, Any, Any], Any]) -> int:
    """Runs ``action(services, store, who)`` as --user and prints its result, or the error naming the cause."""
    _, store, services = _context(with_services=True)
    try:
        result = action(services, store, _who(store, args.user))
    except (LookupError, ValueError) as exc:
        return _fail(exc)
    _print(result)
    return 0


def _cmd_certify(args: argparse.Namespace) -> int:
    from chatbot.content import certify

    return _as_user(args, lambda s, st, who: certify(s, st, who, args.document, args.version, args.review_due))


def _cmd_withdraw(args: argparse.Namespace) -> int:
    from chatbot.content import withdraw

    return _as_user(args, lambda s, st, who: withdraw(s, st, who, args.document, args.reason))


def _cmd_recertify(args: argparse.Namespace) -> int:
    from chatbot.content import recertify

    return _as_user(args, lambda s, st, who: recertify(s, st, who, args.document, args.review_due, args.comment))


def _cmd_show(args: argparse.Namespace) -> int:
    from chatbot.store.content_list import show_document

    _, store, _ = _context()
    try:
        _print(show_document(store, args.document))
    except LookupError as exc:
        return _fail(exc)
    return 0


def _cmd_preview(args: argparse.Namespace) -> int:
    from chatbot.content import preview

    settings, store, _ = _context()
    try:
        _print(preview(store, settings, args.document, args.version))
    except LookupError as exc:
        return _fail(exc)
    return 0


def _cmd_diff(args: argparse.Namespace) -> int:
    from chatbot.content import diff

    _, store, _ = _context()
    try:
        print(diff(store, args.document, args.old, args.new))
    except LookupError as exc:
        return _fail(exc)
    return 0


def _cmd_reinstate(args: argparse.Namespace) -> int:
    from chatbot.store.content import reinstate_approval

    _, store, _ = _context()
    try:
        reinstate_approval(store, _who(store, args.user), args.approval, args.comment)
    except (LookupError, ValueError) as exc:
        return _fail(exc)
    _print({"reinstated": args.approval})
    return 0


def _cmd_reindex(args: argparse.Namespace) -> int:
    from chatbot.content import reindex

    _, store, services = _context(with_services=True)
    _print(reindex(services, store))
    return 0


def _cmd_coverage(args: argparse.Namespace) -> int:
    from chatbot.content_coverage import coverage, coverage_lines

    if args.days < 0:
        return _fail(ValueError("--days must be 0 or more"))
    _, store, _ = _context()
    data = coverage(store, args.days, args.questions)
    if args.json:
        _print(data)
    else:
        print("\n".join(coverage_lines(data)))
    return 0

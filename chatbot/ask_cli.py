"""`chatbot ask`: one question (text, --json, --trace) or a --batch file (JSONL out), with stage progress and
the LLM-fallback warning on stderr."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def _print_answer(ans: dict[str, Any], trace: bool) -> None:
    # An urgent reply already starts with the urgent-care message.
    print(ans["reply"])
    if ans["links"]:
        print("\nSources:")
        for i, link in enumerate(ans["links"], 1):
            print(f"  [{i}] {link['title']} — {link['url']}")
    if ans.get("demo_content"):
        print("\n(Demonstration content: not certified by a clinician.)")
    if trace:
        print("\nTrace:")
        print(json.dumps(ans["trace"], indent=2, ensure_ascii=False))


def _read_batch(path: Path) -> list[tuple[str, str]]:
    items = []
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        if line.lstrip().startswith("{"):
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{lineno}: invalid JSON: {exc.msg}") from exc
            items.append((str(rec.get("id", lineno)), rec.get("text", "")))
        else:
            items.append((str(lineno), line.strip()))
    return items


def _warn_fallback(ans: dict[str, Any], qid: str | None = None) -> None:
    """Always on stderr (also with --json/--quiet): a pipeline that needed the LLM answered without it."""
    from chatbot.answer_object import fallback_warning

    warning = fallback_warning(ans)
    if warning:
        print(f"warning{f' [{qid}]' if qid else ''}: {warning}", file=sys.stderr, flush=True)


def _print_stage(stage: str, ms: float | None) -> None:
    """Stage progress on stderr while `chatbot ask` waits (stdout keeps only the answer)."""
    print(f"  … {stage}" if ms is None else f"  ✓ {stage} {ms:.0f} ms", file=sys.stderr, flush=True)


def cmd_ask(args: argparse.Namespace) -> int:
    import contextlib

    from chatbot.answer import answer
    from chatbot.index import IndexError_
    from chatbot.pipeline import Services
    from chatbot.settings import load_settings
    from chatbot.stage_progress import stage_listener

    settings = load_settings()
    services = Services(settings, collection=args.collection)
    try:
        if args.batch:
            items = _read_batch(Path(args.batch))
            for qid, text in items:
                ans = answer(text, services, args.pipeline)
                _warn_fallback(ans, qid)
                print(json.dumps({"id": qid, **ans}, ensure_ascii=False), flush=True)
            return 0
        if args.question is None:
            print("error: give a QUESTION or --batch FILE", file=sys.stderr)
            return 2
        progress = contextlib.nullcontext() if args.json or args.quiet else stage_listener(_print_stage)
        with progress:
            ans = answer(args.question, services, args.pipeline)
    except IndexError_ as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 3
    except (ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    _warn_fallback(ans)
    if args.json:
        print(json.dumps(ans, ensure_ascii=False))
    else:
        _print_answer(ans, args.trace)
    return 0 if ans["status"] != "invalid_input" else 1


def add_cli(sub: argparse._SubParsersAction) -> None:
    """Register ``chatbot ask`` on the CLI's subparsers."""
    p = sub.add_parser("ask", help="answer a question from the certified corpus")
    p.add_argument("question", nargs="?")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--trace", action="store_true", help="show ids, scores and timings of each stage")
    p.add_argument("--batch", metavar="FILE", help="JSONL with id/text, or one question per line; JSONL out")
    p.add_argument("--pipeline", default=None, help="bm25, dense, dense+rerank (alias naive), hyde, cot, logical")
    p.add_argument("--quiet", action="store_true", help="no stage progress on stderr (--json never shows it)")
    p.add_argument("--collection", default=None)
    p.set_defaults(func=cmd_ask)

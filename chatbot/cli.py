"""`chatbot` command line. Heavy libraries are imported inside the commands so --help is instant."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("LANGSMITH_TRACING", "false")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")


def require_extra(extra: str) -> None:
    """Exit with the install command when an optional extra's packages are missing (a base install).

    The extra's requirements come from pyproject.toml in a source checkout, else from the installed
    distribution's metadata; with neither, nothing is checked.
    """
    import importlib.metadata
    import tomllib

    from packaging.requirements import Requirement

    from chatbot.resources import source_root

    root = source_root()
    if root is not None and (root / "pyproject.toml").is_file():
        project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]
        requires = project.get("optional-dependencies", {}).get(extra, [])
    else:
        try:
            installed = [Requirement(r) for r in importlib.metadata.requires("certified-chatbot") or []]
        except importlib.metadata.PackageNotFoundError:
            return
        requires = [str(r) for r in installed if r.marker is not None and r.marker.evaluate({"extra": extra})]
    missing = []
    for name in (Requirement(r).name for r in requires):
        try:
            importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            missing.append(name)
    if missing:
        raise SystemExit(
            f"error: this command needs the [{extra}] extra, not installed here (missing: {', '.join(missing)}): "
            f"pip install 'certified-chatbot[{extra}]', or `make install` (requirements/dev.lock) in a checkout"
        )


def _settings():
    from chatbot.settings import load_settings

    return load_settings()


def cmd_settings(args: argparse.Namespace) -> int:
    from chatbot.settings import config_file, describe

    rows = describe(_settings())
    if args.json:
        print(json.dumps(rows, default=str, indent=2))
        return 0
    print(f"# config file: {config_file() or '(none)'}; env prefix CHATBOT_ (nested with __)")
    for row in rows:
        print(f"{row['key']} = {row['value']!s}    [{row['source']}]")
        print(f"    {row['description']}")
    return 0


def cmd_ingest(args: argparse.Namespace) -> int:
    from chatbot.index import IndexError_
    from chatbot.ingest import ingest_paths
    from chatbot.pipeline import Services
    from corpus.importers import CorpusError

    services = Services(_settings(), collection=args.collection)
    if args.rebuild:
        try:
            services.client.delete_collection(services.collection_name)
        except Exception:  # absent already: nothing to drop
            pass
        print("rebuilt: run `chatbot content reindex` to put certified managed documents back", file=sys.stderr)
    try:
        summary = ingest_paths([Path(p) for p in args.paths], services, strict=args.strict, quiet=args.quiet)
    except IndexError_ as exc:
        print(
            f"error: {exc} (or run `chatbot ingest --rebuild ...` to rebuild it with the current model)",
            file=sys.stderr,
        )
        return 3
    except (CorpusError, FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(summary))
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    from chatbot.doctor import as_json, format_table, run_checks

    checks = run_checks(_settings(), skip={"llm"} if args.skip_llm else set())
    report = as_json(checks)
    print(json.dumps(report, indent=2) if args.json else format_table(checks))
    return 0 if report["ok"] else 1


def cmd_eval_retrieval(args: argparse.Namespace) -> int:
    require_extra("eval")
    from evaluation.harness import main_retrieval

    return main_retrieval(args)


def cmd_train_reranker(args: argparse.Namespace) -> int:
    require_extra("train")
    from chatbot.training.reranker import main as train_main

    return train_main(args.rest)


def cmd_train_export_onnx(args: argparse.Namespace) -> int:
    from chatbot.settings import SHIPPED_RERANKER
    from chatbot.training.onnx_export import main as export_main

    return export_main([str(args.model_dir or SHIPPED_RERANKER), "--threads", str(args.threads)])


def cmd_serve(args: argparse.Namespace) -> int:
    if args.workers > 1 or args.pid_dir:  # N replicas behind HAProxy on this host (ui.replicas)
        from ui.replicas import serve_replicas

        settings = _settings()
        host, port = args.host or settings.server.host, args.port or settings.server.port
        return serve_replicas(host, port, args.workers, args.pid_dir, balancer=not args.no_balancer)
    from ui.app import serve

    serve(_settings(), host=args.host, port=args.port)
    return 0


def cmd_export_qrels(args: argparse.Namespace) -> int:
    from chatbot.pipeline import Services
    from chatbot.store.db import open_store
    from chatbot.store.qrels import export_qrels

    settings = _settings()
    summary = export_qrels(open_store(settings), Services(settings, collection=args.collection).index, args.out)
    print(json.dumps({"out": str(args.out), **summary}))
    return 0


def cmd_eval_replies(args: argparse.Namespace) -> int:
    require_extra("eval")
    from evaluation.bench_replies import main_replies

    return main_replies(args)


def cmd_eval_create(args: argparse.Namespace) -> int:
    from chatbot.store.evals import load_question_file
    from ui.app import AppState

    state = AppState(_settings())
    try:
        questions = load_question_file(args.questions)
        sid = state.create_session(args.name, questions, args.pipelines or [state.settings.retrieval.pipeline])
    except (ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps({"session_id": sid, "name": args.name, "questions": len(questions)}))
    return 0


def cmd_eval_report(args: argparse.Namespace) -> int:
    require_extra("eval")
    from evaluation.likert import main_report

    return main_report(args)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="chatbot", description="Certified-content medical chatbot.")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("settings", help="print the effective settings and where each value came from")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_settings)

    p = sub.add_parser("ingest", help="segment, embed and index certified documents (incremental)")
    p.add_argument("paths", nargs="+", help="Markdown folders/files or BEIR corpus.jsonl files/folders")
    p.add_argument("--collection", default=None, help="Chroma collection (default: settings index.collection)")
    p.add_argument("--strict", action="store_true", help="abort on the first malformed record")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--rebuild", action="store_true", help="drop the collection first (e.g. after changing the model)")
    p.set_defaults(func=cmd_ingest)

    from chatbot.ask_cli import add_cli as add_ask_cli

    add_ask_cli(sub)  # chatbot ask

    p = sub.add_parser("doctor", help="check packages, models, index, database, chromium and the LLM; how to fix")
    p.add_argument("--json", action="store_true", help="one JSON object: ok and the checks")
    p.add_argument("--skip-llm", action="store_true", help="do not start the LLM server (the slowest check)")
    p.set_defaults(func=cmd_doctor)

    p = sub.add_parser("eval", help="evaluation harness")
    esub = p.add_subparsers(dest="eval_command", required=True)
    r = esub.add_parser("retrieval", help="retrieval metrics on a BEIR-style folder")
    r.add_argument("--data", required=True, type=Path, help="folder with corpus.jsonl, queries.jsonl, qrels.tsv")
    r.add_argument(
        "--pipeline", action="append", dest="pipelines", help="repeatable; default bm25, dense, dense+rerank"
    )
    r.add_argument("--limit", type=int, default=None, help="first N judged queries only")
    r.add_argument("--json", action="store_true", help="print only the summary JSON on stdout")
    r.add_argument("--out", type=Path, default=None, help="results folder (default evaluation/results)")
    r.add_argument("--name", default=None, help="report name (default: data folder name)")
    r.add_argument(
        "--split", choices=["all", "train", "test"], default="all", help="query split (evaluation/splits.py)"
    )
    r.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="GROUP.FIELD=VALUE",
        help="override one setting for this run (repeatable, validated like chatbot.toml), e.g. "
        "--set hyde.samples=2, hyde.max_tokens=128, hyde.average_question=false, hyde.cot_calls=two, "
        "hyde.rerank_with=question+hydoc; one command per variant makes a sweep (give each its own --name)",
    )
    r.add_argument(
        "--strict", action="store_true", help="exit 4 when any query fell back to naive because the LLM failed"
    )
    r.set_defaults(func=cmd_eval_retrieval)
    r = esub.add_parser("replies", help="key-fact recall of the replies on a reply set over the demo cards")
    r.add_argument("--data", required=True, type=Path, help="reply set JSONL (evaluation/replies/replyset.jsonl)")
    r.add_argument("--cards", type=Path, default=None, help="cards folder to index (default corpus/demo/cards)")
    r.add_argument("--limit", type=int, default=None, help="first N questions only")
    r.add_argument("--json", action="store_true", help="print only the summary JSON on stdout")
    r.add_argument("--out", type=Path, default=None, help="results folder (default evaluation/results)")
    r.add_argument("--name", default=None, help="report name: replies-NAME.md/.json (default: data file stem)")
    r.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="GROUP.FIELD=VALUE",
        help="override one setting for this run (repeatable), e.g. --set compose.mode=generative",
    )
    r.add_argument(
        "--versus",
        action="append",
        default=[],
        metavar="GROUP.FIELD=VALUE",
        help="run the set again with these overrides on top (repeatable) and report both side by side, e.g. "
        "--versus compose.mode=generative --versus llm.timeout_s=60",
    )
    r.set_defaults(func=cmd_eval_replies)
    c = esub.add_parser("create", help="create a Likert evaluation session (answers generated once, frozen)")
    c.add_argument("name", help="session name (unique)")
    c.add_argument("--questions", required=True, type=Path, help="JSONL {id,text,type} or CSV with text[,id,type]")
    c.add_argument("--pipeline", action="append", dest="pipelines", help="repeatable; default retrieval.pipeline")
    c.set_defaults(func=cmd_eval_create)
    rep = esub.add_parser("report", help="Likert session report: Table 1, per type, Krippendorff's alpha, CSV, PNG")
    rep.add_argument("session", help="session name or id")
    rep.add_argument("--out", type=Path, default=None, help="folder (default evaluation/results/likert-SESSION)")
    rep.add_argument("--json", action="store_true", help="print the summary JSON")
    rep.set_defaults(func=cmd_eval_report)

    p = sub.add_parser("train", help="train our own models from shipped weights")
    tsub = p.add_subparsers(dest="train_command", required=True)
    t = tsub.add_parser("reranker", help="fine-tune the cross-encoder reranker (see models/reranker/README.md)")
    t.add_argument("rest", nargs=argparse.REMAINDER, help="options, see `chatbot train reranker -- --help`")
    t.set_defaults(func=cmd_train_reranker)
    t = tsub.add_parser(
        "export-onnx", help="write a CrossEncoder directory's int8 ONNX export (DIR/onnx/model_qint8.onnx)"
    )
    t.add_argument("model_dir", nargs="?", type=Path, default=None, help="default: the shipped models/reranker")
    t.add_argument("--threads", type=int, default=1, help="torch threads for the export")
    t.set_defaults(func=cmd_train_export_onnx)

    p = sub.add_parser("serve", help="web server: / patient chat, /review clinicians, /evaluate evaluators")
    p.add_argument("--host", default=None, help="default settings server.host (127.0.0.1)")
    p.add_argument("--port", type=int, default=None, help="default settings server.port")
    p.add_argument("--workers", type=int, default=1, help="N>1: N replicas on port+1..port+N behind HAProxy on port")
    p.add_argument("--pid-dir", type=Path, default=None, help="with --workers: write replica-PORT.pid files here")
    p.add_argument("--no-balancer", action="store_true", help="with --workers: replicas only, your own balancer")
    p.set_defaults(func=cmd_serve)

    from chatbot.accounts_cli import add_cli as add_accounts_cli

    add_accounts_cli(sub)  # chatbot tokens create|list|revoke, chatbot users add

    p = sub.add_parser("export", help="export judged data")
    xsub = p.add_subparsers(dest="export_command", required=True)
    x = xsub.add_parser("qrels", help="clinicians' link verdicts as a BEIR folder for `chatbot eval retrieval`")
    x.add_argument("out", type=Path, help="output folder")
    x.add_argument("--collection", default=None)
    x.set_defaults(func=cmd_export_qrels)

    from chatbot.llm_cli import add_cli as add_llm_cli

    add_llm_cli(sub)  # chatbot llm start|stop|status
    from chatbot.models_cli import add_cli as add_models_cli

    add_models_cli(sub)  # chatbot models [build-e5 | serve-embeddings]
    from chatbot.content_cli import add_cli as add_content_cli

    add_content_cli(sub)  # chatbot content list|import|certify|withdraw|show|preview|diff|reinstate
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
